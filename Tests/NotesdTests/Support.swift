#if canImport(Glibc)
import Glibc
#endif
import Control
import Foundation
import Synchronization
@testable import notesd
import TestSupport


/// Runs blocking work (socket reads, child processes, the daemon's `serve`) on a thread of
/// its own, so it never holds one of the few cooperative threads the tests run on.
func blocking<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread { continuation.resume(with: Result { try body() }) }.start()
    }
}

/// Runs `body` on a thread of its own, started at once — a `Task` may wait seconds for a
/// thread of the cooperative pool while other tests keep it busy; `value` waits for the result.
final class BackgroundThread<T: Sendable>: Sendable {
    private let result = Mutex<T?>(nil)
    private let done = DispatchSemaphore(value: 0)

    init(_ body: @escaping @Sendable () -> T) {
        Thread { [self] in
            let value = body()
            result.withLock { $0 = value }
            done.signal()
        }.start()
    }

    /// The result; throws when the thread has not finished within 60 s (a hang fails the test).
    var value: T {
        get async throws {
            try await blocking {
                guard self.done.wait(timeout: .now() + 60) == .success else { throw TestFailure("the background thread did not finish within 60 s") }
                self.done.signal()
                return self.result.withLock { $0! }
            }
        }
    }
}

/// Waits for `condition`, checking it every millisecond for at most `timeout`; `false` if it
/// never held. For conditions that change on other threads (no sleeping in their place).
func eventually(timeout: Duration = .seconds(10), _ condition: () -> Bool) async -> Bool {
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline {
        if condition() { return true }
        try? await Task.sleep(for: .milliseconds(1))
    }
    return condition()
}

/// A log whose lines the test can read.
final class CapturedLog: Sendable {
    private final class Lines: Sendable {
        let lines = Mutex<[String]>([])
    }

    private let captured = Lines()
    let log: Log

    init(level: LogLevel = .debug) {
        let captured = captured
        log = Log(level: level, style: .journal) { text in captured.lines.withLock { $0.append(text) } }
    }

    var lines: [String] { captured.lines.withLock { $0 } }

    func contains(_ text: String) -> Bool { lines.contains { $0.contains(text) } }
}

/// A control client speaking raw lines, for driving the server byte by byte.
/// `@unchecked Sendable`: each test uses its client from one thread at a time (handing it
/// between threads through `blocking`, which synchronizes); the only concurrent use is a
/// `send` on one thread while another reads, which the socket itself allows.
final class TestClient: @unchecked Sendable {
    let socket: UnixStreamSocket
    private var framer = LineFramer(maximumLineLength: 64 << 20)
    private var lines: [Data] = []

    init(path: String) throws {
        socket = try UnixStreamSocket.connect(path: path)
    }

    func send(_ text: String) throws { try socket.send(Data(text.utf8)) }

    /// One request line for `method` with `params` (raw JSON text, `nil` for none).
    func request(id: Int, _ method: String, params: String? = nil) throws {
        let members = [#""jsonrpc":"2.0""#, #""id":\#(id)"#, #""method":"\#(method)""#] + (params.map { [#""params":\#($0)"#] } ?? [])
        try send("{" + members.joined(separator: ",") + "}\n")
    }

    /// The next line; `nil` at end of stream. Throws on timeout or a socket error.
    func readLine(timeout: Duration = .seconds(10)) throws -> Data? {
        while lines.isEmpty {
            guard let bytes = try socket.receive(timeout: timeout) else { throw TestFailure("no line within \(timeout)") }
            if bytes.isEmpty { return nil }
            lines = try framer.append(bytes)
        }
        return lines.removeFirst()
    }

    /// The next line as a message; throws at end of stream.
    func readMessage(timeout: Duration = .seconds(10)) throws -> IncomingMessage {
        guard let line = try readLine(timeout: timeout) else { throw TestFailure("the server closed the connection") }
        return try IncomingMessage.parse(line)
    }

    /// Reads until the server closes the connection: the lines that came first. A reset
    /// after the last line (the server closed with input unread) also counts as closed.
    func readUntilClosed(timeout: Duration = .seconds(10)) throws -> [Data] {
        var received: [Data] = []
        while true {
            do {
                guard let line = try readLine(timeout: timeout) else { return received }
                received.append(line)
            } catch let error as SocketError where error.code == ECONNRESET {
                return received
            }
        }
    }
}

struct TestFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// The response's id and either its result line or its error.
func response(_ message: IncomingMessage) throws -> (id: RequestID?, result: Data?, error: RPCError?) {
    guard case .response(let id, let response) = message else { throw TestFailure("expected a response, got \(message)") }
    switch response {
    case .result(let line): return (id, line, nil)
    case .error(let error): return (id, nil, error)
    }
}

// MARK: A handler for the server tests

struct EchoText: Codable, Hashable, Sendable {
    var text: String
}

/// `echo {text}` → `{text}`: answered at once.
enum Echo: ControlMethod {
    typealias Params = EchoText
    typealias Result = EchoText
    static let name = "echo"
}

/// `slow {text}` → `{text}` once the test opens the handler's gate.
enum Slow: ControlMethod {
    typealias Params = EchoText
    typealias Result = EchoText
    static let name = "slow"
}

/// `twice {text}` → `{text}`, then a second answer once the test opens the handler's gate:
/// a handler bug the server must contain.
enum Twice: ControlMethod {
    typealias Params = EchoText
    typealias Result = EchoText
    static let name = "twice"
}

/// Holds actions until the test opens it; actions added after that run at once.
final class Gate: Sendable {
    private let state = Mutex<(isOpen: Bool, waiting: [@Sendable () -> Void])>((false, []))

    func open() {
        let waiting = state.withLock { state in
            state.isOpen = true
            defer { state.waiting = [] }
            return state.waiting
        }
        for action in waiting { action() }
    }

    func whenOpen(_ action: @escaping @Sendable () -> Void) {
        let runNow = state.withLock { state in
            if state.isOpen { return true }
            state.waiting.append(action)
            return false
        }
        if runNow { action() }
    }
}

/// Plays the engine for the server tests: `echo`, `slow`, `twice`, `watch`, and `methodNotFound`
/// for everything else; records what it saw.
final class TestHandler: ControlRequestHandler {
    let gate = Gate()
    /// "start slow a", "end slow a", "abandoned slow a" (answered after the client left),
    /// "echo b", in order.
    let journal = Mutex<[String]>([])
    let sinks = Mutex<[WatchSink]>([])
    /// Requests running now, per connection, and the most seen at once.
    private let running = Mutex<(current: [ControlConnectionID: Int], maximum: Int)>(([:], 0))

    var entries: [String] { journal.withLock { $0 } }
    var maximumConcurrentPerConnection: Int { running.withLock { $0.maximum } }

    private func note(_ entry: String) { journal.withLock { $0.append(entry) } }

    func handle(_ request: IncomingRequest, context: ControlContext, reply: @escaping @Sendable (Data) -> Void) {
        running.withLock { running in
            running.current[context.connectionID, default: 0] += 1
            running.maximum = max(running.maximum, running.current[context.connectionID]!)
        }
        // Counted down before the answer leaves: the connection's next request may start then.
        let finish: @Sendable (Data) -> Void = { line in
            self.running.withLock { $0.current[context.connectionID, default: 0] -= 1 }
            reply(line)
        }
        switch request.method {
        case Echo.name:
            finish(request.respond(to: Echo.self) { params in
                self.note("echo \(params.text)")
                return params
            })
        case Slow.name:
            request.respond(to: Slow.self, reply: finish) { params, complete in
                self.note("start slow \(params.text)")
                self.gate.whenOpen {
                    self.note(context.isClosed ? "abandoned slow \(params.text)" : "end slow \(params.text)")
                    complete(.success(params))
                }
            }
        case Twice.name:
            finish(request.respond(to: Twice.self) { params in params })
            gate.whenOpen { reply(request.respond(to: Twice.self) { _ in EchoText(text: "duplicate") }) }
        case Echo.name + ".toPassed":
            // Writes the text to the descriptor that came with the request, if one did.
            let descriptor = context.descriptors.take()
            finish(request.respond(to: Echo.self) { params in
                guard let descriptor else { return EchoText(text: "no descriptor") }
                let bytes = Array(params.text.utf8)
                return EchoText(text: write(descriptor.raw, bytes, bytes.count) == bytes.count ? "written" : "write failed")
            })
        case ControlMethods.Watch.name:
            let sink = context.startWatch()
            sinks.withLock { $0.append(sink) }
            // Sent before the answer, yet the client must read the answer first.
            sink.send(Self.event(title: "sent before the answer"))
            finish(request.respond(to: ControlMethods.Watch.self) { _ in WatchResult(events: ControlEvent.knownTypes) })
        default:
            finish(ControlWire.error(id: request.id, .methodNotFound(request.method)))
        }
    }

    static func event(title: String) -> ControlEvent {
        ControlEvent(
            time: Timestamp(rawValue: 1_715_000_000_000),
            payload: .noteChanged(NoteChangedEvent(note: "0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b", title: title, change: .edited, origin: .local)))
    }
}

/// A control server on a fresh socket in a private directory, with a `TestHandler`.
final class TestServer: Sendable {
    let directory: TemporaryDirectory
    let path: String
    let server: ControlServer
    let handler = TestHandler()
    let captured = CapturedLog()

    init(limits: ControlServerLimits = ControlServerLimits(), access: ControlAccessPolicy? = nil, socketName: String = "control.sock") throws {
        directory = try TemporaryDirectory()
        path = directory.file(socketName)
        let listener = try ControlListener.bind(path: path)
        server = try ControlServer(listener: listener, handler: handler, log: captured.log, access: access, limits: limits)
    }

    func client() throws -> TestClient { try TestClient(path: path) }

    deinit { server.stop() }
}
