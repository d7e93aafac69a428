import Testing
@testable import Merge

@Suite struct IdentifierTests {
    @Test func recordIDRoundTripsThroughText() throws {
        let id = try #require(RecordID("0190f3a4-1b2c-7d3e-8f40-123456789abc"))
        #expect(id.description == "0190f3a4-1b2c-7d3e-8f40-123456789abc")
        #expect(RecordID(bytes: id.bytes) == id)
        #expect(RecordID("0190f3a4-1b2c-7d3e-8f40-123456789ab") == nil)
        #expect(RecordID("0190f3a41b2c-7d3e-8f40-123456789abcd") == nil)
    }

    @Test func recordIDTextIsItsBytesInHexWithDashes() {
        var random = SplitMix64(seed: 42)
        for _ in 0..<2_000 {
            let id = RecordID(high: random.next(), low: random.next())
            var expected = Hex.encode(id.bytes)
            for position in [20, 16, 12, 8] { expected.insert("-", at: expected.index(expected.startIndex, offsetBy: position)) }
            #expect(id.description == expected)
            #expect(RecordID(id.description) == id)
        }
        #expect(RecordID(high: 0, low: 0).description == "00000000-0000-0000-0000-000000000000")
        #expect(RecordID(high: .max, low: .max).description == "ffffffff-ffff-ffff-ffff-ffffffffffff")
    }

    @Test func revisionIDOrdersByteWise() throws {
        let small = try #require(RevisionID(hex: "00" + String(repeating: "ff", count: 31)))
        let large = try #require(RevisionID(hex: "01" + String(repeating: "00", count: 31)))
        #expect(small < large)
        #expect(RevisionID(hex: large.description) == large)
    }

    @Test func aHashStoredIntoABufferIsItsBytes() throws {
        let hash = try #require(Hash256(bytes: (0..<32).map { UInt8($0 * 7 + 1) }))
        var buffer = [UInt8](repeating: 0xEE, count: 70)
        buffer.withUnsafeMutableBytes { hash.store(into: $0, at: 3) }
        #expect(Array(buffer[3..<35]) == hash.bytes)
        #expect(buffer[0..<3].allSatisfy { $0 == 0xEE } && buffer[35...].allSatisfy { $0 == 0xEE }, "nothing around it is touched")
    }

    /// A peer chooses the hashes a `needBlocks` frame names: were a hash to depend on part of
    /// the value, ones agreeing on that part would share one bucket (docs/decisions.md,
    /// "`Hash256` hashes all of its bytes"). Its bytes are loaded four words at a time, so
    /// each word is changed on its own, and both ways of building one must agree.
    @Test func hash256HashesEveryWordAndBothLoadsAgree() throws {
        let base = [UInt8](repeating: 0x5A, count: 32)
        let hash = try #require(Hash256(bytes: base))
        for word in 0..<4 {
            var changed = base
            changed[word * 8 + 7] ^= 1
            let other = try #require(Hash256(bytes: changed))
            #expect(other != hash)
            #expect(other.hashValue != hash.hashValue, "word \(word) is not hashed")
        }
        // Contiguous (an array slice) and not (a lazy map) read the same bytes the same way.
        let bytes = (0..<40).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 11) }
        #expect(Hash256(bytes: bytes[4..<36]) == Hash256(bytes: bytes[4..<36].lazy.map { $0 }))
        #expect(Hash256(bytes: bytes[4..<36])?.bytes == Array(bytes[4..<36]))
        #expect(Hash256(bytes: bytes[0..<31]) == nil)
    }

    @Test func hlcAdvancesPastWallTimeAndWhatItReceives() {
        let start = HLC(milliseconds: 1_000, counter: 5)
        #expect(start.advanced(now: 2_000) == HLC(milliseconds: 2_000, counter: 0))
        #expect(start.advanced(now: 500) == HLC(milliseconds: 1_000, counter: 6))
        let remote = HLC(milliseconds: 9_000, counter: 3)
        #expect(start.receiving(remote, now: 1_500) == HLC(milliseconds: 9_000, counter: 4))
        #expect(start.receiving(remote, now: 10_000) == HLC(milliseconds: 10_000, counter: 0))
    }
}
