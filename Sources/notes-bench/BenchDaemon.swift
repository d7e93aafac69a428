import Control
import Foundation

/// One release `notesd` process: its own data directory, control socket and loopback port,
/// static peers only (`--no-mdns`), and `$NOTIFY_SOCKET` pointing at a socket of ours so its
/// start-up is timed to `READY=1`. Its log goes to `NAME.log` in the scratch directory.
final class BenchDaemon {
    let name: String
    let dataDirectory: String
    let socketPath: String
    let port: UInt16
    private let binary: String
    private let notifyPath: String
    private let logPath: String
    private(set) var process: Process?
    /// Open while the process runs, so its `STOPPING=1` has somewhere to go.
    private var notify: NotifySocket?
    /// Milliseconds from spawning the process to its `READY=1`, for each start.
    private(set) var readyTimes: [Double] = []

    init(name: String, in scratch: ScratchDirectory, binary: String) throws {
        self.name = name
        self.binary = binary
        dataDirectory = try scratch.directory(name)
        socketPath = scratch.path + "/\(name).sock"
        notifyPath = scratch.path + "/\(name).notify"
        logPath = scratch.path + "/\(name).log"
        port = try freeLoopbackPort()
    }

    var address: String { "127.0.0.1:\(port)" }
    var databasePath: String { dataDirectory + "/notes.db" }
    var pid: Int32 { process?.processIdentifier ?? 0 }

    /// Spawns notesd and waits for `READY=1`; returns milliseconds from spawn to ready.
    @discardableResult
    func start() throws -> Double {
        let notify = try NotifySocket(path: notifyPath)
        self.notify = notify
        let process = Process()
        process.executableURL = URL(fileURLWithPath: binary)
        process.arguments = [
            "--data-dir", dataDirectory, "--socket", socketPath, "--listen", address, "--name", name, "--no-mdns", "--web-listen", "127.0.0.1:0",
            "--log-level", "info",
        ]
        var environment = ProcessInfo.processInfo.environment
        environment["NOTIFY_SOCKET"] = notifyPath
        process.environment = environment
        if !FileManager.default.fileExists(atPath: logPath) { _ = FileManager.default.createFile(atPath: logPath, contents: nil) }
        let log = try FileHandle(forWritingTo: URL(fileURLWithPath: logPath))
        try log.seekToEnd()
        process.standardOutput = log
        process.standardError = log
        let spawned = ContinuousClock.now
        try process.run()
        self.process = process
        guard let ready = notify.waitForReady(timeout: .seconds(60)) else {
            throw BenchError("\(name) did not send READY=1 within 60 s; see \(logPath)")
        }
        let milliseconds = Measure.milliseconds(ready - spawned)
        readyTimes.append(milliseconds)
        return milliseconds
    }

    /// SIGTERM, and wait for the clean exit.
    func stop() {
        guard let process, process.isRunning else { return }
        process.terminate()
        process.waitUntilExit()
        self.process = nil
        notify = nil
    }

    /// A new control connection.
    func client() throws -> ControlClient { try ControlClient(socketPath: socketPath) }

    deinit {
        if let process, process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
    }
}

/// A loopback TCP port that was free a moment ago.
func freeLoopbackPort() throws -> UInt16 {
    let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    defer { close(descriptor) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, length) == 0 && getsockname(descriptor, $0, &length) == 0 }
    }
    guard bound else { throw BenchError("cannot find a free loopback port: \(String(cString: strerror(errno)))") }
    return UInt16(bigEndian: address.sin_port)
}

/// The notesd binary built alongside this one (`swift build -c release` puts them together).
func notesdBinary() throws -> String {
    let own = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
    let path = URL(fileURLWithPath: own).deletingLastPathComponent().appendingPathComponent("notesd").path
    guard FileManager.default.isExecutableFile(atPath: path) else {
        throw BenchError("no notesd next to notes-bench (\(path)); build it with `swift build -c release --product notesd`")
    }
    return path
}
