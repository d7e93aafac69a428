#if canImport(Glibc)
import Glibc
#endif
import Control
import Foundation
import Synchronization
import Testing
@testable import notesd
import TestSupport

/// The control server end to end: real Unix sockets, a `TestHandler` playing the engine.
/// Client I/O runs in `blocking`, off the test's cooperative pool.
@Suite struct ControlServerTests {
    static func echo(_ text: String) -> String { #"{"text":"\#(text)"}"# }

    static func text(of message: IncomingMessage) throws -> String {
        let answer = try response(message)
        guard let line = answer.result else { throw TestFailure("expected a result, got \(String(describing: answer.error))") }
        return try IncomingMessage.result(EchoText.self, from: line).text
    }

    @Test func answersARequest() async throws {
        let server = try TestServer()
        let client = try server.client()
        let message = try await blocking {
            try client.request(id: 7, "echo", params: Self.echo("hello"))
            return try client.readMessage()
        }
        #expect(try response(message).id == .number(7))
        #expect(try Self.text(of: message) == "hello")
        #expect(server.handler.entries == ["echo hello"])
    }

    @Test func stringIdsComeBackAsStrings() async throws {
        let server = try TestServer()
        let client = try server.client()
        let message = try await blocking {
            try client.send(#"{"jsonrpc":"2.0","id":"abc","method":"echo","params":{"text":"x"}}"# + "\n")
            return try client.readMessage()
        }
        #expect(try response(message).id == .string("abc"))
    }

    @Test func requestsOnOneConnectionRunOneAtATimeInOrder() async throws {
        let server = try TestServer()
        let client = try server.client()
        // Three requests in one write: the slow one first.
        try await blocking {
            try client.send(
                #"{"jsonrpc":"2.0","id":1,"method":"slow","params":{"text":"a"}}"# + "\n"
                    + #"{"jsonrpc":"2.0","id":2,"method":"echo","params":{"text":"b"}}"# + "\n"
                    + #"{"jsonrpc":"2.0","id":3,"method":"echo","params":{"text":"c"}}"# + "\n")
        }
        #expect(await eventually { server.handler.entries == ["start slow a"] })
        // While `slow` waits, a second connection is served at once: connections are independent.
        let other = try server.client()
        let answer = try await blocking {
            try other.request(id: 1, "echo", params: Self.echo("other"))
            return try other.readMessage()
        }
        #expect(try Self.text(of: answer) == "other")
        #expect(server.handler.entries == ["start slow a", "echo other"])

        server.handler.gate.open()
        let messages = try await blocking { try (0..<3).map { _ in try client.readMessage() } }
        #expect(try messages.map { try response($0).id } == [.number(1), .number(2), .number(3)])
        #expect(try messages.map(Self.text(of:)) == ["a", "b", "c"])
        #expect(server.handler.entries == ["start slow a", "echo other", "end slow a", "echo b", "echo c"])
        #expect(server.handler.maximumConcurrentPerConnection == 1)
    }

    @Test func aSecondAnswerToOneRequestIsNeverTakenForTheNext() async throws {
        let server = try TestServer()
        let client = try server.client()
        let first = try await blocking {
            try client.request(id: 1, "twice", params: Self.echo("once"))
            try client.request(id: 2, "slow", params: Self.echo("next"))
            return try client.readMessage()
        }
        #expect(try response(first).id == .number(1))
        #expect(try Self.text(of: first) == "once")
        #expect(await eventually { server.handler.entries == ["start slow next"] })
        // The duplicate answer to request 1 comes while request 2 waits, and is dropped.
        server.handler.gate.open()
        let second = try await blocking {
            try client.request(id: 3, "echo", params: Self.echo("last"))
            return try (0..<2).map { _ in try client.readMessage() }
        }
        #expect(try second.map { try response($0).id } == [.number(2), .number(3)])
        #expect(try second.map(Self.text(of:)) == ["next", "last"])
    }

    @Test func aHalfClosedClientStillGetsItsAnswers() async throws {
        let server = try TestServer()
        let client = try server.client()
        let lines = try await blocking {
            try client.request(id: 1, "echo", params: Self.echo("one"))
            try client.request(id: 2, "echo", params: Self.echo("two"))
            shutdown(client.socket.fileDescriptor, Int32(SHUT_WR))
            return try client.readUntilClosed()
        }
        #expect(try lines.map { try Self.text(of: IncomingMessage.parse($0)) } == ["one", "two"])
        #expect(await eventually { server.server.connectionCount == 0 })
    }

    @Test func badInputGetsAnErrorAndTheConnectionStaysUsable() async throws {
        let server = try TestServer()
        let client = try server.client()
        let messages = try await blocking {
            try client.send("this is not json\n")
            try client.send("[1,2]\n")
            try client.send(#"{"jsonrpc":"2.0","method":"echo"}"# + "\n")
            try client.send(#"{"jsonrpc":"1.0","id":4,"method":"echo"}"# + "\n")
            try client.request(id: 5, "no.such.method")
            try client.request(id: 6, "echo")
            try client.request(id: 7, "echo", params: #"{"text":42}"#)
            try client.send("\r\n\n")  // empty lines are skipped
            try client.request(id: 8, "echo", params: Self.echo("still here"))
            return try (0..<8).map { _ in try client.readMessage() }
        }
        let answers = try messages.map(response)
        #expect(answers.map(\.id) == [nil, nil, nil, .number(4), .number(5), .number(6), .number(7), .number(8)])
        #expect(answers.map { $0.error?.code } == [.parseError, .invalidRequest, .invalidRequest, .invalidRequest, .methodNotFound, .invalidParams, .invalidParams, nil])
        #expect(answers[5].error?.message == "Invalid params: text is required.")
        #expect(answers[6].error?.message == "Invalid params: params.text must be a string.")
        #expect(try Self.text(of: messages[7]) == "still here")
    }

    @Test func aHundredMegabyteLineIsRefusedAndOthersAreStillServed() async throws {
        let server = try TestServer()
        let flooder = try server.client()
        // Sent from a thread of its own, started at once (a detached task can wait long for
        // the cooperative pool while other tests hold it): the server stops reading at the
        // cap, so this send ends with an error once the server closes the connection.
        let sender = BackgroundThread { () -> Bool in
            let chunk = Data(repeating: UInt8(ascii: "a"), count: 1 << 20)
            for _ in 0..<100 { guard (try? flooder.socket.send(chunk)) != nil else { return false } }
            return true
        }
        let lines = try await blocking { try flooder.readUntilClosed(timeout: .seconds(30)) }
        _ = try await sender.value
        #expect(lines.count == 1)
        let answer = try response(try IncomingMessage.parse(try #require(lines.first)))
        #expect(answer.id == nil)
        #expect(answer.error?.code == .invalidRequest)
        #expect(answer.error?.data(as: LineTooLongData.self) == LineTooLongData(maximumLineLength: 16 << 20))

        let other = try server.client()
        let message = try await blocking {
            try other.request(id: 1, "echo", params: Self.echo("fine"))
            return try other.readMessage()
        }
        #expect(try Self.text(of: message) == "fine")
        #expect(server.captured.contains("sent a line over 16777216 bytes"))
    }

    @Test func requestsBeforeAnOverlongLineAreAnsweredFirst() async throws {
        var limits = ControlServerLimits()
        limits.maximumLineLength = 1000
        let server = try TestServer(limits: limits)
        let client = try server.client()
        let lines = try await blocking {
            try client.request(id: 1, "echo", params: Self.echo("before"))
            try client.send(String(repeating: "x", count: 5000))
            return try client.readUntilClosed()
        }
        #expect(lines.count == 2)
        #expect(try Self.text(of: IncomingMessage.parse(lines[0])) == "before")
        #expect(try response(IncomingMessage.parse(lines[1])).error?.data(as: LineTooLongData.self) == LineTooLongData(maximumLineLength: 1000))
    }

    @Test func aClientLeavingMidRequestHarmsNothing() async throws {
        let server = try TestServer()
        let client = try server.client()
        try await blocking { try client.request(id: 1, "slow", params: Self.echo("gone")) }
        #expect(await eventually { server.handler.entries == ["start slow gone"] })
        client.socket.close()
        #expect(await eventually { server.server.connectionCount == 0 })
        // The handler sees the client has gone; its late answer is dropped.
        server.handler.gate.open()
        #expect(server.handler.entries == ["start slow gone", "abandoned slow gone"])

        let next = try server.client()
        let message = try await blocking {
            try next.request(id: 1, "echo", params: Self.echo("next"))
            return try next.readMessage()
        }
        #expect(try Self.text(of: message) == "next")
        #expect(server.captured.contains("closed by the client"))
    }

    @Test func watchStreamsEventsAfterItsAnswer() async throws {
        let server = try TestServer()
        let client = try server.client()
        let first = try await blocking {
            try client.request(id: 1, "watch")
            return try (0..<2).map { _ in try client.readMessage() }
        }
        // The answer first, although the handler sent an event before answering.
        let answer = try response(first[0])
        #expect(answer.id == .number(1))
        #expect(try IncomingMessage.result(WatchResult.self, from: try #require(answer.result)) == WatchResult(events: ControlEvent.knownTypes))
        guard case .notification(let method, let line) = first[1] else { throw TestFailure("expected an event, got \(first[1])") }
        #expect(method == "event")
        #expect(try IncomingMessage.params(ControlEvent.self, from: line) == TestHandler.event(title: "sent before the answer"))

        let sink = try #require(server.handler.sinks.withLock { $0.first })
        #expect(!sink.isClosed)
        let watchers = ControlWatchers()
        watchers.add(sink)
        watchers.add(sink)
        #expect(watchers.count == 1)
        watchers.broadcast(TestHandler.event(title: "one"))
        #expect(sink.send(TestHandler.event(title: "two")))
        // Requests still work on a watching connection; answers interleave with events.
        let rest = try await blocking {
            try client.request(id: 2, "echo", params: Self.echo("during watch"))
            return try (0..<3).map { _ in try client.readMessage() }
        }
        var titles: [String] = []
        var echoed: [String] = []
        for message in rest {
            switch message {
            case .notification(_, let line):
                guard case .noteChanged(let event) = try IncomingMessage.params(ControlEvent.self, from: line).payload else { continue }
                titles.append(event.title)
            case .response:
                echoed.append(try Self.text(of: message))
            }
        }
        #expect(titles == ["one", "two"])
        #expect(echoed == ["during watch"])

        // A second `watch` is the same subscription.
        _ = try await blocking {
            try client.request(id: 3, "watch")
            return try (0..<2).map { _ in try client.readMessage() }
        }
        #expect(server.handler.sinks.withLock { $0.count == 2 && $0[0] === $0[1] })

        client.socket.close()
        #expect(await eventually { sink.isClosed })
        #expect(!sink.send(TestHandler.event(title: "too late")))
        watchers.broadcast(TestHandler.event(title: "dropped"))
        #expect(watchers.count == 0)
    }

    @Test func aWatcherThatStopsReadingIsDisconnected() async throws {
        var limits = ControlServerLimits()
        limits.maximumUnsentEventBytes = 64 << 10
        let server = try TestServer(limits: limits)
        let client = try server.client()
        _ = try await blocking {
            try client.request(id: 1, "watch")
            return try client.readMessage()
        }
        let sink = try #require(server.handler.sinks.withLock { $0.first })
        // Never read: the socket buffers fill, then the queue passes the limit.
        let big = TestHandler.event(title: String(repeating: "t", count: 4000))
        var sent = 0
        while sink.send(big) {
            sent += 1
            if sent > 100_000 { break }
        }
        #expect(sent < 100_000)
        #expect(sink.isClosed)
        let lines = try await blocking { try client.readUntilClosed() }
        #expect(lines.count >= 1 && lines.count <= sent + 1)
        #expect(await eventually { server.captured.contains("over 65536 bytes of events were waiting, so it was disconnected") })
        #expect(await eventually { server.server.connectionCount == 0 })
    }

    @Test func theSixtyFifthConnectionIsRefusedClearly() async throws {
        let server = try TestServer()
        var clients: [TestClient] = []
        for _ in 0..<64 { clients.append(try server.client()) }
        #expect(await eventually { server.server.connectionCount == 64 })
        let extra = try server.client()
        let lines = try await blocking { try extra.readUntilClosed() }
        #expect(lines.count == 1)
        let answer = try response(IncomingMessage.parse(try #require(lines.first)))
        #expect(answer.id == nil)
        #expect(answer.error?.code == .internalError)
        #expect(answer.error?.message == "notesd is already serving 64 control connections; close some (e.g. notesctl watch) and try again.")

        // Room again once one leaves.
        clients.removeLast().socket.close()
        #expect(await eventually { server.server.connectionCount == 63 })
        let late = try server.client()
        let message = try await blocking {
            try late.request(id: 1, "echo", params: Self.echo("room"))
            return try late.readMessage()
        }
        #expect(try Self.text(of: message) == "room")
    }

    @Test func stopClosesEverythingAndRemovesTheSocket() async throws {
        let server = try TestServer()
        let idle = try server.client(), busy = try server.client(), watcher = try server.client()
        try await blocking {
            try busy.request(id: 1, "slow", params: Self.echo("interrupted"))
            try watcher.request(id: 1, "watch")
            _ = try watcher.readMessage()
        }
        #expect(await eventually { server.handler.entries == ["start slow interrupted"] })
        let sink = try #require(server.handler.sinks.withLock { $0.first })

        server.server.stop()
        server.server.stop()
        #expect(server.server.connectionCount == 0)
        #expect(sink.isClosed)
        #expect(access(server.path, F_OK) != 0 && errno == ENOENT)
        let ends = try await blocking { try [idle, busy].map { try $0.readUntilClosed() } }
        #expect(ends == [[], []])
        server.handler.gate.open()
        #expect(server.handler.entries == ["start slow interrupted", "abandoned slow interrupted"])
        #expect(throws: SocketError.self) { try server.client() }
    }
}

/// Binding, stale sockets, directories, modes and who may connect.
@Suite struct ControlListenerTests {
    static func mode(_ path: String) -> mode_t? {
        var status = stat()
        return lstat(path, &status) == 0 ? status.st_mode & 0o7777 : nil
    }

    @Test func theSocketIs0600InADirectoryCreated0700() throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("run/notesd/control.sock")
        let listener = try ControlListener.bind(path: path)
        #expect(Self.mode(path) == 0o600)
        #expect(Self.mode(directory.file("run")) == 0o700)
        #expect(Self.mode(directory.file("run/notesd")) == 0o700)
        listener.close()
        #expect(Self.mode(path) == nil)
    }

    @Test func aStaleSocketIsReplaced() throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("control.sock")
        // A socket file nobody listens on: what a daemon killed with -9 leaves behind.
        let dead = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        let bound = try UnixSocketAddress.withAddress(path: path) { address, length in bind(dead, address, length) }
        #expect(bound == 0)
        close(dead)
        let listener = try ControlListener.bind(path: path)
        #expect(SocketActivation.isListeningUnixStream(listener.fileDescriptor))
        #expect(Self.mode(path) == 0o600)
    }

    @Test func aLiveSocketIsNeverTakenOver() throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("control.sock")
        let first = try ControlListener.bind(path: path)
        #expect(throws: ControlSocketError.alreadyServing(path: path)) { try ControlListener.bind(path: path) }
        #expect(ControlSocketError.alreadyServing(path: path).description == "another notesd is already serving \(path); stop it, or give this one its own --socket and --data-dir")
        // The first one's file is untouched.
        #expect(Self.mode(path) == 0o600)
        first.close()
    }

    @Test func somethingElseAtThePathIsLeftAlone() throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("control.sock")
        #expect(FileManager.default.createFile(atPath: path, contents: Data("mine".utf8)))
        #expect(throws: ControlSocketError.notASocket(path: path)) { try ControlListener.bind(path: path) }
        #expect(FileManager.default.contents(atPath: path) == Data("mine".utf8))
    }

    @Test func inASharedDirectoryTheSocketDirectoryMustBePrivate() throws {
        let directory = try TemporaryDirectory()
        let shared = directory.file("tmp")
        #expect(mkdir(shared, 0o777) == 0 && chmod(shared, 0o1777) == 0)
        let open = shared + "/notesd-open"
        #expect(mkdir(open, 0o755) == 0 && chmod(open, 0o755) == 0)
        #expect(throws: ControlSocketError.unsafeDirectory(path: open, ownerUserID: geteuid(), mode: 0o755)) {
            try ControlListener.bind(path: open + "/control.sock")
        }
        let foreign = shared + "/notesd-foreign"
        #expect(mkdir(foreign, 0o700) == 0 && chown(foreign, 65534, 65534) == 0)
        #expect(throws: ControlSocketError.unsafeDirectory(path: foreign, ownerUserID: 65534, mode: 0o700)) {
            try ControlListener.bind(path: foreign + "/control.sock")
        }
        // Missing: created private, then used.
        let fresh = try ControlListener.bind(path: shared + "/notesd-new/control.sock")
        #expect(Self.mode(shared + "/notesd-new") == 0o700)
        fresh.close()
    }

    @Test func closingRemovesOnlyTheFileThisProcessBound() throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("control.sock")
        let old = try ControlListener.bind(path: path)
        #expect(unlink(path) == 0)
        let new = try ControlListener.bind(path: path)
        old.close()
        #expect(Self.mode(path) == 0o600)
        new.close()
        #expect(Self.mode(path) == nil)
    }

    @Test func anActivatedSocketIsAdoptedAndLeftInPlace() throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("control.sock")
        // As systemd would: bound, listening, SocketMode=0660, SocketGroup=4242.
        let descriptor = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        let bound = try UnixSocketAddress.withAddress(path: path) { address, length in bind(descriptor, address, length) }
        #expect(bound == 0 && listen(descriptor, 8) == 0 && chmod(path, 0o660) == 0 && chown(path, 0, 4242) == 0)
        let listener = try ControlListener.adopt(ActivatedSocket(fileDescriptor: descriptor, name: "control"))
        #expect(listener.path == path)
        #expect(listener.accessGroupID == 4242)
        #expect(fcntl(descriptor, F_GETFL) & O_NONBLOCK != 0)
        listener.close()
        #expect(Self.mode(path) == 0o660)
    }

    @Test func theAccessPolicyServesOwnerRootAndTheChosenGroup() {
        let owner = ControlAccessPolicy(ownerUserID: 1000, groupID: nil)
        let peer = { (uid: UInt32, gid: UInt32) in PeerCredentials(processID: 1, userID: uid, groupID: gid) }
        #expect(owner.allows(peer(1000, 1000)) { [] })
        #expect(owner.allows(peer(0, 0)) { [] })
        #expect(!owner.allows(peer(1001, 1000)) { [1000] })
        let group = ControlAccessPolicy(ownerUserID: 1000, groupID: 50)
        #expect(group.allows(peer(1001, 50)) { [] })
        #expect(group.allows(peer(1001, 100)) { [7, 50] })
        #expect(!group.allows(peer(1001, 100)) { [7] })
    }
}

/// `SO_PEERCRED` against real processes of another user: a Python child that drops to
/// uid 65534 (nobody) before connecting, which the test can do because it runs as root.
@Suite struct PeerCredentialTests {
    /// Connects as `uid`/`gid` with `groups`, sends `request` (if any), prints every line
    /// received until the server closes, then `EOF`.
    static let client = """
        import os, socket, sys
        path, uid, gid, groups, request = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5]
        os.setgroups([int(g) for g in groups.split(",") if g])
        os.setgid(gid)
        os.setuid(uid)
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(path)
        if request:
            try:
                s.sendall(request.encode() + b"\\n")
                s.shutdown(socket.SHUT_WR)
            except (BrokenPipeError, ConnectionResetError):
                pass  # refused at once: the error line is still there to read
        s.settimeout(10)
        data = b""
        while True:
            try:
                chunk = s.recv(65536)
            except ConnectionResetError:
                break
            if not chunk:
                break
            data += chunk
        sys.stdout.write(data.decode())
        sys.stdout.write("EOF\\n")
        """

    static func runClient(path: String, uid: UInt32, gid: UInt32, groups: [UInt32] = [], request: String = "") throws -> [String] {
        let result = try ChildProcess.runBlocking(
            ["/usr/bin/python3", "-c", client, path, String(uid), String(gid), groups.map(String.init).joined(separator: ","), request])
        guard result.status == 0 else { throw TestFailure("client failed: \(result.error)") }
        return result.output.split(separator: "\n").map(String.init)
    }

    /// Opens the file-system fence (directory 0755, socket 0666) so that only `SO_PEERCRED`
    /// stands between the other user and the daemon.
    static func widen(_ server: TestServer) {
        chmod(server.directory.path, 0o755)
        chmod(server.path, 0o666)
    }

    @Test func anotherUserIsRefusedWithPermissionDenied() async throws {
        let server = try TestServer()
        Self.widen(server)
        let path = server.path
        let lines = try await blocking {
            try Self.runClient(path: path, uid: 65534, gid: 65534, request: #"{"jsonrpc":"2.0","id":1,"method":"echo","params":{"text":"x"}}"#)
        }
        #expect(lines.count == 2 && lines.last == "EOF", "\(lines)")
        let answer = try response(IncomingMessage.parse(Data(lines[0].utf8)))
        #expect(answer.id == nil)
        #expect(answer.error?.code == .permissionDenied)
        #expect(answer.error?.message == "This notesd belongs to uid \(geteuid()); run notesctl as that user (or root), or start your own notesd.")
        #expect(server.handler.entries.isEmpty)
        #expect(server.captured.contains("refused a control connection from uid 65534"))
    }

    @Test func membersOfTheChosenGroupAreServed() async throws {
        let server = try TestServer(access: ControlAccessPolicy(ownerUserID: geteuid(), groupID: 4242))
        Self.widen(server)
        let path = server.path
        let request = #"{"jsonrpc":"2.0","id":1,"method":"echo","params":{"text":"member"}}"#
        // A supplementary group (SO_PEERGROUPS), then the primary group.
        let viaSupplementary = try await blocking { try Self.runClient(path: path, uid: 65534, gid: 65534, groups: [4242], request: request) }
        let viaPrimary = try await blocking { try Self.runClient(path: path, uid: 65534, gid: 4242, request: request) }
        let outsider = try await blocking { try Self.runClient(path: path, uid: 65534, gid: 65534, groups: [4243], request: request) }
        for lines in [viaSupplementary, viaPrimary] {
            #expect(lines.count == 2, "\(lines)")
            #expect(try ControlServerTests.text(of: IncomingMessage.parse(Data(lines[0].utf8))) == "member")
        }
        #expect(try response(IncomingMessage.parse(Data(outsider[0].utf8))).error?.code == .permissionDenied)
    }
}
