import Foundation
import Merge
import Testing
@testable import Peer
import TestSupport

/// The note counts (`status`'s, and each folder's in listings) kept by the replica as it
/// writes notes and stored once per transaction (schema 13, docs/decisions.md "Note counts
/// kept by the replica"), checked against a recount of the notes themselves.
@Suite struct NoteCountsTests {
    let directory: TemporaryDirectory
    let a: Replica, b: Replica

    init() throws {
        directory = try TemporaryDirectory()
        a = try Replica(path: directory.file("a.db"), randomBytes: SeededBytes.source(seed: 41))
        b = try Replica(path: directory.file("b.db"), randomBytes: SeededBytes.source(seed: 42))
    }

    struct Undone: Error {}

    /// The kept counts, and what counting the notes gives.
    private func counts(_ replica: Replica) throws -> (kept: [String], counted: [String]) {
        let kept = try replica.database.rows("SELECT hex(folder), notes FROM folder_note_counts WHERE notes != 0 ORDER BY 1") { "\($0.text(0)) \($0.int(1))" }
            + [String(try replica.noteCount)]
        let counted = try replica.database.rows(
            "SELECT hex(folder), count(*) FROM notes WHERE trashed = 0 AND folder IS NOT NULL GROUP BY folder ORDER BY 1") { "\($0.text(0)) \($0.int(1))" }
            + [String(try replica.database.first("SELECT count(*) FROM notes") { $0.int(0) } ?? -1)]
        return (kept, counted)
    }

    @Test func countsFollowNotesCreatedMovedTrashedPurgedAndSyncedAndAFailedNestedWriteLeavesThemAlone() throws {
        let work = try a.createFolder(name: "Work", now: 100)
        let home = try a.createFolder(name: "Home", now: 101)
        var notes: [NoteID] = []
        try a.inOneTransaction {
            for index in 0..<12 {
                notes.append(try a.createNote(title: "N\(index)", body: [], folder: [work, home, nil][index % 3], now: 1_000 + UInt64(index)))
            }
            // A nested write that fails: its note, and its share of the counts, are undone.
            #expect(throws: Undone.self) {
                try a.write {
                    _ = try a.createNote(title: "undone", body: [], folder: work, now: 1_100)
                    throw Undone()
                }
            }
        }
        #expect(try a.noteCount == 12)
        #expect(try a.folderSummary(work)?.noteCount == 4)
        try a.editNote(notes[0], NoteEdit(folder: .some(home)), now: 2_000)
        try a.editNote(notes[2], NoteEdit(folder: .some(work)), now: 2_001)
        _ = try a.trashNote(notes[3], now: 2_002)
        _ = try a.trashNote(notes[4], now: 2_003)
        try a.editNote(notes[4], NoteEdit(folder: .some(nil), trashed: false), now: 2_004)
        try a.purgeNote(notes[5], now: 2_005)
        #expect(try a.noteCount == 11)
        #expect(try a.folderSummary(work)?.noteCount == 3)
        #expect(try a.folderSummary(home)?.noteCount == 4)
        var (kept, counted) = try counts(a)
        #expect(kept == counted)

        // The same notes arriving on another device (a catch-up) are counted there too, and so
        // are later moves, trashings and purges of notes it already holds.
        try syncAll([a, b])
        (kept, counted) = try counts(b)
        #expect(kept == counted)
        #expect(try b.noteCount == 11)
        try a.editNote(notes[1], NoteEdit(folder: .some(work)), now: 3_000)
        _ = try a.trashNote(notes[6], now: 3_001)
        try a.purgeNote(notes[7], now: 3_002)
        try syncAll([a, b])
        (kept, counted) = try counts(b)
        #expect(kept == counted)
        #expect(try b.noteCount == 10)
        #expect(try b.folderSummary(work)?.noteCount == 3)
        #expect(try b.folderSummary(home)?.noteCount == 2)
        #expect(try b.integrityProblems() == [])
        #expect(try a.integrityProblems() == [])
    }

    @Test func migration13DropsTheCountingTriggersAndCountsAgain() throws {
        let work = try a.createFolder(name: "Work", now: 100)
        for index in 0..<9 {
            let id = try a.createNote(title: "N\(index)", body: [], folder: index % 2 == 0 ? work : nil, now: 1_000 + UInt64(index))
            if index % 4 == 0 { _ = try a.trashNote(id, now: 2_000) }
        }
        let path = directory.file("schema12.db")
        try a.database.execute("VACUUM INTO '\(path)'")
        do {
            // Back to schema 12: its triggers, and counts gone wrong for the recount to mend.
            let older = try Database(path: path)
            try BlockPacksTests.undoMigration16(older)
            try older.execute(
                RevisionsByRecordTests.undoMigration14 + """
                CREATE TRIGGER notes_counted_on_insert AFTER INSERT ON notes BEGIN
                    UPDATE meta SET value = value + 1 WHERE key = 'note_count';
                END;
                CREATE TRIGGER notes_counted_on_delete AFTER DELETE ON notes BEGIN
                    UPDATE meta SET value = value - 1 WHERE key = 'note_count';
                END;
                CREATE TRIGGER notes_counted_on_update AFTER UPDATE OF folder, trashed ON notes BEGIN
                    UPDATE meta SET value = value WHERE key = 'note_count';
                END;
                UPDATE meta SET value = 1000 WHERE key = 'note_count';
                UPDATE folder_note_counts SET notes = 77;
                PRAGMA user_version = 12;
                """)
        }
        let migrated = try Replica(path: path)
        #expect(try migrated.database.first("SELECT count(*) FROM sqlite_master WHERE type = 'trigger'") { $0.int(0) } == 0)
        #expect(try migrated.noteCount == 9)
        #expect(try migrated.folderSummary(work)?.noteCount == 2)
        let note = try migrated.createNote(title: "after", body: [], folder: work, now: 3_000)
        #expect(try migrated.noteCount == 10)
        #expect(try migrated.folderSummary(work)?.noteCount == 3)
        try migrated.purgeNote(note, now: 3_001)
        let (kept, counted) = try counts(migrated)
        #expect(kept == counted)
        #expect(try migrated.integrityProblems() == [])
    }
}
