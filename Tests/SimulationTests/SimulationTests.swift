import Foundation
import Testing
import TestSupport

/// Runs the simulation over many seeds. `NOTES_SIM_SEEDS=N` runs N seeds (default 200);
/// `NOTES_SIM_SEED=S` replays one seed; `NOTES_SIM_FIRST=F` starts the range at F.
@Suite struct SimulationTests {
    static var seeds: [UInt64] {
        let environment = ProcessInfo.processInfo.environment
        if let one = environment["NOTES_SIM_SEED"].flatMap(UInt64.init) { return [one] }
        let count = environment["NOTES_SIM_SEEDS"].flatMap(UInt64.init) ?? 200
        let first = environment["NOTES_SIM_FIRST"].flatMap(UInt64.init) ?? 1
        return Array(first..<first + count)
    }

    @Test func randomHistoriesConvergeWithoutLosingText() async throws {
        let failures = try await offThePool { Self.runSeeds() }
        #expect(failures.isEmpty, "\(failures.joined(separator: "\n"))")
    }

    /// Runs every seed; returns the failures (at most three, then it stops).
    static func runSeeds() -> [String] {
        var failures: [String] = []
        for seed in Self.seeds {
            do {
                let simulation = try Simulation(seed: seed)
                try simulation.run(steps: 150)
            } catch let failure as SimulationFailure {
                failures.append("\(failure)")
                if failures.count >= 3 { break }
            } catch {
                failures.append("\(SimulationFailure(seed: seed, message: "\(error)"))")
                if failures.count >= 3 { break }
            }
        }
        return failures
    }
}

@Suite struct SimulationReplayTests {
    /// A failing seed is only useful if it replays: the same seed gives the same history
    /// and the same final state.
    @Test func aSeedReplaysExactly() async throws {
        let runs = try await offThePool {
            try (0..<2).map { _ -> (trace: [String], hash: String) in
                let simulation = try Simulation(seed: 7)
                try simulation.run(steps: 60)
                return (simulation.lan.trace, try simulation.lan.nodes[0].core!.replica.stateHash().description)
            }
        }
        #expect(runs[0].trace == runs[1].trace)
        #expect(runs[0].hash == runs[1].hash)
        #expect(runs[0].trace.contains { $0.contains("joins through") }, "the run paired devices")
    }
}
