#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import Control
import Foundation
import Synchronization

/// The control server's poll loop. Lives on the server's thread and is the only code that
/// touches the sockets; handlers reach it through each connection's `ConnectionMailbox`
/// and the `LoopWaker`.
final class ControlServerLoop {
    private let listener: ControlListener
    private let waker: LoopWaker
    private let handler: any ControlRequestHandler
    private let access: ControlAccessPolicy
    private let limits: ControlServerLimits
    private let log: Log
    private let shared: ControlServerShared
    private var connections: [ControlConnection] = []
    private var lastConnectionID: UInt64 = 0
    /// Connections accepted per pass at most, so a flood cannot starve the others.
    private let acceptsPerPass = 64
    /// After `accept` failed for want of descriptors or memory, the listener is left alone
    /// until this time (or until a connection closes), instead of failing in a busy loop.
    private var acceptPausedUntil: ContinuousClock.Instant?
    private let acceptPause = Duration.seconds(1)

    init(
        listener: ControlListener, waker: LoopWaker, handler: any ControlRequestHandler, access: ControlAccessPolicy,
        limits: ControlServerLimits, log: Log, shared: ControlServerShared
    ) {
        self.listener = listener
        self.waker = waker
        self.handler = handler
        self.access = access
        self.limits = limits
        self.log = log
        self.shared = shared
    }

    func run() {
        defer { shutDown() }
        var descriptors: [pollfd] = []
        while !shared.stopRequested.load(ordering: .acquiring) {
            descriptors.removeAll(keepingCapacity: true)
            descriptors.append(pollfd(fd: waker.readDescriptor, events: Int16(POLLIN), revents: 0))
            if let pausedUntil = acceptPausedUntil, ContinuousClock.now >= pausedUntil { acceptPausedUntil = nil }
            descriptors.append(pollfd(fd: listener.fileDescriptor, events: acceptPausedUntil == nil ? Int16(POLLIN) : 0, revents: 0))
            for connection in connections {
                descriptors.append(pollfd(fd: connection.fileDescriptor, events: connection.pollEvents, revents: 0))
            }
            // No timeout unless accepting is paused: an idle daemon does not wake up (docs/benchmarks.md).
            if poll(&descriptors, nfds_t(descriptors.count), acceptPausedUntil.map(Self.milliseconds(until:)) ?? -1) < 0 {
                if errno == EINTR { continue }
                // The same policy as the peer network's loop: a poll that fails for any other
                // reason (bad descriptors or no memory) leaves nothing to serve with, and a
                // daemon nobody can control is worse than one systemd restarts.
                fatalError("the control server cannot wait for its sockets: poll failed: \(String(cString: strerror(errno)))")
            }
            if descriptors[0].revents != 0 { waker.drain() }
            // `connections` is unchanged since the descriptors were listed, so the indices match.
            for (index, connection) in connections.enumerated() {
                connection.service(readiness: descriptors[index + 2].revents)
            }
            if descriptors[1].revents & Int16(POLLIN) != 0 { acceptPending() }
            removeClosed()
        }
    }

    private func acceptPending() {
        for _ in 0..<acceptsPerPass {
            let descriptor = accept(listener.fileDescriptor, nil, nil)
            guard descriptor >= 0 else {
                switch errno {
                case EAGAIN, EWOULDBLOCK, EINTR, ECONNABORTED, EPROTO: return
                default:
                    // EMFILE and friends: the client waits in the backlog until there is room.
                    log.warning("cannot accept a control connection: \(String(cString: strerror(errno))); retrying in \(acceptPause)")
                    acceptPausedUntil = ContinuousClock.now + acceptPause
                    return
                }
            }
            _ = fcntl(descriptor, F_SETFL, fcntl(descriptor, F_GETFL) | O_NONBLOCK)
            _ = fcntl(descriptor, F_SETFD, fcntl(descriptor, F_GETFD) | FD_CLOEXEC)
            admit(descriptor)
        }
    }

    /// Checks who connected and whether there is room; serves or refuses with one error line.
    private func admit(_ descriptor: Int32) {
        guard let peer = PeerIdentity.credentials(of: descriptor) else {
            log.warning("refused a control connection: its credentials are unknown (\(String(cString: strerror(errno))))")
            close(descriptor)
            return
        }
        guard access.allows(peer, supplementaryGroups: { PeerIdentity.supplementaryGroups(of: descriptor) }) else {
            log.notice("refused a control connection from uid \(peer.userID) (pid \(peer.processID)): only uid \(access.ownerUserID) and root may use this daemon")
            refuse(descriptor, RPCError(
                code: .permissionDenied,
                message: "This notesd belongs to uid \(access.ownerUserID); run notesctl as that user (or root), or start your own notesd."))
            return
        }
        guard connections.count < limits.maximumConnections else {
            log.warning("refused a control connection from pid \(peer.processID): already serving \(limits.maximumConnections) connections")
            refuse(descriptor, RPCError(
                code: .internalError,
                message: "notesd is already serving \(limits.maximumConnections) control connections; close some (e.g. notesctl watch) and try again."))
            return
        }
        lastConnectionID += 1
        let id = ControlConnectionID(rawValue: lastConnectionID)
        let mailbox = ConnectionMailbox(id: id, waker: waker, maximumUnsentEventBytes: limits.maximumUnsentEventBytes)
        let connection = ControlConnection(
            fileDescriptor: descriptor, peer: peer, mailbox: mailbox, handler: handler, limits: limits, log: log)
        connections.append(connection)
        shared.openConnections.store(connections.count, ordering: .releasing)
        log.debug("control connection \(id) opened by uid \(peer.userID), pid \(peer.processID)")
        connection.service(readiness: 0)
    }

    /// One error line (`id: null`), then close. The line is small and the socket new, so
    /// one non-blocking send fits; if not, the client sees the connection close.
    private func refuse(_ descriptor: Int32, _ error: RPCError) {
        let line = ControlWire.error(id: nil, error)
        _ = line.withUnsafeBytes { send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL) | Int32(MSG_DONTWAIT)) }
        close(descriptor)
    }

    private func removeClosed() {
        let before = connections.count
        connections.removeAll { $0.isClosed }
        guard connections.count != before else { return }
        shared.openConnections.store(connections.count, ordering: .releasing)
        // A descriptor was freed: try `accept` again at once.
        acceptPausedUntil = nil
    }

    /// `poll`'s timeout for `instant`: whole milliseconds, rounded up, at least 0.
    private static func milliseconds(until instant: ContinuousClock.Instant) -> Int32 {
        let remaining = ContinuousClock.now.duration(to: instant)
        let milliseconds = remaining.components.seconds * 1000 + (remaining.components.attoseconds + 999_999_999_999_999) / 1_000_000_000_000_000
        return Int32(clamping: max(0, milliseconds))
    }

    private func shutDown() {
        for connection in connections { connection.close(reason: "the daemon is stopping") }
        connections = []
        shared.openConnections.store(0, ordering: .releasing)
        listener.close()
        waker.close()
        log.debug("control server stopped")
    }
}

/// One client connection, owned by the poll loop: bytes in → lines → one request at a
/// time → answers and events out, with the bounds of `ControlServerLimits`.
final class ControlConnection {
    let fileDescriptor: Int32
    private let peer: PeerCredentials
    private let mailbox: ConnectionMailbox
    private let handler: any ControlRequestHandler
    private let limits: ControlServerLimits
    private let log: Log

    /// Where the connection's requests are parsed and handed to the handler, one at a time,
    /// so a 16 MiB line never holds up the poll loop or another connection. A labelled serial
    /// queue: never a global one (see `ControlRequestHandler`).
    private let queue: DispatchQueue
    private var framer: LineFramer
    /// Received input waiting its turn, oldest first.
    private var waiting = FIFO<WaitingInput>()
    private var waitingBytes = 0
    /// A request was handed to the handler and its answer has not been taken yet.
    private var awaitingAnswer = false
    private var outbox = FIFO<OutgoingLine>()
    private var unsentResponseBytes = 0
    /// The client closed its sending side (it may still read).
    private var inputEnded = false
    /// Send what is queued, then close (after an over-long line).
    private var closeWhenFlushed = false
    private(set) var isClosed = false
    private var readBuffer = [UInt8](repeating: 0, count: 65536)

    /// Descriptors read with the bytes since the last complete line: they belong to the next
    /// line that completes (a client sends them with its request's first byte).
    private var unattachedDescriptors: [Int32] = []

    private enum WaitingInput {
        case line(Data, PassedDescriptors?)
        /// The client passed the line-length cap here; everything after it is discarded.
        case lineTooLong
    }

    private struct OutgoingLine {
        var data: Data
        /// Bytes already written.
        var offset = 0
        var isEvent: Bool
    }

    init(
        fileDescriptor: Int32, peer: PeerCredentials, mailbox: ConnectionMailbox, handler: any ControlRequestHandler,
        limits: ControlServerLimits, log: Log
    ) {
        self.fileDescriptor = fileDescriptor
        self.peer = peer
        self.mailbox = mailbox
        self.handler = handler
        self.limits = limits
        self.log = log
        self.queue = DispatchQueue(label: "notesd.control.\(mailbox.id)")
        self.framer = LineFramer(maximumLineLength: limits.maximumLineLength)
    }

    private var canRead: Bool {
        !inputEnded && !closeWhenFlushed && waitingBytes < limits.backpressureBytes && unsentResponseBytes < limits.backpressureBytes
    }

    var pollEvents: Int16 {
        (canRead ? Int16(POLLIN) : 0) | (outbox.isEmpty ? 0 : Int16(POLLOUT))
    }

    /// One pass: read if readable, take what handlers delivered, start the next request,
    /// write what can be written, close when done. `readiness` is poll's `revents`.
    func service(readiness: Int16) {
        guard !isClosed else { return }
        if readiness & Int16(POLLERR | POLLNVAL) != 0 { return close(reason: "socket error") }
        // POLLHUP: the client closed both directions, so no answer can reach it.
        if readiness & Int16(POLLHUP) != 0 { return close(reason: "closed by the client") }
        if readiness & Int16(POLLIN) != 0, canRead { readOnce() }
        guard !isClosed else { return }
        takeDeliveries()
        guard !isClosed else { return }
        startNextRequest()
        flush()
        guard !isClosed else { return }
        if closeWhenFlushed && outbox.isEmpty { return close(reason: "a request line was too long") }
        if inputEnded && waiting.isEmpty && !awaitingAnswer && outbox.isEmpty && !mailbox.isWatching {
            close(reason: "the client finished")
        }
    }

    func close(reason: String) {
        guard !isClosed else { return }
        isClosed = true
        mailbox.close()
        awaitingAnswer = false
        for descriptor in unattachedDescriptors { Glibc.close(descriptor) }
        unattachedDescriptors = []
        waiting = FIFO()
        Glibc.close(fileDescriptor)
        log.debug("control connection \(mailbox.id) closed: \(reason)")
    }

    private func readOnce() {
        let received = readBuffer.withUnsafeMutableBytes { DescriptorPassing.receive(socket: fileDescriptor, into: $0, flags: Int32(MSG_DONTWAIT)) }
        let count = received.count
        unattachedDescriptors += received.descriptors
        if received.truncated { log.notice("control connection \(mailbox.id) sent more than \(DescriptorPassing.maximumDescriptors) descriptors at once; the rest were dropped") }
        if count < 0 {
            if errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR { return }
            return close(reason: "read failed: \(String(cString: strerror(errno)))")
        }
        if count == 0 {
            inputEnded = true
            if framer.pendingByteCount > 0 { log.debug("control connection \(mailbox.id) ended inside a line; the partial line is ignored") }
            return
        }
        // Fed one line's worth at a time: the framer reports an over-long line by throwing,
        // which would lose the complete lines before it in the same chunk.
        var rest = readBuffer[..<count]
        while !rest.isEmpty {
            let end = rest.firstIndex(of: UInt8(ascii: "\n")).map { $0 + 1 } ?? rest.endIndex
            do {
                for line in try framer.append(rest[..<end]) {
                    let descriptors = unattachedDescriptors.isEmpty ? nil : PassedDescriptors(unattachedDescriptors)
                    unattachedDescriptors = []
                    waiting.append(.line(line, descriptors))
                    waitingBytes += line.count
                }
            } catch {
                // Answered in its turn, after the requests before it; nothing after it is read.
                waiting.append(.lineTooLong)
                inputEnded = true
                log.notice("control connection \(mailbox.id) sent a line over \(limits.maximumLineLength) bytes; closing it")
                return
            }
            rest = rest[end...]
        }
    }

    private func takeDeliveries() {
        let delivery = mailbox.collect()
        if let response = delivery.response {
            awaitingAnswer = false
            enqueue(response, isEvent: false)
        }
        for event in delivery.events { enqueue(event, isEvent: true) }
        if delivery.overflowed {
            log.notice("control connection \(mailbox.id) watched without reading; over \(limits.maximumUnsentEventBytes) bytes of events were waiting, so it was disconnected")
            close(reason: "watcher fell behind")
        }
    }

    private func startNextRequest() {
        while !awaitingAnswer, !closeWhenFlushed, unsentResponseBytes < limits.backpressureBytes, let input = waiting.popFirst() {
            switch input {
            case .lineTooLong:
                log.notice("control connection \(mailbox.id) sent a line over \(limits.maximumLineLength) bytes; answered with an error and closed it")
                enqueue(ControlWire.error(id: nil, .lineTooLong(maximum: limits.maximumLineLength)), isEvent: false)
                closeWhenFlushed = true
                waiting = FIFO()
                waitingBytes = 0
            case .line(let line, let descriptors):
                waitingBytes -= line.count
                awaitingAnswer = true
                let handler = handler
                let context = ControlContext(peer: peer, mailbox: mailbox, queue: queue, descriptors: descriptors ?? PassedDescriptors([]))
                let reply = mailbox.replyForNextRequest()
                queue.async {
                    switch IncomingRequest.parse(line) {
                    case .failure(let rejection):
                        reply(rejection.responseLine)
                    case .success(let request):
                        handler.handle(request, context: context, reply: reply)
                    }
                }
            }
        }
    }

    private func enqueue(_ line: Data, isEvent: Bool) {
        var line = line
        if line.last != UInt8(ascii: "\n") { line.append(UInt8(ascii: "\n")) }
        outbox.append(OutgoingLine(data: line, isEvent: isEvent))
        if !isEvent { unsentResponseBytes += line.count }
    }

    /// Writes queued lines until the socket's buffer is full.
    private func flush() {
        while var first = outbox.first {
            let written = first.data.withUnsafeBytes { bytes in
                send(fileDescriptor, bytes.baseAddress! + first.offset, bytes.count - first.offset, Int32(MSG_NOSIGNAL) | Int32(MSG_DONTWAIT))
            }
            if written < 0 {
                if errno == EINTR { continue }
                if errno == EAGAIN || errno == EWOULDBLOCK { return }
                return close(reason: "write failed: \(String(cString: strerror(errno)))")
            }
            first.offset += written
            guard first.offset == first.data.count else {
                outbox.replaceFirst(first)
                continue
            }
            _ = outbox.popFirst()
            if first.isEvent { mailbox.eventBytesWritten(first.data.count) } else { unsentResponseBytes -= first.data.count }
        }
    }
}

/// A first-in first-out queue with O(1) removal at the front (the standard library has no
/// deque): slots before `head` are spent, emptied at once (an element popped is released
/// then, not when the slots are compacted: a connection's spent answers of several MB each
/// were kept alive that way), and dropped once they are the majority.
struct FIFO<Element> {
    private var elements: [Element?] = []
    private var head = 0

    var isEmpty: Bool { head == elements.count }
    var first: Element? { isEmpty ? nil : elements[head] }

    mutating func append(_ element: Element) { elements.append(element) }

    mutating func popFirst() -> Element? {
        guard !isEmpty else { return nil }
        let element = elements[head].take()
        head += 1
        if isEmpty {
            elements.removeAll(keepingCapacity: elements.count <= 1024)
            head = 0
        } else if head >= 1024 && head * 2 >= elements.count {
            elements.removeFirst(head)
            head = 0
        }
        return element
    }

    mutating func replaceFirst(_ element: Element) {
        precondition(!isEmpty, "replaceFirst on an empty FIFO")
        elements[head] = element
    }
}
