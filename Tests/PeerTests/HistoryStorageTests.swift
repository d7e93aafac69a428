import Foundation
import Merge
import Testing
@testable import Peer
import TestSupport

/// How revision rows hold history (`RevisionStorage`, schema migration 8): a note's edits as
/// changes of their first parent, in bounded chains, read back exactly, through sync,
/// purges and rows written before the layout.
@Suite struct HistoryStorageTests {
    let directory: TemporaryDirectory
    let a: Replica, b: Replica

    init() throws {
        directory = try TemporaryDirectory()
        a = try Replica(path: directory.file("a.db"), randomBytes: SeededBytes.source(seed: 21))
        b = try Replica(path: directory.file("b.db"), randomBytes: SeededBytes.source(seed: 22))
    }

    /// Wider apart than the coalescing window: every edit is a revision of its own.
    static func time(_ step: Int) -> UInt64 { 1_000_000 + UInt64(step) * 600_000 }

    /// A 7-paragraph note edited `edits` times, one paragraph each; the note after each
    /// revision, oldest first.
    private func editedNote(on replica: Replica, edits: Int) throws -> (NoteID, [(RevisionID, Note)]) {
        var texts = (1...7).map { "paragraph \($0) of the note" }
        let id = try replica.createNote(title: "Storage", body: paragraphs(texts), tags: ["history"], now: Self.time(0))
        var versions = [(try replica.heads(of: id)[0], try #require(try replica.note(id)))]
        for edit in 1...edits {
            texts[edit % 7] = "paragraph \(edit % 7) as of edit \(edit)"
            try replica.editNote(id, NoteEdit(body: paragraphs(texts), pinned: edit % 5 == 0), now: Self.time(edit))
            versions.append((try replica.heads(of: id)[0], try #require(try replica.note(id))))
        }
        return (id, versions)
    }

    private func depths(_ replica: Replica, _ id: NoteID) throws -> [Int?] {
        try replica.database.rows("SELECT depth FROM revisions WHERE record = ?1", [.blob(id.bytes)]) { $0.isNull(0) ? nil : Int($0.int(0)) }
    }

    @Test func aLongHistoryIsStoredAsBoundedChangesAndEveryRevisionReadsBackExactly() throws {
        let (id, versions) = try editedNote(on: a, edits: 40)
        let depths = try depths(a, id).compactMap { $0 }
        #expect(depths.count == 41)
        #expect(depths.max() == RevisionStorage.maximumDepth)
        #expect(depths.filter { $0 > 0 }.count >= 36, "most edits are stored as changes")
        #expect(depths.filter { $0 == 0 }.count == 3, "the first revision and a whole body every \(RevisionStorage.maximumDepth + 1)")
        // A change of one paragraph costs one block hash and a few bytes, not seven hashes.
        let largestChange = try a.database.first(
            "SELECT max(length(body)) FROM revisions WHERE record = ?1 AND depth > 0", [.blob(id.bytes)]) { Int($0.int(0)) }
        #expect(try #require(largestChange) < 2 * 32)
        for (revision, note) in versions { #expect(try a.note(id, at: revision) == note) }
        #expect(try a.history(of: id).count == 41)
        #expect(try a.integrityProblems() == [])
        // The same history on a peer, sent as edits and stored there as changes too.
        try syncAll([a, b])
        for (revision, note) in versions { #expect(try b.note(id, at: revision) == note) }
        #expect(try self.depths(b, id).compactMap { $0 }.filter { $0 > 0 }.count >= 36)
        #expect(try b.integrityProblems() == [])
        #expect(try a.stateHash() == b.stateHash())
    }

    @Test func anEditConcurrentWithAPurgeKeepsItsTextThoughItWasStoredAsAChangeOfAnErasedRevision() throws {
        let (id, versions) = try editedNote(on: a, edits: 3)
        try syncAll([a, b])
        // B edits on top of the last revision, stored as a change of it; A, not having seen
        // it, deletes the note permanently: the tombstone erases that revision.
        var body = versions.last!.1.body
        body[2] = paragraphs(["B's concurrent paragraph"])[0]
        try b.editNote(id, NoteEdit(body: body), now: Self.time(10))
        #expect(try depths(b, id).compactMap { $0 }.max()! > 0)
        _ = try a.purgeNote(id, basedOn: nil, now: Self.time(11))
        try syncAll([a, b])
        for replica in [a, b] {
            let note = try #require(try replica.note(id), "the edit the purge never saw wins")
            #expect(note.body == body)
            #expect(try replica.integrityProblems() == [])
            let erased = try replica.history(of: id).filter { $0.note == nil && !$0.isTombstone }
            #expect(erased.count == 4, "the purge erased the revisions it saw")
        }
        #expect(try a.stateHash() == b.stateHash())
    }

    @Test func rowsWrittenBeforeTheLayoutStayReadableAndTheirEditsAreStoredAsChangesOfThem() throws {
        let (id, versions) = try editedNote(on: a, edits: 3)
        // As release 0.1 wrote them: the whole encoding in `data`, the whole list in `body`.
        for row in try a.revisionRows(record: id) {
            try a.database.run(
                "UPDATE revisions SET body = ?2, data = ?3, depth = NULL WHERE id = ?1",
                [.blob(row.id.bytes), .blob(Replica.concatenated(row.body)), .blob(row.data)])
        }
        #expect(try depths(a, id).allSatisfy { $0 == nil })
        for (revision, note) in versions { #expect(try a.note(id, at: revision) == note) }
        var body = versions.last!.1.body
        body[4] = paragraphs(["an edit after the upgrade"])[0]
        try a.editNote(id, NoteEdit(title: "Storage, renamed", body: body), now: Self.time(20))
        let head = try a.heads(of: id)[0]
        #expect(try a.database.first("SELECT depth FROM revisions WHERE id = ?1", [.blob(head.bytes)]) { Int($0.int(0)) } == 1)
        #expect(try a.note(id)?.body == body && a.note(id)?.title == "Storage, renamed")
        #expect(try a.note(id, at: head).body == body)
        #expect(try a.integrityProblems() == [])
        try syncAll([a, b])
        #expect(try b.note(id, at: head).body == body)
        #expect(try a.stateHash() == b.stateHash())
    }

    /// The libraries release 0.1.0 wrote (Tests/Fixtures, the same files `ReleaseFixtureTests`
    /// serves through a daemon): migrated, every revision still reads back and hashes to its
    /// id, and a new edit is stored as a change of a revision written by that release.
    @Test(arguments: ["alpha", "bravo"]) func theReleasesLibraryMigratesWithEveryRevisionIntact(device: String) throws {
        let fixture = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Fixtures/release-0.1.0/\(device)/data/notes.db").path
        let path = directory.file("\(device).db")
        try FileManager.default.copyItem(atPath: fixture, toPath: path)
        let before = try Database(path: path)
        let revisionsBefore = try before.first("SELECT count(*) FROM revisions") { $0.int(0) }
        #expect(try before.userVersion < Schema.migrations.count)
        let replica = try Replica(path: path)
        #expect(try replica.database.first("SELECT count(*) FROM revisions WHERE depth IS NULL") { $0.int(0) } == revisionsBefore)
        #expect(try replica.integrityProblems() == [])
        let note = try #require(try replica.listNotes().first { $0.conflictOf == nil })
        let current = try #require(try replica.note(note.id))
        let historyBefore = try replica.history(of: note.id)
        #expect(historyBefore.allSatisfy { $0.note != nil || $0.isTombstone })
        var body = current.body
        body.append(paragraphs(["written after the upgrade"])[0])
        try replica.editNote(note.id, NoteEdit(body: body), now: UInt64(Date().timeIntervalSince1970 * 1000) + 3_600_000)
        let head = try replica.heads(of: note.id)[0]
        #expect(try replica.database.first("SELECT depth FROM revisions WHERE id = ?1", [.blob(head.bytes)]) { Int($0.int(0)) } == 1)
        #expect(try replica.note(note.id)?.body == body)
        #expect(try replica.history(of: note.id).dropFirst().map(\.note) == historyBefore.map(\.note))
        #expect(try replica.integrityProblems() == [])
    }

    @Test func aRevisionThatNoLongerHashesToItsIdIsReported() throws {
        let (_, versions) = try editedNote(on: a, edits: 2)
        #expect(try a.integrityProblems() == [])
        // The header is rebuilt from the columns: a changed column changes the encoding.
        try a.database.run("UPDATE revisions SET hlc = hlc + 1 WHERE id = ?1", [.blob(versions.last!.0.bytes)])
        #expect(try a.integrityProblems() == ["1 revision(s) no longer hash to their id"])
    }
}
