import Control
import Foundation
import Testing
import TestSupport

/// Bad input on the control socket gets a JSON error or a closed connection, and the daemon
/// keeps serving everyone else.
@Suite(.serialized) struct ControlInputTests {
    func connect(_ daemon: Daemon) throws -> UnixStreamSocket { try UnixStreamSocket.connect(path: daemon.socket) }

    func exchange(_ socket: UnixStreamSocket, _ line: String) throws -> [String: Any] {
        try socket.send(Data((line + "\n").utf8))
        var buffer: [UInt8] = []
        while !buffer.contains(10) {
            guard let chunk = try socket.receive(timeout: .seconds(10)), !chunk.isEmpty else { throw HarnessError("connection closed or silent") }
            buffer += chunk
        }
        let line = buffer.prefix { $0 != 10 }
        return try JSONSerialization.jsonObject(with: Data(line)) as! [String: Any]
    }

    func errorCode(_ message: [String: Any]) -> Int? { (message["error"] as? [String: Any])?["code"] as? Int }

    @Test func garbageUnknownMethodsBadParamsAndHugeLinesAreAnsweredAndTheDaemonKeepsServing() async throws {
        try await offThePool { try badInput() }
    }

    func badInput() throws {
        let scratch = try Scratch()
        let daemon = try Daemon(name: "solo", root: scratch.path)
        try daemon.start()
        defer { daemon.stop() }
        let socket = try connect(daemon)
        #expect(errorCode(try exchange(socket, "this is not json")) == -32700)
        #expect(errorCode(try exchange(socket, #"{"jsonrpc":"2.0","id":1,"method":"notes.fly"}"#)) == -32601)
        #expect(errorCode(try exchange(socket, #"{"jsonrpc":"2.0","id":2,"method":"notes.get","params":{}}"#)) == -32602)
        #expect(errorCode(try exchange(socket, #"{"jsonrpc":"2.0","id":3,"method":"notes.get","params":{"id":"zz"}}"#)) == -32602)
        #expect(errorCode(try exchange(socket, #"{"jsonrpc":"2.0","id":4,"method":"notes.get","params":{"id":"0123456789"}}"#)) == 1000)
        #expect(errorCode(try exchange(socket, #"{"jsonrpc":"2.0","method":"status"}"#)) == -32600)
        #expect(errorCode(try exchange(socket, #"[1,2]"#)) == -32600)
        let status = try exchange(socket, #"{"jsonrpc":"2.0","id":5,"method":"status"}"#)
        #expect(status["result"] != nil)

        // A client that disconnects in the middle of a request.
        let rude = try connect(daemon)
        try rude.send(Data(#"{"jsonrpc":"2.0","id":1,"method":"sync","params":{"wait":true}}"#.utf8 + [10]))
        rude.close()

        // A 100 MB line: an error, then the connection closes; others are unaffected.
        let huge = try connect(daemon)
        let chunk = Data(repeating: UInt8(ascii: "a"), count: 1 << 20)
        var closedEarly = false
        for _ in 0..<100 {
            do { try huge.send(chunk) } catch { closedEarly = true; break }
        }
        var received: [UInt8] = []
        while let bytes = try? huge.receive(timeout: .seconds(10)), !bytes.isEmpty { received += bytes }
        #expect(closedEarly || !received.isEmpty)
        // The error line itself may be lost to the connection reset while we were still
        // sending; when it arrived it is the right one, and the daemon always says what it did.
        if let line = String(bytes: received.prefix { $0 != 10 }, encoding: .utf8), !line.isEmpty {
            #expect(line.contains("-32600"))
        }
        #expect(poll(seconds: 10) { daemon.log.contains("answered with an error and closed it") }, "daemon log:\n\(daemon.log)")
        let after = try daemon.ctl(["status"])
        #expect(after.status == 0)
        let stillThere = try exchange(socket, #"{"jsonrpc":"2.0","id":6,"method":"notes.list"}"#)
        #expect(stillThere["result"] != nil)
    }

    @Test func usageErrorsAndAMissingDaemonUseTheDocumentedExitCodes() async throws {
        try await offThePool { try exitCodes() }
    }

    func exitCodes() throws {
        let scratch = try Scratch()
        let daemon = try Daemon(name: "absent", root: scratch.path)
        let unreachable = try daemon.ctl(["status"])
        #expect(unreachable.status == 2)
        #expect(unreachable.error.contains("notesd"))
        #expect(try daemon.ctl(["frobnicate"]).status == 64)
    }

    @Test func twoDaemonsOnOneMachineDoNotCollide() async throws {
        try await offThePool { try twoDaemons() }
    }

    func twoDaemons() throws {
        let scratch = try Scratch()
        let first = try Daemon(name: "first", root: scratch.path)
        let second = try Daemon(name: "second", root: scratch.path)
        // Same listen port for both: the second falls back to a free one.
        let shared = first.port
        try first.start()
        defer { first.stop(); second.stop() }
        let process = try ChildProcess.background(
            [builtProduct("notesd"), "--data-dir", second.directory, "--socket", second.socket, "--listen", "127.0.0.1:\(shared)", "--name", "second", "--no-mdns", "--no-web"],
            logPath: scratch.file("second.log"))
        defer { process.stop() }
        try waitUntil("the second daemon answers") { (try? second.ctl(["status"]))?.status == 0 }
        let status = try second.json(["status"]) as! [String: Any]
        let listen = status["listen"] as! [String]
        #expect(!listen.isEmpty && !listen.contains("127.0.0.1:\(shared)"))
        // A second daemon on the first one's data directory is refused clearly.
        let clash = try ChildProcess.runBlocking(
            [builtProduct("notesd"), "--data-dir", first.directory, "--socket", scratch.path + "/other.sock", "--listen", "127.0.0.1:0", "--no-mdns", "--no-web"])
        #expect(clash.status == 1)
        #expect(clash.error.contains("another notesd is already using this data directory"))
    }
}
