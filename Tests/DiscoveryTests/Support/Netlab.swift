import Foundation
import TestSupport

/// What the discovery tests start inside a lab's hosts.
extension Netlab {
    /// Starts `command` (looked up in PATH) inside `host`, with that host's D-Bus.
    func spawn(host: Int, _ command: [String]) throws -> Subprocess {
        try Subprocess(inside(host, command))
    }

    /// Starts `discovery-probe` inside `host`.
    func probe(host: Int, deviceID: String, port: UInt16, serviceName: String? = nil, churn: Int = 0) throws -> ProbeProcess {
        var command = inside(host, [probeExecutable.path, "--id", deviceID, "--port", String(port), "--seconds", "55", "--churn", String(churn)])
        if let serviceName { command += ["--name", serviceName] }
        return try ProbeProcess(label: "host \(host)", command: command)
    }
}
