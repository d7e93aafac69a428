#ifndef NOTESD_WAL_BUFFER_H
#define NOTESD_WAL_BUFFER_H

/// Registers, as SQLite's default, a VFS that is the platform's own except that each
/// connection's appends to its write-ahead log are gathered and written together
/// (docs/decisions.md, "The log's appends gathered"). Returns an SQLite result code; call it
/// once, before the first connection opens.
int notesd_wal_buffer_register(void);

#endif
