import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// The TCP shell between devices (docs/protocol.md, docs/security.md): listening and dialling sockets, each wrapped
/// in a `SecureChannel`, carrying sync `Frame`s. One thread runs a `poll` loop over every
/// socket; it encrypts, decrypts and decodes, and hands whole frames and connection events
/// to the owner through `events`. It never decides who may talk: the owner checks the roster
/// on `.established` and closes what it does not want.
public final class PeerNetwork: Sendable {
    public struct ConnectionID: Hashable, Sendable, Comparable, CustomStringConvertible {
        public let raw: UInt64
        public init(raw: UInt64) { self.raw = raw }
        public var description: String { "#\(raw)" }
        public static func < (lhs: ConnectionID, rhs: ConnectionID) -> Bool { lhs.raw < rhs.raw }
    }

    public enum Direction: Sendable, Equatable {
        case inbound, outbound
    }

    public enum Event: Sendable {
        /// The handshake finished; the channel proved the peer's key.
        case established(ConnectionID, ChannelPeer, Direction, remote: String)
        /// Frames arrived, in order. Call `processed(_:)` once the owner has handled them: a
        /// connection with too much handed over and not yet processed is not read from.
        case frames(ConnectionID, [Frame])
        /// A dial made no connection: the name did not resolve, or no address answered.
        case dialFailed(ConnectionID, reason: String)
        /// The connection is gone (`reason` nil for a clean close by either side).
        case closed(ConnectionID, reason: String?)
        /// `host` failed message 1 `failures` times within `window`: its connections are closed
        /// at accept, unreported, whenever the window holds that many of its failures. Said
        /// once, until every failure of that address has aged out.
        case refusing(host: String, failures: Int, window: Duration)
    }

    public struct Configuration: Sendable {
        /// A connection that has not finished its handshake after this long is dropped.
        public var handshakeTimeout: Duration = .seconds(10)
        public var maxConnections = 256
        /// Inbound connections still in their handshake; beyond this the oldest is dropped, so
        /// silent strangers on the LAN cannot keep household devices out.
        public var maxPendingHandshakes = 32
        /// A closing connection whose peer never finishes the close is dropped after this long.
        public var closeTimeout: Duration = .seconds(10)
        /// After `accept` failed for want of descriptors or memory, the listeners rest this long
        /// instead of waking the loop again at once.
        public var acceptPause: Duration = .seconds(1)
        /// Frame bytes handed to the owner and not yet `processed`, per connection, beyond which
        /// the connection is not read from (TCP then holds the peer back).
        public var maxUnprocessedBytes = 2 * (FrameCodec.Limits.frameBytes + 64)
        /// Bytes queued for a peer that does not read, beyond which it is dropped.
        public var maxUnsentBytes = 64 << 20
        public var maxFrameLength = FrameCodec.Limits.frameBytes + 64
        /// Failed message-1 attempts (the wrong key, or garbage) allowed per source address
        /// within `failedHandshakeWindow`; beyond that, connections from that address are closed
        /// at accept, before any key is made, until the window has room again. Other addresses
        /// are never affected (docs/security.md "Cheap refusals").
        public var failedHandshakeLimit = 20
        public var failedHandshakeWindow: Duration = .seconds(60)
        /// Addresses whose failures are remembered; beyond this the stalest is forgotten.
        public var failedHandshakeAddresses = 4_096
        /// What this device says in handshake message 2 of every connection it accepts (its
        /// `HandshakeInfo`; a dial gives its own for message 3).
        public var handshakePayload: [UInt8] = []
        /// Turns a dial's address into socket addresses, on the dial's own queue (blocking).
        public var resolve: @Sendable (PeerAddress) throws -> [ResolvedAddress] = { address in try address.resolve() }

        public init() {}
    }

    enum Command: Sendable {
        case listen(ResolvedAddress, reply: @Sendable (Result<PeerAddress, NetworkError>) -> Void)
        case dial(ConnectionID, [ResolvedAddress], PreSharedKey, label: String, payload: [UInt8])
        /// A dial's name did not resolve: reported from the loop, like every event.
        case unresolved(ConnectionID, reason: String)
        case send(ConnectionID, [Frame])
        case close(ConnectionID, reason: String?)
        case stop
    }

    private let identity: DeviceIdentity
    private let configuration: Configuration
    private let responderKeys: @Sendable () -> [PreSharedKey]
    private let events: @Sendable (Event) -> Void
    private let inbox = Mutex<[Command]>([])
    /// Per connection, the sizes of the frame events handed over and not yet `processed`.
    private let unprocessed = Mutex<[ConnectionID: (events: [Int], bytes: Int)]>([:])
    private let nextID = Atomic<UInt64>(1)
    /// Dials whose names are being resolved; a `close` of one cancels it (see `Loop.cancelled`).
    private let resolving = Mutex<Set<ConnectionID>>([])
    /// Numbers connections: `nextID`, or the owner's sequence when it picks dial ids itself.
    private let makeConnectionID: (@Sendable () -> ConnectionID)?
    /// A self-pipe: other threads write a byte to wake the poll loop.
    private let wakeWriter: OwnedDescriptor
    private let wakeReader: OwnedDescriptor

    /// - Parameters:
    ///   - responderKeys: the PSKs an inbound connection may prove (household key first, then
    ///     open invites), read at each accept.
    ///   - newConnectionID: numbers inbound connections, for an owner that numbers its dials
    ///     itself (`dial(_:psk:payload:id:)`) from the same sequence.
    ///   - events: called on the network thread; forward to your own queue at once.
    public init(
        identity: DeviceIdentity, configuration: Configuration = Configuration(),
        responderKeys: @escaping @Sendable () -> [PreSharedKey], newConnectionID: (@Sendable () -> ConnectionID)? = nil,
        events: @escaping @Sendable (Event) -> Void
    ) throws(NetworkError) {
        var pipeEnds: [Int32] = [0, 0]
        guard pipe(&pipeEnds) == 0 else { throw NetworkError.system("pipe") }
        for end in pipeEnds { Loop.makeNonBlocking(end) }
        self.identity = identity
        self.configuration = configuration
        self.responderKeys = responderKeys
        makeConnectionID = newConnectionID
        self.events = events
        wakeReader = OwnedDescriptor(pipeEnds[0])
        wakeWriter = OwnedDescriptor(pipeEnds[1])
        let loop = Loop(network: self)
        let thread = Thread { loop.run() }
        thread.name = "notesd-network"
        thread.start()
    }

    private func submit(_ command: Command) {
        inbox.withLock { $0.append(command) }
        var byte: UInt8 = 1
        _ = write(wakeWriter.raw, &byte, 1)
    }

    func takeCommands() -> [Command] {
        inbox.withLock { commands in
            defer { commands.removeAll() }
            return commands
        }
    }

    /// Binds and listens on `address`; returns the bound address (port 0 → the port chosen).
    public func listen(on address: PeerAddress) throws(NetworkError) -> PeerAddress {
        let resolved = try address.resolve()
        guard let first = resolved.first else { throw NetworkError("\(address) resolves to nothing") }
        let result = Mutex<Result<PeerAddress, NetworkError>?>(nil)
        let done = DispatchSemaphore(value: 0)
        submit(.listen(first, reply: { outcome in
            result.withLock { $0 = outcome }
            done.signal()
        }))
        done.wait()
        return try result.withLock { $0! }.get()
    }

    /// Dials `address` proving `psk`; `payload` travels in handshake message 3. Returns at
    /// once; the outcome arrives as `.established` or `.closed`.
    @discardableResult
    public func dial(_ address: PeerAddress, psk: PreSharedKey, payload: [UInt8] = []) -> ConnectionID {
        let id = newConnectionID()
        dial(address, psk: psk, payload: payload, id: id)
        return id
    }

    /// `dial` with an id the owner picked (from the sequence given as `newConnectionID`).
    public func dial(_ address: PeerAddress, psk: PreSharedKey, payload: [UInt8] = [], id: ConnectionID) {
        // A serial queue per dial, so a slow name server delays no other dial. Never a global
        // or concurrent queue: on Linux their first use starts a libdispatch timer that wakes
        // the daemon every second for good (docs/benchmarks.md).
        resolving.withLock { _ = $0.insert(id) }
        let resolve = configuration.resolve
        DispatchQueue(label: "notesd.resolver").async { [self] in
            do {
                let resolved = try resolve(address)
                guard !resolved.isEmpty else { throw NetworkError("\(address) resolves to nothing") }
                submit(.dial(id, resolved, psk, label: address.description, payload: payload))
            } catch {
                submit(.unresolved(id, reason: "cannot reach \(address): \(error)"))
            }
        }
    }

    public func send(_ frames: [Frame], on connection: ConnectionID) {
        guard !frames.isEmpty else { return }
        submit(.send(connection, frames))
    }

    /// Closes cleanly after what is queued is written. `reason` is for the log.
    public func close(_ connection: ConnectionID, reason: String? = nil) { submit(.close(connection, reason: reason)) }

    /// Closes every socket and ends the thread.
    public func stop() { submit(.stop) }

    /// The owner has handled the oldest `.frames` event of `connection`; reading from it
    /// resumes once what is left is under `maxUnprocessedBytes`.
    public func processed(_ connection: ConnectionID) {
        let resume = unprocessed.withLock { table -> Bool in
            guard var entry = table[connection], !entry.events.isEmpty else { return false }
            let wasFull = entry.bytes >= configuration.maxUnprocessedBytes
            entry.bytes -= entry.events.removeFirst()
            table[connection] = entry.events.isEmpty ? nil : entry
            return wasFull && entry.bytes < configuration.maxUnprocessedBytes
        }
        if resume {
            var byte: UInt8 = 1
            _ = write(wakeWriter.raw, &byte, 1)
        }
    }

    fileprivate func handedOver(_ bytes: Int, on connection: ConnectionID) {
        unprocessed.withLock { table in
            var entry = table[connection] ?? ([], 0)
            entry.events.append(bytes)
            entry.bytes += bytes
            table[connection] = entry
        }
    }

    func isFull(_ connection: ConnectionID) -> Bool {
        unprocessed.withLock { ($0[connection]?.bytes ?? 0) >= configuration.maxUnprocessedBytes }
    }

    fileprivate func isResolving(_ connection: ConnectionID) -> Bool { resolving.withLock { $0.contains(connection) } }

    fileprivate func resolved(_ connection: ConnectionID) { _ = resolving.withLock { $0.remove(connection) } }

    fileprivate func forget(_ connection: ConnectionID) {
        _ = unprocessed.withLock { $0.removeValue(forKey: connection) }
    }

    fileprivate func newConnectionID() -> ConnectionID {
        makeConnectionID?() ?? ConnectionID(raw: nextID.add(1, ordering: .relaxed).oldValue)
    }
    fileprivate var eventSink: @Sendable (Event) -> Void { events }
    fileprivate var wakeFD: Int32 { wakeReader.raw }
    fileprivate var currentResponderKeys: [PreSharedKey] { responderKeys() }
    fileprivate var deviceIdentity: DeviceIdentity { identity }
    fileprivate var settings: Configuration { configuration }
}

/// The network thread's state. Created by `PeerNetwork.init` and handed to the one thread it
/// starts; nothing else ever holds it, so it needs no locks (hence `@unchecked Sendable`).
private final class Loop: @unchecked Sendable {
    final class Connection {
        let id: PeerNetwork.ConnectionID
        let direction: PeerNetwork.Direction
        /// The socket; nil while a dial's name resolves, and between two addresses it tries.
        var socket: OwnedDescriptor?
        var channel: SecureChannel
        let label: String
        var outbox: [UInt8] = []
        var outboxOffset = 0
        var connecting: Bool
        /// Alternatives still to try while connecting.
        var remainingAddresses: [ResolvedAddress] = []
        var handshakeDeadline: ContinuousClock.Instant?
        /// Set when the close starts (see `closing`).
        var closeDeadline: ContinuousClock.Instant?
        var established = false
        /// The peer's IP address (no port), for inbound connections: what failed handshakes
        /// are counted against.
        var sourceHost: String?
        /// We answered its message 1 (sent message 2): a later failure is not a message-1 one.
        var answeredMessage1 = false
        /// Write what is queued, then close.
        var closing = false
        var closeReason: String?

        init(id: PeerNetwork.ConnectionID, direction: PeerNetwork.Direction, socket: OwnedDescriptor?, channel: SecureChannel, label: String, connecting: Bool) {
            self.id = id
            self.direction = direction
            self.socket = socket
            self.channel = channel
            self.label = label
            self.connecting = connecting
        }

        var hasPendingOutput: Bool { outboxOffset < outbox.count }
    }

    /// Strong: the network object lives until its thread ends on `stop()`.
    let network: PeerNetwork
    var listeners: [OwnedDescriptor] = []
    var connections: [PeerNetwork.ConnectionID: Connection] = [:]
    /// Dials closed while their names resolved, with the close's reason.
    var cancelled: [PeerNetwork.ConnectionID: String?] = [:]
    var running = true
    let clock = ContinuousClock()
    var acceptPausedUntil: ContinuousClock.Instant?
    var failedHandshakes: HandshakeFailures

    init(network: PeerNetwork) {
        self.network = network
        let settings = network.settings
        failedHandshakes = HandshakeFailures(
            limit: settings.failedHandshakeLimit, window: settings.failedHandshakeWindow, addresses: settings.failedHandshakeAddresses)
    }

    func run() {
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        while running {
            var descriptors: [pollfd] = [pollfd(fd: network.wakeFD, events: Int16(POLLIN), revents: 0)]
            if let until = acceptPausedUntil, until <= clock.now { acceptPausedUntil = nil }
            let polledListeners = acceptPausedUntil == nil ? listeners : []
            for listener in polledListeners { descriptors.append(pollfd(fd: listener.raw, events: Int16(POLLIN), revents: 0)) }
            // A connection whose owner is behind is not read from (TCP then holds the peer
            // back), nor polled at all unless it has output: a hang-up would wake us in a loop.
            let ordered = connections.values.sorted { $0.id < $1.id }.filter { connection in
                connection.socket != nil && (!network.isFull(connection.id) || connection.connecting || connection.hasPendingOutput)
            }
            for connection in ordered {
                var wanted = network.isFull(connection.id) ? Int16(0) : Int16(POLLIN)
                if connection.connecting || connection.hasPendingOutput { wanted |= Int16(POLLOUT) }
                descriptors.append(pollfd(fd: connection.socket!.raw, events: wanted, revents: 0))
            }
            let timeout = pollTimeout()
            let ready = poll(&descriptors, nfds_t(descriptors.count), timeout)
            // One policy for both loops (see ControlServerLoop): past EINTR, a failed poll ends
            // the process, which systemd restarts.
            if ready < 0 && errno != EINTR { fatalError("the peer network cannot wait for its sockets: poll failed: \(String(cString: strerror(errno)))") }
            if descriptors[0].revents != 0 {
                var drain = [UInt8](repeating: 0, count: 256)
                while read(network.wakeFD, &drain, drain.count) > 0 {}
            }
            for command in network.takeCommands() { perform(command) }
            for (index, listener) in polledListeners.enumerated() where descriptors[1 + index].revents & Int16(POLLIN) != 0 {
                acceptAll(listener)
            }
            for (offset, connection) in ordered.enumerated() {
                let revents = descriptors[1 + polledListeners.count + offset].revents
                guard revents != 0, connections[connection.id] === connection else { continue }
                service(connection, revents: revents, buffer: &buffer)
            }
            expireDeadlines()
        }
        // Closes every socket (each connection and listener owns its descriptor).
        connections = [:]
        listeners = []
    }

    /// Infinite while no handshake, close or accept pause is pending: an idle daemon does not
    /// wake up.
    func pollTimeout() -> Int32 {
        let deadlines = connections.values.compactMap(\.handshakeDeadline) + connections.values.compactMap(\.closeDeadline)
            + [acceptPausedUntil].compactMap { $0 }
        guard let next = deadlines.min() else { return -1 }
        let remaining = clock.now.duration(to: next)
        let milliseconds = remaining.components.seconds * 1000 + remaining.components.attoseconds / 1_000_000_000_000_000
        return Int32(clamping: max(0, milliseconds + 1))
    }

    func expireDeadlines() {
        let now = clock.now
        for connection in connections.values {
            if !connection.established, let deadline = connection.handshakeDeadline, deadline <= now {
                drop(connection, reason: "no completed handshake within \(network.settings.handshakeTimeout) from \(connection.label)")
            } else if let deadline = connection.closeDeadline, deadline <= now {
                drop(connection, reason: connection.closeReason)
            }
        }
    }

    // MARK: - Commands from other threads

    func perform(_ command: PeerNetwork.Command) {
        switch command {
        case .listen(let address, let reply):
            reply(bindListener(address))
        case .dial(let id, let addresses, let psk, let label, let payload):
            network.resolved(id)
            if let reason = cancelled.removeValue(forKey: id) {
                network.eventSink(.closed(id, reason: reason))
                return
            }
            let channel = SecureChannel(
                role: .initiator(psk: psk), identity: network.deviceIdentity, handshakePayload: payload,
                configuration: .init(maxFrameLength: network.settings.maxFrameLength))
            let connection = Connection(id: id, direction: .outbound, socket: nil, channel: channel, label: label, connecting: true)
            connection.remainingAddresses = addresses
            connection.handshakeDeadline = clock.now.advanced(by: network.settings.handshakeTimeout)
            connections[id] = connection
            connectNext(connection)
        case .send(let id, let frames):
            guard let connection = connections[id], connection.established, !connection.closing else { return }
            for frame in frames {
                do {
                    connection.outbox += try connection.channel.send(FrameCodec.encode(frame))
                } catch {
                    drop(connection, reason: "cannot send: \(error)")
                    return
                }
            }
            flush(connection)
            if connections[id] === connection, connection.outbox.count - connection.outboxOffset > network.settings.maxUnsentBytes {
                drop(connection, reason: "\(connection.label) does not read what is sent to it (over \(network.settings.maxUnsentBytes >> 20) MiB waiting)")
            }
        case .unresolved(let id, let reason):
            network.resolved(id)
            if let closeReason = cancelled.removeValue(forKey: id) {
                network.eventSink(.closed(id, reason: closeReason))
            } else {
                network.eventSink(.dialFailed(id, reason: reason))
            }
        case .close(let id, let reason):
            guard let connection = connections[id] else {
                // Closed while its name resolves: it must not connect once resolved.
                if network.isResolving(id) { cancelled[id] = reason }
                return
            }
            connection.closeReason = reason
            if connection.established {
                connection.outbox += connection.channel.close()
                connection.closing = true
                connection.closeDeadline = clock.now.advanced(by: network.settings.closeTimeout)
                flush(connection)
            } else {
                drop(connection, reason: reason)
            }
        case .stop:
            for connection in Array(connections.values) { drop(connection, reason: nil, notify: false) }
            running = false
        }
    }

    func bindListener(_ address: ResolvedAddress) -> Result<PeerAddress, NetworkError> {
        guard let listener = Self.newSocket(address) else { return .failure(.system("socket")) }
        let descriptor = listener.raw
        var one: Int32 = 1
        setsockopt(descriptor, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        if address.family == AF_INET6 {
            var zero: Int32 = 0  // accept IPv4 too on a wildcard IPv6 listener
            setsockopt(descriptor, Int32(IPPROTO_IPV6), IPV6_V6ONLY, &zero, socklen_t(MemoryLayout<Int32>.size))
        }
        // errno is read while `listener` is still open (its close may change errno).
        guard address.withSockaddr({ Glibc.bind(descriptor, $0, $1) }) == 0 else { return .failure(.system("bind \(address)", errno)) }
        guard Glibc.listen(descriptor, 64) == 0 else { return .failure(.system("listen \(address)", errno)) }
        listeners.append(listener)
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let local = withUnsafeMutablePointer(to: &storage) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { raw in
                getsockname(descriptor, raw, &length) == 0 ? ResolvedAddress.peerAddress(raw) : nil
            }
        }
        guard let local else { return .failure(.system("getsockname")) }
        return .success(local)
    }

    static func remoteAddress(_ descriptor: Int32) -> String {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        return withUnsafeMutablePointer(to: &storage) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { address in
                getpeername(descriptor, address, &length) == 0 ? ResolvedAddress.peerAddress(address)?.description ?? "?" : "?"
            }
        }
    }

    // MARK: - Connecting and accepting

    func connectNext(_ connection: Connection) {
        while let address = connection.remainingAddresses.first {
            connection.remainingAddresses.removeFirst()
            var failure = errno
            if let socket = Self.newSocket(address) {
                setNoDelay(socket.raw)
                let result = address.withSockaddr { Glibc.connect(socket.raw, $0, $1) }
                // Read while `socket` is still open: its close may change errno.
                failure = errno
                if result == 0 || failure == EINPROGRESS {
                    connection.socket = socket
                    connection.connecting = true
                    return
                }
            }
            errno = failure
        }
        drop(connection, reason: "cannot connect to \(connection.label): \(String(cString: strerror(errno)))", dialFailed: true)
    }

    func acceptAll(_ listener: OwnedDescriptor) {
        while true {
            guard let socket = OwnedDescriptor.adopting(accept(listener.raw, nil, nil)) else {
                if [EMFILE, ENFILE, ENOBUFS, ENOMEM].contains(errno) {
                    acceptPausedUntil = clock.now.advanced(by: network.settings.acceptPause)
                }
                return
            }
            Self.makeNonBlocking(socket.raw)
            // An address that keeps failing message 1 is closed here, before a key is made:
            // refusing it costs an accept and a close.
            let host = Self.remoteHost(socket.raw)
            if let host, isRefused(host) { continue }
            // Full: make room by dropping the oldest inbound handshake (a silent stranger holds
            // its slot for the whole timeout; a household device finishes in milliseconds).
            let pending = connections.values.filter { $0.direction == .inbound && !$0.established }.sorted { $0.id < $1.id }
            if pending.count >= network.settings.maxPendingHandshakes || connections.count >= network.settings.maxConnections,
               let oldest = pending.first {
                drop(oldest, reason: "too many unfinished handshakes; dropped the oldest, from \(oldest.label)")
            }
            guard connections.count < network.settings.maxConnections else { continue }
            setNoDelay(socket.raw)
            let channel = SecureChannel(
                role: .responder(candidatePSKs: network.currentResponderKeys), identity: network.deviceIdentity,
                handshakePayload: network.settings.handshakePayload, configuration: .init(maxFrameLength: network.settings.maxFrameLength))
            let id = network.newConnectionID()
            let connection = Connection(
                id: id, direction: .inbound, socket: socket, channel: channel, label: Self.remoteAddress(socket.raw), connecting: false)
            connection.handshakeDeadline = clock.now.advanced(by: network.settings.handshakeTimeout)
            connection.sourceHost = host
            connections[id] = connection
        }
    }

    func isRefused(_ host: String) -> Bool { failedHandshakes.isRefused(host, now: clock.now) }

    /// An inbound connection from `host` failed at message 1.
    func recordFailedHandshake(from host: String) {
        guard failedHandshakes.record(host, now: clock.now) else { return }
        network.eventSink(.refusing(host: host, failures: failedHandshakes.limit, window: failedHandshakes.window))
    }

    /// The peer's IP address without the port, or nil when the socket has none.
    static func remoteHost(_ descriptor: Int32) -> String? {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        return withUnsafeMutablePointer(to: &storage) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { address in
                getpeername(descriptor, address, &length) == 0 ? ResolvedAddress.peerAddress(address)?.host : nil
            }
        }
    }

    /// A non-blocking, close-on-exec TCP socket for `address`'s family; nil when the system has none to give.
    static func newSocket(_ address: ResolvedAddress) -> OwnedDescriptor? {
        OwnedDescriptor.adopting(socket(address.family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0))
    }

    static func makeNonBlocking(_ descriptor: Int32) {
        _ = fcntl(descriptor, F_SETFL, fcntl(descriptor, F_GETFL) | O_NONBLOCK)
        _ = fcntl(descriptor, F_SETFD, FD_CLOEXEC)
    }

    func setNoDelay(_ descriptor: Int32) {
        var one: Int32 = 1
        setsockopt(descriptor, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
    }

    // MARK: - Reading and writing

    func service(_ connection: Connection, revents: Int16, buffer: inout [UInt8]) {
        if connection.connecting {
            guard revents & Int16(POLLOUT | POLLERR | POLLHUP) != 0 else { return }
            var error: Int32 = 0
            var length = socklen_t(MemoryLayout<Int32>.size)
            getsockopt(connection.socket!.raw, SOL_SOCKET, SO_ERROR, &error, &length)
            guard error == 0 else {
                connection.socket = nil
                errno = error
                connectNext(connection)
                return
            }
            connection.connecting = false
            connection.outbox += connection.channel.start()
        }
        if revents & Int16(POLLIN | POLLHUP | POLLERR) != 0 {
            readAvailable(connection, buffer: &buffer)
        }
        if connections[connection.id] === connection { flush(connection) }
    }

    func readAvailable(_ connection: Connection, buffer: inout [UInt8]) {
        // Bounded per wake-up so one busy peer cannot starve the others.
        for _ in 0..<16 where !network.isFull(connection.id) {
            let count = buffer.withUnsafeMutableBytes { recv(connection.socket!.raw, $0.baseAddress, $0.count, 0) }
            if count > 0 {
                let output = connection.channel.receive(buffer[0..<count])
                guard deliver(output, from: connection) else { return }
                continue
            }
            if count == 0 {
                let output = connection.channel.receiveEndOfStream()
                _ = deliver(output, from: connection)
                if connections[connection.id] === connection {
                    drop(connection, reason: connection.closing ? connection.closeReason : output.error.map { "\($0)" })
                }
                return
            }
            if errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR { return }
            drop(connection, reason: "connection to \(connection.label) failed: \(String(cString: strerror(errno)))")
            return
        }
    }

    /// Hands the channel's output to the owner; false when the connection was dropped.
    func deliver(_ output: ChannelOutput, from connection: Connection) -> Bool {
        if connection.direction == .inbound, !output.bytesToSend.isEmpty { connection.answeredMessage1 = true }
        connection.outbox += output.bytesToSend
        for event in output.events {
            switch event {
            case .established(let peer):
                connection.established = true
                connection.handshakeDeadline = nil
                network.eventSink(.established(connection.id, peer, connection.direction, remote: connection.label))
            case .closedCleanly:
                break
            }
        }
        if !output.frames.isEmpty {
            var frames: [Frame] = []
            frames.reserveCapacity(output.frames.count)
            for plaintext in output.frames {
                do {
                    frames.append(try FrameCodec.decode(plaintext).checked())
                } catch {
                    if !frames.isEmpty { handOver(frames, from: connection, bytes: output.frames.reduce(0) { $0 + $1.count }) }
                    drop(connection, reason: "malformed frame from \(connection.label): \(error)")
                    return false
                }
            }
            handOver(frames, from: connection, bytes: output.frames.reduce(0) { $0 + $1.count })
        }
        if let error = output.error {
            if connection.direction == .inbound, !connection.answeredMessage1, let host = connection.sourceHost, error.failedAtMessage1 {
                recordFailedHandshake(from: host)
            }
            flush(connection)
            drop(connection, reason: "\(error)")
            return false
        }
        return true
    }

    func handOver(_ frames: [Frame], from connection: Connection, bytes: Int) {
        network.handedOver(bytes, on: connection.id)
        network.eventSink(.frames(connection.id, frames))
    }

    func flush(_ connection: Connection) {
        guard !connection.connecting, let socket = connection.socket else { return }
        while connection.hasPendingOutput {
            let written = connection.outbox[connection.outboxOffset...].withUnsafeBytes {
                Glibc.send(socket.raw, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL))
            }
            if written > 0 {
                connection.outboxOffset += written
                continue
            }
            if written < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) { break }
            drop(connection, reason: "connection to \(connection.label) failed while writing: \(String(cString: strerror(errno)))")
            return
        }
        if !connection.hasPendingOutput {
            connection.outbox.emptyForIdle()
            connection.outboxOffset = 0
            if connection.closing { shutdown(socket.raw, Int32(SHUT_WR)) }
        }
    }

    /// Forgets `connection` and closes its socket; `dialFailed`: it never connected.
    func drop(_ connection: Connection, reason: String?, notify: Bool = true, dialFailed: Bool = false) {
        guard connections.removeValue(forKey: connection.id) != nil else { return }
        network.forget(connection.id)
        connection.socket = nil
        guard notify else { return }
        if dialFailed {
            network.eventSink(.dialFailed(connection.id, reason: reason ?? "cannot connect to \(connection.label)"))
        } else {
            network.eventSink(.closed(connection.id, reason: reason))
        }
    }
}

extension ChannelError {
    /// Message 1 did not authenticate or parse: the wrong key, another household, or garbage
    /// (an oversized first length prefix, e.g. an HTTP request). Only meaningful before the
    /// responder answered message 1.
    var failedAtMessage1: Bool {
        switch reason {
        case .notInHousehold, .handshakeFailed(message: 1, _), .frameTooLarge: true
        default: false
        }
    }
}
