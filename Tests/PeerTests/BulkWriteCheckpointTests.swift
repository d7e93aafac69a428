import Foundation
import Merge
import Testing
@testable import Peer
import TestSupport

/// A bulk write's log copied into the database file by a thread of its own
/// (`WALCheckpointer`, docs/decisions.md "Checkpoints beside a bulk write"): what the daemon
/// does during a catch-up or an import.
@Suite struct BulkWriteCheckpointTests {
    let directory: TemporaryDirectory
    let source: Replica, copy: Replica

    init() throws {
        directory = try TemporaryDirectory()
        source = try Replica(path: directory.file("source.db"), randomBytes: SeededBytes.source(seed: 71))
        copy = try Replica(path: directory.file("copy.db"), randomBytes: SeededBytes.source(seed: 72))
    }

    private func walBytes() throws -> Int {
        try FileManager.default.attributesOfItem(atPath: copy.path + "-wal")[.size] as? Int ?? -1
    }

    /// Every note arrives; the thread copies the log; at its limit the engine waits for the
    /// copy and the log starts again from its beginning (so the log file stays far smaller
    /// than what the catch-up wrote); settling stops the thread and empties the log.
    @Test func aCatchUpsLogIsCopiedBesideItAndStartsAgainAtItsLimit() throws {
        let notes = 8 * Replica.bulkBatchThreshold
        try source.inOneTransaction {
            for index in 0..<notes {
                _ = try source.createNote(
                    title: "Note \(index)", body: paragraphs(["first of \(index)", "second of \(index)", "third of \(index)"]),
                    now: 1_000 + UInt64(index))
            }
        }
        copy.checkpointBesideBulkWrites()
        copy.bulkCheckpointPages = 40
        var committed = 0, peak = 0, waits = 0
        while true {
            let batch = try source.entries(missingFrom: copy.vector, maxCount: Replica.bulkBatchThreshold)
            guard !batch.isEmpty else { break }
            let before = copy.database.logPages
            let written = copy.database.pagesWritten
            let outcome = try copy.apply(batch, now: 2_000)
            #expect(outcome.applied == batch.count && outcome.need == nil && outcome.rejected == nil)
            if before >= copy.bulkCheckpointPages { waits += 1 }
            committed += copy.database.pagesWritten - written
            peak = max(peak, copy.database.logPages)
        }
        #expect(waits >= 4, "each batch is larger than the limit: the engine waited before most")
        let checkpointer = try #require(copy.checkpointer)
        #expect(checkpointer.passesRun >= waits)
        // The log started again each time: it never held more than a batch or two, where
        // without the copies it would hold every page the catch-up committed.
        #expect(peak < committed / 3, "the log reached \(peak) pages of the \(committed) committed")
        let logFile = try walBytes()
        #expect(logFile <= 32 + peak * (4_096 + 24), "log file \(logFile) B, at most \(peak) pages")
        #expect(try copy.noteCount == notes)
        #expect(try copy.integrityProblems() == [])

        try copy.releaseMemory()
        #expect(copy.checkpointer == nil)
        #expect(try walBytes() == 0)
        // Out of the bulk write, SQLite's own checkpoints are back, and local writes go on.
        _ = try copy.createNote(title: "after", body: paragraphs(["after the catch-up"]), now: 3_000)
        #expect(try copy.noteCount == notes + 1)
        #expect(try copy.integrityProblems() == [])
    }

    /// A replica dropped in the middle of a bulk write ends its checkpointing thread, and the
    /// library reopens whole.
    @Test func aReplicaClosedDuringABulkWriteEndsItsThreadAndReopensWhole() throws {
        try source.inOneTransaction {
            for index in 0..<(2 * Replica.bulkBatchThreshold) {
                _ = try source.createNote(title: "Note \(index)", body: paragraphs(["body \(index)"]), now: 1_000 + UInt64(index))
            }
        }
        let path = directory.file("dropped.db")
        do {
            let dropped = try Replica(path: path, randomBytes: SeededBytes.source(seed: 73))
            dropped.checkpointBesideBulkWrites()
            dropped.bulkCheckpointPages = 8
            _ = try dropped.apply(try source.entries(missingFrom: dropped.vector, maxCount: Replica.bulkBatchThreshold), now: 2_000)
            _ = try dropped.apply(try source.entries(missingFrom: dropped.vector, maxCount: Replica.bulkBatchThreshold), now: 2_000)
            #expect(dropped.checkpointer != nil)
        }
        let reopened = try Replica(path: path)
        #expect(try reopened.noteCount == 2 * Replica.bulkBatchThreshold)
        #expect(try reopened.integrityProblems() == [])
    }
}
