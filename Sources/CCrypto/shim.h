/* Only the EVP-level OpenSSL 3 API is visible: deprecated low-level calls are hidden on purpose. */
#define OPENSSL_API_COMPAT 30000
#define OPENSSL_NO_DEPRECATED 1
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/bio.h>
#include <openssl/ec.h>
#include <openssl/bn.h>
#include <openssl/hmac.h>
#include <openssl/err.h>
#include <openssl/rand.h>
static inline void ccrypto_free(void *p) { OPENSSL_free(p); }
