import Foundation
import Synchronization

/// A child process started with `posix_spawn` and reaped with `waitpid`.
///
/// Not Foundation's `Process`: with several tests launching commands at once, its
/// `waitUntilExit` was seen never returning here (the child left unreaped as a zombie).
/// Every channel end is created close-on-exec, so a child started concurrently by another test
/// never inherits it (which would keep a reader from ever seeing end of file).
final class Subprocess: Sendable {
    let pid: pid_t
    private let input: Mutex<Int32?>
    private let status = Mutex<Int32?>(nil)
    let output = LineCollector()
    let errors = LineCollector()

    /// Starts `command` (an absolute path and its arguments) with piped stdin, stdout and stderr.
    init(_ command: [String], environment: [String: String] = ProcessInfo.processInfo.environment) throws {
        let stdin = try Self.pipe(), stdout = try Self.pipe(), stderr = try Self.pipe()
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, stdin.read, 0)
        posix_spawn_file_actions_adddup2(&actions, stdout.write, 1)
        posix_spawn_file_actions_adddup2(&actions, stderr.write, 2)
        pid = try Self.spawn(command, environment: environment, actions: &actions)
        for descriptor in [stdin.read, stdout.write, stderr.write] { close(descriptor) }
        input = Mutex(stdin.write)
        Self.readLines(from: stdout.read, into: output)
        Self.readLines(from: stderr.read, into: errors)
    }

    deinit {
        closeInput()
        _ = exitStatus
    }

    /// Closes the child's standard input (it sees end of file).
    func closeInput() {
        input.withLock { descriptor in
            if let open = descriptor { close(open) }
            descriptor = nil
        }
    }

    /// The exit status once the child has exited (reaping it), else `nil`. A child killed by a
    /// signal reports 128 + the signal number, like a shell.
    var exitStatus: Int32? {
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
    func send(_ signal: Int32) {
        status.withLock { status in
            if status == nil { kill(pid, signal) }
        }
    }

    /// Closes stdin, sends SIGTERM and reaps the child (SIGKILL after a few seconds).
    func stop() {
        closeInput()
        send(SIGTERM)
        waitForExit(timeout: .seconds(5))
    }

    /// Waits (bounded polling) for the child to exit; SIGKILLs it at the deadline.
    @discardableResult
    func waitForExit(timeout: Duration = .seconds(10)) -> Int32 {
        let deadline = ContinuousClock.now + timeout
        while exitStatus == nil {
            if ContinuousClock.now >= deadline { send(SIGKILL) }
            usleep(10_000)
        }
        return exitStatus ?? -1
    }

    /// A one-way channel whose ends are close-on-exec from the start (a socket pair, because
    /// `pipe2` is not visible from Swift; the child cannot tell the difference).
    private static func pipe() throws -> (read: Int32, write: Int32) {
        var descriptors: [Int32] = [0, 0]
        let type = Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
        guard socketpair(AF_UNIX, type, 0, &descriptors) == 0 else {
            throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO)
        }
        return (descriptors[0], descriptors[1])
    }

    private static func spawn(_ command: [String], environment: [String: String],
                              actions: inout posix_spawn_file_actions_t) throws -> pid_t {
        let arguments = command.map { strdup($0) } + [nil]
        let variables = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { (arguments + variables).forEach { free($0) } }
        var pid: pid_t = 0
        let result = posix_spawn(&pid, command[0], &actions, nil, arguments, variables)
        guard result == 0 else { throw POSIXError(POSIXErrorCode(rawValue: result) ?? .EIO) }
        return pid
    }

    /// Reads `descriptor` to end of file on its own thread, then closes it.
    private static func readLines(from descriptor: Int32, into collector: LineCollector) {
        Thread.detachNewThread {
            var buffer = [UInt8](repeating: 0, count: 4096)
            while true {
                let count = read(descriptor, &buffer, buffer.count)
                if count < 0 && errno == EINTR { continue }
                guard count > 0 else { break }
                collector.append(Data(buffer[..<count]))
            }
            collector.close()
            close(descriptor)
        }
    }
}

/// A command the test ran failed; carries its output.
struct CommandFailed: Error, CustomStringConvertible {
    let command: [String]
    let status: Int32
    let output: String
    var description: String { "\(command.joined(separator: " ")) exited \(status):\n\(output)" }
}

/// Runs a command to completion (off the test's thread) and returns its standard output.
@discardableResult
func runCommand(_ command: [String], timeout: Duration = .seconds(60)) async throws -> String {
    let process = try Subprocess(command)
    process.closeInput()
    let status = await withCheckedContinuation { continuation in
        Thread.detachNewThread { continuation.resume(returning: process.waitForExit(timeout: timeout)) }
    }
    // The output pipes close when the child exits (nothing it starts keeps them: netlab's
    // daemons write to their own logs), so the readers finish promptly.
    try await waitUntil("the output of \(command[0]) is read", timeout: .seconds(5), seen: { "" }) {
        process.output.isClosed && process.errors.isClosed
    }
    let output = (process.output.lines + process.errors.lines).joined(separator: "\n")
    guard status == 0 else { throw CommandFailed(command: command, status: status, output: output) }
    return process.output.lines.joined(separator: "\n")
}
