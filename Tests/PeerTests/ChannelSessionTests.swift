import Testing
@testable import Peer
import TestSupport

@Suite("Secure channel: handshake between honest and dishonest peers")
struct ChannelSessionTests {
    static let chunkings: [ChannelChunking] = [.whole, .byteAtATime] + (1...12).map { .random(seed: $0 &* 0x5DEECE66D) }

    @Test("two household devices connect and exchange frames both ways", arguments: chunkings)
    func honestPeersExchangeFrames(chunking: ChannelChunking) throws {
        let household = ChannelHousehold()
        var wire = household.wire(chunking: chunking, alicePayload: [1], bobPayload: [2, 2])
        wire.handshake()

        let aliceSees = try #require(wire.initiatorLog.peer, "initiator not established (\(chunking))")
        let bobSees = try #require(wire.responderLog.peer, "responder not established (\(chunking))")
        #expect(aliceSees.deviceID == household.bob.deviceID)
        #expect(bobSees.deviceID == household.alice.deviceID)
        #expect(aliceSees.matchedPSKIndex == nil)
        #expect(bobSees.matchedPSKIndex == 0)
        #expect(aliceSees.handshakeHash == bobSees.handshakeHash)
        #expect(aliceSees.handshakePayload == [2, 2])
        #expect(bobSees.handshakePayload == [1])
        #expect(wire.initiatorLog.errors.isEmpty && wire.responderLog.errors.isEmpty)

        // Several frames written back to back, both directions at once, then delivered cut up.
        let fromAlice: [[UInt8]] = [[], Array("hello bob".utf8), [UInt8](repeating: 7, count: 5000)]
        let fromBob: [[UInt8]] = [Array("hi alice".utf8), [0xFF]]
        for frame in fromAlice { wire.initiatorWrote(try wire.initiator.send(frame)) }
        for frame in fromBob { wire.responderWrote(try wire.responder.send(frame)) }
        wire.deliverUntilQuiet()
        #expect(wire.responderLog.frames == fromAlice, "\(chunking)")
        #expect(wire.initiatorLog.frames == fromBob, "\(chunking)")

        wire.initiatorWrote(wire.initiator.close())
        wire.responderWrote(wire.responder.close())
        wire.deliverUntilQuiet()
        #expect(wire.initiatorLog.closedCleanly && wire.responderLog.closedCleanly)
        #expect(wire.initiator.isClosed && wire.responder.isClosed)
        #expect(wire.initiatorLog.errors.isEmpty && wire.responderLog.errors.isEmpty, "\(chunking)")
    }

    @Test("message 3, the stream header and data in one read are all handled")
    func pipelinedFirstFlight() throws {
        let household = ChannelHousehold()
        var alice = SecureChannel(role: .initiator(psk: household.householdKey), identity: household.alice)
        var bob = SecureChannel(role: .responder(candidatePSKs: [household.householdKey]), identity: household.bob)
        let message2 = bob.receive(alice.start())
        let aliceFlight = alice.receive(message2.bytesToSend)
        #expect(aliceFlight.events.count == 1)
        let data = try alice.send(Array("right away".utf8))
        let bobOutput = bob.receive(aliceFlight.bytesToSend + data)
        #expect(bobOutput.error == nil)
        #expect(bobOutput.events == [.established(try #require(bob.peer))])
        #expect(bobOutput.frames == [Array("right away".utf8)])
        #expect(channelFrames(bobOutput.bytesToSend).count == 1, "the responder's stream header")
    }

    @Test("a bad frame right behind message 3 fails the channel and leaves nothing to send")
    func badFrameInFirstFlight() throws {
        let household = ChannelHousehold()
        var alice = SecureChannel(role: .initiator(psk: household.householdKey), identity: household.alice)
        var bob = SecureChannel(role: .responder(candidatePSKs: [household.householdKey]), identity: household.bob)
        let aliceFlight = alice.receive(bob.receive(alice.start()).bytesToSend)
        var data = try alice.send([1, 2, 3])
        data[data.count - 1] ^= 0x80
        let output = bob.receive(aliceFlight.bytesToSend + data)
        #expect(output.events.count == 1, "the handshake itself was genuine")
        #expect(output.error == ChannelError(.decryptionFailed))
        #expect(output.bytesToSend.isEmpty)
        #expect(bob.isClosed)
    }

    @Test("the responder reports which candidate key matched (household key or an invite)")
    func responderReportsMatchedCandidate() throws {
        let household = ChannelHousehold()
        let invites = [InviteCode.generate(), InviteCode.generate()]
        let candidates = [household.householdKey] + invites.map(\.pskForPairing)
        let joiner = DeviceIdentity.generate()
        var wire = ChannelWire(
            initiator: SecureChannel(role: .initiator(psk: invites[1].pskForPairing), identity: joiner),
            responder: SecureChannel(role: .responder(candidatePSKs: candidates), identity: household.bob))
        wire.handshake()
        let bobSees = try #require(wire.responderLog.peer)
        #expect(bobSees.matchedPSKIndex == 2)
        #expect(bobSees.deviceID == joiner.deviceID)
    }

    @Test("a device from another household fails at message 1 and learns nothing")
    func otherHouseholdFailsAtMessageOne() {
        let household = ChannelHousehold()
        let stranger = DeviceIdentity.generate()
        var outsider = SecureChannel(role: .initiator(psk: .generate()), identity: stranger)
        var bob = SecureChannel(role: .responder(candidatePSKs: [household.householdKey, .generate()]), identity: household.bob)

        let message1 = outsider.start()
        let bobOutput = bob.receive(message1)
        #expect(bobOutput.error == ChannelError(.notInHousehold))
        #expect(bobOutput.bytesToSend.isEmpty, "the responder must not answer, so its static key stays unsent")
        #expect(bobOutput.events.isEmpty)
        #expect(bob.remoteStaticKeySeen == nil)
        #expect(bob.peer == nil)
        // The outsider got no bytes at all, so it has nothing to learn from.
        #expect(outsider.remoteStaticKeySeen == nil)
        #expect(!outsider.isEstablished)
        // The failed responder refuses everything afterwards.
        #expect(bob.receive(message1).error == ChannelError(.notInHousehold))
    }

    @Test("an impostor responder without the household key cannot produce a message 2 the initiator accepts")
    func impostorResponderFails() throws {
        let household = ChannelHousehold()
        var alice = SecureChannel(role: .initiator(psk: household.householdKey), identity: household.alice)
        let message1 = alice.start()
        // The impostor runs the same code with its own key: it cannot read message 1 ...
        var impostor = SecureChannel(role: .responder(candidatePSKs: [.generate()]), identity: .generate())
        #expect(impostor.receive(message1).bytesToSend.isEmpty)
        // ... and a message 2 of the right shape but made up fails at Alice, who sends nothing on.
        var random = ChannelTestRandom(seed: 7)
        let forged = LengthPrefixFraming.frame((0..<(32 + 48 + 16)).map { _ in UInt8.random(in: 0...255, using: &random) })
        let output = alice.receive(forged)
        #expect(output.error?.reason == .handshakeFailed(message: 2, reason: NoiseError.decryptionFailed.explanation))
        #expect(output.bytesToSend.isEmpty, "Alice's static key is never sent")
        #expect(alice.remoteStaticKeySeen == nil)
    }

    @Test("a relaying man-in-the-middle who swaps in its own ephemeral key fails")
    func relayingManInTheMiddleFails() throws {
        let household = ChannelHousehold()
        let mallory = DeviceIdentity.generate()
        var alice = SecureChannel(role: .initiator(psk: household.householdKey), identity: household.alice)
        var bob = SecureChannel(role: .responder(candidatePSKs: [household.householdKey]), identity: household.bob)
        let aliceMessage1 = alice.start()

        // Without the household key, Mallory's own message 1 is rejected outright.
        var malloryWithoutKey = SecureChannel(role: .initiator(psk: .generate()), identity: mallory)
        var bobCopy = bob
        #expect(bobCopy.receive(malloryWithoutKey.start()).error == ChannelError(.notInHousehold))

        // Flipping Alice's ephemeral key in transit breaks message 1's tag.
        var tampered = aliceMessage1
        tampered[4 + 5] ^= 0x40
        var bobAgain = bob
        #expect(bobAgain.receive(tampered).error == ChannelError(.notInHousehold))

        // Worst case, Mallory holds the household key (a revoked device). Relaying with its own
        // ephemeral key: Bob answers Mallory's message 1, and that answer fails at Alice.
        var malloryToBob = SecureChannel(role: .initiator(psk: household.householdKey), identity: mallory)
        let bobMessage2 = bob.receive(malloryToBob.start())
        #expect(bobMessage2.error == nil)
        let aliceOutput = alice.receive(bobMessage2.bytesToSend)
        #expect(aliceOutput.error?.reason == .handshakeFailed(message: 2, reason: NoiseError.decryptionFailed.explanation))
        #expect(aliceOutput.bytesToSend.isEmpty)
        #expect(!alice.isEstablished)
    }

    @Test("a man-in-the-middle holding the household key can only show its own identity")
    func terminatingManInTheMiddleIsVisible() throws {
        let household = ChannelHousehold()
        let mallory = DeviceIdentity.generate()
        // Mallory answers Alice as a responder and calls Bob as an initiator.
        var aliceSide = ChannelWire(
            initiator: SecureChannel(role: .initiator(psk: household.householdKey), identity: household.alice),
            responder: SecureChannel(role: .responder(candidatePSKs: [household.householdKey]), identity: mallory))
        var bobSide = ChannelWire(
            initiator: SecureChannel(role: .initiator(psk: household.householdKey), identity: mallory),
            responder: SecureChannel(role: .responder(candidatePSKs: [household.householdKey]), identity: household.bob))
        aliceSide.handshake()
        bobSide.handshake()
        let aliceSees = try #require(aliceSide.initiatorLog.peer)
        let bobSees = try #require(bobSide.responderLog.peer)
        // Each honest device authenticates Mallory's key, never the other honest device's, so
        // the roster check after `.established` catches a device that is not (or no longer) a member.
        #expect(aliceSees.deviceID == mallory.deviceID)
        #expect(bobSees.deviceID == mallory.deviceID)
        #expect(aliceSees.handshakeHash != bobSees.handshakeHash)
    }

    @Test("a replayed message 1 gets an answer but never an established session")
    func replayedFirstMessageCannotComplete() throws {
        let household = ChannelHousehold()
        // An earlier, honest session, recorded by an eavesdropper.
        var alice = SecureChannel(role: .initiator(psk: household.householdKey), identity: household.alice)
        var bob = SecureChannel(role: .responder(candidatePSKs: [household.householdKey]), identity: household.bob)
        let recordedMessage1 = alice.start()
        let aliceFlight = alice.receive(bob.receive(recordedMessage1).bytesToSend)
        let recordedMessage3 = try #require(channelFrames(aliceFlight.bytesToSend).first)
        #expect(bob.receive(aliceFlight.bytesToSend).events.count == 1)

        // Later the eavesdropper replays message 1 to Bob.
        var replayTarget = SecureChannel(role: .responder(candidatePSKs: [household.householdKey]), identity: household.bob)
        let answer = replayTarget.receive(recordedMessage1)
        #expect(answer.error == nil, "message 1 alone proves nothing, so it is answered")
        #expect(!answer.bytesToSend.isEmpty)

        // Message 3 needs Alice's ephemeral private key, long gone: the recorded message 3, or
        // anything else, fails, and Bob never reports a peer.
        let forgeries = [recordedMessage3, LengthPrefixFraming.frame([UInt8](repeating: 0, count: recordedMessage3.count - 4))]
        for forged in forgeries {
            var target = replayTarget
            let output = target.receive(forged)
            #expect(output.error?.reason == .handshakeFailed(message: 3, reason: NoiseError.decryptionFailed.explanation))
            #expect(output.events.isEmpty)
            #expect(!target.isEstablished)
        }
    }

    @Test("an initiator that hears from the responder before writing message 1 fails")
    func responderSpeakingFirstIsRefused() {
        let household = ChannelHousehold()
        var alice = SecureChannel(role: .initiator(psk: household.householdKey), identity: household.alice)
        let output = alice.receive(LengthPrefixFraming.frame([1, 2, 3]))
        #expect(output.error?.reason == .handshakeFailed(message: 1, reason: "the responder sent data before message 1"))
    }

    @Test("sending before the handshake finishes is refused, and closing early abandons the channel")
    func sendBeforeEstablished() {
        let household = ChannelHousehold()
        var alice = SecureChannel(role: .initiator(psk: household.householdKey), identity: household.alice)
        _ = alice.start()
        #expect(throws: ChannelError(.notEstablished)) { try alice.send([1]) }
        #expect(alice.close().isEmpty)
        #expect(throws: ChannelError(.closedLocally)) { try alice.send([1]) }
        #expect(alice.receive([0]).error == ChannelError(.closedLocally))
    }
}
