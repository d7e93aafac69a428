/// Where the daemon learns about other devices: mDNS (`AvahiDiscovery`) or a fixed list
/// (`StaticPeers`). Both report through the same events, so the daemon treats them alike.
///
/// Events reach the handler one at a time, in order, on a private queue of the source (never on
/// Avahi's thread). After `stop()` returns the handler is not called again. The handler may call
/// `start` or `stop` on its own source.
public protocol PeerSource: Sendable {
    /// Starts advertising `advertisement` (if the source publishes anything) and reporting peers
    /// to `handler`. Starting a started source restarts it.
    func start(advertising advertisement: Advertisement,
               onEvent handler: @escaping @Sendable (DiscoveryEvent) -> Void)

    /// Stops advertising and reporting. Idempotent.
    func stop()
}

/// Something a `PeerSource` reports.
public enum DiscoveryEvent: Sendable, Hashable {
    /// The source's own state changed (only mDNS has one; see `DiscoveryState`).
    case state(DiscoveryState)
    /// A peer appeared, or what is known about it changed (addresses, port, TXT). Upsert by
    /// `serviceName`.
    case found(DiscoveredPeer)
    /// The peer with this service name is no longer advertised.
    case lost(serviceName: String)
}

/// The state of mDNS discovery, shown by `notesctl status`.
public enum DiscoveryState: Sendable, Hashable, CustomStringConvertible {
    /// mDNS is turned off (`--no-mdns`); only static peers are used.
    case disabled
    /// Connecting to Avahi and publishing; not advertised yet.
    case starting
    /// Advertised under this name (which may differ from the requested one after a name
    /// collision) and browsing for peers.
    case running(serviceName: String)
    /// Avahi cannot be used now; `reason` is a sentence for the user. Discovery keeps retrying
    /// and goes back to `.running` by itself when Avahi returns.
    case unavailable(reason: String)

    /// One line for `notesctl status`.
    public var description: String {
        switch self {
        case .disabled: "mDNS discovery is off (--no-mdns); only peers given with --peer are used"
        case .starting: "connecting to the Avahi daemon"
        case .running(let serviceName): "advertising as \"\(serviceName)\" and looking for peers on the local network"
        case .unavailable(let reason): reason
        }
    }
}

/// A device found on the network or configured by hand. Everything here came from the network
/// (mDNS) or from the user; it is a hint: the secure handshake decides who the peer really is.
public struct DiscoveredPeer: Sendable, Hashable {
    /// The mDNS service instance name, or `host:port` for a static peer. Identifies the peer in
    /// `.lost`.
    public var serviceName: String
    /// The short device id from the TXT record (`id=`), if present and well-formed.
    public var deviceID: String?
    /// The protocol version from the TXT record (`v=`), if present and a number.
    public var protocolVersion: Int?
    /// The host name the service points at (e.g. `laptop.local`), or the static peer's host.
    public var hostName: String
    /// Every resolved address, IPv4 first. Empty when a static peer's name did not resolve.
    public var addresses: [IPAddress]
    /// The TCP port notesd listens on.
    public var port: UInt16

    public init(serviceName: String, deviceID: String?, protocolVersion: Int?, hostName: String,
                addresses: [IPAddress], port: UInt16) {
        self.serviceName = serviceName
        self.deviceID = deviceID
        self.protocolVersion = protocolVersion
        self.hostName = hostName
        self.addresses = addresses
        self.port = port
    }
}

/// What this device advertises: `_notesd._tcp` on `port`, TXT `v=1` and `id=<deviceID>`,
/// nothing else (no note, user or household names).
public struct Advertisement: Sendable, Hashable {
    /// The DNS-SD service type (RFC 6763 §7).
    public static let serviceType = "_notesd._tcp"
    /// DNS-SD instance names are one DNS label: at most 63 bytes of UTF-8 (RFC 6763 §4.1.1).
    public static let maxServiceNameBytes = 63

    public let serviceName: String
    public let port: UInt16
    public let deviceID: String

    /// - Parameter serviceName: the instance name; defaults to `notesd-<deviceID>`. Avahi
    ///   renames it (`name #2`) if another device already uses it.
    public init(port: UInt16, deviceID: String, serviceName: String? = nil) throws(AdvertisementError) {
        guard port != 0 else { throw AdvertisementError("the port to advertise must not be 0") }
        guard TXTRecord.isValidDeviceID(deviceID) else {
            throw AdvertisementError(
                "the device id '\(deviceID)' cannot be advertised: it must be 1 to \(TXTRecord.maxDeviceIDLength) letters or digits")
        }
        let name = serviceName ?? "notesd-\(deviceID)"
        guard !name.isEmpty, name.utf8.count <= Self.maxServiceNameBytes,
              !name.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else {
            throw AdvertisementError(
                "the service name '\(name)' must be 1 to \(Self.maxServiceNameBytes) bytes long without control characters")
        }
        self.port = port
        self.deviceID = deviceID
        self.serviceName = name
    }

    /// The TXT strings, in order.
    var txtEntries: [String] { ["v=\(TXTRecord.currentVersion)", "id=\(deviceID)"] }
}

/// An `Advertisement` that cannot be published; the message says what to change.
public struct AdvertisementError: Error, Hashable, CustomStringConvertible {
    public let message: String
    init(_ message: String) { self.message = message }
    public var description: String { message }
}
