#if canImport(Glibc)
import Glibc
#endif
import Control
import Foundation
import Synchronization

/// A control-socket server for tests: listens on a fresh path in a private temp directory
/// and runs a scripted handler for each connection on its own thread (never the test's
/// cooperative pool, so blocking client calls cannot starve it).
final class TestControlServer: Sendable {
    let directory: String
    let path: String
    private let listener: Int32
    /// Raw request lines received, in order, across connections.
    private let received = Recorder()
    private let finished = DispatchSemaphore(value: 0)

    /// One accepted connection, used by the handler on the server thread.
    final class Connection {
        let socket: UnixStreamSocket
        private var framer = LineFramer()
        private var lines: [Data] = []
        private let record: (Data) -> Void

        init(socket: UnixStreamSocket, record: @escaping (Data) -> Void) {
            self.socket = socket
            self.record = record
        }

        /// The next request line; `nil` when the client closed.
        func readLine() -> Data? {
            while lines.isEmpty {
                guard let bytes = try? socket.receive(), !bytes.isEmpty, let framed = try? framer.append(bytes) else { return nil }
                lines = framed
            }
            let line = lines.removeFirst()
            record(line)
            return line
        }

        /// The next line parsed as a request (a test failure in the handler shows as a
        /// client-side error).
        func readRequest() -> IncomingRequest? {
            guard let line = readLine(), case .success(let request) = IncomingRequest.parse(line) else { return nil }
            return request
        }

        func write(_ data: Data) { try? socket.send(data) }

        func write(_ text: String) { write(Data(text.utf8)) }
    }

    /// Starts listening; `handler` runs once per accepted connection, `connections` times.
    init(connections: Int = 1, handler: @escaping @Sendable (Connection) -> Void) throws {
        var template = Array("/tmp/notesd-control-test-XXXXXX".utf8CString)
        guard let created = mkdtemp(&template) else { throw SocketError(code: errno, operation: "mkdtemp", path: "/tmp") }
        directory = String(cString: created)
        path = directory + "/control.sock"
        listener = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        let fd = listener
        let status = try UnixSocketAddress.withAddress(path: path) { address, length in bind(fd, address, length) }
        guard status == 0, listen(fd, 8) == 0 else { throw SocketError(code: errno, operation: "bind", path: path) }
        let received = received, finished = finished
        let thread = Thread {
            for _ in 0..<connections {
                let accepted = accept(fd, nil, nil)
                guard accepted >= 0 else { break }
                let connection = Connection(socket: UnixStreamSocket(adopting: accepted, path: "test client")) { line in
                    received.lines.withLock { $0.append(line) }
                }
                handler(connection)
                connection.socket.close()
            }
            finished.signal()
        }
        thread.start()
    }

    /// Serves requests with `answer` (one response line per request) until each client
    /// closes, for `connections` connections.
    convenience init(connections: Int = 1, answer: @escaping @Sendable (IncomingRequest) -> Data) throws {
        try self.init(connections: connections) { connection in
            while let line = connection.readLine() {
                switch IncomingRequest.parse(line) {
                case .success(let request): connection.write(answer(request))
                case .failure(let rejection): connection.write(rejection.responseLine)
                }
            }
        }
    }

    /// The request lines received so far.
    var requests: [Data] { received.lines.withLock { $0 } }

    /// The requests' parsed forms.
    var incoming: [IncomingRequest] {
        requests.compactMap { try? IncomingRequest.parse($0).get() }
    }

    /// Waits until the handler thread has served every connection (bounded, so a broken
    /// test fails instead of hanging).
    func waitUntilFinished() -> Bool { finished.wait(timeout: .now() + 10) == .success }

    deinit {
        shutdown(listener, Int32(SHUT_RDWR))
        close(listener)
        try? FileManager.default.removeItem(atPath: directory)
    }
}

/// The lines a server received, shared between its thread and the test.
final class Recorder: Sendable {
    let lines = Mutex<[Data]>([])
}

/// Sample values for every protocol type, shared by the Codable, client and CLI tests.
enum Samples {
    static let peer = PeerStatus(
        device: "AAAABBBBCCCCDDDDEEEEFFFFGGGGHHHHIIIIJJJJKKKKLLLLMMMM", short: "AAAABBBB", name: "laptop",
        address: "192.168.1.5:7654", status: .idle, lastSync: Timestamp(rawValue: 1_715_000_000_000),
        lastError: "connection reset", entriesBehind: 3, retries: 1, connected: true)
    static let offlinePeer = PeerStatus(
        device: nil, short: nil, name: nil, address: nil, status: .offline, lastSync: nil, lastError: nil,
        entriesBehind: 0, retries: 0, connected: false)
    static let status = StatusResult(
        version: "0.1.0", started: Timestamp(rawValue: 1_715_000_000_000),
        device: DeviceLabel(id: "ZZZZYYYYXXXX", short: "ZZZZYYYY", name: "desktop"),
        household: HouseholdInfo(id: "HHHHOUSE", short: "HHHH", deviceCount: 2),
        listen: ["0.0.0.0:7654", "[::]:7654"], controlSocket: "/run/user/1000/notesd/control.sock",
        dataDir: "/home/u/.local/share/notesd", discovery: DiscoveryStatus(state: .unavailable, reason: "avahi-daemon is not running"),
        peers: [peer, offlinePeer],
        counters: SyncCounters(entriesSent: 10, entriesReceived: 20, conflictCopiesCreated: 1, failedConnections: 2, syncLagMs: LagSummary(p50: 4, p95: 12, samples: 80)),
        noteCount: 42)
    static let device = DeviceInfo(id: "ZZZZYYYYXXXX", short: "ZZZZYYYY", name: "desktop", isSelf: true, revoked: false, added: Timestamp(rawValue: 1_700_000_000_000), connected: false)
    static let note = NoteSummary(
        id: "0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b", short: "0190a1b2", title: "Groceries", folder: "0190a1b2-0000-7000-8000-000000000001",
        folderPath: "Home/Lists", pinned: true, color: "yellow", tags: ["home", "weekly"], trashed: false, conflictOf: nil,
        created: Timestamp(rawValue: 1_715_000_000_000), modified: Timestamp(rawValue: 1_715_000_100_000))
    static let plainNote = NoteSummary(
        id: "0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5c", short: "0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5c", title: "", folder: nil, folderPath: "",
        pinned: false, color: nil, tags: [], trashed: true, conflictOf: "0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b",
        created: Timestamp(rawValue: 0), modified: Timestamp(rawValue: -1))
    static let document = NoteDocument(summary: note, format: .html, body: "<p>milk &amp; eggs</p>\n<ul><li>bread</li></ul>", heads: [String(repeating: "ab", count: 32)])
    static let folder = FolderInfo(id: "0190a1b2-0000-7000-8000-000000000001", short: "0190a1b2", name: "Lists", parent: "0190a1b2-0000-7000-8000-000000000002", path: "Home/Lists", noteCount: 3)
    static let history = HistoryEntry(
        revision: String(repeating: "cd", count: 32), parents: [String(repeating: "ab", count: 32)], hlc: "1715000000000.3",
        time: Timestamp(rawValue: 1_715_000_000_000), device: "ZZZZYYYYXXXX", deviceShort: "ZZZZYYYY", deviceName: "desktop",
        title: "Groceries", changes: [.body, .tags])
    static let events: [ControlEvent] = [
        ControlEvent(time: Timestamp(rawValue: 1), payload: .noteChanged(NoteChangedEvent(note: note.id, title: "Groceries", change: .edited, origin: .remote, device: "AAAABBBB", deviceName: "laptop"))),
        ControlEvent(time: Timestamp(rawValue: 2), payload: .peerConnected(PeerEvent(peer: peer))),
        ControlEvent(time: Timestamp(rawValue: 3), payload: .peerDisconnected(PeerEvent(peer: offlinePeer, reason: "keepalive timeout"))),
        ControlEvent(time: Timestamp(rawValue: 4), payload: .syncProgress(SyncProgressEvent(device: "AAAA", short: "AA", name: "laptop", entriesBehind: 5, entriesReceived: 100, entriesSent: 7))),
        ControlEvent(time: Timestamp(rawValue: 5), payload: .conflictCopyCreated(ConflictCopyEvent(note: note.id, copy: plainNote.id, title: "Groceries (other version)"))),
    ]
}
