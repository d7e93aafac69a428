import Foundation
import Merge
import Testing
@testable import Peer
import TestSupport

/// Revisions found by record and id, never by id alone (schema migration 14, docs/decisions.md
/// "Revisions keyed by record"): the migration of a library indexed by revision id, a sync
/// that reads and writes revisions without scanning them, and a parent named in another record.
@Suite struct RevisionsByRecordTests {
    let directory: TemporaryDirectory
    let a: Replica, b: Replica

    init() throws {
        directory = try TemporaryDirectory()
        a = try Replica(path: directory.file("a.db"), randomBytes: SeededBytes.source(seed: 61))
        b = try Replica(path: directory.file("b.db"), randomBytes: SeededBytes.source(seed: 62))
    }

    /// Puts a database of schema 14 back as schema 13 left it: revisions unique by id beside
    /// an index by record, and a log without records. Runs before any older undo (schema 9's
    /// heads name `revisions(id)` in a foreign key, which needs the unique index back).
    static let undoMigration14 = """
        CREATE TABLE revisions_before (
            id BLOB NOT NULL UNIQUE, record BLOB NOT NULL, kind INTEGER NOT NULL, hlc INTEGER NOT NULL,
            author BLOB NOT NULL, parents BLOB NOT NULL, body BLOB NOT NULL, tombstone INTEGER NOT NULL,
            purged INTEGER NOT NULL DEFAULT 0, data BLOB NOT NULL, depth INTEGER);
        INSERT INTO revisions_before SELECT id, record, kind, hlc, author, parents, body, tombstone, purged, data, depth
            FROM revisions ORDER BY rowid;
        DROP TABLE revisions; ALTER TABLE revisions_before RENAME TO revisions;
        CREATE INDEX revisions_by_record ON revisions(record);
        CREATE TABLE log_before (
            stored INTEGER PRIMARY KEY, replica BLOB NOT NULL, seq INTEGER NOT NULL, revision BLOB NOT NULL,
            UNIQUE (replica, seq));
        INSERT INTO log_before (stored, replica, seq, revision) SELECT stored, replica, seq, revision FROM log;
        DROP TABLE log; ALTER TABLE log_before RENAME TO log;
        """

    /// Every revision as its readers read it, record by record.
    private func history(_ replica: Replica) throws -> [String] {
        let records = try replica.database.rows("SELECT DISTINCT record FROM revisions ORDER BY record") { $0.recordID(0)! }
        return try records.flatMap { record in
            try replica.revisionRows(record: record).map { "\($0.id) \($0.purged) \(Replica.concatenated($0.body)) \($0.data)" }.sorted()
        }
    }

    private func logRows(_ database: Database) throws -> [String] {
        try database.rows("SELECT stored, hex(replica), seq, hex(record), hex(revision) FROM log ORDER BY stored") {
            "\($0.int(0)) \($0.text(1)) \($0.int(2)) \($0.text(3)) \($0.text(4))"
        }
    }

    @Test func migratingALibraryIndexedByRevisionIdKeepsEveryRevisionAndNamesEachLogEntrysRecord() throws {
        let kept = try a.createNote(title: "Kept", body: paragraphs(["one", "two", "three"]), now: 1_000)
        try a.markOffered()
        try a.editNote(kept, NoteEdit(body: paragraphs(["one", "two, edited", "three"])), now: 2_000)
        try a.markOffered()
        try a.editNote(kept, NoteEdit(title: "Kept, retitled"), now: 3_000)
        let gone = try a.createNote(title: "Gone", body: paragraphs(["secret"]), now: 3_000)
        try a.markOffered()
        try a.purgeNote(gone, now: 4_000)
        _ = try a.createFolder(name: "Work", now: 4_000)
        let historyBefore = try history(a)
        let logBefore = try logRows(a.database)

        let path = directory.file("schema13.db")
        try a.database.execute("VACUUM INTO '\(path)'")
        do {
            let older = try Database(path: path)
            try BlockPacksTests.undoMigration16(older)
            try older.execute(Self.undoMigration14 + "PRAGMA user_version = 13;")
            #expect(try older.first("SELECT count(*) FROM pragma_table_info('log') WHERE name = 'record'") { $0.int(0) } == 0)
        }
        let migrated = try Replica(path: path)
        #expect(try migrated.database.userVersion == Schema.migrations.count)
        #expect(try history(migrated) == historyBefore)
        #expect(try logRows(migrated.database) == logBefore)
        // No index on the revision id alone is left: the only one on revisions is by record and id.
        let indexes = try migrated.database.rows("SELECT name, \"unique\" FROM pragma_index_list('revisions') ORDER BY name") { "\($0.text(0)) \($0.int(1))" }
        #expect(indexes == ["revisions_by_record 1"])
        #expect(try migrated.database.rows("SELECT name FROM pragma_index_info('revisions_by_record') ORDER BY seqno") { $0.text(0) } == ["record", "id"])
        #expect(try migrated.integrityProblems() == [])
        // It goes on editing (an unoffered edit coalesces: its row is replaced by record and id) and syncing.
        let count = "SELECT (SELECT count(*) FROM revisions) || ' ' || (SELECT count(*) FROM log)"
        try migrated.editNote(kept, NoteEdit(title: "Kept, after"), now: 5_000)
        let afterFirstEdit = try migrated.database.first(count) { $0.text(0) }
        try migrated.editNote(kept, NoteEdit(title: "Kept, after again"), now: 5_001)
        #expect(try migrated.database.first(count) { $0.text(0) } == afterFirstEdit, "the second edit replaced the first")
        try syncAll([migrated, b])
        #expect(try b.note(kept)?.title == "Kept, after again")
        #expect(try b.note(kept)?.body == paragraphs(["one", "two, edited", "three"]))
        #expect(try migrated.integrityProblems() == [])
        #expect(try b.integrityProblems() == [])
    }

    /// A log entry naming a revision that is not stored (a damaged library) keeps no record
    /// through the migration, and the integrity check still reports it.
    @Test func aLogEntryNamingNoStoredRevisionIsStillReportedAfterTheMigration() throws {
        let id = try a.createNote(title: "Doc", body: paragraphs(["x"]), now: 1_000)
        let path = directory.file("damaged.db")
        try a.database.execute("VACUUM INTO '\(path)'")
        do {
            let older = try Database(path: path)
            try BlockPacksTests.undoMigration16(older)
            try older.execute(Self.undoMigration14 + "PRAGMA user_version = 13;")
            try older.run("DELETE FROM revisions WHERE record = ?1", [.record(id)])
        }
        let migrated = try Replica(path: path)
        let head = try #require(try a.heads(of: id).first)
        #expect(try migrated.database.first("SELECT length(record) FROM log WHERE revision = ?1", [.hash(head)]) { $0.int(0) } == 0)
        #expect(try migrated.integrityProblems().contains("1 log entries name a missing revision"))
    }

    /// A catch-up, edits sent as changes of their parents, and a history read find each
    /// revision by its record: no statement on revisions or the log scans either table.
    @Test func aSyncReadsAndWritesRevisionsWithoutScanningThem() throws {
        var ids: [NoteID] = []
        for index in 0..<30 {
            ids.append(try a.createNote(title: "N\(index)", body: paragraphs(["first \(index)", "second \(index)", "third"]), now: 1_000))
        }
        try a.markOffered()
        for id in ids.prefix(10) { try a.editNote(id, NoteEdit(body: paragraphs(["first, edited", "third"])), now: 2_000) }
        let aBefore = a.database.statementCountersBySQL
        let bBefore = b.database.statementCountersBySQL
        try syncAll([a, b])
        _ = try b.history(of: ids[0])
        // Coalescing (an edit replacing an unoffered one), a purge and its sync, and a
        // peer's `needBlocks` answered.
        try b.editNote(ids[20], NoteEdit(title: "coalesced 1"), now: 3_000)
        try b.editNote(ids[20], NoteEdit(title: "coalesced 2"), now: 3_001)
        try b.purgeNote(ids[21], now: 3_002)
        try syncAll([a, b])
        #expect(try a.note(ids[20])?.title == "coalesced 2")
        #expect(try a.note(ids[21]) == nil)
        _ = try a.availableBlocks([RevisionCodec.blockHash(Block.paragraph("third").encoded())], maxBytes: 1 << 20, peerHolds: VersionVector())
        #expect(try b.note(ids[0])?.body == paragraphs(["first, edited", "third"]))
        var scans: [String] = []
        for (replica, before) in [(a, aBefore), (b, bBefore)] {
            for (sql, after) in replica.database.statementCountersBySQL where sql.contains("revisions") || sql.contains(" log") {
                let spent = after - (before[sql] ?? StatementCounters())
                if spent.fullScanSteps > 0 { scans.append("\(spent.fullScanSteps) × \(sql)") }
            }
        }
        #expect(scans == [])
        #expect(b.database.statementCountersBySQL.keys.contains { $0.contains("FROM revisions WHERE record = ?1 AND id = ?2") })
    }

    /// A revision's parents are revisions of its record. One that names a revision of another
    /// record as its parent is never applied: the parent is missing from its record.
    @Test func aParentNamedInAnotherRecordIsMissing() throws {
        let first = try a.createNote(title: "First", body: paragraphs(["x"]), now: 1_000)
        let second = try a.createNote(title: "Second", body: paragraphs(["y"]), now: 1_000)
        try syncAll([a, b])
        let firstHead = try a.heads(of: first)
        var note = try #require(try a.note(second))
        note.title = "Second, on the first's head"
        let forged = RevisionCodec.encode(Revision(
            record: second, parents: firstHead, author: a.replicaID, hlc: HLC(rawValue: 5_000 << 16), content: .note(.live(note))))
        let entry = EntryPayload(
            dot: Dot(replica: a.replicaID, seq: a.vector[a.replicaID] + 1), revision: forged.id,
            content: .full(data: forged.bytes, blocks: []))
        let outcome = try b.apply([entry], now: 6_000)
        #expect(outcome.applied == 0)
        #expect(outcome.need == .parents(firstHead))
        // The same revision sent as edits to its first parent's body: that parent is looked
        // for in the revision's own record too.
        let split = try #require(try BodyDelta.split(forged.bytes))
        let edited = EntryPayload(dot: entry.dot, revision: forged.id, content: .edited(
            prefix: Array(split.prefix), edits: [], suffix: Array(split.suffix), blocks: []))
        let editedOutcome = try b.apply([edited], now: 6_000)
        #expect(editedOutcome.applied == 0)
        #expect(editedOutcome.need == .parents([firstHead[0]]))
        #expect(try b.note(second)?.title == "Second")
        #expect(try b.integrityProblems() == [])
    }

    /// An entry whose revision does not say which record it belongs to is refused, saying why.
    @Test func anEntryWhoseRecordCannotBeReadIsRefusedWithTheReason() throws {
        _ = try a.createNote(title: "Doc", body: paragraphs(["x"]), now: 1_000)
        let entry = try #require(try a.entries(missingFrom: VersionVector()).first)
        guard case .full(var data, let blocks) = entry.content else { Issue.record("expected full content"); return }
        data[0] = 99  // a format this notesd does not know
        for garbled in [EntryPayload(dot: entry.dot, revision: entry.revision, content: .full(data: data, blocks: blocks)),
                        EntryPayload(dot: entry.dot, revision: entry.revision, content: .full(data: data, blocks: blocks)).checked()] {
            let outcome = try b.apply([garbled], now: 2_000)
            #expect(outcome.applied == 0)
            #expect(outcome.rejected?.contains("format") == true, "\(outcome.rejected ?? "accepted")")
        }
        #expect(try b.noteCount == 0)
    }

    /// Before schema 14 a peer's revision naming another record's revision as its parent was
    /// taken in, and could be stored as a change of that parent. Such a row still reads: its
    /// base is looked for by id alone when its record does not hold it (here a note's first
    /// revision is moved under another record to stand for that parent).
    @Test func aChangeStoredAgainstAParentOfAnotherRecordStillReads() throws {
        let texts = (0..<12).map { "paragraph \($0)" }
        let id = try a.createNote(title: "Doc", body: paragraphs(texts), now: 1_000)
        try a.markOffered()
        var edited = texts
        edited[3] = "paragraph 3, edited"
        try a.editNote(id, NoteEdit(body: paragraphs(edited)), now: 2_000)
        let head = try #require(try a.heads(of: id).first)
        let first = try #require(try a.history(of: id).last?.revision)
        #expect(try a.database.first("SELECT depth FROM revisions WHERE record = ?1 AND id = ?2", [.record(id), .hash(head)]) { $0.int(0) } == 1)
        try a.database.run("UPDATE revisions SET record = ?2 WHERE id = ?1", [.hash(first), .record(RecordID(high: 7, low: 7))])
        let rows = try a.revisionRows(record: id)
        #expect(rows.map(\.id) == [head])
        #expect(try a.revisionRow(head, of: id)?.body == paragraphs(edited).map { RevisionCodec.blockHash($0.encoded()) })
        #expect(try a.note(id, at: head).body == paragraphs(edited))
    }
}
