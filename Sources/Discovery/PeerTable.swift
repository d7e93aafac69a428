/// One sighting of a service as Avahi's browser reports it. The same service seen on two
/// interfaces, or over IPv4 and IPv6, is two instances of one peer.
struct ServiceInstance: Hashable, Sendable {
    var interface: Int32
    var ipProtocol: Int32
    var name: String
    var domain: String
}

/// What resolving one instance gave.
struct Resolution: Hashable, Sendable {
    var hostName: String
    var address: IPAddress?
    var port: UInt16
    var txt: TXTRecord
}

/// Turns browser and resolver callbacks into `DiscoveryEvent`s (sans-I/O: the Avahi shell feeds
/// it and emits what it returns). A peer is all instances with one service name; it is `.found`
/// once one of them resolves, re-`.found` when what is known about it changes, and `.lost` when
/// none is left resolved.
struct PeerTable {
    /// Instances tracked at once; each costs an Avahi resolver, so a network flooding us with
    /// service names cannot make us allocate without bound.
    static let maxInstances = 256

    /// The device id we advertise: a service carrying it is ourselves (seen through another
    /// interface, or a stale record of this device), never a peer.
    private let ownDeviceID: String
    /// Every instance the browser reported, with its resolution once it has one.
    private var instances: [ServiceInstance: Stamped] = [:]
    /// What the handler was last told about each peer, by service name.
    private var reported: [String: DiscoveredPeer] = [:]
    /// Orders resolutions so the newest one's host, port and TXT describe the peer.
    private var clock: UInt64 = 0

    private struct Stamped {
        var resolution: Resolution?
        var time: UInt64
    }

    init(ownDeviceID: String) {
        self.ownDeviceID = ownDeviceID
    }

    /// The browser reported a new instance. Returns whether to resolve it: `false` when it is
    /// already tracked or the table is full.
    mutating func appeared(_ instance: ServiceInstance) -> Bool {
        guard instances[instance] == nil, instances.count < Self.maxInstances else { return false }
        instances[instance] = Stamped(resolution: nil, time: 0)
        return true
    }

    /// A resolver found (or re-found, after a change) an instance's host, address, port and TXT.
    mutating func resolved(_ instance: ServiceInstance, _ resolution: Resolution) -> [DiscoveryEvent] {
        guard instances[instance] != nil else { return [] }
        clock += 1
        instances[instance] = Stamped(resolution: resolution, time: clock)
        return changes(forName: instance.name)
    }

    /// The resolver gave up on an instance (for example, its host stopped answering).
    mutating func failedToResolve(_ instance: ServiceInstance) -> [DiscoveryEvent] {
        guard instances[instance] != nil else { return [] }
        instances[instance] = Stamped(resolution: nil, time: 0)
        return changes(forName: instance.name)
    }

    /// The browser reported an instance gone (goodbye packet, expiry, or our interface went down).
    mutating func disappeared(_ instance: ServiceInstance) -> [DiscoveryEvent] {
        guard instances.removeValue(forKey: instance) != nil else { return [] }
        return changes(forName: instance.name)
    }

    /// Browsing stopped (Avahi went away): every peer reported so far is lost.
    mutating func removeAll() -> [DiscoveryEvent] {
        let lost = reported.keys.sorted().map { DiscoveryEvent.lost(serviceName: $0) }
        instances = [:]
        reported = [:]
        return lost
    }

    /// Compares the peer named `name` now with what was last reported.
    private mutating func changes(forName name: String) -> [DiscoveryEvent] {
        let current = peer(named: name)
        guard current != reported[name] else { return [] }
        reported[name] = current
        if let current { return [.found(current)] }
        return [.lost(serviceName: name)]
    }

    private func peer(named name: String) -> DiscoveredPeer? {
        let resolved = instances.compactMap { instance, stamped in
            instance.name == name ? stamped.resolution.map { (resolution: $0, time: stamped.time) } : nil
        }
        guard let newest = resolved.max(by: { $0.time < $1.time })?.resolution,
              newest.txt.deviceID != ownDeviceID else { return nil }
        let addresses = Set(resolved.compactMap(\.resolution.address)).sorted()
        return DiscoveredPeer(serviceName: name, deviceID: newest.txt.deviceID,
                              protocolVersion: newest.txt.version, hostName: newest.hostName,
                              addresses: addresses, port: newest.port)
    }
}
