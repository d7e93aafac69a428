import Foundation
import Merge
import Testing
@testable import Peer
import TestSupport

/// `Replica.restoreBackup`: a copy installed under a new replica id; of its unoffered own
/// entries, those the device may have replaced are dropped so the household's newer versions
/// come back, the rest kept (docs/architecture.md, "Backups").
@Suite struct BackupRestoreTests {
    @Test func aRestoredCopyTakesBackWhatReplacedItsUnofferedEntries() throws {
        let directory = try TemporaryDirectory()
        let aPath = directory.file("a.db")
        var a: Replica? = try Replica(path: aPath, randomBytes: SeededBytes.source(seed: 21))
        let b = try Replica(path: directory.file("b.db"), randomBytes: SeededBytes.source(seed: 22))
        try a!.recordHousehold("h1")
        let seen = try a!.createNote(title: "seen", body: paragraphs(["seen"]), now: 1_000)
        try pull(into: b, from: a!)
        try a!.markOffered()
        // Offered to nobody when the copy is taken:
        let draft = try a!.createNote(title: "draft", body: paragraphs(["one"]), now: 2_000)
        let copy = directory.file("copy.db")
        _ = try OnlineBackup.copy(from: aPath, to: copy)
        // …then replaced under the same (replica, seq), and sent.
        try a!.editNote(draft, NoteEdit(body: paragraphs(["one", "two"])), now: 3_000)
        #expect(try a!.history(of: draft).count == 1, "the edit folded into the unoffered entry")
        try pull(into: b, from: a!)
        let oldReplica = a!.replicaID
        a = nil

        #expect(throws: BackupRestoreError.otherHousehold(path: copy, theirs: "h1", ours: "h2")) {
            _ = try Replica.restoreBackup(from: copy, toDatabase: aPath, household: "h2", now: 4_000)
        }
        let report = try Replica.restoreBackup(
            from: copy, toDatabase: aPath, household: "h1", now: 4_000, randomBytes: SeededBytes.source(seed: 23))
        #expect(report.oldReplica == oldReplica && report.newReplica != oldReplica)
        #expect(report.droppedEntries == 1 && report.keptEntries == 0)
        #expect(report.previousLibrary == aPath + ".before-restore-4000")
        let restored = try Replica(path: aPath)
        #expect(restored.replicaID == report.newReplica)
        #expect(try restored.integrityProblems() == [])
        #expect(try restored.note(seen) != nil)
        #expect(try restored.note(draft) == nil, "the unoffered draft is left out")
        #expect(restored.vector[oldReplica] == 1)
        try pull(into: restored, from: b)
        #expect(try restored.note(draft)?.body == paragraphs(["one", "two"]))
        #expect(try restored.listNotes(NoteFilter(conflictCopies: true)).isEmpty)
        #expect(try restored.stateHash() == b.stateHash())
        // The new id writes from seq 1, and the household takes it.
        try restored.editNote(seen, NoteEdit(title: "seen, after the restore"), now: 5_000)
        try pull(into: b, from: restored)
        #expect(try b.note(seen)?.title == "seen, after the restore")
        #expect(try restored.integrityProblems() == [] && b.integrityProblems() == [])
    }

    /// Found by simulation seed 12471: a folder deleted on A, not yet offered when the copy was
    /// taken. The deletion erased its parent's content at once; dropping the tombstone at the
    /// restore left the folder's one revision erased on A alone, live on B, and both holding
    /// the same heads, so nothing was ever sent again. An unoffered tombstone cannot have been
    /// replaced since, so the restore keeps it, and so do unoffered revisions with children.
    @Test func aRestoredCopyKeepsTheUnofferedEntriesNothingCanHaveReplaced() throws {
        let directory = try TemporaryDirectory()
        let aPath = directory.file("a.db")
        var a: Replica? = try Replica(path: aPath, randomBytes: SeededBytes.source(seed: 31))
        let b = try Replica(path: directory.file("b.db"), randomBytes: SeededBytes.source(seed: 32))
        try a!.recordHousehold("h1")
        let folder = try a!.createFolder(name: "Old", parent: nil, now: 1_000)
        let note = try a!.createNote(title: "kept", body: paragraphs(["one"]), now: 1_000)
        try pull(into: b, from: a!)
        try a!.markOffered()
        // Offered to nobody when the copy is taken: the folder deleted; the note edited twice,
        // the second edit out of the coalescing window, so the first has a child.
        try a!.deleteFolder(folder, now: 2_000)
        try a!.editNote(note, NoteEdit(body: paragraphs(["one", "two"])), now: 2_000)
        try a!.editNote(note, NoteEdit(body: paragraphs(["one", "two", "three"])), now: 2_000 + Replica.coalescingWindowMilliseconds + 1)
        let copy = directory.file("copy.db")
        _ = try OnlineBackup.copy(from: aPath, to: copy)
        #expect(try a!.folder(folder) == nil)
        a = nil

        let report = try Replica.restoreBackup(
            from: copy, toDatabase: aPath, household: "h1", now: 10_000_000, randomBytes: SeededBytes.source(seed: 33))
        #expect(report.droppedEntries == 1, "the note's last edit, its one head, may have been replaced since")
        #expect(report.keptEntries == 2, "the deletion and the first edit cannot have been")
        let restored = try Replica(path: aPath)
        #expect(try restored.integrityProblems() == [])
        #expect(try restored.folder(folder) == nil, "the deletion stays")
        #expect(try restored.note(note)?.body == paragraphs(["one", "two"]))
        #expect(restored.vector[report.newReplica] == 2)
        try pull(into: b, from: restored)
        try pull(into: restored, from: b)
        #expect(try b.folder(folder) == nil, "the deletion reaches the household")
        #expect(try restored.stateHash() == b.stateHash())
        #expect(try restored.integrityProblems() == [] && b.integrityProblems() == [])
    }

    @Test func whatIsNotANotesdBackupIsNamed() throws {
        let directory = try TemporaryDirectory()
        let text = directory.file("notes.txt")
        try Data("hello\n".utf8).write(to: URL(fileURLWithPath: text))
        #expect(throws: BackupRestoreError.notSQLite(path: text, looksLike: "it looks like text: \"hello …\"")) {
            _ = try Replica.describeBackup(at: text)
        }
        let other = directory.file("other.db")
        do {
            let database = try Database(path: other)
            try database.execute("CREATE TABLE recipes (name TEXT)")
        }
        #expect(throws: BackupRestoreError.notNotesd(path: other, tables: ["recipes"])) { _ = try Replica.describeBackup(at: other) }
        let bare = directory.file("bare.db")
        _ = try Replica(path: bare)
        #expect(throws: BackupRestoreError.noHousehold(path: bare)) {
            _ = try Replica.restoreBackup(from: bare, toDatabase: directory.file("target.db"), household: "h", now: 1)
        }
        #expect(!FileManager.default.fileExists(atPath: directory.file("target.db")))
    }
}
