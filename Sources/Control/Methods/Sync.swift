/// `sync` params.
public struct SyncParams: Codable, Hashable, Sendable {
    /// `false`: ask every known peer to sync now (offline peers are dialled at once, backoff
    /// reset) and answer straight away. `true`: the same, then answer once every connected
    /// peer has `entriesBehind == 0`.
    public var wait: Bool
    /// With `wait`: give up after this long with a `timeout` error whose `data` is the
    /// `SyncResult` at that moment. Absent: 30 000.
    public var timeoutMs: Int?

    public init(wait: Bool, timeoutMs: Int? = nil) {
        self.wait = wait
        self.timeoutMs = timeoutMs
    }
}

/// `sync` result.
public struct SyncResult: Codable, Hashable, Sendable {
    /// Every connected peer is caught up (true when none is connected).
    public var caughtUp: Bool
    public var peers: [PeerStatus]

    public init(caughtUp: Bool, peers: [PeerStatus]) {
        self.caughtUp = caughtUp
        self.peers = peers
    }
}

/// `watch` result; `event` notifications follow on the same connection.
public struct WatchResult: Codable, Hashable, Sendable {
    /// The event `type`s this daemon sends.
    public var events: [String]

    public init(events: [String]) { self.events = events }
}
