import Foundation
import Merge
import Testing
@testable import Peer
import TestSupport

/// What a person (or a hostile peer) types or writes cannot break search: no query is an
/// FTS5 error, a huge one is bounded, and a note cannot fake the snippet's highlights.
@Suite struct SearchInputTests {
    @Test func controlCharactersAndHugeQueriesAreNotErrors() throws {
        let directory = try TemporaryDirectory()
        let replica = try Replica(path: directory.file("s.db"))
        _ = try replica.createNote(title: "Quinces", body: paragraphs(["a\u{0}b jam"]), now: 1_000)
        for query in ["\u{0}", "a\u{0}b", "\u{0}\u{1}\u{7f}", "quin\u{0}", String(repeating: "word ", count: 100_000), String(repeating: "x", count: 1_000_000)] {
            #expect(throws: Never.self, "query of \(query.count) characters") { _ = try replica.searchNotes(query, limit: 10) }
        }
        #expect(try replica.searchNotes("quin\u{0}jam", limit: 10).map(\.note.title) == ["Quinces"])
        let words = Replica.searchExpression(String(repeating: "w ", count: 1_000)).split(separator: " ")
        #expect(words.count == Replica.searchWordLimit)
        #expect(Replica.searchExpression(String(repeating: "x", count: 5_000)).count == Replica.searchWordLength + 3)
    }

    @Test func aNoteCannotFakeAHighlight() throws {
        let directory = try TemporaryDirectory()
        let replica = try Replica(path: directory.file("s.db"))
        _ = try replica.createNote(title: "Plain", body: paragraphs(["\u{2}fake\u{3} quinces here"]), now: 1_000)
        let hit = try #require(try replica.searchNotes("quinces", limit: 10).first)
        #expect(hit.snippet.filter { $0 == "\u{2}" }.count == 1, "only the real match is marked: \(hit.snippet.debugDescription)")
        #expect(hit.snippet.contains("\u{2}quinces\u{3}"))
    }
}
