/* libxcrypt: crypt_r verifies htpasswd hashes (bcrypt $2y$/$2b$, SHA-512-crypt $6$). */
#include <crypt.h>
