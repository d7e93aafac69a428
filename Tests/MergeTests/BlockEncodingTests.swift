import Testing
@testable import Merge

@Suite struct BlockEncodingTests {
    /// The format is frozen: blocks are content-addressed by these bytes on every device.
    @Test func encodingIsTheDocumentedFormat() {
        #expect(Block(.paragraph, content: "hi").encoded() == [1, 0, 0, 2, 0x68, 0x69])
        #expect(Block(.heading(level: 2), content: "").encoded() == [1, 2, 2, 0, 0])
        #expect(Block(.opaque, content: "<x>").encoded() == [1, 7, 3, 0x3C, 0x78, 0x3E])
        #expect(Block(.rule, attributes: [HTMLAttribute(name: "hidden")]).encoded() == [1, 5, 1, 6] + Array("hidden".utf8) + [0, 0])
        let item = Block(
            .listItem(containers: [ListContainer(ordered: true, attributes: [HTMLAttribute(name: "start", value: "3")])]),
            attributes: [HTMLAttribute(name: "data-checked", value: "true")], content: "Eggs")
        #expect(item.encoded() == [1, 6, 1, 1, 1, 5] + Array("start".utf8) + [1, 1] + Array("3".utf8)
            + [1, 12] + Array("data-checked".utf8) + [1, 4] + Array("true".utf8) + [4] + Array("Eggs".utf8))
        // The fingerprint is FNV-1a 64 of those bytes.
        #expect(item.fingerprint == Fingerprint.of(item.encoded()))
        // Long content takes a multi-byte length.
        let long = Block(.code, content: String(repeating: "x", count: 300))
        #expect(Array(long.encoded().prefix(6)) == [1, 4, 0, 0xAC, 0x02, 0x78])
    }

    @Test func everyKindRoundTrips() throws {
        let blocks = HTMLBlocks.split("""
            <h3 id="a">T</h3><p>p &amp; <b>b</b></p><div>d</div><blockquote>q</blockquote><pre> code\n</pre><hr>\
            <ol start="2"><li data-checked="true">i<ul class="x"><li>j</li></ul></li></ol><table><tr><td>t</td></tr></table>
            """)
        #expect(blocks.count == 9)
        for block in blocks {
            let decoded = try Block(encoded: block.encoded())
            #expect(decoded == block)
            #expect(decoded.fingerprint == block.fingerprint)
            #expect(decoded.encoded() == block.encoded())
            try Block.check(encoded: block.encoded())
            // The search index's text, taken without building the block, is the block's text.
            #expect(try Block.text(encoded: block.encoded()) == block.text)
        }
        #expect(blocks.map(\.text).contains("p & b"))
    }

    @Test func malformedEncodingsAreErrorsWithReasons() {
        let cases: [([UInt8], String)] = [
            ([], "ends before the version"),
            ([2, 0, 0, 0], "version 2"),
            ([1, 9, 0, 0], "unknown block kind 9"),
            ([1, 0, 0, 2, 0x68], "exceeds"),
            ([1, 0, 0, 0, 0xFF], "follow the end"),
            ([1, 0, 0, 0x82, 0x00, 0x68, 0x69], "shortest form"),
            ([1, 0, 0, 1, 0xFF], "UTF-8"),
            ([1, 0, 0, 3, 0xED, 0xA0, 0x80], "UTF-8"),  // a UTF-16 surrogate
            ([1, 0, 0, 2, 0xC0, 0xAF], "UTF-8"),  // an overlong "/"
            ([1, 0, 1, 2, 0xC3, 0x28, 0, 0], "UTF-8"),  // in an attribute name
            ([1, 2, 0, 0, 0], "heading level 0"),
            ([1, 6, 0, 0, 0], "at least one containing list"),
            ([1, 0, 1, 1, 0x61, 2, 0], "not 0 or 1"),
            ([1, 5, 0, 1, 0x78], "a rule has no content"),
            ([1, 0, 1, 1, 0x41, 0, 0], "not lower-case"),
            ([1, 0, 1, 0, 0, 0], "name is empty"),
            // The first bad name in encoding order: the containing list's before the item's.
            ([1, 6, 1, 0, 1, 1, 0x41, 0, 1, 1, 0x42, 0, 0], "name \"A\""),
            // A malformed encoding is reported before a bad name in it.
            ([1, 0, 1, 1, 0x41, 0, 0, 0xFF], "follow the end"),
            ([1, 0, 1, 1, 0x41, 0, 1, 0xFF], "UTF-8"),
            ([1, 0, 0xFF, 0xFF, 0xFF, 0xFF, 0x0F], "exceeds"),
            ([1, 0] + [UInt8](repeating: 0xFF, count: 10) + [1], "64 bits"),
        ]
        for (bytes, reason) in cases {
            #expect {
                _ = try Block(encoded: bytes)
            } throws: { error in
                "\(error)".contains(reason)
            }
            // The receiver's check refuses it with the very same error, and so does taking
            // its text.
            #expect(Self.checkError(bytes) == Self.decodeError(bytes))
            #expect(Self.textError(bytes) == Self.decodeError(bytes))
        }
    }

    /// The check reads UTF-8 in place and the decoder as it makes the string: they must agree
    /// on every one- and two-byte sequence and on the edges of the longer ones, in the content
    /// and in an attribute's value.
    @Test func checkAndDecodeAgreeOnEveryShortUTF8Sequence() {
        var sequences: [[UInt8]] = []
        for first in 0...255 {
            sequences.append([UInt8(first)])
            for second in 0...255 { sequences.append([UInt8(first), UInt8(second)]) }
        }
        for lead in 0xE0...0xEF {
            for second in [0x7F, 0x80, 0x9F, 0xA0, 0xBF, 0xC0] { sequences.append([UInt8(lead), UInt8(second), 0x80]) }
        }
        sequences += [
            [0xF0, 0x8F, 0xBF, 0xBF], [0xF0, 0x90, 0x80, 0x80], [0xF4, 0x8F, 0xBF, 0xBF], [0xF4, 0x90, 0x80, 0x80],
            [0xF5, 0x80, 0x80, 0x80], [0xE2, 0x82], [0xE2, 0x82, 0xAC], [0xED, 0x9F, 0xBF], [0xED, 0xA0, 0x80],
        ]
        var valid = 0
        for utf8 in sequences {
            let content: [UInt8] = [1, 0, 0, UInt8(utf8.count)] + utf8
            let value: [UInt8] = [1, 0, 1, 1, 0x61, 1, UInt8(utf8.count)] + utf8 + [0]
            for bytes in [content, value] {
                #expect(Self.checkError(bytes) == Self.decodeError(bytes), "check and decode disagree on \(bytes)")
            }
            if Self.decodeError(content) == nil { valid += 1 }
        }
        // 128 one-byte sequences, 128 × 128 + 30 × 64 two-byte ones, 60 of the three-byte
        // edges and 4 of the last list are valid UTF-8: both readers know which.
        #expect(valid == 128 + 128 * 128 + 30 * 64 + 60 + 4)
    }

    /// `Block.check`'s error for `bytes`, which it must also give for the same bytes checked
    /// in the middle of a larger buffer, as a received frame's blocks are (their offsets
    /// counted from the block's start).
    private static func checkError(_ bytes: [UInt8]) -> BlockDecodingError? {
        var whole: BlockDecodingError?
        do { try Block.check(encoded: bytes) } catch { whole = error }
        let framed: [UInt8] = [0xFF, 0xFF] + bytes + [0xEE]
        var inFrame: BlockDecodingError?
        do { try Block.check(encoded: framed[2..<2 + bytes.count]) } catch { inFrame = error }
        #expect(inFrame == whole, "checked inside a larger buffer, \(bytes) gives another answer")
        return whole
    }

    private static func textError(_ bytes: [UInt8]) -> BlockDecodingError? {
        do { _ = try Block.text(encoded: bytes) } catch { return error }
        return nil
    }

    private static func decodeError(_ bytes: [UInt8]) -> BlockDecodingError? {
        do { _ = try Block(encoded: bytes) } catch { return error }
        return nil
    }

    @Test func randomBytesNeverCrashAndOnlyCanonicalBytesDecode() {
        let valid = HTMLBlocks.split("<p>x</p><ol><li data-checked=true>y</li></ol><h2 class=c>z</h2>").map { $0.encoded() }
        for seed in Seeds.forProperty("randomBytesNeverCrashAndOnlyCanonicalBytesDecode", count: 3_000) {
            var random = SeededGenerator(seed: seed)
            var bytes = random.pick(valid)
            if random.chance(0.3) {
                bytes = (0..<Int.random(in: 0...20, using: &random)).map { _ in UInt8.random(in: 0...255, using: &random) }
            } else {
                for _ in 0..<Int.random(in: 1...3, using: &random) {
                    let index = Int.random(in: 0..<bytes.count, using: &random)
                    switch Int.random(in: 0..<3, using: &random) {
                    case 0: bytes[index] = UInt8.random(in: 0...255, using: &random)
                    case 1: bytes.remove(at: index)
                    default: bytes.insert(UInt8.random(in: 0...255, using: &random), at: index)
                    }
                    if bytes.isEmpty { break }
                }
            }
            if let block = try? Block(encoded: bytes) {
                #expect(block.encoded() == bytes, "MERGE_SEED=\(seed): decoded non-canonical bytes \(bytes)")
            }
            #expect(Self.checkError(bytes) == Self.decodeError(bytes), "MERGE_SEED=\(seed): check and decode disagree on \(bytes)")
        }
    }
}
