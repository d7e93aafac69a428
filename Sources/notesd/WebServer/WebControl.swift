#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import Control
import Foundation
import Synchronization
import Web

/// The daemon's web server as the shell and the engine see it (docs/web.md): the socket
/// is bound before the engine starts, the engine then attaches session storage and the
/// event feed, and `start` serves with the same control dispatch as the Unix socket.
final class WebControl: Sendable {
    let config: WebConfig
    let listener: WebListener
    private let log: Log
    private let parts = Mutex<Parts?>(nil)
    private let server = Mutex<WebServer?>(nil)
    /// Numbers web requests for the dispatch; counted from 2^63 so they never collide with
    /// the control socket's connection ids in logs.
    private let requestNumbers = RequestNumbers()

    private final class RequestNumbers: Sendable {
        private let last = Atomic<UInt64>(1 << 63)

        func next() -> UInt64 { last.add(1, ordering: .relaxed).newValue }
    }

    private struct Parts: Sendable {
        let authority: WebAuthority
        let events: EventHub
    }

    private init(config: WebConfig, listener: WebListener, log: Log) {
        self.config = config
        self.listener = listener
        self.log = log
    }

    /// Binds the listening socket (with the port fallback).
    static func bind(_ config: WebConfig, log: Log) throws -> WebControl {
        let listener = try WebListener.bind(config.listen, log: log)
        return WebControl(config: config, listener: listener, log: log)
    }

    /// The engine's part: where sessions persist, and how to hear its events (`tap` is
    /// `ControlWatchers.addTap`). Called once, before `start`.
    func attach(store: any WebSessionStore, tap: (_ isListening: @escaping @Sendable () -> Bool, _ receive: @escaping @Sendable (ControlEvent) -> Void) -> Void) {
        let events = EventHub()
        let authority = WebAuthority(store: store, scope: String(listener.address.port))
        tap({ events.isRecording }, { events.publish($0) })
        parts.withLock { $0 = Parts(authority: authority, events: events) }
    }

    /// Serves HTTP; control requests go to `handler` exactly as the control server hands
    /// them over, with an HTTP context.
    func start(handler: any ControlRequestHandler) throws {
        guard let parts = parts.withLock({ $0 }) else { preconditionFailure("WebControl.start before attach") }
        let peer = PeerCredentials(processID: getpid(), userID: getuid(), groupID: getgid())
        let numbers = requestNumbers
        let log = log
        let started = try WebServer(
            listeningSocket: listener.fileDescriptor, port: listener.address.port, webRoot: config.root,
            authority: parts.authority, events: parts.events,
            dispatch: { request, reply in
                let id = ControlConnectionID(rawValue: numbers.next())
                let mailbox = ConnectionMailbox(id: id, waker: nil, maximumUnsentEventBytes: 0)
                // A labelled serial queue per request, as each control connection has one.
                let queue = DispatchQueue(label: "notesd.web.\(id)")
                let context = ControlContext(httpRequest: mailbox, peer: peer, queue: queue)
                queue.async { handler.handle(request, context: context, reply: reply) }
            },
            log: { message in
                // Most of libmicrohttpd's messages are about one client (it went away, sent
                // garbage); running out of descriptors or memory is about the daemon.
                if message.contains("limit") || message.contains("memory") || message.contains("accept") {
                    log.warning(message)
                } else {
                    log.debug(message)
                }
            })
        server.withLock { $0 = started }
        log.info("serving the web app on \(url) (files from \(config.root))")
    }

    func stop() {
        let running = server.withLock { current in
            defer { current = nil }
            return current
        }
        running?.stop()
    }

    /// `http://127.0.0.1:PORT/` (or `[::1]`).
    var url: String {
        let host = listener.address.host.contains(":") ? "[\(listener.address.host)]" : listener.address.host
        return "http://\(host):\(listener.address.port)/"
    }

    var status: WebStatus {
        let parts = parts.withLock { $0 }
        return WebStatus(
            listen: listener.address.description, requested: config.listen.description, fellBack: listener.fellBack, root: config.root,
            sessions: parts?.authority.sessions().count ?? 0, eventStreams: parts?.events.openStreams ?? 0)
    }

    private var authority: WebAuthority {
        guard let parts = parts.withLock({ $0 }) else { preconditionFailure("the web server is used before the engine attached it") }
        return parts.authority
    }

    func loginToken() -> WebLoginTokenResult {
        let (token, expires) = authority.issueLoginToken()
        return WebLoginTokenResult(token: token, url: url + "#login=" + token, expires: Timestamp(millisecondsSince1970: expires))
    }

    func sessions() -> [WebSessionInfo] {
        authority.sessions().map { record in
            WebSessionInfo(
                id: String(record.hash.prefix(12)), created: Timestamp(millisecondsSince1970: record.created),
                lastUsed: Timestamp(millisecondsSince1970: record.lastUsed),
                expires: Timestamp(millisecondsSince1970: record.lastUsed + WebAuthority.sessionIdleLimitMilliseconds))
        }
    }

    /// Signs every browser out: the sessions go, and so do the event streams they opened.
    func logoutAll() -> WebLogoutResult {
        guard let parts = parts.withLock({ $0 }) else { preconditionFailure("the web server is used before the engine attached it") }
        let revoked = parts.authority.revokeAll()
        parts.events.closeAll()
        return WebLogoutResult(revoked: revoked)
    }
}

extension ControlTransport {
    /// `sync {wait}` over HTTP waits 60 s at most: a browser tab must not hold a request
    /// (and a connection slot) for a day. Out-of-range values are left for the engine to
    /// refuse, so both transports give the same error for them.
    func capping(_ params: SyncParams) -> SyncParams {
        guard self == .http, params.wait else { return params }
        var capped = params
        if let timeout = params.timeoutMs, timeout > 60_000, timeout <= 86_400_000 { capped.timeoutMs = 60_000 }
        return capped
    }
}
