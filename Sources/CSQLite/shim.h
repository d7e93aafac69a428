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
/// The trim threshold is fixed with it at glibc's default (fixing one stops both moving).
static inline void notesd_keep_large_buffers_mapped(void) {
    mallopt(M_MMAP_THRESHOLD, 256 * 1024);
    mallopt(M_TRIM_THRESHOLD, 128 * 1024);
}

/// At most `count` malloc arenas (mallopt, which Swift's Glibc module does not export either),
/// where glibc makes a new arena for each new thread, up to eight per core. An arena other
/// than the main one keeps the free room at its top until a later large free in that same
/// arena: `malloc_trim` shrinks only the main arena's top. After a catch-up, whose heap keeps
/// its free room (`notesd_keep_large_buffers_in_heap`), an idle daemon held ~8 MiB more in
/// the arenas of threads that had gone quiet. Set before the threads start: arenas already
/// made stay.
static inline void notesd_limit_heap_arenas(int count) {
    mallopt(M_ARENA_MAX, count);
}

/// For a catch-up or an import: buffers up to 32 MiB (glibc's largest mmap threshold) come
/// from the heap, and the heap keeps up to 64 MiB of free room at its top, so each batch's
/// frames and entries reuse the pages of the last instead of mapping, faulting in and
/// unmapping fresh ones. `notesd_keep_large_buffers_mapped` and `malloc_trim` undo it.
static inline void notesd_keep_large_buffers_in_heap(void) {
    mallopt(M_MMAP_THRESHOLD, 32 * 1024 * 1024);
    mallopt(M_TRIM_THRESHOLD, 64 * 1024 * 1024);
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
