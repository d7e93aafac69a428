import Control
import Merge
import Peer

/// Where peers come from (docs/discovery.md): static addresses (`--peer`, `notesctl connect`)
/// and, unless `--no-mdns`, Avahi. The shell runs both sources and reports what they see here;
/// each address becomes a dial target.
extension EngineCore {
    /// Static peers to dial: the command line's (given) and those `connect` remembered.
    public func staticPeerAddresses(configured: [String]) -> [String] {
        configured + ((try? replica.staticPeers()) ?? [])
    }

    /// A static peer (`--peer`, or one `connect` remembered) is to be dialled.
    public func staticPeerFound(_ address: String, now: UInt64) {
        advance(now)
        guard !stopped else { return }
        do {
            try addTarget(address, origin: .configured)
        } catch {
            log.warning("ignoring static peer \(address): \(error)")
        }
        dialDueTargets()
    }

    /// The state of mDNS discovery changed (starting, running, unavailable).
    public func discoveryStateChanged(_ status: DiscoveryStatus, now: UInt64) {
        advance(now)
        if status != discovery { log.info("discovery: \(status.reason ?? "\(status.state)")") }
        discovery = status
    }

    /// Discovery resolved a service: dial it now if it is not a device we are talking to.
    /// One address per service: an IPv4 address is kept over IPv6 (notesd listens on IPv4 by
    /// default), and a newer address replaces an older one that is not connected. A join
    /// without an address tries it too.
    public func serviceAppeared(address: String, shortID: String?, service: String, now: UInt64) {
        advance(now)
        guard !stopped else { return }
        defer { for attempt in joinAttempts.keys.sorted() { tryNextJoinCandidate(attempt) } }
        if let shortID, shortID == identity.deviceID.short { return }
        if let shortID, connections.values.contains(where: { $0.device?.short == shortID && $0.isSyncing }) { return }
        let isIPv6 = address.hasPrefix("[")
        let previous = targets.filter { $0.value.origin == .discovered(service: service) && $0.key != address }
        if isIPv6, previous.contains(where: { !$0.key.hasPrefix("[") }) { return }
        for key in previous.keys where connection(forTarget: key) == nil { targets[key] = nil }
        do {
            try addTarget(address, origin: .discovered(service: service), hintedShortID: shortID)
            updateTarget(Self.address(address)?.description ?? address) { $0.retries = 0; $0.nextAttempt = self.now }
        } catch {
            log.debug("ignoring discovered address \(address): \(error)")
        }
        dialDueTargets()
    }

    /// A discovered service went away: stop dialling its addresses (a live session stays).
    public func serviceGone(_ service: String, now: UInt64) {
        advance(now)
        for (key, target) in targets where target.origin == .discovered(service: service) && connection(forTarget: key) == nil {
            targets[key] = nil
        }
    }
}
