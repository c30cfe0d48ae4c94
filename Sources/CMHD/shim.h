/* libmicrohttpd, the embedded HTTP/1.1 server of `pushspool serve`. Its header needs these first. */
#include <sys/types.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <stdint.h>
#include <stdarg.h>
#include <string.h>
#include <microhttpd.h>

/* MHD_start_daemon is variadic, which Swift cannot call: the options `serve` uses, typed.
   `listen_fd` is a socket already bound and listening (so the caller picks the address, port 0
   included). With `key_pem`/`cert_pem` (PEM text, kept alive by the caller until the daemon
   stops) the daemon speaks TLS through GnuTLS. `extra`: further options, an array ended by
   MHD_OPTION_END (per-address limit, strictness, the path's unescaping, connection notices). */
static inline struct MHD_Daemon *cmhd_start(unsigned int flags, int listen_fd, unsigned int threads,
                                            unsigned int connection_limit, unsigned int timeout_seconds,
                                            size_t memory_limit,
                                            MHD_AccessHandlerCallback handler, void *handler_cls,
                                            MHD_RequestCompletedCallback completed, void *completed_cls,
                                            const char *key_pem, const char *cert_pem,
                                            const struct MHD_OptionItem *extra) {
    if (key_pem != NULL && cert_pem != NULL) {
        return MHD_start_daemon(flags | MHD_USE_TLS, 0, NULL, NULL, handler, handler_cls,
                                MHD_OPTION_LISTEN_SOCKET, (MHD_socket)listen_fd,
                                MHD_OPTION_THREAD_POOL_SIZE, threads,
                                MHD_OPTION_CONNECTION_LIMIT, connection_limit,
                                MHD_OPTION_CONNECTION_TIMEOUT, timeout_seconds,
                                MHD_OPTION_CONNECTION_MEMORY_LIMIT, memory_limit,
                                MHD_OPTION_NOTIFY_COMPLETED, completed, completed_cls,
                                MHD_OPTION_HTTPS_MEM_KEY, key_pem,
                                MHD_OPTION_HTTPS_MEM_CERT, cert_pem,
                                MHD_OPTION_ARRAY, extra,
                                MHD_OPTION_END);
    }
    return MHD_start_daemon(flags, 0, NULL, NULL, handler, handler_cls,
                            MHD_OPTION_LISTEN_SOCKET, (MHD_socket)listen_fd,
                            MHD_OPTION_THREAD_POOL_SIZE, threads,
                            MHD_OPTION_CONNECTION_LIMIT, connection_limit,
                            MHD_OPTION_CONNECTION_TIMEOUT, timeout_seconds,
                            MHD_OPTION_CONNECTION_MEMORY_LIMIT, memory_limit,
                            MHD_OPTION_NOTIFY_COMPLETED, completed, completed_cls,
                            MHD_OPTION_ARRAY, extra,
                            MHD_OPTION_END);
}

/* The client's address as text ("127.0.0.1", "::1"), or "" when unknown. The connection info is
   a C union, awkward from Swift. */
static inline void cmhd_client_address(struct MHD_Connection *connection, char *out, size_t size) {
    out[0] = 0;
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    if (info == NULL || info->client_addr == NULL) return;
    const struct sockaddr *sa = info->client_addr;
    if (sa->sa_family == AF_INET) {
        inet_ntop(AF_INET, &((const struct sockaddr_in *)sa)->sin_addr, out, (socklen_t)size);
    } else if (sa->sa_family == AF_INET6) {
        inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)sa)->sin6_addr, out, (socklen_t)size);
    }
}

/* A request header by name (case-insensitive), or NULL. */
static inline const char *cmhd_header(struct MHD_Connection *connection, const char *name) {
    return MHD_lookup_connection_value(connection, MHD_HEADER_KIND, name);
}

/* A query-string argument by name (already percent-decoded), or NULL. */
static inline const char *cmhd_query(struct MHD_Connection *connection, const char *name) {
    return MHD_lookup_connection_value(connection, MHD_GET_ARGUMENT_KIND, name);
}

/* The socket of a connection (for the slow-client guard), or -1. */
static inline int cmhd_connection_fd(struct MHD_Connection *connection) {
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CONNECTION_FD);
    return info == NULL ? -1 : (int)info->connect_fd;
}

/* How strictly the library reads a client's request. libmicrohttpd 1.0 (MHD_VERSION 0x01000000)
   has a client discipline level whose level 1 refuses bare LF line ends among others; 0.9.x
   has only STRICT_FOR_CLIENT, whose level 1 answers a missing Host with an HTML page of its own
   (`serve` checks Host itself, in JSON) and accepts bare LF either way: level 0 there. */
static inline struct MHD_OptionItem cmhd_client_discipline(void) {
#if MHD_VERSION >= 0x01000000
    struct MHD_OptionItem o = { MHD_OPTION_CLIENT_DISCIPLINE_LVL, 1, NULL };
#else
    struct MHD_OptionItem o = { MHD_OPTION_STRICT_FOR_CLIENT, 0, NULL };
#endif
    return o;
}
