import Foundation
import Testing
import TestSupport

/// docs/benchmarks.md: an idle daemon does not wake up on a timer it does not need. On Linux,
/// libdispatch's first use of a global (root) queue — which is also where Swift concurrency
/// runs tasks — arms a 1-second workqueue-monitor timer that never stops, on the timerfd its
/// timer sources share. notesd uses no dispatch timer (the engine's timers run on its own
/// thread, `EngineThread`, and the watchdog's on another), so after serving requests and
/// dialling a peer no timerfd may be armed. (Checked against a build with one
/// `DispatchQueue.global().async {}` added at start-up: that fails here.)
@Suite(.serialized) struct IdleTests {
    @Test func aServedDaemonArmsNoDispatchTimer() async throws {
        try await offThePool { try idleAfterRequests() }
    }

    func idleAfterRequests() throws {
        let scratch = try Scratch()
        let daemon = try Daemon(name: "idle", root: scratch.path)
        try daemon.start()
        // Each kind of request: reads, writes, an error, a wait that ends at once (no peers),
        // and a dial (name lookup, then redials with backoff) to a port nobody listens on.
        let created = try daemon.json(["new", "--title", "Idle"], input: "<p>quiet</p>") as? [String: Any]
        let id = try #require(created?["id"] as? String)
        for arguments in [["status"], ["ls"], ["show", id], ["log", id], ["folders"], ["mkdir", "Work"], ["mv", id, "Work"], ["devices"], ["sync", "--wait"]] {
            _ = try daemon.json(arguments)
        }
        #expect(try daemon.ctl(["show", "ffffffff"]).status == 1)
        #expect(try daemon.ctl(["connect", "127.0.0.1:\(freePort())"]).status != 0)

        let pid = try #require(daemon.process?.pid)
        let armed = try Self.armedTimers(of: pid)
        #expect(armed.isEmpty, "armed timers: \(armed)")
    }

    /// The process's timerfd descriptors.
    static func timerDescriptors(of pid: pid_t) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd").filter { descriptor in
            (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/fd/\(descriptor)")) == "anon_inode:[timerfd]"
        }
    }

    /// `fd N: it_value: (s, ns)` for each timerfd with time left to run (fdinfo, proc(5)).
    static func armedTimers(of pid: pid_t) throws -> [String] {
        try timerDescriptors(of: pid).compactMap { descriptor in
            let info = try String(contentsOfFile: "/proc/\(pid)/fdinfo/\(descriptor)", encoding: .utf8)
            let value = info.split(separator: "\n").first { $0.hasPrefix("it_value:") }
            return value == "it_value: (0, 0)" ? nil : "fd \(descriptor): \(value ?? "no it_value")"
        }
    }
}
