import Foundation
import Merge
import Testing
@testable import Peer
import TestSupport

/// A bulk write's log copied into the database file by a thread of its own
/// (`WALCheckpointer`, docs/decisions.md "Checkpoints beside a bulk write"): what the daemon
/// does during a catch-up or an import while another connection (a backup) keeps the library
/// in the write-ahead log (docs/decisions.md, "A bulk write without the log").
@Suite struct BulkWriteCheckpointTests {
    let directory: TemporaryDirectory
    let source: Replica, copy: Replica

    init() throws {
        directory = try TemporaryDirectory()
        source = try Replica(path: directory.file("source.db"), randomBytes: SeededBytes.source(seed: 71))
        copy = try Replica(path: directory.file("copy.db"), randomBytes: SeededBytes.source(seed: 72))
    }

    private func automaticCheckpointPages() throws -> Int64? {
        try copy.database.first("PRAGMA wal_autocheckpoint") { $0.int(0) }
    }

    private func fill(_ notes: Int) throws {
        try source.inOneTransaction {
            for index in 0..<notes {
                _ = try source.createNote(
                    title: "Note \(index)", body: paragraphs(["first of \(index)", "second of \(index)", "third of \(index)"]),
                    now: 1_000 + UInt64(index))
            }
        }
    }

    /// Writes `notes` notes into the source and applies them to the copy in batches, its log
    /// copied beside it up to `limit` pages (or the library's size, once larger, when
    /// `growing`); the pages committed, the log's largest size, how many transactions began
    /// with the log at its limit, the largest limit, and the checkpointing thread.
    private func catchUp(notes: Int, limit: Int, growing: Bool = false) throws
        -> (committed: Int, peak: Int, waits: Int, largestLimit: Int, checkpointer: WALCheckpointer)
    {
        try fill(notes)
        copy.checkpointBesideBulkWrites()
        try copy.connectionBesideOpening()
        copy.bulkCheckpointPages = limit
        copy.bulkLogGrowsWithLibrary = growing
        var committed = 0, peak = 0, waits = 0, largestLimit = 0
        while true {
            let batch = try source.entries(missingFrom: copy.vector, maxCount: Replica.bulkBatchThreshold)
            guard !batch.isEmpty else { break }
            let before = copy.database.logPages
            let limitNow = try copy.bulkLogLimit()
            let written = copy.database.pagesWritten
            let outcome = try copy.apply(batch, now: 2_000)
            #expect(outcome.applied == batch.count && outcome.need == nil && outcome.rejected == nil)
            if before >= limitNow { waits += 1 }
            largestLimit = max(largestLimit, limitNow)
            committed += copy.database.pagesWritten - written
            peak = max(peak, copy.database.logPages)
            // SQLite's own checkpoints are off meanwhile (the commit hook replaces them).
            #expect(try automaticCheckpointPages() == 0)
        }
        return (committed, peak, waits, largestLimit, try #require(copy.checkpointer))
    }

    private func walBytes() throws -> Int {
        try FileManager.default.attributesOfItem(atPath: copy.path + "-wal")[.size] as? Int ?? -1
    }

    /// Every note arrives; the thread copies the log; at its limit the engine waits for the
    /// copy and the log starts again from its beginning (so the log file stays far smaller
    /// than what the catch-up wrote); settling stops the thread and empties the log.
    @Test func aCatchUpsLogIsCopiedBesideItAndStartsAgainAtItsLimit() throws {
        let notes = 16 * Replica.bulkBatchThreshold
        // 160 KiB of log, in this library's pages.
        let pageSize = try copy.database.pageSize
        let (committed, peak, waits, _, checkpointer) = try catchUp(notes: notes, limit: 40 * 4_096 / pageSize)
        #expect(waits >= 4, "each batch is larger than the limit: the engine waited before most")
        #expect(checkpointer.passesRun >= waits)
        // The log started again each time: it never held more than a batch or two, where
        // without the copies it would hold every page the catch-up committed.
        #expect(peak < committed / 3, "the log reached \(peak) pages of the \(committed) committed")
        let logFile = try walBytes()
        #expect(logFile <= 32 + peak * (pageSize + 24), "log file \(logFile) B, at most \(peak) pages")
        #expect(try copy.noteCount == notes)
        #expect(try copy.integrityProblems() == [])

        try copy.releaseMemory()
        #expect(copy.checkpointer == nil)
        #expect(try walBytes() == 0)
        // Out of the bulk write, SQLite's own checkpoints are back, and local writes go on.
        #expect(try automaticCheckpointPages() == 1_000)
        _ = try copy.createNote(title: "after", body: paragraphs(["after the catch-up"]), now: 3_000)
        #expect(try copy.noteCount == notes + 1)
        #expect(try copy.integrityProblems() == [])
    }

    /// With a limit several batches long, the thread copies at three quarters of it while the
    /// engine goes on writing, and the engine waits for the rest at the limit.
    @Test func theThreadCopiesWhileTheEngineWritesAndTheEngineWaitsOnlyAtTheLimit() throws {
        let notes = 16 * Replica.bulkBatchThreshold
        let (committed, peak, waits, _, checkpointer) = try catchUp(notes: notes, limit: 200)
        #expect(waits >= 2 && waits < 8, "\(waits) waits in 16 batches")
        #expect(checkpointer.passesRun > waits, "passes made while the engine wrote, besides those it waited for")
        #expect(peak < copy.bulkCheckpointPages + committed / 8, "the log reached \(peak) pages of the \(committed) committed")
        #expect(try copy.noteCount == notes)
        #expect(try copy.integrityProblems() == [])
        try copy.releaseMemory()
        #expect(checkpointer.hasStopped)
    }

    /// In the daemon the limit grows with the library: once the library is larger than the
    /// fixed limit, the log may grow as large as the library before the engine waits, so it
    /// waits less often, and the log still never holds much more than the library.
    @Test func theLogsLimitGrowsWithTheLibrary() throws {
        let notes = 16 * Replica.bulkBatchThreshold
        let floor = 40 * 4_096 / (try copy.database.pageSize)
        let (committed, peak, waits, largestLimit, checkpointer) = try catchUp(notes: notes, limit: floor, growing: true)
        let library = try #require(try copy.database.first("PRAGMA page_count") { Int($0.int(0)) })
        #expect(largestLimit > 4 * floor, "the limit grew with the library to \(largestLimit) pages (\(library) now)")
        #expect(peak > 4 * floor, "the log ran past the fixed limit: \(peak) pages")
        #expect(peak <= library + committed / 8, "the log reached \(peak) pages for a library of \(library)")
        // Each wait comes only once the log has caught up with the library (four times here,
        // where a batch rewrites many of the small library's pages), where the fixed limit
        // waited before most of the 16 batches (the first test).
        #expect(waits >= 1 && waits <= 6, "\(waits) waits in 16 batches")
        #expect(checkpointer.passesRun >= waits, "the thread copied at each wait")
        #expect(peak < committed, "the log started again: it reached \(peak) of the \(committed) pages committed")
        #expect(try copy.noteCount == notes)
        #expect(try copy.integrityProblems() == [])
        try copy.releaseMemory()
        #expect(try walBytes() == 0)
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
        var thread: WALCheckpointer?
        do {
            let dropped = try Replica(path: path, randomBytes: SeededBytes.source(seed: 73))
            dropped.checkpointBesideBulkWrites()
            try dropped.connectionBesideOpening()
            dropped.bulkCheckpointPages = 8
            dropped.bulkLogGrowsWithLibrary = false
            _ = try dropped.apply(try source.entries(missingFrom: dropped.vector, maxCount: Replica.bulkBatchThreshold), now: 2_000)
            _ = try dropped.apply(try source.entries(missingFrom: dropped.vector, maxCount: Replica.bulkBatchThreshold), now: 2_000)
            let running = try #require(dropped.checkpointer as WALCheckpointer?)
            #expect(!running.hasStopped)
            thread = running
        }
        #expect(thread?.hasStopped == true)
        let reopened = try Replica(path: path)
        #expect(try reopened.noteCount == 2 * Replica.bulkBatchThreshold)
        #expect(try reopened.integrityProblems() == [])
    }
}
