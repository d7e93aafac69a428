import Merge

/// The block store: each record's blocks, stored a revision's worth to a row (`BlockPack`,
/// schema migration 16). A pack's `refs` counts the revisions (not purged) whose body uses
/// at least one of its blocks; a pack no revision uses is deleted. A pack whose revision is
/// gone while others still use some of its blocks is split into packs of one block, for
/// those blocks only (`settlePacks`), so purging and coalescing still free every block
/// nothing uses.
/// docs/decisions.md, "Blocks stored a revision's worth to a row".
extension Replica {
    // MARK: - Where a record's blocks are

    /// The packs holding each of a record's stored blocks, read from their directories alone.
    func blockPlaces(of record: RecordID) throws -> BlockPlaces {
        try Self.blockPlaces(of: record, in: database)
    }

    static func blockPlaces(of record: RecordID, in database: Database) throws -> BlockPlaces {
        var places: [(hash: BlockHash, pack: Int64)] = []
        try database.statement(placesRead).forEach([.record(record)]) { row in
            let pack = row.int(0)
            for hash in try directory(row, 1, of: record).hashes { places.append((hash, pack)) }
        }
        return BlockPlaces(places)
    }

    static let placesRead = "SELECT rowid, directory FROM block_packs WHERE record = ?1"
    /// `storedBlocks`' pass: the same rows (in the index's order, rowid within a record, so
    /// nothing is sorted), under its own text so the tests can tell the two apart.
    static let blockPass = "SELECT rowid, directory FROM block_packs WHERE record = ?1 ORDER BY rowid"

    /// A pack's directory, read in place from `column`; a damaged one is an error naming the record.
    private static func directory(_ row: Row, _ column: Int32, of record: RecordID) throws -> BlockPack.Directory {
        guard let directory = row.withBlob(column, BlockPack.Directory.init) else {
            throw ReplicaError.invalid("a block pack of \(record) has an unreadable directory; \(ReplicaError.damagedLibraryAdvice)")
        }
        return directory
    }

    // MARK: - Storing and freeing

    /// Stores `blocks` (in hash order) as one new pack of `record`: those `revision` brought
    /// (nil: blocks the merge composed for the note's shown state, which no revision uses
    /// yet). Returns the pack's rowid.
    @discardableResult
    func storePack(_ blocks: [(hash: BlockHash, encoded: EntryPayload.EncodedBlock)], of record: RecordID, revision: RevisionID?) throws -> Int64 {
        let (directory, data) = BlockPack.encode(blocks)
        try database.run(
            "INSERT INTO block_packs (record, revision, refs, directory, data) VALUES (?1, ?2, ?3, ?4, ?5)",
            [.record(record), revision.map { .hash($0) } ?? .null, .integer(revision == nil ? 0 : 1), .blob(directory), .blob(data)])
        return database.lastInsertedRowID
    }

    /// One more revision uses a block of each of `packs`.
    func takeReferences(on packs: [Int64]) throws {
        for pack in packs {
            try database.run("UPDATE block_packs SET refs = refs + 1 WHERE rowid = ?1", [.integer(pack)])
        }
    }

    /// `revision` no longer uses its body's blocks (it is purged or deleted): drops its
    /// reference on each pack holding one and deletes the packs nothing uses now. Returns the
    /// packs of several blocks it stored that others still use, for `settlePacks` once the
    /// caller has purged or deleted it (and whatever else goes with it).
    static func releaseBlocks(_ body: [BlockHash], of revision: RevisionID, record: RecordID, in database: Database) throws -> [Int64] {
        let places = try blockPlaces(of: record, in: database)
        for pack in Set(body.compactMap { places.pack(of: $0) }).sorted() {
            try database.run("UPDATE block_packs SET refs = refs - 1 WHERE rowid = ?1", [.integer(pack)])
            try database.run("DELETE FROM block_packs WHERE rowid = ?1 AND refs <= 0", [.integer(pack)])
        }
        // A pack of one block that something still uses has nothing to free.
        return try database.rows(
            "SELECT rowid FROM block_packs WHERE record = ?1 AND revision = ?2 AND length(directory) > ?3",
            [.record(record), .hash(revision), .integer(Int64(BlockPack.hashSize))]) { $0.int(0) }
    }

    func releaseBlocks(_ body: [BlockHash], of revision: RevisionID, record: RecordID) throws -> [Int64] {
        try Self.releaseBlocks(body, of: revision, record: record, in: database)
    }

    /// Splits `packs` of `record`, whose revision is gone, into packs of one block each, for
    /// the blocks a revision still uses (counting those revisions), and drops the others.
    /// Another revision's use kept each pack, and its other blocks would have stayed with it.
    /// So a pack of several blocks always has its revision stored, which uses every block of
    /// it, and a pack of one block goes when nothing uses it: no block a revision brought
    /// outlives its last use (one the merge composed stays until the note is deleted).
    /// The shown state's blocks need no keeping here: a block the merge composed is stored
    /// again when the note is next materialised (`writeNote`).
    /// `newest`: the body of a revision stored since the packs' (coalescing's replacement,
    /// `commitLocal`): when a pack's one remaining reference is that revision's, it is the only
    /// user of the pack's blocks, and the record's other revisions need not be read.
    static func settlePacks(_ packs: [Int64], of record: RecordID, newest: [BlockHash]? = nil, in database: Database) throws {
        guard !packs.isEmpty else { return }
        let newestUses = Set(newest ?? [])
        var everyUse: [BlockHash: Int64]?
        func users(of pack: BlockPack.Directory, refs: Int64) throws -> [BlockHash: Int64] {
            if refs == 1, pack.hashes.contains(where: newestUses.contains) {
                return Dictionary(uniqueKeysWithValues: pack.hashes.filter(newestUses.contains).map { ($0, 1) })
            }
            if everyUse == nil {
                var uses: [BlockHash: Int64] = [:]
                for row in try revisionRows(record: record, in: database) where !row.purged {
                    for hash in Set(row.body) { uses[hash, default: 0] += 1 }
                }
                everyUse = uses
            }
            return everyUse!
        }
        for pack in packs {
            var kept: [(hash: BlockHash, encoded: [UInt8], users: Int64)] = []
            var stillTheRevisions = false
            // A pack of several blocks that is still the revision's: a pack the release deleted
            // may have given its rowid to one this split inserted.
            let select = "SELECT directory, data, refs FROM block_packs WHERE rowid = ?1 AND record = ?2 AND revision IS NOT NULL"
            try database.statement(select).forEach([.integer(pack), .record(record)]) { row in
                stillTheRevisions = true
                let directory = try directory(row, 0, of: record)
                let users = try users(of: directory, refs: row.int(2))
                try row.withBlob(1) { data in
                    for (index, hash) in directory.hashes.enumerated() {
                        guard let count = users[hash] else { continue }
                        guard let block = directory.block(index, in: data) else { throw damagedPack(of: record) }
                        kept.append((hash, block, count))
                    }
                }
            }
            guard stillTheRevisions else { continue }
            try database.run("DELETE FROM block_packs WHERE rowid = ?1", [.integer(pack)])
            for block in kept {
                let (directory, data) = BlockPack.encode([(block.hash, block.encoded[...])])
                try database.run(
                    "INSERT INTO block_packs (record, revision, refs, directory, data) VALUES (?1, NULL, ?2, ?3, ?4)",
                    [.record(record), .integer(block.users), .blob(directory), .blob(data)])
            }
        }
    }

    func settlePacks(_ packs: [Int64], of record: RecordID, newest: [BlockHash]? = nil) throws {
        try Self.settlePacks(packs, of: record, newest: newest, in: database)
    }

    private static func damagedPack(of record: RecordID) -> ReplicaError {
        .invalid("a block pack of \(record) holds less data than its directory names; \(ReplicaError.damagedLibraryAdvice)")
    }

    /// Stores a block the merge composed for `record`'s shown state, unless the record holds
    /// it already (`places`, read on first use). It belongs to no revision: a pack of its own
    /// with no reference, deleted when the note is (`writeNoteRow`).
    func storeComposedBlock(_ encoded: [UInt8], hash: BlockHash, of record: RecordID, places: inout BlockPlaces?) throws {
        if places == nil { places = try blockPlaces(of: record) }
        guard places!.pack(of: hash) == nil else { return }
        let pack = try storePack([(hash, encoded[...])], of: record, revision: nil)
        places!.add([hash], in: pack)
    }

    // MARK: - Reading

    /// The encoded blocks of `record` for `hashes`, in their order; nil where one is not stored.
    /// One pass over the record's pack directories, which stops once every block is placed,
    /// then the data of the packs holding one, read by rowid: the pass reads no data, which
    /// SQLite would load for every row it returns (a pack of a long note spans pages).
    func storedBlocks(_ hashes: [BlockHash], of record: RecordID) throws -> [[UInt8]?] {
        guard !hashes.isEmpty else { return [] }
        let wanted = SortedBlockHashes(hashes)
        var found = [[UInt8]?](repeating: nil, count: wanted.hashes.count)
        var placed = Array(repeating: false, count: wanted.hashes.count)
        var unplaced = placed.count
        var holding: [(pack: Int64, directory: BlockPack.Directory, taken: [(index: Int, slot: Int)])] = []
        try database.statement(Self.blockPass).visit([.record(record)]) { row in
            let directory = try Self.directory(row, 1, of: record)
            var taken: [(index: Int, slot: Int)] = []
            for (index, hash) in directory.hashes.enumerated() {
                if let slot = wanted.index(of: hash), !placed[slot] {
                    placed[slot] = true
                    taken.append((index, slot))
                }
            }
            guard !taken.isEmpty else { return true }
            holding.append((row.int(0), directory, taken))
            unplaced -= taken.count
            return unplaced > 0
        }
        for (pack, directory, taken) in holding {
            try database.statement("SELECT data FROM block_packs WHERE rowid = ?1").forEach([.integer(pack)]) { row in
                try row.withBlob(0) { data in
                    for (index, slot) in taken {
                        guard let block = directory.block(index, in: data) else { throw Self.damagedPack(of: record) }
                        found[slot] = block
                    }
                }
            }
        }
        return hashes.map { found[wanted.index(of: $0)!] }
    }

    /// One of a record's blocks, encoded; nil when it is not stored.
    func blockData(_ record: RecordID, _ hash: BlockHash) throws -> [UInt8]? {
        try storedBlocks([hash], of: record)[0]
    }

    /// A record's blocks (a note's body, as a revision or the materialised note names them).
    func blocks(of record: RecordID, _ hashes: [BlockHash]) throws -> [Block] {
        try requiredBlocks(of: record, hashes) { try Block(encoded: $0) }
    }

    /// The text a reader sees in a note's body (its blocks' text, a line each), without
    /// building the blocks: for the search index and the listing's text filter.
    func bodyText(of note: NoteID, _ body: [BlockHash]) throws -> String {
        try requiredBlocks(of: note, body) { try Block.text(encoded: $0) }.joined(separator: "\n")
    }

    /// The stored blocks `hashes` name, in order, each passed to `decode`; a block missing
    /// from the store is a damaged library.
    private func requiredBlocks<T>(of record: RecordID, _ hashes: [BlockHash], _ decode: ([UInt8]) throws -> T) throws -> [T] {
        let found = try storedBlocks(hashes, of: record)
        return try zip(hashes, found).map { hash, data in
            guard let data else {
                throw ReplicaError.invalid(
                    "block \(hash.short) of \(record) is missing from the store; \(ReplicaError.damagedLibraryAdvice)")
            }
            return try decode(data)
        }
    }

    /// Every stored block's record and hash, pack by pack, skipping a pack whose directory
    /// cannot be read (the integrity check reports those): for finding a block whose record is
    /// not known (`availableBlocks`), so one damaged pack does not stop a peer's sync.
    func forEachStoredBlock(_ visit: (_ record: RecordID, _ hash: BlockHash, _ pack: Int64, _ refs: Int64) throws -> Void) throws {
        try database.statement("SELECT record, rowid, refs, directory FROM block_packs").forEach { row in
            guard let record = row.recordID(0), let directory = row.withBlob(3, BlockPack.Directory.init) else { return }
            for hash in directory.hashes { try visit(record, hash, row.int(1), row.int(2)) }
        }
    }
}
