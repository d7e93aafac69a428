import CSQLite
import Merge

/// A value SQLite can store, for binding parameters.
public enum SQLValue: Sendable, Hashable {
    case integer(Int64)
    case text(String)
    case blob([UInt8])
    /// An id, bound as a blob straight from its words (`Hash256.withBytes`).
    case hash(Hash256)
    case record(RecordID)
    case null
}

/// A prepared statement. Finalized when the last reference goes away (the GRDB way): whoever
/// holds it owns the C handle, so it can never be used after it is freed.
public final class Statement {
    let handle: OpaquePointer
    public let sql: String
    private unowned let database: Database
    /// How many parameters the statement has: a run that binds them all needs no
    /// `sqlite3_clear_bindings` first (one call saved per statement run, of which a catch-up
    /// runs about ten per note).
    private let parameterCount: Int
    /// Where a run's ids and small blobs are copied and bound from by pointer
    /// (`SQLITE_STATIC`): SQLite's own copy of each bound blob (`SQLITE_TRANSIENT`) cost about
    /// 190 instructions, and a catch-up binds some ninety of them per note. Every run binds
    /// all of its values before its first step, so SQLite never reads what an earlier run
    /// left here. Grown as needed, never beyond `parameterCount × scratchBlobLimit` bytes.
    private var scratch = UnsafeMutableRawBufferPointer(start: nil, count: 0)
    /// Blobs up to this size go through `scratch` (a cached statement keeps its scratch, and an
    /// idle daemon should not hold a large one); larger ones are bound where they are for a
    /// `run`'s steps alone (`withLargeBlobsBound`), and copied by SQLite for a query.
    static let scratchBlobLimit = 256

    init(database: Database, sql: String) throws {
        var handle: OpaquePointer?
        let code = sqlite3_prepare_v3(database.handle, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &handle, nil)
        guard code == SQLITE_OK, let handle else {
            throw database.error(code, sql: sql)
        }
        self.handle = handle
        self.sql = sql
        self.database = database
        parameterCount = Int(sqlite3_bind_parameter_count(handle))
    }

    deinit {
        sqlite3_finalize(handle)
        scratch.deallocate()
    }

    /// Resets the statement and binds `values` to its parameters `?1`, `?2`, ….
    @discardableResult
    public func bind(_ values: [SQLValue]) throws -> Statement {
        try bind(values, largeBlobsInPlace: false)
    }

    /// `bind`; with `largeBlobsInPlace`, blobs over `scratchBlobLimit` are left for
    /// `withLargeBlobsBound` to bind where they are, for the statement's steps alone.
    @discardableResult
    private func bind(_ values: [SQLValue], largeBlobsInPlace: Bool) throws -> Statement {
        sqlite3_reset(handle)
        if values.count < parameterCount { sqlite3_clear_bindings(handle) }
        var scratchUsed = 0
        var scratchNeeded = 0
        for value in values { scratchNeeded += Self.scratchSize(of: value) }
        if scratchNeeded > scratch.count {
            // Nothing bound from the old scratch is read again: every parameter is bound anew
            // below, or cleared if a bind fails.
            scratch.deallocate()
            scratch = .allocate(byteCount: scratchNeeded, alignment: 16)
        }
        /// Copies `bytes` into the scratch and binds them there.
        func bindInScratch(_ bytes: UnsafeRawBufferPointer, at index: Int32) -> Int32 {
            let start = scratch.baseAddress! + scratchUsed
            if let source = bytes.baseAddress { start.copyMemory(from: source, byteCount: bytes.count) }
            scratchUsed += bytes.count
            return sqlite3_bind_blob(handle, index, start, Int32(bytes.count), nil)
        }
        // By index: `enumerated()` here was not specialised and looked up its generic
        // metadata on every call.
        for offset in values.indices {
            let index = Int32(offset + 1)
            let code: Int32
            switch values[offset] {
            case .integer(let number): code = sqlite3_bind_int64(handle, index, number)
            case .text(var string):
                // A native string's UTF-8 is contiguous already: bound (and copied by SQLite) in place.
                code = string.withUTF8 { utf8 in
                    guard let start = utf8.baseAddress, !utf8.isEmpty else {
                        // An empty text still needs a non-null pointer, or SQLite stores NULL.
                        return notesd_sqlite3_bind_text_copy(handle, index, "", 0)
                    }
                    return start.withMemoryRebound(to: CChar.self, capacity: utf8.count) {
                        notesd_sqlite3_bind_text_copy(handle, index, $0, Int32(utf8.count))
                    }
                }
            case .blob(let bytes) where bytes.count > Self.scratchBlobLimit:
                if largeBlobsInPlace { continue }
                code = bytes.withUnsafeBytes { notesd_sqlite3_bind_blob_copy(handle, index, $0.baseAddress!, Int32($0.count)) }
            case .blob(let bytes) where bytes.isEmpty:
                // An empty blob still needs a non-null pointer, or SQLite stores NULL.
                code = notesd_sqlite3_bind_blob_copy(handle, index, UnsafeRawPointer(bitPattern: 1), 0)
            case .blob(let bytes): code = bytes.withUnsafeBytes { bindInScratch($0, at: index) }
            case .hash(let hash): code = hash.withBytes { bindInScratch($0, at: index) }
            case .record(let record): code = record.withBytes { bindInScratch($0, at: index) }
            case .null: code = sqlite3_bind_null(handle, index)
            }
            guard code == SQLITE_OK else {
                // Parameters bound before this one may point into a scratch this run replaced.
                sqlite3_clear_bindings(handle)
                throw database.error(code, sql: sql)
            }
        }
        return self
    }

    /// The bytes `value` takes in the scratch.
    private static func scratchSize(of value: SQLValue) -> Int {
        switch value {
        case .hash: 32
        case .record: 16
        case .blob(let bytes) where bytes.count <= scratchBlobLimit: bytes.count
        case .blob, .integer, .text, .null: 0
        }
    }

    /// Advances to the next row; `false` when done.
    public func step() throws -> Bool {
        let code = sqlite3_step(handle)
        switch code {
        case SQLITE_ROW: return true
        case SQLITE_DONE: return false
        default: throw database.error(code, sql: sql)
        }
    }

    /// Runs a statement that returns no rows. Its large blobs are bound where they are, for
    /// its steps alone, instead of copied by SQLite: a catch-up writes a few per note (a pack,
    /// its directory, a revision's and a note's body lists), and SQLite's copies were ~4 % of
    /// `Replica.apply`'s instructions.
    public func run(_ values: [SQLValue] = []) throws {
        try bind(values, largeBlobsInPlace: true)
        try withLargeBlobsBound(values, from: 0) { boundAny in
            // Still within the blobs' scope: reset, and when a blob was bound where it is,
            // nothing left bound (a caller stepping the cached statement without binding it
            // again reads NULLs, never bytes that are gone).
            defer {
                sqlite3_reset(handle)
                if boundAny { sqlite3_clear_bindings(handle) }
            }
            while try step() {}
        }
    }

    /// Binds each blob of `values` over `scratchBlobLimit`, from index `first` on, without a
    /// copy (`SQLITE_STATIC`), each in the scope of its bytes, and runs `body` within them all,
    /// telling it whether any was bound so. `body` must leave none of them bound.
    private func withLargeBlobsBound(
        _ values: [SQLValue], from first: Int, boundAny: Bool = false, _ body: (_ boundAny: Bool) throws -> Void
    ) throws {
        var offset = first
        while offset < values.count {
            if case .blob(let bytes) = values[offset], bytes.count > Self.scratchBlobLimit {
                let index = Int32(offset + 1)
                try bytes.withUnsafeBytes { raw in
                    let code = sqlite3_bind_blob(handle, index, raw.baseAddress!, Int32(raw.count), nil)
                    guard code == SQLITE_OK else {
                        sqlite3_clear_bindings(handle)
                        throw database.error(code, sql: sql)
                    }
                    try withLargeBlobsBound(values, from: offset + 1, boundAny: true, body)
                }
                return
            }
            offset += 1
        }
        try body(boundAny)
    }

    /// Runs a query and maps each row.
    public func rows<T>(_ values: [SQLValue] = [], _ transform: (Row) throws -> T) throws -> [T] {
        try bind(values)
        defer { sqlite3_reset(handle) }
        var results = [T]()
        while try step() { results.append(try transform(Row(statement: self))) }
        return results
    }

    /// Visits each row without collecting them.
    public func forEach(_ values: [SQLValue] = [], _ visit: (Row) throws -> Void) throws {
        try bind(values)
        defer { sqlite3_reset(handle) }
        while try step() { try visit(Row(statement: self)) }
    }

    /// Visits rows until `visit` returns false (or they run out), so a query for the first
    /// `n` matches steps over no more rows than it needs.
    public func visit(_ values: [SQLValue] = [], _ visit: (Row) throws -> Bool) throws {
        try bind(values)
        defer { sqlite3_reset(handle) }
        while try step() {
            guard try visit(Row(statement: self)) else { return }
        }
    }

    /// This statement's work so far (never reset).
    var counters: StatementCounters {
        StatementCounters(
            virtualMachineSteps: Int(sqlite3_stmt_status(handle, SQLITE_STMTSTATUS_VM_STEP, 0)),
            fullScanSteps: Int(sqlite3_stmt_status(handle, SQLITE_STMTSTATUS_FULLSCAN_STEP, 0)),
            sorts: Int(sqlite3_stmt_status(handle, SQLITE_STMTSTATUS_SORT, 0)),
            runs: Int(sqlite3_stmt_status(handle, SQLITE_STMTSTATUS_RUN, 0)))
    }

    /// The first row mapped, or nil when the query returns none.
    public func first<T>(_ values: [SQLValue] = [], _ transform: (Row) throws -> T) throws -> T? {
        try bind(values)
        defer { sqlite3_reset(handle) }
        return try step() ? transform(Row(statement: self)) : nil
    }
}

/// Work done by prepared statements, from `sqlite3_stmt_status`: a count of operations, not
/// of time, so a test can show that a request costs the same at any library size.
public struct StatementCounters: Sendable, Equatable, CustomStringConvertible {
    /// Virtual-machine operations run (`SQLITE_STMTSTATUS_VM_STEP`): every row visited costs
    /// several, so this grows with the rows a statement reads.
    public var virtualMachineSteps = 0
    /// Steps forward through a whole table or index (`SQLITE_STMTSTATUS_FULLSCAN_STEP`).
    public var fullScanSteps = 0
    /// Sorts without an index to give the order (`SQLITE_STMTSTATUS_SORT`).
    public var sorts = 0
    /// Times the statement ran (`SQLITE_STMTSTATUS_RUN`).
    public var runs = 0

    public init(virtualMachineSteps: Int = 0, fullScanSteps: Int = 0, sorts: Int = 0, runs: Int = 0) {
        self.virtualMachineSteps = virtualMachineSteps
        self.fullScanSteps = fullScanSteps
        self.sorts = sorts
        self.runs = runs
    }

    mutating func add(_ other: StatementCounters) {
        virtualMachineSteps += other.virtualMachineSteps
        fullScanSteps += other.fullScanSteps
        sorts += other.sorts
        runs += other.runs
    }

    public static func + (lhs: StatementCounters, rhs: StatementCounters) -> StatementCounters {
        var sum = lhs
        sum.add(rhs)
        return sum
    }

    public static func - (lhs: StatementCounters, rhs: StatementCounters) -> StatementCounters {
        StatementCounters(
            virtualMachineSteps: lhs.virtualMachineSteps - rhs.virtualMachineSteps, fullScanSteps: lhs.fullScanSteps - rhs.fullScanSteps,
            sorts: lhs.sorts - rhs.sorts, runs: lhs.runs - rhs.runs)
    }

    public var description: String { "\(runs) runs, \(virtualMachineSteps) VM steps, \(fullScanSteps) full-scan steps, \(sorts) sorts" }
}

/// The current row of a statement; valid only inside the closure it is passed to.
public struct Row {
    let statement: Statement

    public func isNull(_ column: Int32) -> Bool { sqlite3_column_type(statement.handle, column) == SQLITE_NULL }

    public func int(_ column: Int32) -> Int64 { sqlite3_column_int64(statement.handle, column) }

    public func double(_ column: Int32) -> Double { sqlite3_column_double(statement.handle, column) }

    public func text(_ column: Int32) -> String {
        guard let pointer = sqlite3_column_text(statement.handle, column) else { return "" }
        let count = Int(sqlite3_column_bytes(statement.handle, column))
        return String(decoding: UnsafeBufferPointer(start: pointer, count: count), as: UTF8.self)
    }

    public func optionalText(_ column: Int32) -> String? { isNull(column) ? nil : text(column) }

    public func blob(_ column: Int32) -> [UInt8] {
        let count = Int(sqlite3_column_bytes(statement.handle, column))
        guard count > 0, let pointer = sqlite3_column_blob(statement.handle, column) else { return [] }
        return Array(UnsafeRawBufferPointer(start: pointer, count: count))
    }

    public func optionalBlob(_ column: Int32) -> [UInt8]? { isNull(column) ? nil : blob(column) }

    /// A blob lent in place, valid only during `body`: reading it needs no array.
    public func withBlob<R>(_ column: Int32, _ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        let count = Int(sqlite3_column_bytes(statement.handle, column))
        guard count > 0, let pointer = sqlite3_column_blob(statement.handle, column) else { return try body(UnsafeRawBufferPointer(start: nil, count: 0)) }
        return try body(UnsafeRawBufferPointer(start: pointer, count: count))
    }

    /// A 32-byte hash read in place; nil for NULL or a value of another size.
    public func hash(_ column: Int32) -> Hash256? {
        let count = Int(sqlite3_column_bytes(statement.handle, column))
        guard count == 32, let pointer = sqlite3_column_blob(statement.handle, column) else { return nil }
        return Hash256(bytes: UnsafeRawBufferPointer(start: pointer, count: count))
    }

    /// A record id stored as its 16 bytes, read in place (no array per row: listings read
    /// thousands); nil for NULL or a value of another size.
    public func recordID(_ column: Int32) -> RecordID? {
        let count = Int(sqlite3_column_bytes(statement.handle, column))
        guard count == 16, let pointer = sqlite3_column_blob(statement.handle, column) else { return nil }
        return RecordID(bytes: UnsafeRawBufferPointer(start: pointer, count: count))
    }
}
