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
