/* libmicrohttpd, the embedded HTTP/1.1 server of `pushspool serve`. Its header needs these first. */
#include <sys/types.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <stdint.h>
#include <stdarg.h>
#include <microhttpd.h>
