import Merge

/// Errors from the replica, each saying what happened and what to do.
public enum ReplicaError: Error, CustomStringConvertible, Equatable {
    /// `PRAGMA quick_check` found damage: refuse to start, and never sync it to peers.
    case corrupt(path: String, problems: [String])
    case notFound(kind: RecordKind, id: RecordID)
    case invalid(String)
    /// An edit named base heads (`notes.update` `baseHeads`) that this note does not have.
    case unknownBaseRevision
    /// SQLite kept a catch-up's rollback journal when asked for the write-ahead log again.
    case logNotRestored(path: String)

    /// What to do about a library whose stored revisions or blocks no longer fit together.
    public static let damagedLibraryAdvice =
        "the library is damaged: stop notesd, move its database aside and start notesd again, and it pulls the notes back "
        + "from your other devices (or restore a backup with `notesd --restore-backup FILE`)"

    public var description: String {
        switch self {
        case .corrupt(let path, let problems):
            "the database \(path) is damaged (\(problems.prefix(3).joined(separator: "; "))); notesd will not start on it or sync it. Move it aside and restart notesd: it will create a new database and pull the notes back from your other devices"
        case .notFound(let kind, let id): "no \(kind) with id \(id)"
        case .invalid(let message): message
        case .unknownBaseRevision: "baseHeads names a revision this note does not have; read the note again and retry"
        case .logNotRestored(let path):
            "SQLite kept \(path) in its rollback journal instead of returning it to the write-ahead log; notesd tries again when the next sync ends, and restarting notesd returns it"
        }
    }
}

/// The local replica: the SQLite store of revisions, blocks, the log and materialised state
/// (docs/architecture.md). Every local action is exactly one transaction.
///
/// Not thread-safe: one owner (the daemon's database actor, or a test) at a time.
/// It never reads a clock or an entropy source of its own: `now` (Unix ms) is a parameter
/// of each change and randomness comes from `randomBytes`, so the simulation replays exactly.
public final class Replica {
    public let database: Database
    public let path: String
    public let replicaID: ReplicaID
    /// The last HLC reading this replica issued or saw.
    public internal(set) var clock: HLC
    /// For each replica, the highest contiguous seq held.
    public internal(set) var vector: VersionVector
    /// Own entries with seq above this were never offered to a peer, so they may be coalesced.
    public internal(set) var offeredSeq: UInt64
    /// What the last committed write changed (notes, folders, devices, conflict copies).
    public private(set) var lastChanges = Changes()
    /// What the write in progress has changed so far.
    var pendingChanges = Changes()
    /// What the write in progress has changed in the note counts, stored as it commits.
    var pendingCounts = NoteCountChanges()
    /// Notes the write in progress materialised while writing in bulk, for the search index
    /// to take up after it: stored in `search_pending` as it commits (`flushSearchPending`).
    var pendingSearchNotes: [NoteID] = []
    let randomBytes: (Int) -> [UInt8]
    /// Blocks peers sent ahead of the entries that use them (`storeBlocks`), by hash, kept in
    /// memory: a `blocks` frame does not say which record they belong to, and blocks are
    /// stored per record. Taken up by `insertRevision`; dropped by `releaseMemory`.
    var sentBlocksAwaitingUse: [BlockHash: [UInt8]] = [:]
    /// The bytes of `sentBlocksAwaitingUse` (capped at `awaitingBlocksLimit`).
    var sentBlocksAwaitingBytes = 0
    /// The order blocks were sent in, oldest first (hashes taken up since may remain): the
    /// oldest go first when the cap is reached.
    var sentBlocksArrivalOrder: [BlockHash] = []
    /// A catch-up's or an import's page cache and checkpoint interval are in force (see
    /// `enterBulkWrite`).
    var writingInBulk = false
    /// The second, read-only connection for work beside the engine's (`parallelReader()`).
    var parallelReaderConnection: ParallelReader?
    /// Whether a bulk write's log is checkpointed on a thread of its own
    /// (`checkpointBesideBulkWrites`), and that thread while one runs.
    var checkpointsBeside = false
    var checkpointer: WALCheckpointer?
    /// The catch-up in progress journals in a rollback journal, not the write-ahead log
    /// (`enterBulkWrite`); the log comes back with `releaseMemory`, or first when a
    /// connection beside the engine's opens (`connectionBesideOpening`).
    var outOfTheLog = false
    /// Connections the owner opened beside the engine's (`connectionBesideOpening`): while
    /// any is open, bulk writes keep the write-ahead log.
    var connectionsBeside = 0
    /// The log's size in pages at which a bulk write's log is copied into the database file
    /// (`bulkWriteCheckpointBytes` of this library's pages; smaller in tests), at least: with
    /// the thread of its own, the library's size once larger (`bulkLogLimit`).
    var bulkCheckpointPages: Int
    /// Whether that limit grows with the library (`bulkLogLimit`); tests of the copying
    /// protocol alone keep it fixed.
    var bulkLogGrowsWithLibrary = true
    /// Rows `apply` holds to insert many to a statement; nil outside it.
    var gatheredRows: GatheredRows?
    /// Replicas whose vector entry the transaction in progress advanced (see `flushVector`).
    var changedVectorEntries = Set<ReplicaID>()
    private let lock: FileLock
    /// Fault injection for the simulation: called at points inside write transactions; when it
    /// throws, the transaction rolls back exactly as a crash at that point would leave it.
    public var crashPoint: ((String) throws -> Void)?

    /// How long a run of local edits keeps folding into one revision while no peer saw it.
    public static let coalescingWindowMilliseconds: UInt64 = 5 * 60 * 1000

    /// When `init` reads the whole file with `PRAGMA quick_check` (docs/architecture.md,
    /// "The start-up check").
    public enum OpeningCheck: Sendable {
        /// Always: tools, tests, and a restore.
        case always
        /// Only when the last process did not close the replica cleanly (`markClosedCleanly`):
        /// a crash, a kill or a power cut is when damage is likely. The daemon checks a
        /// cleanly closed file after it is ready instead (`Replica.quickCheck`), so start-up
        /// does not cost a read of the whole library.
        case afterUncleanShutdown
    }

    /// `init` ran `quick_check` (see `OpeningCheck`).
    public let checkedAtOpen: Bool

    /// Opens (or creates) the replica at `path`. Takes the one-daemon lock, checks the file,
    /// migrates the schema and mints the replica id on first open.
    public init(path: String, check: OpeningCheck = .always, randomBytes: @escaping (Int) -> [UInt8] = Replica.systemRandomBytes) throws {
        lock = try FileLock(path: path + ".lock")
        let database = try Database(path: path)
        // Unreadable (no meta table yet, or damage) counts as not closed cleanly.
        let closedCleanly = (try? Self.meta(database, Self.closedCleanlyKey)) == 1
        checkedAtOpen = check == .always || !closedCleanly
        if checkedAtOpen {
            let problems = try Self.problems(in: database)
            guard problems.isEmpty else { throw ReplicaError.corrupt(path: path, problems: problems) }
        }
        // From now on a crash leaves the replica not closed cleanly.
        if closedCleanly { try database.run("DELETE FROM meta WHERE key = ?1", [.text(Self.closedCleanlyKey)]) }
        try database.migrate(Schema.migrations, newAt: Schema.current)
        self.database = database
        self.path = path
        self.randomBytes = randomBytes
        bulkCheckpointPages = Self.bulkWriteCheckpointBytes / (try database.pageSize)
        let existing = try database.first("SELECT value FROM meta WHERE key = 'replica'") { $0.blob(0) }
        if let existing, let id = RecordID(bytes: existing) {
            replicaID = ReplicaID(id)
        } else {
            replicaID = ReplicaID(RecordID(bytes: randomBytes(16))!)
            try database.run("INSERT INTO meta (key, value) VALUES ('replica', ?1)", [.record(replicaID.raw)])
        }
        clock = HLC(rawValue: UInt64(try Self.meta(database, "clock") ?? 0))
        offeredSeq = UInt64(try Self.meta(database, "offered") ?? 0)
        let counters = try database.rows("SELECT replica, seq FROM vector") { row in
            (ReplicaID(row.recordID(0)!), UInt64(row.int(1)))
        }
        vector = VersionVector(Dictionary(uniqueKeysWithValues: counters))
        try buildSearchIndexIfNeeded()
    }

    /// A bulk write's checkpointing thread ends with its replica (its connection would outlive it).
    deinit { checkpointer?.stop() }

    public static func systemRandomBytes(_ count: Int) -> [UInt8] { Sodium.randomBytes(count) }

    /// The schema this notesd writes (one version per migration, `Schema`).
    public static var schemaVersion: Int { Schema.migrations.count }

    /// The schema version of the database at `path`; nil when there is none yet or it cannot
    /// be read (opening it says why). Lets the daemon say that an upgrade is under way.
    public static func schemaVersion(ofDatabaseAt path: String) -> Int? {
        guard let database = try? Database(path: path, readOnly: true) else { return nil }
        return try? database.userVersion
    }

    static let closedCleanlyKey = "closed_cleanly"

    /// Records that this process is done with the replica: the next open may skip the
    /// whole-file check (`OpeningCheck.afterUncleanShutdown`). The daemon calls it last.
    public func markClosedCleanly() throws {
        // The parallel reader closes first, so the writer is the last connection and removes
        // the write-ahead log as it closes.
        closeParallelReader()
        stopCheckpointer()
        try setMeta(Self.closedCleanlyKey, 1)
    }

    /// Records that the file must be checked at the next open, whatever happened.
    public func requireCheckAtNextOpen() throws {
        try database.run("DELETE FROM meta WHERE key = ?1", [.text(Self.closedCleanlyKey)])
    }

    /// `quick_check` of the database at `path` through a read-only connection of its own, so
    /// it can run beside the daemon's writer (WAL readers never block it): the problems
    /// found, empty when the file is sound.
    public static func quickCheck(path: String) throws -> [String] {
        try problems(in: try Database(path: path, readOnly: true))
    }

    private static func problems(in database: Database) throws -> [String] {
        do {
            return try database.check()
        } catch let error as SQLiteError where error.isCorrupt {
            return [error.message]
        }
    }

    private static func meta(_ database: Database, _ key: String) throws -> Int64? {
        try database.first("SELECT value FROM meta WHERE key = ?1", [.text(key)]) { $0.int(0) }
    }

    func setMeta(_ key: String, _ value: UInt64) throws {
        try database.run(
            "INSERT INTO meta (key, value) VALUES (?1, ?2) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            [.text(key), .integer(Int64(bitPattern: value))])
    }

    // MARK: - Transactions that keep the in-memory mirrors (clock, vector) honest

    /// Runs `body` in one transaction; the clock, vector and `offered` mark it changed are kept
    /// only if it commits, so a failed action leaves memory and disk agreeing. A nested call runs
    /// in a savepoint (see `Database.transaction`): when it throws, its writes and its changes to
    /// the in-memory mirrors are undone alone, and the outer body may go on.
    func write<T>(_ body: () throws -> T) throws -> T {
        if database.isInTransaction {
            let saved = (clock, vector, offeredSeq, changedVectorEntries, pendingCounts)
            // By count: a copy of the list would be copied again at the nested body's first note.
            let searchNotesBefore = pendingSearchNotes.count
            // The outer body's changes are set aside rather than copied: a copy held while the
            // nested body adds to them made every nested write copy them all (an import of n
            // notes in one transaction copied n²/2 entries).
            var outer = Changes()
            swap(&outer, &pendingChanges)
            do {
                let result = try database.transaction(body)
                outer.absorb(pendingChanges)
                pendingChanges = outer
                return result
            } catch {
                (clock, vector, offeredSeq, changedVectorEntries, pendingCounts) = saved
                pendingSearchNotes.removeLast(pendingSearchNotes.count - searchNotesBefore)
                pendingChanges = outer
                throw error
            }
        }
        let savedClock = clock, savedVector = vector, savedOffered = offeredSeq
        pendingChanges = Changes()
        pendingCounts = NoteCountChanges()
        pendingSearchNotes.removeAll()
        changedVectorEntries.removeAll()
        if let checkpointer, checkpointer.beforeTransaction(logPages: database.logPages, limit: try bulkLogLimit()) != nil {
            // Its connection failed (an I/O error, damage): SQLite's own checkpoints again,
            // on this connection, for the rest of the bulk write.
            stopCheckpointer()
            try database.execute("PRAGMA wal_autocheckpoint = \(bulkCheckpointPages)")
        }
        do {
            let result = try database.transaction {
                let result = try body()
                try flushVector()
                try flushCounts()
                try flushSearchPending()
                try setMeta("clock", clock.rawValue)
                return result
            }
            lastChanges = pendingChanges
            return result
        } catch {
            (clock, vector, offeredSeq) = (savedClock, savedVector, savedOffered)
            throw error
        }
    }

    /// Runs several local changes as one transaction (an import): all of them land or none.
    public func inOneTransaction<T>(_ body: () throws -> T) throws -> T { try write(body) }

    /// Advances the clock for a local event at wall time `now`.
    func tick(now: UInt64) -> HLC {
        clock = clock.advanced(now: now)
        return clock
    }

    /// Records that own entries up to `seq` (default: all) have been offered to a peer, so none
    /// of them may be coalesced any more.
    public func markOffered(through seq: UInt64? = nil) throws {
        let own = seq ?? vector[replicaID]
        guard own > offeredSeq else { return }
        try database.transaction { try setMeta("offered", own) }
        offeredSeq = own
    }

    // MARK: - Minting ids

    /// A new UUIDv7 (RFC 9562 §5.7): 48 bits of Unix ms, then random bits.
    func newRecordID(now: UInt64) -> RecordID {
        let random = randomBytes(10)
        var bytes = (0..<6).map { UInt8(truncatingIfNeeded: now >> (40 - 8 * UInt64($0))) } + random
        bytes[6] = 0x70 | (bytes[6] & 0x0F)
        bytes[8] = 0x80 | (bytes[8] & 0x3F)
        return RecordID(bytes: bytes)!
    }

    /// A UUIDv8 (RFC 9562 §5.8) that is a pure function of its inputs: conflict copies and
    /// device records get the same id on every replica.
    static func derivedRecordID(domain: String, _ parts: [[UInt8]]) -> RecordID {
        var bytes = Sodium.blake2b(Array(domain.utf8) + parts.flatMap { $0 }, outputLength: 16)
        bytes[6] = 0x80 | (bytes[6] & 0x0F)
        bytes[8] = 0x80 | (bytes[8] & 0x3F)
        return RecordID(bytes: bytes)!
    }

    /// The id of the conflict copy holding a losing version of `note` (docs/merge.md): a pure
    /// function of the note and of the losing text (title and body blocks), so every device
    /// that detects the conflict derives the same copy, a version that loses twice (to
    /// different heads, seen in different orders on different devices) is still one copy, and a
    /// later conflict with different text can never land on an earlier copy.
    public static func conflictCopyID(note: NoteID, title: String, body: [BlockHash]) -> NoteID {
        derivedRecordID(domain: "notesd conflict copy v1", [note.bytes, Array(title.utf8), [0]] + body.map(\.bytes))
    }

    /// The roster record of the device with this public key.
    public static func deviceRecordID(publicKey: [UInt8]) -> RecordID {
        derivedRecordID(domain: "notesd device v1", [publicKey])
    }
}
