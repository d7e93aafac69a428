/// One `watch` event: the `params` of an `event` notification.
///
/// On the wire the members sit in one object: `type` names the event, `time` says when it
/// happened, and the payload's members follow, e.g.
/// `{"type":"peerConnected","time":1715000000000,"peer":{…}}`.
/// Events are hints for displays, not a log: the daemon may merge bursts (one
/// `noteChanged` per note per applied batch; `syncProgress` at most ~4 times a second per
/// peer). Re-read state with the list methods after (re)subscribing.
public struct ControlEvent: Codable, Hashable, Sendable {
    public var time: Timestamp
    public var payload: Payload

    public init(time: Timestamp, payload: Payload) {
        self.time = time
        self.payload = payload
    }

    public enum Payload: Hashable, Sendable {
        case noteChanged(NoteChangedEvent)
        case peerConnected(PeerEvent)
        case peerDisconnected(PeerEvent)
        case syncProgress(SyncProgressEvent)
        case conflictCopyCreated(ConflictCopyEvent)
        /// A type this build does not know (a newer daemon); clients skip it.
        case unknown(type: String)

        /// The wire `type`.
        public var type: String {
            switch self {
            case .noteChanged: "noteChanged"
            case .peerConnected: "peerConnected"
            case .peerDisconnected: "peerDisconnected"
            case .syncProgress: "syncProgress"
            case .conflictCopyCreated: "conflictCopyCreated"
            case .unknown(let type): type
            }
        }
    }

    /// Every `type` this build knows.
    public static let knownTypes = ["noteChanged", "peerConnected", "peerDisconnected", "syncProgress", "conflictCopyCreated"]

    private enum CodingKeys: String, CodingKey { case type, time }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        time = try container.decode(Timestamp.self, forKey: .time)
        let type = try container.decode(String.self, forKey: .type)
        payload = switch type {
        case "noteChanged": .noteChanged(try NoteChangedEvent(from: decoder))
        case "peerConnected": .peerConnected(try PeerEvent(from: decoder))
        case "peerDisconnected": .peerDisconnected(try PeerEvent(from: decoder))
        case "syncProgress": .syncProgress(try SyncProgressEvent(from: decoder))
        case "conflictCopyCreated": .conflictCopyCreated(try ConflictCopyEvent(from: decoder))
        default: .unknown(type: type)
        }
    }

    public func encode(to encoder: any Encoder) throws {
        switch payload {
        case .noteChanged(let event): try event.encode(to: encoder)
        case .peerConnected(let event), .peerDisconnected(let event): try event.encode(to: encoder)
        case .syncProgress(let event): try event.encode(to: encoder)
        case .conflictCopyCreated(let event): try event.encode(to: encoder)
        case .unknown: break
        }
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(payload.type, forKey: .type)
        try container.encode(time, forKey: .time)
    }
}

/// How a note changed.
public enum NoteChangeKind: String, Codable, Hashable, Sendable {
    case created, edited, trashed, restored
    /// Permanently deleted.
    case purged
}

/// Where a change came from.
public enum ChangeOrigin: String, Codable, Hashable, Sendable {
    /// Made on this device (through the control socket).
    case local
    /// Received from a peer (the merged result of what it sent).
    case remote
}

/// `noteChanged`: a note's visible state changed.
public struct NoteChangedEvent: Codable, Hashable, Sendable {
    /// The full note id.
    public var note: String
    public var title: String
    public var change: NoteChangeKind
    public var origin: ChangeOrigin
    /// For `remote`: the peer it came from; `nil` for `local`.
    public var device: String?
    public var deviceName: String?

    public init(note: String, title: String, change: NoteChangeKind, origin: ChangeOrigin, device: String? = nil, deviceName: String? = nil) {
        self.note = note
        self.title = title
        self.change = change
        self.origin = origin
        self.device = device
        self.deviceName = deviceName
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(note, forKey: .note)
        try container.encode(title, forKey: .title)
        try container.encode(change, forKey: .change)
        try container.encode(origin, forKey: .origin)
        try container.encodeNullable(device, forKey: .device)
        try container.encodeNullable(deviceName, forKey: .deviceName)
    }
}

/// `peerConnected` and `peerDisconnected`.
public struct PeerEvent: Codable, Hashable, Sendable {
    /// The peer's status after the change.
    public var peer: PeerStatus
    /// For `peerDisconnected`: why, one sentence (`nil` for a clean close).
    public var reason: String?

    public init(peer: PeerStatus, reason: String? = nil) {
        self.peer = peer
        self.reason = reason
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(peer, forKey: .peer)
        try container.encodeNullable(reason, forKey: .reason)
    }
}

/// `syncProgress`: a connected peer's catch-up advanced.
public struct SyncProgressEvent: Codable, Hashable, Sendable {
    /// The full device id of the peer.
    public var device: String
    public var short: String
    public var name: String
    /// As `PeerStatus.entriesBehind`; 0 means caught up.
    public var entriesBehind: Int
    /// Entries received from and sent to this peer in the current session.
    public var entriesReceived: Int
    public var entriesSent: Int

    public init(device: String, short: String, name: String, entriesBehind: Int, entriesReceived: Int, entriesSent: Int) {
        self.device = device
        self.short = short
        self.name = name
        self.entriesBehind = entriesBehind
        self.entriesReceived = entriesReceived
        self.entriesSent = entriesSent
    }
}

/// `conflictCopyCreated`: a merge kept a losing version as a new note.
public struct ConflictCopyEvent: Codable, Hashable, Sendable {
    /// The note that kept the merged result.
    public var note: String
    /// The new conflict copy's id.
    public var copy: String
    /// The copy's title (`<title> (other version)`).
    public var title: String

    public init(note: String, copy: String, title: String) {
        self.note = note
        self.copy = copy
        self.title = title
    }
}
