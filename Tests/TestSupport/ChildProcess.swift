import Foundation
import Synchronization

/// A child process started with `posix_spawn` and reaped with `waitpid`.
///
/// Not Foundation's `Process`: with several tests starting commands at once, its
/// `waitUntilExit` was seen never returning (docs/discovery.md; Tests/DiscoveryTests has the
/// same approach). Every pipe end is created close-on-exec, so a child started concurrently by
/// another test never inherits it and keeps a reader from seeing end of file.
public final class ChildProcess: Sendable {
    public let pid: pid_t
    private let status = Mutex<Int32?>(nil)

    /// Variables a child must not inherit from whatever runs the tests: systemd's (a daemon
    /// would take the runner's notify socket or sockets for its own) and notesd's default socket.
    public static let environment: [String: String] = ProcessInfo.processInfo.environment.filter { name, _ in
        !["NOTIFY_SOCKET", "LISTEN_PID", "LISTEN_FDS", "LISTEN_FDNAMES", "WATCHDOG_USEC", "WATCHDOG_PID",
          "JOURNAL_STREAM", "NOTESD_SOCKET", "RUNTIME_DIRECTORY", "STATE_DIRECTORY"].contains(name)
    }

    /// Starts `command` (an absolute path and its arguments) with `file actions` already set up
    /// by the caller for descriptors 0, 1 and 2.
    private init(_ command: [String], environment: [String: String] = environment, actions: inout posix_spawn_file_actions_t) throws {
        let arguments = command.map { strdup($0) } + [nil]
        let variables = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { (arguments + variables).forEach { free($0) } }
        // Whatever this process holds open beyond 0, 1 and 2 (another test's pipe, socket or
        // accepted connection) stays out of the child, which could otherwise keep it open for
        // as long as it runs.
        guard let closeFrom = Self.closeDescriptorsFrom else { throw SpawnFailed(command: ["posix_spawn_file_actions_addclosefrom_np"], code: ENOSYS) }
        let closing = closeFrom(&actions, 3)
        guard closing == 0 else { throw SpawnFailed(command: ["posix_spawn_file_actions_addclosefrom_np"], code: closing) }
        var pid: pid_t = 0
        let result = posix_spawn(&pid, command[0], &actions, nil, arguments, variables)
        guard result == 0 else { throw SpawnFailed(command: command, code: result) }
        self.pid = pid
    }

    /// glibc's `posix_spawn_file_actions_addclosefrom_np` (2.34 and later), found at run time
    /// because Swift's Glibc module does not export it.
    private static let closeDescriptorsFrom: (@convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32)? = {
        guard let symbol = dlsym(nil, "posix_spawn_file_actions_addclosefrom_np") else { return nil }
        return unsafeBitCast(symbol, to: (@convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32).self)
    }()

    /// Starts a long-running `command` with no input and both outputs appended to `logPath`.
    public static func background(_ command: [String], logPath: String) throws -> ChildProcess {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, logPath, O_WRONLY | O_APPEND | O_CREAT, 0o600)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        return try ChildProcess(command, actions: &actions)
    }

    /// The exit status once the child has exited (reaping it), else `nil`. A child killed by a
    /// signal reports 128 + the signal number, like a shell.
    public var exitStatus: Int32? {
        status.withLock { status in
            if status == nil {
                var raw: Int32 = 0
                if waitpid(pid, &raw, WNOHANG) == pid {
                    status = raw & 0x7F == 0 ? (raw >> 8) & 0xFF : 128 + (raw & 0x7F)
                }
            }
            return status
        }
    }

    /// Sends `signal` unless the child has already been reaped (its pid could be reused).
    public func signal(_ signal: Int32) {
        status.withLock { status in
            if status == nil { kill(pid, signal) }
        }
    }

    /// Waits (bounded polling) for the child to exit; SIGKILLs it at the deadline.
    @discardableResult
    public func waitForExit(timeout: Duration) -> Int32 {
        let deadline = ContinuousClock.now + timeout
        while exitStatus == nil {
            if ContinuousClock.now >= deadline { signal(SIGKILL) }
            usleep(5_000)
        }
        return exitStatus ?? -1
    }

    /// SIGTERM, then SIGKILL if it has not exited after `grace`; reaps it. Blocks the calling
    /// thread: for `defer` and `deinit`; tasks use `terminate`.
    public func stop(grace: Duration = .seconds(10)) {
        signal(SIGTERM)
        waitForExit(timeout: grace)
    }

    /// `stop`, waited for on a thread of its own: the test's tasks share a cooperative pool as
    /// small as the machine's core count, and a task blocked there starves every other test.
    public func terminate(grace: Duration = .seconds(10)) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            Thread.detachNewThread {
                self.stop(grace: grace)
                continuation.resume()
            }
        }
    }

    deinit {
        if exitStatus == nil { stop() }
    }

    // MARK: - Commands run to completion

    /// Runs `command` to completion, feeding it `input`; kills it after `timeout`. Waits on a
    /// thread of its own, never on the cooperative pool (see `terminate`).
    public static func run(_ command: [String], input: String? = nil, timeout: Duration = .seconds(90)) async throws -> CommandResult {
        try await withCheckedThrowingContinuation { continuation in
            Thread.detachNewThread {
                continuation.resume(with: Result { try runBlocking(command, input: input, timeout: timeout) })
            }
        }
    }

    /// `run`, blocking the calling thread: for `defer` and for checks made before any test runs.
    public static func runBlocking(_ command: [String], input: String? = nil, timeout: Duration = .seconds(90)) throws -> CommandResult {
        let (process, stdin, stdout, stderr) = try piped(command)
        let output = drain(stdout), errors = drain(stderr)
        // Written from a thread of its own: a child that does not read its input must not
        // block the test, and one that exits early just makes the write fail.
        Thread.detachNewThread {
            if let input { writeAll(Array(input.utf8), to: stdin) }
            close(stdin)
        }
        let exitStatus = process.waitForExit(timeout: timeout)
        return CommandResult(command: command, status: exitStatus, output: output.text(), error: errors.text())
    }

    /// Starts `command` with its standard input, output and error on channels of their own;
    /// returns the process and this side's ends (input to write to, output and errors to read),
    /// which the caller closes.
    public static func piped(_ command: [String], environment: [String: String] = environment) throws
        -> (process: ChildProcess, input: Int32, output: Int32, errors: Int32) {
        let stdin = try channel(), stdout = try channel(), stderr = try channel()
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, stdin.read, 0)
        posix_spawn_file_actions_adddup2(&actions, stdout.write, 1)
        posix_spawn_file_actions_adddup2(&actions, stderr.write, 2)
        defer { for descriptor in [stdin.read, stdout.write, stderr.write] { close(descriptor) } }
        do {
            let process = try ChildProcess(command, environment: environment, actions: &actions)
            return (process, stdin.write, stdout.read, stderr.read)
        } catch {
            for descriptor in [stdin.write, stdout.read, stderr.read] { close(descriptor) }
            throw error
        }
    }

    /// A one-way channel whose ends are close-on-exec from the start (a socket pair, because
    /// `pipe2` is not visible from Swift; the child cannot tell the difference).
    private static func channel() throws -> (read: Int32, write: Int32) {
        var descriptors: [Int32] = [0, 0]
        let type = Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
        guard socketpair(AF_UNIX, type, 0, &descriptors) == 0 else { throw SpawnFailed(command: ["socketpair"], code: errno) }
        return (descriptors[0], descriptors[1])
    }

    /// Reads `descriptor` to end of file on a thread of its own, then closes it.
    private static func drain(_ descriptor: Int32) -> Collected {
        let collected = Collected()
        Thread.detachNewThread {
            var buffer = [UInt8](repeating: 0, count: 16_384)
            while true {
                let count = read(descriptor, &buffer, buffer.count)
                if count < 0 && errno == EINTR { continue }
                guard count > 0 else { break }
                collected.append(buffer[..<count])
            }
            close(descriptor)
            collected.finish()
        }
        return collected
    }

    private static func writeAll(_ bytes: [UInt8], to descriptor: Int32) {
        var offset = 0
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBytes { send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if written < 0 && errno == EINTR { continue }
            guard written > 0 else { return }
            offset += written
        }
    }
}

/// Bytes read from a child's output, complete once the child closed it.
private final class Collected: Sendable {
    private let state = Mutex<(bytes: [UInt8], finished: Bool)>(([], false))
    private let done = DispatchSemaphore(value: 0)

    func append(_ bytes: ArraySlice<UInt8>) { state.withLock { $0.bytes.append(contentsOf: bytes) } }

    func finish() {
        state.withLock { $0.finished = true }
        done.signal()
    }

    /// Everything read, once the writer closed its end (bounded: a grandchild that kept the
    /// descriptor open must not hang the test; what was read by then is returned).
    func text() -> String {
        _ = done.wait(timeout: .now() + 5)
        return state.withLock { String(decoding: $0.bytes, as: UTF8.self) }
    }
}

public struct CommandResult: Sendable {
    public let command: [String]
    public let status: Int32
    public let output: String
    public let error: String

    /// Throws unless the command exited 0.
    @discardableResult
    public func check() throws -> CommandResult {
        guard status == 0 else { throw CommandFailed(result: self) }
        return self
    }
}

public struct CommandFailed: Error, CustomStringConvertible {
    public let result: CommandResult
    public var description: String {
        "\(result.command.joined(separator: " ")) exited \(result.status):\n\(result.error)\(result.output)"
    }
}

public struct SpawnFailed: Error, CustomStringConvertible {
    public let command: [String]
    public let code: Int32
    public var description: String { "cannot start \(command[0]): \(String(cString: strerror(code)))" }
}
