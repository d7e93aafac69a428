#if canImport(Glibc)
import Glibc
#endif
import Control
import Foundation
import Synchronization
import Testing
@testable import notesd
import TestSupport

@Suite struct LogTests {
    @Test func journalLinesCarryThePriorityAndNoTimestamp() {
        #expect(Log.format("ready", level: .info, style: .journal, timestamp: "") == "<6>ready\n")
        #expect(Log.format("two\nlines", level: .error, style: .journal, timestamp: "") == "<3>two\n<3>lines\n")
        #expect(Log.format("x", level: .debug, style: .journal, timestamp: "") == "<7>x\n")
    }

    @Test func terminalLinesCarryTimestampAndLevel() {
        #expect(Log.format("a\nb", level: .warning, style: .timestamped, timestamp: "T") == "T warning: a\nT warning: b\n")
    }

    @Test func timestampsAreISO8601LocalTimeWithOffset() {
        var time = tm()
        time.tm_year = 124; time.tm_mon = 4; time.tm_mday = 6
        time.tm_hour = 4; time.tm_min = 3; time.tm_sec = 7
        time.tm_gmtoff = 2 * 3600
        #expect(Log.formatTimestamp(time, milliseconds: 9) == "2024-05-06T04:03:07.009+02:00")
        time.tm_gmtoff = -(9 * 3600 + 30 * 60)
        #expect(Log.formatTimestamp(time, milliseconds: 123) == "2024-05-06T04:03:07.123-09:30")
        let now = Log.localTimestamp()
        #expect(now.wholeMatch(of: /\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}[+-]\d\d:\d\d/) != nil, "\(now)")
    }

    @Test func journalStyleOnlyWhenStderrIsTheJournalStream() {
        #expect(Log.Style.detect(journalStream: "8:12345", standardError: (8, 12345)) == .journal)
        #expect(Log.Style.detect(journalStream: "8:12345", standardError: (8, 999)) == .timestamped)
        #expect(Log.Style.detect(journalStream: nil, standardError: (8, 12345)) == .timestamped)
        #expect(Log.Style.detect(journalStream: "garbage", standardError: (8, 12345)) == .timestamped)
        #expect(Log.Style.detect(journalStream: "8:12345", standardError: nil) == .timestamped)
    }

    @Test func levelsBelowTheThresholdAreNotEvenFormatted() {
        let captured = CapturedLog(level: .notice)
        let evaluated = Atomic<Int>(0)
        func expensive() -> String {
            evaluated.add(1, ordering: .relaxed)
            return "detail"
        }
        captured.log.debug(expensive())
        captured.log.info(expensive())
        captured.log.notice("kept")
        captured.log.error("also kept")
        #expect(captured.lines == ["<5>kept\n", "<3>also kept\n"])
        #expect(evaluated.load(ordering: .relaxed) == 0)
    }

    @Test func linesFromManyThreadsStayWhole() async {
        let captured = CapturedLog()
        await withTaskGroup(of: Void.self) { group in
            for thread in 0..<8 {
                group.addTask { for index in 0..<200 { captured.log.info("thread \(thread) line \(index) " + String(repeating: "x", count: 100)) } }
            }
        }
        let lines = captured.lines
        #expect(lines.count == 1600)
        #expect(lines.allSatisfy { $0.wholeMatch(of: /<6>thread \d line \d+ x{100}\n/) != nil })
    }
}

/// A datagram socket standing in for systemd's notification socket.
final class NotifyListener: Sendable {
    let descriptor: Int32
    let address: String

    /// Bound at `path`, or at an abstract name when `path` starts with `@`.
    init(address: String) throws {
        self.address = address
        descriptor = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        let fd = descriptor
        let bound = try SystemdNotifier.withAddress(address) { pointer, length in bind(fd, pointer, length) }
        guard bound == 0 else { throw SocketError(code: errno, operation: "bind", path: address) }
    }

    deinit { close(descriptor) }

    /// The next datagram, waiting at most `milliseconds`.
    func receive(waitingAtMost milliseconds: Int32 = 10_000) throws -> String {
        var request = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
        guard poll(&request, 1, milliseconds) == 1 else { throw TestFailure("no notification arrived") }
        var buffer = [UInt8](repeating: 0, count: 4096)
        let count = recv(descriptor, &buffer, buffer.count, 0)
        guard count >= 0 else { throw SocketError(code: errno, operation: "recv", path: address) }
        return String(decoding: buffer[..<count], as: UTF8.self)
    }
}

@Suite struct SystemdNotifierTests {
    @Test func sendsEachStateAsOneDatagram() throws {
        let directory = try TemporaryDirectory()
        let listener = try NotifyListener(address: directory.file("notify"))
        let notifier = SystemdNotifier(environment: ["NOTIFY_SOCKET": listener.address])
        #expect(notifier.isActive)
        try notifier.ready(status: "Serving\n/run/x")
        #expect(try listener.receive() == "READY=1\nSTATUS=Serving /run/x")
        try notifier.ready()
        #expect(try listener.receive() == "READY=1")
        try notifier.status("3 peers")
        #expect(try listener.receive() == "STATUS=3 peers")
        try notifier.watchdog()
        #expect(try listener.receive() == "WATCHDOG=1")
        try notifier.stopping()
        #expect(try listener.receive() == "STOPPING=1")
    }

    @Test func aWatchdogPingNeverWaitsForRoom() throws {
        let directory = try TemporaryDirectory()
        let listener = try NotifyListener(address: directory.file("notify"))
        let notifier = SystemdNotifier(environment: ["NOTIFY_SOCKET": listener.address])
        // Nobody reads: the queue fills (net.unix.max_dgram_qlen), then a ping fails at once.
        var sent = 0
        let failure = #expect(throws: SocketError.self) {
            while sent < 100_000 {
                try notifier.watchdog()
                sent += 1
            }
        }
        #expect(failure?.code == EAGAIN)
        #expect(sent > 0)
        #expect(try listener.receive() == "WATCHDOG=1")
    }

    @Test func reachesAbstractSockets() throws {
        let name = "@notesd-test-notify-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        let listener = try NotifyListener(address: name)
        try SystemdNotifier(environment: ["NOTIFY_SOCKET": name]).ready()
        #expect(try listener.receive() == "READY=1")
    }

    @Test func doesNothingOutsideSystemd() throws {
        let notifier = SystemdNotifier(environment: [:])
        #expect(!notifier.isActive)
        try notifier.ready(status: "x")
        try notifier.watchdog()
        try notifier.stopping()
        #expect(notifier.watchdogTimeout == nil)
    }

    @Test func aMissingSocketIsAnErrorNamingIt() throws {
        let directory = try TemporaryDirectory()
        let notifier = SystemdNotifier(environment: ["NOTIFY_SOCKET": directory.file("gone")])
        #expect {
            try notifier.ready()
        } throws: { error in
            (error as? SocketError)?.path == directory.file("gone") && (error as? SocketError)?.code == ENOENT
        }
    }

    @Test func watchdogIntervalFollowsWatchdogUsecForThisProcessOnly() {
        let mine = SystemdNotifier(environment: ["WATCHDOG_USEC": "60000000", "WATCHDOG_PID": "42"], processID: 42)
        #expect(mine.watchdogTimeout == .seconds(60))
        #expect(mine.watchdogPingInterval == .seconds(30))
        #expect(SystemdNotifier(environment: ["WATCHDOG_USEC": "60000000"], processID: 42).watchdogTimeout == .seconds(60))
        #expect(SystemdNotifier(environment: ["WATCHDOG_USEC": "60000000", "WATCHDOG_PID": "43"], processID: 42).watchdogTimeout == nil)
        #expect(SystemdNotifier(environment: ["WATCHDOG_USEC": "0"], processID: 42).watchdogTimeout == nil)
        #expect(SystemdNotifier(environment: ["WATCHDOG_USEC": "soon"], processID: 42).watchdogTimeout == nil)
    }
}

@Suite(.serialized) struct SocketActivationTests {
    @Test func parsesDescriptorsAndNames() throws {
        let sockets = try SocketActivation.parse(
            environment: ["LISTEN_PID": "77", "LISTEN_FDS": "2", "LISTEN_FDNAMES": "control:sync"], processID: 77)
        #expect(sockets == [ActivatedSocket(fileDescriptor: 3, name: "control"), ActivatedSocket(fileDescriptor: 4, name: "sync")])
    }

    @Test func namesThatDoNotMatchTheCountAreNotUsed() throws {
        let sockets = try SocketActivation.parse(environment: ["LISTEN_PID": "77", "LISTEN_FDS": "2", "LISTEN_FDNAMES": "control"], processID: 77)
        #expect(sockets.map(\.name) == ["unknown", "unknown"])
    }

    @Test func descriptorsForAnotherProcessOrNoneAreIgnored() throws {
        #expect(try SocketActivation.parse(environment: [:], processID: 77).isEmpty)
        #expect(try SocketActivation.parse(environment: ["LISTEN_PID": "78", "LISTEN_FDS": "1"], processID: 77).isEmpty)
        #expect(try SocketActivation.parse(environment: ["LISTEN_PID": "77", "LISTEN_FDS": "0"], processID: 77).isEmpty)
    }

    @Test func malformedVariablesAreErrors() {
        #expect(throws: SocketActivationError(description: "$LISTEN_FDS is \"many\", not a number of descriptors")) {
            try SocketActivation.parse(environment: ["LISTEN_PID": "77", "LISTEN_FDS": "many"], processID: 77)
        }
        #expect(throws: SocketActivationError(description: "$LISTEN_PID is \"me\", not a process id")) {
            try SocketActivation.parse(environment: ["LISTEN_PID": "me", "LISTEN_FDS": "1"], processID: 77)
        }
    }

    @Test func picksTheListeningUnixStreamSocket() throws {
        var pair: [Int32] = [0, 0]
        #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &pair) == 0)
        defer { close(pair[0]); close(pair[1]) }
        let directory = try TemporaryDirectory()
        let first = try ControlListener.bind(path: directory.file("a.sock"))
        let second = try ControlListener.bind(path: directory.file("b.sock"))
        let datagram = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
        defer { close(datagram) }

        // A connected (not listening) stream socket is no listener, whatever its name.
        let connected = ActivatedSocket(fileDescriptor: pair[0], name: "control")
        let unnamed = ActivatedSocket(fileDescriptor: first.fileDescriptor, name: "notesd.socket")
        let named = ActivatedSocket(fileDescriptor: second.fileDescriptor, name: "control")
        let other = ActivatedSocket(fileDescriptor: datagram, name: "x")
        #expect(!SocketActivation.isListeningUnixStream(pair[0]))
        #expect(SocketActivation.isListeningUnixStream(first.fileDescriptor))
        #expect(SocketActivation.controlSocket(among: [connected, other]) == nil)
        #expect(SocketActivation.controlSocket(among: [connected, unnamed]) == unnamed)
        #expect(SocketActivation.controlSocket(among: [unnamed, named]) == named)
    }

    @Test func passedDescriptorsBecomeCloseOnExec() throws {
        var pair: [Int32] = [0, 0]
        #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &pair) == 0)
        defer { close(pair[0]); close(pair[1]) }
        #expect(fcntl(pair[0], F_GETFD) & FD_CLOEXEC == 0)
        try SocketActivation.markCloseOnExec([ActivatedSocket(fileDescriptor: pair[0], name: "control")])
        #expect(fcntl(pair[0], F_GETFD) & FD_CLOEXEC != 0)
        close(pair[1])
        pair[1] = -1
        let closed = Int32(pair[1])
        #expect(throws: SocketActivationError.self) { try SocketActivation.markCloseOnExec([ActivatedSocket(fileDescriptor: closed, name: "x")]) }
    }

    @Test func takingClearsTheVariables() throws {
        setenv("LISTEN_PID", "1", 1)
        setenv("LISTEN_FDS", "1", 1)
        setenv("LISTEN_FDNAMES", "control", 1)
        // For process 1, not us: nothing is taken, and the variables are gone all the same.
        let sockets = try SocketActivation.takeFromEnvironment(ProcessInfo.processInfo.environment)
        #expect(sockets.isEmpty)
        #expect(getenv("LISTEN_PID") == nil && getenv("LISTEN_FDS") == nil && getenv("LISTEN_FDNAMES") == nil)
    }
}

@Suite(.serialized) struct SignalWatcherTests {
    /// Dispatch installs its handler on the watcher's queue after `resume`; raising the
    /// signal before that would run the default action and end the test process.
    static func handlerInstalled(_ signal: Int32) -> Bool {
        var action = sigaction()
        sigaction(signal, nil, &action)
        return unsafeBitCast(action.__sigaction_handler.sa_handler, to: Int.self) != unsafeBitCast(SIG_DFL, to: Int.self)
    }

    @Test func theFirstStopSignalCallsTheHandlerOnceAndOthersAreLogged() async throws {
        // SIGUSR1/SIGUSR2 stand in for SIGTERM/SIGHUP: nothing else in the test process uses them.
        let captured = CapturedLog()
        let calls = Mutex<[Int32]>([])
        let watcher = SignalWatcher(terminating: [SIGUSR1], logged: [SIGUSR2], queue: DispatchQueue(label: "test.signals"), log: captured.log) { signal in
            calls.withLock { $0.append(signal) }
        }
        defer { watcher.cancel() }
        #expect(await eventually { Self.handlerInstalled(SIGUSR1) && Self.handlerInstalled(SIGUSR2) })

        kill(getpid(), SIGUSR2)
        #expect(await eventually { captured.contains("SIGUSR2 received and ignored") })
        #expect(calls.withLock { $0 }.isEmpty)

        kill(getpid(), SIGUSR1)
        #expect(await eventually { calls.withLock { $0 } == [SIGUSR1] })
        kill(getpid(), SIGUSR1)
        #expect(await eventually { captured.contains("SIGUSR1 received again; already stopping") })
        #expect(calls.withLock { $0 } == [SIGUSR1])
    }

    @Test func brokenPipesAreErrorsNotSignals() throws {
        SignalWatcher.ignoreBrokenPipes()
        var ends: [Int32] = [0, 0]
        #expect(pipe(&ends) == 0)
        close(ends[0])
        defer { close(ends[1]) }
        var byte: UInt8 = 0
        #expect(write(ends[1], &byte, 1) == -1)
        #expect(errno == EPIPE)
    }
}

@Suite struct DataDirectoryTests {
    @Test func createsMissingDirectoriesPrivate() throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("a/b/notesd")
        try DataDirectory.prepare(path)
        for created in [directory.file("a"), directory.file("a/b"), path] {
            var status = stat()
            #expect(stat(created, &status) == 0)
            #expect(status.st_mode & 0o777 == 0o700, "\(created)")
        }
        #expect(try DataDirectory.prepare(path) == nil, "a private directory gets no warning")
        // Existing: used as it is, with a warning naming the chmod when others can enter it.
        chmod(path, 0o750)
        let warning = try DataDirectory.prepare(path)
        var status = stat()
        stat(path, &status)
        #expect(status.st_mode & 0o777 == 0o750)
        #expect(warning == "the data directory \(path) is open to other users (mode 750); the notes are only private once you run: chmod 700 \(path)")
    }

    @Test func anImpossiblePathIsAnErrorNamingIt() throws {
        let directory = try TemporaryDirectory()
        let file = directory.file("file")
        #expect(FileManager.default.createFile(atPath: file, contents: Data()))
        #expect {
            try DataDirectory.prepare(file + "/notesd")
        } throws: { error in
            (error as? FileSystemError)?.description == "cannot create the data directory \(file)/notesd: Not a directory; create it yourself or pass --data-dir DIR"
        }
        #expect {
            try DataDirectory.prepare(file)
        } throws: { error in
            (error as? FileSystemError)?.description == "cannot use the data directory \(file): Not a directory; create it yourself or pass --data-dir DIR"
        }
    }
}

@Suite struct StopLatchTests {
    @Test func aTriggerBeforeOrAfterWaitingEndsEveryWait() async throws {
        // Each wait runs on its own thread and must return: `value` fails the test after 60 s.
        let early = StopLatch()
        early.trigger()
        let earlyWaits = BackgroundThread { () -> Int in
            early.wait()
            early.wait()
            return 2
        }
        #expect(try await earlyWaits.value == 2)

        let late = StopLatch()
        let waiters = (0..<3).map { index in BackgroundThread { () -> Int in late.wait(); return index } }
        late.trigger()
        late.trigger()
        var finished: [Int] = []
        for waiter in waiters { finished.append(try await waiter.value) }
        #expect(finished == [0, 1, 2])
    }
}
