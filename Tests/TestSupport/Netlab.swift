import Foundation
import Synchronization

/// A private LAN made by `scripts/netlab` (docs/discovery.md): hosts 1…N, each a network
/// namespace with its own D-Bus and avahi-daemon, joined by a bridge in a namespace of its
/// own. Nothing of it is in the root namespace, so nothing reaches a real network. Tests call
/// `down()` in a `defer`.
public struct Netlab: Sendable {
    public static let script = packageRoot + "/scripts/netlab"
    private static let counter = Mutex(0)
    private static let verdicts = Mutex<[String: Bool]>([:])

    /// Whether labs can run here (`netlab check`: root, `ip netns`, dbus-daemon, avahi-daemon);
    /// when not, prints once why `suite` is skipped. Swift Testing evaluates a suite's
    /// condition for the suite and again for each test, hence the stored answer.
    public static func canRun(for suite: String) -> Bool {
        if let known = verdicts.withLock({ $0[suite] }) { return known }
        var verdict = false
        do {
            try ChildProcess.runBlocking([script, "check"], timeout: .seconds(30)).check()
            verdict = true
        } catch let failure as CommandFailed {
            let reason = (failure.result.error + failure.result.output).trimmingCharacters(in: .whitespacesAndNewlines)
            print("\(suite) skipped: \(reason)")
        } catch {
            print("\(suite) skipped: cannot run \(script): \(error)")
        }
        verdicts.withLock { $0[suite] = verdict }
        return verdict
    }

    public let name: String
    public let hosts: Int
    /// Each host's IPv4 address, as netlab assigned it (`netlab address`).
    private let addresses: [Int: String]

    /// Creates a lab whose name is unique to this process and call (`n<pid>n<serial>`); removes
    /// what it made if it fails half-way.
    public static func up(hosts: Int) async throws -> Netlab {
        let serial = counter.withLock { value in
            value += 1
            return value
        }
        let name = "n\(getpid() % 100_000)n\(serial)"
        do {
            try await run(["up", name, String(hosts)])
            var addresses: [Int: String] = [:]
            for host in 1...hosts {
                addresses[host] = try await run(["address", name, String(host)]).output.trimmingCharacters(in: .whitespacesAndNewlines)
            }
            return Netlab(name: name, hosts: hosts, addresses: addresses)
        } catch {
            down(name)
            throw error
        }
    }

    /// Kills everything in the lab's namespaces and deletes them; safe to call more than once.
    /// Blocking, so that it can run in a `defer`.
    public func down() { Self.down(name) }

    private static func down(_ name: String) {
        _ = try? ChildProcess.runBlocking([script, "down", name], timeout: .seconds(60))
    }

    /// Host `host`'s IPv4 address.
    public func address(_ host: Int) -> String { addresses[host] ?? "" }

    /// Unplugs or replugs host `host`'s only interface.
    public func setLink(_ host: Int, up: Bool) async throws {
        try await Self.run(["link", name, String(host), up ? "up" : "down"])
    }

    /// Stops host `host`'s avahi-daemon (SIGTERM: it sends goodbye packets).
    public func stopAvahi(_ host: Int) async throws { try await Self.run(["avahi-stop", name, String(host)]) }

    /// Starts it again; returns once it logged "Server startup complete".
    public func startAvahi(_ host: Int) async throws { try await Self.run(["avahi-start", name, String(host)]) }

    /// `stopAvahi`, then `startAvahi`.
    public func restartAvahi(_ host: Int) async throws { try await Self.run(["avahi-restart", name, String(host)]) }

    /// The namespace of host `host`: `ip netns exec` (so `inside`) bind-mounts the files of
    /// `/etc/netns/NAMESPACE/` over `/etc` for the processes it starts (a private hosts file).
    public func namespace(_ host: Int) -> String { "netlab-\(name)-h\(host)" }

    /// `command` as run inside host `host`, on that host's D-Bus (`netlab exec`, which execs:
    /// the process started is, in the end, `command[0]` itself, with the same pid).
    public func inside(_ host: Int, _ command: [String]) -> [String] {
        [Self.script, "exec", name, String(host)] + command
    }

    /// Runs `command` inside host `host` and waits for it; throws when it fails.
    @discardableResult
    public func run(inside host: Int, _ command: [String]) async throws -> CommandResult {
        try await ChildProcess.run(inside(host, command), timeout: .seconds(60)).check()
    }

    @discardableResult
    private static func run(_ arguments: [String]) async throws -> CommandResult {
        try await ChildProcess.run([script] + arguments, timeout: .seconds(60)).check()
    }
}
