/// The wire framing: a 4-byte big-endian length, then that many bytes. Decoding cuts a byte
/// stream into frames; `frame(_:)` encodes one.
///
/// Bytes may arrive split anywhere or many frames at once. The length is checked against the
/// caller's cap as soon as its 4 bytes are in, before any room is made for the frame, so a
/// length over it costs nothing. A length within the cap has its frame's room made at once,
/// before its bytes arrive: a peer that announces a frame and stalls holds that room until it
/// sends the rest or the connection closes, at most the cap (64 KiB until the handshake has
/// authenticated the peer, of which a daemon lets 32 be pending; then the transport's cap).
struct LengthPrefixFraming: Sendable {
    static let prefixLength = 4

    /// Bytes received after the last frame begun, its length not yet read (usually a few: the
    /// start of the next frame in the same read).
    private var pending: [UInt8] = []
    private var pendingIndex = 0
    /// The frame being received, in its own array, made with room for its announced length
    /// (`incomingLength`): the bytes of a frame are copied once, into the array handed on,
    /// instead of into a growing buffer and out again (docs/decisions.md, "A frame received
    /// into its own array").
    private var incoming: [UInt8] = []
    private var incomingLength: Int?

    /// Bytes received but not yet returned as a frame.
    var bufferedByteCount: Int {
        pending.count - pendingIndex + (incomingLength == nil ? 0 : Self.prefixLength + incoming.count)
    }

    /// The room the buffers hold in memory, taken or not.
    var heldCapacity: Int { pending.capacity + incoming.capacity }

    mutating func append(_ bytes: some Collection<UInt8>) {
        var bytes = bytes[...]
        if let length = incomingLength, pendingIndex == pending.count {
            let taken = bytes.prefix(length - incoming.count)
            incoming.append(contentsOf: taken)
            bytes = bytes[taken.endIndex...]
        }
        guard !bytes.isEmpty else { return }
        if pendingIndex > 0 && pendingIndex >= pending.count / 2 {
            pending.removeFirst(pendingIndex)
            pendingIndex = 0
        }
        pending.append(contentsOf: bytes)
    }

    /// The next whole frame, `nil` if more bytes are needed, or an error if the announced
    /// length exceeds `maxLength`.
    mutating func nextFrame(maxLength: Int) throws(ChannelError) -> [UInt8]? {
        if incomingLength == nil {
            guard pending.count - pendingIndex >= Self.prefixLength else { return nil }
            let length = pending[pendingIndex..<pendingIndex + Self.prefixLength].reduce(0) { $0 << 8 | Int($1) }
            guard length <= maxLength else { throw ChannelError(.frameTooLarge(length: length, limit: maxLength)) }
            pendingIndex += Self.prefixLength
            incomingLength = length
            incoming.reserveCapacity(length)
        }
        let length = incomingLength!
        if incoming.count < length, pendingIndex < pending.count {
            let end = min(pending.count, pendingIndex + length - incoming.count)
            incoming.append(contentsOf: pending[pendingIndex..<end])
            pendingIndex = end
        }
        guard incoming.count == length else { return nil }
        incomingLength = nil
        defer { incoming = [] }
        return incoming
    }

    /// Empties the buffer of bytes not yet framed once every byte in it is taken (`nextFrame`
    /// returned nil), keeping at most `idleBufferCapacity` of room. A frame received in part
    /// keeps its own array, which is the frame's size and is handed on whole.
    mutating func releaseIfEmpty() {
        guard pendingIndex > 0, pendingIndex == pending.count else { return }
        pending.emptyForIdle()
        pendingIndex = 0
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
