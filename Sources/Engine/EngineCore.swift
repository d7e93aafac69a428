import Control
import Foundation
import Merge
import Peer

/// The daemon's engine without I/O (docs/architecture.md, "The engine core"): the replica,
/// one sync session per connected device, dialling with backoff, pairing, counters, control
/// methods and events.
///
/// Every input is a method named after what happened, given the time it happened (`now`, ms
/// since 1970); the core never reads a clock, touches a socket, a thread or a queue. What it
/// wants done comes out of `takeOutput()`: actions to perform in order (send frames, dial,
/// close, answer a parked control request, emit an event, change the keys the network
/// accepts) and the next deadline, at which the caller calls `timerFired(now:)`. The daemon's
/// shell (`Sources/notesd/Engine`) feeds it from the network, discovery and control socket;
/// the simulation (`Tests/SimulationTests`) feeds several from an in-memory network.
///
/// Not thread-safe: one owner calls it (the daemon's engine queue, or a test).
public final class EngineCore {
    public struct Settings: Sendable {
        public var dataDirectory: String
        public var deviceName: String
        public var controlSocket: String
        public var session = SyncSession.Configuration(deviceName: "")

        public init(dataDirectory: String, deviceName: String, controlSocket: String) {
            self.dataDirectory = dataDirectory
            self.deviceName = deviceName
            self.controlSocket = controlSocket
        }
    }

    /// Logging hooks; the process shell supplies them.
    public struct Logger: Sendable {
        public var debug: @Sendable (String) -> Void
        public var info: @Sendable (String) -> Void
        public var warning: @Sendable (String) -> Void
        public var error: @Sendable (String) -> Void

        public init(
            debug: @escaping @Sendable (String) -> Void, info: @escaping @Sendable (String) -> Void,
            warning: @escaping @Sendable (String) -> Void, error: @escaping @Sendable (String) -> Void
        ) {
            self.debug = debug
            self.info = info
            self.warning = warning
            self.error = error
        }

        public static let silent = Logger(debug: { _ in }, info: { _ in }, warning: { _ in }, error: { _ in })
    }

    /// What the core needs from the world besides its inputs, so that the simulation can
    /// supply a seeded stand-in.
    public struct Environment {
        /// Random bytes: invite secrets (so they must be unguessable in the daemon) and
        /// backoff jitter.
        public var randomBytes: (Int) -> [UInt8]
        /// A fresh id for a connection this core dials (the network numbers inbound ones from
        /// the same sequence).
        public var newConnectionID: () -> PeerNetwork.ConnectionID
        /// This machine's interface addresses, best first, for the addresses an invite lists.
        public var interfaceAddresses: () -> [String]

        public init(
            randomBytes: @escaping (Int) -> [UInt8], newConnectionID: @escaping () -> PeerNetwork.ConnectionID,
            interfaceAddresses: @escaping () -> [String]
        ) {
            self.randomBytes = randomBytes
            self.newConnectionID = newConnectionID
            self.interfaceAddresses = interfaceAddresses
        }
    }

    /// Names a control request whose answer comes later (`join`, `connect`, `sync --wait`):
    /// the caller picks it, the core answers with `Action.reply`.
    public struct RequestToken: Hashable, Sendable, CustomStringConvertible {
        public let raw: UInt64
        public init(_ raw: UInt64) { self.raw = raw }
        public var description: String { "request \(raw)" }
    }

    /// The answer to a parked request.
    public enum Reply: Sendable {
        case join(Result<JoinResult, RPCError>)
        case connect(Result<PeerStatus, RPCError>)
        case sync(Result<SyncResult, RPCError>)
    }

    /// What the core wants done, in order.
    public enum Action {
        /// Dial `address` proving `psk`; report `connectionEstablished`, `dialFailed` or
        /// `connectionClosed` for `id`.
        case dial(PeerNetwork.ConnectionID, PeerAddress, psk: PreSharedKey)
        /// Send `frames` on the connection (after what was sent before).
        case send([Frame], on: PeerNetwork.ConnectionID)
        /// Close the connection once what was sent is written; then report `connectionClosed`.
        case close(PeerNetwork.ConnectionID, reason: String)
        /// Answer a parked control request.
        case reply(RequestToken, Reply)
        /// Send an event to every watcher (only produced while `watching` is true).
        case emit(ControlEvent)
        /// The pre-shared keys an inbound handshake may prove from now on: the household keys
        /// (the current one, then older ones still accepted during a rotation), then every
        /// invite's. `connectionEstablished`'s `matchedKeyIndex` indexes this list.
        case acceptKeys([PreSharedKey])
    }

    public struct Output {
        public var actions: [Action]
        /// When to call `timerFired`; nil when nothing is due (an idle core sleeps).
        public var nextDeadline: UInt64?
    }

    public let settings: Settings
    let log: Logger
    public let replica: Replica
    public let identity: DeviceIdentity
    public let household: HouseholdKey
    let environment: Environment
    public let started: UInt64
    /// The time of the input being handled; every `now` the core uses.
    public private(set) var now: UInt64
    /// True while someone watches events: the shell says so before each input, and events
    /// are built only then (an initial sync changes thousands of notes).
    public var watching = false
    /// What this device says in its handshake payloads, which is what it agrees from: this
    /// release's `handshakeInfo`; the virtual network plays other releases by changing it.
    public var advertised = EngineCore.handshakeInfo
    public private(set) var listenAddresses: [PeerAddress] = []
    /// Every connection the core knows, in one state each (`Connection.State`).
    var connections: [PeerNetwork.ConnectionID: Connection] = [:]
    var targets: [String: DialTarget] = [:]
    var counters = Counters()
    var syncWaiters: [SyncWaiter] = []
    var joinAttempts: [JoinAttempt.ID: JoinAttempt] = [:]
    var connectWaiters: [ConnectWaiter] = []
    var discovery = Control.DiscoveryStatus(state: .disabled, reason: "mDNS discovery is off (--no-mdns); peers come from --peer and `notesctl connect`")
    /// The roster as last read (see `roster()`); nil once a change may have made it stale.
    var cachedRoster: [Member]?
    var lastGoodRoster: [Member] = []
    /// When a household device refused this one as removed (see `removedBy`), or nil.
    public internal(set) var removedFromHousehold: UInt64?
    /// Invite keys the network may accept, in the order it offers them after the household key.
    var inviteKeys: [(secretID: String, key: PreSharedKey)] = [] {
        didSet { announceKeys() }
    }
    var actions: [Action] = []
    /// How many household keys lead the last `acceptKeys` list (the rest are invites').
    var announcedHouseholdKeys = 1
    /// Where household key rotation stands (EngineCore+KeyRotation).
    var keyRotation: KeyRotation.Status = .notMember
    public private(set) var stopped = false
    /// Notes a catch-up or an import left for the search index, as counted when their bulk
    /// settings were given back; indexed in steps after that (EngineCore+SearchIndex).
    var searchIndexBacklog = 0
    /// When an import's bulk settings (Replica.enterBulkWrite) are given back if no further
    /// large `notes.createMany` batch came; nil when none is in force for an import.
    var bulkImportSettles: UInt64?
    /// A catch-up ended (or a session closed), an import settled or the search index caught
    /// up: memory is given back at the next timer turn, after the answers and events of this
    /// one have gone out (`releaseMemoryIfIdle`).
    var memoryReleaseDue = false

    /// Opens the keys and puts this device on its own roster. The network is not used until
    /// `listening(on:now:)`.
    public init(
        settings: Settings, replica: Replica, identity: DeviceIdentity, household: HouseholdKey, environment: Environment,
        log: Logger, now: UInt64
    ) throws {
        var settings = settings
        settings.session.deviceName = settings.deviceName
        self.settings = settings
        self.replica = replica
        self.identity = identity
        self.household = household
        self.environment = environment
        self.log = log
        self.now = now
        started = now
        // This device is on its own roster from its first start.
        try replica.addDevice(publicKey: identity.publicKey.bytes, name: settings.deviceName, now: now)
        inviteKeys = try Self.inviteKeys(replica)
        removedFromHousehold = try replica.removedFromHousehold
        // A catch-up cut short by the last stop left notes to index.
        searchIndexBacklog = try replica.notesAwaitingSearchIndex
        reviewHouseholdKeys()
    }

    /// The pairing keys of the invites the replica keeps (used and expired ones for a day, so
    /// a late joiner gets a precise refusal); a damaged row is skipped, not fatal.
    static func inviteKeys(_ replica: Replica) throws -> [(secretID: String, key: PreSharedKey)] {
        try replica.invites().compactMap { invite in InviteCode(secret: invite.secret).map { (invite.secretID, $0.pskForPairing) } }
    }

    func announceKeys() {
        let keys = household.held.map(\.key)
        announcedHouseholdKeys = keys.count
        actions.append(.acceptKeys(keys + inviteKeys.map(\.key)))
    }

    /// What to do now, and when to be called next. Empties the action list.
    public func takeOutput() -> Output {
        defer { actions = [] }
        return Output(actions: actions, nextDeadline: nextDeadline)
    }

    /// Starts an input: everything it does happens at `now`. The clock never goes back, so a
    /// deadline already passed cannot be missed because the caller's clock stepped.
    func advance(_ time: UInt64) { now = max(now, time) }

    /// Parses `host:port` as people write it (`Control.HostPort`).
    static func address(_ text: String) -> PeerAddress? {
        guard case .success(let parsed) = HostPort.parse(text, allowsPortZero: false) else { return nil }
        return PeerAddress(host: parsed.host, port: parsed.port)
    }

    /// The port this device accepts connections on (what discovery advertises).
    public var listenPort: UInt16? { listenAddresses.first?.port }

    // MARK: - Inputs: life cycle

    /// The network listens on `addresses`; dialling may start.
    public func listening(on addresses: [PeerAddress], now: UInt64) {
        advance(now)
        listenAddresses = addresses
        announceKeys()
    }

    /// Ends every session cleanly; the caller stops the network once the actions are sent.
    public func shutdown(now: UInt64) {
        advance(now)
        guard !stopped else { return }
        for id in connections.keys.sorted() {
            if var session = connections[id]?.session {
                let output = session.shutdown(reason: "this device is shutting down")
                send(output.frames, on: id)
            }
            close(id, reason: "shutting down")
        }
        stopped = true
    }

    /// Runs a control request's body at `now` (the control methods in EngineCore+Control).
    public func request<T>(at now: UInt64, _ body: (EngineCore) throws -> T) rethrows -> T {
        advance(now)
        return try body(self)
    }

    // MARK: - Inputs: the network

    /// A handshake finished on `id`: the peer proved `publicKey` and, inbound, the key at
    /// `matchedKeyIndex` of the last `acceptKeys` list (household keys first). `handshakePayload` is
    /// the peer's `HandshakeInfo` (empty from release 0.1).
    public func connectionEstablished(
        _ id: PeerNetwork.ConnectionID, publicKey: DevicePublicKey, matchedKeyIndex: Int?, direction: PeerNetwork.Direction,
        remote: String, handshakePayload: [UInt8] = [], now: UInt64
    ) {
        advance(now)
        guard !stopped else { return }
        let peer = publicKey.deviceID
        var link = connections[id] ?? Connection(id: id, direction: direction, remote: remote, state: .dialing(.household))
        link.remote = remote
        link.device = peer
        link.publicKey = publicKey.bytes
        connections[id] = link
        guard agree(on: id, payload: handshakePayload) else { return }
        if direction == .inbound, let index = matchedKeyIndex, index >= announcedHouseholdKeys {
            guard index - announcedHouseholdKeys < inviteKeys.count else {
                refuse(id, Refusal(.inviteUnknown, "this invite code is not known here; ask for a new one with `notesctl invite`"))
                return
            }
            connections[id]?.state = .admitting(Pairing.Admission(inviteSecretID: inviteKeys[index - announcedHouseholdKeys].secretID))
            log.info("pairing: \(peer.short) at \(remote) presented an invite")
            return
        }
        switch link.state {
        case .dialing(.join(let attempt)):
            let (join, frames) = Pairing.Join.start(
                attempt: attempt, deviceName: settings.deviceName, expectsKeys: connections[id]?.agreement?.uses(.keyRotation) == true)
            connections[id]?.state = .joining(join)
            send(frames, on: id)
            return
        case .dialing(.household):
            break
        case .admitting, .joining, .syncing, .closing:
            // The network reports one handshake per connection; a second changes nothing.
            return
        }
        if let target = link.target { updateTarget(target) { $0.device = peer; $0.handshakeRefusals = 0 } }
        guard let member = rosterDevice(peer) else {
            refuse(id, Refusal(.notOnRoster, "device \(identity.deviceID.short) does not have \(peer.short) on its household roster; pair it with `notesctl invite` / `notesctl join`"))
            if let target = link.target { blockTarget(target, on: id, reason: "\(peer.short) at \(remote) is not on this household's roster") }
            return
        }
        guard !member.revoked else {
            refuse(id, Refusal(.revoked, "device \(peer.short) was removed from this household"))
            if let target = link.target { blockTarget(target, on: id, reason: "\(peer.short) was removed from this household") }
            return
        }
        // One connection per device pair: the one dialled by the smaller device id stays.
        if let other = connections.values.sorted(by: { $0.id < $1.id }).first(where: { $0.id != id && $0.device == peer && $0.isSyncing }) {
            let keepNew = (direction == .outbound) == (identity.deviceID < peer)
            let loser = keepNew ? other.id : id
            log.debug("duplicate connection with \(peer.short): closing \(loser)")
            refuse(loser, Refusal(.duplicate, "a connection between these devices already exists"))
            if !keepNew { return }
        }
        let (session, output) = SyncSession.start(configuration: settings.session, store: replica, now: now)
        connections[id]?.state = .syncing(session)
        drive(id, output)
        connectWaitersResolve(device: peer, target: link.target)
    }

    /// Frames arrived on `id`, in order.
    public func framesReceived(_ frames: [Frame], on id: PeerNetwork.ConnectionID, now: UInt64) {
        advance(now)
        guard !stopped else { return }
        for frame in frames {
            guard connections[id] != nil else { break }
            receive(frame, on: id)
        }
    }

    /// A dial never reached a handshake: the address did not resolve or nobody answered.
    public func dialFailed(_ id: PeerNetwork.ConnectionID, reason: String, now: UInt64) {
        advance(now)
        guard !stopped, let link = connections.removeValue(forKey: id) else { return }
        if let attempt = link.joinAttempt { joinClosed(attempt, failure: .unreachable(reason)) }
        if let target = link.target { dialFailed(target: target, reason: reason, unreachable: true) }
        checkSyncWaiters()
    }

    /// The connection `id` ended (`reason` nil: closed cleanly by us).
    public func connectionClosed(_ id: PeerNetwork.ConnectionID, reason: String?, now: UInt64) {
        advance(now)
        guard !stopped else { return }
        guard let link = connections.removeValue(forKey: id) else {
            // An inbound connection whose handshake never finished (a wrong key, a scan).
            if let reason { log.debug("connection \(id) ended before its handshake finished: \(reason)") }
            return
        }
        let wasSyncing: Bool
        switch link.state {
        case .syncing:
            wasSyncing = true
            let peer = peerStatus(device: link.device)
            log.info("disconnected from \(link.deviceName ?? link.device?.short ?? link.remote)\(reason.map { ": \($0)" } ?? "")")
            emit(.peerDisconnected(PeerEvent(peer: peer, reason: reason)))
            persistPeer(link, error: reason)
        case .dialing(.join(let attempt)):
            wasSyncing = false
            joinClosed(attempt, failure: reason.map { .refused($0) })
        case .joining(let join):
            wasSyncing = false
            joinClosed(join.attempt, failure: reason.map { .refused($0) })
        case .dialing(.household):
            wasSyncing = false
            if let target = link.target { updateTarget(target) { $0.handshakeRefusals += 1 } }
        case .admitting, .closing:
            wasSyncing = false
        }
        // A catch-up cut short (here, or by a session that ended before the socket closed)
        // leaves its settings behind unless someone gives them back.
        memoryReleaseDue = true
        if let target = link.target {
            if let dialled = targets[target], dialled.blocked, dialled.refusedOn == id || !dialled.refusedByItsRoster {
                // Refused on this connection (asked again later only if its roster may change),
                // or for a reason that retrying will not fix; keep that reason.
                connectWaitersFail(target: target, reason: dialled.lastError ?? "refused", code: .refused)
            } else if wasSyncing && link.caughtUp {
                let delay = backoff(retries: 0)
                updateTarget(target) { $0.retries = 0; $0.nextAttempt = self.now + delay }
            } else {
                // Also a target its roster refused, asked again, whose connection ended before
                // it was refused again (the household's key moved on): it backs off like any
                // failed dial.
                dialFailed(target: target, reason: reason ?? "connection closed", unreachable: false)
            }
        } else if !wasSyncing, link.direction == .inbound {
            counters.failedConnections += reason == nil ? 0 : 1
        }
        checkSyncWaiters()
    }

    private func receive(_ frame: Frame, on id: PeerNetwork.ConnectionID) {
        guard let link = connections[id] else { return }
        switch link.state {
        case .admitting(let admission):
            admit(frame, on: id, admission)
        case .joining(let join):
            joinReceived(frame, on: id, join)
        case .dialing:
            // No frame comes before the handshake is done.
            break
        case .closing:
            // We are closing; a refusal from the peer still says why it will not sync.
            if case .refuse(let refusal) = frame, let target = link.target {
                blockTarget(target, on: id, reason: refusal.message, byItsRoster: Self.rosterRefusals.contains(refusal.code))
            }
            noteRemoval(frame, from: link)
        case .syncing(var session):
            if case .householdKeys(let keys) = frame {
                receivedHouseholdKeys(keys, on: id)
                return
            }
            noteRemoval(frame, from: link)
            if case .refuse(let refusal) = frame, let target = link.target,
               [.notOnRoster, .revoked, .protocolVersion].contains(refusal.code) {
                blockTarget(target, on: id, reason: refusal.message, byItsRoster: Self.rosterRefusals.contains(refusal.code))
            }
            // A household device sends its hello only to a device on its roster.
            if case .hello = frame {
                acceptedByHousehold()
                if let target = link.target { updateTarget(target) { $0.blocked = false; $0.refusedByItsRoster = false; $0.refusedOn = nil } }
            }
            let output = session.receive(frame, store: replica, now: now)
            connections[id]?.state = .syncing(session)
            drive(id, output)
        }
    }

    /// Refusals that rest on the refusing device's roster, which the household passes on:
    /// the device there may take this one later (`DialTarget.refusedByItsRoster`).
    static let rosterRefusals: Set<Refusal.Code> = [.notOnRoster, .revoked]

    /// Only a current household member can tell us we were removed.
    private func noteRemoval(_ frame: Frame, from link: Connection) {
        if case .refuse(let refusal) = frame, refusal.code == .revoked,
           let device = link.device, let member = rosterDevice(device), !member.revoked {
            removedBy(link)
        }
    }

    /// Sends frames on a connection (nothing when there are none).
    func send(_ frames: [Frame], on id: PeerNetwork.ConnectionID) {
        guard !frames.isEmpty else { return }
        actions.append(.send(frames, on: id))
    }

    /// Asks the network to close `id` once what was sent is written.
    func close(_ id: PeerNetwork.ConnectionID, reason: String) {
        connections[id]?.state = .closing(reason: reason)
        actions.append(.close(id, reason: reason))
    }

    /// Sends a refusal and closes the connection.
    func refuse(_ id: PeerNetwork.ConnectionID, _ refusal: Refusal) {
        log.info("refusing \(connections[id]?.device?.short ?? connections[id]?.remote ?? "\(id)"): \(refusal.message)")
        send([.refuse(refusal)], on: id)
        close(id, reason: refusal.message)
    }

    // MARK: - Sessions

    /// Sends a session's frames and acts on its events.
    func drive(_ id: PeerNetwork.ConnectionID, _ output: SyncSession.Output) {
        guard connections[id] != nil else { return }
        send(output.frames, on: id)
        for frame in output.frames {
            if case .entries(let batch) = frame {
                connections[id]?.entriesSent += batch.entries.count
                counters.entriesSent += batch.entries.count
            }
        }
        for event in output.events {
            guard let link = connections[id] else { return }
            switch event {
            case .established(let hello):
                connections[id]?.deviceName = hello.deviceName
                log.info("syncing with \(hello.deviceName) (\(link.device?.short ?? "?")) at \(link.remote)")
                if let named = connections[id] { persistPeer(named, error: nil) }
                shareAllKeys(on: id)
                emit(.peerConnected(PeerEvent(peer: peerStatus(device: link.device))))
            case .applied(let outcome):
                applied(outcome, on: id)
            case .progress:
                progressed(id)
            case .closed(let reason):
                close(id, reason: reason)
                if let closed = connections[id] { persistPeer(closed, error: reason) }
                emit(.peerDisconnected(PeerEvent(peer: peerStatus(device: link.device), reason: reason)))
            }
        }
    }

    private func applied(_ outcome: ApplyOutcome, on id: PeerNetwork.ConnectionID) {
        guard let link = connections[id] else { return }
        connections[id]?.entriesReceived += outcome.applied
        counters.entriesReceived += outcome.applied
        if link.caughtUp, let latest = outcome.latestHLC {
            counters.recordLag(Int64(clamping: now) - Int64(clamping: latest.milliseconds))
        }
        publish(outcome.changes, origin: .remote, device: link.device, deviceName: link.deviceName)
        // What one device sent, every other connected device gets at once.
        localChange(except: id)
    }

    /// Once no session is catching up (a catch-up ended, in either direction, or was cut
    /// short) and no import is under way, gives memory back and undoes the bulk SQLite
    /// settings.
    private func releaseMemoryIfIdle() {
        guard bulkImportSettles == nil else { return }
        guard connections.values.allSatisfy({ link in link.session.map { link.caughtUp && $0.status(store: replica) == .idle } ?? true }) else { return }
        do {
            try replica.releaseMemory()
            searchIndexBacklog = try replica.notesAwaitingSearchIndex
        } catch {
            log.warning("could not give memory back after a catch-up, an import or the search index's steps: \(error)")
        }
    }

    private func progressed(_ id: PeerNetwork.ConnectionID) {
        guard var link = connections[id], let session = link.session else { return }
        if let vector = session.peerVector { link.peerVector = vector }
        let caughtUp = session.isCaughtUp(store: replica)
        let becameCaughtUp = caughtUp && !link.caughtUp
        link.caughtUp = caughtUp
        let emitsProgress = link.device != nil && (caughtUp || now >= link.lastProgressEvent + Self.progressEventInterval)
        if emitsProgress { link.lastProgressEvent = now }
        connections[id] = link
        flushKeys(on: id)
        if becameCaughtUp {
            // Not now: settling returns the file to the write-ahead log (or, for a catch-up
            // that stayed in it, the final checkpoint copies it into the database file:
            // 150–250 ms for 10,000 notes), and `sync --wait`, the events and the peer's ack
            // need not wait for it; every batch is durable already.
            memoryReleaseDue = true
            persistPeer(link, error: nil, synced: true)
            if let target = link.target { updateTarget(target) { $0.retries = 0; $0.lastError = nil } }
        }
        if emitsProgress, let device = link.device {
            let behind = Int(clamping: session.entriesToExchange(store: replica))
            emit(.syncProgress(SyncProgressEvent(
                device: device.description, short: device.short, name: link.deviceName ?? device.short,
                entriesBehind: behind, entriesReceived: link.entriesReceived, entriesSent: link.entriesSent)))
        }
        checkSyncWaiters()
    }

    /// At most one `syncProgress` event per peer this often (ms) while catching up.
    static let progressEventInterval: UInt64 = 250

    /// Something was committed here: every session pushes it (except `except`, its source).
    func localChange(except: PeerNetwork.ConnectionID? = nil) {
        for id in connections.keys.sorted() where id != except {
            guard var session = connections[id]?.session else { continue }
            let output = session.localChange(store: replica, now: now)
            connections[id]?.state = .syncing(session)
            drive(id, output)
        }
    }

    // MARK: - Timers

    /// The earliest deadline: session keepalives and timeouts, dial backoffs, waiters, the
    /// search index's next step, the end of an import, memory to give back. Nothing periodic
    /// beyond those, so an idle daemon sleeps.
    public var nextDeadline: UInt64? {
        guard !stopped else { return nil }
        var deadlines: [UInt64] = connections.values.compactMap { $0.session?.nextDeadline }
        deadlines += targets.keys.filter(wantsDial).compactMap { targets[$0]?.nextAttempt }
        deadlines += syncWaiters.map(\.deadline)
        deadlines += joinAttempts.values.map(\.deadline)
        deadlines += connectWaiters.map(\.deadline)
        if searchIndexStepDue { deadlines.append(now) }
        if let bulkImportSettles { deadlines.append(bulkImportSettles) }
        if memoryReleaseDue { deadlines.append(now) }
        return deadlines.min()
    }

    /// The deadline given by `takeOutput` came (or any time later).
    public func timerFired(now: UInt64) {
        advance(now)
        guard !stopped else { return }
        for id in connections.keys.sorted() {
            guard var session = connections[id]?.session, let deadline = session.nextDeadline, deadline <= self.now else { continue }
            let output = session.tick(store: replica, now: self.now)
            connections[id]?.state = .syncing(session)
            drive(id, output)
        }
        dialDueTargets()
        expireWaiters()
        if let settles = bulkImportSettles, settles <= self.now {
            // The import ended: its settings go as a catch-up's do, once no catch-up runs
            // either (a catch-up's end gives them back otherwise), and its notes get indexed.
            bulkImportSettles = nil
            memoryReleaseDue = true
        }
        if memoryReleaseDue {
            memoryReleaseDue = false
            releaseMemoryIfIdle()
        }
        indexSearchStep()
    }

    /// A duration as messages quote it ("15 s", "10 minutes"), from the constant itself.
    static func seconds(_ milliseconds: UInt64) -> String { "\(milliseconds / 1_000) s" }
    static func minutes(_ milliseconds: UInt64) -> String { "\(milliseconds / 60_000) minutes" }

    // MARK: - Randomness

    /// A uniform value in 0..<1 from the environment's random bytes.
    func randomUnit() -> Double {
        let bytes = environment.randomBytes(8)
        let value = bytes.reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        return Double(value >> 11) / Double(UInt64(1) << 53)
    }

    /// `DialTarget.backoff` with jitter drawn here.
    func backoff(retries: Int) -> UInt64 {
        DialTarget.backoff(retries: retries, jitter: 0.8 + 0.4 * randomUnit())
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
        for id in connections.keys.sorted() {
            guard let link = connections[id], link.isSyncing else { continue }
            if let device = link.device, let member = members.first(where: { $0.id == device }), member.revoked {
                refuse(id, Refusal(.revoked, "device \(device.short) was removed from this household"))
            }
        }
        for key in targets.keys { updateTarget(key) { $0.blocked = false; $0.retries = 0; $0.nextAttempt = min($0.nextAttempt, self.now) } }
        reviewHouseholdKeys()
        dialDueTargets()
    }
}
