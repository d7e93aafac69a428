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

extension ShortFormTests {
    /// The record-id form (a listing's, as lengths) answers what the text form answers, on ids that share
    /// every length of prefix: both halves, across each dash, and none.
    @Test func recordIDShortFormsMatchTheTextForm() {
        var random = SplitMix64(seed: 11)
        let base = RecordID(high: random.next(), low: random.next())
        var ids = Set<RecordID>()
        for shift in 0..<64 {
            ids.insert(RecordID(high: base.high ^ (random.next() >> UInt64(shift)), low: random.next()))
            ids.insert(RecordID(high: base.high, low: base.low ^ (random.next() >> UInt64(shift))))
        }
        for _ in 0..<200 { ids.insert(RecordID(high: random.next(), low: random.next())) }
        let sorted = ids.sorted()
        let byRecord = EngineCore.shortFormLengths(sortedRecordIDs: sorted).reduce(into: [RecordID: String]()) { $0[$1.key] = String($1.key.description.prefix($1.value)) }
        let byText = EngineCore.shortForms(sorted.map(\.description))
        #expect(byRecord.count == sorted.count)
        for id in sorted { #expect(byRecord[id] == byText[id.description], "\(id)") }
        // Lengths on both sides of every dash occur (none ends on one), and the whole id.
        #expect(Set(byRecord.values.map(\.count)).isSuperset(of: [8, 10, 13, 15, 18, 20, 23, 25, 36]))
        #expect(EngineCore.shortFormLengths(sortedRecordIDs: [base]) == [base: 8])
    }
}
