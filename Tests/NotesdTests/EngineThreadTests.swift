import Dispatch
import Foundation
import Synchronization
import Testing
@testable import notesd

/// `EngineThread`: events and the deadline run on the engine's queue, in order; a new
/// deadline replaces the old one; `stop()` loses no event.
@Suite struct EngineThreadTests {
    final class Fixture: Sendable {
        let queue = DispatchQueue(label: "test.engine")
        let key = DispatchSpecificKey<Bool>()
        let thread: EngineThread
        let ran = Mutex<[String]>([])

        init() {
            queue.setSpecific(key: key, value: true)
            thread = EngineThread(queue: queue)
        }

        /// Records `name`, or "off the queue" when not run on the queue.
        func record(_ name: String) -> @Sendable () -> Void {
            { [self] in ran.withLock { $0.append(DispatchQueue.getSpecific(key: key) == true ? name : "\(name) off the queue") } }
        }

        var entries: [String] { ran.withLock { $0 } }
    }

    @Test func eventsRunOnTheQueueInOrder() async {
        let fixture = Fixture()
        let names = (0..<200).map { "event \($0)" }
        for name in names { fixture.thread.post(fixture.record(name)) }
        #expect(await eventually { fixture.entries.count == names.count })
        #expect(fixture.entries == names)
        fixture.thread.stop()
    }

    @Test func aNewDeadlineReplacesTheOldAndNilClearsIt() async {
        let fixture = Fixture()
        fixture.thread.schedule(at: .now() + .seconds(3600), fixture.record("replaced"))
        fixture.thread.schedule(at: .now() + .milliseconds(5), fixture.record("first"))
        #expect(await eventually { fixture.entries == ["first"] })

        fixture.thread.schedule(at: .now() + .milliseconds(5), fixture.record("cleared"))
        fixture.thread.schedule(at: nil, fixture.record("never"))
        fixture.thread.schedule(at: .now() + .milliseconds(50), fixture.record("second"))
        #expect(await eventually { fixture.entries.count == 2 })
        // "cleared" was due first, so it would have run before "second".
        #expect(fixture.entries == ["first", "second"])
        fixture.thread.stop()
    }

    @Test func stopRunsWhatWasPostedAndLaterEventsStillReachTheQueue() async {
        let fixture = Fixture()
        fixture.thread.post(fixture.record("before"))
        fixture.thread.stop()
        fixture.thread.post(fixture.record("after"))
        #expect(await eventually { fixture.entries.count == 2 })
        #expect(Set(fixture.entries) == ["before", "after"])
    }
}
