import Foundation
import Testing
import TestSupport

extension CommandResult {
    var json: Any? { try? JSONSerialization.jsonObject(with: Data(output.utf8)) }
}

/// One notesd process with its own data directory, socket and port.
final class Daemon {
    let name: String
    let directory: String
    /// The sync port asked for; after `start`, the one it listens on (a port `freePort` found
    /// free can be taken by another test's connection before notesd binds it, and notesd then
    /// falls back to another).
    private(set) var port: UInt16
    /// The daemons this one dials (`--peer`), by the port each listens on when this one
    /// starts: one restarted meanwhile may have fallen back to another port.
    private var peers: [() -> UInt16?] = []
    private(set) var process: ChildProcess?
    private let logPath: String

    init(name: String, root: String) throws {
        self.name = name
        directory = root + "/" + name
        port = freePort()
        logPath = root + "/\(name).log"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
    }

    var socket: String { directory + "/control.sock" }
    var address: String { "127.0.0.1:\(port)" }
    var log: String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }

    /// The last `lines` lines logged after `offset` (a `log.count` taken earlier), named, for
    /// a failure's message.
    func logTail(after offset: Int, lines: Int = 25) -> String {
        let tail = log.dropFirst(offset).split(separator: "\n").suffix(lines)
        return "\(name)'s log:\n" + tail.map { "  \($0)" }.joined(separator: "\n")
    }

    /// Starts the process and waits until it answers `status`.
    func start() throws {
        let arguments = ["--data-dir", directory, "--socket", socket, "--listen", address, "--name", name, "--no-mdns", "--web-listen", "127.0.0.1:0", "--log-level", "debug"]
            + peers.compactMap { $0() }.flatMap { ["--peer", "127.0.0.1:\($0)"] }
        process = try ChildProcess.background([builtProduct("notesd")] + arguments, logPath: logPath)
        try waitUntil("\(name) answers status", seconds: 30) { (try? self.ctl(["status"]))?.status == 0 }
        let status = try json(["status"]) as? [String: Any]
        if let listening = (status?["listen"] as? [String])?.first, let bound = listening.split(separator: ":").last.flatMap({ UInt16($0) }) {
            port = bound
        }
    }

    /// Makes `others` this daemon's static peers from its next start on.
    func dials(_ others: [Daemon]) {
        peers = others.map { other in { [weak other] in other?.port } }
    }

    /// SIGTERM and wait for a clean exit.
    func stop() {
        process?.stop()
        process = nil
    }

    /// SIGKILL: no chance to finish anything.
    func kill9() {
        guard let process else { return }
        process.signal(SIGKILL)
        process.waitForExit(timeout: .seconds(10))
        self.process = nil
    }

    @discardableResult
    func ctl(_ arguments: [String], input: String? = nil) throws -> CommandResult {
        try ChildProcess.runBlocking([builtProduct("notesctl"), "--socket", socket] + arguments, input: input, timeout: .seconds(60))
    }

    /// `notesctl … --json`, decoded; records the failure and throws when it fails.
    func json(_ arguments: [String], input: String? = nil) throws -> Any {
        let result = try ctl(arguments + ["--json"], input: input)
        guard result.status == 0, let value = result.json else {
            throw HarnessError("\(name): notesctl \(arguments.joined(separator: " ")) exited \(result.status): \(result.error)\(result.output)")
        }
        return value
    }

    /// Every note (Trash included) as (title, html body), sorted: equal on converged devices.
    func library() throws -> [String] {
        var entries: [String] = []
        for flags in [[], ["--trash"]] {
            let notes = try json(["ls"] + flags) as? [[String: Any]] ?? []
            for note in notes {
                let id = note["id"] as! String
                let document = try json(["show", id, "--html"]) as! [String: Any]
                entries.append("\(id)|\(note["title"] as! String)|\(note["trashed"] as! Bool)|\(document["body"] as! String)")
            }
        }
        return entries.sorted()
    }

    deinit { kill9() }
}

/// `joiner` joins `inviter`'s household through a real invite code and `notesctl join`.
func pair(_ joiner: Daemon, through inviter: Daemon) throws {
    let invite = try inviter.json(["invite"]) as! [String: Any]
    let joined = try joiner.ctl(["join", invite["code"] as! String, "--address", inviter.address])
    guard joined.status == 0 else { throw HarnessError("join failed: \(joined.error)") }
}

/// Daemons named `names` under `root`, each a static peer of every other, started, and paired
/// into the first one's household.
func startHousehold(_ names: [String], root: String) throws -> [Daemon] {
    let daemons = try names.map { try Daemon(name: $0, root: root) }
    for daemon in daemons { daemon.dials(daemons.filter { $0 !== daemon }) }
    for daemon in daemons { try daemon.start() }
    for joiner in daemons.dropFirst() { try pair(joiner, through: daemons[0]) }
    return daemons
}

struct HarnessError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// Polls `condition` until it holds (bounded); throws with `what` when it never does.
func waitUntil(_ what: String, seconds: Double = 30, _ condition: () throws -> Bool) throws {
    let deadline = Date().addingTimeInterval(seconds)
    while Date() < deadline {
        if try condition() { return }
        usleep(20_000)
    }
    throw HarnessError("timed out after \(Int(seconds)) s waiting until \(what)")
}

/// A scratch directory for a test's daemons, removed afterwards (mode 0700: sockets live there).
typealias Scratch = TemporaryDirectory
