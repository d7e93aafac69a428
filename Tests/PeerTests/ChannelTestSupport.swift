import Merge
@testable import Peer
import Testing
import TestSupport

typealias ChannelTestRandom = SplitMix64

/// How bytes in flight are cut before each `receive` call.
enum ChannelChunking: Sendable, CustomStringConvertible {
    /// Everything pending at once.
    case whole
    /// One byte per call.
    case byteAtATime
    /// Random cut sizes from a seeded generator.
    case random(seed: UInt64)

    var description: String {
        switch self {
        case .whole: "whole"
        case .byteAtATime: "one byte at a time"
        case .random(let seed): "random cuts (seed \(seed))"
        }
    }
}

/// Everything one side of a wired pair has produced so far.
struct ChannelLog {
    var frames: [[UInt8]] = []
    var events: [ChannelEvent] = []
    var errors: [ChannelError] = []

    var peer: ChannelPeer? {
        for case .established(let peer) in events { return peer }
        return nil
    }

    var closedCleanly: Bool { events.contains(.closedCleanly) }
}

/// Two channels back to back in memory (SwiftNIO's connection "dance"): whatever one writes is
/// fed to the other, cut as `chunking` says, until neither has anything left to say.
struct ChannelWire {
    var initiator: SecureChannel
    var responder: SecureChannel
    var initiatorLog = ChannelLog()
    var responderLog = ChannelLog()
    private var toResponder: [UInt8] = []
    private var toInitiator: [UInt8] = []
    private var random: ChannelTestRandom
    let chunking: ChannelChunking

    init(initiator: SecureChannel, responder: SecureChannel, chunking: ChannelChunking = .whole) {
        self.initiator = initiator
        self.responder = responder
        self.chunking = chunking
        if case .random(let seed) = chunking { random = ChannelTestRandom(seed: seed) } else { random = ChannelTestRandom(seed: 0) }
    }

    /// Queues bytes the initiator wrote (e.g. `start()` or `send`).
    mutating func initiatorWrote(_ bytes: [UInt8]) { toResponder += bytes }
    /// Queues bytes the responder wrote.
    mutating func responderWrote(_ bytes: [UInt8]) { toInitiator += bytes }

    /// Starts the handshake and delivers until quiet.
    mutating func handshake() {
        initiatorWrote(initiator.start())
        responderWrote(responder.start())
        deliverUntilQuiet()
    }

    mutating func deliverUntilQuiet() {
        var rounds = 0
        while !toResponder.isEmpty || !toInitiator.isEmpty {
            rounds += 1
            // A handshake and a few messages take a few thousand rounds even a byte at a time.
            guard rounds <= 1_000_000 else {
                Issue.record("the channels kept writing to each other for a million rounds")
                return
            }
            if !toResponder.isEmpty {
                let chunk = Self.takeChunk(from: &toResponder, chunking: chunking, random: &random)
                let output = responder.receive(chunk)
                record(output, into: &responderLog)
                toInitiator += output.bytesToSend
            }
            if !toInitiator.isEmpty {
                let chunk = Self.takeChunk(from: &toInitiator, chunking: chunking, random: &random)
                let output = initiator.receive(chunk)
                record(output, into: &initiatorLog)
                toResponder += output.bytesToSend
            }
        }
    }

    private static func takeChunk(from pending: inout [UInt8], chunking: ChannelChunking, random: inout ChannelTestRandom) -> [UInt8] {
        let count = switch chunking {
        case .whole: pending.count
        case .byteAtATime: 1
        case .random: Int.random(in: 1...max(1, min(pending.count, 97)), using: &random)
        }
        let chunk = Array(pending.prefix(count))
        pending.removeFirst(chunk.count)
        return chunk
    }

    private func record(_ output: ChannelOutput, into log: inout ChannelLog) {
        log.frames += output.frames
        log.events += output.events
        if let error = output.error { log.errors.append(error) }
    }
}

/// A small household: two devices sharing a household key, plus an outsider.
struct ChannelHousehold {
    let householdKey = PreSharedKey.generate()
    let alice = DeviceIdentity.generate()
    let bob = DeviceIdentity.generate()

    func wire(chunking: ChannelChunking = .whole, alicePayload: [UInt8] = [], bobPayload: [UInt8] = []) -> ChannelWire {
        ChannelWire(
            initiator: SecureChannel(role: .initiator(psk: householdKey), identity: alice, handshakePayload: alicePayload),
            responder: SecureChannel(role: .responder(candidatePSKs: [householdKey]), identity: bob, handshakePayload: bobPayload),
            chunking: chunking)
    }
}

/// Splits a byte stream into its frames (4-byte big-endian length + body), for tests that
/// tamper with single frames.
func channelFrames(_ bytes: [UInt8]) -> [[UInt8]] {
    var frames: [[UInt8]] = []
    var rest = bytes[...]
    while rest.count >= 4 {
        let length = rest.prefix(4).reduce(0) { $0 << 8 | Int($1) }
        frames.append(Array(rest.prefix(4 + length)))
        rest = rest.dropFirst(4 + length)
    }
    precondition(rest.isEmpty, "trailing partial frame")
    return frames
}
