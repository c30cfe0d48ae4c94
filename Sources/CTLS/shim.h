/* OpenSSL's TLS API (libssl) for the HTTP/2 transport. Macros Swift cannot import are wrapped. */
#define OPENSSL_API_COMPAT 30000
#define OPENSSL_NO_DEPRECATED 1
#include <openssl/ssl.h>
#include <openssl/err.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <openssl/pem.h>
#include <openssl/bio.h>

static inline long ctls_set_sni(SSL *ssl, const char *name) { return SSL_set_tlsext_host_name(ssl, name); }
static inline long ctls_ctx_set_min_tls12(SSL_CTX *ctx) { return SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION); }
static inline long ctls_ctx_set_modes(SSL_CTX *ctx) {
    /* Read ahead: one read(2) takes whatever the socket holds (many small TLS records: an HTTP/2
       answer is one record each) instead of two per record, header then body. The reader always
       reads until SSL_read wants more, so nothing waits in OpenSSL's buffer unseen by poll. */
    SSL_CTX_set_read_ahead(ctx, 1);
    /* A write may be retried with a moved buffer; partial writes return what was written. */
    return SSL_CTX_set_mode(ctx, SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER | SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_RELEASE_BUFFERS);
}
