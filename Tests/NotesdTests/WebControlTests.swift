import Control
import Testing
@testable import notesd

@Suite struct WebControlTests {
    @Test func syncWaitsAreCappedAtSixtySecondsOverHTTPOnly() {
        let long = SyncParams(wait: true, timeoutMs: 3_600_000)
        #expect(ControlTransport.http.capping(long).timeoutMs == 60_000)
        #expect(ControlTransport.unixSocket.capping(long).timeoutMs == 3_600_000)
        // Short waits, no wait, and the default (30 s) are left alone.
        #expect(ControlTransport.http.capping(SyncParams(wait: true, timeoutMs: 5_000)).timeoutMs == 5_000)
        #expect(ControlTransport.http.capping(SyncParams(wait: true)).timeoutMs == nil)
        #expect(ControlTransport.http.capping(SyncParams(wait: false, timeoutMs: 3_600_000)).timeoutMs == 3_600_000)
        // Values the engine refuses reach it unchanged, so both transports refuse them alike.
        #expect(ControlTransport.http.capping(SyncParams(wait: true, timeoutMs: 0)).timeoutMs == 0)
        #expect(ControlTransport.http.capping(SyncParams(wait: true, timeoutMs: 90_000_000)).timeoutMs == 90_000_000)
    }
}
