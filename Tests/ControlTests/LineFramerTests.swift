import Control
import Foundation
import Testing

@Suite struct LineFramerTests {
    private func strings(_ lines: [Data]) -> [String] { lines.map { String(decoding: $0, as: UTF8.self) } }

    @Test func splitAtEveryByteBoundaryGivesTheSameLines() throws {
        let stream = Array(#"{"a":1}"# .utf8) + [10] + Array("héllo\r\n".utf8) + [10, 13, 10] + Array(#"{"b":"x\r"}"#.utf8) + [10]
        let expected = [#"{"a":1}"#, "héllo", #"{"b":"x\r"}"#]
        for first in 0...stream.count {
            for second in first...stream.count {
                var framer = LineFramer()
                var lines = try framer.append(stream[..<first])
                lines += try framer.append(stream[first..<second])
                lines += try framer.append(stream[second...])
                #expect(strings(lines) == expected, "split at \(first), \(second)")
                #expect(framer.pendingByteCount == 0)
            }
        }
    }

    @Test func manyLinesInOneChunk() throws {
        var framer = LineFramer()
        let lines = try framer.append(Data("a\nb\nc\npartial".utf8))
        #expect(strings(lines) == ["a", "b", "c"])
        #expect(framer.pendingByteCount == 7)
        #expect(strings(try framer.append(Data("\n".utf8))) == ["partial"])
    }

    @Test func crlfIsOneTerminatorAndLoneCRStays() throws {
        var framer = LineFramer()
        #expect(strings(try framer.append(Data("a\r\nb\r\r\n\r\n".utf8))) == ["a", "b\r"])
    }

    @Test func blankLinesAreSkipped() throws {
        var framer = LineFramer()
        #expect(try framer.append(Data("\n\r\n\n".utf8)).isEmpty)
    }

    @Test func aLineAtTheCapPassesAndOneByteMoreFails() throws {
        var framer = LineFramer(maximumLineLength: 8)
        #expect(strings(try framer.append(Data("12345678\n".utf8))) == ["12345678"])
        #expect(strings(try framer.append(Data("12345678\r\n".utf8))) == ["12345678"], "the CR is not counted")
        #expect(throws: LineFramer.LineTooLong(maximumLineLength: 8)) { try framer.append(Data("123456789\n".utf8)) }
    }

    @Test func anOverlongLineFailsBeforeItsNewlineArrives() throws {
        var framer = LineFramer(maximumLineLength: 1024)
        let chunk = Data(repeating: UInt8(ascii: "x"), count: 100)
        var failedAfter: Int?
        // A "100 MB" line: fed until refused, never buffered past the cap.
        for sent in 1...1_000_000 {
            do {
                _ = try framer.append(chunk)
                #expect(framer.pendingByteCount <= 1025)
            } catch {
                failedAfter = sent * chunk.count
                break
            }
        }
        #expect(failedAfter == 1100, "refused at the first chunk past the cap")
        #expect(framer.pendingByteCount == 0, "the buffer is released")
        #expect(throws: LineFramer.LineTooLong.self, "stays failed") { try framer.append(Data("ok\n".utf8)) }
    }

    @Test func defaultCapIs16MiB() {
        #expect(LineFramer.defaultMaximumLineLength == 16 * 1024 * 1024)
        #expect(LineFramer().maximumLineLength == LineFramer.defaultMaximumLineLength)
    }

    @Test func randomChunkingMatchesWholeStream() throws {
        // A new seed each run (printed on failure); `LINE_FRAMER_SEED=S` replays one.
        var seed: UInt64 = ProcessInfo.processInfo.environment["LINE_FRAMER_SEED"].flatMap(UInt64.init)
            ?? UInt64(Date().timeIntervalSince1970 * 1000) & 0xFFFF_FFFF
        let originalSeed = seed
        func next() -> UInt64 {
            seed = seed &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return seed >> 33
        }
        var lines: [String] = []
        for index in 0..<200 {
            lines.append(String(repeating: "é", count: Int(next() % 40)) + "\(index)")
        }
        let stream = Array(lines.map { $0 + (next() % 2 == 0 ? "\n" : "\r\n") }.joined().utf8)
        var framer = LineFramer()
        var received: [String] = []
        var offset = 0
        while offset < stream.count {
            let size = min(Int(next() % 64) + 1, stream.count - offset)
            received += strings(try framer.append(stream[offset..<(offset + size)]))
            offset += size
        }
        #expect(received == lines, "LINE_FRAMER_SEED=\(originalSeed)")
    }
}
