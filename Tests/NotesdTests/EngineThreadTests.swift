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

    @Test func aNewDeadlineReplacesTheOld() async {
        let fixture = Fixture()
        fixture.thread.schedule(at: .now() + .seconds(3600), fixture.record("replaced"))
        fixture.thread.schedule(at: .now() + .milliseconds(5), fixture.record("first"))
        #expect(await eventually { fixture.entries == ["first"] })
        fixture.thread.stop()
        #expect(fixture.entries == ["first"])
    }

    @Test func aNilDeadlineClearsTheScheduledOne() async {
        let fixture = Fixture()
        let due = DispatchTime.now() + .milliseconds(200)
        fixture.thread.schedule(at: due, fixture.record("cleared"))
        fixture.thread.schedule(at: nil, fixture.record("never"))
        // Past the cleared deadline, an event posted now runs after anything that was due.
        #expect(await eventually { DispatchTime.now() > due + .milliseconds(50) })
        fixture.thread.post(fixture.record("marker"))
        #expect(await eventually { fixture.entries.contains("marker") })
        #expect(fixture.entries == ["marker"], "the cleared deadline must not run")
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
