import Foundation
import Merge
import Testing
@testable import Peer
import TestSupport

/// Replicas exchanging entries in-process (no network): docs/architecture.md, docs/merge.md end to end.
@Suite struct ReplicaExchangeTests {
    let directory: TemporaryDirectory
    let a: Replica, b: Replica, c: Replica

    init() throws {
        directory = try TemporaryDirectory()
        a = try Replica(path: directory.file("a.db"), randomBytes: SeededBytes.source(seed: 1))
        b = try Replica(path: directory.file("b.db"), randomBytes: SeededBytes.source(seed: 2))
        c = try Replica(path: directory.file("c.db"), randomBytes: SeededBytes.source(seed: 3))
    }

    private func expectConverged(_ replicas: [Replica]) throws {
        let hashes = try replicas.map { try $0.stateHash() }
        #expect(Set(hashes).count == 1, "state hashes differ: \(hashes)")
        for replica in replicas {
            #expect(try replica.integrityProblems() == [])
            for other in replicas where other !== replica {
                #expect(try other.entries(missingFrom: replica.vector).isEmpty)
            }
        }
    }

    @Test func aNoteCreatedOnOneReplicaReachesTheOthersThroughAThird() throws {
        let id = try a.createNote(title: "Hello", body: paragraphs(["one", "two"]), tags: ["t"], now: 1_000)
        try pull(into: b, from: a)
        try pull(into: c, from: b)  // c never talks to a
        #expect(try c.note(id)?.title == "Hello")
        #expect(try c.note(id)?.body == paragraphs(["one", "two"]))
        try expectConverged([a, b, c])
    }

    @Test func concurrentEditsToDifferentParagraphsMerge() throws {
        let id = try a.createNote(title: "Doc", body: paragraphs(["alpha", "beta", "gamma"]), now: 1_000)
        try syncAll([a, b])
        try a.editNote(id, NoteEdit(body: paragraphs(["alpha edited on a", "beta", "gamma"])), now: 2_000)
        try b.editNote(id, NoteEdit(body: paragraphs(["alpha", "beta", "gamma edited on b"])), now: 2_001)
        try syncAll([a, b])
        #expect(try a.note(id)?.body == paragraphs(["alpha edited on a", "beta", "gamma edited on b"]))
        #expect(try a.listNotes(NoteFilter(conflictCopies: true)).isEmpty)
        try expectConverged([a, b])
    }

    @Test func theSameParagraphEditedTwiceMakesOneIdenticalConflictCopyEverywhere() throws {
        let id = try a.createNote(title: "Doc", body: paragraphs(["alpha", "beta"]), now: 1_000)
        try syncAll([a, b, c])
        try a.editNote(id, NoteEdit(body: paragraphs(["alpha from a", "beta"])), now: 2_000)
        try b.editNote(id, NoteEdit(body: paragraphs(["alpha from b", "beta"])), now: 2_500)
        // a and b each detect the conflict on their own before talking to c.
        try pull(into: a, from: b)
        try pull(into: b, from: a)
        try syncAll([a, b, c])
        for replica in [a, b, c] {
            let copies = try replica.listNotes(NoteFilter(conflictCopies: true))
            #expect(copies.count == 1)
            #expect(copies.first?.conflictOf == id)
            #expect(copies.first?.title == "Doc (other version)")
        }
        let merged = try #require(try c.note(id))
        let copy = try #require(try c.note(try c.listNotes(NoteFilter(conflictCopies: true))[0].id))
        let allText = (merged.body + copy.body).map(\.text).joined(separator: " ")
        #expect(allText.contains("alpha from a") && allText.contains("alpha from b"))
        // b's edit has the later HLC, so it wins in the note; a's version is the copy.
        #expect(merged.body.map(\.text).joined().contains("alpha from b"))
        try expectConverged([a, b, c])
        // Syncing again derives nothing new.
        let vectors = [a.vector, b.vector, c.vector]
        try syncAll([a, b, c])
        #expect([a.vector, b.vector, c.vector] == vectors)
    }

    @Test func deleteVersusEditKeepsTheEdit() throws {
        let id = try a.createNote(title: "Doc", body: paragraphs(["keep me"]), now: 1_000)
        try syncAll([a, b])
        try a.purgeNote(id, now: 2_000)
        try b.editNote(id, NoteEdit(body: paragraphs(["keep me", "and this new line"])), now: 1_500)
        try syncAll([a, b])
        #expect(try a.note(id)?.body == paragraphs(["keep me", "and this new line"]))
        try expectConverged([a, b])
    }

    @Test func aPurgeWithoutAConcurrentEditStaysPurgedEverywhere() throws {
        let id = try a.createNote(title: "Doc", body: paragraphs(["private"]), now: 1_000)
        try syncAll([a, b, c])
        try b.purgeNote(id, now: 2_000)
        try syncAll([a, b, c])
        for replica in [a, b, c] {
            #expect(try replica.note(id) == nil)
            let history = try replica.history(of: id)
            #expect(!history.isEmpty, "a purged note keeps its place in history")
            #expect(history.allSatisfy { $0.note == nil })
        }
        // A replica that was wiped and rejoins learns the tombstone, not the content.
        let d = try Replica(path: directory.file("d.db"), randomBytes: SeededBytes.source(seed: 4))
        try pull(into: d, from: a)
        #expect(try d.note(id) == nil)
        try expectConverged([a, b, c, d])
    }

    @Test func tagAddsAndRemovesMerge() throws {
        let id = try a.createNote(title: "Doc", body: [], tags: ["shared", "old"], now: 1_000)
        try syncAll([a, b])
        try a.editNote(id, NoteEdit(addTags: ["from-a"], removeTags: ["old"]), now: 2_000)
        try b.editNote(id, NoteEdit(addTags: ["from-b"]), now: 2_000)
        try syncAll([a, b])
        #expect(try a.note(id)?.tags == ["shared", "from-a", "from-b"])
        try expectConverged([a, b])
    }

    @Test func aFolderMoveCycleResolvesIdentically() throws {
        let left = try a.createFolder(name: "Left", now: 1_000)
        let right = try a.createFolder(name: "Right", now: 1_000)
        try syncAll([a, b])
        try a.moveFolder(left, to: right, now: 2_000)
        try b.moveFolder(right, to: left, now: 3_000)
        try syncAll([a, b])
        let folders = try a.listFolders()
        #expect(folders.count == 2)
        // b's move is later, so Right goes to the top level and Left stays inside it.
        #expect(folders.first { $0.id == right }?.parent == nil)
        #expect(folders.first { $0.id == left }?.parent == right)
        #expect(try b.listFolders() == folders)
        try expectConverged([a, b])
    }

    @Test func reapplyingEntriesChangesNothing() throws {
        let id = try a.createNote(title: "Doc", body: paragraphs(["x"]), now: 1_000)
        try a.markOffered()
        try a.editNote(id, NoteEdit(title: "Doc 2"), now: 2_000)
        let everything = try a.entries(missingFrom: VersionVector())
        _ = try b.apply(everything, now: 3_000)
        let hash = try b.stateHash()
        let vector = b.vector
        let again = try b.apply(everything, now: 4_000)
        #expect(again.applied == 0)
        #expect(again.duplicates == everything.count)
        #expect(try b.stateHash() == hash)
        #expect(b.vector == vector)
    }

    /// docs/decisions.md, "A bulk write without the log": a catch-up journals in a rollback
    /// journal (its new pages written once), and the library is back in the write-ahead log
    /// once it settles.
    @Test func aCatchUpIsWrittenWithoutTheLogAndSettlesBackIntoIt() throws {
        try a.inOneTransaction {
            for index in 0..<(Replica.bulkBatchThreshold + 50) {
                _ = try a.createNote(title: "Note \(index)", body: paragraphs(["text \(index)"]), now: 1_000)
            }
        }
        let outcome = try b.apply(try a.entries(missingFrom: VersionVector(), maxCount: 2_000, maxBytes: 1 << 24), now: 2_000)
        #expect(outcome.applied == Replica.bulkBatchThreshold + 50)
        #expect(b.writingInBulk, "a batch of \(outcome.applied) entries is a catch-up")
        #expect(try journalMode(b) == "truncate")
        let wal = directory.file("b.db") + "-wal"
        #expect(!FileManager.default.fileExists(atPath: wal), "no log while the catch-up writes without it")

        try b.releaseMemory()
        #expect(!b.writingInBulk)
        #expect(try journalMode(b) == "wal")
        #expect(!FileManager.default.fileExists(atPath: directory.file("b.db") + "-journal"), "the journal goes with the rollback mode")
        _ = try b.createNote(title: "After", body: paragraphs(["after the catch-up"]), now: 3_000)
        #expect(try FileManager.default.attributesOfItem(atPath: wal)[.size] as? Int ?? 0 > 0, "a live edit goes through the log again")
        #expect(try b.noteCount == Replica.bulkBatchThreshold + 51)
        #expect(try b.integrityProblems() == [])
    }

    /// While another connection is open beside the engine's (a backup's, the start-up
    /// check's), a bulk write keeps the log, and one that left it returns to it first: with a
    /// rollback journal the two would wait for each other.
    @Test func aConnectionBesideKeepsABulkWriteInTheLog() throws {
        try a.inOneTransaction {
            for index in 0..<(5 * Replica.bulkBatchThreshold) {
                _ = try a.createNote(title: "Note \(index)", body: paragraphs(["text \(index)"]), now: 1_000)
            }
        }
        func applyBatch() throws {
            let batch = try a.entries(missingFrom: b.vector, maxCount: Replica.bulkBatchThreshold, maxBytes: 1 << 24)
            #expect(try b.apply(batch, now: 2_000).applied == batch.count)
        }
        try applyBatch()
        #expect(try journalMode(b) == "truncate")
        try b.connectionBesideOpening()
        #expect(try journalMode(b) == "wal", "the log came back before the other connection opens")
        do {
            let beside = try Database(path: b.path, readOnly: true)
            #expect(try beside.first("SELECT count(*) FROM notes") { $0.int(0) } == Int64(Replica.bulkBatchThreshold))
            try applyBatch()
            #expect(try journalMode(b) == "wal", "the catch-up goes on in the log")
            try b.releaseMemory()
        }
        // A new catch-up while the connection is still announced stays in the log too (the
        // connection itself is closed by now, so only the announcement keeps the log).
        try applyBatch()
        #expect(try journalMode(b) == "wal", "a catch-up begun while a connection beside is announced keeps the log")
        try b.releaseMemory()
        b.connectionBesideClosed()

        try applyBatch()
        #expect(try journalMode(b) == "truncate", "with the other connection closed, the next catch-up leaves the log again")
        try b.releaseMemory()
        #expect(try journalMode(b) == "wal")

        // A connection nobody announced (another process's) that has read the file keeps the
        // log too: the catch-up goes on in it rather than fail.
        let stranger = try Database(path: b.path, readOnly: true)
        #expect(try stranger.first("SELECT count(*) FROM notes") { $0.int(0) } == Int64(4 * Replica.bulkBatchThreshold))
        try applyBatch()
        #expect(try journalMode(b) == "wal")
        try b.releaseMemory()
        try expectConverged([a, b])
        withExtendedLifetime(stranger) {}
    }

    /// An import's bulk write (`enterBulkWrite(.import)`, as `notes.createMany` of 100 notes or more
    /// enters it) keeps the log: its commits are smaller than a catch-up's.
    @Test func anImportsBulkWriteKeepsTheLog() throws {
        try b.enterBulkWrite(.import)
        #expect(b.writingInBulk)
        try b.inOneTransaction {
            for index in 0..<Replica.bulkBatchThreshold {
                _ = try b.createNote(title: "Imported \(index)", body: paragraphs(["text \(index)"]), now: 1_000)
            }
        }
        #expect(try journalMode(b) == "wal")
        try b.releaseMemory()
        #expect(try b.noteCount == Replica.bulkBatchThreshold)
    }

    private func journalMode(_ replica: Replica) throws -> String? {
        try replica.database.first("PRAGMA journal_mode") { $0.text(0) }
    }

    @Test func anEditOfALongNoteTravelsAsBodyEdits() throws {
        let texts = (0..<300).map { "paragraph \($0)" }
        let id = try a.createNote(title: "Long", body: paragraphs(texts), now: 1_000)
        try syncAll([a, b])
        var edited = texts
        edited[150] = "paragraph 150, reworded"
        try a.editNote(id, NoteEdit(body: paragraphs(edited)), now: 2_000)
        let entries = try a.entries(missingFrom: b.vector)
        #expect(entries.count == 1)
        guard case .edited(_, let edits, _, let blocks) = entries.first?.content else {
            Issue.record("expected body edits, got \(String(describing: entries.first?.content))")
            return
        }
        #expect(edits == [.keep(150), .skip(1), .insert([RevisionCodec.blockHash(paragraphs([edited[150]])[0].encoded())]), .keep(149)])
        #expect(blocks.count == 1)
        // What crosses the wire follows the change, not the note: far less than 300 block hashes.
        let frame = FrameCodec.encode(.entries(EntriesBatch(batch: 1, epoch: 0, senderVector: a.vector, entries: entries)))
        #expect(frame.count < 1_000)
        try pull(into: b, from: a)
        #expect(try b.note(id)?.body == paragraphs(edited))
        try expectConverged([a, b])
    }

    @Test func anEntryWhoseParentIsMissingIsRefusedWithNeed() throws {
        let id = try a.createNote(title: "Doc", body: paragraphs(["x"]), now: 1_000)
        try a.markOffered()
        try a.editNote(id, NoteEdit(title: "Doc 2"), now: 2_000)
        let everything = try a.entries(missingFrom: VersionVector())
        #expect(everything.count == 2)
        // Forge the child under a fresh name so it passes the sequence check but not the DAG check.
        let child = everything[1]
        let forged = EntryPayload(dot: Dot(replica: ReplicaID(RecordID(high: 9, low: 9)), seq: 1), revision: child.revision, content: child.content)
        let outcome = try b.apply([forged], now: 3_000)
        #expect(outcome.applied == 0)
        guard case .parents(let missing) = outcome.need else {
            Issue.record("expected a need for parents, got \(String(describing: outcome.need))")
            return
        }
        #expect(missing == [everything[0].revision])
        #expect(try b.note(id) == nil)
    }

    @Test func aGapInTheLogIsRefusedWithNeed() throws {
        _ = try a.createNote(title: "1", body: [], now: 1_000)
        _ = try a.createNote(title: "2", body: [], now: 1_000)
        let everything = try a.entries(missingFrom: VersionVector())
        let outcome = try b.apply([everything[1]], now: 2_000)
        #expect(outcome.need == .gap(replica: a.replicaID, expected: 1))
    }

    @Test func aTamperedEntryIsRejectedAndTheGoodPrefixKept() throws {
        _ = try a.createNote(title: "1", body: paragraphs(["fine"]), now: 1_000)
        _ = try a.createNote(title: "2", body: paragraphs(["evil"]), now: 1_000)
        var entries = try a.entries(missingFrom: VersionVector())
        guard case .full(var data, let blocks) = entries[1].content else { Issue.record("expected full content"); return }
        data[data.count / 2] ^= 0xFF
        entries[1] = EntryPayload(dot: entries[1].dot, revision: entries[1].revision, content: .full(data: data, blocks: blocks))
        let outcome = try b.apply(entries, now: 2_000)
        #expect(outcome.applied == 1)
        #expect(outcome.rejected?.contains("does not hash to its id") == true)
        #expect(try b.listNotes().map(\.title) == ["1"])
        #expect(try b.integrityProblems() == [])
    }

    /// The checks made ahead on the network thread (`EntryPayload.checked()`) refuse what
    /// `apply` refuses making them itself, and accept what it accepts.
    @Test func entriesCheckedAheadAreAppliedAndRefusedAsUncheckedOnes() throws {
        _ = try a.createNote(title: "1", body: paragraphs(["fine"]), now: 1_000)
        _ = try a.createNote(title: "2", body: paragraphs(["evil"]), now: 1_000)
        _ = try a.createNote(title: "3", body: paragraphs(["never"]), now: 1_000)
        let entries = try a.entries(missingFrom: VersionVector())
        #expect(entries.allSatisfy { $0.checked().checks != nil })
        #expect(entries.map { $0.checked().hashValue } == entries.map(\.hashValue), "checks are not part of an entry's identity")
        guard case .full(var data, let blocks) = entries[1].content else { Issue.record("expected full content"); return }
        data[data.count / 2] ^= 0xFF
        let tampered = EntryPayload(dot: entries[1].dot, revision: entries[1].revision, content: .full(data: data, blocks: blocks))
        #expect(tampered.checked().checks?.revisionMatches == false)
        #expect(entries[0].checked().checks?.revisionMatches == true)
        guard case .full(_, let firstBlocks) = entries[0].content else { Issue.record("expected full content"); return }
        #expect(entries[0].checked().checks?.blockHashes == firstBlocks.map(RevisionCodec.blockHash))
        let outcome = try b.apply([entries[0].checked(), tampered.checked(), entries[2].checked()], now: 2_000)
        #expect(outcome.applied == 1)
        #expect(outcome.rejected?.contains("does not hash to its id") == true)
        // A block that does not decode, found ahead, refuses its entry.
        guard case .full(let goodData, var goodBlocks) = entries[1].content, !goodBlocks.isEmpty else { Issue.record("expected blocks"); return }
        goodBlocks[0] = [0xFF, 0xFF, 0xFF]
        let badBlock = EntryPayload(dot: entries[1].dot, revision: entries[1].revision, content: .full(data: goodData, blocks: goodBlocks)).checked()
        #expect(badBlock.checks?.blockHashes == nil)
        #expect(try b.apply([badBlock], now: 2_000).rejected?.contains("a block does not decode") == true)
        // Checked entries apply as the unchecked ones do.
        #expect(try b.apply(Array(entries[1...]).map { $0.checked() }, now: 2_000).applied == 2)
        #expect(try b.listNotes().map(\.title).sorted() == ["1", "2", "3"])
        #expect(try b.integrityProblems() == [])
    }

    @Test func clocksSkewedByHoursStillConverge() throws {
        let hour: UInt64 = 3_600_000
        let start: UInt64 = 1_700_000_000_000
        let id = try a.createNote(title: "Doc", body: paragraphs(["p1", "p2"]), now: start)
        try syncAll([a, b], now: start)
        // b's clock runs five hours behind; its later edit must still count as later.
        try pull(into: b, from: a, now: start - 5 * hour)
        try a.editNote(id, NoteEdit(title: "from a", pinned: true), now: start + 1_000)
        try syncAll([a, b], now: start + 2_000)
        try b.editNote(id, NoteEdit(title: "from b, later"), now: start - 5 * hour + 3_000)
        try syncAll([a, b], now: start + 4_000)
        #expect(try a.note(id)?.title == "from b, later")
        #expect(try a.note(id)?.pinned == true)
        try expectConverged([a, b])
    }
}
