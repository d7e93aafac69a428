import Foundation
import Synchronization
import TestSupport

/// A child process whose output is read line by line while it runs, and whose standard input
/// stays open until closed (the probe stops on end of file). Started, reaped and signalled by
/// `TestSupport.ChildProcess`.
final class Subprocess: Sendable {
    private let process: ChildProcess
    private let input: Mutex<Int32?>
    let output = LineCollector()
    let errors = LineCollector()

    /// Starts `command` (an absolute path and its arguments) with piped stdin, stdout and stderr.
    init(_ command: [String], environment: [String: String] = ProcessInfo.processInfo.environment) throws {
        let started = try ChildProcess.piped(command, environment: environment)
        process = started.process
        input = Mutex(started.input)
        Self.readLines(from: started.output, into: output)
        Self.readLines(from: started.errors, into: errors)
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

    /// The exit status once the child has exited (128 + the signal for a killed one), else nil.
    var exitStatus: Int32? { process.exitStatus }

    func send(_ signal: Int32) { process.signal(signal) }

    /// Closes stdin, sends SIGTERM and reaps the child (SIGKILL after a few seconds).
    func stop() {
        closeInput()
        process.stop(grace: .seconds(5))
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
