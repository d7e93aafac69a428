import Foundation
import Merge
import Testing
@testable import Peer
import TestSupport

/// Blocks kept per record (schema migration 10, docs/decisions.md "Blocks keyed by record"):
/// the migration of a library stored by hash, reading a record's blocks from its packs, a
/// peer's `need` answered without an index by hash, and blocks sent ahead of their entry.
@Suite struct BlocksByRecordTests {
    let directory: TemporaryDirectory
    let a: Replica, b: Replica

    init() throws {
        directory = try TemporaryDirectory()
        a = try Replica(path: directory.file("a.db"), randomBytes: SeededBytes.source(seed: 1))
        b = try Replica(path: directory.file("b.db"), randomBytes: SeededBytes.source(seed: 2))
    }

    /// Puts a database of schema 10 back as schema 9 left it: blocks unique by hash, each
    /// counting the revisions of every record that use it, and heads indexed by revision.
    static let undoMigration10 = """
        CREATE TABLE blocks_before (hash BLOB NOT NULL UNIQUE, refs INTEGER NOT NULL, data BLOB NOT NULL);
        INSERT INTO blocks_before (hash, refs, data) SELECT hash, sum(refs), data FROM blocks GROUP BY hash ORDER BY hash;
        DROP TABLE blocks; ALTER TABLE blocks_before RENAME TO blocks;
        CREATE TABLE heads_before (
            record BLOB NOT NULL, revision BLOB NOT NULL REFERENCES revisions(id), kind INTEGER NOT NULL,
            PRIMARY KEY (record, revision)) WITHOUT ROWID;
        INSERT INTO heads_before (record, revision, kind) SELECT record, revision, kind FROM heads;
        DROP TABLE heads; ALTER TABLE heads_before RENAME TO heads;
        CREATE INDEX heads_by_revision ON heads(revision);
        """

    private func bodies(_ replica: Replica) throws -> [NoteID: [Block]] {
        var bodies: [NoteID: [Block]] = [:]
        for row in try replica.listNotes(NoteFilter()) + replica.listNotes(NoteFilter(trashed: true)) {
            bodies[row.id] = try replica.note(row.id)?.body
        }
        return bodies
    }

    private func rows(_ database: Database, _ sql: String) throws -> Int64 {
        try database.first(sql) { $0.int(0) } ?? -1
    }

    @Test func migratingALibraryStoredByHashKeepsEveryNoteAndCountsUsesPerRecord() throws {
        let shared = "a paragraph two notes share"
        let first = try a.createNote(title: "First", body: paragraphs([shared, "first's own"]), now: 1_000)
        _ = try a.createNote(title: "Second", body: paragraphs([shared, "second's own"]), now: 1_000)
        let gone = try a.createNote(title: "Gone", body: paragraphs([shared, "secret"]), now: 1_000)
        try a.markOffered()
        try a.editNote(first, NoteEdit(body: paragraphs([shared, "first's own, edited"])), now: 2_000)
        try a.purgeNote(gone, now: 3_000)
        // A conflict copy: its record shares the losing version's blocks.
        try syncAll([a, b])
        try a.editNote(first, NoteEdit(body: paragraphs(["from a", "first's own, edited"])), now: 4_000)
        try b.editNote(first, NoteEdit(body: paragraphs(["from b", "first's own, edited"])), now: 4_500)
        try syncAll([a, b])
        #expect(try a.listNotes(NoteFilter(conflictCopies: true)).count == 1)
        let before = try bodies(a)

        let path = directory.file("schema9.db")
        try a.database.execute("VACUUM INTO '\(path)'")
        do {
            let older = try Database(path: path)
            try BlockPacksTests.undoMigration16(older)
            try older.execute(RevisionsByRecordTests.undoMigration14 + Self.undoMigration10 + "PRAGMA user_version = 9;")
            #expect(try rows(older, "SELECT count(*) FROM blocks WHERE data = (SELECT data FROM blocks WHERE refs > 1 LIMIT 1)") == 1)
        }
        let migrated = try Replica(path: path)
        #expect(try migrated.database.userVersion == Schema.migrations.count)
        #expect(try bodies(migrated) == before)
        #expect(try migrated.integrityProblems() == [])
        let leftovers = "SELECT count(*) FROM sqlite_schema WHERE name IN ('blocks_by_hash', 'heads_by_revision', 'heads_by_record')"
        #expect(try rows(migrated.database, leftovers) == 0)
        // The shared paragraph is now each live note's own (the purged note gave its up), and
        // the store holds, block for block, what the same history stores today.
        #expect(try migrated.storedBlockList().map { $0.split(separator: " ").prefix(2) } == a.storedBlockList().map { $0.split(separator: " ").prefix(2) })
        let sharedHash = RevisionCodec.blockHash(Block.paragraph(shared).encoded())
        #expect(try migrated.storedBlockList().filter { $0.contains(sharedHash.description) }.count == 2)
    }

    /// Puts a database of schema 12 back as schema 11 left it: blocks in a rowid table beside
    /// a unique index of (record, hash).
    static let undoMigration12 = """
        CREATE TABLE blocks_rowid (
            record BLOB NOT NULL, hash BLOB NOT NULL, refs INTEGER NOT NULL, data BLOB NOT NULL, UNIQUE (record, hash));
        INSERT INTO blocks_rowid (record, hash, refs, data) SELECT record, hash, refs, data FROM blocks;
        DROP TABLE blocks; ALTER TABLE blocks_rowid RENAME TO blocks;
        """

    @Test func migratingBlocksIntoTheirKeysOwnBTreeKeepsEveryBlockAndItsReferences() throws {
        let first = try a.createNote(title: "First", body: paragraphs(["one", "two", "three"]), now: 1_000)
        try a.editNote(first, NoteEdit(body: paragraphs(["one", "two, edited", "three"])), now: 2_000)
        _ = try a.createNote(title: "Second", body: paragraphs(["one", "four"]), now: 3_000)
        let before = try bodies(a)
        let blocksBefore = try a.storedBlockList()

        let path = directory.file("schema11.db")
        try a.database.execute("VACUUM INTO '\(path)'")
        do {
            let older = try Database(path: path)
            try BlockPacksTests.undoMigration16(older)
            #expect(try older.first("SELECT sql FROM sqlite_schema WHERE name = 'blocks'") { $0.text(0) }?.contains("WITHOUT ROWID") == true)
            try older.execute(RevisionsByRecordTests.undoMigration14 + Self.undoMigration12 + "PRAGMA user_version = 11;")
        }
        let migrated = try Replica(path: path)
        #expect(try migrated.database.userVersion == Schema.migrations.count)
        #expect(try rows(migrated.database, "SELECT count(*) FROM sqlite_schema WHERE name IN ('blocks', 'blocks_keyed')") == 0)
        // Each block is now a pack of its own, with the block's references (one revision each here).
        #expect(try migrated.storedBlockList() == blocksBefore)
        #expect(try migrated.storedBlockCount() == migrated.packCount())
        #expect(try bodies(migrated) == before)
        #expect(try migrated.integrityProblems() == [])
        // It goes on storing and sharing blocks as before.
        try migrated.editNote(first, NoteEdit(body: paragraphs(["one", "five"])), now: 4_000)
        #expect(try migrated.note(first)?.body == paragraphs(["one", "five"]))
        #expect(try migrated.integrityProblems() == [])
    }

    /// A body of 40 blocks with repeats arrives whole, its 30 blocks one pack.
    @Test func aBodyOfManyBlocksWithRepeatsArrivesWholeInOnePack() throws {
        let texts = (1...40).map { "paragraph \($0 % 30)" }
        let long = try a.createNote(title: "Long", body: paragraphs(texts), now: 1_000)
        try syncAll([a, b])
        #expect(try b.note(long)?.body == paragraphs(texts))
        #expect(try b.storedBlockCount() == 30)
        #expect(try b.packCount() == 1)
        #expect(try rows(b.database, "SELECT sum(refs) FROM block_packs") == 1)
        #expect(try b.integrityProblems() == [])
    }

    @Test func aRevisionsBlocksAreReadFromThePacksHoldingThemInOnePassThatStopsWhenAllAreFound() throws {
        // A note rewritten many times holds many more blocks than any one revision names.
        let note = try a.createNote(title: "Rewritten", body: paragraphs((1...6).map { "first \($0)" }), now: 1_000)
        for round in 1...30 {
            try a.editNote(note, NoteEdit(body: paragraphs((1...6).map { "round \(round), paragraph \($0)" })), now: 1_000 + UInt64(round) * 3_600_000)
        }
        #expect(try a.storedBlockCount(of: note) == 186)
        #expect(try a.packCount(of: note) == 31)
        let hashes = { (texts: [String]) in paragraphs(texts).map { RevisionCodec.blockHash($0.encoded()) } }
        // The first revision's pack is the first the pass meets; the last revision's, the last.
        let early = hashes((1...6).map { "first \($0)" }), late = hashes((1...6).map { "round 30, paragraph \($0)" })
        let absent = Hash256(bytes: [UInt8](repeating: 7, count: 32))!
        for asked in [early, late, early + [late[0], early[0], absent], late + early, Array(early.prefix(2)), [absent]] {
            let read = try a.storedBlocks(asked, of: note)
            #expect(read.count == asked.count)
            for (hash, data) in zip(asked, read) {
                #expect(data.map(RevisionCodec.blockHash) == (hash == absent ? nil : hash))
            }
        }
        #expect(throws: ReplicaError.self) { try a.blockData([early[0], absent], of: note) }

        // SQLite's steps for the pass: one pack's worth for the early six, every pack's for the late.
        let pass = Replica.blockPass
        func steps(_ read: () throws -> Void) rethrows -> Int {
            let before = a.database.statementCountersBySQL[pass]?.virtualMachineSteps ?? 0
            try read()
            return (a.database.statementCountersBySQL[pass]?.virtualMachineSteps ?? 0) - before
        }
        let earlySteps = try steps { _ = try a.storedBlocks(early, of: note) }
        let lateSteps = try steps { _ = try a.storedBlocks(late, of: note) }
        #expect(earlySteps > 0)
        #expect(earlySteps * 10 < lateSteps, "the pass for the first pack took \(earlySteps) steps, for the last \(lateSteps)")
    }

    @Test func aNeedIsAnsweredFromTheEntryThePeerLacksOrElseFromAnyRecord() throws {
        _ = try a.createNote(title: "Older", body: paragraphs(["older text"]), now: 1_000)
        let id = try a.createNote(title: "Wanted", body: paragraphs(["one", "two"]), now: 1_000)
        try pull(into: b, from: a)
        let hashes = paragraphs(["one", "two"]).map { RevisionCodec.blockHash($0.encoded()) }
        let expected = paragraphs(["one", "two"]).map { $0.encoded() }
        // The peer holds the first note only: the second's entry is the one it lacks.
        let holdsFirst = VersionVector([a.replicaID: 1])
        #expect(try a.availableBlocks(hashes, maxBytes: .max, peerHolds: holdsFirst) == expected)
        // A peer claiming to hold everything still gets them, from a scan of the blocks.
        #expect(try a.availableBlocks(hashes, maxBytes: .max, peerHolds: a.vector) == expected)
        #expect(try a.availableBlocks([Hash256(bytes: [UInt8](repeating: 7, count: 32))!], maxBytes: .max, peerHolds: holdsFirst) == [])
        #expect(try b.note(id)?.body == paragraphs(["one", "two"]))
    }

    @Test func blocksSentAheadWaitInMemoryUntilTheirEntryTakesThemUp() throws {
        let id = try a.createNote(title: "Long", body: paragraphs(["ahead one", "ahead two"]), now: 1_000)
        let entries = try a.entries(missingFrom: b.vector)
        guard case .full(let data, let blocks) = try #require(entries.first).content else {
            Issue.record("expected a whole entry")
            return
        }
        // As the session sends a large note: its blocks first, then the entry without them.
        try b.storeBlocks(blocks.map { Array($0) } + [Block.paragraph("sent, never used").encoded()])
        #expect(try b.storedBlockCount() == 0, "blocks sent ahead are not stored until used")
        #expect(b.sentBlocksAwaitingUse.count == 3)
        let slim = EntryPayload(dot: entries[0].dot, revision: entries[0].revision, content: .full(data: data, blocks: []))
        let outcome = try b.apply([slim], now: 2_000)
        #expect(outcome.applied == 1 && outcome.need == nil)
        #expect(try b.note(id)?.body == paragraphs(["ahead one", "ahead two"]))
        #expect(b.sentBlocksAwaitingUse.count == 1, "the two used are the note's now")
        try b.releaseMemory()
        #expect(b.sentBlocksAwaitingUse.isEmpty && b.sentBlocksAwaitingBytes == 0)
        #expect(try b.storedBlockCount() == 2)
        #expect(try b.integrityProblems() == [])
    }

    @Test func beyondTheLimitTheOldestBlocksSentAheadAreForgotten() throws {
        let big = String(repeating: "a", count: 4 * 1_048_576)
        let encoded = (0..<(Replica.awaitingBlocksLimit / big.utf8.count + 4)).map { index in Block.paragraph(big + "\(index)").encoded() }
        try b.storeBlocks(encoded)
        #expect(b.sentBlocksAwaitingBytes <= Replica.awaitingBlocksLimit)
        #expect(b.sentBlocksAwaitingBytes == b.sentBlocksAwaitingUse.values.reduce(0) { $0 + $1.count })
        // The last ones sent are what the next entries use: kept; the first ones make room.
        #expect(b.sentBlocksAwaitingUse[RevisionCodec.blockHash(encoded.last!)] != nil)
        #expect(b.sentBlocksAwaitingUse[RevisionCodec.blockHash(encoded.first!)] == nil)
        // An answer to a need still finds room.
        let answer = Block.paragraph("asked for").encoded()
        try b.storeBlocks([answer])
        #expect(b.sentBlocksAwaitingUse[RevisionCodec.blockHash(answer)] != nil)
    }

    @Test func aPurgedNoteLeavesNoneOfItsBlocks() throws {
        let id = try a.createNote(title: "Private", body: paragraphs(["secret one", "secret two"]), now: 1_000)
        // A block the note shows that no revision uses, as the merge stores one it composed.
        let composed = Block.paragraph("composed by a merge").encoded()
        var places: BlockPlaces?
        try a.storeComposedBlock(composed, hash: RevisionCodec.blockHash(composed), of: id, places: &places)
        #expect(try a.storedBlockCount(of: id) == 3)
        try a.purgeNote(id, now: 2_000)
        #expect(try a.packCount(of: id) == 0)
        #expect(try a.integrityProblems() == [])
    }
}
