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

    /// The marks are dropped byte by byte: beside accents, emoji, a combining mark and CJK
    /// text nothing else changes, and a text without marks comes back as it was.
    @Test func snippetMarksAreDroppedAndNothingElse() {
        #expect(Replica.withoutSnippetMarks("\u{2}crème\u{3} 🍐\u{2}\u{301}漢字\u{3}") == "crème 🍐\u{301}漢字")
        #expect(Replica.withoutSnippetMarks("\u{2}\u{3}\u{3}") == "")
        let plain = "quinces, crème fraîche, 🍐 and 漢字\u{1}\u{4}"
        #expect(Replica.withoutSnippetMarks(plain) == plain)
    }
}

/// During a catch-up notes are indexed for search only once it ends, in one go (indexing in
/// every batch's transaction tripled a 10,000-note initial sync, docs/benchmarks.md).
@Suite struct DeferredSearchIndexTests {
    /// What a catch-up applies: everything in one batch of at least `bulkBatchThreshold`.
    func catchUp(_ receiver: Replica, from sender: Replica) throws {
        let batch = try sender.entries(missingFrom: receiver.vector, maxCount: 500)
        #expect(batch.count >= Replica.bulkBatchThreshold)
        let outcome = try receiver.apply(batch, now: 2_000)
        #expect(outcome.need == nil && outcome.rejected == nil)
    }

    @Test func aCatchUpLeavesItsNotesToIndexInSteps() throws {
        let directory = try TemporaryDirectory()
        let sender = try Replica(path: directory.file("a.db"))
        for index in 0..<(Replica.bulkBatchThreshold + 20) {
            _ = try sender.createNote(title: "Note \(index)", body: paragraphs(["quinces number \(index)"]), now: 1_000 + UInt64(index))
        }
        let path = directory.file("b.db")
        do {
            let receiver = try Replica(path: path)
            try catchUp(receiver, from: sender)
            #expect(try receiver.notesAwaitingSearchIndex == Replica.bulkBatchThreshold + 20)
            #expect(try receiver.searchNotes("quinces", limit: 500).isEmpty, "not indexed during the catch-up")
            #expect(try receiver.integrityProblems() == [])
            try receiver.releaseMemory()
            #expect(!receiver.isWritingInBulk)
            // In steps (the engine runs one per timer turn): each indexes at most its limit.
            #expect(try receiver.indexPendingSearch(limit: 50) == Replica.bulkBatchThreshold + 20 - 50)
            #expect(try receiver.searchNotes("quinces", limit: 500).count == 50)
            #expect(try receiver.integrityProblems() == [])
            #expect(try receiver.indexPendingSearch() == 0)
            #expect(try receiver.searchNotes("quinces", limit: 500).count == Replica.bulkBatchThreshold + 20)
            #expect(try receiver.integrityProblems() == [])
        }
        // A catch-up cut short (the daemon stopped before it ended): still waiting at the next start.
        let cut = directory.file("c.db")
        do {
            let receiver = try Replica(path: cut)
            try catchUp(receiver, from: sender)
            #expect(try receiver.notesAwaitingSearchIndex > 0)
        }
        let reopened = try Replica(path: cut)
        #expect(try reopened.notesAwaitingSearchIndex == Replica.bulkBatchThreshold + 20)
        #expect(try reopened.indexPendingSearch() == 0)
        #expect(try reopened.searchNotes("quinces", limit: 500).count == Replica.bulkBatchThreshold + 20)
    }
}
