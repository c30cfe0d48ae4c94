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
    /* No read-ahead: reads go through a buffering BIO instead (ctls_set_fd_nosigpipe). With
       read-ahead OpenSSL moves the unread rest of its buffer to the front before each record of
       128 bytes or more (to align the payload), so a socket read holding many small HTTP/2
       answers cost a copy of up to 16 KB per answer. */
    /* A write may be retried with a moved buffer; partial writes return what was written. */
    return SSL_CTX_set_mode(ctx, SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER | SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_RELEASE_BUFFERS);
}

/* A socket BIO whose writes never raise SIGPIPE: send(2) with MSG_NOSIGNAL instead of write(2),
   so a server that closes the connection gives EPIPE, not a signal, without the process having to
   ignore SIGPIPE for everyone (a pipe's writer, stdout). Everything else is OpenSSL's own socket
   BIO; Darwin sets SO_NOSIGPIPE on the socket instead. */
#include <sys/socket.h>
#include <errno.h>
#include <pthread.h>
#ifndef MSG_NOSIGNAL
#define MSG_NOSIGNAL 0
#endif
static inline BIO_METHOD **ctls_nosigpipe_slot(void) {
    static BIO_METHOD *method = NULL;
    return &method;
}
static inline int ctls_nosigpipe_write(BIO *b, const char *data, int len) {
    int fd = (int)BIO_get_fd(b, NULL);
    ssize_t n = send(fd, data, (size_t)len, MSG_NOSIGNAL);
    BIO_clear_retry_flags(b);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) BIO_set_retry_write(b);
    return (int)n;
}
static inline void ctls_nosigpipe_init(void) {
    const BIO_METHOD *s = BIO_s_socket();
    BIO_METHOD *m = BIO_meth_new(BIO_TYPE_SOCKET, "socket, no SIGPIPE");
    if (m == NULL) return;
    BIO_meth_set_write(m, ctls_nosigpipe_write);
    BIO_meth_set_read(m, BIO_meth_get_read(s));
    BIO_meth_set_puts(m, BIO_meth_get_puts(s));
    BIO_meth_set_ctrl(m, BIO_meth_get_ctrl(s));
    BIO_meth_set_create(m, BIO_meth_get_create(s));
    BIO_meth_set_destroy(m, BIO_meth_get_destroy(s));
    *ctls_nosigpipe_slot() = m;
}
/* The socket for OpenSSL: writes through that BIO; reads through a 64 KB buffering BIO (OpenSSL's
   own BIO_f_buffer) over a plain socket BIO, so one read(2) takes whatever the socket holds (many
   small TLS records: an HTTP/2 answer is one record each) and OpenSSL then reads each record's
   header and body from memory, each byte copied once. The reader reads until SSL_read wants
   more, which is only once the buffer is empty and read(2) would block, so nothing waits in a
   buffer unseen by poll. 1 on success. */
static inline int ctls_set_fd_nosigpipe(SSL *ssl, int fd) {
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, ctls_nosigpipe_init);
    if (*ctls_nosigpipe_slot() == NULL) return 0;
    BIO *w = BIO_new(*ctls_nosigpipe_slot());
    BIO *r = BIO_new_socket(fd, BIO_NOCLOSE);
    BIO *buffered = BIO_new(BIO_f_buffer());
    if (w == NULL || r == NULL || buffered == NULL || BIO_set_read_buffer_size(buffered, 65536) != 1) {
        BIO_free(w);
        BIO_free(r);
        BIO_free(buffered);
        return 0;
    }
    BIO_set_fd(w, fd, BIO_NOCLOSE);
    SSL_set_bio(ssl, BIO_push(buffered, r), w);
    return 1;
}
