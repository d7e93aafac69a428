import Testing
@testable import Peer
import TestSupport

@Suite("Secure channel: transport frames, limits and closing")
struct ChannelTransportTests {
    /// An established pair; Bob has already received Alice's stream header and vice versa.
    static func establishedPair(configuration: SecureChannel.Configuration = .init()) -> (alice: SecureChannel, bob: SecureChannel) {
        let household = ChannelHousehold()
        var alice = SecureChannel(role: .initiator(psk: household.householdKey), identity: household.alice, configuration: configuration)
        var bob = SecureChannel(role: .responder(candidatePSKs: [household.householdKey]), identity: household.bob, configuration: configuration)
        let message2 = bob.receive(alice.start())
        let aliceFlight = alice.receive(message2.bytesToSend)
        let bobHeader = bob.receive(aliceFlight.bytesToSend)
        let aliceReady = alice.receive(bobHeader.bytesToSend)
        precondition(alice.isEstablished && bob.isEstablished && aliceReady.error == nil, "pair did not establish")
        return (alice, bob)
    }

    @Test("a tampered frame closes the channel, and it stays closed")
    func tamperedFrame() throws {
        var (alice, bob) = Self.establishedPair()
        for index in [4, 10, 20] {
            var pair = (alice, bob)
            var frame = try pair.0.send(Array("pay the electricity bill".utf8))
            frame[index] ^= 0x01
            let output = pair.1.receive(frame)
            #expect(output.error == ChannelError(.decryptionFailed), "byte \(index) flipped")
            #expect(output.frames.isEmpty)
            #expect(pair.1.receive(try pair.0.send([1])).error == ChannelError(.decryptionFailed))
            #expect(throws: ChannelError(.decryptionFailed)) { try pair.1.send([1]) }
        }
        // The untouched pair still works.
        #expect(bob.receive(try alice.send([42])).frames == [[42]])
    }

    @Test("a large frame's room is given back once it is read; a frame still arriving keeps its bytes")
    func largeFrameBufferReleased() throws {
        var (alice, bob) = Self.establishedPair()
        let body = (0..<1_500_000).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        let bytes = try alice.send(body) + alice.send(Array("a live edit".utf8))
        // Read as a socket delivers it: 64 KiB at a time, the small frame's end held back.
        var frames: [[UInt8]] = []
        var offset = 0
        while offset < bytes.count - 3 {
            let end = min(offset + 64 * 1024, bytes.count - 3)
            let output = bob.receive(bytes[offset..<end])
            #expect(output.error == nil)
            frames += output.frames
            offset = end
        }
        #expect(frames == [body], "the large frame whole, the small one not yet")
        #expect(bob.receivedBytesPending > 0, "the small frame's first bytes are kept")
        let last = bob.receive(bytes[offset...])
        #expect(last.frames == [Array("a live edit".utf8)])
        #expect(bob.receiveBufferCapacity <= [UInt8].idleBufferCapacity, "held \(bob.receiveBufferCapacity) bytes while idle")

        // Small frames keep their room, so live changes do not allocate it again each time.
        let small = bob.receive(try alice.send([1, 2, 3]))
        #expect(small.frames == [[1, 2, 3]])
        #expect(bob.receiveBufferCapacity > 0 && bob.receiveBufferCapacity <= [UInt8].idleBufferCapacity)
    }

    @Test("a truncated frame with a matching length prefix does not decrypt")
    func truncatedFrame() throws {
        var (alice, bob) = Self.establishedPair()
        let frame = try alice.send(Array("a longer note body".utf8))
        for keep in [0, 1, 16, frame.count - 5] {
            var receiver = bob
            let output = receiver.receive(LengthPrefixFraming.frame(Array(frame.dropFirst(4).prefix(keep))))
            #expect(output.error == ChannelError(.decryptionFailed), "kept \(keep) bytes")
        }
    }

    @Test("reordered frames close the channel")
    func reorderedFrames() throws {
        var (alice, bob) = Self.establishedPair()
        let first = try alice.send([1]), second = try alice.send([2])
        let output = bob.receive(second + first)
        #expect(output.error == ChannelError(.decryptionFailed))
        #expect(output.frames.isEmpty)
    }

    @Test("a replayed frame closes the channel")
    func replayedFrame() throws {
        var (alice, bob) = Self.establishedPair()
        let frame = try alice.send([1, 2, 3])
        let output = bob.receive(frame + frame)
        #expect(output.frames == [[1, 2, 3]])
        #expect(output.error == ChannelError(.decryptionFailed))
    }

    @Test("a frame replayed from another session closes the channel")
    func frameFromAnotherSession() throws {
        var (alice, _) = Self.establishedPair()
        var (_, otherBob) = Self.establishedPair()
        #expect(otherBob.receive(try alice.send([9])).error == ChannelError(.decryptionFailed))
    }

    @Test("an oversized length prefix is refused as soon as its 4 bytes arrive")
    func oversizedLengthPrefix() {
        var (_, bob) = Self.establishedPair()
        let output = bob.receive([0xFF, 0xFF, 0xFF, 0xFF])
        #expect(output.error == ChannelError(.frameTooLarge(length: 0xFFFF_FFFF, limit: 4 << 20)))

        let household = ChannelHousehold()
        var responder = SecureChannel(role: .responder(candidatePSKs: [household.householdKey]), identity: household.bob)
        #expect(responder.receive([0x00, 0x01, 0x00]).error == nil, "3 bytes are not a length yet")
        #expect(responder.receive([0x00]).error == ChannelError(.frameTooLarge(length: 65536, limit: 65535)),
                "handshake messages are held to Noise's 65535-byte limit")
    }

    @Test("the configured frame cap applies to sending and receiving")
    func configuredFrameCap() throws {
        var (alice, bob) = Self.establishedPair(configuration: .init(maxFrameLength: 1024))
        let largest = [UInt8](repeating: 3, count: 1024 - SecureTransport.overhead)
        #expect(bob.receive(try alice.send(largest)).frames == [largest])
        #expect(throws: ChannelError(.plaintextTooLarge(length: largest.count + 1, limit: largest.count))) {
            try alice.send(largest + [3])
        }
        #expect(bob.receive([0, 0, 4, 1]).error == ChannelError(.frameTooLarge(length: 1025, limit: 1024)))
    }

    @Test("a clean close is reported as such, and the other direction stays open until its own close")
    func cleanClose() throws {
        var (alice, bob) = Self.establishedPair()
        let closing = alice.close()
        #expect(alice.close().isEmpty, "closing twice sends nothing more")
        #expect(throws: ChannelError(.sendAfterClose)) { try alice.send([1]) }
        let bobOutput = bob.receive(closing)
        #expect(bobOutput.events == [.closedCleanly])
        #expect(bobOutput.error == nil)
        #expect(!bob.isClosed)

        // Bob can still finish what he was saying.
        #expect(alice.receive(try bob.send([5])).frames == [[5]])
        let aliceOutput = alice.receive(bob.close())
        #expect(aliceOutput.events == [.closedCleanly])
        #expect(alice.isClosed && bob.isClosed)
        #expect(alice.receiveEndOfStream().error == nil)
        #expect(bob.receiveEndOfStream().error == nil)
    }

    @Test("anything after the peer's clean close is an error")
    func dataAfterClose() throws {
        var (alice, bob) = Self.establishedPair()
        var spare = alice
        let afterClose = try spare.send([7])
        #expect(bob.receive(alice.close()).events == [.closedCleanly])
        #expect(bob.receive(afterClose).error == ChannelError(.frameAfterClose))

        var (carol, dave) = Self.establishedPair()
        #expect(dave.receive(carol.close() + [0]).error == ChannelError(.frameAfterClose), "even a partial frame")
    }

    @Test("the connection ending without a clean close is an error")
    func endOfStreamWithoutClose() throws {
        var (alice, bob) = Self.establishedPair()
        var bobMidFrame = bob
        #expect(bob.receiveEndOfStream().error == ChannelError(.unexpectedEndOfStream(midFrame: false)))
        let frame = try alice.send([1, 2, 3])
        #expect(bobMidFrame.receive(frame.dropLast()).frames.isEmpty)
        #expect(bobMidFrame.receiveEndOfStream().error == ChannelError(.unexpectedEndOfStream(midFrame: true)))

        let household = ChannelHousehold()
        var responder = SecureChannel(role: .responder(candidatePSKs: [household.householdKey]), identity: household.bob)
        #expect(responder.receiveEndOfStream().error == ChannelError(.unexpectedEndOfStream(midFrame: false)))
    }

    @Test("a responder that closes without answering message 1 did not take the initiator's key")
    func closedBeforeMessage2() {
        let household = ChannelHousehold()
        var initiator = SecureChannel(role: .initiator(psk: household.householdKey), identity: household.alice)
        _ = initiator.start()
        let error = initiator.receiveEndOfStream().error
        #expect(error == ChannelError(.closedBeforeMessage2))
        #expect(error?.description.contains("removed from the household") == true)
    }

    @Test("a first transport frame that is not a 24-byte stream header is refused")
    func invalidStreamHeader() {
        let household = ChannelHousehold()
        var alice = SecureChannel(role: .initiator(psk: household.householdKey), identity: household.alice)
        var bob = SecureChannel(role: .responder(candidatePSKs: [household.householdKey]), identity: household.bob)
        let message2 = bob.receive(alice.start())
        let flight = channelFrames(alice.receive(message2.bytesToSend).bytesToSend)
        #expect(flight.count == 2, "message 3, then Alice's stream header")
        let output = bob.receive(flight[0] + LengthPrefixFraming.frame([UInt8](repeating: 0, count: 23)))
        #expect(output.events.count == 1)
        #expect(output.error == ChannelError(.invalidStreamHeader(length: 23)))
    }

    @Test("every error message says what happened in words")
    func errorMessagesAreReadable() {
        let reasons: [ChannelError.Reason] = [
            .frameTooLarge(length: 5, limit: 4), .notInHousehold, .handshakeFailed(message: 2, reason: "x"),
            .invalidStreamHeader(length: 3), .decryptionFailed, .frameAfterClose, .unexpectedEndOfStream(midFrame: true),
            .plaintextTooLarge(length: 5, limit: 4), .notEstablished, .sendAfterClose, .closedLocally,
        ]
        let descriptions = reasons.map { ChannelError($0).description }
        #expect(Set(descriptions).count == reasons.count)
        #expect(descriptions.allSatisfy { $0.count > 20 })
        #expect(ChannelError(.notInHousehold).description.contains("household key"))
    }
}
