#if canImport(Glibc)
import Glibc
#endif
import Control
import Foundation
import Testing

/// `ControlClient` against `TestControlServer`, a real Unix socket served from a thread.
@Suite struct ControlClientTests {
    @Test func requestGetsItsResponse() throws {
        let server = try TestControlServer { request in
            request.respond(to: ControlMethods.Status.self) { _ in Samples.status }
        }
        let client = try ControlClient(socketPath: server.path)
        #expect(try client.call(ControlMethods.Status.self) == Samples.status)
        #expect(try client.call(ControlMethods.Status.self) == Samples.status, "the connection serves several calls")
        client.close()
        #expect(server.waitUntilFinished())
        #expect(server.incoming.map(\.id) == [.number(1), .number(2)], "ids count up per connection")
        #expect(server.incoming.allSatisfy { $0.method == "status" })
    }

    @Test func paramsArriveTyped() throws {
        let server = try TestControlServer { request in
            request.respond(to: ControlMethods.NotesUpdate.self) { params in
                var note = Samples.note
                note.folderPath = params.folder == .clear ? "" : "changed"
                return note
            }
        }
        let client = try ControlClient(socketPath: server.path)
        let note = try client.call(ControlMethods.NotesUpdate.self, NoteUpdateParams(id: "0190", folder: .clear))
        #expect(note.folderPath == "")
        client.close()
        #expect(server.waitUntilFinished())
        let line = String(decoding: try #require(server.requests.first), as: UTF8.self)
        #expect(line == #"{"id":1,"jsonrpc":"2.0","method":"notes.update","params":{"folder":null,"id":"0190"}}"#)
    }

    @Test func errorResponseIsThrownWithItsData() throws {
        let server = try TestControlServer { request in
            ControlWire.error(id: request.id, .notFound(.note, "ffff"))
        }
        let client = try ControlClient(socketPath: server.path)
        #expect {
            try client.call(ControlMethods.NotesGet.self, NoteGetParams(id: "ffff"))
        } throws: { error in
            guard case ControlClientError.server(let rpc) = error else { return false }
            return rpc.code == .notFound && rpc.data(as: NotFoundData.self) == NotFoundData(kind: .note, reference: "ffff")
        }
    }

    @Test func errorWithNullIDAnswersThePendingCall() throws {
        let server = try TestControlServer { _ in ControlWire.error(id: nil, .parseError("bad")) }
        let client = try ControlClient(socketPath: server.path)
        #expect(throws: ControlClientError.server(.parseError("bad"))) { try client.call(ControlMethods.Status.self) }
    }

    @Test func serverClosingMidResponse() throws {
        let server = try TestControlServer { connection in
            _ = connection.readLine()
            connection.write(#"{"jsonrpc":"2.0","id":1,"result":{"ver"#)
        }
        let client = try ControlClient(socketPath: server.path)
        #expect(throws: ControlClientError.connectionClosed(midLine: true)) { try client.call(ControlMethods.Status.self) }
    }

    @Test func serverClosingWithoutAnswer() throws {
        let server = try TestControlServer { connection in _ = connection.readLine() }
        let client = try ControlClient(socketPath: server.path)
        #expect(throws: ControlClientError.connectionClosed(midLine: false)) { try client.call(ControlMethods.Status.self) }
    }

    @Test func watchStreamsEventsUntilTheServerCloses() throws {
        let server = try TestControlServer { connection in
            guard let request = connection.readRequest() else { return }
            connection.write(request.respond(to: ControlMethods.Watch.self) { _ in WatchResult(events: ControlEvent.knownTypes) })
            // An event type from a newer daemon and a foreign notification are skipped.
            connection.write(#"{"jsonrpc":"2.0","method":"event","params":{"type":"fromTheFuture","time":1}}"# + "\n")
            connection.write(#"{"jsonrpc":"2.0","method":"somethingElse","params":{}}"# + "\n")
            // Several events in one write, and one split across writes.
            var lines = Data()
            for event in Samples.events { lines += try! ControlWire.event(event) }
            connection.write(lines.prefix(lines.count - 10))
            connection.write(lines.suffix(10))
        }
        let client = try ControlClient(socketPath: server.path)
        #expect(try client.watch().events == ControlEvent.knownTypes)
        var received: [ControlEvent] = []
        while received.count < Samples.events.count, let event = try client.nextEvent() { received.append(event) }
        #expect(received == Samples.events)
        #expect(throws: ControlClientError.connectionClosed(midLine: false)) { try client.nextEvent() }
    }

    @Test func eventsBeforeAResponseAreKept() throws {
        let server = try TestControlServer { connection in
            guard let request = connection.readRequest() else { return }
            connection.write(try! ControlWire.event(Samples.events[0]))
            connection.write(request.respond(to: ControlMethods.Sync.self) { _ in SyncResult(caughtUp: true, peers: []) })
        }
        let client = try ControlClient(socketPath: server.path)
        #expect(try client.call(ControlMethods.Sync.self, SyncParams(wait: true)).caughtUp)
        #expect(try client.nextEvent() == Samples.events[0])
    }

    @Test func aTimedOutCallsLateAnswerIsSkipped() throws {
        // The server answers the first request only once the second has arrived, so the
        // first call times out whatever the machine's speed.
        let server = try TestControlServer { connection in
            guard let first = connection.readRequest(), let second = connection.readRequest() else { return }
            connection.write(first.respond(to: ControlMethods.Status.self) { _ in Samples.status })
            connection.write(second.respond(to: ControlMethods.FoldersList.self) { _ in [Samples.folder] })
        }
        let client = try ControlClient(socketPath: server.path)
        #expect(throws: ControlClientError.timedOut(.milliseconds(20))) {
            try client.call(ControlMethods.Status.self, timeout: .milliseconds(20))
        }
        #expect(try client.call(ControlMethods.FoldersList.self) == [Samples.folder])
    }

    @Test func overlongLineFromTheServerIsAViolation() throws {
        let server = try TestControlServer { connection in
            _ = connection.readLine()
            connection.write(Data(repeating: UInt8(ascii: "x"), count: 5000))
        }
        let client = try ControlClient(socketPath: server.path, maximumLineLength: 1024)
        #expect {
            try client.call(ControlMethods.Status.self)
        } throws: { error in
            guard case ControlClientError.protocolViolation(let detail) = error else { return false }
            return detail.contains("1024")
        }
    }

    @Test func garbageFromTheServerIsAViolation() throws {
        let server = try TestControlServer { connection in
            _ = connection.readLine()
            connection.write("hello\n")
        }
        let client = try ControlClient(socketPath: server.path)
        #expect {
            try client.call(ControlMethods.Status.self)
        } throws: { error in
            if case ControlClientError.protocolViolation = error { return true }
            return false
        }
    }

    @Test func wrongResultShapeIsAViolation() throws {
        let server = try TestControlServer { request in
            ControlWire.response(id: request.id, Result<[String], RPCError>.success(["not a status"]))
        }
        let client = try ControlClient(socketPath: server.path)
        #expect {
            try client.call(ControlMethods.Status.self)
        } throws: { error in
            guard case ControlClientError.protocolViolation(let detail) = error else { return false }
            return detail.contains("unexpected shape")
        }
    }

    @Test func noSocketMeansUnreachable() throws {
        var template = Array("/tmp/notesd-control-test-XXXXXX".utf8CString)
        let directory = String(cString: try #require(mkdtemp(&template)))
        defer { try? FileManager.default.removeItem(atPath: directory) }
        #expect(throws: ControlClientError.daemonUnreachable(socketPath: directory + "/missing/control.sock", reason: "no socket there")) {
            try ControlClient(socketPath: directory + "/missing/control.sock")
        }
        // A socket file nobody listens on (a daemon that died without cleaning up).
        let stale = directory + "/stale.sock"
        let descriptor = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        _ = try UnixSocketAddress.withAddress(path: stale) { address, length in bind(descriptor, address, length) }
        close(descriptor)
        #expect(throws: ControlClientError.daemonUnreachable(socketPath: stale, reason: "nothing is listening on the socket")) {
            try ControlClient(socketPath: stale)
        }
        let long = "/tmp/" + String(repeating: "x", count: 200)
        #expect {
            try ControlClient(socketPath: long)
        } throws: { error in
            guard case ControlClientError.daemonUnreachable(_, let reason) = error else { return false }
            return reason.contains("longer than 107 bytes")
        }
    }
}
