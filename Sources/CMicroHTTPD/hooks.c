// The MHD_queue_response hook described in include/shim.h (docs/decisions.md, "Web server:
// deadlines, the library's own answers, chunked bodies").
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include "shim.h"

typedef enum MHD_Result (*notesd_queue_function)(struct MHD_Connection *, unsigned int, struct MHD_Response *);

static notesd_queue_function library_queue;
static pthread_once_t library_queue_once = PTHREAD_ONCE_INIT;
static _Atomic(notesd_mhd_replacer) installed_replacer;

static void notesd_resolve_library_queue(void) {
    // The next definition after this binary's: libmicrohttpd's.
    library_queue = (notesd_queue_function) dlsym(RTLD_NEXT, "MHD_queue_response");
}

void notesd_mhd_set_replacer(notesd_mhd_replacer replacer) {
    atomic_store(&installed_replacer, replacer);
}

int notesd_mhd_hook_active(void) {
    pthread_once(&library_queue_once, notesd_resolve_library_queue);
    void *resolved = dlsym(RTLD_DEFAULT, "MHD_queue_response");
    return library_queue != NULL && resolved == (void *) &MHD_queue_response;
}

enum MHD_Result MHD_queue_response(struct MHD_Connection *connection, unsigned int status_code, struct MHD_Response *response) {
    pthread_once(&library_queue_once, notesd_resolve_library_queue);
    if (library_queue == NULL) return MHD_NO;
    notesd_mhd_replacer replacer = atomic_load(&installed_replacer);
    if (replacer != NULL && connection != NULL && response != NULL
        && MHD_get_response_header(response, "Content-Security-Policy") == NULL) {
        struct MHD_Response *replacement = replacer(connection, status_code, response);
        if (replacement != NULL) {
            enum MHD_Result result = library_queue(connection, status_code, replacement);
            MHD_destroy_response(replacement);
            return result;
        }
    }
    return library_queue(connection, status_code, response);
}
