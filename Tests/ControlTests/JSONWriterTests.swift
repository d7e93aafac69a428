import Control
import Foundation
import Testing

/// Answers written directly (`DirectJSONEncodable`) are byte for byte what `JSONEncoder`
/// writes for them, so no client can tell which wrote an answer.
@Suite struct JSONWriterTests {
    /// Every character JSON must escape, quotes, slashes, non-ASCII text and emoji.
    static let awkward: [String] = [
        "", "plain", "a \"quoted\" word", "back\\slash", "path/with/slashes", "</script>", "tab\there", "new\nline",
        "carriage\rreturn", "bell\u{7}", "nul\u{0}", "del\u{7F}", "line separator\u{2028}paragraph\u{2029}",
        "Grüße, 日本語, emoji 🧑‍🍳", String((0..<32).map { Character(Unicode.Scalar(UInt8($0))) }),
    ]

    static func summaries() -> [NoteSummary] {
        awkward.enumerated().map { index, text in
            NoteSummary(
                id: "0190f3a4-1b2c-7d3e-8f40-12345678\(String(format: "%04x", index))", short: "0190f3a4", title: text,
                folder: index % 2 == 0 ? nil : text, folderPath: text, pinned: index % 3 == 0, color: index % 4 == 0 ? nil : "#\(text)",
                tags: index % 5 == 0 ? [] : [text, "tag"], trashed: index % 2 == 1, conflictOf: index % 3 == 1 ? text : nil,
                created: Timestamp(millisecondsSince1970: Int64(index) * 1_000_000 - 5), modified: Timestamp(millisecondsSince1970: .max - Int64(index)))
        }
    }

    @Test func summariesAreWrittenAsTheEncoderWritesThem() throws {
        let summaries = Self.summaries()
        // A small first buffer, so the writer grows many times on the way.
        var writer = JSONWriter(capacity: 16)
        summaries.writeJSON(to: &writer)
        let written = writer.data()
        let encoded = try ControlJSON.encoder().encode(summaries)
        #expect(String(decoding: written, as: UTF8.self) == String(decoding: encoded, as: UTF8.self))
        #expect(written == encoded)
    }

    @Test func theResponseLineIsTheEnvelopeTheEncoderWrites() throws {
        let summaries = Self.summaries()
        let result = String(decoding: try ControlJSON.encoder().encode(summaries), as: UTF8.self)
        for (id, text) in [(RequestID.number(-7), "-7"), (.string("a \"string\" id"), "\"a \\\"string\\\" id\"")] {
            let line = ControlWire.response(id: id, Result<[NoteSummary], RPCError>.success(summaries))
            #expect(String(decoding: line, as: UTF8.self) == "{\"id\":\(text),\"jsonrpc\":\"2.0\",\"result\":\(result)}\n")
        }
    }
}

extension JSONWriterTests {
    /// A listing's buffer is sized from the estimate: for summaries with nothing to escape it
    /// is close to what is written (not under by much, which would grow the buffer, nor far
    /// over, which would waste memory on every large answer).
    @Test func theEstimateIsCloseToWhatIsWritten() {
        let plain = (0..<100).map { (index: Int) -> NoteSummary in
            let inFolder = index % 2 == 1
            let id = "0190f3a4-1b2c-7d3e-8f40-12345678" + String(format: "%04x", index)
            return NoteSummary(
                id: id, short: "0190f3a4", title: "Note number \(index)",
                folder: inFolder ? "0190f3a4-1b2c-7d3e-8f40-123456780000" : nil, folderPath: inFolder ? "Work/Projects" : "",
                pinned: false, color: nil, tags: index % 3 == 0 ? ["home"] : [], trashed: false, conflictOf: nil,
                created: Timestamp(millisecondsSince1970: 1_790_000_000_000), modified: Timestamp(millisecondsSince1970: 1_790_000_000_000 + Int64(index)))
        }
        var writer = JSONWriter()
        plain.writeJSON(to: &writer)
        let written = Double(writer.data().count)
        let estimate = Double(plain.estimatedJSONBytes)
        #expect(estimate >= written * 0.95, "estimate \(estimate), written \(written)")
        #expect(estimate <= written * 1.15, "estimate \(estimate), written \(written)")
    }
}

extension JSONWriterTests {
    /// A listing long enough to be written in two halves at once (`TwoHalves`) is the same
    /// bytes as the encoder's, the halves joined in order.
    @Test func aLargeListingWrittenInTwoHalvesIsTheEncodersBytes() throws {
        let summaries = (0..<(TwoHalves.minimumElements + 501)).map { index in
            var summary = Self.summaries()[index % Self.awkward.count]
            summary.title += " \(index)"
            return summary
        }
        let line = ControlWire.response(id: .number(3), Result<[NoteSummary], RPCError>.success(summaries))
        let result = String(decoding: try ControlJSON.encoder().encode(summaries), as: UTF8.self)
        #expect(String(decoding: line, as: UTF8.self) == "{\"id\":3,\"jsonrpc\":\"2.0\",\"result\":\(result)}\n")
    }

    /// Integers are written digit by digit in place: the extremes, zero and each sign.
    @Test func integersAreWrittenAsTheirDecimalText() {
        let values: [Int64] = [0, 1, -1, 9, 10, -10, 1_790_000_000_000, .max, .min, .min + 1]
        for value in values {
            var writer = JSONWriter(capacity: 1)
            writer.raw("[")
            writer.integer(value)
            writer.raw("]")
            #expect(String(decoding: writer.data(), as: UTF8.self) == "[\(value)]")
        }
    }
}

extension JSONWriterTests {
    /// Search hits (summary, snippet, bm25 score) are the encoder's bytes too, for scores of
    /// every shape: integral, tiny, huge, negative zero, and random ones.
    @Test func searchHitsAreWrittenAsTheEncoderWritesThem() throws {
        var random = SystemRandomNumberGenerator()
        var ranks: [Double] = [0, -0.0, 1, -1, 0.5, -3.2195121951219514, 1e-7, 1.5e-300, 12_345_678.9, 1e21, -2.5e22, .ulpOfOne, .greatestFiniteMagnitude]
        ranks += (0..<200).map { _ in Double(bitPattern: random.next()) }.filter(\.isFinite)
        ranks += (0..<200).map { _ in -Double.random(in: 0..<40, using: &random) }
        let hits = ranks.enumerated().map { index, rank in
            SearchHit(note: Self.summaries()[index % Self.awkward.count], snippet: "a \u{2}match\u{3} in \"text\" \(index)", rank: rank)
        }
        for hit in hits {
            var writer = JSONWriter(capacity: 8)
            hit.writeJSON(to: &writer)
            let written = writer.data()
            #expect(written == (try ControlJSON.encoder().encode(hit)), "rank \(hit.rank)")
        }
    }
}
