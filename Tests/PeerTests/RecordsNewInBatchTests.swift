import Foundation
import Merge
import Testing
@testable import Peer
import TestSupport

/// A record the store held nothing of before an `apply` batch (every note of a catch-up) is
/// applied from what the batch gave it (`RecordNewInBatch`): its revisions, heads, tombstones
/// and blocks are not read back, and it has no materialised row to read. The outcome must be
/// what applying the same entries one at a time gives, where each record is new only to its
/// first entry.
@Suite struct RecordsNewInBatchTests {
    let directory: TemporaryDirectory
    let a: Replica, d: Replica

    init() throws {
        directory = try TemporaryDirectory()
        a = try Replica(path: directory.file("a.db"), randomBytes: SeededBytes.source(seed: 71))
        d = try Replica(path: directory.file("d.db"), randomBytes: SeededBytes.source(seed: 72))
    }

    private static let headsRead = "SELECT revision FROM heads WHERE record = ?1"
    private static let rowRead = "SELECT trashed, folder FROM notes WHERE id = ?1"
    private static let blockRead = Replica.placesRead

    /// Everything a reader sees of a replica's notes, and what it keeps about them.
    private func state(_ replica: Replica) throws -> [String] {
        let notes = try replica.database.rows("SELECT id FROM notes ORDER BY id") { $0.recordID(0)! }
        let shown = try notes.map { id in
            // Tags sorted: a set's order differs from one instance to another.
            guard var note = try replica.note(id) else { return "\(id) none" }
            let tags = note.tags.sorted()
            note.tags = []
            return "\(id) \(note) tags \(tags)"
        }
        let heads = try replica.database.rows("SELECT hex(record), hex(revision), kind FROM heads ORDER BY record, revision") {
            "head \($0.text(0)) \($0.text(1)) \($0.int(2))"
        }
        // The row's own clock: a note folded from heads that were not its heads gets another.
        let stamps = try replica.database.rows("SELECT hex(id), hlc, modified FROM notes ORDER BY id") { "row \($0.text(0)) \($0.int(1)) \($0.int(2))" }
        let counts = try replica.database.rows("SELECT hex(folder), notes FROM folder_note_counts ORDER BY folder") { "count \($0.text(0)) \($0.int(1))" }
        return shown + stamps + heads + counts + ["notes \(try replica.noteCount)"] + (try blocks(replica))
    }

    /// Each stored block with its pack's references.
    private func blocks(_ replica: Replica) throws -> [String] {
        try replica.storedBlockList().map { "block \($0)" }
    }

    /// The notes of a history with every shape, made and seen by `d`.
    private struct Made { let folder: FolderID, edited, trashed, purged, shared, clash: NoteID }

    private func makeNotes() throws -> Made {
        let folder = try a.createFolder(name: "Work", now: 1_000)
        _ = try a.createNote(title: "Plain", body: paragraphs(["one"]), now: 1_000)
        let made = Made(
            folder: folder,
            edited: try a.createNote(title: "Edited", body: paragraphs(["one", "two"]), now: 1_000),
            trashed: try a.createNote(title: "Trashed", body: paragraphs(["bin"]), now: 1_000),
            purged: try a.createNote(title: "Purged", body: paragraphs(["secret"]), now: 1_000),
            shared: try a.createNote(title: "Shared", body: paragraphs(["a", "b", "c"]), now: 1_000),
            clash: try a.createNote(title: "Clash", body: paragraphs(["same"]), now: 1_000))
        try a.markOffered()
        try pull(into: d, from: a)
        return made
    }

    /// Then: one edited into a folder, one trashed, one purged (a tombstone), one edited on
    /// two replicas at once (two heads), and one whose same paragraph both changed (a
    /// conflict copy).
    private func change(_ made: Made) throws {
        _ = try a.editNote(made.edited, NoteEdit(body: paragraphs(["one", "two, edited"]), folder: .some(made.folder)), now: 200_000)
        try a.markOffered()
        _ = try a.trashNote(made.trashed, now: 300_000)
        try a.markOffered()
        try a.purgeNote(made.purged, now: 400_000)
        _ = try a.editNote(made.shared, NoteEdit(body: paragraphs(["a, by a", "b", "c"])), now: 500_000)
        _ = try d.editNote(made.shared, NoteEdit(body: paragraphs(["a", "b", "c, by d"])), now: 500_000)
        _ = try a.editNote(made.clash, NoteEdit(body: paragraphs(["same, as a wrote it"])), now: 500_000)
        _ = try d.editNote(made.clash, NoteEdit(body: paragraphs(["same, as d wrote it"])), now: 500_000)
        try pull(into: a, from: d)
        #expect(try a.heads(of: made.shared).count == 2, "the shared note has a head from each replica")
        let copies = try a.database.first("SELECT count(*) FROM notes WHERE conflict_of = ?1", [.record(made.clash)]) { $0.int(0) }
        #expect(copies == 1, "the clash left a conflict copy")
    }

    private func makeHistory() throws { try change(try makeNotes()) }

    @Test func aBatchOfNewRecordsEndsAsEntriesAppliedOneByOneWithoutReadingHeadsOrRows() throws {
        try makeHistory()
        let entries = try a.entries(missingFrom: VersionVector(), maxCount: 10_000, maxBytes: .max)
        #expect(entries.count > 10)

        let batched = try Replica(path: directory.file("batched.db"), randomBytes: SeededBytes.source(seed: 73))
        let before = batched.database.statementCountersBySQL
        let outcome = try batched.apply(entries.map { $0.checked() }, now: 600_000)
        #expect(outcome.need == nil && outcome.rejected == nil && outcome.applied == entries.count)
        // Every record was new to the batch: none had its heads, its row or where its blocks
        // are read back, and each revision's new blocks went in as one pack.
        let after = batched.database.statementCountersBySQL
        for sql in [Self.headsRead, Self.rowRead, Self.blockRead] {
            #expect(after[sql] == before[sql], "\(sql) ran")
        }
        let packInserts = after.filter { $0.key.hasPrefix("INSERT INTO block_packs") }.values.reduce(0) { $0 + $1.runs }
        #expect(packInserts == (try batched.packCount()), "one insert per pack")
        #expect(try batched.storedBlockCount() > batched.packCount(), "a revision's blocks share a pack")

        let oneByOne = try Replica(path: directory.file("one-by-one.db"), randomBytes: SeededBytes.source(seed: 74))
        for entry in entries {
            let single = try oneByOne.apply([entry], now: 600_000)
            #expect(single.need == nil && single.rejected == nil)
        }
        let expected = try state(oneByOne)
        #expect(try state(batched) == expected)
        // And both show what the replica that made the history shows.
        #expect(try state(a) == expected)
    }

    @Test func recordsHeldBeforeTheBatchAreReadAsBefore() throws {
        let made = try makeNotes()
        let receiver = try Replica(path: directory.file("receiver.db"), randomBytes: SeededBytes.source(seed: 75))
        let first = try a.entries(missingFrom: receiver.vector, maxCount: 10_000, maxBytes: .max)
        #expect(try receiver.apply(first, now: 600_000).applied == first.count)
        // Every record of the second batch was held before it: its heads and rows are read.
        try change(made)
        let before = receiver.database.statementCountersBySQL
        let rest = try a.entries(missingFrom: receiver.vector, maxCount: 10_000, maxBytes: .max)
        let outcome = try receiver.apply(rest, now: 600_000)
        #expect(outcome.need == nil && outcome.rejected == nil && outcome.applied == rest.count)
        for sql in [Self.headsRead, Self.rowRead] {
            #expect(receiver.database.statementCountersBySQL[sql] != before[sql], "\(sql) did not run")
        }
        #expect(try state(receiver) == state(a))
    }

    /// A batch's revisions, log entries, heads and notes go in many to a statement
    /// (`GatheredRows`): with more than a statement's worth of each, several revisions of a
    /// record in the batch (each read its parent back), tags, a tombstone and two heads, it
    /// ends as the entries applied one at a time do, its log in the same order.
    @Test func rowsGatheredAcrossTheBatchEndAsEntriesAppliedOneByOne() throws {
        let folder = try a.createFolder(name: "Home", now: 1_000)
        var notes: [NoteID] = []
        for index in 0..<40 {
            notes.append(
                try a.createNote(
                    title: "Note \(index)", body: paragraphs(["first \(index)", "second \(index)"]), folder: index % 3 == 0 ? folder : nil,
                    tags: index % 4 == 0 ? ["tag\(index % 8)", "every fourth"] : [], now: 1_000 + UInt64(index)))
        }
        try a.markOffered()
        // Three more revisions of every fifth note, each after the others' first: a batch meets
        // the record again once rows of it are waiting.
        for round in 1...3 {
            for (index, note) in notes.enumerated() where index % 5 == 0 {
                _ = try a.editNote(note, NoteEdit(body: paragraphs(["first \(index), round \(round)", "second \(index)"])), now: 10_000 * UInt64(round))
            }
            try a.markOffered()
        }
        try a.purgeNote(notes[1], now: 50_000)
        _ = try a.trashNote(notes[2], now: 50_000)
        try a.markOffered()
        try pull(into: d, from: a)
        _ = try a.editNote(notes[3], NoteEdit(body: paragraphs(["first 3, by a", "second 3"])), now: 60_000)
        _ = try d.editNote(notes[3], NoteEdit(body: paragraphs(["first 3", "second 3, by d"])), now: 60_000)
        try pull(into: a, from: d)
        #expect(try a.heads(of: notes[3]).count == 2)
        let entries = try a.entries(missingFrom: VersionVector(), maxCount: 10_000, maxBytes: .max)
        #expect(entries.count > 3 * 16)

        func log(_ replica: Replica) throws -> [String] {
            try replica.database.rows("SELECT hex(replica), seq, hex(record), hex(revision) FROM log ORDER BY stored") {
                "\($0.text(0)) \($0.int(1)) \($0.text(2)) \($0.text(3))"
            }
        }
        let batched = try Replica(path: directory.file("gathered.db"), randomBytes: SeededBytes.source(seed: 79))
        let outcome = try batched.apply(entries.map { $0.checked() }, now: 600_000)
        #expect(outcome.need == nil && outcome.rejected == nil && outcome.applied == entries.count)
        // Whole statements of sixteen ran.
        let sixteen = batched.database.statementCountersBySQL.filter { $0.key.hasPrefix("INSERT OR IGNORE INTO log") && $0.key.contains("?64)") }
        #expect(sixteen.values.contains { $0.runs > 0 }, "no statement took sixteen log entries")

        let oneByOne = try Replica(path: directory.file("gathered-one-by-one.db"), randomBytes: SeededBytes.source(seed: 80))
        for entry in entries {
            let single = try oneByOne.apply([entry.checked()], now: 600_000)
            #expect(single.need == nil && single.rejected == nil)
        }
        #expect(try state(batched) == state(oneByOne))
        #expect(try log(batched) == log(oneByOne))
        #expect(try state(batched) == state(a))
        #expect(try batched.integrityProblems().isEmpty)
    }

    /// A note row the library holds for a record it holds nothing else of (damage) is
    /// reported, and the batch leaves nothing behind.
    @Test func aGatheredRowTheLibraryAlreadyHeldIsReportedAndNothingLands() throws {
        let note = try a.createNote(title: "Twice", body: paragraphs(["once"]), now: 1_000)
        let entries = try a.entries(missingFrom: VersionVector(), maxCount: 10_000, maxBytes: .max)
        let receiver = try Replica(path: directory.file("damaged.db"), randomBytes: SeededBytes.source(seed: 81))
        try receiver.database.run(
            "INSERT INTO notes (id, title, body, trashed, pinned, created, modified, hlc) VALUES (?1, 'stray', x'', 0, 0, 0, 0, 0)", [.record(note)])
        #expect {
            _ = try receiver.apply(entries, now: 600_000)
        } throws: { error in
            "\(error)".contains("notes already held 1 of 1 rows") && "\(error)".contains("the library is damaged")
        }
        #expect(receiver.vector == VersionVector())
        #expect(try receiver.database.first("SELECT count(*) FROM revisions") { $0.int(0) } == 0)
        #expect(try receiver.database.first("SELECT title FROM notes WHERE id = ?1", [.record(note)]) { $0.text(0) } == "stray")
    }

    /// A record with a block but no revision (one the merge composed for a note whose
    /// revisions a restore left out) is held: the batch takes a reference on that block
    /// instead of storing it again, and ends with the same references as one entry at a time.
    @Test func aRecordHoldingOnlyABlockIsHeldAndItsBlockCounted() throws {
        let note = try a.createNote(title: "Stray", body: paragraphs(["kept", "other"]), now: 1_000)
        let entries = try a.entries(missingFrom: VersionVector(), maxCount: 10_000, maxBytes: .max)
        let hash = try #require(try a.note(note)?.body.map { RevisionCodec.blockHash($0.encoded()) }.min())
        let data = try #require(try a.blockData(note, hash))
        var results: [[String]] = []
        for (name, batched) in [("stray-batched.db", true), ("stray-single.db", false)] {
            let receiver = try Replica(path: directory.file(name), randomBytes: SeededBytes.source(seed: 76))
            try receiver.storePack([(hash, data[...])], of: note, revision: nil)
            for batch in batched ? [entries] : entries.map({ [$0] }) {
                let outcome = try receiver.apply(batch, now: 600_000)
                #expect(outcome.need == nil && outcome.rejected == nil && outcome.applied == batch.count)
            }
            results.append(try blocks(receiver))
        }
        #expect(results[0] == results[1])
        #expect(results[0] == (try blocks(a)), "each block is used once, the stray one too")
    }

    /// Which records the store holds is asked of ranges: exact for any mix of held and new
    /// ids, and one query when none is held.
    @Test func heldRecordsAreFoundByRangesAsExactlyAsOneByOne() throws {
        let store = try Replica(path: directory.file("held.db"), randomBytes: SeededBytes.source(seed: 77))
        var random = SplitMix64(seed: 78)
        var held: [RecordID] = []
        for index in 0..<60 {
            let note = try store.createNote(title: "n\(index)", body: paragraphs(["p\(index)"]), now: 1_000 + UInt64(index))
            held.append(note)
        }
        // A stray block alone makes its record held too.
        let stray = RecordID(high: held.max()!.high, low: held.max()!.low &+ 1)
        try store.storePack([(Hash256(bytes: [UInt8](repeating: 3, count: 32))!, [0])], of: stray, revision: nil)
        held.append(stray)
        func queries() -> Int { store.database.statementCountersBySQL[Replica.holdsAnythingInRange]?.runs ?? 0 }
        for round in 0..<30 {
            let newOnes = (0..<Int(random.next() % 40)).map { _ in RecordID(high: random.next(), low: random.next()) }
            // Odd rounds ask for new ids alone.
            let heldOnes = held.filter { _ in round.isMultiple(of: 2) && random.next() % 3 == 0 }
            let asked = Array(Set(newOnes + heldOnes)).sorted()
            #expect(try store.heldRecords(among: asked[...]) == asked.filter { Set(held).contains($0) }, "round \(round)")
        }
        // Notes newer than every note held: one query for the whole batch.
        let later = (1...500 as ClosedRange<UInt64>).map { RecordID(high: stray.high &+ $0, low: 0) }
        let before = queries()
        #expect(try store.heldRecords(among: later[...]).isEmpty)
        #expect(queries() - before == 1)
    }

    /// The heads a batch keeps for a new record change as the store's do.
    @Test func aNewRecordsHeadsAreItsRevisionsThatNoneNamesAsParent() throws {
        let record = RecordID(high: 1, low: 2)
        func id(_ byte: UInt8) -> RevisionID { Hash256(bytes: [UInt8](repeating: byte, count: 32))! }
        func header(_ parents: [RevisionID], tombstone: Bool = false) -> RevisionHeader {
            RevisionHeader(
                kind: .note, record: record, parents: parents, author: ReplicaID(record), hlc: HLC(milliseconds: 1, counter: 0),
                isTombstone: tombstone, body: [])
        }
        var known = RecordNewInBatch()
        known.add(id(1), header: header([]))
        known.add(id(2), header: header([id(1)]))
        #expect(known.heads == [id(2)])
        known.add(id(3), header: header([id(1)]))
        #expect(known.heads.sorted() == [id(2), id(3)])
        #expect(!known.hasTombstone)
        known.add(id(4), header: header([id(2), id(3)], tombstone: true))
        #expect(known.heads == [id(4)])
        #expect(known.hasTombstone)
        #expect(known.revisions == [id(1), id(2), id(3), id(4)])
    }
}
