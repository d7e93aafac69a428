#ifndef NOTESD_CSQLITE_SHIM_H
#define NOTESD_CSQLITE_SHIM_H
#include <sqlite3.h>
#include <malloc.h>

/// glibc's malloc_trim, which Swift's Glibc module does not export: after a catch-up the
/// replica returns the heap pages its big batches left behind, so an idle daemon stays small.
static inline void notesd_release_free_heap(void) {
    malloc_trim(0);
}

/// Fixes glibc's mmap threshold at 256 KiB: by default it grows after each large free, after
/// which multi-megabyte sync batches come from the heap and their pages stay with the process.
static inline void notesd_keep_large_buffers_mapped(void) {
    mallopt(M_MMAP_THRESHOLD, 256 * 1024);
}

/// Turns off SQLite's memory statistics, which take one process-wide mutex on every
/// allocation: two connections ranking a search's halves at once waited on it. Must run
/// before the first connection opens (sqlite3_config is variadic, which Swift cannot call).
static inline void notesd_sqlite3_without_memory_statistics(void) {
    sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
}

/// SQLITE_TRANSIENT is a macro casting -1 to a function pointer, which Swift cannot import:
/// this wrapper binds text that SQLite must copy before the call returns.
static inline int notesd_sqlite3_bind_text_copy(sqlite3_stmt *stmt, int index, const char *text, int length) {
    return sqlite3_bind_text(stmt, index, text, length, SQLITE_TRANSIENT);
}

/// Same reason as above, for blobs.
static inline int notesd_sqlite3_bind_blob_copy(sqlite3_stmt *stmt, int index, const void *bytes, int length) {
    return sqlite3_bind_blob(stmt, index, bytes, length, SQLITE_TRANSIENT);
}
#endif
