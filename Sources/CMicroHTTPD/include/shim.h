#ifndef NOTESD_CMICROHTTPD_SHIM_H
#define NOTESD_CMICROHTTPD_SHIM_H
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>
#include <sys/socket.h>
#include <sys/prctl.h>
#include <microhttpd.h>

/// Where libmicrohttpd's error log goes: Swift cannot implement a `va_list` callback, so the
/// trampoline below formats each message and hands this function one finished line.
typedef void (*notesd_mhd_log_function)(void *context, const char *message);

/// The logger's function and its context; the caller keeps it alive as long as the daemon.
struct notesd_mhd_logger {
    notesd_mhd_log_function function;
    void *context;
};

static inline void notesd_mhd_log_trampoline(void *cls, const char *format, va_list arguments) {
    char line[512];
    vsnprintf(line, sizeof line, format, arguments);
    const struct notesd_mhd_logger *logger = (const struct notesd_mhd_logger *) cls;
    logger->function(logger->context, line);
}

/// The limits one daemon is started with (the `MHD_OPTION_*` values the web server sets).
struct notesd_mhd_limits {
    /// Connections served at once, suspended ones (event streams, waiting RPCs) included.
    unsigned int connection_limit;
    /// Seconds a connection may sit without any traffic before it is closed.
    unsigned int connection_timeout_seconds;
    /// Bytes of memory per connection for its request line and headers (a larger head
    /// gets 431) and MHD's read and write buffers.
    size_t connection_memory_limit;
};

/// MHD_start_daemon is variadic, which Swift cannot call: this wrapper passes the fixed set
/// of options the web server uses. `listen_fd` is a socket already bound and listening
/// (MHD_OPTION_LISTEN_SOCKET), so the caller chooses the address and the port fallback.
/// MHD_OPTION_STRICT_FOR_CLIENT 1 makes malformed requests (bad header lines, spaces in the
/// request target, bare LF…) a 400 and a closed connection.
/// `notify` hears every connection open and close (MHD_OPTION_NOTIFY_CONNECTION), which the
/// request deadline needs: a connection's clock starts before any request head exists.
static inline struct MHD_Daemon *notesd_mhd_start(
    unsigned int flags, int listen_fd, const struct notesd_mhd_limits *limits,
    MHD_AccessHandlerCallback handler, void *handler_context,
    MHD_RequestCompletedCallback completed, void *completed_context,
    MHD_NotifyConnectionCallback notify, void *notify_context,
    struct notesd_mhd_logger *logger) {
    return MHD_start_daemon(
        flags | MHD_USE_ERROR_LOG, 0, NULL, NULL, handler, handler_context,
        /* First, so that no message goes to stderr by MHD's own logger. */
        MHD_OPTION_EXTERNAL_LOGGER, notesd_mhd_log_trampoline, (void *) logger,
        MHD_OPTION_LISTEN_SOCKET, (MHD_socket) listen_fd,
        MHD_OPTION_NOTIFY_COMPLETED, completed, completed_context,
        MHD_OPTION_NOTIFY_CONNECTION, notify, notify_context,
        MHD_OPTION_CONNECTION_LIMIT, limits->connection_limit,
        MHD_OPTION_CONNECTION_TIMEOUT, limits->connection_timeout_seconds,
        MHD_OPTION_CONNECTION_MEMORY_LIMIT, limits->connection_memory_limit,
        MHD_OPTION_STRICT_FOR_CLIENT, (int) 1,
        MHD_OPTION_END);
}

/// MHD_Result is an enum Swift imports as a struct; these spell its two values as ints for
/// callbacks written in Swift.
static inline enum MHD_Result notesd_mhd_yes(void) { return MHD_YES; }
static inline enum MHD_Result notesd_mhd_no(void) { return MHD_NO; }

/// MHD_CONTENT_READER_END_OF_STREAM and _WITH_ERROR are macros casting to ssize_t, which
/// Swift does not import.
static inline ssize_t notesd_mhd_reader_end_of_stream(void) { return MHD_CONTENT_READER_END_OF_STREAM; }
static inline ssize_t notesd_mhd_reader_end_with_error(void) { return MHD_CONTENT_READER_END_WITH_ERROR; }

/// MHD_SIZE_UNKNOWN is a macro (`(uint64_t) -1`): an event stream's length is unknown.
static inline uint64_t notesd_mhd_size_unknown(void) { return MHD_SIZE_UNKNOWN; }

/// The daemon's count of open connections (MHD_get_daemon_info returns a union pointer).
static inline unsigned int notesd_mhd_current_connections(struct MHD_Daemon *daemon) {
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(daemon, MHD_DAEMON_INFO_CURRENT_CONNECTIONS);
    return info == NULL ? 0 : info->num_connections;
}

/// A connection's socket (MHD_get_connection_info is variadic), or -1.
static inline int notesd_mhd_connection_fd(struct MHD_Connection *connection) {
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CONNECTION_FD);
    return info == NULL ? -1 : (int) info->connect_fd;
}

/// What the connection-notify callback stored for the connection (the web server it belongs to).
static inline void *notesd_mhd_socket_context(struct MHD_Connection *connection) {
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return info == NULL ? NULL : info->socket_context;
}

/// Names the calling thread as `ps -L` and /proc show it (15 bytes kept): Foundation's
/// `Thread.name` does not reach the kernel on Linux, and prctl is variadic.
static inline void notesd_name_this_thread(const char *name) {
    prctl(PR_SET_NAME, (unsigned long) name, 0UL, 0UL, 0UL);
}

/// libmicrohttpd writes some answers on its own — 400 for a request it cannot parse, 431 for
/// a head too large for its memory, 505… — with a bare HTML body and none of our headers,
/// and 0.9.75 has no hook for them. It builds each with MHD_create_response_from_buffer and
/// queues it with MHD_queue_response through its PLT, so hooks.c defines MHD_queue_response
/// in our binary (the dynamic linker binds the library's call to it) and forwards to the
/// library's own. Any response queued without our Content-Security-Policy header — only the
/// library's own, since every response we build carries it — is handed to the replacer,
/// which returns the response to send instead (the caller destroys it) or NULL to send the
/// original (to which it may add headers).
typedef struct MHD_Response *(*notesd_mhd_replacer)(struct MHD_Connection *connection, unsigned int status, struct MHD_Response *original);

/// Installs the replacer, process-wide (one function; it finds its server from the
/// connection's socket context). NULL removes it.
void notesd_mhd_set_replacer(notesd_mhd_replacer replacer);

/// True when libmicrohttpd's own calls reach the hook: this binary's MHD_queue_response is the
/// one the dynamic linker resolves (false if, say, the library were linked with -Bsymbolic).
int notesd_mhd_hook_active(void);
#endif
