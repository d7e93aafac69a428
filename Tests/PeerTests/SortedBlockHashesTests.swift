import Merge
@testable import Peer
import Testing

/// Block hashes kept sorted (`SortedBlockHashes`, `SuppliedBlocks`) answer as a `Set` and a
/// `Dictionary` of the same hashes would.
@Suite struct SortedBlockHashesTests {
    /// Hashes that share leading words, so comparisons go past the first.
    private static func hash(_ a: UInt64, _ d: UInt64) -> BlockHash {
        var bytes = [UInt8](repeating: 0, count: 32)
        for index in 0..<8 {
            bytes[index] = UInt8(truncatingIfNeeded: a >> (56 - 8 * UInt64(index)))
            bytes[24 + index] = UInt8(truncatingIfNeeded: d >> (56 - 8 * UInt64(index)))
        }
        return Hash256(bytes: bytes)!
    }

    @Test func membershipAndUnionsMatchASet() {
        var random = SplitMix64(seed: 18)
        var union = SortedBlockHashes()
        var expectedUnion: Set<BlockHash> = []
        for _ in 0..<200 {
            let count = Int(random.next() % 12)
            let hashes = (0..<count).map { _ in Self.hash(random.next() % 3, random.next() % 6) }
            let sorted = SortedBlockHashes(hashes)
            #expect(sorted.hashes == Set(hashes).sorted(), "sorted, each once")
            for probe in 0..<18 as Range<UInt64> {
                let candidate = Self.hash(probe / 6, probe % 6)
                #expect(sorted.contains(candidate) == hashes.contains(candidate))
            }
            union.formUnion(sorted)
            expectedUnion.formUnion(hashes)
            #expect(union.hashes == expectedUnion.sorted())
        }
    }

    @Test func suppliedBlocksAreFoundByHashAndARepeatedHashKeepsItsFirstBlock() {
        let (a, b, c) = (Self.hash(2, 1), Self.hash(1, 9), Self.hash(2, 0))
        let supplied = SuppliedBlocks(hashes: [a, b, a, c], encoded: [[1], [2], [3], [4]])
        #expect(supplied.hashes.hashes == [b, c, a])
        #expect(supplied[a] == [1])
        #expect(supplied[b] == [2])
        #expect(supplied[c] == [4])
        #expect(supplied[Self.hash(2, 2)] == nil)
        #expect(SuppliedBlocks(hashes: [], encoded: [])[a] == nil)
    }
}
