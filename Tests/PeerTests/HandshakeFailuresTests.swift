import Testing
@testable import Peer

/// The per-address count behind "Cheap refusals" (docs/security.md), at given instants.
@Suite struct HandshakeFailuresTests {
    let start = ContinuousClock.now

    func at(_ seconds: Int) -> ContinuousClock.Instant { start.advanced(by: .seconds(seconds)) }

    /// How many of `seconds`' failures from `host` started a refusal (were to be reported).
    func reports(_ failures: inout HandshakeFailures, from host: String, at seconds: Range<Int>) -> Int {
        seconds.filter { failures.record(host, now: at($0)) }.count
    }

    @Test func theLimitWithinTheWindowRefusesTheAddressAndIsReportedOnce() {
        var failures = HandshakeFailures(limit: 20, window: .seconds(60), addresses: 4_096)
        #expect(reports(&failures, from: "10.0.0.9", at: 0..<19) == 0)
        let refusedAt19 = failures.isRefused("10.0.0.9", now: at(19))
        #expect(!refusedAt19)
        #expect(reports(&failures, from: "10.0.0.9", at: 19..<20) == 1, "the twentieth failure starts the refusal")
        let refusedAt20 = failures.isRefused("10.0.0.9", now: at(20))
        let otherRefused = failures.isRefused("10.0.0.7", now: at(20))
        #expect(refusedAt20)
        #expect(!otherRefused, "another address is never refused for it")
        // A failure counted while refused (a connection accepted just before) says nothing new.
        #expect(reports(&failures, from: "10.0.0.9", at: 21..<22) == 0)
    }

    @Test func anAttackerRetryingWheneverTheWindowHasRoomIsReportedOnlyOnce() {
        var failures = HandshakeFailures(limit: 20, window: .seconds(60), addresses: 4_096)
        #expect(reports(&failures, from: "10.0.0.9", at: 0..<10) + reports(&failures, from: "10.0.0.9", at: 30..<40) == 1)
        // A minute on, the first ten have aged out: room for ten more, which fill it again.
        let refusedAt61 = failures.isRefused("10.0.0.9", now: at(61))
        #expect(!refusedAt61)
        #expect(reports(&failures, from: "10.0.0.9", at: 61..<71) == 0, "the same episode, still")
        let refusedAt71 = failures.isRefused("10.0.0.9", now: at(71))
        #expect(refusedAt71)
        // Once every failure has aged out, the next refusal is a new one and is reported.
        let refusedAt200 = failures.isRefused("10.0.0.9", now: at(200))
        #expect(!refusedAt200)
        #expect(reports(&failures, from: "10.0.0.9", at: 200..<220) == 1)
    }

    @Test func beyondTheAddressesRememberedTheStalestIsForgotten() {
        var failures = HandshakeFailures(limit: 2, window: .seconds(60), addresses: 2)
        for (second, host) in ["10.0.0.1", "10.0.0.2", "10.0.0.3"].enumerated() {
            #expect(reports(&failures, from: host, at: second..<second + 1) == 0)
        }
        // 10.0.0.1's first failure was forgotten: its second is its first again.
        #expect(reports(&failures, from: "10.0.0.1", at: 4..<5) == 0)
        #expect(reports(&failures, from: "10.0.0.3", at: 5..<6) == 1, "10.0.0.3 was remembered")
    }
}
