import Foundation
import TestSupport
import Synchronization

/// A lab made by `scripts/netlab`: hosts 1…N in their own network namespaces, each with its own
/// D-Bus and avahi-daemon, joined by a bridge. Tests call `down()` in a `defer`.
struct Netlab {
    static let script = packageRoot + "/scripts/netlab"
    private static let counter = Mutex(0)

    /// Whether labs can run here (`netlab check`: root, `ip netns`…); if not, prints why
    /// `suite` is skipped.
    static func canRun(for suite: String) async -> Bool {
        do {
            try await runCommand([script, "check"])
            return true
        } catch let failure as CommandFailed {
            print("\(suite) skipped: \(failure.output.trimmingCharacters(in: .whitespacesAndNewlines))")
        } catch {
            print("\(suite) skipped: cannot run \(script): \(error)")
        }
        return false
    }

    let name: String
    let hosts: Int

    /// Creates a lab with a name unique to this process and test.
    static func up(hosts: Int) async throws -> Netlab {
        let serial = counter.withLock { value in
            value += 1
            return value
        }
        let name = "d\(getpid() % 100_000)n\(serial)"
        let lab = Netlab(name: name, hosts: hosts)
        do {
            try await runCommand([script, "up", name, String(hosts)])
        } catch {
            lab.down()
            throw error
        }
        return lab
    }

    /// Kills everything in the lab and deletes it; safe to call more than once. Synchronous,
    /// so that it can run in a `defer`.
    func down() {
        if let process = try? Subprocess([Self.script, "down", name]) {
            process.closeInput()
            process.waitForExit(timeout: .seconds(30))
        }
    }

    func link(_ host: Int, up: Bool) async throws {
        try await runCommand([Self.script, "link", name, String(host), up ? "up" : "down"])
    }

    func restartAvahi(_ host: Int) async throws {
        try await runCommand([Self.script, "avahi-restart", name, String(host)])
    }

    func address(_ host: Int) -> String { "10.199.0.\(host)" }

    /// Starts `command` (looked up in PATH) inside `host`, with that host's D-Bus.
    func spawn(host: Int, _ command: [String]) throws -> Subprocess {
        try Subprocess([Self.script, "exec", name, String(host)] + command)
    }

    /// Starts `discovery-probe` inside `host`.
    func probe(host: Int, deviceID: String, port: UInt16, serviceName: String? = nil, churn: Int = 0) throws -> ProbeProcess {
        var command = [Self.script, "exec", name, String(host), probeExecutable.path,
                       "--id", deviceID, "--port", String(port), "--seconds", "55", "--churn", String(churn)]
        if let serviceName { command += ["--name", serviceName] }
        return try ProbeProcess(label: "host \(host)", command: command)
    }
}
