// A VFS that gathers a connection's contiguous writes to its write-ahead log and to its
// database file (docs/decisions.md, "The log's appends gathered" and "A bulk write without
// the log").
//
// SQLite writes each WAL frame as two `pwrite`s, its 24-byte header and its page: a
// 10,000-note catch-up made ~17,000 of them. It writes the database file a page a call: a
// commit without the log (a rollback journal) or a checkpoint writes its pages in page order,
// ~10,000 calls for the same catch-up. Here each of the two files keeps contiguous writes in
// a buffer and writes them in one call when the buffer is full, and before anything else
// touches the file (a read, a sync, a truncation, its size, a file control, a lock taken or
// released, a memory map, closing it) or the connection's shared-memory index (a lock taken
// or released, a memory barrier: what makes frames visible to other connections, or ends a
// transaction). So every write still reaches the file before SQLite relies on it, in the
// same order:
//   - a commit syncs the log (`synchronous=FULL`) before it publishes the frames in the
//     index, and syncs the database file before a rollback journal's truncation commits;
//     the sync writes the buffer first, its errors reported as the sync's;
//   - another connection reads only frames the index has published, and database pages
//     after the writer's lock is released or a checkpoint has synced them;
//   - pages written over (SQLite rewrites a frame within a transaction, a rollback writes
//     back a page's old content) are written in the order SQLite wrote them, as a write
//     that does not extend the buffer writes the buffer out first.
// A crash loses what the buffer held, as it would lose writes the kernel had not made
// durable: nothing synced, nothing published.
//
// Every other file (and every other method of these two) is the platform VFS's own,
// working on the same memory: the platform's file structure comes first, this file's
// bookkeeping after it.

#include "wal_buffer.h"
#include <sqlite3.h>
#include <stddef.h>
#include <string.h>

/// 29 frames of 4 KiB pages. The unix VFS writes at most 128 KiB - 1 bytes in one call (it
/// masks a larger length), and the daemon's heap gives a buffer this small from itself.
#define BUFFER_CAPACITY (120 * 1024)

typedef struct Bookkeeping Bookkeeping;

/// What this VFS keeps beside the platform's file structure.
struct Bookkeeping {
    /// The platform's methods for this file, called once the buffer is written out.
    const sqlite3_io_methods *platform;
    /// A main database file: its log's bookkeeping while the log is open. A log: NULL.
    Bookkeeping *log;
    /// A log: its database file's bookkeeping, to unlink when the log closes.
    Bookkeeping *database;
    /// The file this bookkeeping belongs to (the start of the allocation).
    sqlite3_file *file;
    /// Gathered writes, `length` bytes for file offsets from `start`.
    unsigned char *bytes;
    sqlite3_int64 start;
    int length;
};

static sqlite3_vfs *platformVFS;
static sqlite3_vfs gatheringVFS;
/// Where the bookkeeping starts in a file's memory: after the platform's structure.
static int bookkeepingOffset;

/// Patched method tables, made from the platform's when the first database and the first
/// log open: the platform's own with a few entries replaced. The unix VFS gives a database
/// file the methods of its locking style and a log the methods without locks; a file whose
/// platform methods differ from the first of its kind's gets no gathering.
static const sqlite3_io_methods *databasePatchedFrom;
static const sqlite3_io_methods *logPatchedFrom;
static sqlite3_io_methods databaseMethods;
static sqlite3_io_methods logMethods;

static Bookkeeping *bookkeeping(sqlite3_file *file) {
    return (Bookkeeping *)((char *)file + bookkeepingOffset);
}

/// Writes the gathered writes out. The buffer is emptied even when the write fails: the
/// error goes to the caller (the sync that ends a commit, at the latest), and the same bytes
/// are not written again over later ones.
static int writeOut(Bookkeeping *own) {
    if (own == NULL || own->length == 0) return SQLITE_OK;
    int length = own->length;
    own->length = 0;
    return own->platform->xWrite(own->file, own->bytes, length, own->start);
}

/// Lets go of the buffer's memory, so an idle connection holds none.
static void releaseBuffer(Bookkeeping *own) {
    sqlite3_free(own->bytes);
    own->bytes = NULL;
}

/// A write to either file: added to the buffer when it continues it, else the buffer is
/// written out first and the write starts it again (a large one goes straight through).
static int gatherWrite(sqlite3_file *file, const void *data, int amount, sqlite3_int64 offset) {
    Bookkeeping *own = bookkeeping(file);
    if (own->length > 0 && offset == own->start + own->length && own->length + amount <= BUFFER_CAPACITY) {
        memcpy(own->bytes + own->length, data, (size_t)amount);
        own->length += amount;
        return SQLITE_OK;
    }
    int code = writeOut(own);
    if (code != SQLITE_OK) return code;
    if (amount > BUFFER_CAPACITY / 2) return own->platform->xWrite(file, data, amount, offset);
    if (own->bytes == NULL) {
        own->bytes = sqlite3_malloc(BUFFER_CAPACITY);
        if (own->bytes == NULL) return own->platform->xWrite(file, data, amount, offset);
    }
    memcpy(own->bytes, data, (size_t)amount);
    own->start = offset;
    own->length = amount;
    return SQLITE_OK;
}

// MARK: Methods that write the buffer out first, for both files

static int gatheredRead(sqlite3_file *file, void *data, int amount, sqlite3_int64 offset) {
    Bookkeeping *own = bookkeeping(file);
    int code = writeOut(own);
    if (code != SQLITE_OK) return code;
    return own->platform->xRead(file, data, amount, offset);
}

static int gatheredSync(sqlite3_file *file, int flags) {
    Bookkeeping *own = bookkeeping(file);
    int code = writeOut(own);
    releaseBuffer(own);
    if (code != SQLITE_OK) return code;
    return own->platform->xSync(file, flags);
}

static int gatheredTruncate(sqlite3_file *file, sqlite3_int64 size) {
    Bookkeeping *own = bookkeeping(file);
    int code = writeOut(own);
    if (code != SQLITE_OK) return code;
    return own->platform->xTruncate(file, size);
}

static int gatheredFileSize(sqlite3_file *file, sqlite3_int64 *size) {
    Bookkeeping *own = bookkeeping(file);
    int code = writeOut(own);
    if (code != SQLITE_OK) return code;
    return own->platform->xFileSize(file, size);
}

static int gatheredFileControl(sqlite3_file *file, int operation, void *argument) {
    Bookkeeping *own = bookkeeping(file);
    int code = writeOut(own);
    if (code != SQLITE_OK) return code;
    return own->platform->xFileControl(file, operation, argument);
}

// MARK: The log's methods

static int logClose(sqlite3_file *file) {
    Bookkeeping *log = bookkeeping(file);
    int code = writeOut(log);
    releaseBuffer(log);
    if (log->database != NULL) log->database->log = NULL;
    log->database = NULL;
    int closed = log->platform->xClose(file);
    return code != SQLITE_OK ? code : closed;
}

// MARK: The database file's methods: its own writes, and its log's, written out first

/// A lock taken or released on the file: its own writes out first (a rollback journal's
/// commit releases its lock after its sync; with `synchronous=OFF` the release is where
/// another connection may read the pages).
static int databaseLock(sqlite3_file *file, int level) {
    Bookkeeping *database = bookkeeping(file);
    int code = writeOut(database);
    if (code != SQLITE_OK) return code;
    return database->platform->xLock(file, level);
}

static int databaseUnlock(sqlite3_file *file, int level) {
    Bookkeeping *database = bookkeeping(file);
    // An unlock goes ahead whatever the write did (SQLite ignores its result).
    int code = writeOut(database);
    int unlocked = database->platform->xUnlock(file, level);
    return code != SQLITE_OK ? code : unlocked;
}

static int databaseShmLock(sqlite3_file *file, int offset, int count, int flags) {
    Bookkeeping *database = bookkeeping(file);
    int code = writeOut(database->log);
    if (code == SQLITE_OK) code = writeOut(database);
    int locked = database->platform->xShmLock(file, offset, count, flags);
    // An unlock goes ahead whatever the write did; a lock taken reports the write's error.
    if (code != SQLITE_OK && (flags & SQLITE_SHM_LOCK)) {
        if (locked == SQLITE_OK) database->platform->xShmLock(file, offset, count, (flags & ~SQLITE_SHM_LOCK) | SQLITE_SHM_UNLOCK);
        return code;
    }
    return locked;
}

static void databaseShmBarrier(sqlite3_file *file) {
    Bookkeeping *database = bookkeeping(file);
    // A barrier has no result: a write that fails here fails again, reported, at the sync
    // that every commit and checkpoint makes before it publishes anything (the buffers are
    // empty by then).
    writeOut(database->log);
    writeOut(database);
    database->platform->xShmBarrier(file);
}

/// A memory map of the file (SQLite maps none unless `mmap_size` is set): its writes first.
static int databaseFetch(sqlite3_file *file, sqlite3_int64 offset, int amount, void **pages) {
    Bookkeeping *database = bookkeeping(file);
    int code = writeOut(database);
    if (code != SQLITE_OK) return code;
    return database->platform->xFetch(file, offset, amount, pages);
}

static int databaseClose(sqlite3_file *file) {
    Bookkeeping *database = bookkeeping(file);
    int code = writeOut(database);
    releaseBuffer(database);
    if (database->log != NULL) database->log->database = NULL;
    database->log = NULL;
    int closed = database->platform->xClose(file);
    return code != SQLITE_OK ? code : closed;
}

// MARK: Opening

/// The methods both files share: contiguous writes gathered, and written out before anything
/// else touches the file.
static void patchGathering(sqlite3_io_methods *methods) {
    methods->xWrite = gatherWrite;
    methods->xRead = gatheredRead;
    methods->xSync = gatheredSync;
    methods->xTruncate = gatheredTruncate;
    methods->xFileSize = gatheredFileSize;
    methods->xFileControl = gatheredFileControl;
}

/// The database file's table: the platform's, its writes gathered, and its log written out
/// before the shared index changes (the caller holds the VFS mutex).
static void patchDatabase(const sqlite3_io_methods *platform) {
    databasePatchedFrom = platform;
    databaseMethods = *platform;
    patchGathering(&databaseMethods);
    databaseMethods.xLock = databaseLock;
    databaseMethods.xUnlock = databaseUnlock;
    databaseMethods.xClose = databaseClose;
    databaseMethods.xShmLock = databaseShmLock;
    databaseMethods.xShmBarrier = databaseShmBarrier;
    if (platform->iVersion >= 3) databaseMethods.xFetch = databaseFetch;
}

/// The log's table: the platform's, with appends gathered (the caller holds the VFS mutex).
static void patchLog(const sqlite3_io_methods *platform) {
    logPatchedFrom = platform;
    logMethods = *platform;
    patchGathering(&logMethods);
    logMethods.xClose = logClose;
}

static int gatheringOpen(sqlite3_vfs *vfs, const char *name, sqlite3_file *file, int flags, int *outFlags) {
    (void)vfs;
    Bookkeeping *own = bookkeeping(file);
    memset(own, 0, sizeof *own);
    int code = platformVFS->xOpen(platformVFS, name, file, flags, outFlags);
    if (code != SQLITE_OK || file->pMethods == NULL) return code;
    int isDatabase = (flags & SQLITE_OPEN_MAIN_DB) != 0;
    int isLog = (flags & SQLITE_OPEN_WAL) != 0 && name != NULL;
    if (!isDatabase && !isLog) return code;

    // Shared memory (the database's methods' version 2) is what a log is published through.
    if (file->pMethods->iVersion < 2) return code;
    sqlite3_mutex *mutex = sqlite3_mutex_alloc(SQLITE_MUTEX_STATIC_VFS1);
    sqlite3_mutex_enter(mutex);
    if (isDatabase && databasePatchedFrom == NULL) patchDatabase(file->pMethods);
    if (isLog && logPatchedFrom == NULL) patchLog(file->pMethods);
    int patchable = file->pMethods == (isDatabase ? databasePatchedFrom : logPatchedFrom);
    sqlite3_mutex_leave(mutex);
    if (!patchable) return code;

    own->platform = file->pMethods;
    own->file = file;
    if (isDatabase) {
        file->pMethods = &databaseMethods;
    } else {
        // The log's database file, opened through this VFS before it (its methods say so).
        sqlite3_file *databaseFile = sqlite3_database_file_object(name);
        if (databaseFile == NULL || databaseFile->pMethods != &databaseMethods) return code;
        own->database = bookkeeping(databaseFile);
        own->database->log = own;
        file->pMethods = &logMethods;
    }
    return code;
}

int notesd_wal_buffer_register(void) {
    if (platformVFS != NULL) return SQLITE_OK;
    sqlite3_vfs *platform = sqlite3_vfs_find(NULL);
    if (platform == NULL) return SQLITE_ERROR;
    platformVFS = platform;
    bookkeepingOffset = (platform->szOsFile + 7) & ~7;
    gatheringVFS = *platform;
    gatheringVFS.pNext = NULL;
    gatheringVFS.zName = "notesd-wal-gathering";
    gatheringVFS.szOsFile = bookkeepingOffset + (int)sizeof(Bookkeeping);
    gatheringVFS.xOpen = gatheringOpen;
    return sqlite3_vfs_register(&gatheringVFS, 1);
}
