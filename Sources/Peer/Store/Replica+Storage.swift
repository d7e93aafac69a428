import Merge

/// The low-level writes and reads behind every replica operation: revisions, blocks, the log,
/// heads and the version vector. Callers run these inside one transaction.
extension Replica {
    /// A revision row as stored (content still encoded).
    struct RevisionRow {
        let id: RevisionID
        let record: RecordID
        let kind: RecordKind
        let hlc: HLC
        let author: ReplicaID
        let parents: [RevisionID]
        let body: [BlockHash]
        let tombstone: Bool
        let purged: Bool
        let data: [UInt8]

        var stamp: Stamp { Stamp(hlc: hlc, revision: id) }
    }

    static func concatenated(_ hashes: [Hash256]) -> [UInt8] { hashes.flatMap(\.bytes) }

    static func hashes(_ bytes: [UInt8]) -> [Hash256] {
        stride(from: 0, to: bytes.count - bytes.count % 32, by: 32).map { Hash256(bytes: bytes[$0..<$0 + 32])! }
    }

    private static let revisionColumns = "id, record, kind, hlc, author, parents, body, tombstone, purged, data"

    private static func revisionRow(_ row: Row) -> RevisionRow {
        RevisionRow(
            id: Hash256(bytes: row.blob(0))!, record: RecordID(bytes: row.blob(1))!,
            kind: RecordKind(rawValue: UInt8(row.int(2))) ?? .note, hlc: HLC(rawValue: UInt64(bitPattern: row.int(3))),
            author: ReplicaID(RecordID(bytes: row.blob(4))!), parents: hashes(row.blob(5)), body: hashes(row.blob(6)),
            tombstone: row.int(7) != 0, purged: row.int(8) != 0, data: row.blob(9))
    }

    func revisionRow(_ id: RevisionID) throws -> RevisionRow? {
        try database.first("SELECT \(Self.revisionColumns) FROM revisions WHERE id = ?1", [.blob(id.bytes)], Self.revisionRow)
    }

    func revisionRows(record: RecordID) throws -> [RevisionRow] {
        try database.rows("SELECT \(Self.revisionColumns) FROM revisions WHERE record = ?1", [.blob(record.bytes)], Self.revisionRow)
    }

    func hasRevision(_ id: RevisionID) throws -> Bool {
        try database.first("SELECT 1 FROM revisions WHERE id = ?1", [.blob(id.bytes)]) { _ in true } ?? false
    }

    /// The record's current head revisions (several after concurrent changes).
    public func heads(of record: RecordID) throws -> [RevisionID] {
        try database.rows("SELECT revision FROM heads WHERE record = ?1", [.blob(record.bytes)]) { Hash256(bytes: $0.blob(0))! }
    }

    func recordExists(_ record: RecordID) throws -> Bool {
        try database.first("SELECT 1 FROM heads WHERE record = ?1 LIMIT 1", [.blob(record.bytes)]) { _ in true } ?? false
    }

    /// Stores a revision and takes a reference on each block its body uses. `newBlocks` holds
    /// encoded blocks the store may not have yet; every other body block must already be stored.
    /// Returns the body hashes that are neither supplied nor stored (then nothing is written).
    func insertRevision(
        id: RevisionID, header: RevisionHeader, data: [UInt8], newBlocks: [BlockHash: [UInt8]]
    ) throws -> [BlockHash] {
        let distinct = Array(Set(header.body))
        var missing: [BlockHash] = []
        for hash in distinct where newBlocks[hash] == nil {
            if try database.first("SELECT 1 FROM blocks WHERE hash = ?1", [.blob(hash.bytes)], { _ in true }) == nil {
                missing.append(hash)
            }
        }
        guard missing.isEmpty else { return missing.sorted() }
        for hash in distinct {
            if let encoded = newBlocks[hash] {
                try database.run(
                    "INSERT INTO blocks (hash, refs, data) VALUES (?1, 1, ?2) ON CONFLICT(hash) DO UPDATE SET refs = refs + 1",
                    [.blob(hash.bytes), .blob(encoded)])
            } else {
                try database.run("UPDATE blocks SET refs = refs + 1 WHERE hash = ?1", [.blob(hash.bytes)])
            }
        }
        try database.run(
            "INSERT INTO revisions (\(Self.revisionColumns)) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, 0, ?9)",
            [
                .blob(id.bytes), .blob(header.record.bytes), .integer(Int64(header.kind.rawValue)),
                .integer(Int64(bitPattern: header.hlc.rawValue)), .blob(header.author.raw.bytes),
                .blob(Self.concatenated(header.parents)), .blob(Self.concatenated(header.body)),
                .integer(header.isTombstone ? 1 : 0), .blob(data),
            ])
        return []
    }

    /// Stores the DAG position of a revision whose content was purged on the peer that sent it
    /// (its body list too: block hashes say nothing of the text, and later edits of a concurrent
    /// branch may be sent as edits to it).
    func insertPurgedRevision(id: RevisionID, header: RevisionHeader) throws {
        try database.run(
            "INSERT INTO revisions (\(Self.revisionColumns)) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, 1, x'')",
            [
                .blob(id.bytes), .blob(header.record.bytes), .integer(Int64(header.kind.rawValue)),
                .integer(Int64(bitPattern: header.hlc.rawValue)), .blob(header.author.raw.bytes),
                .blob(Self.concatenated(header.parents)), .blob(Self.concatenated(header.body)), .integer(header.isTombstone ? 1 : 0),
            ])
    }

    /// Drops one reference from each block and deletes the blocks nobody uses any more.
    func releaseBlocks(_ body: [BlockHash]) throws {
        for hash in Set(body) {
            try database.run("UPDATE blocks SET refs = refs - 1 WHERE hash = ?1", [.blob(hash.bytes)])
            try database.run("DELETE FROM blocks WHERE hash = ?1 AND refs <= 0", [.blob(hash.bytes)])
        }
    }

    /// Adds log entry `dot` for `revision` and advances the vector. Entries of one replica
    /// arrive in order, so the vector stays "highest contiguous".
    /// The vector's rows are written once per transaction (`flushVector`), not once per entry.
    func appendLog(_ dot: Dot, revision: RevisionID) throws {
        precondition(dot.seq == vector[dot.replica] + 1, "log entry \(dot) would leave a gap after \(vector[dot.replica])")
        try database.run(
            "INSERT INTO log (replica, seq, revision) VALUES (?1, ?2, ?3)",
            [.blob(dot.replica.raw.bytes), .integer(Int64(dot.seq)), .blob(revision.bytes)])
        vector[dot.replica] = dot.seq
        changedVectorEntries.insert(dot.replica)
    }

    /// Writes the vector entries this transaction advanced.
    func flushVector() throws {
        for replica in changedVectorEntries.sorted() {
            try database.run(
                "INSERT INTO vector (replica, seq) VALUES (?1, ?2) ON CONFLICT(replica) DO UPDATE SET seq = excluded.seq",
                [.blob(replica.raw.bytes), .integer(Int64(vector[replica]))])
        }
        changedVectorEntries.removeAll()
    }

    func nextOwnDot() -> Dot { Dot(replica: replicaID, seq: vector[replicaID] + 1) }

    /// A new revision of `record` replaces its parents among the record's heads.
    func advanceHeads(record: RecordID, kind: RecordKind, parents: [RevisionID], to revision: RevisionID) throws {
        for parent in parents {
            try database.run("DELETE FROM heads WHERE record = ?1 AND revision = ?2", [.blob(record.bytes), .blob(parent.bytes)])
        }
        try database.run(
            "INSERT OR IGNORE INTO heads (record, revision, kind) VALUES (?1, ?2, ?3)",
            [.blob(record.bytes), .blob(revision.bytes), .integer(Int64(kind.rawValue))])
    }

    /// The log entry naming `revision` authored here, if any.
    func ownDot(of revision: RevisionID) throws -> Dot? {
        try database.first(
            "SELECT seq FROM log WHERE revision = ?1 AND replica = ?2", [.blob(revision.bytes), .blob(replicaID.raw.bytes)]
        ) { Dot(replica: replicaID, seq: UInt64($0.int(0))) }
    }

    /// Loads one block by hash; nil when it is not stored.
    func block(_ hash: BlockHash) throws -> Block? {
        guard let data = try database.first("SELECT data FROM blocks WHERE hash = ?1", [.blob(hash.bytes)], { $0.blob(0) }) else {
            return nil
        }
        return try Block(encoded: data)
    }

    func blocks(_ hashes: [BlockHash]) throws -> [Block] {
        try hashes.map { hash in
            guard let block = try block(hash) else {
                throw ReplicaError.invalid("block \(hash.short) is missing from the store; run `notesctl status` and resync")
            }
            return block
        }
    }
}
