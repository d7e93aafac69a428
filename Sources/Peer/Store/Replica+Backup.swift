import CSQLite
import Foundation
import Merge

/// Why a file cannot be restored as this device's library, saying what the file is.
public enum BackupRestoreError: Error, Equatable, CustomStringConvertible {
    case missing(path: String)
    /// Not SQLite at all; `looksLike` says what it seems to be.
    case notSQLite(path: String, looksLike: String)
    /// SQLite, but without notesd's tables.
    case notNotesd(path: String, tables: [String])
    case newerSchema(path: String, version: Int, known: Int)
    /// A notesd database that names no household (not made by `notesctl backup`).
    case noHousehold(path: String)
    case otherHousehold(path: String, theirs: String, ours: String)
    case damaged(path: String, problems: [String])

    public var description: String {
        switch self {
        case .missing(let path): "\(path) does not exist"
        case .notSQLite(let path, let looksLike):
            "\(path) is not a notesd backup: it is not a SQLite database at all (\(looksLike))"
        case .notNotesd(let path, let tables):
            "\(path) is a SQLite database but not a notesd one (its tables: \(tables.isEmpty ? "none" : tables.prefix(6).joined(separator: ", ")))"
        case .newerSchema(let path, let version, let known):
            "\(path) is a notesd database of schema \(version), newer than this notesd knows (\(known)); restore it with a newer notesd"
        case .noHousehold(let path):
            "\(path) is a notesd database with no household id, so it cannot be told apart from another household's; restore only copies made by `notesctl backup`"
        case .otherHousehold(let path, let theirs, let ours):
            "\(path) is a backup of another household (\(theirs.prefix(8))); this device is in household \(ours.prefix(8)). Restore it with that household's data directory, or pick a backup of this household"
        case .damaged(let path, let problems):
            "\(path) is a damaged notesd database (\(problems.prefix(3).joined(separator: "; "))); pick another backup"
        }
    }
}

/// What a backup holds, read without changing it.
public struct BackupDescription: Sendable, Equatable {
    public let replica: ReplicaID
    public let household: String?
    public let offered: UInt64
    /// The replica's own top log entry in the copy.
    public let sequence: UInt64
    public let schemaVersion: Int
}

/// What `restoreBackup` did.
public struct BackupRestoreReport: Sendable, Equatable {
    public let oldReplica: ReplicaID
    public let newReplica: ReplicaID
    /// Own entries above the copy's `offered` mark, dropped: the household sends back whatever
    /// replaced them.
    public let droppedEntries: Int
    /// Own entries above the `offered` mark that the device cannot have replaced since (see
    /// `replaceable`), logged again under the new replica id.
    public let keptEntries: Int
    /// Where the library that was replaced now is (nil when there was none).
    public let previousLibrary: String?
}

/// Backups (docs/architecture.md, "Backups"): the household id kept in the database so a
/// copy can be told apart, and installing a copy under a new replica id.
extension Replica {
    /// The household this database belongs to (`meta.household`; the key stays in its file).
    public func recordHousehold(_ id: String) throws {
        guard try household() != id else { return }
        try database.transaction {
            try database.run(
                "INSERT INTO meta (key, value) VALUES ('household', ?1) ON CONFLICT(key) DO UPDATE SET value = excluded.value", [.text(id)])
        }
    }

    public func household() throws -> String? {
        try database.first("SELECT value FROM meta WHERE key = 'household'") { $0.text(0) }
    }

    /// Reads a backup's identity, refusing what is not a notesd database, saying what it is.
    public static func describeBackup(at path: String) throws -> BackupDescription {
        guard FileManager.default.fileExists(atPath: path) else { throw BackupRestoreError.missing(path: path) }
        var head: [UInt8] = []
        if let handle = FileHandle(forReadingAtPath: path) {
            head = [UInt8]((try? handle.read(upToCount: 64)) ?? Data())
            try? handle.close()
        }
        let magic: [UInt8] = Array("SQLite format 3".utf8) + [0]
        guard head.starts(with: magic) else {
            throw BackupRestoreError.notSQLite(path: path, looksLike: Self.looksLike(head))
        }
        let database: Database
        let tables: [String]
        do {
            database = try Database(path: path, readOnly: true)
            tables = try database.rows("SELECT name FROM sqlite_schema WHERE type = 'table' ORDER BY name") { $0.text(0) }
        } catch let error as SQLiteError {
            throw BackupRestoreError.damaged(path: path, problems: [error.message])
        }
        guard ["meta", "log", "vector", "revisions", "heads"].allSatisfy(tables.contains),
              let rawReplica = try database.first("SELECT value FROM meta WHERE key = 'replica'", [], { $0.blob(0) }),
              let replica = RecordID(bytes: rawReplica).map(ReplicaID.init)
        else { throw BackupRestoreError.notNotesd(path: path, tables: tables) }
        let version = try database.userVersion
        guard version <= Schema.migrations.count else {
            throw BackupRestoreError.newerSchema(path: path, version: version, known: Schema.migrations.count)
        }
        let problems = try database.check()
        guard problems.isEmpty else { throw BackupRestoreError.damaged(path: path, problems: problems) }
        let household = try database.first("SELECT value FROM meta WHERE key = 'household'") { $0.text(0) }
        let offered = try database.first("SELECT value FROM meta WHERE key = 'offered'") { UInt64(bitPattern: $0.int(0)) } ?? 0
        let sequence = try database.first("SELECT seq FROM vector WHERE replica = ?1", [.record(replica.raw)]) {
            UInt64(bitPattern: $0.int(0))
        } ?? 0
        return BackupDescription(replica: replica, household: household, offered: offered, sequence: sequence, schemaVersion: version)
    }

    private static func looksLike(_ head: [UInt8]) -> String {
        if head.isEmpty { return "it is empty" }
        if head.starts(with: [0x1F, 0x8B]) { return "it looks like a gzip file" }
        if head.starts(with: Array("PK".utf8)) { return "it looks like a zip file" }
        if head.allSatisfy({ $0 == 9 || $0 == 10 || $0 == 13 || (32..<127).contains($0) || $0 >= 0x80 }) {
            return "it looks like text: \"\(String(decoding: head.prefix(24), as: UTF8.self).replacingOccurrences(of: "\n", with: " "))…\""
        }
        return "its first bytes are \(Hex.encode(Array(head.prefix(8))))"
    }

    /// Installs the backup at `file` as the library at `databasePath`, with the daemon stopped
    /// (it takes the daemon's lock). The copy gets a new replica id; of its own entries above
    /// its `offered` mark, those the device may since have replaced under the same (replica,
    /// seq) and sent out are dropped and its vector for the old id lowered to that mark, so the
    /// household sends the newer versions back; the rest are logged under the new id. The
    /// library it replaces is kept next to it, renamed.
    public static func restoreBackup(
        from file: String, toDatabase databasePath: String, household: String, now: UInt64,
        randomBytes: @escaping (Int) -> [UInt8] = Replica.systemRandomBytes
    ) throws -> BackupRestoreReport {
        let daemonLock = try FileLock(path: databasePath + ".lock")
        let description = try describeBackup(at: file)
        guard let theirs = description.household else { throw BackupRestoreError.noHousehold(path: file) }
        guard theirs == household else { throw BackupRestoreError.otherHousehold(path: file, theirs: theirs, ours: household) }

        let staging = databasePath + ".restoring"
        for suffix in ["", "-wal", "-shm", "-journal", ".lock"] { unlink(staging + suffix) }
        try copyFile(file, to: staging)
        let newReplica = ReplicaID(RecordID(bytes: randomBytes(16))!)
        let (dropped, kept, affected): (Int, Int, [(RecordID, RecordKind)])
        do {
            let database = try Database(path: staging)
            // A backup made by an older notesd is read through the current schema.
            try database.migrate(Schema.migrations)
            (dropped, kept, affected) = try database.transaction {
                try forgetUnofferedEntries(in: database, of: description.replica, above: description.offered, newReplica: newReplica)
            }
            try database.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        }
        do {
            let replica = try Replica(path: staging, randomBytes: randomBytes)
            precondition(replica.replicaID == newReplica, "the staged copy carries the new replica id")
            try replica.write {
                for (record, kind) in affected { try replica.materialize(record, kind: kind) }
                for table in ["notes", "folders", "devices"] {
                    try replica.database.run("DELETE FROM \(table) WHERE id NOT IN (SELECT record FROM heads)")
                }
                try replica.recountNotes()
                // The search index is derived from the notes: rebuilt from what remains.
                try replica.setMeta("search_index", 0)
            }
            try replica.buildSearchIndexIfNeeded()
            let problems = try replica.integrityProblems()
            guard problems.isEmpty else { throw BackupRestoreError.damaged(path: file, problems: problems) }
            try replica.database.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        }
        unlink(staging + ".lock")
        var previous: String?
        if FileManager.default.fileExists(atPath: databasePath) {
            let aside = databasePath + ".before-restore-\(now)"
            // With its journal too: a crash during a bulk write leaves one, which only the file
            // it belongs to may roll back (docs/decisions.md, "A bulk write without the log").
            for suffix in ["", "-wal", "-shm", "-journal"] where FileManager.default.fileExists(atPath: databasePath + suffix) {
                guard rename(databasePath + suffix, aside + suffix) == 0 else {
                    throw SystemError(operation: "move \(databasePath + suffix) aside", code: errno)
                }
            }
            previous = aside
        }
        for suffix in ["-wal", "-shm", "-journal"] { unlink(staging + suffix) }
        guard rename(staging, databasePath) == 0 else { throw SystemError(operation: "install \(staging) as \(databasePath)", code: errno) }
        withExtendedLifetime(daemonLock) {}
        return BackupRestoreReport(
            oldReplica: description.replica, newReplica: newReplica, droppedEntries: dropped, keptEntries: kept, previousLibrary: previous)
    }

    /// A byte copy, mode 0600, flushed to disk.
    static func copyFile(_ source: String, to destination: String) throws {
        let input = open(source, O_RDONLY | O_CLOEXEC)
        guard input >= 0 else { throw SystemError(operation: "open \(source)", code: errno) }
        defer { close(input) }
        let output = open(destination, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard output >= 0 else { throw SystemError(operation: "create \(destination)", code: errno) }
        defer { close(output) }
        try copyBytes(from: input, to: output, what: destination)
    }

    /// Copies everything `input` has left into `output` and flushes it (`fsync`).
    public static func copyBytes(from input: Int32, to output: Int32, what: String) throws {
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        while true {
            let count = buffer.withUnsafeMutableBytes { Glibc.read(input, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                throw SystemError(operation: "read for \(what)", code: errno)
            }
            if count == 0 { break }
            var offset = 0
            while offset < count {
                let written = buffer.withUnsafeBytes { Glibc.write(output, $0.baseAddress! + offset, count - offset) }
                if written < 0 {
                    if errno == EINTR { continue }
                    throw SystemError(operation: "write \(what)", code: errno)
                }
                offset += written
            }
        }
        guard fsync(output) == 0 else { throw SystemError(operation: "flush \(what)", code: errno) }
    }

    /// In the staged copy: the new replica id, and the old replica's entries above `offered`
    /// sorted into the two kinds `replaceable` tells apart. Those the device may have replaced
    /// since are gone with the revisions only they named (and whatever blocks only those used);
    /// the others are logged again under the new replica id, in their order. The vector for the
    /// old id is lowered to `offered` and heads are recomputed. Returns how many entries were
    /// dropped and kept, and the records whose state must be materialised again.
    private static func forgetUnofferedEntries(
        in database: Database, of old: ReplicaID, above offered: UInt64, newReplica: ReplicaID
    ) throws -> (dropped: Int, kept: Int, affected: [(RecordID, RecordKind)]) {
        let entries = try database.rows(
            "SELECT seq, record, revision FROM log WHERE replica = ?1 AND seq > ?2 ORDER BY seq",
            [.record(old.raw), .integer(Int64(bitPattern: offered))]
        ) { (UInt64($0.int(0)), $0.recordID(1), Hash256(bytes: $0.blob(2))!) }
        var kept: [UInt64] = []
        var dropped: [(seq: UInt64, record: RecordID, revision: RevisionID)] = []
        for (seq, record, revision) in entries {
            if let record, try replaceable(revision, of: record, in: database) {
                dropped.append((seq, record, revision))
            } else {
                kept.append(seq)
            }
        }
        for (index, seq) in kept.enumerated() {
            try database.run(
                "UPDATE log SET replica = ?1, seq = ?2 WHERE replica = ?3 AND seq = ?4",
                [.record(newReplica.raw), .integer(Int64(index + 1)), .record(old.raw), .integer(Int64(seq))])
        }
        if !kept.isEmpty {
            try database.run("INSERT INTO vector (replica, seq) VALUES (?1, ?2)", [.record(newReplica.raw), .integer(Int64(kept.count))])
        }
        var affected: [RecordID: RecordKind] = [:]
        var unsettled: [RecordID: [Int64]] = [:]
        for (seq, record, revision) in dropped.reversed() {
            try database.run("DELETE FROM log WHERE replica = ?1 AND seq = ?2", [.record(old.raw), .integer(Int64(seq))])
            // A derived revision (a conflict copy) may be named by a peer's entry too: it stays.
            let stillNamed = try database.first(
                "SELECT 1 FROM log WHERE record = ?1 AND revision = ?2", [.record(record), .hash(revision)]) { _ in true } ?? false
            guard !stillNamed,
                  let (stored, parts) = try Replica.resolvedRevision(revision, of: record, in: database)
            else { continue }
            let row = (stored.record, stored.kind, parts.body, stored.purged)
            affected[row.0] = row.1
            if !row.3 { unsettled[row.0, default: []] += try Replica.releaseBlocks(row.2, of: revision, record: row.0, in: database) }
            try database.run("DELETE FROM heads WHERE record = ?1 AND revision = ?2", [.record(row.0), .hash(revision)])
            try Replica.detachDeltaChildren(of: revision, record: row.0, in: database)
            try database.run("DELETE FROM revisions WHERE record = ?1 AND id = ?2", [.record(record), .hash(revision)])
        }
        for (record, packs) in unsettled.sorted(by: { $0.key < $1.key }) { try Replica.settlePacks(packs, of: record, in: database) }
        for (record, kind) in affected {
            try database.run("DELETE FROM heads WHERE record = ?1", [.record(record)])
            let rows = try database.rows("SELECT id, parents FROM revisions WHERE record = ?1", [.record(record)]) {
                (Hash256(bytes: $0.blob(0))!, Replica.hashes($0.blob(1)))
            }
            let parents = Set(rows.flatMap(\.1))
            for (id, _) in rows where !parents.contains(id) {
                try database.run(
                    "INSERT INTO heads (record, revision, kind) VALUES (?1, ?2, ?3)",
                    [.record(record), .hash(id), .integer(Int64(kind.rawValue))])
            }
        }
        if !entries.isEmpty {
            try database.run("UPDATE vector SET seq = ?2 WHERE replica = ?1", [.record(old.raw), .integer(Int64(bitPattern: offered))])
        }
        try database.run("UPDATE meta SET value = ?1 WHERE key = 'replica'", [.record(newReplica.raw)])
        // Marks about the old replica's own entries mean nothing for the new one.
        try database.run("DELETE FROM meta WHERE key IN ('offered', 'sealed')")
        return (dropped.count, kept.count, affected.map { ($0.key, $0.value) }.sorted { $0.0 < $1.0 })
    }

    /// Whether the live device may have replaced this unoffered revision after the copy was
    /// taken: coalescing replaces only a record's one head, and never a tombstone. Anything
    /// else is still there, unchanged, on the device (and maybe sent on from it): a revision
    /// with children cannot be replaced, and nothing is written on top of a tombstone. Keeping
    /// those matters for tombstones most: a purge erased its ancestors' content at once, and
    /// dropping it would leave that content erased here with nothing left that erases it —
    /// the copy would then read those revisions differently from every other device, which
    /// hold them and so never send them again.
    private static func replaceable(_ revision: RevisionID, of record: RecordID, in database: Database) throws -> Bool {
        let tombstone = try database.first(
            "SELECT tombstone FROM revisions WHERE record = ?1 AND id = ?2", [.record(record), .hash(revision)]) { $0.int(0) != 0 }
        guard let tombstone, !tombstone else { return false }
        let heads = try database.rows("SELECT revision FROM heads WHERE record = ?1", [.record(record)]) { $0.blob(0) }
        return heads.count == 1 && heads[0] == revision.bytes
    }
}
