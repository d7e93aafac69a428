import CAvahi
import Testing
@testable import Discovery

@Suite struct StateTests {
    @Test func everyStateReadsAsASentenceForStatus() {
        #expect(DiscoveryState.disabled.description.contains("--no-mdns"))
        #expect(DiscoveryState.starting.description == "connecting to the Avahi daemon")
        #expect(DiscoveryState.running(serviceName: "notesd-AB #2").description
            == "advertising as \"notesd-AB #2\" and looking for peers on the local network")
        #expect(DiscoveryState.unavailable(reason: "exactly this").description == "exactly this")
    }

    @Test func unavailabilityReasonsSayWhatIsWrongAndWhatStillWorks() {
        #expect(AvahiProblem.daemonNotRunning.reason
            == "the Avahi daemon is not running (avahi-daemon); peers can still be added with --peer host:port")

        let bus = AvahiProblem.busUnreachable(address: "unix:path=/nowhere").reason
        #expect(bus.contains("D-Bus system bus is not reachable (unix:path=/nowhere)"))
        #expect(bus.contains("--peer host:port"))

        let failed = AvahiProblem.failed(action: "publish the service", code: Int32(AVAHI_ERR_COLLISION)).reason
        #expect(failed.hasPrefix("Avahi could not publish the service: Local name collision (error \(AVAHI_ERR_COLLISION))"))
        #expect(failed.contains("--peer host:port"))
    }

    @Test func aClientThatCannotBeCreatedMeansNoSystemBus() {
        // With AVAHI_CLIENT_NO_FAIL a missing daemon is a CONNECTING client, not an error, so
        // these codes from avahi_client_new can only mean the bus itself is unreachable.
        #expect(AvahiProblem.clientNotCreated(error: Int32(AVAHI_ERR_NO_DAEMON))
            == .busUnreachable(address: AvahiProblem.systemBusAddress))
        #expect(AvahiProblem.clientNotCreated(error: Int32(AVAHI_ERR_DBUS_ERROR))
            == .busUnreachable(address: AvahiProblem.systemBusAddress))
        #expect(AvahiProblem.clientNotCreated(error: Int32(AVAHI_ERR_NO_MEMORY))
            == .failed(action: "connect to the Avahi daemon", code: Int32(AVAHI_ERR_NO_MEMORY)))
    }
}
