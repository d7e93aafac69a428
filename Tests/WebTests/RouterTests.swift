import Control
import Foundation
import Testing
import Web

/// The pure request handling (docs/web.md, "Security"), without sockets.
@Suite struct RouterTests {
    static let port: UInt16 = 41234
    static let router = WebRouter(port: port, maximumRPCBodyBytes: 1000)
    static let origin = "http://127.0.0.1:\(port)"
    static let session = "live-session"

    static func head(_ method: String = "POST", _ path: String = "/api/rpc", host: String? = "127.0.0.1:\(port)", origin: String? = RouterTests.origin,
                     session: String? = RouterTests.session, extra: [HTTPHeader] = []) -> HTTPRequestHead {
        var headers: [HTTPHeader] = []
        if let host { headers.append(HTTPHeader("Host", host)) }
        if let origin { headers.append(HTTPHeader("Origin", origin)) }
        if let session { headers.append(HTTPHeader("Authorization", "Bearer \(session)")) }
        return HTTPRequestHead(method: method, path: path, headers: headers + extra)
    }

    static func route(_ head: HTTPRequestHead, body: String = "") -> WebAction {
        router.route(HTTPRequest(head: head, body: Data(body.utf8)), isSession: { $0 == session })
    }

    static func response(_ action: WebAction) -> HTTPResponse? {
        if case .respond(let response) = action { return response }
        return nil
    }

    static let statusRequest = #"{"jsonrpc":"2.0","id":1,"method":"status"}"#

    @Test func aGoodRPCRequestIsDispatched() throws {
        guard case .rpc(let request, let session) = Self.route(Self.head(), body: Self.statusRequest) else {
            Issue.record("not dispatched")
            return
        }
        #expect(request.method == "status")
        #expect(request.id == .number(1))
        #expect(session == Self.session)
    }

    @Test(arguments: ["localhost:41234", "[::1]:41234", "127.0.0.1:41234"])
    func eachLoopbackHostIsServed(host: String) {
        let action = Self.route(Self.head(host: host, origin: "http://\(host)"), body: Self.statusRequest)
        guard case .rpc = action else { Issue.record("\(host) refused: \(String(describing: Self.response(action)))"); return }
    }

    @Test(arguments: ["evil.example:41234", "127.0.0.1", "127.0.0.1:80", "LOCALHOST:41234", "127.0.0.2:41234", ""])
    func anyOtherHostIsRefusedFirst(host: String) throws {
        // Even a request that would fail every later check answers "wrong Host".
        let response = try #require(Self.response(Self.route(Self.head(host: host, origin: nil, session: nil))))
        #expect(response.status == 421)
        #expect(response.closesConnection)
        #expect(String(decoding: response.body, as: UTF8.self).contains("127.0.0.1:41234"))
    }

    @Test func noHostOrTwoHostsAreRefused() throws {
        #expect(Self.response(Self.route(Self.head(host: nil)))?.status == 421)
        let twice = Self.head(extra: [HTTPHeader("host", "127.0.0.1:41234")])
        #expect(Self.response(Self.route(twice, body: Self.statusRequest))?.status == 421)
    }

    @Test func aPOSTNeedsOurOrigin() throws {
        for origin in [nil, "http://evil.example", "http://127.0.0.1:41235", "https://127.0.0.1:41234", "null"] {
            let response = try #require(Self.response(Self.route(Self.head(origin: origin), body: Self.statusRequest)), "\(origin ?? "none") passed")
            #expect(response.status == 403, "\(origin ?? "none")")
        }
        // The origin must be the one the Host names.
        #expect(Self.response(Self.route(Self.head(host: "localhost:41234", origin: Self.origin), body: Self.statusRequest))?.status == 403)
        // Login too, although it needs no session.
        #expect(Self.response(Self.route(Self.head("POST", "/api/login", origin: nil, session: nil), body: #"{"token":"x"}"#))?.status == 403)
    }

    @Test func theEventStreamAllowsNoOriginButRefusesAForeignOne() throws {
        guard case .events(nil, _) = Self.route(Self.head("GET", "/api/events", origin: nil)) else { Issue.record("refused"); return }
        #expect(Self.response(Self.route(Self.head("GET", "/api/events", origin: "http://evil.example")))?.status == 403)
        let resumed = Self.route(Self.head("GET", "/api/events", origin: nil, extra: [HTTPHeader("Last-Event-ID", "abc-3")]))
        guard case .events("abc-3", _) = resumed else { Issue.record("Last-Event-ID not passed on"); return }
    }

    @Test func everyAPIPathButLoginNeedsALiveSession() throws {
        for (method, path) in [("POST", "/api/rpc"), ("GET", "/api/events"), ("GET", "/api/unknown"), ("GET", "/api")] {
            for session in [nil, "wrong", String(repeating: "a", count: 300)] {
                let response = try #require(Self.response(Self.route(Self.head(method, path, session: session), body: Self.statusRequest)))
                #expect(response.status == 401, "\(method) \(path) with \(session ?? "no session")")
                #expect(response.header("WWW-Authenticate") == "Bearer")
            }
        }
        let malformed = Self.head(session: nil, extra: [HTTPHeader("Authorization", "Basic \(Self.session)")])
        #expect(Self.response(Self.route(malformed, body: Self.statusRequest))?.status == 401)
        guard case .login("t0ken") = Self.route(Self.head("POST", "/api/login", session: nil), body: #"{"token":"t0ken"}"#) else {
            Issue.record("login refused")
            return
        }
        #expect(Self.response(Self.route(Self.head("POST", "/api/login", session: nil), body: "token=x"))?.status == 400)
    }

    @Test func watchAndLoginTokensAreNotServedOverHTTP() throws {
        for method in ["watch", "web.loginToken"] {
            let response = try #require(Self.response(Self.route(Self.head(), body: #"{"jsonrpc":"2.0","id":5,"method":"\#(method)"}"#)))
            #expect(response.status == 200)
            let answer = try JSONDecoder().decode(ErrorLine.self, from: response.body)
            #expect(answer.id == 5)
            #expect(answer.error.code == ControlErrorCode.methodNotFound.rawValue)
        }
    }

    struct ErrorLine: Decodable {
        struct Detail: Decodable { let code: Int; let message: String }
        let id: Int?
        let error: Detail
    }

    @Test func rpcBodiesAreReadLikeControlSocketLines() throws {
        // Exactly the bytes the socket would answer for the same line.
        for line in ["not json", "[1,2]", #"{"id":1}"#, #"{"jsonrpc":"1.0","id":2,"method":"status"}"#] {
            let response = try #require(Self.response(Self.route(Self.head(), body: line)))
            guard case .failure(let rejection) = IncomingRequest.parse(Data(line.utf8)) else { Issue.record("\(line) parsed"); return }
            #expect(response.body == rejection.responseLine)
        }
        // One trailing newline is allowed, as it ends a line on the socket.
        guard case .rpc = Self.route(Self.head(), body: Self.statusRequest + "\n") else { Issue.record("newline refused"); return }
        // Over the cap: the socket's own lineTooLong error, and the connection closes.
        let big = Self.route(Self.head(), body: String(repeating: " ", count: 1001))
        let response = try #require(Self.response(big))
        #expect(response.status == 413)
        #expect(response.closesConnection)
        #expect(response.body == ControlWire.error(id: nil, .lineTooLong(maximum: 1000)))
        #expect(Self.router.admit(Self.head(), isSession: { $0 == Self.session }) == .readBody(limit: 1000))
    }

    @Test func staticFilesStayInsideTheWebRoot() throws {
        func file(_ path: String) -> String? {
            if case .file(let file, _) = Self.route(Self.head("GET", path, origin: nil, session: nil)) { return file }
            return nil
        }
        #expect(file("/") == "index.html")
        #expect(file("/assets/app.js") == "assets/app.js")
        #expect(file("/assets/fonts/a-b_c.woff2") == "assets/fonts/a-b_c.woff2")
        for path in ["/assets/../notes.db", "/assets/.hidden", "/assets//x", "/assets/", "/etc/passwd", "/assets/a b", "/assets/%2e%2e/x", "/assets/\u{0}"] {
            #expect(file(path) == nil, "\(path) served")
            #expect(Self.response(Self.route(Self.head("GET", path, origin: nil, session: nil)))?.status == 404)
        }
        // Other methods are refused as a class.
        #expect(Self.response(Self.route(Self.head("PUT", "/", origin: nil, session: nil)))?.status == 405)
        #expect(Self.response(Self.route(Self.head("POST", "/", session: nil)))?.status == 405)
    }

    @Test func everyResponseCarriesTheSecurityHeadersAndNoCookieOrCORS() throws {
        var responses: [HTTPResponse] = [
            WebResponses.error(400, "x"), WebResponses.rpc(Data("{}".utf8)), WebResponses.json(["a": 1]),
            WebResponses.file(Data("x".utf8), path: "a.js"), WebResponses.appNotInstalled(webRoot: "/x<y"),
        ]
        for head in [Self.head(host: "evil:1"), Self.head(origin: nil), Self.head(session: nil), Self.head("GET", "/nothing", origin: nil, session: nil)] {
            if let response = Self.response(Self.route(head)) { responses.append(response) }
        }
        #expect(responses.count == 9)
        for response in responses {
            #expect(response.header("Content-Security-Policy") == "default-src 'self'; script-src 'self'; object-src 'none'; frame-ancestors 'none'; base-uri 'none'")
            #expect(response.header("X-Content-Type-Options") == "nosniff")
            #expect(response.header("Referrer-Policy") == "no-referrer")
            #expect(response.header("Set-Cookie") == nil)
            #expect(!response.headers.contains { $0.name.lowercased().hasPrefix("access-control-") })
        }
        // Error bodies are JSON with a message.
        let error = try JSONSerialization.jsonObject(with: WebResponses.error(401, "sign in").body) as? [String: [String: Any]]
        #expect(error?["error"]?["message"] as? String == "sign in")
        #expect(error?["error"]?["status"] as? Int == 401)
    }

    /// Error bodies are written without `JSONEncoder` (it dominated the routing's cost), so
    /// check they are the very bytes it would write, escapes included.
    @Test(arguments: ["sign in", "quote \" and backslash \\ and /slash/", "tab\tnewline\ncr\rnul\u{0}bell\u{7}esc\u{1b}del\u{7f}", "crème brûlée 🍐 \u{2028}", ""])
    func errorBodiesAreWhatJSONEncoderWrites(message: String) throws {
        struct Body: Encodable {
            struct Detail: Encodable {
                let status: Int
                let message: String
            }
            let error: Detail
        }
        let expected = try ControlJSON.encoder().encode(Body(error: .init(status: 413, message: message))) + Data("\n".utf8)
        #expect(WebResponses.error(413, message).body == expected)
    }

    /// Header names match ASCII-case-insensitively, and only so.
    @Test func headerNamesMatchIgnoringASCIICase() {
        let head = HTTPRequestHead(method: "GET", path: "/", headers: [
            HTTPHeader("HOST", "a"), HTTPHeader("host", "b"), HTTPHeader("Hos", "c"), HTTPHeader("Hoſt", "d"), HTTPHeader("Ho5t", "e"), HTTPHeader("Hosts", "f"),
        ])
        #expect(head.values("Host") == ["a", "b"])
        // `[` and `{` differ by the same bit as `A` and `a`: not letters, so not folded.
        #expect(HTTPRequestHead(method: "GET", path: "/", headers: [HTTPHeader("X[", "1")]).values("X{").isEmpty)
        #expect(WebResponses.error(400, "x").header("content-security-policy") != nil)
    }

    /// libmicrohttpd's own refusals become ours: the same status, our headers, a close.
    @Test(arguments: [400, 413, 414, 431, 500, 501, 505])
    func libraryRefusalsBecomeOurs(status: Int) throws {
        let response = WebResponses.libraryError(status: status)
        #expect(response.status == status)
        #expect(response.closesConnection)
        #expect(response.header("Content-Security-Policy") == WebHeaders.contentSecurityPolicy)
        let json = try JSONSerialization.jsonObject(with: response.body) as? [String: [String: Any]]
        #expect(json?["error"]?["status"] as? Int == status)
        #expect((json?["error"]?["message"] as? String)?.isEmpty == false)
    }
}

@Suite struct EventRingTests {
    @Test func resumesAfterAnIdAndReportsGaps() {
        var ring = EventRing(capacity: 3, epoch: "e1")
        #expect(ring.latestID == "e1-0")
        #expect(ring.events(after: "e1-0") == .events([]))
        for number in 1...5 { ring.append(type: "t", data: Data("\(number)".utf8)) }
        #expect(ring.latestID == "e1-5")
        // Held: 3, 4, 5.
        #expect(ring.events(after: "e1-2").ids == ["e1-3", "e1-4", "e1-5"])
        #expect(ring.events(after: "e1-4").ids == ["e1-5"])
        #expect(ring.events(after: "e1-5") == .events([]))
        #expect(ring.events(after: "e1-1") == .gap)  // 2 was dropped
        #expect(ring.events(after: "e1-9") == .gap)  // from the future
        #expect(ring.events(after: "e0-4") == .gap)  // another run
        #expect(ring.events(after: "garbage") == .gap)
        ring.restart(epoch: "e2")
        #expect(ring.events(after: "e1-5") == .gap)
        #expect(ring.latestID == "e2-0")
    }

    @Test func framesAreSSE() {
        let frame = String(decoding: ServerSentEvents.event(id: "e-1", type: "noteChanged", data: Data("{\"a\":\"b\"}\n".utf8)), as: UTF8.self)
        #expect(frame == "id: e-1\nevent: noteChanged\ndata: {\"a\":\"b\"}\n\n")
    }
}

extension EventRing.Resumption {
    var ids: [String] {
        if case .events(let entries) = self { return entries.map(\.id) }
        return []
    }
}

@Suite struct AuthorityTests {
    final class MemoryStore: WebSessionStore, @unchecked Sendable {
        let lock = NSLock()
        var records: [String: WebSessionRecord] = [:]

        func loadSessions() -> [WebSessionRecord] { lock.withLock { Array(records.values) } }
        func saveSession(_ record: WebSessionRecord) { lock.withLock { records[record.hash] = record } }
        func deleteSessions(hashes: [String]) { lock.withLock { for hash in hashes { records[hash] = nil } } }
    }

    final class Clock: @unchecked Sendable {
        let lock = NSLock()
        var now: Int64 = 1_000_000_000_000
        func advance(_ milliseconds: Int64) { lock.withLock { now += milliseconds } }
        var read: @Sendable () -> Int64 { { [self] in lock.withLock { now } } }
    }

    @Test func aTokenWorksOnceAndOnlyForTwoMinutes() throws {
        let clock = Clock()
        let authority = WebAuthority(store: MemoryStore(), clock: clock.read)
        let (token, expires) = authority.issueLoginToken()
        #expect(token.count == 43)  // 256 bits, base64url
        #expect(expires == clock.now + 120_000)
        let session = try #require(authority.redeem(token: token))
        #expect(authority.redeem(token: token) == nil)
        #expect(authority.isSession(session))
        #expect(!authority.isSession(token))

        let late = authority.issueLoginToken().token
        clock.advance(120_001)
        #expect(authority.redeem(token: late) == nil)
        #expect(authority.redeem(token: "made-up") == nil)
    }

    @Test func sessionsPersistHashedAndExpireAfterThirtyIdleDays() throws {
        let clock = Clock()
        let store = MemoryStore()
        let first = WebAuthority(store: store, clock: clock.read)
        let session = try #require(first.redeem(token: first.issueLoginToken().token))
        #expect(store.records.count == 1)
        #expect(store.records.keys.first == first.sessionHash(session))
        #expect(!store.records.keys.contains(session))

        // A restart: a new authority over the same store.
        clock.advance(29 * 86_400_000)
        let second = WebAuthority(store: store, clock: clock.read)
        #expect(second.isSession(session))  // used: the idle clock restarts, and is saved
        clock.advance(29 * 86_400_000)
        let third = WebAuthority(store: store, clock: clock.read)
        #expect(third.isSession(session))
        clock.advance(30 * 86_400_000 + 1)
        #expect(!third.isSession(session))
        #expect(store.records.isEmpty)
    }

    /// A session is bound to the port it was made on: a page served on another port that
    /// reads it from that origin's storage cannot use it here.
    @Test func aSessionWorksOnlyOnThePortItWasMadeOn() throws {
        let store = MemoryStore()
        let made = WebAuthority(store: store, scope: "7480")
        let session = try #require(made.redeem(token: made.issueLoginToken().token))
        #expect(WebAuthority(store: store, scope: "7480").isSession(session))
        #expect(!WebAuthority(store: store, scope: "7481").isSession(session))
    }

    @Test func logoutAllEndsEverySession() throws {
        let store = MemoryStore()
        let authority = WebAuthority(store: store)
        let sessions = try (0..<3).map { _ in try #require(authority.redeem(token: authority.issueLoginToken().token)) }
        #expect(authority.sessions().count == 3)
        #expect(authority.revokeAll() == 3)
        #expect(sessions.allSatisfy { !authority.isSession($0) })
        #expect(store.records.isEmpty)
    }
}
