import Control
import Foundation

/// What the server does with a request that passed every check.
public enum WebAction: Sendable {
    /// Answer with this response (a refusal, an error, or a fixed page).
    case respond(HTTPResponse)
    /// `POST /api/login`: exchange this one-time token for a session.
    case login(token: String)
    /// `POST /api/rpc`: dispatch this control request, as the control socket would; the
    /// session's secret is passed on so that its idle clock restarts.
    case rpc(IncomingRequest, session: String)
    /// `GET /api/events`: stream events from after `lastEventID` (absent: from now).
    case events(lastEventID: String?, session: String)
    /// `GET /` or `/assets/…`: the app file at this path relative to the web root (checked:
    /// no `..`, no hidden names, only `[A-Za-z0-9._-]` segments). `headOnly` for `HEAD`.
    case file(path: String, headOnly: Bool)
}

/// What the server does once it has a request's head, before reading the body.
public enum WebAdmission: Hashable, Sendable {
    /// Refused: send this and close (the body is never read).
    case refuse(HTTPResponse)
    /// Read a body of at most this many bytes, then call `WebRouter.route`.
    case readBody(limit: Int)
}

/// The HTTP layer of docs/web.md as a pure function: a request (and the set of live
/// sessions, as a predicate) in, an action out. No sockets, no clocks, no files: the
/// server (`WebServer`) performs the action, the fuzz target and the unit tests call this
/// directly. Checks run in the documented order: Host, method, Origin, session.
public struct WebRouter: Sendable {
    /// The port the server is reachable on; the only `Host` values accepted name it.
    public let port: UInt16
    /// The largest `POST /api/rpc` body: the control socket's line cap, so that both
    /// transports accept and refuse the same requests.
    public let maximumRPCBodyBytes: Int
    /// `POST /api/login` carries a token of a few dozen bytes.
    public static let maximumLoginBodyBytes = 4096
    /// A session or token longer than this is not one of ours (they are 43 characters).
    public static let maximumCredentialLength = 256

    public init(port: UInt16, maximumRPCBodyBytes: Int = LineFramer.defaultMaximumLineLength) {
        self.port = port
        self.maximumRPCBodyBytes = maximumRPCBodyBytes
    }

    /// The `Host` values a browser sends for this server: anything else is a DNS
    /// rebinding attempt (a foreign name resolving to 127.0.0.1) or a misdirected request.
    public var allowedHosts: [String] { ["127.0.0.1:\(port)", "localhost:\(port)", "[::1]:\(port)"] }

    /// Methods the server has no use for are refused as a class, whatever the path.
    static let knownMethods: Set<String> = ["GET", "HEAD", "POST"]

    /// Control methods refused over HTTP, with why: `watch` is `/api/events`, and login
    /// tokens come only from the Unix socket (its owner check is what makes a token mean
    /// "the user at this machine").
    static let socketOnlyMethods: [String: String] = [
        "watch": "watch is not served over HTTP; read GET /api/events instead",
        "web.loginToken": "web.loginToken is served only on the control socket; run notesctl ui",
    ]

    /// The checks that need only the head; `isSession` says whether a bearer secret names a
    /// live session.
    public func admit(_ head: HTTPRequestHead, isSession: (String) -> Bool) -> WebAdmission {
        switch check(head, isSession: isSession) {
        case .failure(let refusal): .refuse(refusal.response)
        case .success(let route): .readBody(limit: route.bodyLimit(self))
        }
    }

    /// The whole decision for a request with its body.
    public func route(_ request: HTTPRequest, isSession: (String) -> Bool) -> WebAction {
        let route: Route
        switch check(request.head, isSession: isSession) {
        case .failure(let refusal): return .respond(refusal.response)
        case .success(let checked): route = checked
        }
        guard request.body.count <= route.bodyLimit(self) else { return .respond(oversized(request.head)) }
        switch route {
        case .login:
            guard let token = Self.loginToken(from: request.body) else {
                return .respond(WebResponses.error(400, "send {\"token\": \"…\"} with the token from the notesctl ui link"))
            }
            return .login(token: token)
        case .rpc(let session):
            var line = request.body
            // One trailing newline is what ends a line on the socket; allow it here too.
            if line.last == UInt8(ascii: "\n") { line.removeLast() }
            switch IncomingRequest.parse(line) {
            case .failure(let rejection):
                return .respond(WebResponses.rpc(rejection.responseLine))
            case .success(let parsed):
                if let why = Self.socketOnlyMethods[parsed.method] {
                    return .respond(WebResponses.rpc(ControlWire.error(id: parsed.id, RPCError(code: .methodNotFound, message: why))))
                }
                return .rpc(parsed, session: session)
            }
        case .events(let session):
            let lastID = request.head.values("Last-Event-ID").last
            return .events(lastEventID: lastID.flatMap { $0.isEmpty ? nil : $0 }, session: session)
        case .file(let path):
            return .file(path: path, headOnly: request.head.method == "HEAD")
        case .notFound(let message):
            return .respond(WebResponses.error(404, message))
        }
    }

    /// The answer to a body over its route's limit (known from `Content-Length`, or found
    /// while reading): for `/api/rpc`, the control socket's own `lineTooLong` error.
    public func oversized(_ head: HTTPRequestHead) -> HTTPResponse {
        if head.path == "/api/rpc" {
            return WebResponses.rpc(ControlWire.error(id: nil, .lineTooLong(maximum: maximumRPCBodyBytes)), status: 413, closes: true)
        }
        let limit = head.path == "/api/login" ? Self.maximumLoginBodyBytes : 0
        return WebResponses.error(413, "the request body is larger than \(limit) bytes", closes: true)
    }

    // MARK: - Checks

    enum Route: Hashable {
        case login
        case rpc(session: String)
        case events(session: String)
        case file(String)
        case notFound(String)

        func bodyLimit(_ router: WebRouter) -> Int {
            switch self {
            case .login: WebRouter.maximumLoginBodyBytes
            case .rpc: router.maximumRPCBodyBytes
            case .events, .file, .notFound: 0
            }
        }
    }

    struct Refusal: Error {
        let response: HTTPResponse
    }

    func check(_ head: HTTPRequestHead, isSession: (String) -> Bool) -> Result<Route, Refusal> {
        func refuse(_ status: Int, _ message: String, _ extra: [HTTPHeader] = []) -> Result<Route, Refusal> {
            // Refusals close: the body (if any) is not read, and the client is not one we serve.
            .failure(Refusal(response: WebResponses.error(status, message, closes: true, extraHeaders: extra)))
        }
        // 1. Host: exactly one, exactly one of ours (DNS rebinding).
        let hosts = head.values("Host")
        guard hosts.count == 1, let host = hosts.first, allowedHosts.contains(host) else {
            return refuse(421, "this server answers only to Host \(allowedHosts.joined(separator: ", ")); open the link notesctl ui prints")
        }
        // 2. Method.
        guard Self.knownMethods.contains(head.method) else {
            return refuse(405, "method \(Self.printable(head.method)) is not allowed here", [HTTPHeader("Allow", "GET, HEAD, POST")])
        }
        // 3. Origin: required on every POST, and where present on the events stream it must
        // be ours too (browsers send none on a same-origin GET).
        let servedOrigin = "http://\(host)"
        let origins = head.values("Origin")
        let isAPI = head.path == "/api" || head.path.hasPrefix("/api/")
        if head.method == "POST" {
            guard origins == [servedOrigin] else {
                return refuse(403, origins.isEmpty
                    ? "a POST needs an Origin header naming \(servedOrigin)"
                    : "cross-origin requests are refused; this API serves only pages from \(servedOrigin)")
            }
        } else if isAPI, !origins.isEmpty, origins != [servedOrigin] {
            return refuse(403, "cross-origin requests are refused; this API serves only pages from \(servedOrigin)")
        }
        guard isAPI else {
            guard head.method != "POST" else { return refuse(405, "only /api/rpc and /api/login take a POST", [HTTPHeader("Allow", "GET, HEAD")]) }
            return .success(Self.staticRoute(head.path))
        }
        // 4. Session, for everything under /api/ but the login itself.
        if head.path == "/api/login" {
            guard head.method == "POST" else { return refuse(405, "POST /api/login {\"token\": …}", [HTTPHeader("Allow", "POST")]) }
            return .success(.login)
        }
        let authorizations = head.values("Authorization")
        guard authorizations.count == 1, let session = Self.bearer(authorizations[0]), isSession(session) else {
            return refuse(401, authorizations.isEmpty
                ? "sign in first: run notesctl ui and open the link it prints, then send Authorization: Bearer SESSION"
                : "the session is unknown or expired; run notesctl ui to sign in again",
                [HTTPHeader("WWW-Authenticate", "Bearer")])
        }
        switch head.path {
        case "/api/rpc":
            guard head.method == "POST" else { return refuse(405, "POST a JSON-RPC request to /api/rpc", [HTTPHeader("Allow", "POST")]) }
            return .success(.rpc(session: session))
        case "/api/events":
            guard head.method == "GET" else { return refuse(405, "GET /api/events", [HTTPHeader("Allow", "GET")]) }
            return .success(.events(session: session))
        default:
            return .success(.notFound("no API at \(Self.printable(head.path)); the API is POST /api/rpc, GET /api/events and POST /api/login"))
        }
    }

    /// `/` is the app's `index.html`; `/assets/…` its other files.
    static func staticRoute(_ path: String) -> Route {
        if path == "/" || path == "/index.html" { return .file("index.html") }
        guard path.hasPrefix("/assets/") else { return .notFound("nothing at \(printable(path)); the app is at /") }
        let segments = path.dropFirst().split(separator: "/", omittingEmptySubsequences: false)
        for segment in segments {
            guard !segment.isEmpty, segment.first != ".", segment.utf8.allSatisfy(isFileNameByte) else {
                return .notFound("nothing at \(printable(path))")
            }
        }
        return .file(segments.joined(separator: "/"))
    }

    /// `[A-Za-z0-9._-]`: the bytes an app file's path segment may hold.
    static func isFileNameByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
             UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "-"): true
        default: false
        }
    }

    /// The secret of `Authorization: Bearer SECRET` (scheme case-insensitive).
    static func bearer(_ value: String) -> String? {
        let parts = value.split(separator: " ", maxSplits: 1, omittingEmptySubsequences: true)
        guard parts.count == 2, parts[0].lowercased() == "bearer" else { return nil }
        let secret = trimmingSpaces(parts[1])
        guard !secret.isEmpty, secret.utf8.count <= maximumCredentialLength else { return nil }
        return secret
    }

    private struct LoginBody: Decodable {
        let token: String
    }

    static func loginToken(from body: Data) -> String? {
        guard let parsed = try? JSONDecoder().decode(LoginBody.self, from: body) else { return nil }
        let token = trimmingSpaces(Substring(parsed.token))
        guard !token.isEmpty, token.utf8.count <= maximumCredentialLength else { return nil }
        return token
    }

    /// Without leading and trailing spaces and tabs (the only whitespace a header value or
    /// a pasted token carries), in Swift, not through `NSString`.
    static func trimmingSpaces(_ text: Substring) -> String {
        let isBlank: (Character) -> Bool = { $0 == " " || $0 == "\t" }
        guard let first = text.firstIndex(where: { !isBlank($0) }), let last = text.lastIndex(where: { !isBlank($0) }) else { return "" }
        return String(text[first...last])
    }

    /// A path or method for a message: at most 200 characters, control characters escaped.
    static func printable(_ text: String) -> String {
        let shown = text.unicodeScalars.prefix(200).map { $0.properties.generalCategory == .control ? "\\u{\(String($0.value, radix: 16))}" : String($0) }.joined()
        return "\"" + shown + (text.unicodeScalars.count > 200 ? "…" : "") + "\""
    }
}
