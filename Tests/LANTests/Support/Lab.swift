import Foundation
import TestSupport
import Synchronization

/// A private LAN made by `scripts/netlab` (docs/discovery.md): hosts 1…N, each a network
/// namespace with its own D-Bus and avahi-daemon, joined by a bridge in a namespace of its
/// own. Nothing of it is in the root namespace, so nothing reaches a real network.
struct Lab: Sendable {
    static let script = packageRoot + "/scripts/netlab"
    private static let counter = Mutex(0)

    /// Whether labs can run here (`netlab check`: root, `ip netns`, dbus-daemon, avahi-daemon);
    /// when not, prints why once. Swift Testing evaluates a suite's condition for the suite and
    /// again for each test, hence the stored answer.
    static let canRun: Bool = check(for: "RealLANTests")

    private static func check(for suite: String) -> Bool {
        do {
            try ChildProcess.runBlocking([script, "check"], timeout: .seconds(30)).check()
            return true
        } catch let failure as CommandFailed {
            let reason = (failure.result.error + failure.result.output).trimmingCharacters(in: .whitespacesAndNewlines)
            print("\(suite) skipped: \(reason)")
        } catch {
            print("\(suite) skipped: cannot run \(script): \(error)")
        }
        return false
    }

    let name: String
    let hosts: Int

    /// Creates a lab whose name is unique to this process and call (`l<pid>n<serial>`).
    static func up(hosts: Int) async throws -> Lab {
        let serial = counter.withLock { value in
            value += 1
            return value
        }
        let lab = Lab(name: "l\(getpid() % 100_000)n\(serial)", hosts: hosts)
        do {
            try await lab.netlab(["up", lab.name, String(hosts)])
        } catch {
            lab.down()
            throw error
        }
        return lab
    }

    /// Kills everything in the lab's namespaces and deletes them; safe to call more than once.
    /// Blocking, so that it can run in a `defer`.
    func down() {
        _ = try? ChildProcess.runBlocking([Self.script, "down", name], timeout: .seconds(60))
    }

    /// Host `host`'s IPv4 address, as netlab assigns it.
    func address(_ host: Int) async throws -> String {
        try await netlab(["address", name, String(host)]).output.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Unplugs or replugs host `host`'s only interface.
    func setLink(_ host: Int, up: Bool) async throws {
        try await netlab(["link", name, String(host), up ? "up" : "down"])
    }

    /// Stops host `host`'s avahi-daemon (SIGTERM: it sends goodbye packets).
    func stopAvahi(_ host: Int) async throws { try await netlab(["avahi-stop", name, String(host)]) }

    /// Starts it again; returns once it logged "Server startup complete".
    func startAvahi(_ host: Int) async throws { try await netlab(["avahi-start", name, String(host)]) }

    /// `command` as run inside host `host`, on that host's D-Bus (`netlab exec`, which execs:
    /// the process started is, in the end, `command[0]` itself, with the same pid).
    func inside(_ host: Int, _ command: [String]) -> [String] {
        [Self.script, "exec", name, String(host)] + command
    }

    @discardableResult
    private func netlab(_ arguments: [String]) async throws -> CommandResult {
        try await ChildProcess.run([Self.script] + arguments, timeout: .seconds(60)).check()
    }
}

/// A per-test directory (mode 0700: control sockets and data directories live in it).
struct ScratchDirectory {
    let path: String

    init() throws {
        var template = Array("/tmp/notesd-lan-XXXXXX".utf8CString)
        guard let created = mkdtemp(&template) else { throw LANTestFailure("mkdtemp failed: \(String(cString: strerror(errno)))") }
        path = String(cString: created)
    }

    func remove() { try? FileManager.default.removeItem(atPath: path) }
}

struct LANTestFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// Polls `condition` every 50 ms until it holds; throws saying `what` did not happen (and the
/// last thing `seen` reports) after `timeout`. Never a blind sleep.
func waitUntil(_ what: String, timeout: Duration = .seconds(60), seen: () async -> String = { "" },
               _ condition: () async throws -> Bool) async throws {
    let start = ContinuousClock.now
    while try await !condition() {
        guard ContinuousClock.now - start < timeout else {
            let detail = await seen()
            throw LANTestFailure("timed out after \(timeout) waiting until \(what)\(detail.isEmpty ? "" : "; saw:\n\(detail)")")
        }
        try await Task.sleep(for: .milliseconds(50))
    }
}

extension Duration {
    /// Whole milliseconds, for printed figures.
    var milliseconds: Int64 { components.seconds * 1000 + components.attoseconds / 1_000_000_000_000_000 }
}
