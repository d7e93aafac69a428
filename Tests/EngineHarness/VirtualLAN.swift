import Control
import Engine
import Foundation
import Merge
import Peer

/// One seeded stream drives everything in a run: latencies, faults, the cores' randomness.
public struct SimRandom {
    private var generator: SplitMix64

    public init(seed: UInt64) { generator = SplitMix64(seed: seed) }

    public mutating func next() -> UInt64 { generator.next() }

    public mutating func below(_ bound: Int) -> Int { bound <= 1 ? 0 : Int(next() % UInt64(bound)) }
    public mutating func chance(_ probability: Double) -> Bool { Double(next() % 1_000_000) < probability * 1_000_000 }
    public mutating func pick<T>(_ items: [T]) -> T? { items.isEmpty ? nil : items[below(items.count)] }
    public mutating func range(_ low: Int64, _ high: Int64) -> Int64 { low + Int64(next() % UInt64(high - low + 1)) }

    public mutating func bytes(_ count: Int) -> [UInt8] { (0..<count).map { _ in UInt8(truncatingIfNeeded: next()) } }
}

/// Real `EngineCore`s (real SQLite files) on an in-memory network, in virtual time: what the
/// engine tests and the simulation drive (docs/testing.md).
///
/// The network does what `PeerNetwork` does for a core, without sockets: it performs the
/// core's actions (dial, send, close, keys to accept) and reports back (dial failed,
/// handshake done, frames, closed). The Noise handshake itself is proven by the channel
/// tests, so here a dial is "done" when the dialled node accepts the key it proved: the
/// matched index comes from the keys that node's core last announced, as the real network
/// reads them, so a wrong invite code fails the handshake like the real one. A connection keeps
/// its frames in order, as TCP does; faults (drops, duplicates, slow frames that later ones
/// overtake) apply to frames; partitions cut pairs of nodes; crashes
/// end a node's core and connections at once, and a relaunch opens the same files again.
public final class VirtualLAN {
    public struct Faults: Sendable {
        public var drop: Double
        public var duplicate: Double
        public var slow: Double

        public init(drop: Double = 0, duplicate: Double = 0, slow: Double = 0) {
            self.drop = drop
            self.duplicate = duplicate
            self.slow = slow
        }

        public static let none = Faults()
    }

    public final class Node {
        public let index: Int
        public let name: String
        public let directory: String
        /// Where the node listens.
        public let address: PeerAddress
        /// Added to the network's time to give this node's clock.
        public let skew: Int64
        /// A new one when the device is wiped (`wipe`).
        public fileprivate(set) var identity: DeviceIdentity
        public fileprivate(set) var core: EngineCore?
        /// Bumped at every launch: deliveries meant for an earlier life are dropped.
        fileprivate var incarnation = 0
        public fileprivate(set) var acceptedKeys: [PreSharedKey] = []
        /// Dials this node has made (in all its lives): a test bounds how often it retries.
        public fileprivate(set) var dials = 0
        /// The next deadline, on this node's clock.
        fileprivate var deadline: UInt64?
        /// Answers to parked requests (`join`, `connect`, `sync --wait`).
        public var replies: [EngineCore.RequestToken: EngineCore.Reply] = [:]
        /// Events the core emitted while `watching`.
        public var events: [ControlEvent] = []
        public var watching = false
        /// Set (by a replica's crash hook) to crash the node once the current input returns.
        public var crashRequested = false
        /// What the node says in its handshake payload: this release's `HandshakeInfo`; a test
        /// sets `[]` to play a device of release 0.1, or anything else to play a newer one.
        public var handshakePayload = EngineCore.handshakePayload {
            didSet { core?.advertised = advertised }
        }

        /// What the node's core agrees from: what it says.
        var advertised: HandshakeInfo { (try? HandshakeInfo.decode(handshakePayload)) ?? .release01 }

        init(index: Int, name: String, directory: String, skew: Int64, privateKey: [UInt8]) {
            self.index = index
            self.name = name
            self.directory = directory
            address = PeerAddress(host: "10.0.0.\(index + 1)", port: 7479)
            self.skew = skew
            identity = DeviceIdentity(privateKey: privateKey)!
        }

        public var isUp: Bool { core != nil }
        public var serviceName: String { "notesd on \(name)" }
    }

    /// One connection: the dialling end, and the accepting end once the handshake is done.
    final class Wire {
        struct End: Hashable {
            let node: Int
            let id: PeerNetwork.ConnectionID
            let incarnation: Int
        }

        let dialer: End
        var acceptor: End?
        let psk: PreSharedKey
        let address: PeerAddress
        /// Ends that are gone (closed, crashed); nothing more is delivered to them.
        var gone: Set<End> = []
        /// The latest delivery scheduled toward each end: a close comes after the data.
        var lastDelivery: [End: UInt64] = [:]
        /// The latest frame scheduled toward each end in order: like TCP, a connection keeps
        /// its frames in order, and only a slow frame (a fault) is overtaken.
        var lastInOrder: [End: UInt64] = [:]

        init(dialer: End, psk: PreSharedKey, address: PeerAddress) {
            self.dialer = dialer
            self.psk = psk
            self.address = address
        }

        func other(_ end: End) -> End? { end == dialer ? acceptor : dialer }
    }

    enum Delivery {
        /// A dial reaches the network: connect, then handshake.
        case connect(Wire)
        case established(Wire.End, Wire, direction: PeerNetwork.Direction)
        case frame(Wire.End, Wire, [UInt8])
        case closed(Wire.End, Wire, reason: String?)
        case dialFailed(Wire.End, Wire, reason: String)
    }

    struct Scheduled {
        let at: UInt64
        let order: UInt64
        let delivery: Delivery
    }

    public var random: SimRandom
    public var faults = Faults.none
    /// Whether nodes learn of each other as mDNS would tell them (else only by address).
    public let discovery: Bool
    /// The network's clock (ms); each node's is this plus its skew.
    public private(set) var now: UInt64 = 1_700_000_000_000
    public private(set) var nodes: [Node] = []
    /// Pairs of nodes that cannot reach each other ("a-b", smaller first).
    public var partitions: Set<String> = []
    public let directory: String
    /// Opens a node's replica (the simulation adds its crash hook); nil: a plain one.
    let makeReplica: ((Node, VirtualLAN) throws -> Replica)?
    private var scheduled: [Scheduled] = []
    private var order: UInt64 = 0
    private var wires: [PeerNetwork.ConnectionID: Wire] = [:]
    private var nextConnection: UInt64 = 1
    private var nextPort: UInt16 = 40_000
    private var nextToken: UInt64 = 1
    /// What happened, for a failing run's report.
    public var trace: [String] = []

    /// - Parameters:
    ///   - names: each node's device name, given every node's device id (default node0, node1…).
    public init(
        seed: UInt64, nodes count: Int, maxSkew: Int64 = 0, names: (([DeviceID]) -> [String])? = nil, discovery: Bool = true,
        makeReplica: ((Node, VirtualLAN) throws -> Replica)? = nil
    ) throws {
        self.discovery = discovery
        random = SimRandom(seed: seed)
        self.makeReplica = makeReplica
        let base = FileManager.default.fileExists(atPath: "/dev/shm") ? "/dev/shm" : NSTemporaryDirectory()
        directory = base + "/notesd-lan-\(seed)-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let keys = (0..<count).map { _ in random.bytes(32) }
        let ids = keys.map { DeviceIdentity(privateKey: $0)!.deviceID }
        let given = names?(ids) ?? ids.indices.map { "node\($0)" }
        for index in 0..<count {
            let path = directory + "/node\(index)"
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
            let skew = maxSkew == 0 ? 0 : random.range(-maxSkew, maxSkew)
            nodes.append(Node(index: index, name: given[index], directory: path, skew: skew, privateKey: keys[index]))
        }
        for node in nodes { try launch(node) }
    }

    deinit {
        for node in nodes { node.core = nil }
        try? FileManager.default.removeItem(atPath: directory)
    }

    public func localTime(_ node: Node) -> UInt64 { UInt64(Int64(now) + node.skew) }

    public static func pair(_ a: Int, _ b: Int) -> String { "\(min(a, b))-\(max(a, b))" }

    func reachable(_ a: Int, _ b: Int) -> Bool { !partitions.contains(Self.pair(a, b)) }

    // MARK: - Life cycle

    /// Starts (or restarts) a node's core on its files, listening, and tells every node
    /// what discovery would: who is there.
    public func launch(_ node: Node) throws {
        precondition(node.core == nil, "\(node.name) is already running")
        node.incarnation += 1
        node.crashRequested = false
        let replica = try makeReplica?(node, self)
            ?? Replica(path: node.directory + "/notes.db", randomBytes: { [unowned self] in self.random.bytes($0) })
        let household = try HouseholdKey(directory: node.directory)
        let environment = EngineCore.Environment(
            randomBytes: { [unowned self] in self.random.bytes($0) },
            newConnectionID: { [unowned self] in self.newConnectionID() },
            interfaceAddresses: { [] })
        let settings = EngineCore.Settings(dataDirectory: node.directory, deviceName: node.name, controlSocket: node.directory + "/control.sock")
        let core = try EngineCore(
            settings: settings, replica: replica, identity: node.identity, household: household, environment: environment,
            log: Self.log(for: node.name), now: localTime(node))
        core.advertised = node.advertised
        node.core = core
        trace.append("\(node.name) starts")
        input(node) { $0.listening(on: [node.address], now: $1) }
        // What the daemon's static source reports at start: addresses `connect` and `join` kept.
        for address in core.staticPeerAddresses(configured: []) {
            input(node) { $0.staticPeerFound(address, now: $1) }
        }
        for other in nodes where other !== node && other.isUp {
            appear(other, to: node)
            appear(node, to: other)
        }
    }

    /// Silent, unless `NOTES_LAN_LOG=1` asks for every core's log on standard output (to see
    /// what a failing test or seed did).
    static func log(for name: String) -> EngineCore.Logger {
        guard ProcessInfo.processInfo.environment["NOTES_LAN_LOG"] == "1" else { return .silent }
        let line: @Sendable (String, String) -> Void = { level, message in print("\(name) \(level): \(message)") }
        return EngineCore.Logger(debug: { line("debug", $0) }, info: { line("info", $0) }, warning: { line("warning", $0) }, error: { line("error", $0) })
    }

    /// The node shuts down cleanly: its sessions say goodbye, then it is gone.
    public func stop(_ node: Node) {
        guard node.isUp else { return }
        input(node) { $0.shutdown(now: $1) }
        trace.append("\(node.name) stops")
        node.core = nil
        node.deadline = nil
        for other in nodes where other !== node && other.isUp { disappear(node, from: other) }
    }

    /// Discovery on `observer` resolves `node`'s service.
    public func appear(_ node: Node, to observer: Node) {
        guard discovery else { return }
        let address = node.address.description
        let short = node.identity.deviceID.short
        let service = node.serviceName
        input(observer) { $0.serviceAppeared(address: address, shortID: short, service: service, now: $1) }
    }

    /// Discovery on `observer` loses `node`'s service.
    public func disappear(_ node: Node, from observer: Node) {
        guard discovery else { return }
        let service = node.serviceName
        input(observer) { $0.serviceGone(service, now: $1) }
    }

    /// The node's process dies: its core and connections end at once, its peers see resets.
    public func crash(_ node: Node) {
        guard node.isUp else { return }
        trace.append("\(node.name) crashes")
        node.core = nil
        node.deadline = nil
        node.crashRequested = false
        for wire in allWires {
            for end in [wire.dialer, wire.acceptor].compactMap({ $0 }) where end.node == node.index && end.incarnation == node.incarnation {
                wire.gone.insert(end)
                if let other = wire.other(end), !wire.gone.contains(other), reachable(node.index, other.node) {
                    schedule(.closed(other, wire, reason: "connection reset by peer"), toward: other, on: wire)
                }
            }
        }
        for other in nodes where other !== node && other.isUp { disappear(node, from: other) }
    }

    /// The device's data is wiped, as after a reinstall or a lost disk: its process dies, its
    /// data directory is emptied, and it comes back with a new device identity (drawn from
    /// the network's random source, so a seed replays) and, at its next launch, a new replica
    /// of one device in a household of its own. Its name and address stay.
    public func wipe(_ node: Node) throws {
        crash(node)
        let files = try FileManager.default.contentsOfDirectory(atPath: node.directory).sorted()
        for file in files { try FileManager.default.removeItem(atPath: node.directory + "/" + file) }
        node.identity = DeviceIdentity(privateKey: random.bytes(32))!
        node.acceptedKeys = []
        node.replies = [:]
        node.events = []
        trace.append("\(node.name) is wiped: new device \(node.identity.deviceID.short)")
    }

    /// Every wire once, in a fixed order (dictionary order changes from one process to the
    /// next, and the order of what is scheduled must not, or a seed would not replay).
    private var allWires: [Wire] {
        wires.filter { $0.key == $0.value.dialer.id }.sorted { $0.key < $1.key }.map(\.value)
    }

    /// Forgets wires no end can use any more.
    private func collect(_ wire: Wire) {
        let ends = [wire.dialer, wire.acceptor].compactMap { $0 }
        guard ends.allSatisfy({ wire.gone.contains($0) }) else { return }
        for end in ends { wires[end.id] = nil }
    }

    func newConnectionID() -> PeerNetwork.ConnectionID {
        defer { nextConnection += 1 }
        return PeerNetwork.ConnectionID(raw: nextConnection)
    }

    // MARK: - Inputs and actions

    /// Gives `node`'s core one input at its local time, performs what it asks, and crashes
    /// the node if a write inside asked for it.
    public func input(_ node: Node, _ body: (EngineCore, UInt64) -> Void) {
        guard let core = node.core else { return }
        core.watching = node.watching
        body(core, localTime(node))
        settle(node)
    }

    /// Runs a control request on `node`'s core.
    public func request<T>(_ node: Node, _ body: (EngineCore) throws -> T) throws -> T {
        guard let core = node.core else { throw RPCError.internalError("\(node.name) is not running") }
        core.watching = node.watching
        defer { settle(node) }
        return try core.request(at: localTime(node), body)
    }

    /// Starts a request that answers later (`join`, `connect`, `sync --wait`); its answer
    /// lands in `node.replies[token]`.
    public func park(_ node: Node, _ body: (EngineCore, EngineCore.RequestToken) -> Void) -> EngineCore.RequestToken {
        let token = EngineCore.RequestToken(nextToken)
        nextToken += 1
        if let core = node.core {
            core.watching = node.watching
            core.request(at: localTime(node)) { body($0, token) }
            settle(node)
        }
        return token
    }

    private func settle(_ node: Node) {
        guard let core = node.core else { return }
        if node.crashRequested {
            crash(node)
            return
        }
        let output = core.takeOutput()
        node.deadline = output.nextDeadline
        for action in output.actions { perform(action, from: node) }
    }

    private func perform(_ action: EngineCore.Action, from node: Node) {
        let end = { (id: PeerNetwork.ConnectionID) in Wire.End(node: node.index, id: id, incarnation: node.incarnation) }
        switch action {
        case .dial(let id, let address, let psk):
            node.dials += 1
            let wire = Wire(dialer: end(id), psk: psk, address: address)
            wires[id] = wire
            schedule(.connect(wire), at: now + 1 + UInt64(random.below(5)))
        case .send(let frames, let id):
            guard let wire = wires[id], !wire.gone.contains(end(id)), let other = wire.other(end(id)), !wire.gone.contains(other) else { return }
            guard reachable(node.index, other.node) else { return }
            for frame in frames {
                if random.chance(faults.drop) { continue }
                let bytes = FrameCodec.encode(frame)
                for _ in 0..<(random.chance(faults.duplicate) ? 2 : 1) {
                    let latency = UInt64(1 + random.below(40))
                    let at: UInt64
                    if random.chance(faults.slow) {
                        at = now + latency + UInt64(random.below(3_000))
                    } else {
                        at = max(now + latency, wire.lastInOrder[other] ?? 0)
                        wire.lastInOrder[other] = at
                    }
                    schedule(.frame(other, wire, bytes), at: at)
                    wire.lastDelivery[other] = max(wire.lastDelivery[other] ?? 0, at)
                }
            }
        case .close(let id, let reason):
            guard let wire = wires[id], !wire.gone.contains(end(id)) else { return }
            // The closer hears of it once what it sent is written; the peer after the data.
            wire.gone.insert(end(id))
            schedule(.closed(end(id), wire, reason: reason), toward: end(id), on: wire)
            if let other = wire.other(end(id)), !wire.gone.contains(other), reachable(node.index, other.node) {
                schedule(.closed(other, wire, reason: nil), toward: other, on: wire)
            }
        case .reply(let token, let reply):
            node.replies[token] = reply
        case .emit(let event):
            node.events.append(event)
        case .acceptKeys(let keys):
            node.acceptedKeys = keys
        }
    }

    private func schedule(_ delivery: Delivery, at time: UInt64) {
        order += 1
        scheduled.append(Scheduled(at: time, order: order, delivery: delivery))
    }

    /// Schedules a close toward `end` after everything already on its way to it.
    private func schedule(_ delivery: Delivery, toward end: Wire.End, on wire: Wire) {
        let at = max(now + 1 + UInt64(random.below(20)), (wire.lastDelivery[end] ?? 0) + 1)
        wire.lastDelivery[end] = at
        schedule(delivery, at: at)
    }

    private func isCurrent(_ end: Wire.End) -> Bool {
        nodes[end.node].isUp && nodes[end.node].incarnation == end.incarnation
    }

    private func deliver(_ delivery: Delivery) {
        switch delivery {
        case .connect(let wire):
            let dialer = wire.dialer
            guard isCurrent(dialer), !wire.gone.contains(dialer) else { return }
            guard let target = nodes.first(where: { $0.address == wire.address }), target.isUp, reachable(dialer.node, target.index) else {
                wire.gone.insert(dialer)
                schedule(.dialFailed(dialer, wire, reason: "cannot connect to \(wire.address): Connection refused"), at: now + 1)
                return
            }
            guard target.acceptedKeys.contains(wire.psk) else {
                // The responder cannot read message 1 with any key it has, and drops it.
                wire.gone.insert(dialer)
                schedule(.closed(dialer, wire, reason: "the peer closed the connection during the handshake"), at: now + 2)
                return
            }
            let acceptor = Wire.End(node: target.index, id: newConnectionID(), incarnation: target.incarnation)
            wire.acceptor = acceptor
            wires[acceptor.id] = wire
            schedule(.established(acceptor, wire, direction: .inbound), at: now + 1)
            schedule(.established(dialer, wire, direction: .outbound), at: now + 2)
        case .established(let end, let wire, let direction):
            guard isCurrent(end), !wire.gone.contains(end), let other = wire.other(end) else { return }
            let node = nodes[end.node], peer = nodes[other.node]
            let matched = direction == .inbound ? node.acceptedKeys.firstIndex(of: wire.psk) : nil
            if direction == .inbound && matched == nil {
                // The keys changed while the handshake ran: it fails.
                wire.gone.insert(end)
                schedule(.closed(other, wire, reason: "the peer closed the connection during the handshake"), toward: other, on: wire)
                return
            }
            let remote = direction == .outbound ? wire.address.description : "\(peer.address.host):\(ephemeralPort())"
            let key = peer.identity.publicKey
            let payload = peer.handshakePayload
            input(node) {
                $0.connectionEstablished(end.id, publicKey: key, matchedKeyIndex: matched, direction: direction, remote: remote, handshakePayload: payload, now: $1)
            }
        case .frame(let end, let wire, let bytes):
            guard isCurrent(end), !wire.gone.contains(end) else { return }
            guard let frame = try? FrameCodec.decode(bytes) else {
                trace.append("a frame did not decode")
                return
            }
            // Half the frames (by their length's parity, so a seed replays) carry the checks the
            // daemon's network thread makes as it decodes them; `apply` makes the others' itself.
            let received = bytes.count % 2 == 0 ? frame.checked() : frame
            input(nodes[end.node]) { $0.framesReceived([received], on: end.id, now: $1) }
        case .closed(let end, let wire, let reason):
            wire.gone.insert(end)
            collect(wire)
            guard isCurrent(end) else { return }
            input(nodes[end.node]) { $0.connectionClosed(end.id, reason: reason, now: $1) }
        case .dialFailed(let end, let wire, let reason):
            collect(wire)
            guard isCurrent(end) else { return }
            input(nodes[end.node]) { $0.dialFailed(end.id, reason: reason, now: $1) }
        }
    }

    private func ephemeralPort() -> UInt16 {
        defer { nextPort = nextPort == 60_000 ? 40_000 : nextPort + 1 }
        return nextPort
    }

    // MARK: - Time

    /// The earliest thing due: a delivery, or a node's deadline (on the network's clock).
    private var nextEvent: UInt64? {
        let deliveries = scheduled.map(\.at).min()
        let deadlines = nodes.compactMap { node in node.deadline.map { UInt64(max(0, Int64($0) - node.skew)) } }.min()
        return [deliveries, deadlines].compactMap { $0 }.min()
    }

    /// Whether anything is in flight or armed.
    public var isQuiet: Bool { scheduled.isEmpty }

    /// Something kept happening without virtual time moving: a loop in a core or here.
    public struct Stuck: Error, CustomStringConvertible {
        public let time: UInt64
        public var description: String { "over \(VirtualLAN.eventsPerInstant) events at one instant (\(time)): something loops" }
    }

    static let eventsPerInstant = 200_000

    /// Runs everything due up to `time` in order, then sets the clock to `time`.
    public func advance(to time: UInt64) throws {
        _ = try run(for: time > now ? time - now : 0) { false }
    }

    public func advance(by milliseconds: UInt64) throws { try advance(to: now + milliseconds) }

    private var instant: (time: UInt64, events: Int) = (0, 0)

    /// Moves the clock to `time` (never back) and counts events at one instant.
    private func tick(to time: UInt64) throws {
        now = max(now, time)
        if instant.time == now {
            instant.events += 1
            if instant.events > Self.eventsPerInstant { throw Stuck(time: now) }
        } else {
            instant = (now, 1)
        }
    }

    /// Handles the one earliest due thing.
    private func step() {
        if let index = scheduled.indices.filter({ scheduled[$0].at <= now }).min(by: { (scheduled[$0].at, scheduled[$0].order) < (scheduled[$1].at, scheduled[$1].order) }) {
            let item = scheduled.remove(at: index)
            deliver(item.delivery)
            return
        }
        for node in nodes {
            guard let deadline = node.deadline, deadline <= localTime(node) else { continue }
            node.deadline = nil
            input(node) { $0.timerFired(now: $1) }
            return
        }
    }

    /// Runs events until `condition` holds, for at most `limit` ms of virtual time; false if
    /// it never did. The clock then stands where the condition first held.
    @discardableResult
    public func run(for limit: UInt64 = 600_000, until condition: () throws -> Bool) throws -> Bool {
        let end = now + limit
        while true {
            if try condition() { return true }
            guard let next = nextEvent, next <= end else {
                now = max(now, end)
                return try condition()
            }
            try tick(to: next)
            step()
        }
    }

    /// Runs until `node` has the answer to `token`; nil if none came within `limit`.
    public func reply(_ token: EngineCore.RequestToken, on node: Node, within limit: UInt64 = 600_000) throws -> EngineCore.Reply? {
        try run(for: limit) { node.replies[token] != nil }
        return node.replies.removeValue(forKey: token)
    }
}
