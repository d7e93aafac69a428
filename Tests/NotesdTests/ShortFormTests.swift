import Engine
import Merge
import Testing

/// Short ids (`EngineCore.shortForms`): the shortest prefix unique among the ids, at least
/// 8 characters, never ending on a dash.
@Suite struct ShortFormTests {
    @Test func eachShortFormIsTheShortestUniquePrefixOfAtLeastEightCharacters() {
        var random = SplitMix64(seed: 7)
        // Ids close together share long prefixes, as UUIDv7 ids made in the same millisecond do.
        let base = RecordID(high: random.next(), low: random.next())
        var ids = (0..<300).map { _ in RecordID(high: base.high, low: random.next() >> (random.next() % 64)).description }
        ids += (0..<300).map { _ in RecordID(high: random.next(), low: random.next()).description }
        ids = Array(Set(ids)).sorted()
        #expect(ids.count > 550)
        let shorts = EngineCore.shortForms(ids)
        #expect(shorts.count == ids.count)
        for id in ids {
            let short = shorts[id]!
            #expect(id.hasPrefix(short) && short.count >= 8 && !short.hasSuffix("-"))
            #expect(ids.filter { $0.hasPrefix(short) }.count == 1, "\(short) is unique")
            // One character less (or two, across a dash) is shared with another id, or under 8.
            var shorter = String(short.dropLast())
            if shorter.hasSuffix("-") { shorter.removeLast() }
            #expect(shorter.count < 8 || ids.filter { $0.hasPrefix(shorter) }.count > 1, "\(short) is the shortest")
        }
        #expect(EngineCore.shortForms(["01a248d4-9fa6-74e1-b476-d307e041485a", "01a248d4-9fa7-74e1-b476-d307e041485a"]) == [
            "01a248d4-9fa6-74e1-b476-d307e041485a": "01a248d4-9fa6", "01a248d4-9fa7-74e1-b476-d307e041485a": "01a248d4-9fa7",
        ])
        #expect(EngineCore.shortForms(["01a248d4-9fa6-74e1-b476-d307e041485a"]) == ["01a248d4-9fa6-74e1-b476-d307e041485a": "01a248d4"])
    }
}
