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
        var writer = JSONWriter()
        summaries.writeJSON(to: &writer)
        let encoded = try ControlJSON.encoder().encode(summaries)
        #expect(String(decoding: writer.bytes, as: UTF8.self) == String(decoding: encoded, as: UTF8.self))
        #expect(Data(writer.bytes) == encoded)
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
