import Foundation
import Synchronization
import Testing
@testable import Discovery

/// Something a test waited for did not happen in time; says what and what was seen instead.
struct TimedOut: Error, CustomStringConvertible {
    let description: String
}

/// Polls `condition` every 20 ms until it holds or `timeout` passes (bounded; never a blind sleep).
func waitUntil(_ what: String, timeout: Duration = .seconds(20), seen: () -> String,
               _ condition: () -> Bool) async throws {
    let deadline = ContinuousClock.now + timeout
    while !condition() {
        guard ContinuousClock.now < deadline else {
            throw TimedOut(description: "timed out after \(timeout) waiting until \(what); saw:\n\(seen())")
        }
        try await Task.sleep(for: .milliseconds(20))
    }
}

/// Collects what a `PeerSource` reports, for in-process tests.
final class EventRecorder: Sendable {
    private let events = Mutex<[DiscoveryEvent]>([])

    var handler: @Sendable (DiscoveryEvent) -> Void {
        { [self] event in events.withLock { $0.append(event) } }
    }

    var all: [DiscoveryEvent] { events.withLock { $0 } }

    func wait(until what: String, _ condition: @escaping ([DiscoveryEvent]) -> Bool) async throws {
        try await waitUntil(what, timeout: .seconds(5), seen: { "\(all)" }) { condition(all) }
    }
}
