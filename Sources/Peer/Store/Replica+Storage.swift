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
        /// `data` decoded already, when it was (a received entry's checks), so materialising
        /// it does not decode it again.
        var decoded: RevisionCodec.StoredContent? = nil

        var stamp: Stamp { Stamp(hlc: hlc, revision: id) }
    }

    static func concatenated(_ hashes: [Hash256]) -> [UInt8] {
        [UInt8](unsafeUninitializedCapacity: hashes.count * 32) { buffer, count in
            let bytes = UnsafeMutableRawBufferPointer(buffer)
            for (index, hash) in hashes.enumerated() { hash.store(into: bytes, at: index * 32) }
            count = hashes.count * 32
        }
    }

    static func hashes(_ bytes: [UInt8]) -> [Hash256] {
        stride(from: 0, to: bytes.count - bytes.count % 32, by: 32).map { Hash256(bytes: bytes[$0..<$0 + 32])! }
    }

    static let storedColumns = "id, record, kind, hlc, author, parents, body, tombstone, purged, data, depth"
    // The statements naming those columns, built once: interpolating them on every call built
    // a new string per revision read or written (and the statement cache hashed it again).
    /// Revisions are found by record and id, never by id alone (schema migration 14).
    private static let selectByKey = "SELECT \(storedColumns) FROM revisions WHERE record = ?1 AND id = ?2"
    private static let selectByRecord = "SELECT \(storedColumns) FROM revisions WHERE record = ?1"
    /// Only for `deltaBase`'s damaged case: a scan of the table.
    private static let selectByIDAlone = "SELECT \(storedColumns) FROM revisions WHERE id = ?1"
    private static let insertStored = "INSERT INTO revisions (\(storedColumns)) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)"

    /// A `revisions` row as it is on disk (`RevisionStorage` says what `body`, `data` and
    /// `depth` hold).
    struct StoredRevisionRow {
        let id: RevisionID
        let record: RecordID
        let kind: RecordKind
        let hlc: HLC
        let author: ReplicaID
        let parents: [RevisionID]
        let bodyColumn: [UInt8]
        let tombstone: Bool
        let purged: Bool
        let dataColumn: [UInt8]
        /// nil: written before migration 8, whole.
        let depth: Int?
    }

    /// What a row's parts are once its delta chain is read: the body always, the fields
    /// unless purged (or, for a row written before migration 8, in a form not taken apart).
    struct ResolvedParts {
        let body: [BlockHash]
        let fields: [UInt8]?
    }

    private static func storedRow(_ row: Row) -> StoredRevisionRow {
        StoredRevisionRow(
            id: Hash256(bytes: row.blob(0))!, record: row.recordID(1)!,
            kind: RecordKind(rawValue: UInt8(row.int(2))) ?? .note, hlc: HLC(rawValue: UInt64(bitPattern: row.int(3))),
            author: ReplicaID(row.recordID(4)!), parents: hashes(row.blob(5)), bodyColumn: row.blob(6),
            tombstone: row.int(7) != 0, purged: row.int(8) != 0, dataColumn: row.blob(9), depth: row.isNull(10) ? nil : Int(row.int(10)))
    }

    static func storedRow(_ id: RevisionID, of record: RecordID, in database: Database) throws -> StoredRevisionRow? {
        try database.first(selectByKey, [.record(record), .hash(id)], storedRow)
    }

    /// The row a delta is a change of: its first parent, a revision of its record; except in
    /// a library that, before schema 14, took in a peer's revision naming another record's
    /// revision as its parent (none is applied since) and stored it as a change of that one.
    /// Such a parent is found by its id alone, a scan of the table that only this damage costs.
    static func deltaBase(_ parent: RevisionID, of record: RecordID, in database: Database) throws -> StoredRevisionRow? {
        if let row = try storedRow(parent, of: record, in: database) { return row }
        return try database.first(selectByIDAlone, [.hash(parent)], storedRow)
    }

    /// One row's parts, given its first parent's (required when the row is a delta).
    static func resolve(_ row: StoredRevisionRow, firstParent: ResolvedParts?) throws -> ResolvedParts {
        guard let depth = row.depth else {
            let body = hashes(row.bodyColumn)
            guard !row.purged, !row.dataColumn.isEmpty else { return ResolvedParts(body: body, fields: nil) }
            let header = RevisionHeader(
                kind: row.kind, record: row.record, parents: row.parents, author: row.author, hlc: row.hlc,
                isTombstone: row.tombstone, body: body)
            return ResolvedParts(body: body, fields: RevisionStorage.parts(of: row.dataColumn, header)?.fields)
        }
        guard depth > 0 else {
            return ResolvedParts(body: hashes(row.bodyColumn), fields: row.purged ? nil : row.dataColumn)
        }
        guard let parent = firstParent else {
            throw ReplicaError.invalid("revision \(row.id.short) is stored as a change of a parent that is not stored; \(ReplicaError.damagedLibraryAdvice)")
        }
        let body = try BodyDelta.apply(RevisionStorage.decodeEdits(row.bodyColumn), to: parent.body)
        guard !row.purged else { return ResolvedParts(body: body, fields: nil) }
        return ResolvedParts(body: body, fields: try RevisionStorage.fields(stored: row.dataColumn, parent: parent.fields))
    }

    /// A stored revision's parts, reading its delta chain (at most `maximumDepth` rows more;
    /// a revision's parents are revisions of its record).
    static func resolvedRevision(
        _ id: RevisionID, of record: RecordID, in database: Database
    ) throws -> (row: StoredRevisionRow, parts: ResolvedParts)? {
        guard let first = try storedRow(id, of: record, in: database) else { return nil }
        return try resolved(first, in: database)
    }

    /// A stored row's parts, reading its delta chain.
    static func resolved(_ first: StoredRevisionRow, in database: Database) throws -> (row: StoredRevisionRow, parts: ResolvedParts) {
        var chain = [first]
        while let depth = chain.last!.depth, depth > 0 {
            guard chain.count <= RevisionStorage.maximumDepth, let parent = chain.last!.parents.first,
                  let row = try deltaBase(parent, of: chain.last!.record, in: database)
            else {
                throw ReplicaError.invalid("revision \(first.id.short) is stored as changes of revisions that are not stored; \(ReplicaError.damagedLibraryAdvice)")
            }
            chain.append(row)
        }
        var parts: ResolvedParts?
        for row in chain.reversed() { parts = try resolve(row, firstParent: parts) }
        return (first, parts!)
    }

    /// The revision as its readers see it: the canonical encoding (empty when purged) and the body list.
    static func revisionRow(_ row: StoredRevisionRow, _ parts: ResolvedParts) throws -> RevisionRow {
        var data: [UInt8] = []
        if row.depth == nil {
            data = row.dataColumn
        } else if !row.purged, let fields = parts.fields {
            let head = RevisionStorage.header(kind: row.kind, record: row.record, parents: row.parents, author: row.author, hlc: row.hlc)
            data = try RevisionStorage.canonicalEncoding(head: head, RevisionStorage.Parts(fields: fields, body: parts.body))
        }
        return RevisionRow(
            id: row.id, record: row.record, kind: row.kind, hlc: row.hlc, author: row.author, parents: row.parents,
            body: parts.body, tombstone: row.tombstone, purged: row.purged, data: data)
    }

    func revisionRow(_ id: RevisionID, of record: RecordID) throws -> RevisionRow? {
        guard let (row, parts) = try Self.resolvedRevision(id, of: record, in: database) else { return nil }
        return try Self.revisionRow(row, parts)
    }

    /// A stored revision's body list (kept when its content is purged).
    func storedBody(_ id: RevisionID, of record: RecordID) throws -> [BlockHash]? {
        try Self.resolvedRevision(id, of: record, in: database)?.parts.body
    }

    /// Every revision of a record, each delta chain read once (first parents are revisions of
    /// the same record).
    func revisionRows(record: RecordID) throws -> [RevisionRow] {
        try Self.revisionRows(record: record, in: database)
    }

    static func revisionRows(record: RecordID, in database: Database) throws -> [RevisionRow] {
        let stored = try database.rows(Self.selectByRecord, [.record(record)], Self.storedRow)
        let byID = Dictionary(stored.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
        var resolved: [RevisionID: ResolvedParts] = [:]
        func parts(_ row: StoredRevisionRow) throws -> ResolvedParts {
            if let known = resolved[row.id] { return known }
            var chain = [row]
            var base: ResolvedParts?
            while let depth = chain.last!.depth, depth > 0, let parent = chain.last!.parents.first {
                if let known = resolved[parent] {
                    base = known
                    break
                }
                guard chain.count <= RevisionStorage.maximumDepth else {
                    throw ReplicaError.invalid("revision \(row.id.short) is stored as a chain of changes longer than \(RevisionStorage.maximumDepth); \(ReplicaError.damagedLibraryAdvice)")
                }
                guard let next = byID[parent] else {
                    base = try deltaBase(parent, of: record, in: database).map { try Self.resolved($0, in: database).parts }
                    break
                }
                chain.append(next)
            }
            var parts = base
            for link in chain.reversed() {
                parts = try Self.resolve(link, firstParent: parts)
                resolved[link.id] = parts
            }
            return parts!
        }
        return try stored.map { try Self.revisionRow($0, try parts($0)) }
    }

    func hasRevision(_ id: RevisionID, of record: RecordID) throws -> Bool {
        try database.first("SELECT 1 FROM revisions WHERE record = ?1 AND id = ?2", [.record(record), .hash(id)]) { _ in true } ?? false
    }

    /// The records among `records` (sorted, each once) the store holds anything of: a revision
    /// or a block. One with no revision has no head and no materialised row either (a restore
    /// deletes the rows of the records it leaves without heads), and one with no block too gives
    /// a batch rows it cannot collide with: `apply` keeps what a batch gives such a record in
    /// memory (`RecordNewInBatch`) and stores its blocks without looking for them first.
    /// Asked of ranges of ids, halving those that hold something down to `heldProbeRun`
    /// records, then record by record: a catch-up's batch of new notes, whose ids (UUIDv7) come
    /// after every note held, costs one query instead of one per note (docs/decisions.md, "A
    /// new record's blocks inserted in order, without a statement journal"), and a batch of
    /// held records about one per record, as before.
    func heldRecords(among records: ArraySlice<RecordID>) throws -> [RecordID] {
        guard let first = records.first, let last = records.last, try holdsAnything(from: first, through: last) else { return [] }
        // One record (a live change) is answered already.
        if records.count == 1 { return [first] }
        if records.count <= Self.heldProbeRun {
            return try records.filter { try holdsAnything(from: $0, through: $0) }
        }
        let middle = records.startIndex + records.count / 2
        return try heldRecords(among: records[..<middle]) + heldRecords(among: records[middle...])
    }

    /// Ranges of at most this many records that hold something are asked record by record.
    static let heldProbeRun = 16

    /// Whether the store holds a revision or a block of a record from `first` through `last`.
    func holdsAnything(from first: RecordID, through last: RecordID) throws -> Bool {
        try database.first(Self.holdsAnythingInRange, [.record(first), .record(last)]) { $0.int(0) != 0 } ?? false
    }

    static let holdsAnythingInRange = """
        SELECT EXISTS (SELECT 1 FROM revisions WHERE record BETWEEN ?1 AND ?2)
            OR EXISTS (SELECT 1 FROM block_packs WHERE record BETWEEN ?1 AND ?2)
        """

    /// The record's current head revisions (several after concurrent changes).
    public func heads(of record: RecordID) throws -> [RevisionID] {
        try database.rows("SELECT revision FROM heads WHERE record = ?1", [.record(record)]) { Hash256(bytes: $0.blob(0))! }
    }

    func recordExists(_ record: RecordID) throws -> Bool {
        try database.first("SELECT 1 FROM heads WHERE record = ?1 LIMIT 1", [.record(record)]) { _ in true } ?? false
    }

    /// How a new row holds `header`'s revision (`RevisionStorage`): a note whose first parent
    /// is fewer than `maximumDepth` deltas from a whole body, and whose body edits are smaller
    /// than its body list, is stored as a change of that parent; anything else whole.
    /// `canonical` is nil for a purged revision (no fields).
    func storedForm(_ header: RevisionHeader, canonical: [UInt8]?) throws -> (depth: Int?, body: [UInt8], data: [UInt8]) {
        var fields: [UInt8]?
        if let canonical {
            guard let parts = RevisionStorage.parts(of: canonical, header) else { return (nil, Self.concatenated(header.body), canonical) }
            fields = parts.fields
        }
        if header.kind == .note, !header.isTombstone, let first = header.parents.first,
           let (parentRow, parent) = try Self.resolvedRevision(first, of: header.record, in: database),
           (parentRow.depth ?? 0) < RevisionStorage.maximumDepth
        {
            let edits = RevisionStorage.encode(BodyDelta.edits(from: parent.body, to: header.body))
            if edits.count < header.body.count * 32 {
                let data = fields.map { RevisionStorage.storedFields($0, parent: parent.fields) } ?? []
                return ((parentRow.depth ?? 0) + 1, edits, data)
            }
        }
        return (0, Self.concatenated(header.body), fields ?? [])
    }

    /// Before `id` is purged or deleted: the rows stored as changes of it are stored whole.
    static func detachDeltaChildren(of id: RevisionID, record: RecordID, in database: Database) throws {
        let children = try database.rows(
            "SELECT id FROM revisions WHERE record = ?1 AND depth > 0 AND substr(parents, 1, 32) = ?2",
            [.record(record), .hash(id)]) { Hash256(bytes: $0.blob(0))! }
        for child in children {
            guard let (row, parts) = try resolvedRevision(child, of: record, in: database) else { continue }
            try database.run(
                "UPDATE revisions SET depth = 0, body = ?3, data = ?4 WHERE record = ?1 AND id = ?2",
                [.record(record), .hash(child), .blob(concatenated(parts.body)), .blob(row.purged ? [] : parts.fields ?? [])])
        }
    }

    /// Stores a revision and takes a reference on each pack holding a block its body uses
    /// (blocks are kept per record, a revision's worth to a pack: `Replica+Blocks`).
    /// `newBlocks` holds encoded blocks the store may not have yet; every other body block must
    /// already be stored under the record, or have come ahead in a `blocks` frame
    /// (`storeBlocks`). The blocks it stores go into one new pack.
    /// `body`: the header's body, sorted (`SortedBlockHashes`). `places`: where the record's
    /// stored blocks are, when the caller knows them (`apply` keeps them for its batch); nil
    /// reads them from the store.
    /// Returns the body hashes that are none of these, in order (then nothing is written), or
    /// the pack it stored.
    func insertRevision(
        id: RevisionID, header: RevisionHeader, data: [UInt8], body: SortedBlockHashes, newBlocks: SuppliedBlocks,
        places knownPlaces: BlockPlaces? = nil
    ) throws -> InsertedBlocks {
        let record = header.record
        let places = try knownPlaces ?? blockPlaces(of: record)
        var used: [Int64] = []
        var brought: [(hash: BlockHash, encoded: EntryPayload.EncodedBlock)] = []
        var sentAhead: [BlockHash] = []
        var missing: [BlockHash] = []
        for hash in body.hashes {
            if let pack = places.pack(of: hash) {
                if !used.contains(pack) { used.append(pack) }
            } else if let encoded = newBlocks[hash] {
                brought.append((hash, encoded))
            } else if let encoded = sentBlocksAwaitingUse[hash] {
                brought.append((hash, encoded[...]))
                sentAhead.append(hash)
            } else {
                missing.append(hash)
            }
        }
        guard missing.isEmpty else { return InsertedBlocks(missing: missing) }
        // Taken up: from now on they are the record's (were this transaction rolled back, a
        // peer would be asked for them again).
        for hash in sentAhead {
            sentBlocksAwaitingBytes -= sentBlocksAwaitingUse.removeValue(forKey: hash)?.count ?? 0
        }
        try takeReferences(on: used)
        var inserted = InsertedBlocks()
        if !brought.isEmpty {
            inserted.pack = (try storePack(brought, of: record, revision: id), brought.map(\.hash))
        }
        try insertRow(id: id, header: header, purged: false, form: try storedForm(header, canonical: data))
        return inserted
    }

    /// What `insertRevision` did with a revision's blocks.
    struct InsertedBlocks {
        /// The body's blocks it could not find (then it wrote nothing).
        var missing: [BlockHash] = []
        /// The pack it stored the revision's new blocks in, and their hashes in order.
        var pack: (id: Int64, hashes: [BlockHash])?
    }

    /// Stores the DAG position of a revision whose content was purged on the peer that sent it
    /// (its body list too: block hashes say nothing of the text, and later edits of a concurrent
    /// branch may be sent as edits to it).
    func insertPurgedRevision(id: RevisionID, header: RevisionHeader) throws {
        try insertRow(id: id, header: header, purged: true, form: try storedForm(header, canonical: nil))
    }

    private func insertRow(id: RevisionID, header: RevisionHeader, purged: Bool, form: (depth: Int?, body: [UInt8], data: [UInt8])) throws {
        let values: [SQLValue] = [
            .hash(id), .record(header.record), .integer(Int64(header.kind.rawValue)),
            .integer(Int64(bitPattern: header.hlc.rawValue)), .record(header.author.raw),
            .blob(Self.concatenated(header.parents)), .blob(form.body), .integer(header.isTombstone ? 1 : 0),
            .integer(purged ? 1 : 0), .blob(form.data), form.depth.map { .integer(Int64($0)) } ?? .null,
        ]
        if try gather(values, of: header.record, into: .revisions) { return }
        try database.run(Self.insertStored, values)
    }

    /// Adds log entry `dot` for `revision` of `record` and advances the vector. Entries of one
    /// replica arrive in order, so the vector stays "highest contiguous".
    /// The vector's rows are written once per transaction (`flushVector`), not once per entry.
    func appendLog(_ dot: Dot, revision: RevisionID, of record: RecordID) throws {
        precondition(dot.seq == vector[dot.replica] + 1, "log entry \(dot) would leave a gap after \(vector[dot.replica])")
        let values: [SQLValue] = [.record(dot.replica.raw), .integer(Int64(dot.seq)), .record(record), .hash(revision)]
        if try !gather(values, of: record, into: .log) {
            try database.run("INSERT INTO log (replica, seq, record, revision) VALUES (?1, ?2, ?3, ?4)", values)
        }
        vector[dot.replica] = dot.seq
        changedVectorEntries.insert(dot.replica)
    }

    /// Writes the vector entries this transaction advanced.
    func flushVector() throws {
        for replica in changedVectorEntries.sorted() {
            try database.run(
                "INSERT INTO vector (replica, seq) VALUES (?1, ?2) ON CONFLICT(replica) DO UPDATE SET seq = excluded.seq",
                [.record(replica.raw), .integer(Int64(vector[replica]))])
        }
        changedVectorEntries.removeAll()
    }

    func nextOwnDot() -> Dot { Dot(replica: replicaID, seq: vector[replicaID] + 1) }

    /// A new revision of `record` replaces its parents among the record's heads.
    func advanceHeads(record: RecordID, kind: RecordKind, parents: [RevisionID], to revision: RevisionID) throws {
        for parent in parents {
            try database.run("DELETE FROM heads WHERE record = ?1 AND revision = ?2", [.record(record), .hash(parent)])
        }
        let values: [SQLValue] = [.record(record), .hash(revision), .integer(Int64(kind.rawValue))]
        if try gather(values, of: record, into: .heads) { return }
        try database.run("INSERT OR IGNORE INTO heads (record, revision, kind) VALUES (?1, ?2, ?3)", values)
    }

    /// The own log entry above `seq` naming `revision`, if any: what coalescing may replace.
    /// The log has no index by revision (schema migration 8), so this reads only the own
    /// entries above `seq`, newest first, and at most the last 1,000 of them.
    func ownDot(of revision: RevisionID, above seq: UInt64) throws -> Dot? {
        let floor = max(seq, vector[replicaID] > 1_000 ? vector[replicaID] - 1_000 : 0)
        return try database.first(
            "SELECT seq FROM log WHERE replica = ?2 AND seq > ?3 AND revision = ?1 ORDER BY seq DESC",
            [.hash(revision), .record(replicaID.raw), .integer(Int64(floor))]
        ) { Dot(replica: replicaID, seq: UInt64($0.int(0))) }
    }

    /// Schema migration 10: fills the blocks table keyed by record from the one keyed by hash
    /// (`blocks_by_hash`), counting each block's uses among its record's revisions as
    /// `insertRevision` does. A block the materialised note shows that no revision uses (the
    /// merge composed it) is kept with no reference, as `writeNote` keeps it.
    static func keyBlocksByRecord(in database: Database) throws {
        let records = try database.rows("SELECT DISTINCT record FROM revisions ORDER BY record") { $0.recordID(0)! }
        for record in records {
            var uses: [BlockHash: Int64] = [:]
            for row in try revisionRows(record: record, in: database) where !row.purged {
                for hash in Set(row.body) { uses[hash, default: 0] += 1 }
            }
            let shown = try database.first("SELECT body FROM notes WHERE id = ?1", [.record(record)]) { hashes($0.blob(0)) } ?? []
            for hash in shown where uses[hash] == nil { uses[hash] = 0 }
            for (hash, refs) in uses.sorted(by: { $0.key < $1.key }) {
                try database.run(
                    "INSERT INTO blocks (record, hash, refs, data) SELECT ?1, hash, ?3, data FROM blocks_by_hash WHERE hash = ?2",
                    [.record(record), .hash(hash), .integer(refs)])
            }
        }
        try database.execute("DROP TABLE blocks_by_hash")
    }
}

extension Replica.RevisionRow {
    /// A whole revision stored just now, as its row reads back (the canonical encoding `data`).
    init(_ id: RevisionID, header: RevisionHeader, data: [UInt8], decoded: RevisionCodec.StoredContent? = nil) {
        self.init(
            id: id, record: header.record, kind: header.kind, hlc: header.hlc, author: header.author, parents: header.parents,
            body: header.body, tombstone: header.isTombstone, purged: false, data: data, decoded: decoded)
    }
}
