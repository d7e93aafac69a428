import Foundation

/// Server-Sent Events framing (HTML Living Standard, "Server-sent events"): one event is
/// `id:`, `event:` and `data:` lines and a blank line. Our data is one line of JSON, which
/// never holds a raw newline (JSON escapes it), so one `data:` line always suffices.
public enum ServerSentEvents {
    public static func event(id: String?, type: String, data: Data) -> Data {
        var frame = Data()
        if let id { frame.append(contentsOf: Array("id: \(id)\n".utf8)) }
        frame.append(contentsOf: Array("event: \(type)\ndata: ".utf8))
        // Defensive: any CR or LF would end the data line early; JSON has none outside strings.
        frame.append(contentsOf: data.filter { $0 != 0x0A && $0 != 0x0D })
        frame.append(contentsOf: Array("\n\n".utf8))
        return frame
    }

    /// A comment line: keeps proxies and the client's read timeout from closing an idle
    /// stream, and lets the server notice a client that has gone.
    public static let keepalive = Data(": keepalive\n\n".utf8)

    /// Sent first on every stream: how long a client should wait before reconnecting.
    public static let retry = Data("retry: 2000\n\n".utf8)
}

/// The last events, numbered, so a client that reconnects with `Last-Event-ID` gets what it
/// missed. Pure and bounded: `capacity` events at most. Ids are `EPOCH-N`: `epoch` changes
/// with every daemon start (and whenever recording resumes after a pause), so an id from
/// another epoch is a gap this ring cannot fill, answered with a resync.
public struct EventRing: Sendable {
    public struct Entry: Hashable, Sendable {
        public var id: String
        public var type: String
        public var data: Data
    }

    public let capacity: Int
    public private(set) var epoch: String
    private var entries: [Entry] = []
    /// The sequence number of the next event in this epoch.
    private var next: UInt64 = 1
    /// The oldest number still held (entries are consecutive from here).
    private var oldest: UInt64 = 1

    public init(capacity: Int, epoch: String) {
        precondition(capacity > 0, "an event ring holds at least one event")
        self.capacity = capacity
        self.epoch = epoch
    }

    /// Records one event and returns its entry (with its id).
    @discardableResult
    public mutating func append(type: String, data: Data) -> Entry {
        let entry = Entry(id: "\(epoch)-\(next)", type: type, data: data)
        next += 1
        entries.append(entry)
        if entries.count > capacity {
            entries.removeFirst(entries.count - capacity)
            oldest = next - UInt64(entries.count)
        }
        return entry
    }

    /// Starts a new epoch: events were not recorded for a while, so no earlier id can be
    /// resumed from.
    public mutating func restart(epoch: String) {
        self.epoch = epoch
        entries = []
        next = 1
        oldest = 1
    }

    /// The id the next event will carry minus one: what a new stream starts "after".
    public var latestID: String { "\(epoch)-\(next - 1)" }

    public enum Resumption: Hashable, Sendable {
        /// Every event after the client's id, oldest first (maybe none).
        case events([Entry])
        /// The id is from another epoch or older than the ring: the client must re-read.
        case gap
    }

    /// What a client that last saw `lastID` missed.
    public func events(after lastID: String) -> Resumption {
        guard let dash = lastID.lastIndex(of: "-"), lastID[..<dash] == epoch,
              let seen = UInt64(lastID[lastID.index(after: dash)...]), seen < next
        else { return .gap }
        guard seen + 1 >= oldest else { return .gap }
        return .events(Array(entries[Int(seen + 1 - oldest)...]))
    }
}
