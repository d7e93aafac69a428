import Control
import Foundation

/// `notes-bench web`: the web API of a real release notesd over HTTP on loopback, with a
/// 10,000-note library: `notes.list`, `notes.get` and `notes.search` through `POST /api/rpc`,
/// a change committed on a paired daemon until its event is read from `GET /api/events`,
/// and the idle daemon with the web server on (docs/web.md, docs/benchmarks.md).
enum WebBench {
    /// What a person types into the search box, in turn: whole words, prefixes, two words, and
    /// "the" (in almost every note). `library` searches its 100,000 notes with the same.
    static let searchQueries = ["garden", "kitc", "recipe travel", "meeting notes", "budg", "the", "window morning", "proj"]

    static func run() throws {
        let household = try Household(notes: 10_000, binary: try notesdBinary())
        defer { household.shutDown() }
        let sync = try household.initialSync()
        let alpha = household.alpha, bravo = household.bravo
        Conditions.print([
            "library: \(household.library.count) notes on alpha, synced to bravo; both release builds on loopback",
            "filesystem: \(Conditions.filesystem(of: alpha.dataDirectory))",
            "the machine is shared with other builds and tests: figures are upper bounds",
        ])

        let web = try WebClient.signIn(to: alpha)
        var table = Table(["measure", "runs", "p50", "p95", "target", "verdict"])
        let list = try Measure.repeatedly(runs: 30) { _ = try web.rpc("notes.list", "{}") }
        table.add(["notes.list over HTTP (all 10,000)", "30", Measure.ms(Measure.percentile(list, 0.5)), Measure.ms(Measure.percentile(list, 0.95)), "p50 ≤ 20 ms", Verdict.of(Measure.percentile(list, 0.5) <= 20)])
        var index = 0
        let get = try Measure.repeatedly(runs: 300) {
            index += 37
            _ = try web.rpc("notes.get", #"{"id":"\#(household.library[index % household.library.count].id)"}"#)
        }
        table.add(["notes.get over HTTP", "300", Measure.ms(Measure.percentile(get, 0.5)), Measure.ms(Measure.percentile(get, 0.95)), "≤ 2 ms", Verdict.of(Measure.percentile(get, 0.5) <= 2)])
        var query = 0
        let search = try Measure.repeatedly(runs: 200) {
            query += 1
            _ = try web.rpc("notes.search", #"{"query":"\#(searchQueries[query % searchQueries.count])","limit":50}"#)
        }
        // The same calls on the control socket, under the same load: what HTTP adds.
        let control = try alpha.client()
        let socketList = try Measure.repeatedly(runs: 30) { _ = try control.call(ControlMethods.NotesList.self, NotesListParams()) }
        table.add(["notes.list over the control socket (comparison)", "30", Measure.ms(Measure.percentile(socketList, 0.5)), Measure.ms(Measure.percentile(socketList, 0.95)), "-", "-"])
        let socketSearch = try Measure.repeatedly(runs: 200) {
            query += 1
            _ = try control.call(ControlMethods.NotesSearch.self, NotesSearchParams(query: searchQueries[query % searchQueries.count], limit: 50))
        }
        table.add(["notes.search over the control socket (comparison)", "200", Measure.ms(Measure.percentile(socketSearch, 0.5)), Measure.ms(Measure.percentile(socketSearch, 0.95)), "-", "-"])
        table.add(["notes.search over HTTP (limit 50)", "200", Measure.ms(Measure.percentile(search, 0.5)), Measure.ms(Measure.percentile(search, 0.95)), "p50 ≤ 5 ms", Verdict.of(Measure.percentile(search, 0.5) <= 5)])

        // A change on alpha, read as an event from bravo's stream.
        let stream = try WebClient.signIn(to: bravo)
        try stream.openEvents()
        var latencies: [Double] = []
        let client = try alpha.client()
        for sample in 0..<40 {
            let note = household.library[(sample * 101) % household.library.count]
            let marker = "sse-\(sample)-\(UInt32.random(in: 0...UInt32.max))"
            let started = ContinuousClock.now
            _ = try client.call(ControlMethods.NotesUpdate.self, NoteUpdateParams(id: note.id, title: marker))
            try stream.readEvents(until: marker, timeout: .seconds(30))
            latencies.append(Measure.milliseconds(ContinuousClock.now - started))
        }
        table.add(["change on alpha → SSE event read on bravo", "40", Measure.ms(Measure.percentile(latencies, 0.5)), Measure.ms(Measure.percentile(latencies, 0.95)), "p50 ≤ 20 ms", Verdict.of(Measure.percentile(latencies, 0.5) <= 20)])
        stream.close()
        web.close()

        // Idle with the web server on (after everything above), no browser connected. First
        // 30 s to settle: libdispatch's workers from the last requests exit 5 s after them, and
        // the keepalive thread ends the 25 s wait it was in when the last stream closed.
        sleep(30)
        let seconds = Int(ProcessInfo.processInfo.environment["NOTES_BENCH_IDLE_SECONDS"] ?? "") ?? 60
        if let window = try ProcessProbe.trace(alpha.pid, seconds: seconds, output: household.scratch.path + "/web-idle.strace") {
            let shortest = window.shortestInterval
            table.add(["idle wake-ups, \(seconds) s (strace)", "\(window.episodeStarts.count)", "-", shortest.map { "shortest \(Measure.decimal($0, places: 1)) s" } ?? "none",
                       "none < 30 s", Verdict.of((shortest ?? 30) >= 30 && window.episodeStarts.count <= seconds / 30 + 1)])
        }
        let memory = ProcessProbe.memory(alpha.pid)
        table.add(["idle RSS (VmRSS)", "1", Measure.bytes(memory.resident), "anon \(Measure.bytes(memory.anonymous))", "≤ 30 MB", Verdict.of(memory.resident <= 30_000_000)])
        // Search is indexed in the note's transaction, so a catch-up pays for it too.
        table.add(["initial sync of the library to bravo (indexing included)", "1", Measure.ms(sync.fromReady), "-", "≤ 1 s (sync)", Verdict.of(sync.fromReady <= 1_000)])
        table.print()
    }
}

/// A keep-alive HTTP/1.1 connection to one daemon's web server, signed in.
final class WebClient {
    private let descriptor: Int32
    private let port: UInt16
    private let session: String
    private var buffer: [UInt8] = []
    private var chunk = [UInt8](repeating: 0, count: 1 << 16)

    private init(port: UInt16, session: String) throws {
        self.port = port
        self.session = session
        descriptor = try Self.connect(port)
    }

    static func signIn(to daemon: BenchDaemon) throws -> WebClient {
        let client = try daemon.client()
        guard let listen = try client.call(ControlMethods.Status.self).web?.listen, let port = UInt16(listen.split(separator: ":").last ?? "") else {
            throw BenchError("\(daemon.name) serves no web API")
        }
        let token = try client.call(ControlMethods.WebLoginToken.self).token
        let login = try WebClient(port: port, session: "")
        let body = try login.exchange("POST", "/api/login", #"{"token":"\#(token)"}"#, authorized: false)
        guard let session = (try JSONSerialization.jsonObject(with: body) as? [String: Any])?["session"] as? String else {
            throw BenchError("login failed: \(String(decoding: body, as: UTF8.self))")
        }
        login.close()
        return try WebClient(port: port, session: session)
    }

    private static func connect(_ port: UInt16) throws -> Int32 {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let status = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard status == 0 else { throw BenchError("cannot connect to the web server on port \(port)") }
        var yes: Int32 = 1
        setsockopt(descriptor, Int32(IPPROTO_TCP), TCP_NODELAY, &yes, socklen_t(MemoryLayout<Int32>.size))
        return descriptor
    }

    func close() { Glibc.close(descriptor) }

    /// One JSON-RPC call; the response body.
    @discardableResult
    func rpc(_ method: String, _ params: String) throws -> Data {
        try exchange("POST", "/api/rpc", #"{"jsonrpc":"2.0","id":1,"method":"\#(method)","params":\#(params)}"#, authorized: true)
    }

    private func send(_ text: String) throws {
        let bytes = Array(text.utf8)
        var offset = 0
        while offset < bytes.count {
            let written = bytes.withUnsafeBytes { Glibc.send(descriptor, $0.baseAddress! + offset, bytes.count - offset, Int32(MSG_NOSIGNAL)) }
            guard written > 0 else { throw BenchError("send failed") }
            offset += written
        }
    }

    private func head(_ method: String, _ path: String, body: String?, authorized: Bool) -> String {
        var lines = ["\(method) \(path) HTTP/1.1", "Host: 127.0.0.1:\(port)"]
        if method == "POST" { lines.append("Origin: http://127.0.0.1:\(port)") }
        if authorized { lines.append("Authorization: Bearer \(session)") }
        if let body { lines += ["Content-Type: application/json", "Content-Length: \(body.utf8.count)"] }
        return lines.joined(separator: "\r\n") + "\r\n\r\n" + (body ?? "")
    }

    private func exchange(_ method: String, _ path: String, _ body: String, authorized: Bool) throws -> Data {
        try send(head(method, path, body: body, authorized: authorized))
        let headers = try readHead()
        guard let length = headers["content-length"].flatMap(Int.init) else { throw BenchError("no Content-Length in the answer to \(path)") }
        return try bytes(length)
    }

    /// One `recv` into the buffer, through a chunk allocated once (a listing's answer is
    /// megabytes: the client must not be what is measured).
    private func fill() throws {
        let count = chunk.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
        guard count > 0 else { throw BenchError("the web server closed the connection") }
        chunk.withUnsafeBytes { buffer.append(contentsOf: UnsafeRawBufferPointer(rebasing: $0[..<count])) }
    }

    private func line() throws -> String {
        var searched = 0
        while true {
            if let end = buffer[searched...].firstIndex(of: UInt8(ascii: "\n")) {
                searched = end + 1
                guard end > 0, buffer[end - 1] == UInt8(ascii: "\r") else { continue }
                let text = String(decoding: buffer[..<(end - 1)], as: UTF8.self)
                buffer.removeSubrange(...end)
                return text
            }
            searched = buffer.count
            try fill()
        }
    }

    private func bytes(_ count: Int) throws -> Data {
        buffer.reserveCapacity(count)
        while buffer.count < count { try fill() }
        let data = Data(buffer[..<count])
        buffer.removeSubrange(..<count)
        return data
    }

    private func readHead() throws -> [String: String] {
        let status = try line()
        guard status.hasPrefix("HTTP/1.1 200") else { throw BenchError("the web server answered \(status)") }
        var headers: [String: String] = [:]
        while true {
            let header = try line()
            if header.isEmpty { return headers }
            if let colon = header.firstIndex(of: ":") {
                headers[header[..<colon].lowercased()] = header[header.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            }
        }
    }

    /// Starts reading `GET /api/events` on this connection (it stays the stream's).
    func openEvents() throws {
        try send(head("GET", "/api/events", body: nil, authorized: true))
        _ = try readHead()
        try readEvents(until: "event: ready", timeout: .seconds(10))
    }

    private var streamed = ""

    /// Reads chunks until the stream has carried `needle` (then forgets what was read).
    func readEvents(until needle: String, timeout: Duration) throws {
        let deadline = ContinuousClock.now + timeout
        while !streamed.contains(needle) {
            guard ContinuousClock.now < deadline else { throw BenchError("no event with \(needle) within \(timeout)") }
            guard let size = Int(try line(), radix: 16), size > 0 else { throw BenchError("the event stream ended") }
            streamed += String(decoding: try bytes(size), as: UTF8.self)
            _ = try line()
        }
        streamed = ""
    }
}
