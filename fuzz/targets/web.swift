import Control
import Foundation

/// libFuzzer target: the web server's request handling (`WebRouter`), the pure function
/// from a parsed request to an action (libmicrohttpd parses from sockets only, so the
/// fuzzer starts after it). The input is read as `METHOD PATH`, header lines, a blank line
/// and the body. Whatever comes in: no crash, every response carries the security headers
/// and never a cookie or CORS header, nothing is dispatched without our Host, our Origin (on
/// POST) and the live session, and the head check agrees with the full route. Also feeds the
/// event ring's `Last-Event-ID` parsing.
struct WebFuzzFixture {
    static let port: UInt16 = 7480
    static let session = "live-session-secret"
    let router = WebRouter(port: WebFuzzFixture.port, maximumRPCBodyBytes: 4096)
    let ring: EventRing
    let seeds: [(name: String, bytes: [UInt8])]

    static let shared = WebFuzzFixture()

    private init() {
        var ring = EventRing(capacity: 8, epoch: "0badcafe")
        for number in 0..<12 { ring.append(type: "noteChanged", data: Data("{\"n\":\(number)}".utf8)) }
        self.ring = ring
        let host = "Host: 127.0.0.1:7480\nOrigin: http://127.0.0.1:7480\n"
        let auth = "Authorization: Bearer \(Self.session)\n"
        let texts: [(String, String)] = [
            ("rpc", "POST /api/rpc\n\(host)\(auth)\n{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"notes.list\",\"params\":{}}"),
            ("watch", "POST /api/rpc\n\(host)\(auth)\n{\"jsonrpc\":\"2.0\",\"id\":\"w\",\"method\":\"watch\"}"),
            ("login", "POST /api/login\n\(host)\n{\"token\":\"abc\"}"),
            ("events", "GET /api/events\nHost: localhost:7480\n\(auth)Last-Event-ID: 0badcafe-9\n\n"),
            ("asset", "GET /assets/app.js\nHost: [::1]:7480\n\n"),
            ("rebinding", "POST /api/rpc\nHost: evil.example:7480\nOrigin: http://evil.example:7480\n\(auth)\n{}"),
        ]
        seeds = texts.map { ($0.0, Array($0.1.utf8)) }
    }

    /// The input as a request: lossy UTF-8 for the head, raw bytes for the body.
    static func request(_ bytes: [UInt8]) -> HTTPRequest {
        // The first blank line (a plain loop: Foundation's generic `firstRange(of:)` cost more
        // than the whole router).
        var separator: Int?
        var index = 1
        while index < bytes.count {
            if bytes[index] == 0x0A, bytes[index - 1] == 0x0A {
                separator = index - 1
                break
            }
            index += 1
        }
        let headBytes = separator.map { bytes[..<$0] } ?? bytes[...]
        let body = separator.map { Data(bytes[($0 + 2)...]) } ?? Data()
        var lines = String(decoding: headBytes, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        let requestLine = lines.isEmpty ? "" : lines.removeFirst()
        let parts = requestLine.split(separator: " ", maxSplits: 1)
        let method = parts.first.map(String.init) ?? ""
        let path = parts.count > 1 ? String(parts[1]) : "/"
        let headers = lines.map { line -> HTTPHeader in
            guard let colon = line.firstIndex(of: ":") else { return HTTPHeader(line, "") }
            // As libmicrohttpd hands values over: without surrounding spaces and tabs.
            return HTTPHeader(String(line[..<colon]), WebRouter.trimmingSpaces(line[line.index(after: colon)...]))
        }
        return HTTPRequest(head: HTTPRequestHead(method: method, path: path, headers: headers), body: body)
    }

    func check(_ response: HTTPResponse) {
        guard response.header("Content-Security-Policy") == WebHeaders.contentSecurityPolicy,
              response.header("X-Content-Type-Options") == "nosniff", response.header("Referrer-Policy") == "no-referrer"
        else { fatalError("a response lacks the security headers: \(response.status) \(response.headers)") }
        guard response.header("Set-Cookie") == nil, !response.headers.contains(where: { $0.name.lowercased().hasPrefix("access-control-") }) else {
            fatalError("a response carries a cookie or a CORS header: \(response.headers)")
        }
    }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzWeb(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let fixture = WebFuzzFixture.shared
    FuzzSupport.writeSeedsIfRequested(fixture.seeds)
    guard let data else { return 0 }
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    let request = WebFuzzFixture.request(bytes)
    let isSession: (String) -> Bool = { $0 == WebFuzzFixture.session }
    let head = request.head
    let hosts = head.values("Host")
    let ourHost = hosts.count == 1 && fixture.router.allowedHosts.contains(hosts[0])

    let admission = fixture.router.admit(head, isSession: isSession)
    let action = fixture.router.route(request, isSession: isSession)
    switch (admission, action) {
    case (.refuse(let early), .respond(let late)):
        fixture.check(early)
        guard early == late else { fatalError("admit and route disagree: \(early.status) vs \(late.status)") }
    case (.refuse(let early), _):
        fatalError("admit refused with \(early.status) but route acted")
    case (.readBody, _):
        guard ourHost else { fatalError("a request for Host \(hosts) got past the Host check") }
    }
    switch action {
    case .respond(let response):
        fixture.check(response)
        if !ourHost, response.status != 421 { fatalError("a foreign Host got \(response.status), not 421") }
    case .rpc(let incoming, let session):
        guard session == WebFuzzFixture.session, head.method == "POST", head.values("Origin") == ["http://\(hosts[0])"] else {
            fatalError("dispatched without our session and Origin: \(head)")
        }
        guard incoming.method != "watch", incoming.method != "web.loginToken" else { fatalError("\(incoming.method) dispatched over HTTP") }
    case .events(let lastID, let session):
        guard session == WebFuzzFixture.session, head.values("Origin").allSatisfy({ $0 == "http://\(hosts[0])" }) else {
            fatalError("an event stream opened without our session and Origin")
        }
        if let lastID { _ = fixture.ring.events(after: lastID) }
    case .login(let token):
        guard head.method == "POST", !token.isEmpty else { fatalError("a login from a \(head.method)") }
    case .file(let path, _):
        let segments = path.split(separator: "/", omittingEmptySubsequences: false)
        guard !path.hasPrefix("/"), path == "index.html" || path.hasPrefix("assets/"), segments.allSatisfy({ !$0.isEmpty && !$0.hasPrefix(".") }) else {
            fatalError("a file path escaped the web root: \(path)")
        }
    }
    // libmicrohttpd's own refusals are replaced with ours (any status it might use).
    let libraryStatus = 400 + Int(bytes.first ?? 0) % 200
    let replaced = WebResponses.libraryError(status: libraryStatus)
    fixture.check(replaced)
    guard replaced.status == libraryStatus, replaced.closesConnection else { fatalError("libraryError(\(libraryStatus)) answered \(replaced.status)") }
    // The resumption parser takes any text.
    _ = fixture.ring.events(after: String(decoding: bytes.prefix(64), as: UTF8.self))
    return 0
}
