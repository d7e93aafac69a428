// notes-bench: prints performance figures with their conditions (DESIGN §11). Not a test:
// nothing here asserts a time. Build with `swift build -c release --product notes-bench`.
//
//     notes-bench            run every benchmark
//     notes-bench NAME…      run the named ones
//     notes-bench help       list them
import Foundation

struct Benchmark {
    var name: String
    var summary: String
    var run: () -> Void
}

let benchmarks = [
    Benchmark(name: "merge", summary: "3-way merge of 500, 2,000 and 8,000-block notes (target ≤ 2 ms at 2,000)", run: MergeBench.run),
]

let requested = Array(CommandLine.arguments.dropFirst())
if requested.contains(where: { ["help", "-h", "--help"].contains($0) }) {
    print("usage: notes-bench [NAME…]\n")
    for benchmark in benchmarks { print("  \(benchmark.name.padding(toLength: 10, withPad: " ", startingAt: 0))\(benchmark.summary)") }
    exit(0)
}
let unknown = requested.filter { name in !benchmarks.contains { $0.name == name } }
guard unknown.isEmpty else {
    FileHandle.standardError.write(Data("notes-bench: no benchmark named \(unknown.joined(separator: ", ")); run `notes-bench help` for the list\n".utf8))
    exit(64)
}
for benchmark in benchmarks where requested.isEmpty || requested.contains(benchmark.name) {
    print("== \(benchmark.name): \(benchmark.summary)")
    benchmark.run()
}
