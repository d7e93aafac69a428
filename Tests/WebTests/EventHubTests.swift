import Testing
import Web

/// Signing every browser out ends the event streams they had open, not only their sessions.
@Suite struct EventHubTests {
    @Test func closeAllEndsEveryOpenStreamAndNewOnesStillOpen() throws {
        let hub = EventHub()
        defer { hub.stop() }
        var streams: [EventStream] = []
        for _ in 0..<3 { streams.append(try #require(hub.open(lastEventID: nil))) }
        #expect(hub.openStreams == 3)
        #expect(hub.closeAll() == 3)
        #expect(streams.allSatisfy { $0.isClosed })
        #expect(hub.openStreams == 0)
        let later = try #require(hub.open(lastEventID: nil))
        #expect(!later.isClosed && hub.openStreams == 1)
    }
}
