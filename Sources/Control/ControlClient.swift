import Foundation

/// Why a call through `ControlClient` failed.
public enum ControlClientError: Error, Hashable, Sendable, CustomStringConvertible {
    /// No daemon answers at the socket path (no socket file, nothing listening, no access).
    case daemonUnreachable(socketPath: String, reason: String)
    /// The daemon answered with an error.
    case server(RPCError)
    /// The daemon closed the connection before answering (`midLine`: in the middle of a line).
    case connectionClosed(midLine: Bool)
    /// The daemon sent something that is not the protocol.
    case protocolViolation(String)
    /// No answer within the caller's timeout.
    case timedOut(Duration)
    /// A read or write on the connection failed.
    case io(SocketError)

    public var description: String {
        switch self {
        case .daemonUnreachable(let path, let reason):
            "cannot reach notesd at \(path) (\(reason))"
        case .server(let error):
            error.message
        case .connectionClosed(let midLine):
            midLine
                ? "notesd closed the connection in the middle of its answer; see its log (journalctl --user -u notesd)"
                : "notesd closed the connection without answering; see its log (journalctl --user -u notesd)"
        case .protocolViolation(let detail):
            "notesd broke the control protocol: \(detail); check that notesctl and notesd are the same version"
        case .timedOut(let duration):
            "notesd did not answer within \(duration)"
        case .io(let error):
            "the connection to notesd failed: \(error)"
        }
    }
}

/// A connection to notesd's control socket (docs/control-protocol.md).
///
/// Blocking and single-threaded, like the CLI that uses it: `call` sends one request and
/// waits for its response; after `watch()`, `nextEvent()` waits for the next event.
/// Events that arrive while a call waits are kept for `nextEvent()`.
public final class ControlClient {
    public let socketPath: String
    private let socket: UnixStreamSocket
    private var framer: LineFramer
    /// Lines framed but not yet consumed.
    private var lines: [Data] = []
    private var events: [ControlEvent] = []
    private var nextID: Int64 = 1

    /// Connects to the daemon. Fails with `daemonUnreachable` when there is no socket,
    /// nothing listens on it, or this user may not open it.
    public init(socketPath: String, maximumLineLength: Int = LineFramer.defaultMaximumLineLength) throws(ControlClientError) {
        self.socketPath = socketPath
        framer = LineFramer(maximumLineLength: maximumLineLength)
        do {
            socket = try UnixStreamSocket.connect(path: socketPath)
        } catch {
            throw .daemonUnreachable(socketPath: socketPath, reason: Self.reason(error))
        }
    }

    private static func reason(_ error: SocketError) -> String {
        switch error.code {
        case ENOENT: "no socket there"
        case ECONNREFUSED: "nothing is listening on the socket"
        case EACCES, EPERM: "permission denied; the socket belongs to another user"
        case ENAMETOOLONG: "the path is longer than \(UnixSocketAddress.maximumPathLength) bytes"
        case ENOTDIR: "a component of the path is not a directory"
        default: error.reason
        }
    }

    /// Calls `method` and waits for its result, at most `timeout` (forever when `nil`).
    /// A timed-out call's late answer is skipped by later calls. `descriptor` travels with the
    /// request (`SCM_RIGHTS`), for methods that write to a file the caller opened (`backup`).
    public func call<M: ControlMethod>(
        _ method: M.Type, _ params: M.Params, timeout: Duration? = nil, passing descriptor: Int32? = nil
    ) throws(ControlClientError) -> M.Result {
        let id = RequestID.number(nextID)
        nextID += 1
        let request: Data
        do { request = try ControlWire.request(M.self, id: id, params: params) } catch {
            throw .protocolViolation("the request could not be encoded (\(error))")
        }
        do {
            if let descriptor { try socket.send(request, passing: descriptor) } else { try socket.send(request) }
        } catch {
            throw error.code == EPIPE || error.code == ECONNRESET ? .connectionClosed(midLine: false) : .io(error)
        }
        let deadline = timeout.map { ContinuousClock.now + $0 }
        while true {
            guard let line = try nextLine(deadline: deadline) else { throw .timedOut(timeout ?? .zero) }
            switch try parse(line) {
            case .notification(let method, let line):
                try keepEvent(method: method, line: line)
            case .response(let responseID, let response):
                if let responseID, responseID != id {
                    // An answer to an earlier call that timed out.
                    guard case .number(let earlier) = responseID, case .number(let current) = id, earlier < current else {
                        throw .protocolViolation("an answer to request \(responseID) arrived while waiting for \(id)")
                    }
                    continue
                }
                switch response {
                case .error(let error): throw .server(error)
                case .result(let line):
                    do { return try IncomingMessage.result(M.Result.self, from: line) } catch {
                        throw .protocolViolation(error.description)
                    }
                }
            }
        }
    }

    /// `call` for methods without params.
    public func call<M: ControlMethod>(_ method: M.Type, timeout: Duration? = nil) throws(ControlClientError) -> M.Result where M.Params == EmptyParams {
        try call(method, EmptyParams(), timeout: timeout)
    }

    /// Subscribes this connection to events; read them with `nextEvent()`.
    @discardableResult
    public func watch() throws(ControlClientError) -> WatchResult {
        try call(ControlMethods.Watch.self)
    }

    /// The next event, waiting at most `timeout` (forever when `nil`); `nil` when the
    /// timeout passed. Throws `connectionClosed` when the daemon goes away. Events of types
    /// this build does not know are skipped.
    public func nextEvent(timeout: Duration? = nil) throws(ControlClientError) -> ControlEvent? {
        let deadline = timeout.map { ContinuousClock.now + $0 }
        while events.isEmpty {
            guard let line = try nextLine(deadline: deadline) else { return nil }
            switch try parse(line) {
            case .notification(let method, let line):
                try keepEvent(method: method, line: line)
            case .response(let id, _):
                throw .protocolViolation("an unexpected answer (id \(id.map(\.description) ?? "null")) arrived while watching")
            }
        }
        return events.removeFirst()
    }

    public func close() { socket.close() }

    private func parse(_ line: Data) throws(ControlClientError) -> IncomingMessage {
        do { return try IncomingMessage.parse(line) } catch { throw .protocolViolation(error.description) }
    }

    private func keepEvent(method: String, line: Data) throws(ControlClientError) {
        guard method == ControlWire.eventMethod else { return }
        let event: ControlEvent
        do { event = try IncomingMessage.params(ControlEvent.self, from: line) } catch {
            throw .protocolViolation(error.description)
        }
        if case .unknown = event.payload { return }
        events.append(event)
    }

    /// The next complete line; `nil` when the deadline passed first.
    private func nextLine(deadline: ContinuousClock.Instant?) throws(ControlClientError) -> Data? {
        while lines.isEmpty {
            let timeout = deadline.map { max(.zero, ContinuousClock.now.duration(to: $0)) }
            let bytes: [UInt8]?
            do { bytes = try socket.receive(timeout: timeout) } catch {
                throw error.code == ECONNRESET ? .connectionClosed(midLine: framer.pendingByteCount > 0) : .io(error)
            }
            guard let bytes else { return nil }
            if bytes.isEmpty { throw .connectionClosed(midLine: framer.pendingByteCount > 0) }
            do { lines = try framer.append(bytes) } catch {
                throw .protocolViolation(error.description)
            }
        }
        return lines.removeFirst()
    }
}
