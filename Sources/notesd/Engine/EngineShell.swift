import Control
import Dispatch
import Engine
import Foundation
import Merge
import Peer
import protocol Discovery.PeerSource
import Synchronization

/// The daemon's engine as the process runs it: the sans-I/O `EngineCore` (module `Engine`)
/// plus the I/O it asks for (docs/architecture.md, "The daemon's threads").
///
/// The shell reads inputs (network events, discovery events, control requests, its one
/// timer), hands each to the core with the current time, and performs the actions the core
/// returns: frames to the network, dials, closes, answers to parked control requests, events
/// to watchers, the keys the network accepts. Everything mutable lives on `queue`, a serial
/// queue: network and discovery events and the timer reach it through `thread`, control
/// requests with `queue.async`. That confinement is why the class can be
/// `@unchecked Sendable`: no stored `var` is read or written off `queue`.
final class EngineShell: @unchecked Sendable {
    struct Settings: Sendable {
        var core: EngineCore.Settings
        var listen: PeerAddress
        var staticPeers: [String]
        /// Advertise and browse with Avahi (off with `--no-mdns`).
        var mdns = false
        /// Tried when the configured port is taken (another user's notesd on this machine).
        var fallbackToFreePort = true
    }

    let queue: DispatchQueue
    /// Runs network and discovery events and the timer on `queue` without waking a
    /// libdispatch worker (see `EngineThread`).
    let thread: EngineThread
    let settings: Settings
    let log: EngineCore.Logger
    let core: EngineCore
    private(set) var network: PeerNetwork!
    let watchers = ControlWatchers()
    /// The keys an inbound handshake may prove, as the core last announced them; read on the
    /// network thread.
    let acceptedKeys = KeyList()
    /// Parked control requests (`join`, `connect`, `sync --wait`), answered by `Action.reply`.
    private var parked: [EngineCore.RequestToken: (EngineCore.Reply) -> Void] = [:]
    private var nextToken: UInt64 = 1
    /// Static peers and Avahi (see EngineShell+Discovery).
    var sources: [any PeerSource] = []
    /// The deadline `thread` was last given (engine time, ms); `nil` when none is armed.
    private var timerDeadline: UInt64?
    var stopped = false
    /// Connection ids the core picks for its dials come from the network's own sequence; the
    /// network exists only once `start` runs, so until then this numbers them.
    private let connectionIDs = ConnectionNumbers()

    init(settings: Settings, replica: Replica, identity: DeviceIdentity, household: HouseholdKey, log: EngineCore.Logger) throws {
        let queue = DispatchQueue(label: "notesd.engine")
        self.queue = queue
        thread = EngineThread(queue: queue)
        self.settings = settings
        self.log = log
        let connectionIDs = connectionIDs
        let environment = EngineCore.Environment(
            randomBytes: { Sodium.randomBytes($0) },
            newConnectionID: { connectionIDs.next() },
            interfaceAddresses: { InterfaceAddresses.current() })
        core = try EngineCore(
            settings: settings.core, replica: replica, identity: identity, household: household, environment: environment,
            log: log, now: Self.now())
        perform()
    }

    /// The wall clock, in the core's unit (ms since 1970). Read here only.
    static func now() -> UInt64 { UInt64(Date().timeIntervalSince1970 * 1000) }

    var replica: Replica { core.replica }

    /// Starts listening and dialling. Throws when the listen address cannot be bound at all.
    func start() throws {
        let thread = thread
        let keys = acceptedKeys
        let connectionIDs = connectionIDs
        var networkConfiguration = PeerNetwork.Configuration()
        networkConfiguration.handshakePayload = EngineCore.handshakePayload
        network = try PeerNetwork(
            identity: core.identity, configuration: networkConfiguration, responderKeys: { keys.current },
            newConnectionID: { connectionIDs.next() },
            events: { [weak self] event in
                guard let shell = self else { return }
                thread.post { shell.handle(event) }
            })
        let first = Result { () throws(NetworkError) -> PeerAddress in try network.listen(on: settings.listen) }
        let bound: PeerAddress
        switch first {
        case .success(let address):
            bound = address
        case .failure(let error):
            guard settings.fallbackToFreePort, settings.listen.port != 0 else { throw error }
            log.warning("cannot listen on \(settings.listen) (\(error)); another notesd may be using it, so listening on a free port instead")
            bound = try network.listen(on: PeerAddress(host: settings.listen.host, port: 0))
        }
        log.info("listening for devices on \(bound)")
        queue.sync {
            input { $0.listening(on: [bound], now: $1) }
            startSources(mdns: settings.mdns)
        }
    }

    /// Ends every session cleanly and stops the network. Runs on `queue`.
    func stop() {
        guard !stopped else { return }
        input { $0.shutdown(now: $1) }
        stopped = true
        thread.stop()
        stopSources()
        network?.stop()
    }

    // MARK: - Inputs

    /// Hands one input to the core at the current time, then performs what it asks.
    func input(_ body: (EngineCore, UInt64) -> Void) {
        guard !stopped else { return }
        core.watching = watchers.count > 0
        body(core, Self.now())
        perform()
    }

    /// Runs a control method on the core (on `queue`), then performs what it asks.
    func request<T>(_ body: (EngineCore) throws -> T) rethrows -> T {
        core.watching = watchers.count > 0
        defer { perform() }
        return try core.request(at: Self.now(), body)
    }

    /// Parks `complete` until the core answers `token`.
    func park<T>(_ complete: @escaping @Sendable (Result<T, RPCError>) -> Void, _ unwrap: @escaping (EngineCore.Reply) -> Result<T, RPCError>?) -> EngineCore.RequestToken {
        let token = EngineCore.RequestToken(nextToken)
        nextToken += 1
        parked[token] = { reply in
            complete(unwrap(reply) ?? .failure(.internalError("the engine answered \(reply) to a request of another kind")))
        }
        return token
    }

    func handle(_ event: PeerNetwork.Event) {
        switch event {
        case .established(let id, let peer, let direction, let remote):
            input { $0.connectionEstablished(id, publicKey: peer.staticKey, matchedKeyIndex: peer.matchedPSKIndex, direction: direction, remote: remote, handshakePayload: peer.handshakePayload, now: $1) }
        case .frames(let id, let frames):
            input { $0.framesReceived(frames, on: id, now: $1) }
            // Lets the network read from this peer again once the engine has caught up.
            network.processed(id)
        case .dialFailed(let id, let reason):
            input { $0.dialFailed(id, reason: reason, now: $1) }
        case .closed(let id, let reason):
            input { $0.connectionClosed(id, reason: reason, now: $1) }
        case .refusing(let host, let failures, let window):
            log.warning("refusing connections from \(host): \(failures) handshakes from it failed at message 1 within \(window.components.seconds) s "
                + "(the wrong key, another household, or garbage); until they are that old, a household device at that address is refused too")
        }
    }

    // MARK: - Actions

    /// Performs the core's actions in order and arms the timer for its next deadline.
    private func perform() {
        let output = core.takeOutput()
        for action in output.actions {
            switch action {
            case .dial(let id, let address, let psk):
                network?.dial(address, psk: psk, payload: EngineCore.handshakePayload, id: id)
            case .send(let frames, let id):
                network?.send(frames, on: id)
            case .close(let id, let reason):
                network?.close(id, reason: reason)
            case .reply(let token, let reply):
                parked.removeValue(forKey: token)?(reply)
            case .emit(let event):
                watchers.broadcast(event)
            case .acceptKeys(let keys):
                acceptedKeys.current = keys
            }
        }
        reschedule(output.nextDeadline)
    }

    /// Arms the one timer for `next` (engine time); nothing armed when nil, so an idle
    /// daemon sleeps.
    private func reschedule(_ next: UInt64?) {
        guard !stopped else { return }
        guard let next else {
            if timerDeadline != nil { thread.schedule(at: nil) {} }
            timerDeadline = nil
            return
        }
        if timerDeadline == next { return }
        let now = Self.now()
        let delay = next > now ? next - now : 0
        thread.schedule(at: .now() + .milliseconds(Int(min(delay, 86_400_000)))) { [weak self] in self?.fire() }
        timerDeadline = next
    }

    private func fire() {
        timerDeadline = nil
        input { $0.timerFired(now: $1) }
    }
}

/// The PSKs an inbound connection may prove (household key, then every invite's), as the core
/// last announced them. Read on the network thread at each accept.
final class KeyList: Sendable {
    private let keys = Mutex<[PreSharedKey]>([])

    var current: [PreSharedKey] {
        get { keys.withLock { $0 } }
        set { keys.withLock { $0 = newValue } }
    }
}

/// One sequence of connection ids for the core's dials and the network's inbound connections.
final class ConnectionNumbers: Sendable {
    private let counter = Atomic<UInt64>(1)

    func next() -> PeerNetwork.ConnectionID { PeerNetwork.ConnectionID(raw: counter.add(1, ordering: .relaxed).oldValue) }
}
