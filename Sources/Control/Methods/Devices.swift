/// One device on the household roster (`devices.list`, `devices.remove`, `join`).
public struct DeviceInfo: Codable, Hashable, Sendable {
    /// The full device id: base32 fingerprint of its public key.
    public var id: String
    public var short: String
    public var name: String
    /// This is the device the daemon runs on.
    public var isSelf: Bool
    public var revoked: Bool
    /// When the device joined the roster.
    public var added: Timestamp
    /// A sync session with it is established right now (always `false` for `isSelf`).
    public var connected: Bool
    /// Its notesd version as last seen in a handshake ("0.1 or earlier" when it advertised
    /// none); this device's own for `isSelf`; absent when never seen (added after 0.1).
    public var version: String?
    /// The newest household key epoch it says it holds (docs/security.md, "Key rotation");
    /// absent when it never said (a release without key rotation, or not heard from yet).
    public var keyEpoch: UInt64?

    public init(
        id: String, short: String, name: String, isSelf: Bool, revoked: Bool, added: Timestamp, connected: Bool, version: String? = nil,
        keyEpoch: UInt64? = nil
    ) {
        self.keyEpoch = keyEpoch
        self.id = id
        self.short = short
        self.name = name
        self.isSelf = isSelf
        self.revoked = revoked
        self.added = added
        self.connected = connected
        self.version = version
    }
}

/// `devices.remove` params.
public struct DeviceRemoveParams: Codable, Hashable, Sendable {
    /// A full device id or a unique prefix of one (the short form works).
    public var device: String

    public init(device: String) { self.device = device }
}

/// `invite` result.
public struct InviteResult: Codable, Hashable, Sendable {
    /// The one-time code to type on the new device (base32 groups with a checksum).
    public var code: String
    /// The code stops working at this moment (10 minutes after it was made).
    public var expiresAt: Timestamp
    /// `host:port` addresses the new device can reach this one at, best first.
    public var addresses: [String]

    public init(code: String, expiresAt: Timestamp, addresses: [String]) {
        self.code = code
        self.expiresAt = expiresAt
        self.addresses = addresses
    }
}

/// `join` params.
public struct JoinParams: Codable, Hashable, Sendable {
    public var code: String
    /// The inviter's `host:port`; when absent the daemon looks for it with discovery.
    public var address: String?

    public init(code: String, address: String? = nil) {
        self.code = code
        self.address = address
    }
}

/// `join` result: the household this device now belongs to.
public struct JoinResult: Codable, Hashable, Sendable {
    public var household: HouseholdInfo
    public var devices: [DeviceInfo]

    public init(household: HouseholdInfo, devices: [DeviceInfo]) {
        self.household = household
        self.devices = devices
    }
}

/// `connect` params.
public struct ConnectParams: Codable, Hashable, Sendable {
    /// `host:port`; IPv6 literals in brackets (`[fe80::1%eth0]:7654`).
    public var address: String

    public init(address: String) { self.address = address }
}
