import Foundation
import Testing

/// `AvahiDiscovery` (through `discovery-probe`) in the root namespace, where it must never reach
/// a real bus: the probe gets a bus address that does not exist, so no Avahi is ever contacted.
/// The discovery runs in a child process because libavahi-client reads the bus address from the
/// environment, which a test must not change for the whole test process.
@Suite struct ProbeWithoutAvahiTests {
    /// `isolated`: in a mount namespace with an empty `/run`, so that even a probe whose
    /// refusal guard regressed finds no system bus (and no Avahi) to advertise through.
    private func startProbe(environment: [String: String], isolated: Bool = false) throws -> ProbeProcess {
        try #require(FileManager.default.isExecutableFile(atPath: probeExecutable.path),
                     "\(probeExecutable.path) is missing; build it with swift build --build-tests")
        // The probe's own limit only bounds a test that went wrong; it is long enough that a
        // machine busy with the other suites (seconds before the probe first reports) does not
        // reach it before the test stops the probe itself.
        let probe = [probeExecutable.path, "--id", "AAA", "--port", "7001", "--seconds", "300"]
        let isolation = ["/usr/bin/unshare", "-m", "/bin/sh", "-c", "mount -t tmpfs notesd-test /run && exec \"$@\"", "sh"]
        return try ProbeProcess(label: "probe", command: (isolated ? isolation : []) + probe, environment: environment)
    }

    private var bogusBus: (address: String, environment: [String: String]) {
        let address = "unix:path=/nonexistent/notesd-test-\(getpid())/system_bus_socket"
        var environment = ProcessInfo.processInfo.environment
        environment["DBUS_SYSTEM_BUS_ADDRESS"] = address
        return (address, environment)
    }

    @Test func withNoBusItSaysWhyAndStopsCleanlyOnEndOfInput() async throws {
        let bus = bogusBus
        let probe = try startProbe(environment: bus.environment)
        defer { probe.stop() }

        try await probe.wait(until: "discovery is unavailable") { $0.contains { $0.state == "unavailable" } }
        #expect(probe.lines.first?.state == "starting")
        let reason = try #require(probe.lines.first { $0.state == "unavailable" }?.reason)
        #expect(reason == "the D-Bus system bus is not reachable (\(bus.address)), so the Avahi daemon cannot be reached; start dbus and avahi-daemon, or add peers with --peer host:port")

        probe.closeInput()
        try await probe.wait(until: "it says it stopped") { $0.last?.event == "stopped" }
        try await probe.waitForExit()
        #expect(probe.exitStatus == 0, "\(probe.transcript)")
        #expect(probe.lines.last?.reason == "end of standard input")
        #expect(!probe.lines.contains { $0.event == "found" })
    }

    @Test func stopsCleanlyOnSIGTERMWhileWaitingToRetry() async throws {
        let probe = try startProbe(environment: bogusBus.environment)
        defer { probe.stop() }
        try await probe.wait(until: "discovery is unavailable") { $0.contains { $0.state == "unavailable" } }

        probe.terminate()
        try await probe.wait(until: "it says it stopped") { $0.last?.event == "stopped" }
        try await probe.waitForExit()
        #expect(probe.exitStatus == 0, "\(probe.transcript)")
        #expect(probe.lines.last?.reason == "signal \(SIGTERM)")
    }

    @Test func refusesToRunWithoutAnExplicitBusAddress() async throws {
        var environment = ProcessInfo.processInfo.environment
        environment["DBUS_SYSTEM_BUS_ADDRESS"] = nil
        let probe = try startProbe(environment: environment, isolated: true)
        defer { probe.stop() }
        try await probe.waitForExit()
        try await waitUntil("the refusal is printed", seen: { probe.transcript }) { !probe.errorOutput.isEmpty }
        #expect(probe.exitStatus == 64)
        #expect(probe.lines.isEmpty)
        #expect(probe.errorOutput.first?.contains("DBUS_SYSTEM_BUS_ADDRESS is not set") == true, "\(probe.transcript)")
    }
}
