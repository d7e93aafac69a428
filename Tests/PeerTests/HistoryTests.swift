import Foundation
import Merge
import Testing
@testable import Peer
import TestSupport

/// Restoring revisions in place and deletes based on what was seen (docs/architecture.md, "History").
@Suite struct HistoryTests {
    let directory: TemporaryDirectory
    let a: Replica, b: Replica

    init() throws {
        directory = try TemporaryDirectory()
        a = try Replica(path: directory.file("a.db"), randomBytes: SeededBytes.source(seed: 11))
        b = try Replica(path: directory.file("b.db"), randomBytes: SeededBytes.source(seed: 12))
    }

    /// Edits spaced wider than the coalescing window, so each one is a revision of its own.
    static let minute: UInt64 = 60_000
    static func time(_ step: Int) -> UInt64 { 1_000_000 + UInt64(step) * 10 * minute }

    /// Creates a note and edits it four times: five revisions, oldest first.
    private func fiveRevisions(on replica: Replica) throws -> (NoteID, [RevisionID]) {
        let id = try replica.createNote(title: "v1", body: paragraphs(["p1 v1", "p2", "p3"]), tags: ["one"], now: Self.time(0))
        var revisions = try replica.heads(of: id)
        for version in 2...5 {
            try replica.editNote(
                id, NoteEdit(title: "v\(version)", body: paragraphs(["p1 v\(version)", "p2", "p3"]), pinned: version % 2 == 0,
                             addTags: ["t\(version)"]),
                now: Self.time(version))
            revisions += try replica.heads(of: id)
        }
        #expect(Set(revisions).count == 5)
        return (id, revisions)
    }

    @Test func restoringTheSecondOfFiveRevisionsBringsItsContentBackEverywhere() throws {
        let (id, revisions) = try fiveRevisions(on: a)
        let second = try a.note(id, at: revisions[1])
        let headBefore = try a.heads(of: id)
        let (restored, changed) = try a.restoreRevision(id, to: revisions[1], now: Self.time(6))
        #expect(changed)
        for field in [\Note.title] { #expect(restored[keyPath: field] == second[keyPath: field]) }
        #expect(restored.body == second.body && restored.tags == second.tags && restored.pinned == second.pinned)
        #expect(restored.folder == second.folder && restored.color == second.color)
        // A new revision on top of the old head: nothing in between is lost.
        let head = try #require(try a.heads(of: id).first)
        #expect(try a.heads(of: id).count == 1)
        let history = try a.history(of: id)
        #expect(history.count == 6)
        #expect(history.first?.revision == head && history.first?.parents == headBefore)
        #expect(Replica.restoreSources(history)[head] == revisions[1])
        try syncAll([a, b])
        let onB = try #require(try b.note(id))
        #expect(onB.title == "v2" && onB.body == second.body && onB.tags == second.tags)
        // Every device derives the same "restored from" from the DAG.
        #expect(Replica.restoreSources(try b.history(of: id))[head] == revisions[1])
        #expect(try a.stateHash() == b.stateHash())
    }

    @Test func restoringWhatTheNoteShowsWritesNothing() throws {
        let (id, revisions) = try fiveRevisions(on: a)
        let vector = a.vector
        let (_, changed) = try a.restoreRevision(id, to: revisions[4], now: Self.time(6))
        #expect(!changed)
        #expect(a.vector == vector)
    }

    @Test func editsRightAfterARestoreDoNotFoldIntoIt() throws {
        let (id, revisions) = try fiveRevisions(on: a)
        try a.restoreRevision(id, to: revisions[0], now: Self.time(6))
        let restore = try a.heads(of: id)
        // Within the coalescing window, never offered: an ordinary edit would be replaced.
        try a.editNote(id, NoteEdit(title: "after"), now: Self.time(6) + 1_000)
        let history = try a.history(of: id)
        #expect(history.count == 7)
        #expect(history.first?.parents == restore)
        #expect(Replica.restoreSources(history)[restore[0]] == revisions[0])
    }

    @Test func restoringOnOneDeviceWhileAnotherEditsAnotherParagraphMergesBoth() throws {
        let (id, revisions) = try fiveRevisions(on: a)
        try syncAll([a, b])
        try a.restoreRevision(id, to: revisions[1], now: Self.time(6))
        try b.editNote(id, NoteEdit(body: paragraphs(["p1 v5", "p2", "p3 edited on b"])), now: Self.time(6) + 5)
        try syncAll([a, b])
        for replica in [a, b] {
            let note = try #require(try replica.note(id))
            #expect(note.body == paragraphs(["p1 v2", "p2", "p3 edited on b"]))
            #expect(try replica.listNotes(NoteFilter(conflictCopies: true)).isEmpty)
        }
        #expect(try a.stateHash() == b.stateHash())
    }

    @Test func aRevisionAPurgeErasedSaysSo() throws {
        let id = try a.createNote(title: "Doc", body: paragraphs(["secret"]), now: Self.time(0))
        let first = try a.heads(of: id)[0]
        try syncAll([a, b])
        // A purge on a, an edit on b it did not see: the edit keeps the note, the purge erases
        // everything before it.
        try a.purgeNote(id, now: Self.time(1))
        try b.editNote(id, NoteEdit(body: paragraphs(["secret", "new on b"])), now: Self.time(1) + 1)
        try syncAll([a, b])
        #expect(try a.note(id) != nil)
        #expect(throws: HistoryError.erasedByPurge(first)) { try a.note(id, at: first) }
        #expect(throws: HistoryError.erasedByPurge(first)) { try a.restoreRevision(id, to: first, now: Self.time(2)) }
        let tombstone = try #require(try a.history(of: id).first { $0.isTombstone }).revision
        #expect(throws: HistoryError.isDeletion(tombstone)) { try a.note(id, at: tombstone) }
        #expect(HistoryError.erasedByPurge(first).description.contains("erased by a permanent delete"))
    }

    @Test func revisionReferencesResolveByUniquePrefix() throws {
        let (id, revisions) = try fiveRevisions(on: a)
        #expect(try a.resolveRevision(String(revisions[2].description.prefix(12)).uppercased(), of: id) == revisions[2])
        #expect(try a.resolveRevision(revisions[3].description, of: id) == revisions[3])
        #expect(throws: HistoryError.badRevisionReference("ab")) { try a.resolveRevision("ab", of: id) }
        #expect(throws: HistoryError.badRevisionReference("xyz1")) { try a.resolveRevision("xyz1", of: id) }
        let missing = revisions[0].description.hasPrefix("0000") ? "ffff" : "0000"
        if !revisions.contains(where: { $0.description.hasPrefix(missing) }) {
            #expect(throws: HistoryError.noSuchRevision(note: id, prefix: missing)) { try a.resolveRevision(missing, of: id) }
        }
    }

    /// The race from the issue, made deterministic: D reads the note, C's paragraph arrives,
    /// then D's purge, based on what D read, lands. C's text survives on both.
    @Test func aPurgeBasedOnStaleHeadsKeepsTheEditItsAuthorNeverSaw() throws {
        let (c, d) = (a, b)
        let id = try c.createNote(title: "Shared", body: paragraphs(["first"]), now: Self.time(0))
        try syncAll([c, d])
        let seen = try d.heads(of: id)  // D shows the note for confirmation
        try c.editNote(id, NoteEdit(body: paragraphs(["first", "added on C"])), now: Self.time(1))
        let cEdit = try c.heads(of: id)
        try pull(into: d, from: c)  // arrives 9 ms later
        let outcome = try d.purgeNote(id, basedOn: seen, now: Self.time(1) + 9)
        #expect(!outcome.purged)
        #expect(outcome.unseen.map(\.revision) == cEdit)
        #expect(outcome.unseen.first?.author == c.replicaID)
        try syncAll([c, d])
        for replica in [c, d] {
            let note = try #require(try replica.note(id))
            #expect(note.body.map(\.text).contains("added on C"))
        }
        #expect(try c.stateHash() == d.stateHash())
        // Purging again with what D now shows deletes it.
        let again = try d.purgeNote(id, basedOn: try d.heads(of: id), now: Self.time(2))
        #expect(again.purged && again.unseen.isEmpty)
        try syncAll([c, d])
        #expect(try c.note(id) == nil)
    }

    @Test func aPurgeWithoutBaseHeadsDeletesWhatIsHere() throws {
        let id = try a.createNote(title: "Shared", body: paragraphs(["first"]), now: Self.time(0))
        try syncAll([a, b])
        try a.editNote(id, NoteEdit(body: paragraphs(["first", "added"])), now: Self.time(1))
        try pull(into: b, from: a)
        #expect(try b.purgeNote(id, basedOn: nil, now: Self.time(2)).purged)
        #expect(try b.note(id) == nil)
        let other = try a.createNote(title: "x", body: [], now: Self.time(3))
        #expect(throws: HistoryError.unknownBaseHeads(note: other)) {
            _ = try a.purgeNote(other, basedOn: [Sodium.hash256([1, 2, 3])], now: Self.time(3))
        }
        #expect(try a.note(other) != nil)
    }
}
