import Foundation
import Merge
import Testing
@testable import Peer
import TestSupport

/// The queries that read only what they answer about (`Replica+Lookups.swift`) give the same
/// answers as the whole-library queries they replace.
@Suite struct ReplicaLookupTests {
    let directory: TemporaryDirectory
    let a: Replica, b: Replica

    init() throws {
        directory = try TemporaryDirectory()
        a = try Replica(path: directory.file("a.db"), randomBytes: SeededBytes.source(seed: 21))
        b = try Replica(path: directory.file("b.db"), randomBytes: SeededBytes.source(seed: 22))
    }

    /// Every live folder, one at a time, as `listFolders()` resolves the whole tree.
    private func expectFolderLookupsMatchTheTree(_ replica: Replica) throws {
        let listed = try replica.listFolders()
        for folder in listed {
            #expect(try replica.folderSummary(folder.id) == folder)
            #expect(try replica.folderPath(folder.id) == folder.path)
            #expect(try replica.folderPaths()[folder.id] == folder.path)
            #expect(try replica.subfolders(of: folder.id).map(\.id) == listed.filter { $0.parent == folder.id }.map(\.id).sorted())
            #expect(try replica.folders(named: folder.name).map(\.id) == listed.filter { $0.name == folder.name }.map(\.id).sorted())
            // The kept count equals a recount.
            #expect(folder.noteCount == (try replica.listNotes(NoteFilter(folder: .some(folder.id))).count))
        }
        #expect(try replica.noteCount == (try replica.noteIDs().count))
        #expect(try replica.integrityProblems() == [])
    }

    @Test func oneFolderAlongItsChainResolvesAsTheWholeTreeDoesCyclesIncluded() throws {
        // Top ← Left ← Inner, Right, and Tail under Left: concurrent moves make Left and Right
        // contain each other; the later move (b's) is cut.
        let top = try a.createFolder(name: "Top", now: 1_000)
        let left = try a.createFolder(name: "Left", parent: top, now: 1_000)
        let inner = try a.createFolder(name: "Inner", parent: left, now: 1_000)
        let right = try a.createFolder(name: "Right", now: 1_000)
        let tail = try a.createFolder(name: "Tail", parent: inner, now: 1_000)
        let other = try a.createFolder(name: "Inner", now: 1_000)
        for (index, folder) in [top, left, inner, right, tail, other, inner].enumerated() {
            _ = try a.createNote(title: "In \(index)", body: paragraphs(["x"]), folder: folder, now: 1_000 + UInt64(index))
        }
        try syncAll([a, b])
        try a.moveFolder(left, to: right, now: 2_000)
        try b.moveFolder(right, to: inner, now: 3_000)
        try syncAll([a, b])
        // The cycle Left → Right → Inner → Left is real and cut at Right (the latest move).
        #expect(try a.folderSummary(right)?.parent == nil)
        #expect(try a.folderPath(tail) == ["Right", "Left", "Inner", "Tail"])
        try expectFolderLookupsMatchTheTree(a)
        try expectFolderLookupsMatchTheTree(b)

        // Deleting a folder in the middle: its children go to the top level, its notes to
        // Uncategorized, and the counts follow moves, trash and purge.
        try a.deleteFolder(left, now: 4_000)
        let notes = try a.listNotes()
        try a.editNote(notes[0].id, NoteEdit(folder: .some(other)), now: 5_000)
        try a.trashNote(notes[1].id, now: 5_000)
        try a.purgeNote(notes[2].id, now: 5_000)
        #expect(try a.folderSummary(left) == nil)
        try expectFolderLookupsMatchTheTree(a)
        try syncAll([a, b])
        try expectFolderLookupsMatchTheTree(b)
    }

    @Test func anIdPrefixIsARangeOfIds() throws {
        var ids: [NoteID] = []
        for index in 0..<300 { ids.append(try a.createNote(title: "N\(index)", body: [], now: 1_000 + UInt64(index))) }
        let folder = try a.createFolder(name: "F", now: 9_000)
        for id in ids.prefix(40) + [folder] {
            let hex = Hex.encode(id.bytes)
            for length in [1, 2, 3, 4, 5, 12, 31, 32] {
                let prefix = String(hex.prefix(length))
                let expected = ids.filter { Hex.encode($0.bytes).hasPrefix(prefix) }.sorted()
                #expect(try a.noteIDs(withHexPrefix: prefix, limit: 1_000) == expected)
                #expect(try a.noteIDs(withHexPrefix: prefix.uppercased(), limit: 1_000) == expected)
                #expect(try a.noteIDs(withHexPrefix: prefix, limit: 2) == Array(expected.prefix(2)))
            }
            #expect(try a.folderIDs(withHexPrefix: String(Hex.encode(folder.bytes).prefix(6)), limit: 20) == [folder])
        }
        #expect(try a.noteIDs(withHexPrefix: "xyz", limit: 20) == [])
    }

    @Test func pagesOfTheListAreTheListInPieces() throws {
        let work = try a.createFolder(name: "Work", now: 500)
        for index in 0..<60 {
            let id = try a.createNote(
                title: index % 7 == 0 ? "Needle \(index)" : "Note \(index)", body: paragraphs([index % 5 == 0 ? "has a needle" : "plain"]),
                folder: index % 2 == 0 ? work : nil, tags: index % 3 == 0 ? ["three", "zed", index % 2 == 0 ? "Even" : "ödd"] : [], pinned: index % 11 == 0,
                // Equal `modified` times, so the id breaks ties between pages too.
                now: 1_000 + UInt64(index / 4))
            if index % 13 == 0 { try a.trashNote(id, now: 1_000 + UInt64(index / 4)) }
        }
        let filters = [
            NoteFilter(), NoteFilter(trashed: true), NoteFilter(folder: .some(work)), NoteFilter(folder: .some(nil)), NoteFilter(tag: "three"),
            NoteFilter(pinned: true), NoteFilter(pinned: false), NoteFilter(text: "needle"), NoteFilter(conflictCopies: false),
        ]
        for filter in filters {
            let whole = try a.listNotes(filter)
            // Pages look their notes' tags up in the listing's statement; a listing of more
            // than `tagsReadAtOnceAbove` reads all tags at once (lowered here to cover both).
            for size in [1, 3, 7, 100, Int.max] {
                var pages: [NoteRow] = []
                var after: NoteListPosition?
                while true {
                    let page = try a.listNotes(filter, limit: size, after: after, tagsReadAtOnceAbove: size == Int.max ? 10 : Int.max)
                    pages += page
                    guard page.count == size, let last = page.last else { break }
                    after = NoteListPosition(pinned: last.pinned, modified: last.modified, id: last.id)
                }
                #expect(pages == whole, "filter \(filter), pages of \(size)")
            }
        }
        #expect(try a.listNotes(NoteFilter(), limit: 0, after: nil) == [])
    }

    @Test func migratingAnOlderDatabaseCountsWhatItHolds() throws {
        let work = try a.createFolder(name: "Work", now: 500)
        for index in 0..<25 {
            let id = try a.createNote(title: "N\(index)", body: [], folder: index % 2 == 0 ? work : nil, now: 1_000 + UInt64(index))
            if index % 5 == 0 { try a.trashNote(id, now: 2_000) }
        }
        let path = directory.file("older.db")
        try a.database.execute("VACUUM INTO '\(path)'")
        do {
            // Back to schema version 3: what migrations 4 to 10 added (or dropped) is back as it
            // was, the revisions rows whole again.
            let older = try Database(path: path)
            try BlockPacksTests.undoMigration16(older)
            for record in try older.rows("SELECT DISTINCT record FROM revisions", [], { RecordID(bytes: $0.blob(0))! }) {
                for row in try a.revisionRows(record: record) {
                    try older.run(
                        "UPDATE revisions SET body = ?2, data = ?3 WHERE id = ?1",
                        [.blob(row.id.bytes), .blob(Replica.concatenated(row.body)), .blob(row.data)])
                }
            }
            try older.execute(
                """
                \(RevisionsByRecordTests.undoMigration14)
                \(BlocksByRecordTests.undoMigration10)
                ALTER TABLE revisions DROP COLUMN depth;
                CREATE TABLE log_before (
                    stored INTEGER PRIMARY KEY, replica BLOB NOT NULL, seq INTEGER NOT NULL,
                    revision BLOB NOT NULL REFERENCES revisions(id), UNIQUE (replica, seq));
                INSERT INTO log_before SELECT stored, replica, seq, revision FROM log;
                DROP TABLE log; ALTER TABLE log_before RENAME TO log; CREATE INDEX log_by_revision ON log(revision);
                DROP TABLE note_search; DROP TABLE note_search_docs; DROP TABLE web_sessions; DROP TABLE search_pending; DELETE FROM meta WHERE key = 'search_index';
                DROP TABLE folder_note_counts; DROP INDEX folders_by_name; DROP INDEX folders_by_parent;
                DROP INDEX notes_in_list_order; DROP INDEX heads_by_revision; DELETE FROM meta WHERE key = 'note_count';
                ALTER TABLE peers ADD COLUMN status TEXT NOT NULL DEFAULT 'offline';
                ALTER TABLE peers ADD COLUMN entries_behind INTEGER NOT NULL DEFAULT 0;
                ALTER TABLE peers DROP COLUMN software;
                DROP TABLE key_grants; DROP TABLE key_holdings;
                PRAGMA user_version = 3;
                """)
        }
        let migrated = try Replica(path: path)
        #expect(try migrated.noteCount == 25)
        #expect(try migrated.folderSummary(work)?.noteCount == 10)
        #expect(try migrated.integrityProblems() == [])
    }
}
