/// `status` result: who this daemon is, where it listens, and how syncing goes.
public struct StatusResult: Codable, Hashable, Sendable {
    /// notesd's release, e.g. `0.1.0`.
    public var version: String
    /// When this daemon process started; `counters` count from here.
    public var started: Timestamp
    public var device: DeviceLabel
    /// `nil` when this device was removed from its household.
    public var household: HouseholdInfo?
    /// The TCP addresses the sync listener is bound to, `host:port` (IPv6 as `[addr]:port`).
    public var listen: [String]
    public var controlSocket: String
    public var dataDir: String
    public var discovery: DiscoveryStatus
    /// Every known peer: roster devices and static addresses (`--peer`, `connect`).
    public var peers: [PeerStatus]
    public var counters: SyncCounters
    /// Live notes, trashed ones included, conflict copies included.
    public var noteCount: Int
    /// The local web server; `nil` from daemons without one.
    public var web: WebStatus?
    /// Notes a catch-up received that `notes.search` does not find yet: they are being
    /// indexed, in the background. Absent when there are none (and from daemons before 0.2).
    public var notesToIndex: Int?

    public init(
        version: String, started: Timestamp, device: DeviceLabel, household: HouseholdInfo?,
        listen: [String], controlSocket: String, dataDir: String, discovery: DiscoveryStatus,
        peers: [PeerStatus], counters: SyncCounters, noteCount: Int, web: WebStatus? = nil, notesToIndex: Int? = nil
    ) {
        self.version = version
        self.started = started
        self.device = device
        self.household = household
        self.listen = listen
        self.controlSocket = controlSocket
        self.dataDir = dataDir
        self.discovery = discovery
        self.peers = peers
        self.counters = counters
        self.noteCount = noteCount
        self.web = web
        self.notesToIndex = notesToIndex
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(version, forKey: .version)
        try container.encode(started, forKey: .started)
        try container.encode(device, forKey: .device)
        try container.encodeNullable(household, forKey: .household)
        try container.encode(listen, forKey: .listen)
        try container.encode(controlSocket, forKey: .controlSocket)
        try container.encode(dataDir, forKey: .dataDir)
        try container.encode(discovery, forKey: .discovery)
        try container.encode(peers, forKey: .peers)
        try container.encode(counters, forKey: .counters)
        try container.encode(noteCount, forKey: .noteCount)
        try container.encodeIfPresent(web, forKey: .web)
        try container.encodeIfPresent(notesToIndex, forKey: .notesToIndex)
    }
}

/// A device as it names itself: the full id (base32 fingerprint of its public key) and the
/// short form shown to people.
public struct DeviceLabel: Codable, Hashable, Sendable {
    public var id: String
    public var short: String
    public var name: String

    public init(id: String, short: String, name: String) {
        self.id = id
        self.short = short
        self.name = name
    }
}

public struct HouseholdInfo: Codable, Hashable, Sendable {
    /// A public identifier of the household (never its key).
    public var id: String
    public var short: String
    /// Devices on the roster that are not revoked, this one included.
    public var deviceCount: Int
    /// The household key as this device holds it; absent from daemons before key rotation.
    public var key: HouseholdKeyState?

    public init(id: String, short: String, deviceCount: Int, key: HouseholdKeyState? = nil) {
        self.id = id
        self.short = short
        self.deviceCount = deviceCount
        self.key = key
    }
}

/// The household key as this device sees it (docs/security.md, "Key rotation").
public struct HouseholdKeyState: Codable, Hashable, Sendable {
    public enum State: String, Codable, Hashable, Sendable {
        /// Nothing pending.
        case settled
        /// A new key is held here; the previous one is still accepted until every member
        /// holds the new one.
        case distributing
        /// A removed device may still hold the key; a member's notesd must be updated first.
        case waitingForUpdate
        /// A newer key exists and has not reached this device yet.
        case waitingForKey
        /// This device is not a member of a household.
        case notMember
        /// Household devices no longer accept this device's key: it was probably removed.
        case lockedOut
    }

    /// 0 for the key the household started with, one more at each rotation.
    public var epoch: UInt64
    public var state: State
    /// What is happening, and what to do, as a sentence.
    public var message: String
    /// Older keys still accepted from devices that have not taken the current one.
    public var previousKeysAccepted: Int

    public init(epoch: UInt64, state: State, message: String, previousKeysAccepted: Int) {
        self.epoch = epoch
        self.state = state
        self.message = message
        self.previousKeysAccepted = previousKeysAccepted
    }
}

public enum DiscoveryState: String, Codable, Hashable, Sendable {
    /// Turned off (`--no-mdns`); static peers only.
    case disabled
    /// Waiting for the Avahi daemon to answer.
    case starting
    /// Publishing and browsing `_notesd._tcp`.
    case running
    /// Avahi is absent or failed; `reason` says why. Static peers still work.
    case unavailable
}

public struct DiscoveryStatus: Codable, Hashable, Sendable {
    public var state: DiscoveryState
    /// What discovery is doing, in one sentence: why it is `unavailable` or `disabled`, the
    /// name it advertises when `running`.
    public var reason: String?

    public init(state: DiscoveryState, reason: String? = nil) {
        self.state = state
        self.reason = reason
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(state, forKey: .state)
        try container.encodeNullable(reason, forKey: .reason)
    }
}

/// The per-peer status of docs/protocol.md.
public enum PeerState: String, Codable, Hashable, Sendable, CaseIterable {
    /// Dialling or in the handshake.
    case connecting
    /// Connected and exchanging entries (`entriesBehind > 0`).
    case syncing
    /// Connected and caught up.
    case idle
    /// Not connected; retried with backoff.
    case offline
    /// Refused: not on the roster, revoked, wrong household, or protocol version mismatch
    /// (`lastError` says which). Not retried until something changes.
    case blocked
}

/// One peer as this daemon sees it.
public struct PeerStatus: Codable, Hashable, Sendable {
    /// The full device id; `nil` for a static address whose handshake has not completed.
    public var device: String?
    public var short: String?
    public var name: String?
    /// The `host:port` last used or being tried; `nil` when none is known yet.
    public var address: String?
    public var status: PeerState
    /// The last time this peer and this device were fully caught up.
    public var lastSync: Timestamp?
    /// The last failure, one sentence; cleared by a successful sync.
    public var lastError: String?
    /// When `lastError` happened, when known (added after 0.1).
    public var lastErrorAt: Timestamp?
    /// Log entries still to exchange, both directions summed, from the last version vectors
    /// exchanged (what this device lacks from the peer plus what the peer lacks from it);
    /// 0 when caught up or never connected.
    public var entriesBehind: Int
    /// Failed connection attempts since the last success (drives the backoff).
    public var retries: Int
    /// A session is established (handshake done) right now.
    public var connected: Bool
    /// The peer's notesd version as its handshake gave it, "0.1 or earlier" when it gave none
    /// (that release advertises nothing); `nil` when it never completed a handshake with this
    /// device (added after 0.1).
    public var version: String?

    public init(
        device: String?, short: String?, name: String?, address: String?, status: PeerState,
        lastSync: Timestamp?, lastError: String?, lastErrorAt: Timestamp? = nil, entriesBehind: Int, retries: Int, connected: Bool,
        version: String? = nil
    ) {
        self.device = device
        self.short = short
        self.name = name
        self.address = address
        self.status = status
        self.lastSync = lastSync
        self.lastError = lastError
        self.lastErrorAt = lastErrorAt
        self.entriesBehind = entriesBehind
        self.retries = retries
        self.connected = connected
        self.version = version
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encodeNullable(device, forKey: .device)
        try container.encodeNullable(short, forKey: .short)
        try container.encodeNullable(name, forKey: .name)
        try container.encodeNullable(address, forKey: .address)
        try container.encode(status, forKey: .status)
        try container.encodeNullable(lastSync, forKey: .lastSync)
        try container.encodeNullable(lastError, forKey: .lastError)
        try container.encodeIfPresent(lastErrorAt, forKey: .lastErrorAt)
        try container.encode(entriesBehind, forKey: .entriesBehind)
        try container.encode(retries, forKey: .retries)
        try container.encode(connected, forKey: .connected)
        try container.encodeIfPresent(version, forKey: .version)
    }
}

/// Counters since the daemon started.
public struct SyncCounters: Codable, Hashable, Sendable {
    /// Log entries sent to peers (resends included).
    public var entriesSent: Int
    /// Log entries received from peers and newly stored (duplicates excluded).
    public var entriesReceived: Int
    public var conflictCopiesCreated: Int
    /// Outgoing connection attempts or handshakes that failed.
    public var failedConnections: Int
    public var syncLagMs: LagSummary

    public init(entriesSent: Int, entriesReceived: Int, conflictCopiesCreated: Int, failedConnections: Int, syncLagMs: LagSummary) {
        self.entriesSent = entriesSent
        self.entriesReceived = entriesReceived
        self.conflictCopiesCreated = conflictCopiesCreated
        self.failedConnections = failedConnections
        self.syncLagMs = syncLagMs
    }
}

/// Percentiles of sync lag in milliseconds: for entries received while connected (live
/// pushes, not catch-up after being apart), local commit time minus the author's HLC time,
/// clamped at 0. Over the most recent samples (at most 1000). Clock skew between devices
/// shifts it; the benchmark measures the same quantity on one clock.
public struct LagSummary: Codable, Hashable, Sendable {
    /// `nil` until there is a sample.
    public var p50: Int?
    public var p95: Int?
    public var samples: Int

    public init(p50: Int?, p95: Int?, samples: Int) {
        self.p50 = p50
        self.p95 = p95
        self.samples = samples
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encodeNullable(p50, forKey: .p50)
        try container.encodeNullable(p95, forKey: .p95)
        try container.encode(samples, forKey: .samples)
    }
}
