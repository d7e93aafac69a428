#if canImport(Glibc)
import Glibc
#endif
import Control
import Foundation
import Synchronization
import Testing
@testable import notesd
import TestSupport

/// Plays the daemon's core for the lifecycle tests.
final class FakeEngine: DaemonEngine {
    let controlHandler: any ControlRequestHandler = TestHandler()
    let heartbeats = Atomic<Int>(0)
    let shutdowns = Atomic<Int>(0)

    func heartbeat() { heartbeats.add(1, ordering: .relaxed) }
    func shutdown() { shutdowns.add(1, ordering: .relaxed) }
}

/// `DaemonMain.serve`: the order of start-up and shutdown, with systemd's notification
/// socket played by a datagram socket and the stop signal by a `StopLatch`.
@Suite struct DaemonMainTests {
    struct Setup {
        let directory: TemporaryDirectory
        let config: DaemonConfig
        let notify: NotifyListener
        let captured = CapturedLog()

        init() throws {
            directory = try TemporaryDirectory()
            config = DaemonConfig(
                dataDirectory: directory.file("data/notesd"), listen: HostPort(host: "127.0.0.1", port: 0),
                socketPath: directory.file("run/control.sock"), name: "test", staticPeers: [], mdnsEnabled: false, logLevel: .debug)
            notify = try NotifyListener(address: directory.file("notify"))
        }
    }

    @Test func servesUntilStoppedThenShutsDownInOrder() async throws {
        let setup = try Setup()
        let engine = FakeEngine()
        let started = Mutex<[DaemonConfig]>([])
        let stop = StopLatch()
        let daemon = BackgroundThread { [config = setup.config, log = setup.captured.log, notifyPath = setup.notify.address] in
            DaemonMain.serve(config: config, environment: ["NOTIFY_SOCKET": notifyPath], log: log, startEngine: { startup in
                started.withLock { $0.append(startup.config) }
                return engine
            }, waitForStop: { stop.wait() })
        }
        let notify = setup.notify
        #expect(try await blocking { try notify.receive() } == "READY=1\nSTATUS=Serving \(setup.config.socketPath)")
        #expect(started.withLock { $0 } == [setup.config])
        #expect(ControlListenerTests.mode(setup.config.dataDirectory) == 0o700)

        let client = try TestClient(path: setup.config.socketPath)
        let answer = try await blocking {
            try client.request(id: 1, "echo", params: #"{"text":"up"}"#)
            return try client.readMessage()
        }
        #expect(try ControlServerTests.text(of: answer) == "up")

        stop.trigger()
        #expect(try await blocking { try notify.receive() } == "STOPPING=1")
        #expect(try await daemon.value == .success)
        #expect(engine.shutdowns.load(ordering: .relaxed) == 1)
        #expect(ControlListenerTests.mode(setup.config.socketPath) == nil)
        #expect(try await blocking { try client.readUntilClosed() } == [])
        #expect(setup.captured.contains("stopped"))
    }

    @Test func aSecondDaemonStopsBeforeStartingItsEngine() async throws {
        let setup = try Setup()
        let first = try ControlListener.bind(path: setup.config.socketPath)
        defer { first.close() }
        let starts = Atomic<Int>(0)
        let status = DaemonMain.serve(config: setup.config, environment: [:], log: setup.captured.log, startEngine: { _ in
            starts.add(1, ordering: .relaxed)
            return FakeEngine()
        }, waitForStop: {})
        #expect(status == .failure)
        #expect(starts.load(ordering: .relaxed) == 0)
        #expect(setup.captured.contains("another notesd is already serving \(setup.config.socketPath)"))
    }

    struct EngineFailure: Error, CustomStringConvertible {
        var description: String { "the database is locked" }
    }

    @Test func anEngineThatCannotStartEndsTheProcessAndFreesTheSocket() async throws {
        let setup = try Setup()
        let status = DaemonMain.serve(config: setup.config, environment: [:], log: setup.captured.log, startEngine: { _ in
            throw EngineFailure()
        }, waitForStop: {})
        #expect(status == .failure)
        #expect(setup.captured.contains("<3>cannot start: the database is locked"))
        #expect(ControlListenerTests.mode(setup.config.socketPath) == nil)
    }

    @Test func anUnusableDataDirectoryIsNamed() async throws {
        let setup = try Setup()
        var config = setup.config
        let file = setup.directory.file("plain-file")
        #expect(FileManager.default.createFile(atPath: file, contents: Data()))
        config.dataDirectory = file + "/notesd"
        let status = DaemonMain.serve(config: config, environment: [:], log: setup.captured.log, startEngine: { _ in FakeEngine() }, waitForStop: {})
        #expect(status == .failure)
        #expect(setup.captured.contains("cannot create the data directory \(file)/notesd: Not a directory"))
    }

    @Test func theWatchdogIsPingedAfterEachHeartbeat() async throws {
        let setup = try Setup()
        let engine = FakeEngine()
        let stop = StopLatch()
        let environment = ["NOTIFY_SOCKET": setup.notify.address, "WATCHDOG_USEC": "20000", "WATCHDOG_PID": String(getpid())]
        let daemon = BackgroundThread { [config = setup.config, log = setup.captured.log] in
            DaemonMain.serve(config: config, environment: environment, log: log, startEngine: { _ in engine }, waitForStop: { stop.wait() })
        }
        let notify = setup.notify
        let received = try await blocking { try (0..<3).map { _ in try notify.receive() } }
        #expect(received == ["READY=1\nSTATUS=Serving \(setup.config.socketPath)", "WATCHDOG=1", "WATCHDOG=1"])
        #expect(engine.heartbeats.load(ordering: .relaxed) >= 2)
        stop.trigger()
        // Read while the daemon stops: with pings every 10 ms the socket's queue (10 datagrams
        // by default) fills, and STOPPING=1, unlike a ping, waits for room.
        let rest = try await blocking {
            var messages: [String] = []
            // Bounded: a daemon that never says STOPPING=1 fails here rather than hanging.
            while messages.last != "STOPPING=1" && messages.count < 10_000 { messages.append(try notify.receive()) }
            return messages
        }
        #expect(rest.last == "STOPPING=1")
        #expect(try await daemon.value == .success)
        // Pings that were in flight may come before STOPPING=1; nothing after it.
        #expect(rest.dropLast().allSatisfy { $0 == "WATCHDOG=1" })
        #expect(throws: TestFailure.self) { try notify.receive(waitingAtMost: 0) }
    }
}
