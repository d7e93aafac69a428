#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import CMicroHTTPD
import Control
import Foundation
import Synchronization

/// How the web server is bounded (docs/web.md, "Limits").
public struct WebServerLimits: Sendable {
    /// Connections at once, suspended ones included. libmicrohttpd cannot evict an old
    /// connection for a new one and every client is 127.0.0.1, so the cap sits well above
    /// 200 slow clients plus the real ones; the idle timeout then clears the slow ones.
    public var maximumConnections: UInt32 = 600
    /// A connection with no traffic for this long is closed (a slowloris client, an idle
    /// keep-alive). Event streams are exempt while parked; their keepalive finds dead ones.
    public var idleTimeoutSeconds: UInt32 = 30
    /// Per-connection memory for the request line, headers and buffers: a head larger than
    /// about half of it is refused with 431.
    public var connectionMemoryBytes = 64 * 1024
    /// App files larger than this are not served (the app is a few hundred KiB).
    public var maximumFileBytes = 32 << 20
    /// A request — head and body — must arrive whole within this long of the moment it could
    /// begin (the connection opening, or the previous answer finishing), however steadily
    /// its bytes trickle in: the idle timeout alone only counts silence.
    public var requestDeadline: Duration = .seconds(30)
    /// The largest `POST /api/rpc` body: the control socket's line cap (lowered in tests).
    public var maximumRPCBodyBytes = LineFramer.defaultMaximumLineLength

    public init() {}
}

/// Runs one control request for the API: the same dispatch the control socket uses;
/// `reply` takes the response line (once). A parked HTTP connection cannot notice its
/// client leaving, so the dispatch always runs to its end (`sync` waits are capped at 60 s).
public typealias WebDispatch = @Sendable (_ request: IncomingRequest, _ reply: @escaping @Sendable (Data) -> Void) -> Void

/// The daemon's HTTP server: libmicrohttpd on one listening socket, the checks and routes
/// of `WebRouter`, sessions from `WebAuthority`, events from `EventHub`, files from the web
/// root. One owner of the `MHD_Daemon`, stopped in `stop()` (and `deinit`).
///
/// Threading (docs/decisions.md, "Web server"): one internal polling thread on epoll
/// (`MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL`). With no connection it sleeps in
/// `epoll_wait` without a timeout; requests that wait on the engine (RPC) and idle event
/// streams are suspended (`MHD_suspend_connection`) and resumed through libmicrohttpd's
/// eventfd, so nothing polls.
public final class WebServer: Sendable {
    public let router: WebRouter
    public let authority: WebAuthority
    public let events: EventHub
    public let webRoot: String
    let limits: WebServerLimits
    let dispatch: WebDispatch
    let log: @Sendable (String) -> Void
    private let daemon: Mutex<DaemonHandle?>
    /// Requests parked while the engine answers, so `stop` can wake them.
    let parked = Mutex<[ObjectIdentifier: RequestState]>([:])
    private let logger: LoggerHandle
    let deadlines: RequestDeadlines
    private let retainedSelf: Mutex<Unmanaged<WebServer>?> = Mutex(nil)

    /// A libmicrohttpd pointer, which may cross threads: the library locks internally, and
    /// the calls made on it from other threads (`MHD_resume_connection`, `MHD_stop_daemon`,
    /// `MHD_get_daemon_info`) are the thread-safe ones.
    struct DaemonHandle: @unchecked Sendable {
        let pointer: OpaquePointer
    }

    /// The C logger record; written once in `init`, read only by libmicrohttpd, freed in `deinit`.
    struct LoggerHandle: @unchecked Sendable {
        let pointer: UnsafeMutablePointer<notesd_mhd_logger>
    }

    /// Starts serving on `listeningSocket` (bound and listening; the server closes it).
    public init(
        listeningSocket: Int32, port: UInt16, webRoot: String, authority: WebAuthority, events: EventHub,
        limits: WebServerLimits = WebServerLimits(), dispatch: @escaping WebDispatch, log: @escaping @Sendable (String) -> Void
    ) throws(WebServerError) {
        router = WebRouter(port: port, maximumRPCBodyBytes: limits.maximumRPCBodyBytes)
        self.authority = authority
        self.events = events
        self.webRoot = webRoot
        self.limits = limits
        self.dispatch = dispatch
        self.log = log
        daemon = Mutex(nil)
        logger = LoggerHandle(pointer: .allocate(capacity: 1))
        deadlines = RequestDeadlines(
            limit: limits.requestDeadline,
            timeoutAnswer: WebResponses.error(
                408, "the request did not arrive whole within \(limits.requestDeadline) of the connection opening (or of the previous answer); send it again at once",
                closes: true).wireBytes(),
            log: log)
        let unmanaged = Unmanaged.passRetained(self)
        logger.pointer.initialize(to: notesd_mhd_logger(function: { context, message in
            guard let context, let message else { return }
            let server = Unmanaged<WebServer>.fromOpaque(context).takeUnretainedValue()
            server.log("libmicrohttpd: " + String(cString: message).trimmingCharacters(in: .whitespacesAndNewlines))
        }, context: unmanaged.toOpaque()))
        var mhdLimits = notesd_mhd_limits(
            connection_limit: limits.maximumConnections, connection_timeout_seconds: limits.idleTimeoutSeconds,
            connection_memory_limit: limits.connectionMemoryBytes)
        let flags = UInt32(MHD_USE_INTERNAL_POLLING_THREAD.rawValue | MHD_USE_EPOLL.rawValue | MHD_ALLOW_SUSPEND_RESUME.rawValue)
        _ = Self.installReplacer
        if notesd_mhd_hook_active() == 0 {
            log("libmicrohttpd's own error answers (400, 431…) cannot be given our security headers: its MHD_queue_response does not resolve to notesd's hook")
        }
        guard let started = notesd_mhd_start(
            flags, listeningSocket, &mhdLimits, WebServer.accessHandler, unmanaged.toOpaque(), WebServer.completed, unmanaged.toOpaque(),
            WebServer.connectionNotice, unmanaged.toOpaque(), logger.pointer)
        else {
            deadlines.stop()
            close(listeningSocket)
            // The last reference: `deinit` frees the logger.
            unmanaged.release()
            throw .cannotStart
        }
        daemon.withLock { $0 = DaemonHandle(pointer: started) }
        // The daemon's callbacks hold `self` until `stop`.
        retainedSelf.withLock { $0 = unmanaged }
    }

    /// Closes every stream and parked request, then the daemon; blocks until its thread has
    /// ended. Safe to call more than once.
    public func stop() {
        guard let handle = daemon.withLock({ current -> DaemonHandle? in
            defer { current = nil }
            return current
        }) else { return }
        events.stop()
        let waiting = parked.withLock { parked in
            defer { parked = [:] }
            return Array(parked.values)
        }
        for request in waiting { request.finish(with: WebResponses.error(503, "notesd is stopping", closes: true)) }
        MHD_stop_daemon(handle.pointer)
        deadlines.stop()
        retainedSelf.withLock { retained in
            retained?.release()
            retained = nil
        }
    }

    deinit {
        // `stop()` ran (the callbacks held `self` until then); only the logger is left.
        logger.pointer.deinitialize(count: 1)
        logger.pointer.deallocate()
    }

    /// Open HTTP connections, for `status`.
    public var openConnections: Int {
        daemon.withLock { handle in handle.map { Int(notesd_mhd_current_connections($0.pointer)) } ?? 0 }
    }
}

public enum WebServerError: Error, Hashable, Sendable, CustomStringConvertible {
    case cannotStart

    public var description: String {
        switch self {
        case .cannotStart: "libmicrohttpd could not start the web server (see the log line before this one)"
        }
    }
}
