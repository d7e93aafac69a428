import Foundation
import CSQLite

/// Copies what a catch-up or an import commits to the write-ahead log into the database file,
/// on a thread and a connection of its own, while the engine's connection goes on writing
/// (docs/decisions.md, "Checkpoints beside a bulk write"). The engine's thread, a catch-up's
/// bottleneck, then no longer copies the log itself every `Replica.bulkWriteCheckpointBytes`.
///
/// The log is copied rarely (each copy also copies again the pages the batches since the last
/// one changed): once at three quarters of the limit, in the background. The limit is the
/// engine's to set (`Replica.bulkLogLimit`: the library's own size, at least 64 MiB). At the
/// limit, the engine waits before its next transaction for the rest to be copied, which is
/// what lets SQLite start the log again from its beginning (it does so only at a transaction
/// that finds all of it copied; a thread that always trailed the writer would let the log grow
/// for the whole catch-up). Checkpoints are `PASSIVE`: they never wait for the writer or a
/// reader.
///
/// SQLite before 3.51.3 (Debian 12 ships 3.40.1) can lose a commit when one connection's
/// checkpoint starts just as another connection's commit starts the log again, right after
/// a checkpoint that copied all of it (SQLite's documented "WAL-reset" bug). This protocol
/// keeps the two apart: the engine starts the log again only at a transaction after a copy of
/// everything, and the thread starts a pass either while the engine waits (no commit then) or
/// at three quarters of the limit, which the log reaches only well after it started again.
///
/// Started by `Replica.enterBulkWrite` for an import, or for a catch-up that keeps the log (a
/// connection beside the engine's is open: `Replica.connectionBesideOpening`, which also
/// starts it when it brings a catch-up back into the log), and stopped by `releaseMemory`, so
/// an idle daemon has neither the thread nor the connection.
final class WALCheckpointer: @unchecked Sendable {
    /// Used on the checkpointing thread only.
    private let database: Database
    private let condition = NSCondition()
    // Guarded by `condition`.
    private var asked = false, askedForEverything = false, running = false, stopping = false, stopped = false
    private var passes = 0
    /// Why the last pass failed (not busy: an I/O error, a damaged file); the engine then
    /// goes back to SQLite's own checkpoints.
    private var failure: String?
    /// The engine's side (its thread only): whether it asked for a copy since the log last
    /// started again, and the log's size at its last transaction.
    private var askedSinceRestart = false, lastPages = 0

    init(path: String) throws {
        database = try Database(path: path)
        let thread = Thread { [self] in checkpointWhenAsked() }
        thread.name = "notesd-checkpoint"
        thread.start()
    }

    /// Called by the engine before each transaction of a bulk write, with the log's size
    /// after its last commit and the size at which it waits for the log to be copied
    /// (`limit`, in pages): asks for a copy at three quarters of the limit, and at the limit
    /// waits until everything is copied.
    /// Returns why the thread failed, when it did: it stops copying, and the engine should
    /// checkpoint itself.
    func beforeTransaction(logPages: Int, limit: Int) -> String? {
        if let failure = condition.withLock({ failure }) { return failure }
        if logPages < lastPages { askedSinceRestart = false }  // the log started again
        lastPages = logPages
        if logPages >= limit {
            copyEverything()
            askedSinceRestart = false
        } else if logPages >= limit * 3 / 4, !askedSinceRestart {
            askedSinceRestart = true
            condition.withLock {
                asked = true
                condition.broadcast()
            }
        }
        return nil
    }

    /// Asks for everything committed to be copied, and waits until it is (or cannot be: a
    /// reader still reads an older state of the log).
    private func copyEverything() {
        condition.withLock {
            asked = true
            askedForEverything = true
            condition.broadcast()
            while (asked || running) && !stopped { condition.wait() }
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

    /// Checkpoint passes this thread ran, and whether it has ended, for tests.
    var passesRun: Int { condition.withLock { passes } }
    var hasStopped: Bool { condition.withLock { stopped } }

    private func checkpointWhenAsked() {
        condition.lock()
        while true {
            while !asked && !stopping { condition.wait() }
            if stopping { break }
            let everything = askedForEverything
            (asked, askedForEverything, running) = (false, false, true)
            condition.unlock()
            let (ran, error) = copy(untilDone: everything)
            condition.lock()
            passes += ran
            if let error { failure = error }
            running = false
            condition.broadcast()
        }
        stopped = true
        condition.broadcast()
        condition.unlock()
    }

    /// One checkpoint pass, or (`untilDone`, while the engine waits) passes until the whole
    /// log is copied or one copies nothing more (a reader still reads an older state of the
    /// log); how many ran, and why one failed.
    private func copy(untilDone: Bool) -> (passes: Int, error: String?) {
        var copied: Int64 = -1
        var passes = 0
        while true {
            let result: (busy: Int64, log: Int64, done: Int64)?
            do {
                result = try database.first("PRAGMA wal_checkpoint(PASSIVE)", [], { ($0.int(0), $0.int(1), $0.int(2)) })
            } catch let error as SQLiteError where error.resultCode & 0xff == SQLITE_BUSY {
                return (passes, nil)  // the engine's connection is checkpointing
            } catch {
                return (passes, "\(error)")
            }
            passes += 1
            guard untilDone, let result, result.busy == 0, result.done < result.log, result.done > copied else { return (passes, nil) }
            copied = result.done
        }
    }
}
