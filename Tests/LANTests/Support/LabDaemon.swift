import Control
import Foundation
import TestSupport

/// One `notesd` running inside a lab host with no static peers, driven by `notesctl` run
/// inside the same host. Its data directory, control socket and log are under the test's
/// scratch directory.
final class LabDaemon {
    let lab: Netlab
    let host: Int
    let name: String
    let directory: String
    /// `ADDRESS:7479`, the host's own lab address (each namespace has its own ports), unless
    /// the test gives another.
    let listen: String
    /// More `notesd` flags (`--no-mdns`, `--peer NAME:PORT`).
    let extraArguments: [String]
    private var process: ChildProcess?

    init(lab: Netlab, host: Int, scratch: ScratchDirectory, listen: String? = nil, extraArguments: [String] = []) async throws {
        self.lab = lab
        self.host = host
        name = "host\(host)"
        directory = scratch.path + "/" + name
        self.listen = listen ?? lab.address(host) + ":7479"
        self.extraArguments = extraArguments
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o700])
    }

    var socket: String { directory + "/control.sock" }
    var logPath: String { directory + ".log" }
    var log: String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }

    /// Starts notesd in the host and waits until it answers `status`.
    func start() async throws {
        let command = lab.inside(host, [
            builtProduct("notesd"), "--data-dir", directory, "--socket", socket, "--listen", listen,
            "--name", name, "--log-level", "debug",
        ] + extraArguments)
        let process = try ChildProcess.background(command, logPath: logPath)
        self.process = process
        try await waitUntil("\(name)'s notesd answers status", timeout: .seconds(30), seen: { self.logTail }) {
            if let status = process.exitStatus { throw LANTestFailure("\(name)'s notesd exited \(status):\n\(logTail)") }
            return (try? await ctl(["status"]))?.status == 0
        }
    }

    /// SIGTERM (a clean shutdown: sessions closed, the service withdrawn), then waits for it.
    func stop() async {
        let running = process
        process = nil
        await running?.terminate()
    }

    /// `stop`, blocking the calling thread: for `defer`.
    func stopNow() {
        process?.stop()
        process = nil
    }

    /// `notesctl --socket SOCKET ARGUMENTS…` inside the host.
    @discardableResult
    func ctl(_ arguments: [String], input: String? = nil) async throws -> CommandResult {
        try await ChildProcess.run(lab.inside(host, [builtProduct("notesctl"), "--socket", socket] + arguments), input: input)
    }

    /// `notesctl … --json`, decoded as the Control type notesctl printed; throws with
    /// notesctl's message when it fails.
    func call<Result: Decodable>(_ type: Result.Type, _ arguments: [String], input: String? = nil) async throws -> Result {
        let result = try await ctl(arguments + ["--json"], input: input).check()
        do {
            return try ControlJSON.decoder().decode(Result.self, from: Data(result.output.utf8))
        } catch {
            throw LANTestFailure("\(name): cannot decode the output of notesctl \(arguments.joined(separator: " ")): \(error)\n\(result.output)")
        }
    }

    func status() async throws -> StatusResult { try await call(StatusResult.self, ["status"]) }

    /// The names of the devices this daemon has a live session with.
    func connectedPeers() async throws -> Set<String> {
        Set(try await status().peers.filter(\.connected).compactMap(\.name))
    }

    /// Asks every peer to sync and waits (bounded) until the connected ones are caught up;
    /// a timeout is not an error here, only a hint to poll again.
    func nudge(timeoutSeconds: Int = 5) async throws {
        try await ctl(["sync", "--wait", "--timeout", String(timeoutSeconds)])
    }

    /// Every note, Trash included, as `id|title|trashed|conflictOf|html body`, sorted: equal
    /// on devices that have converged.
    func library() async throws -> [String] {
        let notes = try await call([NoteSummary].self, ["ls"]) + call([NoteSummary].self, ["ls", "--trash"])
        var entries: [String] = []
        for note in notes {
            let document = try await call(NoteDocument.self, ["show", note.id, "--html"])
            entries.append("\(note.id)|\(note.title)|\(note.trashed)|\(note.conflictOf ?? "-")|\(document.body)")
        }
        return entries.sorted()
    }

    func body(of note: String) async throws -> String { try await call(NoteDocument.self, ["show", note, "--html"]).body }

    func conflictCopies() async throws -> [NoteSummary] { try await call([NoteSummary].self, ["conflicts"]) }

    /// The last lines of the log, for failure messages.
    var logTail: String { log.split(separator: "\n").suffix(25).map { "  \(name) | \($0)" }.joined(separator: "\n") }

    deinit { stopNow() }
}
