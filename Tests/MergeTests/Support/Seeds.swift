import Foundation
import Merge

typealias SeededGenerator = SplitMix64

/// The seeds a property test runs: `MERGE_SEED=n` replays exactly one; otherwise `count` seeds
/// derived from the test's name (times `MERGE_CASES_FACTOR` if set, for longer runs).
enum Seeds {
    static func forProperty(_ name: String, count: Int) -> [UInt64] {
        let environment = ProcessInfo.processInfo.environment
        if let replay = environment["MERGE_SEED"].flatMap(UInt64.init) { return [replay] }
        let factor = environment["MERGE_CASES_FACTOR"].flatMap(Int.init) ?? 1
        var base: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in name.utf8 { base = (base ^ UInt64(byte)) &* 0x0000_0100_0000_01b3 }
        return (0..<UInt64(count * factor)).map { base &+ $0 }
    }
}

extension RandomNumberGenerator {
    mutating func chance(_ probability: Double) -> Bool {
        Double.random(in: 0..<1, using: &self) < probability
    }

    mutating func pick<T>(_ options: [T]) -> T {
        options[Int.random(in: 0..<options.count, using: &self)]
    }
}
