// notes-bench: prints performance figures with their conditions (docs/benchmarks.md). Not a test:
// nothing here asserts a time. Build with
// `swift build -c release --product notes-bench --product notesd`; the sync benchmark starts the
// notesd binary found next to this one. See docs/benchmarks.md.
//
//     notes-bench            run every benchmark
//     notes-bench NAME…      run the named ones
//     notes-bench help       list them
import Foundation
import Peer

struct Benchmark {
    var name: String
    var summary: String
    var run: () throws -> Void
    /// Run by a bare `notes-bench`; false for a part of another benchmark.
    var inEvery = true
}

let benchmarks = [
    Benchmark(name: "merge", summary: "3-way merge of 500, 2,000 and 8,000-block notes (target ≤ 2 ms at 2,000)", run: MergeBench.run),
    Benchmark(name: "store", summary: "the replica in-process: import, edits, listing, reading, database size (10,000 notes)", run: StoreBench.run),
    Benchmark(name: "catch-up", summary: "the receiver's part of a 10,000-note catch-up in-process: Replica.apply into an empty replica, 5 runs (for profiling)", run: CatchUpBench.run, inEvery: false),
    Benchmark(name: "initial-sync", summary: "the 10,000-note initial sync of `sync` alone, 5 runs (for profiling; NOTES_BENCH_NOTES and NOTES_BENCH_RUNS as for `catch-up`)", run: { try SyncBench.runInitialSync() }, inEvery: false),
    Benchmark(name: "markdown", summary: "`notesctl import` of 10,000 Markdown notes into a real notesd (target ≤ 5 s)", run: MarkdownBench.run),
    Benchmark(name: "library", summary: "a 100,000-note library on a real notesd: notesctl import per 10,000, listing, start-up, idle RSS, initial sync to an empty device", run: LibraryBench.run, inEvery: false),

    Benchmark(name: "web", summary: "the web API over HTTP with 10,000 notes: notes.list/get/search, a paired daemon's change → SSE event, idle wake-ups and RSS", run: WebBench.run),
    Benchmark(name: "sync", summary: "two real notesd daemons on loopback: initial sync, edit latency, resync bytes, idle cost, start-up, against the targets", run: SyncBench.run),
]

let requested = Array(CommandLine.arguments.dropFirst())
if requested.contains(where: { ["help", "-h", "--help"].contains($0) }) {
    print("usage: notes-bench [NAME…]\n")
    let width = (benchmarks.map(\.name.count).max() ?? 0) + 2
    for benchmark in benchmarks { print("  \(benchmark.name.padding(toLength: width, withPad: " ", startingAt: 0))\(benchmark.summary)") }
    print("\nenvironment: NOTES_BENCH_KEEP=1 keeps the temporary data directories; NOTES_BENCH_IDLE_SECONDS (default 60) sets the idle window of `sync`; NOTES_BENCH_RUNS (default 5) the repetitions of `catch-up` and `initial-sync`; NOTES_BENCH_NOTES (default 10000) their library")
    exit(0)
}
let unknown = requested.filter { name in !benchmarks.contains { $0.name == name } }
guard unknown.isEmpty else {
    FileHandle.standardError.write(Data("notes-bench: no benchmark named \(unknown.joined(separator: ", ")); run `notes-bench help` for the list\n".utf8))
    exit(64)
}
// The in-process benchmarks (`store`, `catch-up`) run their replicas as notesd runs its own.
Replica.tuneHeapForDaemon()
var failed = false
for benchmark in benchmarks where requested.isEmpty ? benchmark.inEvery : requested.contains(benchmark.name) {
    print("== \(benchmark.name): \(benchmark.summary)")
    do {
        try benchmark.run()
    } catch {
        failed = true
        FileHandle.standardError.write(Data("notes-bench: \(benchmark.name) failed: \(error)\n".utf8))
    }
    print("")
}
exit(failed ? 1 : 0)
