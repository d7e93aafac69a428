import Control
import Foundation
import Merge
import Peer

/// An address to keep a connection to: from `--peer`, `notesctl connect`, or discovery.
struct DialTarget {
    enum Origin: Equatable {
        case configured
        case connected
        case discovered(service: String)
    }

    let address: PeerAddress
    var origin: Origin
    /// The device behind it, once a handshake told us (or discovery's TXT hint, as a short id).
    var device: DeviceID?
    var hintedShortID: String?
    var connection: PeerNetwork.ConnectionID?
    var retries = 0
    var nextAttempt: UInt64 = 0
    var lastError: String?
    /// Refused (not on the roster, revoked, other household): not retried until something changes.
    var blocked = false

    var wantsDial: Bool { connection == nil && !blocked }

    /// Exponential backoff from 1 s, doubling, capped at 5 minutes, with ±20% jitter so a
    /// household that lost power does not redial in lockstep (docs/protocol.md).
    static func backoff(retries: Int, jitter: Double = Double.random(in: 0.8...1.2)) -> UInt64 {
        let base = min(300_000.0, 1_000.0 * pow(2.0, Double(min(retries, 20))))
        return UInt64(min(300_000.0, base * jitter))
    }
}

/// Counters for `notesctl status` (since start).
struct Counters {
    var entriesSent = 0
    var entriesReceived = 0
    var conflictCopiesCreated = 0
    var failedConnections = 0
    /// Most recent sync-lag samples (ms), at most 1000.
    var lagSamples: [Int64] = []

    mutating func recordLag(_ milliseconds: Int64) {
        lagSamples.append(max(0, milliseconds))
        if lagSamples.count > 1_000 { lagSamples.removeFirst(lagSamples.count - 1_000) }
    }

    var lag: LagSummary {
        guard !lagSamples.isEmpty else { return LagSummary(p50: nil, p95: nil, samples: 0) }
        let sorted = lagSamples.sorted()
        func percentile(_ p: Double) -> Int { Int(sorted[min(sorted.count - 1, Int((Double(sorted.count) * p).rounded(.up)) - 1)]) }
        return LagSummary(p50: percentile(0.5), p95: percentile(0.95), samples: sorted.count)
    }
}

extension Engine {
    // MARK: - Targets and dialling

    func addTarget(_ text: String, origin: DialTarget.Origin, hintedShortID: String? = nil) throws {
        guard let address = Self.address(text) else {
            throw RPCError.invalidParams("\"\(text)\" is not a host:port address (IPv6 in brackets: [fe80::1%eth0]:7479)")
        }
        let key = address.description
        if var existing = targets[key] {
            if case .discovered = existing.origin, origin == .configured || origin == .connected { existing.origin = origin }
            existing.hintedShortID = hintedShortID ?? existing.hintedShortID
            existing.blocked = false
            existing.nextAttempt = min(existing.nextAttempt, Self.now())
            targets[key] = existing
        } else {
            targets[key] = DialTarget(address: address, origin: origin, hintedShortID: hintedShortID)
        }
    }

    func updateTarget(_ key: String, _ change: (inout DialTarget) -> Void) {
        guard var target = targets[key] else { return }
        change(&target)
        targets[key] = target
    }

    func blockTarget(_ key: String, reason: String) {
        updateTarget(key) {
            $0.blocked = true
            $0.lastError = reason
        }
    }

    func dialFailed(_ key: String, reason: String) {
        counters.failedConnections += 1
        updateTarget(key) {
            $0.connection = nil
            $0.lastError = reason
            $0.nextAttempt = Self.now() + DialTarget.backoff(retries: $0.retries)
            $0.retries += 1
        }
        connectWaitersFail(target: key, reason: reason)
        log.debug("dial \(key) failed: \(reason)")
    }

    /// Is there a live session with this device (in either direction)?
    func isConnected(_ device: DeviceID) -> Bool {
        links.values.contains { $0.device == device && $0.session != nil }
    }

    /// Dials every target that is due and not already connected.
    /// A target is dialled when no connection serves it, nothing refused it, and it is not
    /// this device or one already syncing on another connection. Skipping a target while it
    /// stays due would make its deadline fire again at once, for as long as it is skipped: a
    /// busy loop.
    func wantsDial(_ target: DialTarget) -> Bool {
        guard target.wantsDial else { return false }
        if let device = target.device, isConnected(device) { return false }
        if let hinted = target.hintedShortID, hinted == identity.deviceID.short { return false }
        return true
    }

    func dialDueTargets() {
        guard !stopped else { return }
        let now = Self.now()
        for (key, target) in targets where wantsDial(target) && target.nextAttempt <= now {
            let id = network.dial(target.address, psk: household.key)
            updateTarget(key) { $0.connection = id }
            links[id] = Link(id: id, direction: .outbound, remote: key, target: key, purpose: .sync)
        }
    }

    // MARK: - Discovery

    /// Discovery resolved a service: dial it now if it is not a device we are talking to.
    /// One address per service: an IPv4 address is kept over IPv6 (notesd listens on IPv4 by
    /// default), and a newer address replaces an older one that is not connected.
    func discovered(address: String, shortID: String?, service: String) {
        if let shortID, shortID == identity.deviceID.short { return }
        if let shortID, links.values.contains(where: { $0.device?.short == shortID && $0.session != nil }) { return }
        let isIPv6 = address.hasPrefix("[")
        let previous = targets.filter { $0.value.origin == .discovered(service: service) && $0.key != address }
        if isIPv6, previous.contains(where: { !$0.key.hasPrefix("[") }) { return }
        for (key, target) in previous where target.connection == nil { targets[key] = nil }
        do {
            try addTarget(address, origin: .discovered(service: service), hintedShortID: shortID)
            updateTarget(Self.address(address)?.description ?? address) { $0.retries = 0; $0.nextAttempt = Self.now() }
        } catch {
            log.debug("ignoring discovered address \(address): \(error)")
        }
        dialDueTargets()
        reschedule()
    }

    /// A discovered service went away: stop dialling its addresses (a live session stays).
    func lost(service: String) {
        for (key, target) in targets where target.origin == .discovered(service: service) && target.connection == nil {
            targets[key] = nil
        }
    }

    // MARK: - Peer status

    /// Every roster device but this one and revoked ones, plus static addresses not yet
    /// identified (`status.peers`).
    func peerStatuses() -> [PeerStatus] {
        let members = roster().filter { $0.id != identity.deviceID && !$0.revoked }
        var statuses = members.map { peerStatus(device: $0.id, name: $0.device.name) }
        let known = Set(members.map(\.id))
        for (key, target) in targets where target.device == nil || !known.contains(target.device!) {
            if case .discovered = target.origin, target.device == nil { continue }
            statuses.append(PeerStatus(
                device: target.device?.description, short: target.device?.short, name: nil, address: key,
                status: target.blocked ? .blocked : (target.connection != nil ? .connecting : .offline), lastSync: nil,
                lastError: target.lastError, entriesBehind: 0, retries: target.retries, connected: false))
        }
        return statuses.sorted { ($0.name ?? "~", $0.address ?? "") < ($1.name ?? "~", $1.address ?? "") }
    }

    func peerStatus(device: DeviceID?, name: String? = nil) -> PeerStatus {
        guard let device else {
            return PeerStatus(device: nil, short: nil, name: name, address: nil, status: .offline, lastSync: nil, lastError: nil, entriesBehind: 0, retries: 0, connected: false)
        }
        let record = (try? replica.peers())?.first { $0.peer == device.description }
        let link = links.values.first { $0.device == device && $0.session != nil }
        let target = targets.values.first { $0.device == device }
        let dialling = targets.values.contains { $0.device == device && $0.connection != nil } || links.values.contains { $0.device == device && $0.session == nil }
        let state: PeerState
        var behind = 0
        if let link, let session = link.session {
            behind = Int(clamping: session.entriesToExchange(store: replica))
            state = session.status(store: replica) == .idle ? .idle : (session.status(store: replica) == .connecting ? .connecting : .syncing)
        } else {
            // Away: what its vector, as last seen, says one side lacks from the other.
            if let record, record.replica != nil {
                behind = Int(clamping: record.vector.entriesToExchange(with: replica.vector))
            }
            state = target?.blocked == true ? .blocked : (dialling ? .connecting : .offline)
        }
        let memberName = name ?? rosterDevice(device)?.device.name
        return PeerStatus(
            device: device.description, short: device.short, name: link?.deviceName ?? memberName ?? record?.name,
            address: link?.remote ?? target?.address.description ?? record?.address, status: state,
            lastSync: record?.lastSuccess.map { Timestamp(millisecondsSince1970: Int64($0)) },
            lastError: link != nil && link!.caughtUp ? nil : (target?.lastError ?? record?.lastError),
            entriesBehind: behind, retries: target?.retries ?? record?.retries ?? 0, connected: link != nil)
    }

    /// Remembers what we know of a peer across restarts.
    func persistPeer(_ link: Link, error: String?, synced: Bool = false) {
        guard let device = link.device else { return }
        let now = Self.now()
        let stored: [PeerRecord]
        do {
            stored = try replica.peers()
        } catch {
            // Writing a fresh record now would lose its address, last sync and retries.
            log.warning("cannot read the state of peer \(device.short), so it is not updated: \(error)")
            return
        }
        var record = stored.first { $0.peer == device.description } ?? PeerRecord(peer: device.description, name: link.deviceName ?? device.short)
        record.name = link.deviceName ?? record.name
        // Only an address we dialled is one to dial again; an inbound connection's port is
        // the peer's ephemeral one.
        if link.direction == .outbound { record.address = link.remote }
        record.replica = link.session?.peerHello?.replica ?? record.replica
        record.vector = link.peerVector ?? link.session?.peerHello?.vector ?? record.vector
        record.status = link.session.map { $0.status(store: replica) } ?? .offline
        if synced {
            record.lastSuccess = now
            record.lastError = nil
            record.retries = 0
            record.entriesBehind = 0
        }
        if let error {
            record.lastError = error
            record.lastErrorAt = now
        }
        do {
            try replica.savePeer(record)
        } catch {
            log.warning("cannot save the state of peer \(device.short): \(error)")
        }
    }
}
