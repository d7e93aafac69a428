import Foundation

/// Splits a byte stream into lines: bytes in, complete lines out. Used by both ends of the
/// control socket (docs/control-protocol.md, "Framing").
///
/// A line ends at `\n`; one `\r` right before it is dropped too (CRLF from hand-typed
/// input, e.g. `socat`). Empty lines are skipped. A line longer than `maximumLineLength`
/// bytes (terminator excluded) is an error as soon as that many bytes have arrived without a
/// newline, so a 100 MB line costs at most the cap in memory. After an error the framer
/// stays failed: the connection must be closed.
public struct LineFramer: Sendable {
    /// 16 MiB: a large note body (HTML, JSON-escaped) fits; a runaway line does not.
    public static let defaultMaximumLineLength = 16 * 1024 * 1024

    public struct LineTooLong: Error, Hashable, Sendable, CustomStringConvertible {
        public let maximumLineLength: Int

        public init(maximumLineLength: Int) { self.maximumLineLength = maximumLineLength }

        public var description: String { "a line is longer than \(maximumLineLength) bytes" }
    }

    public let maximumLineLength: Int
    private var buffer: [UInt8] = []
    /// Bytes of `buffer` already searched for `\n`, so each byte is scanned once.
    private var scanned = 0
    private var failed = false

    public init(maximumLineLength: Int = LineFramer.defaultMaximumLineLength) {
        self.maximumLineLength = maximumLineLength
    }

    /// Bytes of a line started but not finished (at end of stream: a truncated message).
    public var pendingByteCount: Int { buffer.count }

    /// Feeds bytes; returns every line they complete, in order, without terminators.
    public mutating func append(_ bytes: some Collection<UInt8>) throws(LineTooLong) -> [Data] {
        guard !failed else { throw LineTooLong(maximumLineLength: maximumLineLength) }
        buffer.append(contentsOf: bytes)
        var lines: [Data] = []
        var lineStart = 0
        while let newline = buffer[scanned...].firstIndex(of: UInt8(ascii: "\n")) {
            var lineEnd = newline
            if lineEnd > lineStart, buffer[lineEnd - 1] == UInt8(ascii: "\r") { lineEnd -= 1 }
            if lineEnd - lineStart > maximumLineLength { try fail() }
            if lineEnd > lineStart { lines.append(Data(buffer[lineStart..<lineEnd])) }
            lineStart = newline + 1
            scanned = lineStart
        }
        scanned = buffer.count
        if lineStart > 0 {
            buffer.removeFirst(lineStart)
            scanned -= lineStart
        }
        // The unfinished line may still lose one `\r`, so allow the cap plus that byte.
        if buffer.count > maximumLineLength + 1 || (buffer.count == maximumLineLength + 1 && buffer.last != UInt8(ascii: "\r")) {
            try fail()
        }
        return lines
    }

    private mutating func fail() throws(LineTooLong) -> Never {
        failed = true
        buffer = []
        scanned = 0
        throw LineTooLong(maximumLineLength: maximumLineLength)
    }
}
