import Control
import Dispatch
import Foundation
import Merge
import Peer
import protocol Discovery.PeerSource
import Synchronization

/// The daemon's core: the replica, one sync session per connected device, dialling with
/// backoff, pairing, counters and control events (docs/architecture.md).
///
/// Everything mutable lives on `queue`, a serial queue: network events, control requests and
/// timers are all forwarded onto it (network and discovery events and the timer through
/// `thread`), so the replica (not thread-safe) has one owner and the sessions see their
/// inputs in order. That confinement is why the class can be
/// `@unchecked Sendable`: no stored `var` is read or written off `queue`.
final class Engine: @unchecked Sendable {
    struct Settings: Sendable {
        var dataDirectory: String
        var deviceName: String
        var listen: PeerAddress
        var staticPeers: [String]
        var controlSocket: String
        /// Advertise and browse with Avahi (off with `--no-mdns`).
        var mdns = false
        /// Tried when the configured port is taken (another user's notesd on this machine).
        var fallbackToFreePort = true
        var session = SyncSession.Configuration(deviceName: "")
    }

    /// Logging hooks; the process shell supplies them.
    struct Logger: Sendable {
        var debug: @Sendable (String) -> Void
        var info: @Sendable (String) -> Void
        var warning: @Sendable (String) -> Void
        var error: @Sendable (String) -> Void

        static let silent = Logger(debug: { _ in }, info: { _ in }, warning: { _ in }, error: { _ in })
    }

    /// One connection as the engine sees it.
    struct Link {
        enum Purpose {
            /// A household connection: a sync session once the roster check passes.
            case sync
            /// We dialled an inviter with an invite's key to join its household.
            case joining(JoinAttempt.ID)
            /// A device proved an invite's key: pairing, not sync.
            case admitting(inviteSecretID: String)
        }

        let id: PeerNetwork.ConnectionID
        let direction: PeerNetwork.Direction
        var remote: String
        /// The dial target this connection serves (outbound only).
        var target: String?
        var purpose: Purpose
        var device: DeviceID?
        var publicKey: [UInt8]?
        var deviceName: String?
        var session: SyncSession?
        var entriesSent = 0
        var entriesReceived = 0
        var caughtUp = false
        var lastProgressEvent: UInt64 = 0
        /// The peer's vector as the session last knew it; outlives the session (`persistPeer`).
        var peerVector: VersionVector?
    }

    let queue: DispatchQueue
    /// Runs network and discovery events and the timer on `queue` without waking a
    /// libdispatch worker (see `EngineThread`).
    let thread: EngineThread
    let settings: Settings
    let log: Logger
    let replica: Replica
    let identity: Peer.DeviceIdentity
    let household: HouseholdKey
    let started: UInt64
    private(set) var network: PeerNetwork!
    var listenAddresses: [PeerAddress] = []
    var links: [PeerNetwork.ConnectionID: Link] = [:]
    var targets: [String: DialTarget] = [:]
    var counters = Counters()
    let watchers = ControlWatchers()
    var syncWaiters: [SyncWaiter] = []
    var joinAttempts: [JoinAttempt.ID: JoinAttempt] = [:]
    var connectWaiters: [ConnectWaiter] = []
    var discovery = Control.DiscoveryStatus(state: .disabled, reason: "mDNS discovery is off (--no-mdns); peers come from --peer and `notesctl connect`")
    /// Invite keys the network may accept, in the order it offers them after the household key.
    /// The roster as last read (see `roster()`); nil once a change may have made it stale.
    var cachedRoster: [Member]?
    var lastGoodRoster: [Member] = []
    /// When a household device refused this one as removed (see `removedBy`), or nil.
    var removedFromHousehold: UInt64?
    var inviteKeys: [(secretID: String, key: PreSharedKey)] = [] {
        didSet { keyList?.setInvites(inviteKeys.map(\.key)) }
    }
    /// The network's view of `inviteKeys`.
    var keyList: KeyList?
    /// Static peers and Avahi (see Engine+Discovery).
    var sources: [any PeerSource] = []
    /// The deadline `thread` was last given (engine time, ms); `nil` when none is armed.
    private var timerDeadline: UInt64?
    var stopped = false

    /// Opens the replica and the keys. Does not touch the network until `start()`.
    init(settings: Settings, replica: Replica, identity: Peer.DeviceIdentity, household: HouseholdKey, log: Logger) throws {
        var settings = settings
        settings.session.deviceName = settings.deviceName
        let queue = DispatchQueue(label: "notesd.engine")
        self.queue = queue
        thread = EngineThread(queue: queue)
        self.settings = settings
        self.replica = replica
        self.identity = identity
        self.household = household
        self.log = log
        started = Self.now()
        // This device is on its own roster from its first start.
        try replica.addDevice(publicKey: identity.publicKey.bytes, name: settings.deviceName, now: started)
        inviteKeys = try Self.inviteKeys(replica)
        removedFromHousehold = try replica.removedFromHousehold
    }

    static func now() -> UInt64 { UInt64(Date().timeIntervalSince1970 * 1000) }

    /// The pairing keys of the invites the replica keeps (used and expired ones for a day, so
    /// a late joiner gets a precise refusal); a damaged row is skipped, not fatal.
    static func inviteKeys(_ replica: Replica) throws -> [(secretID: String, key: PreSharedKey)] {
        try replica.invites().compactMap { invite in InviteCode(secret: invite.secret).map { (invite.secretID, $0.pskForPairing) } }
    }

    /// Starts listening and dialling. Throws when the listen address cannot be bound at all.
    func start() throws {
        let keys = KeyList(household: household, engine: self)
        let thread = thread
        network = try PeerNetwork(
            identity: identity, responderKeys: { keys.snapshot() },
            events: { [weak self] event in
                guard let engine = self else { return }
                thread.post { engine.handle(event) }
            })
        let first = Result { () throws(NetworkError) -> PeerAddress in try network.listen(on: settings.listen) }
        switch first {
        case .success(let bound):
            listenAddresses = [bound]
        case .failure(let error):
            guard settings.fallbackToFreePort, settings.listen.port != 0 else { throw error }
            log.warning("cannot listen on \(settings.listen) (\(error)); another notesd may be using it, so listening on a free port instead")
            listenAddresses = [try network.listen(on: PeerAddress(host: settings.listen.host, port: 0))]
        }
        log.info("listening for devices on \(listenAddresses.map(\.description).joined(separator: ", "))")
        queue.sync {
            startSources(mdns: settings.mdns)
            reschedule()
        }
    }

    /// The port this device accepts connections on (what discovery advertises).
    var listenPort: UInt16? { listenAddresses.first?.port }

    /// Parses `host:port` as people write it (`Control.HostPort`).
    static func address(_ text: String) -> PeerAddress? {
        guard case .success(let parsed) = HostPort.parse(text, allowsPortZero: false) else { return nil }
        return PeerAddress(host: parsed.host, port: parsed.port)
    }

    /// Ends every session cleanly and stops the network. Runs on `queue`.
    func stop() {
        guard !stopped else { return }
        stopped = true
        for (id, var link) in links {
            if var session = link.session {
                let output = session.shutdown(reason: "this device is shutting down")
                link.session = session
                network.send(output.frames, on: id)
            }
            network.close(id, reason: "shutting down")
        }
        thread.stop()
        stopSources()
        network?.stop()
    }

    // MARK: - Network events

    func handle(_ event: PeerNetwork.Event) {
        guard !stopped else { return }
        switch event {
        case .established(let id, let peer, let direction, let remote):
            established(id, peer: peer, direction: direction, remote: remote)
        case .frames(let id, let frames):
            // Lets the network read from this peer again once the engine has caught up.
            defer { network.processed(id) }
            for frame in frames {
                guard links[id] != nil else { break }
                receive(frame, on: id)
            }
        case .closed(let id, let reason):
            closed(id, reason: reason)
        }
        reschedule()
    }

    private func established(_ id: PeerNetwork.ConnectionID, peer: ChannelPeer, direction: PeerNetwork.Direction, remote: String) {
        var link = links[id] ?? Link(id: id, direction: direction, remote: remote, purpose: .sync)
        link.remote = remote
        link.device = peer.deviceID
        link.publicKey = peer.staticKey.bytes
        if direction == .inbound, let index = peer.matchedPSKIndex, index > 0 {
            let invites = inviteKeys
            guard index - 1 < invites.count else {
                refuse(id, Refusal(.inviteUnknown, "this invite code is not known here; ask for a new one with `notesctl invite`"))
                return
            }
            link.purpose = .admitting(inviteSecretID: invites[index - 1].secretID)
            links[id] = link
            log.info("pairing: \(peer.deviceID.short) at \(remote) presented an invite")
            return
        }
        links[id] = link
        if case .joining(let attempt) = link.purpose {
            joinEstablished(id, attempt: attempt)
            return
        }
        if let target = link.target { updateTarget(target) { $0.device = peer.deviceID } }
        guard let member = rosterDevice(peer.deviceID) else {
            refuse(id, Refusal(.notOnRoster, "device \(identity.deviceID.short) does not have \(peer.deviceID.short) on its household roster; pair it with `notesctl invite` / `notesctl join`"))
            if let target = link.target { blockTarget(target, reason: "\(peer.deviceID.short) at \(remote) is not on this household's roster") }
            return
        }
        guard !member.revoked else {
            refuse(id, Refusal(.revoked, "device \(peer.deviceID.short) was removed from this household"))
            if let target = link.target { blockTarget(target, reason: "\(peer.deviceID.short) was removed from this household") }
            return
        }
        // One connection per device pair: the one dialled by the smaller device id stays.
        if let other = links.values.first(where: { $0.id != id && $0.device == peer.deviceID && $0.session != nil }) {
            let keepNew = (direction == .outbound) == (identity.deviceID < peer.deviceID)
            let loser = keepNew ? other.id : id
            log.debug("duplicate connection with \(peer.deviceID.short): closing \(loser)")
            refuse(loser, Refusal(.duplicate, "a connection between these devices already exists"))
            if !keepNew { return }
        }
        let (session, output) = SyncSession.start(configuration: settings.session, store: replica, now: Self.now())
        link.session = session
        links[id] = link
        drive(id, output)
        connectWaitersResolve(device: peer.deviceID, target: link.target)
    }

    private func receive(_ frame: Frame, on id: PeerNetwork.ConnectionID) {
        guard var link = links[id] else { return }
        switch link.purpose {
        case .admitting(let secretID):
            admit(frame, on: id, inviteSecretID: secretID)
            return
        case .joining(let attempt):
            joinReceived(frame, on: id, attempt: attempt)
            return
        case .sync:
            break
        }
        // Only a current household member can tell us we were removed.
        if case .refuse(let refusal) = frame, refusal.code == .revoked,
           let device = link.device, let member = rosterDevice(device), !member.revoked {
            removedBy(link)
        }
        guard var session = link.session else {
            if case .refuse(let refusal) = frame, let target = link.target {
                blockTarget(target, reason: refusal.message)
            }
            return
        }
        if case .refuse(let refusal) = frame, let target = link.target,
           [.notOnRoster, .revoked, .protocolVersion].contains(refusal.code) {
            blockTarget(target, reason: refusal.message)
        }
        // A household device sends its hello only to a device on its roster.
        if case .hello = frame { acceptedByHousehold() }
        let output = session.receive(frame, store: replica, now: Self.now())
        link.session = session
        links[id] = link
        drive(id, output)
    }

    private func closed(_ id: PeerNetwork.ConnectionID, reason: String?) {
        guard let link = links.removeValue(forKey: id) else {
            // A dial that never produced a link record: find its target.
            if let key = targets.first(where: { $0.value.connection == id })?.key { dialFailed(key, reason: reason ?? "connection closed") }
            return
        }
        if case .joining(let attempt) = link.purpose { joinClosed(attempt, reason: reason) }
        if link.session != nil {
            let peer = peerStatus(device: link.device)
            log.info("disconnected from \(link.deviceName ?? link.device?.short ?? link.remote)\(reason.map { ": \($0)" } ?? "")")
            emit(.peerDisconnected(PeerEvent(peer: peer, reason: reason)))
            persistPeer(link, error: reason)
        }
        // A catch-up cut short (here, or by a session that ended before the socket closed)
        // leaves its settings behind unless someone gives them back.
        releaseMemoryIfIdle()
        if let target = link.target {
            if targets[target]?.blocked == true {
                // Refused for a reason that retrying will not fix; keep that reason.
                updateTarget(target) { $0.connection = nil }
                connectWaitersFail(target: target, reason: targets[target]?.lastError ?? "refused", code: .pairingFailed)
            } else if link.session != nil && link.caughtUp {
                updateTarget(target) { $0.connection = nil; $0.retries = 0; $0.nextAttempt = Self.now() + DialTarget.backoff(retries: 0) }
            } else {
                dialFailed(target, reason: reason ?? "connection closed")
            }
        } else if link.session == nil, link.direction == .inbound {
            counters.failedConnections += reason == nil ? 0 : 1
        }
        checkSyncWaiters()
    }

    /// Sends a refusal and closes the connection.
    func refuse(_ id: PeerNetwork.ConnectionID, _ refusal: Refusal) {
        log.info("refusing \(links[id]?.device?.short ?? links[id]?.remote ?? "\(id)"): \(refusal.message)")
        network.send([.refuse(refusal)], on: id)
        network.close(id, reason: refusal.message)
        if var link = links[id] {
            link.session = nil
            links[id] = link
        }
    }

    // MARK: - Sessions

    /// Sends a session's frames and acts on its events.
    func drive(_ id: PeerNetwork.ConnectionID, _ output: SyncSession.Output) {
        guard var link = links[id] else { return }
        network.send(output.frames, on: id)
        for frame in output.frames {
            if case .entries(let batch) = frame {
                link.entriesSent += batch.entries.count
                counters.entriesSent += batch.entries.count
            }
        }
        links[id] = link
        for event in output.events {
            switch event {
            case .established(let hello):
                links[id]?.deviceName = hello.deviceName
                log.info("syncing with \(hello.deviceName) (\(link.device?.short ?? "?")) at \(link.remote)")
                if let linkNow = links[id] { persistPeer(linkNow, error: nil) }
                emit(.peerConnected(PeerEvent(peer: peerStatus(device: link.device))))
            case .applied(let outcome):
                applied(outcome, on: id)
            case .progress:
                progressed(id)
            case .closed(let reason):
                network.close(id, reason: reason)
                links[id]?.session = nil
                if let linkNow = links[id] {
                    persistPeer(linkNow, error: reason)
                    emit(.peerDisconnected(PeerEvent(peer: peerStatus(device: linkNow.device), reason: reason)))
                }
            }
        }
    }

    private func applied(_ outcome: ApplyOutcome, on id: PeerNetwork.ConnectionID) {
        guard var link = links[id] else { return }
        let wasLive = link.caughtUp
        link.entriesReceived += outcome.applied
        links[id] = link
        counters.entriesReceived += outcome.applied
        if wasLive, let latest = outcome.latestHLC {
            counters.recordLag(Int64(Self.now()) - Int64(latest.milliseconds))
        }
        publish(outcome.changes, origin: .remote, device: link.device, deviceName: link.deviceName)
        // What one device sent, every other connected device gets at once.
        localChange(except: id)
    }

    /// Once no session is catching up (a catch-up ended, in either direction, or was cut
    /// short), gives memory back and undoes the catch-up's SQLite settings.
    private func releaseMemoryIfIdle() {
        guard links.values.allSatisfy({ link in link.session.map { link.caughtUp && $0.status(store: replica) == .idle } ?? true }) else { return }
        do {
            try replica.releaseMemory()
        } catch {
            log.warning("could not give memory back after a catch-up: \(error)")
        }
    }

    private func progressed(_ id: PeerNetwork.ConnectionID) {
        guard var link = links[id], let session = link.session else { return }
        if let vector = session.peerVector, vector != link.peerVector {
            link.peerVector = vector
            links[id] = link
        }
        let caughtUp = session.isCaughtUp(store: replica)
        let now = Self.now()
        if caughtUp && !link.caughtUp {
            link.caughtUp = true
            links[id] = link
            releaseMemoryIfIdle()
            persistPeer(link, error: nil, synced: true)
            if let target = link.target { updateTarget(target) { $0.retries = 0; $0.lastError = nil } }
        } else if !caughtUp && link.caughtUp {
            link.caughtUp = false
            links[id] = link
        }
        if let device = link.device, caughtUp || now >= link.lastProgressEvent + 250 {
            links[id]?.lastProgressEvent = now
            let behind = Int(clamping: session.entriesToExchange(store: replica))
            emit(.syncProgress(SyncProgressEvent(
                device: device.description, short: device.short, name: link.deviceName ?? device.short,
                entriesBehind: behind, entriesReceived: link.entriesReceived, entriesSent: link.entriesSent)))
        }
        checkSyncWaiters()
    }

    /// Something was committed here: every session pushes it (except `except`, its source).
    func localChange(except: PeerNetwork.ConnectionID? = nil) {
        for id in links.keys.sorted() where id != except {
            guard var session = links[id]?.session else { continue }
            let output = session.localChange(store: replica, now: Self.now())
            links[id]?.session = session
            drive(id, output)
        }
        reschedule()
    }

    // MARK: - Timers

    /// Arms the one timer for the earliest deadline: session keepalives and timeouts, dial
    /// backoffs, waiters. Nothing periodic beyond those, so an idle daemon sleeps.
    func reschedule() {
        guard !stopped else { return }
        var deadlines: [UInt64] = links.values.compactMap { $0.session?.nextDeadline }
        deadlines += targets.values.filter { wantsDial($0) }.map(\.nextAttempt)
        deadlines += syncWaiters.map(\.deadline)
        deadlines += joinAttempts.values.map(\.deadline)
        deadlines += connectWaiters.map(\.deadline)
        guard let next = deadlines.min() else {
            if timerDeadline != nil { thread.schedule(at: nil) {} }
            timerDeadline = nil
            return
        }
        if timerDeadline == next { return }
        let delay = next > Self.now() ? next - Self.now() : 0
        thread.schedule(at: .now() + .milliseconds(Int(min(delay, 86_400_000)))) { [weak self] in self?.fire() }
        timerDeadline = next
    }

    private func fire() {
        timerDeadline = nil
        guard !stopped else { return }
        let now = Self.now()
        for id in links.keys.sorted() {
            guard var session = links[id]?.session, let deadline = session.nextDeadline, deadline <= now else { continue }
            let output = session.tick(store: replica, now: now)
            links[id]?.session = session
            drive(id, output)
        }
        dialDueTargets()
        expireWaiters(now: now)
        reschedule()
    }

    // MARK: - Roster

    struct Member {
        let record: RecordID
        let device: Device
        let id: DeviceID
        var revoked: Bool { device.revoked }
    }

    /// The household roster, read once per change (`rosterChanged`, or devices in a published
    /// change). A failed read keeps the last good roster: an empty one would refuse and block
    /// every household device.
    func roster() -> [Member] {
        if let cachedRoster { return cachedRoster }
        do {
            let members = try replica.listDevices().compactMap { entry -> Member? in
                guard let key = DevicePublicKey(bytes: entry.device.publicKey) else { return nil }
                return Member(record: entry.record, device: entry.device, id: key.deviceID)
            }
            cachedRoster = members
            lastGoodRoster = members
            return members
        } catch {
            log.error("cannot read the household roster: \(error); using the last one read")
            return lastGoodRoster
        }
    }

    func rosterDevice(_ id: DeviceID) -> Member? { roster().first { $0.id == id } }

    /// The roster changed (a device added or revoked): drop sessions with revoked devices and
    /// give every target a fresh chance (unblocked, backoff reset, dialled now).
    func rosterChanged() {
        cachedRoster = nil
        let members = roster()
        for (id, link) in links where link.session != nil {
            if let device = link.device, let member = members.first(where: { $0.id == device }), member.revoked {
                refuse(id, Refusal(.revoked, "device \(device.short) was removed from this household"))
            }
        }
        for key in targets.keys { updateTarget(key) { $0.blocked = false; $0.retries = 0; $0.nextAttempt = min($0.nextAttempt, Self.now()) } }
        dialDueTargets()
    }
}

/// The PSKs an inbound connection may prove: the household key, then every known invite's.
/// Read on the network thread; the invite list is copied there whenever it changes.
final class KeyList: Sendable {
    private let household: HouseholdKey
    private let invites = Mutex<[PreSharedKey]>([])

    init(household: HouseholdKey, engine: Engine) {
        self.household = household
        invites.withLock { $0 = engine.inviteKeys.map(\.key) }
        engine.keyList = self
    }

    func snapshot() -> [PreSharedKey] { [household.key] + invites.withLock { $0 } }

    func setInvites(_ keys: [PreSharedKey]) { invites.withLock { $0 = keys } }
}

