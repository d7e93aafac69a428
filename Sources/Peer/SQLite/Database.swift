import CSQLite
import CSQLiteWALBuffer
#if canImport(Glibc)
import Glibc
#endif

/// One SQLite connection, owned by one thread or actor at a time (it is not `Sendable`).
///
/// Opens in WAL mode with `synchronous=FULL` (an acknowledged write survives power loss),
/// foreign keys on and a busy timeout. Statements are prepared once and cached by SQL text.
public final class Database {
    let handle: OpaquePointer
    public let path: String
    private var cache: [StatementKey: Statement] = [:]
    /// The statement last found for text at each of 64 slots of memory addresses: a
    /// statement's text is a literal, or built once, so it is found again by where its bytes
    /// are, without hashing it (the lookup was ~5 % of a catch-up's applying, about ten
    /// statements per note). A slot counts only when the text is the same, byte for byte: a
    /// string freed and another made at its address is a miss, never a wrong statement.
    private var recent = [Statement?](repeating: nil, count: 64)
    private var transactionDepth = 0
    /// SQLite rolled the whole transaction back under a savepoint (see `savepoint`).
    private var transactionAborted = false

    /// Process-wide SQLite settings, made once before the first connection opens: memory
    /// statistics off (before SQLite initialises), then the VFS that gathers each
    /// connection's log appends (docs/decisions.md, "The log's appends gathered"); without
    /// it, should it fail to register, SQLite's own VFS writes the same files.
    private static let configured: Void = {
        notesd_sqlite3_without_memory_statistics()
        _ = notesd_wal_buffer_register()
    }()

    /// How long a statement waits for another connection's lock before it fails as busy.
    static let busyTimeoutMilliseconds: Int32 = 5_000

    /// Opens (creating if needed) the database at `path`.
    public init(path: String, readOnly: Bool = false) throws {
        Self.configured
        var handle: OpaquePointer?
        let flags = (readOnly ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE)
            | SQLITE_OPEN_NOMUTEX
        let code = sqlite3_open_v2(path, &handle, flags, nil)
        guard code == SQLITE_OK, let handle else {
            let message = handle.map { String(cString: sqlite3_errmsg($0)) } ?? "out of memory"
            if let handle { sqlite3_close_v2(handle) }
            throw SQLiteError(resultCode: code, message: "cannot open \(path): \(message)")
        }
        self.handle = handle
        self.path = path
        sqlite3_extended_result_codes(handle, 1)
        sqlite3_busy_timeout(handle, Self.busyTimeoutMilliseconds)
        do {
            if !readOnly { try execute("PRAGMA journal_mode=WAL") }
            try execute("PRAGMA synchronous=FULL")
            try execute("PRAGMA foreign_keys=ON")
        } catch {
            sqlite3_close_v2(handle)
            throw error
        }
    }

    deinit {
        recent.removeAll()
        cache.removeAll()
        sqlite3_wal_hook(handle, nil, nil)
        sqlite3_close_v2(handle)
    }

    func error(_ code: Int32, sql: String?) -> SQLiteError {
        SQLiteError(resultCode: code, message: String(cString: sqlite3_errmsg(handle)), sql: sql)
    }

    /// Runs one or more statements that return no rows (no parameters).
    public func execute(_ sql: String) throws {
        try requireLiveTransaction(sql)
        var message: UnsafeMutablePointer<CChar>?
        let code = sqlite3_exec(handle, sql, nil, nil, &message)
        if code != SQLITE_OK {
            let text = message.map { String(cString: $0) } ?? String(cString: sqlite3_errmsg(handle))
            sqlite3_free(message)
            throw SQLiteError(resultCode: code, message: text, sql: sql)
        }
    }

    /// The cached prepared statement for `sql`.
    public func statement(_ sql: String) throws -> Statement {
        try requireLiveTransaction(sql)
        var text = sql
        return try text.withUTF8 { utf8 in
            let slot = utf8.baseAddress.map { Int(bitPattern: UInt(bitPattern: $0) >> 4) % recent.count } ?? 0
            if let candidate = recent[slot], sameBytes(candidate.sql, utf8) { return candidate }
            let key = StatementKey(sql)
            let statement: Statement
            if let cached = cache[key] {
                statement = cached
            } else {
                statement = try Statement(database: self, sql: sql)
                cache[key] = statement
            }
            recent[slot] = statement
            return statement
        }
    }

    public func run(_ sql: String, _ values: [SQLValue] = []) throws {
        try statement(sql).run(values)
    }

    public func rows<T>(_ sql: String, _ values: [SQLValue] = [], _ transform: (Row) throws -> T) throws -> [T] {
        try statement(sql).rows(values, transform)
    }

    public func first<T>(_ sql: String, _ values: [SQLValue] = [], _ transform: (Row) throws -> T) throws -> T? {
        try statement(sql).first(values, transform)
    }

    /// What SQLite's statements have done on this connection so far (`sqlite3_stmt_status`,
    /// summed over every prepared statement, triggers included; `BEGIN`/`COMMIT` and the
    /// other `execute` calls are not counted). Differences between two readings show what one
    /// request cost, independently of timing (docs/benchmarks.md, "Cost that grows with the
    /// library").
    public var statementCounters: StatementCounters {
        var total = StatementCounters()
        for statement in cache.values { total.add(statement.counters) }
        return total
    }

    /// Bytes SQLite's page cache holds for this connection now (`SQLITE_DBSTATUS_CACHE_USED`):
    /// what `PRAGMA shrink_memory` gives back once the connection idles.
    public var pageCacheBytes: Int {
        var current: Int32 = 0, highest: Int32 = 0
        sqlite3_db_status(handle, SQLITE_DBSTATUS_CACHE_USED, &current, &highest, 0)
        return Int(current)
    }

    /// `statementCounters` for each prepared statement, by SQL text: which statement did it.
    public var statementCountersBySQL: [String: StatementCounters] {
        Dictionary(uniqueKeysWithValues: cache.map { ($0.key.sql, $0.value.counters) })
    }

    /// The log's size in pages after this connection's last commit, kept while
    /// `countLogPages` is on (0 before the first commit).
    private(set) var logPages = 0

    /// Has each commit note the log's size (`logPages`, through `sqlite3_wal_hook`) instead of
    /// checkpointing once it passes SQLite's limit: the caller sees to checkpoints
    /// (`WALCheckpointer`). `PRAGMA wal_autocheckpoint` puts SQLite's own back.
    func countLogPages() {
        logPages = 0
        sqlite3_wal_hook(handle, { context, _, _, pages in
            Unmanaged<Database>.fromOpaque(context!).takeUnretainedValue().logPages = Int(pages)
            return SQLITE_OK
        }, Unmanaged.passUnretained(self).toOpaque())
    }

    /// Pages this connection has written to the log so far (`SQLITE_DBSTATUS_CACHE_WRITE`).
    var pagesWritten: Int {
        var current: Int32 = 0, highest: Int32 = 0
        sqlite3_db_status(handle, SQLITE_DBSTATUS_CACHE_WRITE, &current, &highest, 0)
        return Int(current)
    }

    /// Rows changed by the last INSERT, UPDATE or DELETE.
    public var changes: Int { Int(sqlite3_changes(handle)) }

    /// The rowid of the row this connection inserted last.
    public var lastInsertedRowID: Int64 { sqlite3_last_insert_rowid(handle) }

    public var isInTransaction: Bool { transactionDepth > 0 }

    /// Runs `body` in one transaction (`BEGIN IMMEDIATE`, so it takes the write lock up front):
    /// commits when it returns, rolls back when it throws. A nested call runs in a savepoint of
    /// the outer transaction: when it throws, only its own writes are undone, so an outer body
    /// that catches the error commits what it wrote itself and none of the inner partial writes.
    public func transaction<T>(_ body: () throws -> T) throws -> T {
        if transactionDepth > 0 { return try savepoint(body) }
        try execute("BEGIN IMMEDIATE")
        transactionDepth = 1
        defer { (transactionDepth, transactionAborted) = (0, false) }
        do {
            let result = try body()
            try execute("COMMIT")
            return result
        } catch {
            try? execute("ROLLBACK")
            throw error
        }
    }

    /// The nested form of `transaction`: `SAVEPOINT`, then `RELEASE` or `ROLLBACK TO`.
    private func savepoint<T>(_ body: () throws -> T) throws -> T {
        let name = "nested\(transactionDepth)"
        try execute("SAVEPOINT \(name)")
        transactionDepth += 1
        defer { transactionDepth -= 1 }
        do {
            let result = try body()
            try execute("RELEASE \(name)")
            return result
        } catch {
            // Some errors (a full disk, an interrupted statement) make SQLite roll back the whole
            // transaction: then no savepoint is left, and whatever the outer body ran next would
            // commit statement by statement. Refuse every statement until the outermost exits.
            if sqlite3_get_autocommit(handle) != 0 {
                transactionAborted = true
            } else {
                try? execute("ROLLBACK TO \(name); RELEASE \(name)")
            }
            throw error
        }
    }

    /// Refuses a statement in a transaction SQLite already rolled back (see `savepoint`).
    private func requireLiveTransaction(_ sql: String) throws {
        guard transactionAborted else { return }
        throw SQLiteError(
            resultCode: SQLITE_ABORT, message: "the transaction was rolled back by an earlier error; nothing of it was saved", sql: sql)
    }

    /// Runs `body`'s reads in one deferred (read) transaction: one snapshot, and the file lock
    /// taken once instead of per statement. Inside another transaction it just runs.
    public func read<T>(_ body: () throws -> T) throws -> T {
        guard transactionDepth == 0 else { return try body() }
        try execute("BEGIN")
        transactionDepth = 1
        defer { (transactionDepth, transactionAborted) = (0, false) }
        do {
            let result = try body()
            try execute("COMMIT")
            return result
        } catch {
            try? execute("ROLLBACK")
            throw error
        }
    }

    /// The size of the file's pages (SQLite's default, 4 KiB, for every library notesd made).
    public var pageSize: Int {
        get throws { Int(try first("PRAGMA page_size") { $0.int(0) } ?? 4_096) }
    }

    /// How the file journals its transactions: SQLite's write-ahead log, or a rollback
    /// journal truncated at each commit (docs/decisions.md, "A bulk write without the log").
    public enum JournalMode: String, Sendable {
        case writeAheadLog = "wal"
        case rollbackTruncated = "truncate"
        /// A rollback journal deleted at each commit: a switch to it deletes the journal file
        /// (`Replica.returnToLog` passes through it).
        case rollbackDeleted = "delete"
    }

    /// Changes the journal mode (outside a transaction); false when SQLite keeps the old one.
    /// Leaving the log needs this to be the file's only open connection (SQLite copies the log
    /// into the file and removes it): with another one open it fails at once, without waiting
    /// for it. Entering the log waits, as any write does, for other connections' transactions.
    public func setJournalMode(_ mode: JournalMode) throws -> Bool {
        if mode != .writeAheadLog { sqlite3_busy_timeout(handle, 0) }
        defer { sqlite3_busy_timeout(handle, Self.busyTimeoutMilliseconds) }
        let now: String?
        do {
            now = try first("PRAGMA journal_mode = \(mode.rawValue)", [], { $0.text(0) })
        } catch let error as SQLiteError where error.primaryCode == SQLITE_BUSY && mode != .writeAheadLog {
            return false
        }
        guard now == mode.rawValue else { return false }
        // Back in WAL mode, SQLite opens the log at the next read; until then a checkpoint
        // fails as "database table is locked" (SQLite 3.40, seen in `releaseMemory`).
        if mode == .writeAheadLog { _ = try first("SELECT count(*) FROM sqlite_schema") { $0.int(0) } }
        return true
    }

    /// The schema version kept in `PRAGMA user_version`.
    public var userVersion: Int {
        get throws { Int(try first("PRAGMA user_version") { $0.int(0) } ?? 0) }
    }

    /// Brings the schema up to date: runs each migration whose index is at or past
    /// `user_version`, each in its own transaction that also records the new version.
    /// `latest`, when given, makes a new database (schema version 0) at the last migration's
    /// schema in one step instead of migration by migration.
    public func migrate(_ migrations: [Migration], newAt latest: Migration? = nil) throws {
        let current = try userVersion
        guard current <= migrations.count else {
            throw SQLiteError(
                resultCode: SQLITE_ERROR,
                message: "the database at \(path) has schema version \(current), newer than this notesd knows (\(migrations.count)); run a newer notesd")
        }
        if current == 0, let latest, !migrations.isEmpty {
            try transaction {
                try execute(latest.sql)
                try latest.then?(self)
                try execute("PRAGMA user_version = \(migrations.count)")
            }
            return
        }
        for index in current..<migrations.count {
            try transaction {
                try execute(migrations[index].sql)
                try migrations[index].then?(self)
                try execute("PRAGMA user_version = \(index + 1)")
            }
        }
    }

    /// `PRAGMA quick_check` (or `integrity_check` when `full`): the problems found, empty when ok.
    public func check(full: Bool = false) throws -> [String] {
        let rows = try rows(full ? "PRAGMA integrity_check" : "PRAGMA quick_check") { $0.text(0) }
        return rows == ["ok"] ? [] : rows
    }
}

/// One step of a schema: SQL, and what must be computed in Swift to finish it (in the same
/// transaction, so a crash leaves the step either done or not begun).
public struct Migration: ExpressibleByStringLiteral, Sendable {
    public let sql: String
    public let then: (@Sendable (Database) throws -> Void)?

    public init(_ sql: String, then: (@Sendable (Database) throws -> Void)? = nil) {
        self.sql = sql
        self.then = then
    }

    public init(stringLiteral sql: String) { self.init(sql) }
}

/// SQL text as the statement cache's key, hashed by its length and its first and last eight
/// bytes only: every statement run looks itself up, and hashing the whole text each time (hundreds
/// of bytes for an upsert) cost a catch-up more than some of its statements' own work.
/// Equality compares the whole text, byte for byte, as the hash reads it.
private struct StatementKey: Hashable {
    let sql: String

    init(_ sql: String) { self.sql = sql }

    func hash(into hasher: inout Hasher) {
        var text = sql
        text.withUTF8 { utf8 in
            hasher.combine(utf8.count)
            guard utf8.count >= 8, let start = utf8.baseAddress else { return }
            let raw = UnsafeRawPointer(start)
            hasher.combine(raw.loadUnaligned(as: UInt64.self))
            hasher.combine(raw.loadUnaligned(fromByteOffset: utf8.count - 8, as: UInt64.self))
        }
    }

    static func == (lhs: StatementKey, rhs: StatementKey) -> Bool {
        var right = rhs.sql
        return right.withUTF8 { sameBytes(lhs.sql, $0) }
    }
}

/// Whether `text`'s UTF-8 is `bytes`, byte for byte (`memcmp`: SQL texts are compared on
/// every statement run, and `String ==` compares them as Unicode).
func sameBytes(_ text: String, _ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
    var text = text
    return text.withUTF8 { own in
        own.count == bytes.count && (own.isEmpty || memcmp(own.baseAddress!, bytes.baseAddress!, own.count) == 0)
    }
}

/// An exclusive advisory lock on a file (`flock`), held while the value lives: one daemon per
/// database. A second holder, in this process or another, gets a clear error at once.
public final class FileLock {
    private let descriptor: Int32
    public let path: String

    public struct Busy: Error, CustomStringConvertible {
        public let path: String
        public var description: String {
            "another notesd is already using this data directory (lock \(path) is held); stop it first or pass a different --data-dir"
        }
    }

    public init(path: String) throws {
        let descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else {
            throw SystemError(operation: "open \(path)", code: errno)
        }
        guard flock(descriptor, LOCK_EX | LOCK_NB) == 0 else {
            let code = errno
            close(descriptor)
            if code == EWOULDBLOCK { throw Busy(path: path) }
            throw SystemError(operation: "lock \(path)", code: code)
        }
        self.descriptor = descriptor
        self.path = path
    }

    deinit {
        flock(descriptor, LOCK_UN)
        close(descriptor)
    }
}

/// A failed system call: what was attempted and `errno`, rendered with `strerror`.
public struct SystemError: Error, CustomStringConvertible, Sendable {
    public let operation: String
    public let code: Int32

    public init(operation: String, code: Int32) {
        self.operation = operation
        self.code = code
    }

    public var description: String { "\(operation): \(String(cString: strerror(code)))" }
}
