import Foundation
import Merge
import Testing
@testable import Peer
import TestSupport

/// Blocks kept per record (schema migration 10, docs/decisions.md "Blocks keyed by record"):
/// the migration of a library stored by hash, a peer's `need` answered without an index by
/// hash, and blocks sent ahead of their entry.
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
        // the store matches, row for row, the one the same history builds under schema 10.
        let keyed = "SELECT group_concat(hex(record) || hex(hash) || refs, ',') FROM (SELECT * FROM blocks ORDER BY record, hash)"
        #expect(try migrated.database.first(keyed) { $0.text(0) } == a.database.first(keyed) { $0.text(0) })
        let sharedHash = RevisionCodec.blockHash(Block.paragraph(shared).encoded())
        let holders = try migrated.database.first("SELECT count(*) FROM blocks WHERE hash = ?1", [.hash(sharedHash)]) { $0.int(0) }
        #expect(holders == 2)
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
        let everyBlock = "SELECT group_concat(hex(record) || hex(hash) || refs || hex(data), ',') FROM (SELECT * FROM blocks ORDER BY record, hash)"
        let blocksBefore = try a.database.first(everyBlock) { $0.text(0) }

        let path = directory.file("schema11.db")
        try a.database.execute("VACUUM INTO '\(path)'")
        do {
            let older = try Database(path: path)
            try older.execute(RevisionsByRecordTests.undoMigration14 + Self.undoMigration12 + "PRAGMA user_version = 11;")
        }
        let migrated = try Replica(path: path)
        #expect(try migrated.database.userVersion == Schema.migrations.count)
        #expect(try migrated.database.first("SELECT sql FROM sqlite_schema WHERE name = 'blocks'") { $0.text(0) }?.contains("WITHOUT ROWID") == true)
        #expect(try rows(migrated.database, "SELECT count(*) FROM sqlite_schema WHERE name = 'blocks_keyed'") == 0)
        #expect(try migrated.database.first(everyBlock) { $0.text(0) } == blocksBefore)
        #expect(try bodies(migrated) == before)
        #expect(try migrated.integrityProblems() == [])
        // It goes on storing and sharing blocks as before.
        try migrated.editNote(first, NoteEdit(body: paragraphs(["one", "five"])), now: 4_000)
        #expect(try migrated.note(first)?.body == paragraphs(["one", "five"]))
        #expect(try migrated.integrityProblems() == [])
    }

    /// Blocks are inserted up to 16 to a statement: a body of 40, with repeats, arrives whole.
    @Test func aBodyOfMoreBlocksThanOneInsertTakesArrivesWhole() throws {
        let texts = (1...40).map { "paragraph \($0 % 30)" }
        let long = try a.createNote(title: "Long", body: paragraphs(texts), now: 1_000)
        try syncAll([a, b])
        #expect(try b.note(long)?.body == paragraphs(texts))
        #expect(try rows(b.database, "SELECT count(*) FROM blocks") == 30)
        #expect(try rows(b.database, "SELECT sum(refs) FROM blocks") == 30)
        #expect(try b.integrityProblems() == [])
    }

    @Test func aRevisionsBlocksAreReadInOnePassOverTheRecordOrOneByOneBeyondIt() throws {
        // A note rewritten many times holds many more blocks than any one revision names.
        let note = try a.createNote(title: "Rewritten", body: paragraphs((1...6).map { "first \($0)" }), now: 1_000)
        for round in 1...30 {
            try a.editNote(note, NoteEdit(body: paragraphs((1...6).map { "round \(round), paragraph \($0)" })), now: 1_000 + UInt64(round) * 3_600_000)
        }
        let stored = try a.database.rows("SELECT hash FROM blocks WHERE record = ?1 ORDER BY hash", [.record(note)]) { $0.hash(0)! }
        #expect(stored.count == 186)
        // The first six in the table's order are met within the pass; the last six lie past
        // where it gives up, and are read one by one.
        let early = Array(stored.prefix(6)), late = Array(stored.suffix(6))
        #expect(stored.count - 6 > Replica.rangeReadRows(asked: 6))
        let absent = Hash256(bytes: [UInt8](repeating: 7, count: 32))!
        for asked in [early, late, early + [late[0], early[0], absent], Array(stored.reversed()), Array(early.prefix(2))] {
            let oneByOne = try asked.map { try a.blockData(note, $0) }
            let read = try a.storedBlocks(asked, of: note)
            #expect(read == oneByOne)
            #expect(read.filter { $0 == nil }.count == (asked.contains(absent) ? 1 : 0))
        }
        #expect(throws: ReplicaError.self) { try a.blockData([early[0], absent], of: note) }

        // Which reads served them (SQLite's steps per statement): the early six come from the
        // pass alone; the late six from a pass that gave up early, then one statement each.
        let pass = "SELECT hash, data FROM blocks WHERE record = ?1"
        let single = "SELECT data FROM blocks WHERE record = ?1 AND hash = ?2"
        func steps(_ read: () throws -> Void) rethrows -> (pass: Int, single: Int) {
            let before = a.database.statementCountersBySQL
            try read()
            let after = a.database.statementCountersBySQL
            func delta(_ sql: String) -> Int { (after[sql]?.virtualMachineSteps ?? 0) - (before[sql]?.virtualMachineSteps ?? 0) }
            return (delta(pass), delta(single))
        }
        let earlySteps = try steps { _ = try a.storedBlocks(early, of: note) }
        #expect(earlySteps.pass > 0 && earlySteps.single == 0)
        let lateSteps = try steps { _ = try a.storedBlocks(late, of: note) }
        #expect(lateSteps.single > 0)
        let wholeSteps = try steps { _ = try a.storedBlocks(Array(stored.reversed()), of: note) }
        #expect(wholeSteps.single == 0)
        #expect(lateSteps.pass * 4 < wholeSteps.pass, "the pass for six stopped after \(Replica.rangeReadRows(asked: 6)) of \(stored.count) rows")
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
        try b.storeBlocks(blocks + [Block.paragraph("sent, never used").encoded()])
        #expect(try rows(b.database, "SELECT count(*) FROM blocks") == 0, "blocks sent ahead are not stored until used")
        #expect(b.sentBlocksAwaitingUse.count == 3)
        let slim = EntryPayload(dot: entries[0].dot, revision: entries[0].revision, content: .full(data: data, blocks: []))
        let outcome = try b.apply([slim], now: 2_000)
        #expect(outcome.applied == 1 && outcome.need == nil)
        #expect(try b.note(id)?.body == paragraphs(["ahead one", "ahead two"]))
        #expect(b.sentBlocksAwaitingUse.count == 1, "the two used are the note's now")
        try b.releaseMemory()
        #expect(b.sentBlocksAwaitingUse.isEmpty && b.sentBlocksAwaitingBytes == 0)
        #expect(try rows(b.database, "SELECT count(*) FROM blocks") == 2)
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
        try a.database.run(
            "INSERT INTO blocks (record, hash, refs, data) VALUES (?1, ?2, 0, ?3)",
            [.record(id), .hash(RevisionCodec.blockHash(composed)), .blob(composed)])
        try a.purgeNote(id, now: 2_000)
        #expect(try a.database.first("SELECT count(*) FROM blocks WHERE record = ?1", [.record(id)]) { $0.int(0) } == 0)
        #expect(try a.integrityProblems() == [])
    }
}
