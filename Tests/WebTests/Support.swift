import Foundation
import Testing
import TestSupport

/// A response read off the wire.
struct WireResponse {
    var status: Int
    /// Lower-cased names.
    var headers: [(name: String, value: String)]
    var body: Data

    func header(_ name: String) -> String? { headers.first { $0.name == name.lowercased() }?.value }
    var text: String { String(decoding: body, as: UTF8.self) }
    var json: [String: Any]? { try? JSONSerialization.jsonObject(with: body) as? [String: Any] }
}

struct TestFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// One TCP connection to 127.0.0.1:port, speaking HTTP/1.1 by hand: the tests need to send
/// exactly the bytes they mean (wrong Hosts, half a request, garbage), which no client
/// library allows.
final class Connection {
    let descriptor: Int32
    private var buffer = Data()

    init(port: UInt16, timeoutSeconds: Int = 30) throws {
        descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let status = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard status == 0 else {
            close(descriptor)
            throw TestFailure("cannot connect to 127.0.0.1:\(port): errno \(errno)")
        }
        // A bound on every read, so a broken server fails the test instead of hanging it.
        var timeout = timeval(tv_sec: timeoutSeconds, tv_usec: 0)
        setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    }

    deinit { close(descriptor) }

    func send(_ text: String) throws { try send(Data(text.utf8)) }

    func send(_ data: Data) throws {
        var offset = 0
        while offset < data.count {
            let written = data.withUnsafeBytes { Glibc.send(descriptor, $0.baseAddress! + offset, data.count - offset, Int32(MSG_NOSIGNAL)) }
            guard written > 0 else { throw TestFailure("send failed: errno \(errno)") }
            offset += written
        }
    }

    /// Reads more bytes; false at end of stream.
    private func fill() throws -> Bool {
        var chunk = [UInt8](repeating: 0, count: 65536)
        let count = recv(descriptor, &chunk, chunk.count, 0)
        if count < 0 { throw TestFailure("recv failed: errno \(errno)") }
        if count == 0 { return false }
        buffer.append(contentsOf: chunk[..<count])
        return true
    }

    private func line() throws -> String {
        while true {
            if let end = buffer.firstRange(of: Data("\r\n".utf8)) {
                let text = String(decoding: buffer[..<end.lowerBound], as: UTF8.self)
                buffer.removeSubrange(..<end.upperBound)
                return text
            }
            guard try fill() else { throw TestFailure("the connection closed inside a line") }
        }
    }

    private func bytes(_ count: Int) throws -> Data {
        while buffer.count < count { guard try fill() else { throw TestFailure("the connection closed inside a body") } }
        let data = buffer.prefix(count)
        buffer.removeFirst(count)
        return Data(data)
    }

    /// The status line and headers of the next response.
    func readHead() throws -> WireResponse {
        let statusLine = try line()
        let parts = statusLine.split(separator: " ", maxSplits: 2)
        guard parts.count >= 2, let status = Int(parts[1]) else { throw TestFailure("not a status line: \(statusLine)") }
        var headers: [(String, String)] = []
        while true {
            let header = try line()
            if header.isEmpty { break }
            guard let colon = header.firstIndex(of: ":") else { throw TestFailure("not a header: \(header)") }
            headers.append((header[..<colon].lowercased(), header[header.index(after: colon)...].trimmingCharacters(in: .whitespaces)))
        }
        return WireResponse(status: status, headers: headers, body: Data())
    }

    /// One whole response (Content-Length or chunked bodies).
    func readResponse() throws -> WireResponse {
        var response = try readHead()
        if let length = response.header("Content-Length").flatMap(Int.init) {
            response.body = try bytes(length)
        } else if response.header("Transfer-Encoding") == "chunked" {
            while let chunk = try nextChunk() { response.body.append(chunk) }
        }
        return response
    }

    /// An answer libmicrohttpd wrote on its own: 0.9.75 writes the status line and headers
    /// twice, before one body, when the error is found after the head was read (HTTP/1.1
    /// without Host, an unparsable Content-Length); every head comes back, then the body.
    func readLibraryAnswer() throws -> (heads: [WireResponse], body: Data) {
        var heads = [try readHead()]
        while true {
            while buffer.count < 9, try fill() {}
            guard buffer.starts(with: Data("HTTP/1.1 ".utf8)) else { break }
            heads.append(try readHead())
        }
        let length = heads.last?.header("Content-Length").flatMap(Int.init) ?? 0
        return (heads, try bytes(length))
    }

    /// The next chunk of a chunked body; nil after the last.
    func nextChunk() throws -> Data? {
        guard let size = Int(try line(), radix: 16) else { throw TestFailure("bad chunk size") }
        if size == 0 {
            _ = try line()
            return nil
        }
        let data = try bytes(size)
        _ = try line()
        return data
    }

    /// True when the server has closed its side (reads return end of stream).
    func isClosedByServer() -> Bool {
        var byte: UInt8 = 0
        while true {
            let count = recv(descriptor, &byte, 1, 0)
            if count == 0 { return true }
            if count < 0 { return errno == ECONNRESET }
        }
    }
}

/// A notesd child process serving the web API on a free port.
final class WebDaemon {
    let name: String
    let directory: String
    /// Asked for at start; the port it listens on once started (a port picked free a moment
    /// earlier can be taken meanwhile, and notesd then listens on another).
    private(set) var syncPort: UInt16
    var peers: [UInt16] = []
    private(set) var process: ChildProcess?
    private(set) var webPort: UInt16 = 0
    let logPath: String

    init(name: String, root: String) throws {
        self.name = name
        directory = root + "/" + name
        logPath = root + "/\(name).log"
        syncPort = freePort()
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        try FileManager.default.createDirectory(atPath: directory + "/web", withIntermediateDirectories: true)
    }

    var socket: String { directory + "/control.sock" }
    var origin: String { "http://127.0.0.1:\(webPort)" }
    var log: String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }

    func start(extra: [String] = []) throws {
        let arguments = [
            "--data-dir", directory, "--socket", socket, "--listen", "127.0.0.1:\(syncPort)", "--name", name, "--no-mdns",
            // The first start picks a free port; a restart keeps it, as a real notesd keeps
            // 7480 (sessions are bound to their port).
            "--web-listen", "127.0.0.1:\(webPort)", "--web-root", directory + "/web", "--log-level", "debug",
        ] + peers.flatMap { ["--peer", "127.0.0.1:\($0)"] } + extra
        process = try ChildProcess.background([builtProduct("notesd")] + arguments, logPath: logPath)
        guard poll(seconds: 30, every: 20_000, { (try? ctl(["status"]))?.status == 0 }) else { throw TestFailure("\(name) never answered status:\n\(log)") }
        let status = try json(["status"])
        let web = try #require(status["web"] as? [String: Any])
        let listen = try #require(web["listen"] as? String)
        webPort = try #require(UInt16(listen.split(separator: ":").last!))
        let sync = try #require((status["listen"] as? [String])?.first)
        syncPort = try #require(UInt16(sync.split(separator: ":").last!))
    }

    func stop() {
        process?.stop()
        process = nil
    }

    @discardableResult
    func ctl(_ arguments: [String], input: String? = nil) throws -> CommandResult {
        try ChildProcess.runBlocking([builtProduct("notesctl"), "--socket", socket] + arguments, input: input, timeout: .seconds(60))
    }

    func json(_ arguments: [String], input: String? = nil) throws -> [String: Any] {
        let result = try ctl(arguments + ["--json"], input: input)
        guard result.status == 0, let value = try? JSONSerialization.jsonObject(with: Data(result.output.utf8)) as? [String: Any] else {
            throw TestFailure("notesctl \(arguments.joined(separator: " ")) exited \(result.status): \(result.error)\(result.output)")
        }
        return value
    }

    /// A one-time token from `notesctl ui --json`.
    func loginToken() throws -> String {
        let url = try #require(try json(["ui"])["url"] as? String)
        #expect(url.hasPrefix("http://127.0.0.1:\(webPort)/#login="))
        return String(url.split(separator: "=", maxSplits: 1)[1])
    }

    /// A raw HTTP request on a new connection (Host and Origin ours unless given).
    func request(_ method: String, _ path: String, body: String? = nil, session: String? = nil, host: String? = nil,
                 origin: String?? = .none, headers: [String] = []) throws -> WireResponse {
        let connection = try Connection(port: webPort)
        try connection.send(Self.requestText(method, path, body: body, session: session, host: host ?? "127.0.0.1:\(webPort)",
                                             origin: origin ?? (method == "POST" ? self.origin : nil), headers: headers))
        return try connection.readResponse()
    }

    static func requestText(_ method: String, _ path: String, body: String?, session: String?, host: String, origin: String?, headers: [String] = []) -> String {
        var lines = ["\(method) \(path) HTTP/1.1", "Host: \(host)"]
        if let origin { lines.append("Origin: \(origin)") }
        if let session { lines.append("Authorization: Bearer \(session)") }
        if let body { lines += ["Content-Type: application/json", "Content-Length: \(body.utf8.count)"] }
        lines += headers
        return lines.joined(separator: "\r\n") + "\r\n\r\n" + (body ?? "")
    }

    func login() throws -> String {
        let response = try request("POST", "/api/login", body: #"{"token":"\#(try loginToken())"}"#)
        guard response.status == 200, let session = response.json?["session"] as? String else { throw TestFailure("login failed: \(response.status) \(response.text)") }
        return session
    }

    /// `POST /api/rpc` with a JSON-RPC request; the decoded answer.
    func rpc(_ session: String, _ method: String, _ params: [String: Any] = [:], id: Int = 1) throws -> [String: Any] {
        let body = String(decoding: try JSONSerialization.data(withJSONObject: ["jsonrpc": "2.0", "id": id, "method": method, "params": params]), as: UTF8.self)
        let response = try request("POST", "/api/rpc", body: body, session: session)
        guard response.status == 200, let json = response.json else { throw TestFailure("rpc \(method): \(response.status) \(response.text)") }
        return json
    }

    deinit {
        process?.signal(SIGKILL)
        _ = process?.waitForExit(timeout: .seconds(10))
    }
}

/// The raw bytes of a control-socket exchange: one request line in, one answer line out.
func controlSocketAnswer(socket path: String, line: String) throws -> [String: Any] {
    let descriptor = Glibc.socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
    defer { close(descriptor) }
    var address = sockaddr_un()
    address.sun_family = sa_family_t(AF_UNIX)
    withUnsafeMutableBytes(of: &address.sun_path) { raw in
        let bytes = Array(path.utf8)
        raw.copyBytes(from: bytes.prefix(raw.count - 1))
    }
    let status = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
    }
    guard status == 0 else { throw TestFailure("cannot connect to \(path)") }
    let data = Array((line + "\n").utf8)
    _ = data.withUnsafeBytes { Glibc.send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
    var received = Data()
    var chunk = [UInt8](repeating: 0, count: 65536)
    while !received.contains(UInt8(ascii: "\n")) {
        let count = recv(descriptor, &chunk, chunk.count, 0)
        guard count > 0 else { break }
        received.append(contentsOf: chunk[..<count])
    }
    guard let object = try JSONSerialization.jsonObject(with: received) as? [String: Any] else { throw TestFailure("not JSON: \(received)") }
    return object
}
