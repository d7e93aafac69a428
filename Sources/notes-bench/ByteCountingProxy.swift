import Foundation
import Synchronization

/// A TCP relay on loopback that counts the bytes it forwards each way: one device dials the
/// proxy instead of its peer, so every byte of their sync (handshake, frames, encryption
/// overhead, keepalives) is counted exactly as it crossed the wire.
///
/// One thread polls every socket (non-blocking); each direction keeps at most one read's worth
/// of bytes waiting, so a slow reader slows its writer instead of growing a buffer.
final class ByteCountingProxy: Sendable {
    let port: UInt16
    private let listener: Int32
    private let wake: (read: Int32, write: Int32)
    private let forward = Atomic<Int>(0)
    private let backward = Atomic<Int>(0)
    private let stopped = Atomic<Bool>(false)

    /// Listens on 127.0.0.1 (a free port) and relays each connection to `127.0.0.1:targetPort`.
    init(targetPort: UInt16) throws {
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        var yes: Int32 = 1
        setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
        var address = loopback(port: 0)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let ok = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(listener, $0, length) == 0 && listen(listener, 16) == 0 && getsockname(listener, $0, &length) == 0
            }
        }
        guard ok else { throw BenchError("the proxy cannot listen on loopback: \(String(cString: strerror(errno)))") }
        var pipeEnds: [Int32] = [0, 0]
        guard pipe(&pipeEnds) == 0 else { throw BenchError("cannot create a pipe for the proxy") }
        for end in pipeEnds { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
        self.listener = listener
        self.port = UInt16(bigEndian: address.sin_port)
        wake = (pipeEnds[0], pipeEnds[1])
        let relay = Relay(listener: listener, wake: pipeEnds[0], targetPort: targetPort, proxy: self)
        Thread { relay.run() }.start()
    }

    var address: String { "127.0.0.1:\(port)" }

    /// Bytes relayed since the last reset: toward the target, and back from it.
    var counts: (toTarget: Int, fromTarget: Int) { (forward.load(ordering: .relaxed), backward.load(ordering: .relaxed)) }

    func resetCounts() {
        forward.store(0, ordering: .relaxed)
        backward.store(0, ordering: .relaxed)
    }

    /// Ends the relay thread, which closes every connection. Call it once done: the thread
    /// keeps the proxy alive until then.
    func stop() {
        guard !stopped.exchange(true, ordering: .relaxed) else { return }
        var byte: UInt8 = 1
        _ = write(wake.write, &byte, 1)
    }

    fileprivate var wakeWriter: Int32 { wake.write }

    fileprivate var isStopped: Bool { stopped.load(ordering: .relaxed) }

    fileprivate func counted(_ bytes: Int, towardTarget: Bool) {
        if towardTarget {
            forward.add(bytes, ordering: .relaxed)
        } else {
            backward.add(bytes, ordering: .relaxed)
        }
    }
}

private func loopback(port: UInt16) -> sockaddr_in {
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    address.sin_port = port.bigEndian
    return address
}

/// The proxy's thread: owns every descriptor it opens and closes them when it ends.
private final class Relay: @unchecked Sendable {
    // @unchecked: after `init`, only the relay thread touches these vars (the proxy shares
    // nothing with it but the listener and pipe descriptors, and its atomics).
    private struct Direction {
        let from: Int32
        let to: Int32
        let towardTarget: Bool
        var pending: [UInt8] = []
        var finished = false
    }

    private let listener: Int32
    private let wake: Int32
    private let targetPort: UInt16
    private let proxy: ByteCountingProxy
    private var directions: [Direction] = []

    init(listener: Int32, wake: Int32, targetPort: UInt16, proxy: ByteCountingProxy) {
        self.listener = listener
        self.wake = wake
        self.targetPort = targetPort
        self.proxy = proxy
    }

    func run() {
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while !proxy.isStopped {
            var polled = [pollfd(fd: listener, events: Int16(POLLIN), revents: 0), pollfd(fd: wake, events: Int16(POLLIN), revents: 0)]
            for direction in directions where !direction.finished {
                polled.append(pollfd(fd: direction.pending.isEmpty ? direction.from : direction.to,
                                     events: Int16(direction.pending.isEmpty ? POLLIN : POLLOUT), revents: 0))
            }
            guard poll(&polled, nfds_t(polled.count), -1) >= 0 || errno == EINTR else { break }
            if polled[0].revents != 0 { accept() }
            for index in directions.indices where !directions[index].finished {
                pump(index, buffer: &buffer)
            }
            closeFinishedPairs()
        }
        for direction in directions { close(direction.from) }
        close(listener)
        close(wake)
        close(proxy.wakeWriter)
    }

    private func accept() {
        let client = Glibc.accept(listener, nil, nil)
        guard client >= 0 else { return }
        _ = fcntl(client, F_SETFD, FD_CLOEXEC)
        _ = fcntl(client, F_SETFL, fcntl(client, F_GETFL) | O_NONBLOCK)
        let upstream = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        var address = loopback(port: targetPort)
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(upstream, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
        }
        guard connected else {
            close(client)
            close(upstream)
            return
        }
        _ = fcntl(upstream, F_SETFL, fcntl(upstream, F_GETFL) | O_NONBLOCK)
        var yes: Int32 = 1
        for descriptor in [client, upstream] { setsockopt(descriptor, Int32(IPPROTO_TCP), TCP_NODELAY, &yes, socklen_t(MemoryLayout<Int32>.size)) }
        directions.append(Direction(from: client, to: upstream, towardTarget: true))
        directions.append(Direction(from: upstream, to: client, towardTarget: false))
    }

    /// Moves what can move without blocking in one direction.
    private func pump(_ index: Int, buffer: inout [UInt8]) {
        var direction = directions[index]
        defer { directions[index] = direction }
        if direction.pending.isEmpty {
            let count = buffer.withUnsafeMutableBytes { read(direction.from, $0.baseAddress, $0.count) }
            if count == 0 || (count < 0 && errno != EAGAIN && errno != EINTR) {
                direction.finished = true
                shutdown(direction.to, Int32(SHUT_WR))
                return
            }
            guard count > 0 else { return }
            proxy.counted(count, towardTarget: direction.towardTarget)
            direction.pending = Array(buffer[..<count])
        }
        let written = direction.pending.withUnsafeBytes { write(direction.to, $0.baseAddress, $0.count) }
        if written > 0 {
            direction.pending.removeFirst(written)
        } else if written < 0, errno != EAGAIN, errno != EINTR {
            direction.finished = true
        }
    }

    /// A connection is over when both of its directions are.
    private func closeFinishedPairs() {
        var index = 0
        while index + 1 < directions.count {
            if directions[index].finished && directions[index + 1].finished {
                close(directions[index].from)
                close(directions[index].to)
                directions.removeSubrange(index...(index + 1))
            } else {
                index += 2
            }
        }
    }
}
