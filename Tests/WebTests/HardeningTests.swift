import Foundation
import Testing
import TestSupport
import Web

/// The web server's limits under hostile clients (docs/web.md, "Limits"), against an
/// in-process `WebServer` whose limits the tests can lower: the request deadline, the answers
/// libmicrohttpd writes on its own, and oversized chunked bodies.
@Suite(.serialized) struct HardeningTests {
    /// A client that trickles its head faster than any idle timeout still loses its slot at
    /// the request deadline, with a 408 that carries our headers.
    @Test func aTrickledHeadIsAnswered408AtTheDeadline() async throws {
        try await offThePool {
            let server = try InProcessServer(deadline: .milliseconds(300))
            defer { server.stop() }
            let connection = try Connection(port: server.port, timeoutSeconds: 10)
            let head = Array("GET / HTTP/1.1\r\nHost: 127.0.0.1:\(server.port)\r\nX-Slow: \(String(repeating: "a", count: 2000))\r\n\r\n".utf8)
            // One byte every 20 ms (the idle timeout is 30 s), until the server answers.
            let sent = try connection.trickle(head, everyMilliseconds: 20)
            #expect(sent < head.count, "the whole head went out before the deadline")
            let response = try connection.readResponse()
            #expect(response.status == 408)
            #expect(response.isOurs)
            #expect((response.json?["error"] as? [String: Any])?["status"] as? Int == 408)
            #expect(connection.endsCleanly())
            // The server still serves.
            #expect(try server.get("/").status == 404)
        }
    }

    /// A head that arrived but a body that never does: the deadline covers the body too.
    @Test func aBodyThatNeverArrivesIsAnswered408() async throws {
        try await offThePool {
            let server = try InProcessServer(deadline: .milliseconds(300))
            defer { server.stop() }
            let connection = try Connection(port: server.port, timeoutSeconds: 10)
            try connection.send(server.rpcHead(extra: ["Content-Length: 1000"]) + "{\"jsonrpc\":")
            let response = try connection.readResponse()
            #expect(response.status == 408)
            #expect(response.isOurs)
            #expect(connection.endsCleanly())
        }
    }

    /// On a kept-alive connection the clock restarts when an answer is done: the next request
    /// gets the whole deadline, and a trickled one is cut like the first.
    @Test func aKeptAliveConnectionsNextRequestHasTheDeadlineToo() async throws {
        try await offThePool {
            let server = try InProcessServer(deadline: .milliseconds(500))
            defer { server.stop() }
            let connection = try Connection(port: server.port, timeoutSeconds: 10)
            for _ in 0..<3 {
                try connection.send("GET / HTTP/1.1\r\nHost: 127.0.0.1:\(server.port)\r\n\r\n")
                #expect(try connection.readResponse().status == 404)
            }
            let sent = try connection.trickle(Array("GET / HTTP/1.1\r\nHost: 127.0.0.1:\(server.port)\r\nX-Slow: \(String(repeating: "b", count: 2000))\r\n\r\n".utf8), everyMilliseconds: 20)
            #expect(sent > 0)
            let response = try connection.readResponse()
            #expect(response.status == 408 && response.isOurs)
            #expect(connection.endsCleanly())
        }
    }

    /// A request that arrives whole is never cut, however long its answer takes: the
    /// deadline stops once the body is in (an RPC waits on the engine, parked).
    @Test func aSlowAnswerIsNotCutByTheDeadline() async throws {
        try await offThePool {
            let release = DispatchSemaphore(value: 0)
            let server = try InProcessServer(deadline: .milliseconds(200)) { _, reply in
                DispatchQueue(label: "slow-rpc").async {
                    release.wait()
                    reply(Data(#"{"jsonrpc":"2.0","id":1,"result":"late"}"#.utf8))
                }
            }
            defer { server.stop() }
            let connection = try Connection(port: server.port, timeoutSeconds: 10)
            let body = #"{"jsonrpc":"2.0","id":1,"method":"status"}"#
            try connection.send(server.rpcHead(extra: ["Content-Length: \(body.utf8.count)"]) + body)
            // Several deadlines pass while the answer is held back: nothing arrives.
            #expect(!connection.isReadable(withinMilliseconds: 1000))
            release.signal()
            let response = try connection.readResponse()
            #expect(response.status == 200)
            #expect(response.text.contains("late"))
        }
    }

    /// What libmicrohttpd refuses on its own — requests it cannot parse, heads larger than
    /// its memory, a version it does not speak — is answered with our JSON error and every
    /// security header, and the connection closes.
    static let malformed: [String: (request: String, status: Int)] = [
        "a header line without a colon": ("GET / HTTP/1.1\r\nHost 127.0.0.1\r\n\r\n", 400),
        "HTTP/1.1 without Host": ("GET / HTTP/1.1\r\n\r\n", 400),
        "a Content-Length that is not a number": ("GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: twelve\r\n\r\n", 400),
        "a 100 KB header": ("GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: \(String(repeating: "x", count: 100_000))\r\n\r\n", 431),
        "HTTP/7.0": ("GET / HTTP/7.0\r\nHost: 127.0.0.1\r\n\r\n", 505),
        "not HTTP at all": ("NOT HTTP AT ALL\r\n\r\n", 400),
    ]

    @Test(arguments: malformed.keys.sorted())
    func libmicrohttpdsOwnAnswersCarryOurHeaders(name: String) async throws {
        let (request, status) = try #require(Self.malformed[name])
        try await offThePool {
            let server = try InProcessServer()
            defer { server.stop() }
            let connection = try Connection(port: server.port, timeoutSeconds: 10)
            try? connection.send(request)
            let (heads, body) = try connection.readLibraryAnswer()
            for head in heads {
                #expect(head.status == status)
                #expect(head.isOurs, "\(head.headers)")
                #expect(head.header("Content-Type") == "application/json")
            }
            let json = try JSONSerialization.jsonObject(with: body) as? [String: Any]
            #expect((json?["error"] as? [String: Any])?["status"] as? Int == status, "\(String(decoding: body, as: UTF8.self))")
            #expect(connection.isClosedByServer())
        }
    }

    /// A malformed chunk size after a good head: libmicrohttpd's 400, with our headers.
    @Test func aMalformedChunkIsAnswered400WithOurHeaders() async throws {
        try await offThePool {
            let server = try InProcessServer()
            defer { server.stop() }
            let connection = try Connection(port: server.port, timeoutSeconds: 10)
            try connection.send(server.rpcHead(extra: ["Transfer-Encoding: chunked"]) + "zz\r\nhello\r\n0\r\n\r\n")
            let response = try connection.readResponse()
            #expect(response.status == 400)
            #expect(response.isOurs)
            #expect(connection.isClosedByServer())
        }
    }

    /// A chunked body past the cap (its length unknown up front) is read to its end and
    /// refused with a 413 naming the limit — the control socket's own `lineTooLong` error —
    /// on a connection that then closes cleanly, not with a reset.
    @Test func aChunkedBodyOverTheCapGets413() async throws {
        try await offThePool {
            let server = try InProcessServer(maximumRPCBodyBytes: 4096)
            defer { server.stop() }
            let connection = try Connection(port: server.port, timeoutSeconds: 10)
            try connection.send(server.rpcHead(extra: ["Transfer-Encoding: chunked"]))
            let chunk = String(repeating: "n", count: 1024)
            for _ in 0..<64 { try connection.send("400\r\n\(chunk)\r\n") }
            try connection.send("0\r\n\r\n")
            let response = try connection.readResponse()
            #expect(response.status == 413)
            #expect(response.isOurs)
            let error = try #require(response.json?["error"] as? [String: Any])
            #expect(error["code"] as? Int == -32600)
            #expect((error["message"] as? String)?.contains("4096 bytes") == true)
            #expect((error["data"] as? [String: Any])?["maximumLineLength"] as? Int == 4096)
            #expect(connection.endsCleanly())
        }
    }

    /// The same with a declared `Content-Length` over the cap, body sent at once: refused
    /// before the body is read, and the answer still reaches the client.
    @Test func aDeclaredBodyOverTheCapGets413() async throws {
        try await offThePool {
            let server = try InProcessServer(maximumRPCBodyBytes: 4096)
            defer { server.stop() }
            let connection = try Connection(port: server.port, timeoutSeconds: 10)
            try connection.send(server.rpcHead(extra: ["Content-Length: 5000"]) + String(repeating: "n", count: 5000))
            let response = try connection.readResponse()
            #expect(response.status == 413)
            #expect(response.isOurs)
            #expect((response.json?["error"] as? [String: Any])?["code"] as? Int == -32600)
        }
    }

    /// A chunked body that goes on far past the cap is not read forever: past the drop
    /// allowance the connection is cut, and the server serves the next client.
    @Test func anEndlessChunkedBodyIsCut() async throws {
        try await offThePool {
            let server = try InProcessServer(maximumRPCBodyBytes: 4096)
            defer { server.stop() }
            let connection = try Connection(port: server.port, timeoutSeconds: 10)
            try connection.send(server.rpcHead(extra: ["Transfer-Encoding: chunked"]))
            let chunk = "4000\r\n" + String(repeating: "n", count: 0x4000) + "\r\n"
            var cut = false
            // 16 KiB chunks; the allowance is 1 MiB past the cap, so at most ~70 go through.
            for _ in 0..<1000 {
                do { try connection.send(chunk) } catch {
                    cut = true
                    break
                }
            }
            #expect(cut || connection.isClosedByServer())
            #expect(try server.get("/").status == 404)
        }
    }
}

/// A `WebServer` in this process on a free loopback port, with an empty web root, one live
/// session, and a dispatch that answers every RPC at once (unless given one).
final class InProcessServer: Sendable {
    let server: WebServer
    let port: UInt16
    let session: String
    let root: TemporaryDirectory

    init(deadline: Duration = .seconds(30), maximumRPCBodyBytes: Int? = nil,
         dispatch: WebDispatch? = nil) throws {
        root = try TemporaryDirectory("notesd-web")
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, length) == 0 && listen(descriptor, 64) == 0 && getsockname(descriptor, $0, &length) == 0 }
        }
        guard bound else {
            close(descriptor)
            throw TestFailure("cannot listen on 127.0.0.1: errno \(errno)")
        }
        port = UInt16(bigEndian: address.sin_port)
        let authority = WebAuthority(store: AuthorityTests.MemoryStore(), scope: String(port))
        session = try #require(authority.redeem(token: authority.issueLoginToken().token))
        var limits = WebServerLimits()
        limits.requestDeadline = deadline
        if let maximumRPCBodyBytes { limits.maximumRPCBodyBytes = maximumRPCBodyBytes }
        server = try WebServer(
            listeningSocket: descriptor, port: port, webRoot: root.path, authority: authority, events: EventHub(), limits: limits,
            dispatch: dispatch ?? { _, reply in reply(Data(#"{"jsonrpc":"2.0","id":1,"result":{}}"#.utf8)) },
            log: { _ in })
    }

    func stop() { server.stop() }

    /// The head of an authorised `POST /api/rpc`, with `extra` header lines.
    func rpcHead(extra: [String]) -> String {
        (["POST /api/rpc HTTP/1.1", "Host: 127.0.0.1:\(port)", "Origin: http://127.0.0.1:\(port)", "Authorization: Bearer \(session)"] + extra)
            .joined(separator: "\r\n") + "\r\n\r\n"
    }

    func get(_ path: String) throws -> WireResponse {
        let connection = try Connection(port: port, timeoutSeconds: 10)
        try connection.send("GET \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\n\r\n")
        return try connection.readResponse()
    }
}

extension WireResponse {
    /// Carries every header docs/web.md promises on every response, and no cookie.
    var isOurs: Bool {
        header("Content-Security-Policy") == "default-src 'self'; script-src 'self'; object-src 'none'; frame-ancestors 'none'; base-uri 'none'"
            && header("X-Content-Type-Options") == "nosniff" && header("Referrer-Policy") == "no-referrer" && header("Set-Cookie") == nil
    }
}

extension Connection {
    /// Whether bytes (or the end of the stream) arrive within `milliseconds`.
    func isReadable(withinMilliseconds milliseconds: Int32) -> Bool {
        var descriptors = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
        return Glibc.poll(&descriptors, 1, milliseconds) > 0
    }

    /// Sends `bytes` one at a time, `everyMilliseconds` apart, until all are sent or the server
    /// has something to say (its answer, or the end of the stream); how many were sent. Gives
    /// up after the whole of `bytes` — the caller's check that it was cut short then fails.
    func trickle(_ bytes: [UInt8], everyMilliseconds interval: Int32) throws -> Int {
        for (index, byte) in bytes.enumerated() {
            if isReadable(withinMilliseconds: interval) { return index }
            try send(Data([byte]))
        }
        return bytes.count
    }

    /// The server closed its side with a FIN after everything it sent was read: the next read
    /// is the end of the stream, not a reset.
    func endsCleanly() -> Bool {
        var byte: UInt8 = 0
        return recv(descriptor, &byte, 1, 0) == 0
    }
}
