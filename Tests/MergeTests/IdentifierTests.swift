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

    @Test func hlcAdvancesPastWallTimeAndWhatItReceives() {
        let start = HLC(milliseconds: 1_000, counter: 5)
        #expect(start.advanced(now: 2_000) == HLC(milliseconds: 2_000, counter: 0))
        #expect(start.advanced(now: 500) == HLC(milliseconds: 1_000, counter: 6))
        let remote = HLC(milliseconds: 9_000, counter: 3)
        #expect(start.receiving(remote, now: 1_500) == HLC(milliseconds: 9_000, counter: 4))
        #expect(start.receiving(remote, now: 10_000) == HLC(milliseconds: 10_000, counter: 0))
    }
}
