import Control
@testable import Engine
import EngineHarness
import Foundation
import Peer
import Testing
import TestSupport

/// The history methods through the engine, as the control handler runs them.
@Suite(.serialized) struct EngineHistoryTests {
    @Test func aPurgeWithTheHeadsOfAnOlderCopyIsKeptAndSaysWhoChangedIt() throws {
        let device = try LoneDevice(name: "laptop")
        try device.run { engine in
            let note = try engine.notesCreate(NoteCreateParams(title: "Plan", html: "<p>one</p>"))
            let seen = try engine.notesGet(NoteGetParams(id: note.id)).heads
            try engine.replica.markOffered()  // the next edit is a revision of its own
            _ = try engine.notesUpdate(NoteUpdateParams(id: note.id, html: "<p>one</p><p>two</p>"))
            let kept = try engine.notesPurge(NotePurgeParams(id: note.id, baseHeads: seen))
            #expect(!kept.purged)
            #expect(kept.unseen.map(\.deviceName) == ["laptop"])
            #expect(try engine.notesGet(NoteGetParams(id: note.id, format: .text)).body.contains("two"))
            // A reference that is not a revision id is the caller's mistake.
            #expect(throws: RPCError.self) { try engine.notesPurge(NotePurgeParams(id: note.id, baseHeads: ["nothex"])) }
            let current = try engine.notesGet(NoteGetParams(id: note.id)).heads
            #expect(try engine.notesPurge(NotePurgeParams(id: note.id, baseHeads: current)).purged)
        }
    }

    @Test func restoringAndReadingRevisionsThroughTheEngine() throws {
        let device = try LoneDevice(name: "laptop")
        try device.run { engine in
            let note = try engine.notesCreate(NoteCreateParams(title: "v1", html: "<p>first</p>"))
            try engine.replica.markOffered()
            _ = try engine.notesUpdate(NoteUpdateParams(id: note.id, title: "v2", html: "<p>second</p>"))
            let history = try engine.notesHistory(NoteHistoryParams(id: note.id, patch: true))
            #expect(history.count == 2)
            let first = history[1].revision
            #expect(history[0].patch?.map(\.op) == [.removed, .added])
            let old = try engine.notesGetRevision(NoteRevisionParams(id: note.id, revision: String(first.prefix(8)), format: .html))
            #expect(old.summary.title == "v1" && old.body == "<p>first</p>" && old.heads == [first])
            let restored = try engine.notesRestoreRevision(RestoreRevisionParams(id: note.id, revision: String(first.prefix(12))))
            #expect(restored.changed && restored.restoredFrom == first && restored.note.title == "v1")
            let after = try engine.notesHistory(NoteHistoryParams(id: note.id))
            #expect(after.count == 3 && after[0].restoredFrom == first)
            do {
                _ = try engine.notesRestoreRevision(RestoreRevisionParams(id: note.id, revision: "0000000000000000"))
                Issue.record("an unknown revision was accepted")
            } catch let error as RPCError {
                #expect(error.code == .notFound)
            }
        }
    }
}
