import Control
import Foundation
import Peer
import Synchronization

/// Answers control requests (docs/control-protocol.md). The server calls it once per
/// request, one request at a time per connection, in the order the client sent them, on the
/// connection's own serial queue (`ControlContext.queue`); different connections run
/// concurrently. The engine's implementation hops onto the engine's serial queue and answers
/// through `IncomingRequest.respond(to:reply:_:)` or `ControlWire.error(id:_:)`.
///
/// Callbacks, not `async`: the Swift concurrency runtime (like `DispatchQueue.global()`)
/// runs on libdispatch's global queues, whose first use starts a timer that wakes the whole
/// process every second for good (docs/benchmarks.md allows one wake-up per 30 s).
protocol ControlRequestHandler: Sendable {
    /// Calls `reply` once with the complete response line for `request` (JSON plus `\n`,
    /// with the request's id), now or later from any thread; the connection's next request
    /// starts only after that. When the client has disconnected the answer is dropped, so a
    /// long wait (`sync` with `wait`, `join`) may stop early once `context.isClosed`.
    func handle(_ request: IncomingRequest, context: ControlContext, reply: @escaping @Sendable (Data) -> Void)
}

/// Names one accepted control connection for the life of the server (1, 2, 3…).
struct ControlConnectionID: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    let rawValue: UInt64

    init(rawValue: UInt64) { self.rawValue = rawValue }

    var description: String { "#\(rawValue)" }
}

/// Who is on the other end of a Unix socket, as the kernel recorded it at `connect`
/// (`SO_PEERCRED`, unix(7)).
struct PeerCredentials: Hashable, Sendable {
    var processID: Int32
    var userID: UInt32
    var groupID: UInt32
}

/// Which transport carried a request: the same dispatch serves both (docs/web.md).
enum ControlTransport: Hashable, Sendable {
    /// The Unix socket, whose peer passed the `SO_PEERCRED` owner check.
    case unixSocket
    /// `POST /api/rpc` from a signed-in web session.
    case http
}

/// The connection a request arrived on, for the handler.
struct ControlContext: Sendable {
    let connectionID: ControlConnectionID
    let peer: PeerCredentials
    let transport: ControlTransport
    /// The connection's serial queue, where `handle` runs: for work that should not hold the
    /// engine's queue or another connection, such as encoding a large answer.
    let queue: DispatchQueue
    /// Descriptors the client sent with this request line (`SCM_RIGHTS`), e.g. the file
    /// `backup` writes to.
    let descriptors: PassedDescriptors
    private let mailbox: ConnectionMailbox

    init(peer: PeerCredentials, mailbox: ConnectionMailbox, queue: DispatchQueue, descriptors: PassedDescriptors = PassedDescriptors([])) {
        self.connectionID = mailbox.id
        self.peer = peer
        self.transport = .unixSocket
        self.queue = queue
        self.descriptors = descriptors
        self.mailbox = mailbox
    }

    /// A web request: `peer` is the daemon's own user (a session proved who is asking),
    /// and the mailbox only reports when the HTTP client is gone (`watch` is refused over
    /// HTTP before dispatch, so nothing streams through it).
    init(httpRequest mailbox: ConnectionMailbox, peer: PeerCredentials, queue: DispatchQueue) {
        self.connectionID = mailbox.id
        self.peer = peer
        self.transport = .http
        self.queue = queue
        // Descriptors travel only over the Unix socket.
        self.descriptors = PassedDescriptors([])
        self.mailbox = mailbox
    }

    /// Subscribes this connection to events, for the `watch` method: returns the sink the
    /// engine feeds with `event` notifications. Call it while handling the request; the
    /// events flow once that request's response has been queued, so the client always
    /// reads the `watch` result first. A second call returns the same sink (one
    /// subscription per connection).
    func startWatch() -> WatchSink { mailbox.startWatch() }

    /// The client has gone (or the server stopped): answers will be dropped.
    var isClosed: Bool { mailbox.isClosed }
}

/// Descriptors a client passed with one request line: owned here until a handler takes one;
/// whatever nobody took is closed when the last reference goes.
final class PassedDescriptors: Sendable {
    private let descriptors: Mutex<[Int32]>

    init(_ descriptors: [Int32]) { self.descriptors = Mutex(descriptors) }

    /// The first descriptor, now the caller's; nil when none came.
    func take() -> OwnedDescriptor? {
        descriptors.withLock { $0.isEmpty ? nil : OwnedDescriptor($0.removeFirst()) }
    }

    deinit {
        for descriptor in descriptors.withLock({ $0 }) { close(descriptor) }
    }
}
