/* Typed, non-variadic wrappers: Swift cannot call curl's variadic setopt/getinfo. */
#include <curl/curl.h>
#include <sys/select.h>
#ifdef __linux__
#include <sys/eventfd.h>
#endif
static inline CURLcode ccurl_easy_setopt_long(CURL *h, CURLoption o, long v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode ccurl_easy_setopt_ptr(CURL *h, CURLoption o, const void *v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode ccurl_easy_setopt_str(CURL *h, CURLoption o, const char *v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode ccurl_easy_setopt_slist(CURL *h, CURLoption o, struct curl_slist *v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode ccurl_easy_setopt_blob(CURL *h, CURLoption o, void *data, size_t len) {
    struct curl_blob b = { data, len, CURL_BLOB_COPY }; return curl_easy_setopt(h, o, &b);
}
static inline CURLcode ccurl_easy_setopt_write_cb(CURL *h, CURLoption o, curl_write_callback cb) { return curl_easy_setopt(h, o, cb); }
static inline CURLcode ccurl_easy_setopt_opensocket_cb(CURL *h, curl_opensocket_callback cb) { return curl_easy_setopt(h, CURLOPT_OPENSOCKETFUNCTION, cb); }
static inline CURLcode ccurl_easy_setopt_header_cb(CURL *h, curl_write_callback cb) { return curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, cb); }
static inline CURLcode ccurl_easy_getinfo_long(CURL *h, CURLINFO i, long *out) { return curl_easy_getinfo(h, i, out); }
static inline CURLcode ccurl_easy_getinfo_ptr(CURL *h, CURLINFO i, void **out) { return curl_easy_getinfo(h, i, (char **)out); }
static inline CURLMcode ccurl_multi_setopt_long(CURLM *m, CURLMoption o, long v) { return curl_multi_setopt(m, o, v); }
static inline CURLMcode ccurl_multi_setopt_ptr(CURLM *m, CURLMoption o, void *v) { return curl_multi_setopt(m, o, v); }
static inline CURLcode ccurl_msg_result(const CURLMsg *m) { return m->data.result; }
static inline curl_version_info_data *ccurl_version_info(void) { return curl_version_info(CURLVERSION_NOW); }
#ifdef __linux__
static inline int ccurl_eventfd(void) { return eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC); }
#endif
static inline CURLcode ccurl_easy_setopt_blob_nocopy(CURL *h, CURLoption o, void *data, size_t len) {
    struct curl_blob b = { data, len, CURL_BLOB_NOCOPY }; return curl_easy_setopt(h, o, &b);
}
static inline CURLcode ccurl_easy_setopt_off(CURL *h, CURLoption o, curl_off_t v) { return curl_easy_setopt(h, o, v); }
/* The sockets a (draining) multi handle waits on, as curl_waitfd entries, so one poll thread can
   drive several multi handles: curl_multi_poll on the current one with these as extra fds. */
static inline int ccurl_multi_waitfds(CURLM *m, struct curl_waitfd *out, int max) {
    fd_set r, w, e; int maxfd = -1, n = 0;
    FD_ZERO(&r); FD_ZERO(&w); FD_ZERO(&e);
    if (curl_multi_fdset(m, &r, &w, &e, &maxfd) != CURLM_OK) return 0;
    for (int fd = 0; fd <= maxfd && fd < FD_SETSIZE && n < max; fd++) {
        short ev = 0;
        if (FD_ISSET(fd, &r)) ev |= CURL_WAIT_POLLIN;
        if (FD_ISSET(fd, &w)) ev |= CURL_WAIT_POLLOUT;
        if (FD_ISSET(fd, &e)) ev |= CURL_WAIT_POLLPRI;
        if (ev) { out[n].fd = fd; out[n].events = ev; out[n].revents = 0; n++; }
    }
    return n;
}
