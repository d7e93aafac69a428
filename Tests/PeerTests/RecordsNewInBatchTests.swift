import Foundation
import Merge
import Testing
@testable import Peer
import TestSupport

/// A record that had no revision before an `apply` batch (every note of a catch-up) is applied
/// from what the batch gave it (`RecordNewInBatch`): its revisions, heads and tombstones are not
/// read back, and it has no materialised row to read. The outcome must be what applying the same
/// entries one at a time gives, where each record is new only to its first entry.
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

    /// Everything a reader sees of a replica's notes, and what it keeps about them.
    private func state(_ replica: Replica) throws -> [String] {
        let notes = try replica.database.rows("SELECT id FROM notes ORDER BY id") { $0.recordID(0)! }
        let shown = try notes.map { id in "\(id) \(String(describing: try replica.note(id)))" }
        let heads = try replica.database.rows("SELECT hex(record), hex(revision), kind FROM heads ORDER BY record, revision") {
            "head \($0.text(0)) \($0.text(1)) \($0.int(2))"
        }
        // The row's own clock: a note folded from heads that were not its heads gets another.
        let stamps = try replica.database.rows("SELECT hex(id), hlc, modified FROM notes ORDER BY id") { "row \($0.text(0)) \($0.int(1)) \($0.int(2))" }
        let counts = try replica.database.rows("SELECT hex(folder), notes FROM folder_note_counts ORDER BY folder") { "count \($0.text(0)) \($0.int(1))" }
        return shown + stamps + heads + counts + ["notes \(try replica.noteCount)"]
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
        // Every record was new to the batch: none had its heads or its row read back.
        for sql in [Self.headsRead, Self.rowRead] {
            #expect(batched.database.statementCountersBySQL[sql] == before[sql], "\(sql) ran")
        }

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
