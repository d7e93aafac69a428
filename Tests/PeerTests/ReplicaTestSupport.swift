import Foundation
import Merge
@testable import Peer
import TestSupport

/// A deterministic byte source for replica ids and record ids.
enum SeededBytes {
    /// A closure for `Replica(randomBytes:)`, drawing from one seeded stream.
    static func source(seed: UInt64) -> (Int) -> [UInt8] {
        let box = Box(SplitMix64(seed: seed))
        return { count in (0..<count).map { _ in UInt8(truncatingIfNeeded: box.value.next()) } }
    }

    final class Box {
        var value: SplitMix64
        init(_ value: SplitMix64) { self.value = value }
    }
}

/// Blocks from simple paragraph texts, for tests that do not care about HTML details.
func paragraphs(_ texts: [String]) -> [Block] { HTMLBlocks.split(texts.map { "<p>\($0)</p>" }.joined(separator: "\n")) }

/// Runs the pull loop in-process until `receiver` holds everything `sender` has.
/// Returns how many entries were applied.
@discardableResult
func pull(into receiver: Replica, from sender: Replica, now: UInt64 = 1_000) throws -> Int {
    var applied = 0
    for _ in 0..<10_000 {
        let batch = try sender.entries(missingFrom: receiver.vector, maxCount: 7)
        if batch.isEmpty { return applied }
        let outcome = try receiver.apply(batch, now: now)
        if let need = outcome.need {
            guard case .blocks(let hashes) = need else { throw ReplicaError.invalid("unexpected need: \(need)") }
            try receiver.storeBlocks(try sender.availableBlocks(hashes, maxBytes: .max, peerHolds: receiver.vector))
        }
        if let rejected = outcome.rejected { throw ReplicaError.invalid(rejected) }
        applied += outcome.applied
    }
    throw ReplicaError.invalid("pull did not finish")
}

/// Exchanges entries among all replicas until nobody lacks anything.
func syncAll(_ replicas: [Replica], now: UInt64 = 1_000) throws {
    for _ in 0..<replicas.count + 1 {
        for receiver in replicas {
            for sender in replicas where sender !== receiver { try pull(into: receiver, from: sender, now: now) }
        }
    }
}

extension Replica {
    /// Every stored block as "record hash refs" (the references of the pack holding it), in
    /// order: what the block store holds, whatever the shape of its packs.
    func storedBlockList() throws -> [String] {
        var list: [String] = []
        try forEachStoredBlock { record, hash, _, refs in list.append("\(record) \(hash) \(refs)") }
        return list.sorted()
    }

    /// How many blocks are stored, under `record` or in all.
    func storedBlockCount(of record: RecordID? = nil) throws -> Int {
        var count = 0
        try forEachStoredBlock { stored, _, _, _ in if record == nil || stored == record { count += 1 } }
        return count
    }

    /// How many block packs (rows) are stored, under `record` or in all.
    func packCount(of record: RecordID? = nil) throws -> Int {
        let count = try record.map { try database.first("SELECT count(*) FROM block_packs WHERE record = ?1", [.record($0)]) { $0.int(0) } }
            ?? database.first("SELECT count(*) FROM block_packs") { $0.int(0) }
        return Int(count ?? -1)
    }
}
