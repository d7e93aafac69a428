import Foundation

/// Copies what a catch-up or an import commits to the write-ahead log into the database file,
/// on a thread and a connection of its own, while the engine's connection goes on writing
/// (docs/decisions.md, "Checkpoints beside a bulk write"). The engine's thread, a catch-up's
/// bottleneck, then no longer copies the log itself every `Replica.bulkWriteCheckpointPages`.
///
/// The log is copied as rarely as SQLite's automatic checkpoints copied it (each copy also
/// copies again the pages the batches since the last one changed): once at three quarters of
/// the limit, in the background. At the limit, the engine waits before its next transaction
/// for the rest to be copied, which is what lets SQLite start the log again from its
/// beginning (it does so only at a transaction that finds all of it copied; a thread that
/// always trailed the writer would let the log grow for the whole catch-up). Checkpoints are
/// `PASSIVE`: they never wait for the writer or a reader.
///
/// Started by `Replica.enterBulkWrite` and stopped by `releaseMemory`, so an idle daemon has
/// neither the thread nor the connection.
final class WALCheckpointer: @unchecked Sendable {
    /// Used on the checkpointing thread only.
    private let database: Database
    private let limit: Int
    private let condition = NSCondition()
    // Guarded by `condition`.
    private var asked = false, askedForEverything = false, running = false, stopping = false, stopped = false
    private var passes = 0
    /// The engine's side (its thread only): the log's size when it last asked.
    private var askedAtPages = 0

    /// `limit`: the log's size in pages at which the engine waits for it to be copied.
    init(path: String, limit: Int) throws {
        database = try Database(path: path)
        self.limit = limit
        let thread = Thread { [self] in checkpointWhenAsked() }
        thread.name = "notesd-checkpoint"
        thread.start()
    }

    /// Called by the engine before each transaction of a bulk write, with the log's size
    /// after its last commit: asks for a copy at three quarters of the limit, and at the
    /// limit waits until everything is copied.
    func beforeTransaction(logPages: Int) {
        if logPages < askedAtPages { askedAtPages = 0 }  // the log started again
        if logPages >= limit {
            copyEverything()
            askedAtPages = 0
        } else if logPages >= limit * 3 / 4, askedAtPages == 0 {
            askedAtPages = logPages
            condition.withLock {
                asked = true
                condition.broadcast()
            }
        }
    }

    /// Asks for everything committed to be copied, and waits until it is (or cannot be: a
    /// reader still reads an older state of the log).
    func copyEverything() {
        condition.withLock {
            asked = true
            askedForEverything = true
            condition.broadcast()
            while asked || running { condition.wait() }
        }
    }

    /// Ends the thread once its copy in progress, if any, is done. Called once.
    func stop() {
        condition.withLock {
            stopping = true
            condition.broadcast()
            while !stopped { condition.wait() }
        }
    }

    /// Checkpoint passes this thread ran, for tests.
    var passesRun: Int { condition.withLock { passes } }

    private func checkpointWhenAsked() {
        condition.lock()
        while true {
            while !asked && !stopping { condition.wait() }
            if stopping { break }
            let everything = askedForEverything
            (asked, askedForEverything, running) = (false, false, true)
            condition.unlock()
            let ran = copy(untilDone: everything)
            condition.lock()
            passes += ran
            running = false
            condition.broadcast()
        }
        stopped = true
        condition.broadcast()
        condition.unlock()
    }

    /// One checkpoint pass, or (`untilDone`, while the engine waits) passes until the whole
    /// log is copied or one copies nothing more (a reader still reads an older state of the
    /// log); how many ran.
    private func copy(untilDone: Bool) -> Int {
        var copied: Int64 = -1
        var passes = 0
        while true {
            guard let (busy, log, done) = try? database.first("PRAGMA wal_checkpoint(PASSIVE)", [], { ($0.int(0), $0.int(1), $0.int(2)) })
            else { return passes }
            passes += 1
            guard untilDone, busy == 0, done < log, done > copied else { return passes }
            copied = done
        }
    }
}
