import Foundation
import Merge
import Peer

/// The receiving side of a catch-up alone, in-process (issue 18): a 10,000-note library sent
/// to an empty replica in the daemon's batches, with the time and CPU of `Replica.apply`
/// measured apart from the sender's `entries(missingFrom:)` and the entries' checks. No
/// network, encryption or session: what the receiver's storage costs, and a run small enough
/// to profile
/// (`valgrind --tool=callgrind`, `perf record`). The source library is written once per run of
/// the benchmark; each repetition applies it to a new, empty replica.
enum CatchUpBench {
    /// `NOTES_BENCH_NOTES=100000` for the large library's catch-up (how the cost grows).
    static let libraryNotes = ProcessInfo.processInfo.environment["NOTES_BENCH_NOTES"].flatMap { Int($0) }.map { max(1, $0) } ?? 10_000
    /// `NOTES_BENCH_RUNS=1` for a profiler's single run.
    static let repetitions = ProcessInfo.processInfo.environment["NOTES_BENCH_RUNS"].flatMap { Int($0) }.map { max(1, $0) } ?? 5

    static func run() throws {
        let scratch = try ScratchDirectory("notes-bench-catch-up")
        let notes = LibraryGenerator.notes(libraryNotes, seed: 3)
        let source = try Replica(path: scratch.path + "/source.db")
        _ = try LibraryPopulation.fill(replica: source, with: notes)
        try source.releaseMemory()
        let batching = SyncSession.Configuration(deviceName: "bench")
        Conditions.print([
            "\(Measure.count(notes.count)) generated notes in a source replica; each repetition applies them to a new, empty replica in \(scratch.path) (\(Conditions.filesystem(of: scratch.path)))",
            "batches as the daemon sends them (≤ \(Measure.count(batching.maxBatchEntries)) entries, ~\(Measure.bytes(batching.maxBatchBytes))); synchronous=FULL, the catch-up in a rollback journal and back to the write-ahead log once settled, as in the daemon; in-process, release build",
        ])
        var runs: [Repetition] = []
        for index in 0..<repetitions {
            runs.append(try replicate(from: source, into: scratch.path + "/copy-\(index).db", batching: batching, expecting: notes.count))
        }
        var table = Table(["figure", "value", "detail"])
        let median = { (value: (Repetition) -> Double) in Measure.percentile(runs.map(value), 0.5) }
        table.add([
            "apply \(Measure.count(notes.count)) notes to an empty replica", Measure.ms(median(\.applyWall)),
            "median of \(repetitions) (\(runs.map { Measure.ms($0.applyWall) }.joined(separator: ", "))); thread CPU \(Measure.ms(median(\.applyCPU))); \(runs[0].batches) batches",
        ])
        table.add([
            "decode each batch's frame and check it", Measure.ms(median(\.checkWall)),
            "`FrameCodec.decode` and `Frame.checked` of each batch's plaintext, as the daemon's network thread does while its engine thread applies (the channel's decryption aside)",
        ])
        table.add([
            "then settle (`releaseMemory`)", Measure.ms(median(\.settleWall)),
            "what the daemon does once caught up: back to the write-ahead log, caches shrunk",
        ])
        table.add([
            "sender: entries(missingFrom:)", Measure.ms(median(\.sendWall)), "the same batches read from the source",
        ])
        table.add([
            "written by the receiver", Measure.bytes(runs[0].writtenBytes),
            "writes to the database, its journal and log while applying and settling, for a \(Measure.bytes(runs[0].finalSize)) database (\(Measure.decimal(Double(runs[0].writtenBytes) / Double(max(1, runs[0].finalSize))))×)",
        ])
        table.print()
    }

    /// One replication to an empty replica, timed by part.
    struct Repetition {
        var applyWall = 0.0, sendWall = 0.0, settleWall = 0.0, checkWall = 0.0
        /// CPU of the applying thread alone, and of the process over the whole replication.
        var applyCPU = 0.0, processCPU = 0.0
        var batches = 0, writtenBytes = 0, finalSize = 0
    }

    /// Sends `source`'s entries to a new replica at `path` in the daemon's batches, then
    /// settles it as the daemon does once caught up (`releaseMemory`); checks it holds
    /// `expecting` notes. `store` runs it once; `catch-up` repeats it.
    static func replicate(from source: Replica, into path: String, batching: SyncSession.Configuration, expecting: Int) throws -> Repetition {
        let copy = try Replica(path: path)
        copy.checkpointBesideBulkWrites()
        var result = Repetition()
        let writesBefore = ProcessProbe.writes()
        let processCPUBefore = Measure.processCPUMilliseconds()
        while true {
            let (batch, sent) = try Measure.once { try source.entries(missingFrom: copy.vector, maxCount: batching.maxBatchEntries, maxBytes: batching.maxBatchBytes) }
            guard !batch.isEmpty else { break }
            // As the daemon's network thread receives it: the batch's frame decoded (its blocks
            // slices of the frame's bytes) and checked.
            let plaintext = FrameCodec.encode(.entries(EntriesBatch(batch: UInt64(result.batches + 1), epoch: 1, senderVector: source.vector, entries: batch)))
            let (frame, checking) = try Measure.once { try FrameCodec.decode(plaintext).checked() }
            guard case .entries(let received) = frame else { throw BenchError("a batch's frame decoded as another frame") }
            let checked = received.entries
            let cpuBefore = Measure.threadCPUMilliseconds()
            let (outcome, applied) = try Measure.once { try copy.apply(checked, now: unixMilliseconds()) }
            result.applyCPU += Measure.threadCPUMilliseconds() - cpuBefore
            if let need = outcome.need { throw BenchError("in-process replication stopped: the copy needs \(need)") }
            if let rejected = outcome.rejected { throw BenchError("the copy refused an entry: \(rejected)") }
            result.sendWall += sent
            result.checkWall += checking
            result.applyWall += applied
            result.batches += 1
        }
        (_, result.settleWall) = try Measure.once { try copy.releaseMemory() }
        result.processCPU = Measure.processCPUMilliseconds() - processCPUBefore
        result.writtenBytes = ProcessProbe.writes().bytes - writesBefore.bytes
        result.finalSize = fileSize(path) + fileSize(path + "-wal")
        guard try copy.noteCount == expecting else { throw BenchError("the in-process copy holds \(try copy.noteCount) notes, not \(expecting)") }
        return result
    }
}
