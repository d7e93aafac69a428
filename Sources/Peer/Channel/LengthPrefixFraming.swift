/// The wire framing: a 4-byte big-endian length, then that many bytes. Decoding cuts a byte
/// stream into frames; `frame(_:)` encodes one.
///
/// Bytes may arrive split anywhere or many frames at once. The length is checked against the
/// caller's cap as soon as its 4 bytes are in, before any room is made for the frame, so a
/// hostile length costs nothing.
struct LengthPrefixFraming: Sendable {
    static let prefixLength = 4

    private var buffer: [UInt8] = []
    private var readIndex = 0

    /// Bytes received but not yet returned as a frame.
    var bufferedByteCount: Int { buffer.count - readIndex }

    /// The room the buffer holds in memory, taken or not.
    var heldCapacity: Int { buffer.capacity }

    mutating func append(_ bytes: some Collection<UInt8>) {
        if readIndex > 0 && readIndex >= buffer.count / 2 {
            buffer.removeFirst(readIndex)
            readIndex = 0
        }
        buffer.append(contentsOf: bytes)
    }

    /// The next whole frame, `nil` if more bytes are needed, or an error if the announced
    /// length exceeds `maxLength`.
    mutating func nextFrame(maxLength: Int) throws(ChannelError) -> [UInt8]? {
        guard bufferedByteCount >= Self.prefixLength else { return nil }
        let length = buffer[readIndex..<readIndex + Self.prefixLength].reduce(0) { $0 << 8 | Int($1) }
        guard length <= maxLength else { throw ChannelError(.frameTooLarge(length: length, limit: maxLength)) }
        guard bufferedByteCount >= Self.prefixLength + length else { return nil }
        let start = readIndex + Self.prefixLength
        readIndex = start + length
        return Array(buffer[start..<readIndex])
    }

    /// Empties the buffer once every frame in it is taken (`nextFrame` returned nil with
    /// nothing buffered), giving back the room a catch-up's large frames made.
    mutating func releaseIfEmpty() {
        guard readIndex > 0, readIndex == buffer.count else { return }
        buffer.emptyForIdle()
        readIndex = 0
    }

    /// `payload` with its 4-byte big-endian length in front.
    static func frame(_ payload: [UInt8]) -> [UInt8] {
        precondition(payload.count <= Int(UInt32.max), "frame of \(payload.count) bytes does not fit a 4-byte length")
        let length = UInt32(payload.count)
        return [UInt8(length >> 24), UInt8(truncatingIfNeeded: length >> 16), UInt8(truncatingIfNeeded: length >> 8), UInt8(truncatingIfNeeded: length)] + payload
    }
}

extension Array where Element == UInt8 {
    /// The most room a connection's emptied byte buffer keeps: enough for live changes'
    /// frames (a few KiB), far less than a catch-up's (up to 2 MiB).
    static let idleBufferCapacity = 64 * 1024

    /// Empties a connection's byte buffer (bytes received, or queued to send), keeping its
    /// storage only when small: an idle connection that carried a catch-up would otherwise
    /// hold its largest frame's memory for as long as it stays connected (docs/decisions.md,
    /// "A connection's buffers shrink when it idles").
    mutating func emptyForIdle() {
        removeAll(keepingCapacity: capacity <= Self.idleBufferCapacity)
    }
}
