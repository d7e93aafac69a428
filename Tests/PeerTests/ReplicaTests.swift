import Foundation
import Merge
import Testing
@testable import Peer
import TestSupport

@Suite struct ReplicaLocalTests {
    @Test func createdNoteSurvivesReopening() throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("notes.db")
        var id: NoteID
        do {
            let replica = try Replica(path: path)
            let folder = try replica.createFolder(name: "Work", now: 1_000)
            id = try replica.createNote(
                title: "Plan", body: paragraphs(["first", "second"]), folder: folder, tags: ["a", "b"], pinned: true,
                color: "red", now: 2_000)
        }
        let reopened = try Replica(path: path)
        let note = try #require(try reopened.note(id))
        #expect(note.title == "Plan")
        #expect(note.body == paragraphs(["first", "second"]))
        #expect(note.tags == ["a", "b"])
        #expect(note.pinned && note.color == "red")
        #expect(note.created == 2_000)
        #expect(try reopened.integrityProblems() == [])
    }

    @Test func aSecondOpenerOfTheSameDatabaseGetsAClearError() throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("notes.db")
        let first = try Replica(path: path)
        #expect(throws: FileLock.Busy.self) { _ = try Replica(path: path) }
        _ = first
        let error = FileLock.Busy(path: path + ".lock")
        #expect(error.description.contains("another notesd is already using this data directory"))
    }

    @Test func aCorruptDatabaseRefusesToOpen() throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("notes.db")
        do {
            let replica = try Replica(path: path)
            for index in 0..<200 { _ = try replica.createNote(title: "n\(index)", body: paragraphs(["body \(index)"]), now: 1_000) }
            try replica.database.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        }
        // Scribble over the middle of the file, where the b-tree pages are.
        let handle = try #require(FileHandle(forUpdatingAtPath: path))
        let size = try handle.seekToEnd()
        try handle.seek(toOffset: size / 2)
        try handle.write(contentsOf: Data(repeating: 0xA5, count: 8_192))
        try handle.close()
        #expect {
            _ = try Replica(path: path)
        } throws: { error in
            guard let error = error as? ReplicaError, case .corrupt = error else { return false }
            return error.description.contains("notesd will not start on it")
        }
    }

    @Test func aCleanlyClosedReplicaOpensWithoutTheWholeFileCheckOnce() throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("notes.db")
        do {
            let replica = try Replica(path: path, check: .afterUncleanShutdown)
            #expect(replica.checkedAtOpen)  // a new file was never closed cleanly
            try replica.markClosedCleanly()
        }
        do {
            let replica = try Replica(path: path, check: .afterUncleanShutdown)
            #expect(!replica.checkedAtOpen)
            #expect(try Replica.quickCheck(path: path) == [])
            // Not marked again: as if this process crashed.
        }
        #expect(try Replica(path: path, check: .afterUncleanShutdown).checkedAtOpen)
        do {
            let replica = try Replica(path: path)
            try replica.markClosedCleanly()
        }
        #expect(try Replica(path: path, check: .always).checkedAtOpen)
    }

    @Test func aNoteTooLargeToSyncIsRefusedAndNothingIsSaved() throws {
        let directory = try TemporaryDirectory()
        let replica = try Replica(path: directory.file("notes.db"))
        let id = try replica.createNote(title: "Photo", body: paragraphs(["small"]), now: 1_000)
        let huge = paragraphs([String(repeating: "x", count: Replica.maximumRevisionWithBlocks)])
        #expect {
            _ = try replica.createNote(title: "Huge", body: huge, now: 2_000)
        } throws: { error in
            (error as? ReplicaError).map { "\($0)".contains("too large to sync") } ?? false
        }
        #expect(throws: ReplicaError.self) { try replica.editNote(id, NoteEdit(body: huge), now: 3_000) }
        #expect(try replica.noteCount == 1)
        #expect(try replica.note(id)?.body.count == 1 && replica.note(id)?.title == "Photo")
        #expect(try replica.note(id)?.body.first?.content == "small")
        // Just under the limit is fine.
        let large = paragraphs([String(repeating: "y", count: Replica.maximumRevisionWithBlocks - 4_096)])
        #expect(throws: Never.self) { try replica.editNote(id, NoteEdit(body: large), now: 4_000) }
    }

    @Test func editsChangeOnlyWhatTheyName() throws {
        let directory = try TemporaryDirectory()
        let replica = try Replica(path: directory.file("notes.db"))
        let id = try replica.createNote(title: "T", body: paragraphs(["x"]), tags: ["keep", "drop"], now: 1_000)
        try replica.editNote(id, NoteEdit(title: "T2", addTags: ["new"], removeTags: ["drop"]), now: 2_000)
        let note = try #require(try replica.note(id))
        #expect(note.title == "T2")
        #expect(note.tags == ["keep", "new"])
        #expect(note.body == paragraphs(["x"]))
        #expect(note.modified == 2_000)
    }

    @Test func anEditThatChangesNothingWritesNothing() throws {
        let directory = try TemporaryDirectory()
        let replica = try Replica(path: directory.file("notes.db"))
        let id = try replica.createNote(title: "T", body: paragraphs(["x"]), now: 1_000)
        let before = replica.vector
        try replica.editNote(id, NoteEdit(title: "T"), now: 2_000)
        #expect(replica.vector == before)
    }

    @Test func trashAndRestoreKeepTheFolder() throws {
        let directory = try TemporaryDirectory()
        let replica = try Replica(path: directory.file("notes.db"))
        let folder = try replica.createFolder(name: "Home", now: 1_000)
        let id = try replica.createNote(title: "T", body: [], folder: folder, now: 1_000)
        try replica.trashNote(id, now: 2_000)
        #expect(try replica.listNotes().isEmpty)
        #expect(try replica.listNotes(NoteFilter(trashed: true)).map(\.id) == [id])
        try replica.restoreNote(id, now: 3_000)
        #expect(try replica.listNotes(NoteFilter(folder: .some(folder))).map(\.id) == [id])
    }

    @Test func purgeRemovesContentAndFreesBlocks() throws {
        let directory = try TemporaryDirectory()
        let replica = try Replica(path: directory.file("notes.db"))
        let keep = try replica.createNote(title: "keep", body: paragraphs(["shared paragraph"]), now: 1_000)
        let gone = try replica.createNote(title: "gone", body: paragraphs(["shared paragraph", "secret words"]), now: 1_000)
        try replica.markOffered()  // no coalescing: keep a real history
        try replica.editNote(gone, NoteEdit(body: paragraphs(["shared paragraph", "more secret words"])), now: 2_000)
        try replica.purgeNote(gone, now: 3_000)
        #expect(try replica.note(gone) == nil)
        #expect(try replica.note(keep)?.body == paragraphs(["shared paragraph"]))
        #expect(try replica.storedBlockCount() == 1)
        let leftovers = try replica.database.first(
            "SELECT count(*) FROM revisions WHERE record = ?1 AND purged = 0 AND tombstone = 0", [.blob(gone.bytes)]) { $0.int(0) }
        #expect(leftovers == 0)
        let history = try replica.history(of: gone)
        #expect(!history.isEmpty, "a purged note keeps its place in history")
        #expect(history.allSatisfy { $0.note == nil })
        #expect(try replica.integrityProblems() == [])
    }

    @Test func unofferedEditsCoalesceIntoOneRevision() throws {
        let directory = try TemporaryDirectory()
        let replica = try Replica(path: directory.file("notes.db"))
        let id = try replica.createNote(title: "T", body: paragraphs(["v0"]), now: 1_000)
        for version in 1...50 {
            try replica.editNote(id, NoteEdit(body: paragraphs(["v\(version)"])), now: 1_000 + UInt64(version) * 1_000)
        }
        #expect(try replica.history(of: id).count == 1)
        #expect(replica.vector[replica.replicaID] == 1)
        #expect(try replica.note(id)?.body == paragraphs(["v50"]))
        // Blocks of replaced revisions are freed.
        #expect(try replica.storedBlockCount() == 1)
        // Once offered to a peer, the next edit is a new revision.
        try replica.markOffered()
        try replica.editNote(id, NoteEdit(body: paragraphs(["after offer"])), now: 60_000)
        #expect(try replica.history(of: id).count == 2)
        // A pause longer than the window also starts a new revision.
        try replica.editNote(id, NoteEdit(body: paragraphs(["much later"])), now: 60_000 + Replica.coalescingWindowMilliseconds + 1)
        #expect(try replica.history(of: id).count == 3)
        #expect(try replica.integrityProblems() == [])
    }

    @Test func foldersMoveRenameAndDelete() throws {
        let directory = try TemporaryDirectory()
        let replica = try Replica(path: directory.file("notes.db"))
        let work = try replica.createFolder(name: "Work", now: 1_000)
        let projects = try replica.createFolder(name: "Projects", parent: work, now: 1_000)
        #expect(try replica.listFolders().map(\.path) == [["Work"], ["Work", "Projects"]])
        #expect(throws: ReplicaError.self) { try replica.moveFolder(work, to: projects, now: 2_000) }
        #expect(throws: ReplicaError.self) { _ = try replica.createFolder(name: "a/b", now: 2_000) }
        try replica.renameFolder(projects, to: "Plans", now: 2_000)
        let note = try replica.createNote(title: "n", body: [], folder: projects, now: 2_000)
        try replica.deleteFolder(work, now: 3_000)
        #expect(try replica.listFolders().map(\.path) == [["Plans"]])
        try replica.deleteFolder(projects, now: 3_000)
        #expect(try replica.listNotes(NoteFilter(folder: .some(nil))).map(\.id) == [note])
    }
}

@Suite struct InviteStoreTests {
    @Test func anInviteAdmitsOneDeviceOnceAndOnlyBeforeItExpires() throws {
        let directory = try TemporaryDirectory()
        let replica = try Replica(path: directory.file("notes.db"))
        try replica.storeInvite(secretID: "abc", secret: [1, 2, 3], now: 1_000, lifetime: 600_000)
        let first = [UInt8](repeating: 1, count: 32), second = [UInt8](repeating: 2, count: 32)
        func refusal(_ body: () throws -> Void) -> InviteRefusal? {
            do { try body() } catch let error as InviteRefusalOrError { if case .refused(let refusal) = error { return refusal } } catch {}
            return nil
        }
        #expect(refusal { try replica.admit(publicKey: first, name: "late", inviteSecretID: "abc", now: 601_000) } == .expired)
        #expect(refusal { try replica.admit(publicKey: first, name: "new", inviteSecretID: "nope", now: 2_000) } == .unknown)
        #expect(refusal { try replica.admit(publicKey: first, name: "new", inviteSecretID: "abc", now: 2_000) } == nil)
        #expect(try replica.listDevices().map(\.device.name) == ["new"])
        #expect(refusal { try replica.admit(publicKey: second, name: "other", inviteSecretID: "abc", now: 3_000) } == .used)
        #expect(try replica.listDevices().count == 1)
    }
}
