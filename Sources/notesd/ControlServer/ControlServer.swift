import Control
import Foundation
import Synchronization

/// The bounds of docs/control-protocol.md, "Server guarantees" 5. Tests lower them.
struct ControlServerLimits: Hashable, Sendable {
    var maximumConnections = 64
    var maximumLineLength = LineFramer.defaultMaximumLineLength
    /// A watcher with more unsent event bytes than this is disconnected.
    var maximumUnsentEventBytes = 1 << 20
    /// A connection with this many unsent answer bytes, or this many bytes of requests
    /// waiting their turn, is not read from (nor is its next request started) until the
    /// client catches up: the kernel's socket buffer then holds the client back.
    var backpressureBytes = 1 << 20
}

/// Serves the control protocol on a listening Unix socket: one poll loop on its own thread
/// owns every descriptor (no thread per connection); each request is parsed and handed to
/// `ControlRequestHandler` on its connection's serial queue, one request at a time per
/// connection.
final class ControlServer: Sendable {
    /// The socket's path, for logs and `status`.
    let path: String
    private let waker: LoopWaker
    private let shared = ControlServerShared()
    private let finished = DispatchGroup()

    /// Starts serving on `listener` (which the server now owns and closes on `stop()`).
    /// `access` decides who is served; by default the daemon's user and root, plus the
    /// group of a group-writable activated socket.
    init(
        listener: ControlListener, handler: any ControlRequestHandler, log: Log,
        access: ControlAccessPolicy? = nil, limits: ControlServerLimits = ControlServerLimits()
    ) throws(FileSystemError) {
        path = listener.path
        waker = try LoopWaker()
        var policy = access ?? .owner()
        if access == nil, let group = listener.accessGroupID { policy.groupID = group }
        let waker = waker, shared = shared, finished = finished
        finished.enter()
        let thread = Thread { [policy] in
            let loop = ControlServerLoop(
                listener: listener, waker: waker, handler: handler, access: policy, limits: limits, log: log, shared: shared)
            loop.run()
            finished.leave()
        }
        thread.name = "notesd-control"
        thread.start()
        log.info("serving the control socket \(listener.path)")
    }

    /// Connections being served now.
    var connectionCount: Int { shared.openConnections.load(ordering: .acquiring) }

    /// Closes the listener and every connection (answers still to come are dropped) and
    /// removes the socket file if this process created it. Returns when all that is done.
    /// Safe to call more than once, from any thread but the loop's.
    func stop() {
        shared.stopRequested.store(true, ordering: .releasing)
        waker.wake()
        finished.wait()
    }
}

/// The flags the server and its loop share.
final class ControlServerShared: Sendable {
    let stopRequested = Atomic<Bool>(false)
    /// Written by the loop whenever the number of served connections changes.
    let openConnections = Atomic<Int>(0)
}
