import Foundation
import Testing
import TestSupport

/// The web API against real notesd processes on free ports (issue "notesd serves a local
/// web API", Proof).
@Suite(.serialized) struct ServerTests {
    @Test func signInSessionsAndRefusals() async throws {
        try await offThePool { try Self.signInStory() }
    }

    static func signInStory() throws {
        let scratch = try TemporaryDirectory()
        let daemon = try WebDaemon(name: "web", root: scratch.path)
        try daemon.start()
        defer { daemon.stop() }
        var seen: [WireResponse] = []
        func keep(_ response: WireResponse) -> WireResponse {
            seen.append(response)
            return response
        }
        let status = #"{"jsonrpc":"2.0","id":1,"method":"status"}"#

        // No session: 401 on every API path but login.
        #expect(keep(try daemon.request("POST", "/api/rpc", body: status)).status == 401)
        #expect(keep(try daemon.request("GET", "/api/events")).status == 401)
        #expect(keep(try daemon.request("POST", "/api/rpc", body: status, session: "guessed")).status == 401)

        // A token works once.
        let token = try daemon.loginToken()
        let login = keep(try daemon.request("POST", "/api/login", body: #"{"token":"\#(token)"}"#))
        #expect(login.status == 200)
        let session = try #require(login.json?["session"] as? String)
        let again = keep(try daemon.request("POST", "/api/login", body: #"{"token":"\#(token)"}"#))
        #expect(again.status == 401)
        #expect((again.json?["error"] as? [String: Any])?["message"] as? String != nil)

        // The session works.
        let answer = try daemon.rpc(session, "status")
        #expect((answer["result"] as? [String: Any])?["version"] != nil)

        // Wrong Host (DNS rebinding) and cross-origin POSTs are refused, session or not.
        #expect(keep(try daemon.request("POST", "/api/rpc", body: status, session: session, host: "attacker.example:\(daemon.webPort)", origin: "http://attacker.example:\(daemon.webPort)")).status == 421)
        #expect(keep(try daemon.request("GET", "/", host: "attacker.example")).status == 421)
        #expect(keep(try daemon.request("POST", "/api/rpc", body: status, session: session, origin: "http://evil.example")).status == 403)
        #expect(keep(try daemon.request("POST", "/api/rpc", body: status, session: session, origin: .some(nil))).status == 403)
        #expect(keep(try daemon.request("GET", "/api/events", session: session, origin: "http://evil.example")).status == 403)

        // No app installed: a clear 404 page, not a stand-in app.
        let home = keep(try daemon.request("GET", "/"))
        #expect(home.status == 404)
        #expect(home.text.contains("not installed"))
        // With files, they are served with their type.
        try "<!doctype html><title>app</title>".write(toFile: daemon.directory + "/web/index.html", atomically: true, encoding: .utf8)
        try FileManager.default.createDirectory(atPath: daemon.directory + "/web/assets", withIntermediateDirectories: true)
        try "console.log(1)".write(toFile: daemon.directory + "/web/assets/app.js", atomically: true, encoding: .utf8)
        let index = keep(try daemon.request("GET", "/"))
        #expect(index.status == 200 && index.text.contains("<title>app</title>"))
        let script = keep(try daemon.request("GET", "/assets/app.js"))
        #expect(script.header("Content-Type") == "text/javascript; charset=utf-8")
        #expect(keep(try daemon.request("GET", "/assets/../notes.db")).status == 404)

        // `notesctl ui --sessions` lists it; the session survives a restart.
        let listed = try daemon.ctl(["ui", "--sessions", "--json"])
        #expect((try JSONSerialization.jsonObject(with: Data(listed.output.utf8)) as? [Any])?.count == 1)
        daemon.stop()
        try daemon.start()
        #expect((try daemon.rpc(session, "status")["result"]) != nil)
        // ui --logout-all ends it.
        #expect(try daemon.ctl(["ui", "--logout-all"]).status == 0)
        #expect(keep(try daemon.request("POST", "/api/rpc", body: status, session: session)).status == 401)

        // Every response: the security headers, never a cookie or a CORS header.
        #expect(seen.count >= 15)
        for response in seen {
            #expect(response.header("Content-Security-Policy") == "default-src 'self'; script-src 'self'; object-src 'none'; frame-ancestors 'none'; base-uri 'none'")
            #expect(response.header("X-Content-Type-Options") == "nosniff")
            #expect(response.header("Referrer-Policy") == "no-referrer")
            #expect(response.header("Set-Cookie") == nil)
            #expect(!response.headers.contains { $0.name.hasPrefix("access-control-") })
        }
    }

    @Test func rpcAnswersMatchTheControlSocket() async throws {
        try await offThePool {
            let scratch = try TemporaryDirectory()
            let daemon = try WebDaemon(name: "rpc", root: scratch.path)
            try daemon.start()
            defer { daemon.stop() }
            let session = try daemon.login()
            let lines = [
                #"{"jsonrpc":"2.0","id":3,"method":"notes.get","params":{"id":"ffffffff"}}"#,
                #"{"jsonrpc":"2.0","id":4,"method":"notes.create","params":{"title":7}}"#,
                #"{"jsonrpc":"2.0","id":5,"method":"no.such.method"}"#,
                #"{"jsonrpc":"2.0","id":6,"method":"sync","params":{"wait":true,"timeoutMs":0}}"#,
                #"{"jsonrpc":"2.0","method":"status"}"#,
                "{not json",
            ]
            for line in lines {
                let overSocket = try controlSocketAnswer(socket: daemon.socket, line: line)
                let overHTTP = try daemon.request("POST", "/api/rpc", body: line, session: session)
                #expect(overHTTP.status == 200)
                let http = try #require(overHTTP.json)
                #expect(NSDictionary(dictionary: http) == NSDictionary(dictionary: overSocket), "\(line)")
                #expect(http["error"] != nil, "\(line)")
            }
            // `watch` is the events stream over HTTP.
            let watch = try daemon.rpc(session, "watch", id: 9)
            #expect((watch["error"] as? [String: Any])?["code"] as? Int == -32601)
        }
    }

    @Test func searchFindsABodyWordAndAPrefix() async throws {
        try await offThePool {
            let scratch = try TemporaryDirectory()
            let daemon = try WebDaemon(name: "search", root: scratch.path)
            try daemon.start()
            defer { daemon.stop() }
            _ = try daemon.json(["new", "--title", "Autumn"], input: "<p>Stew the quinces with crème fraîche.</p>")
            _ = try daemon.json(["new", "--title", "Shopping"], input: "<p>eggs, milk</p>")
            let session = try daemon.login()
            for query in ["quinces", "quin", "CREME", "fraich", "autumn stew"] {
                let hits = try #require(try daemon.rpc(session, "notes.search", ["query": query])["result"] as? [[String: Any]], "\(query)")
                #expect(hits.count == 1, "\(query)")
                #expect((hits.first?["note"] as? [String: Any])?["title"] as? String == "Autumn", "\(query)")
                #expect((hits.first?["snippet"] as? String)?.contains("\u{2}") == true, "\(query)")
            }
            // The person's words are quoted: operators and quotes are just text.
            for query in ["\"", "quin AND", "NEAR(", "*", "-milk", "a:b"] {
                #expect(try daemon.rpc(session, "notes.search", ["query": query])["error"] == nil, "\(query)")
            }
            let printed = try daemon.ctl(["search", "quin"])
            #expect(printed.status == 0 && printed.output.contains("Autumn"))
            // `notes.list {query}` keeps its substring meaning.
            let listed = try daemon.rpc(session, "notes.list", ["query": "uince"])["result"] as? [Any]
            #expect(listed?.count == 1)
        }
    }

    @Test func eventsStreamAChangeMadeOnAPairedDaemon() async throws {
        try await offThePool {
            let scratch = try TemporaryDirectory()
            let alpha = try WebDaemon(name: "alpha", root: scratch.path)
            let bravo = try WebDaemon(name: "bravo", root: scratch.path)
            try alpha.start()
            bravo.peers = [alpha.syncPort]
            try bravo.start()
            defer { alpha.stop(); bravo.stop() }
            let code = try #require(try alpha.json(["invite"])["code"] as? String)
            let joined = try bravo.ctl(["join", code, "--address", "127.0.0.1:\(alpha.syncPort)"])
            #expect(joined.status == 0, "\(joined.error)")

            let session = try alpha.login()
            let stream = try Connection(port: alpha.webPort)
            try stream.send(WebDaemon.requestText("GET", "/api/events", body: nil, session: session, host: "127.0.0.1:\(alpha.webPort)", origin: nil))
            let head = try stream.readHead()
            #expect(head.status == 200)
            #expect(head.header("Content-Type") == "text/event-stream")
            var text = ""
            func readUntil(_ needle: String) throws {
                while !text.contains(needle) {
                    guard let chunk = try stream.nextChunk() else { throw TestFailure("the stream ended before \(needle): \(text)") }
                    text += String(decoding: chunk, as: UTF8.self)
                }
            }
            try readUntil("event: ready")

            _ = try bravo.json(["new", "--title", "From bravo"], input: "<p>hello</p>")
            try readUntil("From bravo")
            let event = try #require(text.components(separatedBy: "\n\n").first { $0.contains("From bravo") })
            #expect(event.contains("event: noteChanged"))
            #expect(event.contains("\"origin\":\"remote\""))
            let id = try #require(event.split(separator: "\n").first { $0.hasPrefix("id: ") }).dropFirst(4)

            // Reconnecting from before that event replays it; from an unknown id, a resync.
            let resumed = try alpha.request("GET", "/api/events", session: session, headers: ["Last-Event-ID: \(alpha.latestBefore(String(id)))"], streamUntil: "event: ready")
            #expect(resumed.contains("From bravo"))
            let unknown = try alpha.request("GET", "/api/events", session: session, headers: ["Last-Event-ID: 00000000-5"], streamUntil: "event: resync")
            #expect(unknown.contains("event: resync"))
        }
    }

    @Test func floodsSlowClientsAndGarbageLeaveTheRealClientServed() async throws {
        try await offThePool {
            let scratch = try TemporaryDirectory()
            let daemon = try WebDaemon(name: "load", root: scratch.path)
            try daemon.start()
            defer { daemon.stop() }
            let session = try daemon.login()
            let status = #"{"jsonrpc":"2.0","id":1,"method":"status"}"#

            // 200 slowloris connections: half a request head each, held open.
            var slow: [Connection] = []
            for index in 0..<200 {
                let connection = try Connection(port: daemon.webPort)
                try connection.send("POST /api/rpc HTTP/1.1\r\nHost: 127.0.0.1:\(daemon.webPort)\r\nX-Slow-\(index): ")
                slow.append(connection)
            }
            // 1,000 requests with bad sessions, on a few keep-alive connections and new ones.
            for batch in 0..<10 {
                for attempt in 0..<100 {
                    let response = try daemon.request("POST", "/api/rpc", body: status, session: "bad-\(batch)-\(attempt)")
                    #expect(response.status == 401)
                }
            }
            // Malformed requests: 400 and a closed connection.
            for garbage in ["GET / HTTP/1.1\r\nHost 127.0.0.1\r\n\r\n", "NOT HTTP AT ALL\r\n\r\n"] {
                let connection = try Connection(port: daemon.webPort)
                try connection.send(garbage)
                let response = try connection.readResponse()
                #expect(response.status == 400, "\(garbage)")
                // libmicrohttpd's own answer, given our headers by notesd's hook.
                #expect(response.isOurs, "\(garbage): \(response.headers)")
                #expect(connection.isClosedByServer())
            }
            // A chunked RPC body past the control socket's line cap (16 MiB): a 413 with the
            // socket's lineTooLong error, not a reset.
            do {
                let connection = try Connection(port: daemon.webPort)
                try connection.send(WebDaemon.requestText("POST", "/api/rpc", body: nil, session: session, host: "127.0.0.1:\(daemon.webPort)", origin: daemon.origin, headers: ["Transfer-Encoding: chunked"]))
                let chunk = Data("10000\r\n".utf8) + Data(repeating: UInt8(ascii: "n"), count: 0x10000) + Data("\r\n".utf8)
                for _ in 0..<(17 * 16) { try connection.send(chunk) }
                try connection.send("0\r\n\r\n")
                let response = try connection.readResponse()
                #expect(response.status == 413)
                #expect(response.isOurs)
                #expect((response.json?["error"] as? [String: Any])?["message"] as? String == "The request line is longer than 16777216 bytes; send smaller notes or split the work into several requests.")
                #expect(connection.endsCleanly())
            }
            // Binary garbage (a TLS hello, random bytes) is closed without an answer; bytes
            // starting with NUL read as blank lines and wait for the idle timeout. Either way
            // the connection holds no more than its slot.
            var binary: [Connection] = []
            for garbage in [Data([0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00]) + Data((1...200).map { UInt8($0) }), Data([0xff, 0xfe, 0x13, 0x37, 0x0d, 0x0a, 0x0d, 0x0a]), Data("GET /a b c HTTP/1.1\r\n\r\n".utf8), Data([0x00, 0x00, 0x0d, 0x0a])] {
                let connection = try Connection(port: daemon.webPort)
                try connection.send(garbage)
                binary.append(connection)
            }
            #expect(binary[0].isClosedByServer())
            #expect(binary[1].isClosedByServer())
            #expect(binary[2].isClosedByServer())
            // A head over the size limit is refused, not buffered.
            let huge = try daemon.request("GET", "/", headers: ["X-Big: " + String(repeating: "a", count: 100_000)])
            #expect(huge.status == 431)
            #expect(huge.isOurs, "\(huge.headers)")

            // The real client is served while all 200 slow connections are still open.
            let answer = try daemon.rpc(session, "status")
            #expect((answer["result"] as? [String: Any]) != nil)
            // And sync is unaffected: the control socket answers too.
            #expect(try daemon.ctl(["status"]).status == 0)
            withExtendedLifetime((slow, binary)) {}
        }
    }
}

extension WebDaemon {
    /// The id just before `id` in its epoch (`EPOCH-N` → `EPOCH-(N-1)`).
    func latestBefore(_ id: String) -> String {
        let parts = id.split(separator: "-")
        return "\(parts[0])-\(Int(parts[1])! - 1)"
    }

    /// A GET whose (event-stream) body is read until `needle` appears.
    func request(_ method: String, _ path: String, session: String, headers: [String], streamUntil needle: String) throws -> String {
        let connection = try Connection(port: webPort)
        try connection.send(Self.requestText(method, path, body: nil, session: session, host: "127.0.0.1:\(webPort)", origin: nil, headers: headers))
        let head = try connection.readHead()
        guard head.status == 200 else { throw TestFailure("\(path): \(head.status)") }
        var text = ""
        while !text.contains(needle) {
            guard let chunk = try connection.nextChunk() else { break }
            text += String(decoding: chunk, as: UTF8.self)
        }
        return text
    }
}
