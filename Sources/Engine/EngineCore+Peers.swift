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
    var retries = 0
    var nextAttempt: UInt64 = 0
    var lastError: String?
    /// When `lastError` happened (engine time).
    var lastErrorAt: UInt64?
    /// Refused (not on the roster, revoked, other household): not retried until something changes.
    var blocked = false
    /// Blocked for what the device there has on its roster: this one not on it yet, or marked
    /// removed (and re-admitted since through another member). The household passes the
    /// roster on, so it may take this one later: such a target is still dialled, with the
    /// backoff of a failed dial, and counts as blocked until it takes us.
    var refusedByItsRoster = false
    /// The connection on which the target was refused: its close is the refusal's, not a
    /// failed dial.
    var refusedOn: PeerNetwork.ConnectionID?
    /// Dials in a row that the peer closed before the handshake finished: it did not accept
    /// this device's key at message 1 (see `lockedOutOfHousehold`).
    var handshakeRefusals = 0


    /// Exponential backoff from 1 s, doubling, capped at 5 minutes, with ±20% jitter so a
    /// household that lost power does not redial in lockstep (docs/decisions.md, "Backoff").
    static func backoff(retries: Int, jitter: Double) -> UInt64 {
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

extension EngineCore {
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
            existing.nextAttempt = min(existing.nextAttempt, now)
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

    func blockTarget(_ key: String, on id: PeerNetwork.ConnectionID, reason: String, byItsRoster: Bool = false) {
        let delay = byItsRoster ? backoff(retries: targets[key]?.retries ?? 0) : 0
        updateTarget(key) {
            $0.blocked = true
            $0.refusedByItsRoster = byItsRoster
            $0.refusedOn = id
            if byItsRoster {
                $0.nextAttempt = self.now + delay
                $0.retries += 1
            }
            $0.lastError = reason
            $0.lastErrorAt = self.now
        }
    }

    /// A dial of target `key` failed: before a handshake (`unreachable`: nobody answered, or
    /// the name did not resolve), or the connection ended before the session caught up.
    /// A target its roster refused keeps that refusal as its last error (`status` says
    /// `blocked`, and why, until the device there takes this one).
    func dialFailed(target key: String, reason: String, unreachable: Bool) {
        counters.failedConnections += 1
        let delay = backoff(retries: targets[key]?.retries ?? 0)
        updateTarget(key) {
            if !$0.blocked {
                $0.lastError = reason
                $0.lastErrorAt = self.now
            }
            $0.nextAttempt = self.now + delay
            $0.retries += 1
        }
        connectWaitersFail(target: key, reason: reason, code: unreachable ? .unreachable : .refused)
        log.debug("dial \(key) failed: \(reason)")
    }

    /// Is there a live session with this device (in either direction)?
    func isConnected(_ device: DeviceID) -> Bool {
        connections.values.contains { $0.device == device && $0.isSyncing }
    }

    /// The connection serving dial target `key`, if one is open.
    func connection(forTarget key: String) -> PeerNetwork.ConnectionID? {
        connections.values.first { $0.target == key }?.id
    }

    /// A target is dialled when no connection serves it, nothing refused it (but a device
    /// that did not know this one yet), and it is not this device or one already syncing on
    /// another connection. (A target left due while skipped would make its deadline fire
    /// again at once, for as long as it is skipped.)
    func wantsDial(_ key: String) -> Bool {
        guard let target = targets[key], !target.blocked || target.refusedByItsRoster, connection(forTarget: key) == nil else { return false }
        if let device = target.device, isConnected(device) { return false }
        if let hinted = target.hintedShortID, hinted == identity.deviceID.short { return false }
        return true
    }

    /// Dials every target that is due and not already connected.
    func dialDueTargets() {
        guard !stopped, !listenAddresses.isEmpty else { return }
        for key in targets.keys.sorted() {
            guard let target = targets[key], wantsDial(key), target.nextAttempt <= now else { continue }
            let id = environment.newConnectionID()
            actions.append(.dial(id, target.address, psk: dialKey(for: key)))
            connections[id] = Connection(id: id, direction: .outbound, remote: key, target: key, state: .dialing(.household))
        }
    }

    // MARK: - Peer status

    /// Every roster device but this one and revoked ones, plus static addresses not yet
    /// identified (`status.peers`).
    public func peerStatuses() -> [PeerStatus] {
        let members = roster().filter { $0.id != identity.deviceID && !$0.revoked }
        var statuses = members.map { peerStatus(device: $0.id, name: $0.device.name) }
        let known = Set(members.map(\.id))
        for (key, target) in targets where target.device == nil || !known.contains(target.device!) {
            if case .discovered = target.origin, target.device == nil { continue }
            statuses.append(PeerStatus(
                device: target.device?.description, short: target.device?.short, name: nil, address: key,
                status: target.blocked ? .blocked : (connection(forTarget: key) != nil ? .connecting : .offline), lastSync: nil,
                lastError: target.lastError, lastErrorAt: target.lastErrorAt.map(Self.timestamp), entriesBehind: 0,
                retries: target.retries, connected: false))
        }
        return statuses.sorted { ($0.name ?? "~", $0.address ?? "") < ($1.name ?? "~", $1.address ?? "") }
    }

    static func timestamp(_ milliseconds: UInt64) -> Timestamp { Timestamp(millisecondsSince1970: Int64(clamping: milliseconds)) }

    func peerStatus(device: DeviceID?, name: String? = nil) -> PeerStatus {
        guard let device else {
            return PeerStatus(device: nil, short: nil, name: name, address: nil, status: .offline, lastSync: nil, lastError: nil, entriesBehind: 0, retries: 0, connected: false)
        }
        let record = (try? replica.peers())?.first { $0.peer == device.description }
        let link = connections.values.first { $0.device == device && $0.isSyncing }
        let target = targets.values.first { $0.device == device }
        let dialling = targets.contains { $0.value.device == device && connection(forTarget: $0.key) != nil }
            || connections.values.contains { $0.device == device && !$0.isSyncing }
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
        // A live session that caught up has no error; else the latest attempt's, then the stored one.
        let lastError: (message: String, at: UInt64?)? =
            if link?.caughtUp == true { nil }
            else if let message = target?.lastError { (message, target?.lastErrorAt) }
            else if let message = record?.lastError { (message, record?.lastErrorAt) }
            else { nil }
        return PeerStatus(
            device: device.description, short: device.short, name: link?.deviceName ?? memberName ?? record?.name,
            address: link?.remote ?? target?.address.description ?? record?.address, status: state,
            lastSync: record?.lastSuccess.map(Self.timestamp),
            lastError: lastError?.message, lastErrorAt: lastError?.at.map(Self.timestamp),
            entriesBehind: behind, retries: target?.retries ?? record?.retries ?? 0, connected: link != nil,
            version: link?.agreement?.peerVersionText ?? record?.software)
    }

    /// Remembers what we know of a peer across restarts.
    func persistPeer(_ link: Connection, error: String?, synced: Bool = false) {
        guard let device = link.device else { return }
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
        record.software = link.agreement?.peerVersionText ?? record.software
        // Only an address we dialled is one to dial again; an inbound connection's port is
        // the peer's ephemeral one.
        if link.direction == .outbound { record.address = link.remote }
        record.replica = link.session?.peerHello?.replica ?? record.replica
        record.vector = link.peerVector ?? link.session?.peerHello?.vector ?? record.vector
        if synced {
            record.lastSuccess = now
            record.lastError = nil
            record.retries = 0
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
