import Foundation
import Merge
import Testing
@testable import Peer
import TestSupport

/// Full-text search in the replica (docs/web.md, "Search").
@Suite struct ReplicaSearchTests {
    let directory: TemporaryDirectory
    let replica: Replica

    init() throws {
        directory = try TemporaryDirectory()
        replica = try Replica(path: directory.file("r.db"), randomBytes: SeededBytes.source(seed: 7))
    }

    func titles(_ query: String, tag: String? = nil, folder: FolderID?? = nil) throws -> [String] {
        try replica.searchNotes(query, limit: 50, folder: folder, tag: tag).map(\.note.title)
    }

    @Test func wordsPrefixesAccentsAndRanking() throws {
        let autumn = try replica.createNote(title: "Autumn", body: HTMLBlocks.split("<p>Stew the quinces with crème fraîche.</p>"), tags: ["food"], now: 1)
        _ = try replica.createNote(title: "Quinces", body: HTMLBlocks.split("<p>buy some</p>"), now: 2)
        _ = try replica.createNote(title: "Shopping", body: HTMLBlocks.split("<ul><li>eggs</li><li>milk</li></ul>"), now: 3)
        #expect(try titles("quin") == ["Quinces", "Autumn"])  // a title match outranks a body match
        #expect(try titles("CREME fraich") == ["Autumn"])
        #expect(try titles("milk") == ["Shopping"])
        #expect(try titles("quin", tag: "food") == ["Autumn"])
        #expect(try titles("nothing-like-this").isEmpty)
        #expect(try titles("   ").isEmpty)
        for hostile in ["\"", "a\"b", "AND", "NEAR(quin", "quin*", "-milk", "title:x", "(", "^"] {
            _ = try titles(hostile)  // never a syntax error
        }
        let snippet = try #require(try replica.searchNotes("quinces", limit: 5).first { $0.note.title == "Autumn" }?.snippet)
        #expect(snippet.contains("\u{2}quinces\u{3}"))

        // Edits re-index, the Trash is not searched, purged notes leave the index.
        _ = try replica.editNote(autumn, NoteEdit(body: HTMLBlocks.split("<p>Pears now.</p>")), now: 4)
        #expect(try titles("creme").isEmpty)
        #expect(try titles("pears") == ["Autumn"])
        _ = try replica.trashNote(autumn, now: 5)
        #expect(try titles("pears").isEmpty)
        try replica.purgeNote(autumn, now: 6)
        #expect(try replica.integrityProblems() == [])
    }

    private func automerge(_ replica: Replica) throws -> Int64? {
        try replica.database.first("SELECT v FROM note_search_config WHERE k = 'automerge'") { $0.int(0) }
    }

    /// The index merges eight segments at a time (migration 15, docs/decisions.md): a new
    /// library and one migrated from before it. Every transaction that indexes notes adds a
    /// segment; notes indexed over many of them, as after a catch-up, are all found.
    @Test func theIndexMergesEightSegmentsAtATimeInNewAndMigratedLibraries() throws {
        #expect(try automerge(replica) == 8)
        for step in 0..<40 {
            try replica.inOneTransaction {
                for index in 0..<3 {
                    _ = try replica.createNote(
                        title: "Step \(step) note \(index)", body: HTMLBlocks.split("<p>marmalade batch\(step)x\(index)</p>"), now: UInt64(1 + step))
                }
            }
        }
        #expect(try replica.searchNotes("marmalade", limit: 500).count == 120)
        #expect(try titles("batch17x2") == ["Step 17 note 2"])
        #expect(try titles("batch0x0") == ["Step 0 note 0"])
        #expect(try replica.integrityProblems() == [])

        let path = directory.file("before15.db")
        do {
            let older = try Replica(path: path, randomBytes: SeededBytes.source(seed: 9))
            _ = try older.createNote(title: "Older", body: HTMLBlocks.split("<p>indexed before migration 15</p>"), now: 1)
            try BlockPacksTests.undoMigration16(older.database)
            try older.database.execute("DELETE FROM note_search_config WHERE k = 'automerge'; PRAGMA user_version = 14;")
            #expect(try automerge(older) == nil)
        }
        let migrated = try Replica(path: path)
        #expect(try automerge(migrated) == 8)
        #expect(try migrated.searchNotes("migration", limit: 5).map(\.note.title) == ["Older"])
        #expect(try migrated.integrityProblems() == [])
    }

    @Test func anExistingLibraryIsIndexedOnOpenAndBadIndexesAreReported() throws {
        let path = directory.file("old.db")
        do {
            let old = try Replica(path: path, randomBytes: SeededBytes.source(seed: 8))
            _ = try old.createNote(title: "Old", body: HTMLBlocks.split("<p>written before search existed</p>"), now: 1)
            // As a library from before migration 4 looks after it: an empty index, the flag at 0.
            try old.database.execute("DELETE FROM note_search; DELETE FROM note_search_docs; UPDATE meta SET value = 0 WHERE key = 'search_index';")
            #expect(try old.integrityProblems().contains { $0.hasPrefix("search index") })
        }
        let reopened = try Replica(path: path)
        #expect(try reopened.searchNotes("existed", limit: 5).map(\.note.title) == ["Old"])
        #expect(try reopened.integrityProblems() == [])
    }
}

extension ReplicaSearchTests {
    /// A search ranked in two halves of the index, the second on the read-only
    /// `ParallelReader`, finds what one query finds, with the same scores in the same order,
    /// filters included (the engine splits large libraries this way).
    @Test func twoHalvesOnTwoConnectionsRankAsOneQueryDoes() throws {
        let words = ["garden", "gardening", "kitchen", "travel", "window", "morning", "budget", "project"]
        let work = try replica.createFolder(name: "Work", now: 1)
        for index in 0..<240 {
            // Different lengths and word counts, so scores differ note from note.
            let body = (0...(index % 7)).map { words[($0 * 3 + index) % words.count] }.joined(separator: " ") + String(repeating: " filler", count: index % 11)
            _ = try replica.createNote(
                title: "Note \(index) \(words[index % words.count])", body: HTMLBlocks.split("<p>\(body)</p>"),
                folder: index % 3 == 0 ? work : nil, tags: index % 4 == 0 ? ["four"] : [], now: UInt64(2 + index))
        }
        let reader = try replica.parallelReader()
        let split = try #require(try replica.database.first("SELECT max(rowid) FROM note_search") { $0.int(0) }) / 2
        for (query, folder, tag) in [("gard", nil, nil), ("kitchen travel", nil, nil), ("the", nil, nil), ("garden", .some(work), nil), ("mor", nil, "four")] as [(String, FolderID??, String?)] {
            for limit in [5, 50, 500] {
                let whole = try replica.searchNotes(query, limit: limit, folder: folder, tag: tag)
                let search = try #require(try replica.prepareSearch(query, limit: limit, folder: folder, tag: tag))
                let halves = try replica.mergedSearch(
                    try replica.rankedMatches(search, part: .upTo(split), on: replica.database),
                    try replica.rankedMatches(search, part: .after(split), on: reader.database), limit: limit)
                #expect(halves.map(\.rank) == whole.map(\.rank), "\(query), limit \(limit)")
                let key: (SearchResult) -> String = { "\($0.rank) \($0.note.id)" }
                if limit == 500 { #expect(halves.map(key).sorted() == whole.map(key).sorted(), "\(query)") }
                #expect(halves.allSatisfy { hit in whole.contains { $0.note == hit.note && $0.snippet == hit.snippet } || limit < 500 }, "\(query)")
            }
        }
        // A note written after the reader opened is found by it too.
        _ = try replica.createNote(title: "Late garden", body: HTMLBlocks.split("<p>gardenias</p>"), now: 1_000)
        let late = try #require(try replica.prepareSearch("gardenias", limit: 5))
        #expect(try replica.rankedMatches(late, part: .whole, on: reader.database).map(\.note.title) == ["Late garden"])
    }
}
