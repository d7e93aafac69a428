import Foundation
import Testing
import TestSupport
@testable import Merge

/// Cross-checks `Diff3` against GNU `diff3 -m` (diffutils): wherever GNU merges cleanly
/// (exit status 0), the merged sequence must be identical.
///
/// GNU is stricter in three places, where it reports conflicts and `Diff3` does not: changes
/// that only touch (an insertion right before or after the other side's change; changes of
/// neighbouring lines), identical insertions, and different insertions at one point (`Diff3`
/// keeps both). Those cases are skipped by the exit status, not by the test.
///
/// The sequences have unique lines. With repeated lines a shortest edit script is not unique,
/// GNU diff picks among them differently (it slides change groups, `shift_boundaries`), and
/// clean merges can then legitimately differ; that compares the diffs, not the merge rules.
private let gnuDiff3 = "/usr/bin/diff3"

@Suite(.enabled(if: FileManager.default.isExecutableFile(atPath: gnuDiff3), "needs GNU diffutils' diff3"))
struct GNUDiff3Tests {
    /// Sequences of unique tokens edited by inserting, deleting and replacing: the diff of each
    /// side is then unique, so both tools must see the same changes.
    @Test func cleanMergesAgreeOnUniqueTokens() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        var clean = 0
        let seeds = Seeds.forProperty("cleanMergesAgreeOnUniqueTokens", count: 300)
        for seed in seeds {
            var random = SeededGenerator(seed: seed)
            var fresh = 0
            func token() -> String {
                fresh += 1
                return "t\(fresh)"
            }
            let base = (0..<Int.random(in: 0...14, using: &random)).map { _ in token() }
            func edited() -> [String] {
                var lines = base
                for _ in 0..<Int.random(in: 0...3, using: &random) {
                    let index = Int.random(in: 0...lines.count, using: &random)
                    switch Int.random(in: 0..<3, using: &random) {
                    case 0: lines.insert(token(), at: index)
                    case 1 where index < lines.count: lines.remove(at: index)
                    case _ where index < lines.count: lines[index] = token()
                    default: lines.append(token())
                    }
                }
                return lines
            }
            let a = edited(), b = random.chance(0.15) ? base : edited()
            guard let gnu = try gnuMerge(base: base, mine: a, yours: b, in: directory) else { continue }
            clean += 1
            #expect(Diff3.merge(base: base, winner: a, loser: b).elements == gnu, "MERGE_SEED=\(seed): base \(base) a \(a) b \(b)")
            #expect(Diff3.merge(base: base, winner: b, loser: a).elements == gnu, "MERGE_SEED=\(seed): base \(base) a \(a) b \(b)")
        }
        // The check means something only if GNU merged a fair share cleanly (not checked when
        // replaying one seed).
        if seeds.count > 1 { #expect(clean > seeds.count / 5, "only \(clean) clean merges in \(seeds.count) cases") }
    }

    /// `diff3 -m mine older yours`: the merged lines, or nil when GNU found a conflict.
    private func gnuMerge(base: [String], mine: [String], yours: [String], in directory: URL) throws -> [String]? {
        func write(_ lines: [String], _ name: String) throws -> String {
            let url = directory.appendingPathComponent(name)
            try lines.map { $0 + "\n" }.joined().write(to: url, atomically: false, encoding: .utf8)
            return url.path
        }
        let result = try ChildProcess.runBlocking([gnuDiff3, "-m", try write(mine, "mine"), try write(base, "older"), try write(yours, "yours")])
        switch result.status {
        case 0: return result.output.split(separator: "\n").map(String.init)
        case 1: return nil
        case let status: throw GNUDiff3Failed(status: status)
        }
    }

    private func temporaryDirectory() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("merge-diff3-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    struct GNUDiff3Failed: Error, CustomStringConvertible {
        var status: Int32
        var description: String { "diff3 exited with status \(status) (trouble, not a conflict)" }
    }
}
