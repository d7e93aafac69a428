import Testing
@testable import Peer

/// Versions and features in the handshake payloads (docs/protocol.md "Versions and features").
@Suite("Handshake information: versions and features")
struct HandshakeInfoTests {
    static let current = HandshakeInfo(software: "0.2.0", protocols: [1], features: ["alpha-feature"])

    @Test func itRoundTripsAndEncodesTheSameWayEveryTime() throws {
        let info = HandshakeInfo(software: "0.2.0", protocols: [2, 1], features: ["b", "a", "c"])
        #expect(try HandshakeInfo.decode(info.encoded) == info)
        #expect(info.protocols == [1, 2])
        #expect(info.encoded == HandshakeInfo(software: "0.2.0", protocols: [1, 2], features: ["c", "a", "b"]).encoded)
        // tag 1 "0.2.0", tag 2 [1, 2], tag 3 ["a", "b", "c"]
        #expect(info.encoded == [1, 0, 5] + Array("0.2.0".utf8) + [2, 0, 4, 0, 1, 0, 2] + [3, 0, 6, 1, 97, 1, 98, 1, 99])
    }

    @Test func anEmptyPayloadIsRelease01() throws {
        #expect(try HandshakeInfo.decode([]) == .release01)
        #expect(HandshakeInfo.release01 == HandshakeInfo(software: nil, protocols: [1], features: []))
        let agreement = try PeerAgreement.negotiate(local: Self.current, remote: .release01, known: [Feature(rawValue: "alpha-feature")])
        #expect(agreement == .release01)
        #expect(agreement.peerVersionText == "0.1 or earlier")
        #expect(!agreement.uses(Feature(rawValue: "alpha-feature")))
    }

    @Test func unknownFieldsAndFeaturesAreIgnoredAndTheHighestCommonProtocolIsSpoken() throws {
        // A later release: protocols 1, 2 and 7, a feature nobody here knows, and a field
        // (tag 200) this release has never heard of, placed first and last.
        let later = HandshakeInfo(software: "3.1.4", protocols: [1, 2, 7], features: ["teleport", "alpha-feature"])
        let payload = [200, 0, 3, 9, 9, 9] + later.encoded + [201, 0, 0]
        let remote = try HandshakeInfo.decode(payload)
        #expect(remote == later)
        let agreement = try PeerAgreement.negotiate(local: Self.current, remote: remote, known: [Feature(rawValue: "alpha-feature")])
        #expect(agreement.protocolVersion == 1)
        #expect(agreement.features == [Feature(rawValue: "alpha-feature")], "teleport is unknown here and ignored")
        #expect(agreement.peerVersionText == "3.1.4")
    }

    @Test func aFeatureOnlyOneSideOffersOrThisReleaseDoesNotKnowIsNotUsed() throws {
        let remote = HandshakeInfo(software: "0.2.0", protocols: [1], features: ["alpha-feature"])
        let local = HandshakeInfo(software: "0.2.0", protocols: [1], features: [])
        #expect(try PeerAgreement.negotiate(local: local, remote: remote, known: [Feature(rawValue: "alpha-feature")]).features.isEmpty)
        #expect(try PeerAgreement.negotiate(local: remote, remote: remote, known: []).features.isEmpty)
        #expect(try PeerAgreement.negotiate(local: remote, remote: remote, known: [Feature(rawValue: "alpha-feature")]).features == [Feature(rawValue: "alpha-feature")])
    }

    @Test func aPeerWithoutTheProtocolFieldIsTakenToSpeakProtocol1() throws {
        let payload: [UInt8] = [1, 0, 3] + Array("0.9".utf8)
        #expect(try HandshakeInfo.decode(payload) == HandshakeInfo(software: "0.9", protocols: [1], features: []))
    }

    @Test func noProtocolInCommonFailsNamingBothSides() throws {
        let remote = HandshakeInfo(software: "5.0.0", protocols: [2, 3], features: [])
        #expect(throws: PeerAgreement.Failure.noCommonProtocol(local: [1], remote: [2, 3], remoteSoftware: "5.0.0")) {
            try PeerAgreement.negotiate(local: Self.current, remote: remote, known: [])
        }
    }

    @Test func malformedPayloadsAreErrorsNotCrashes() throws {
        #expect(throws: HandshakeInfo.DecodeError.truncated(tag: 1)) { try HandshakeInfo.decode([1, 0]) }
        #expect(throws: HandshakeInfo.DecodeError.truncated(tag: 9)) { try HandshakeInfo.decode([9, 0, 5, 1]) }
        #expect(throws: HandshakeInfo.DecodeError.repeated(tag: 2)) { try HandshakeInfo.decode([2, 0, 2, 0, 1, 2, 0, 2, 0, 1]) }
        #expect(throws: HandshakeInfo.DecodeError.malformed(tag: 2, reason: "not a list of at most 32 16-bit versions")) {
            try HandshakeInfo.decode([2, 0, 3, 0, 1, 0])
        }
        #expect(throws: HandshakeInfo.DecodeError.malformed(tag: 1, reason: "not UTF-8 text of at most 64 bytes")) {
            try HandshakeInfo.decode([1, 0, 1, 0xFF])
        }
        #expect(throws: HandshakeInfo.DecodeError.malformed(tag: 3, reason: "not a list of at most 64 length-prefixed names")) {
            try HandshakeInfo.decode([3, 0, 2, 5, 97])
        }
        #expect(throws: HandshakeInfo.DecodeError.tooLarge(bytes: 5_000)) { try HandshakeInfo.decode([UInt8](repeating: 0, count: 5_000)) }
        // Random bytes: an error or a value, never a trap.
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<2_000 {
            let bytes = (0..<Int.random(in: 0...40, using: &generator)).map { _ in UInt8.random(in: 0...255, using: &generator) }
            _ = try? HandshakeInfo.decode(bytes)
        }
    }

    /// Release 0.1's `SecureChannel` (Sources/Peer/Channel/SecureChannel.swift, unchanged
    /// since commit 30d5e97) takes any payload in messages 2 and 3, passes it on as
    /// `ChannelPeer.handshakePayload`, and that release's daemon never reads it (its engine
    /// uses only `staticKey` and `matchedPSKIndex`). So a 0.1 device, which sends an empty
    /// payload itself, completes the handshake with a device that sends this information and
    /// carries frames as before.
    @Test func aRelease01ChannelCompletesTheHandshakeWithAPeerThatSendsInformation() throws {
        let household = ChannelHousehold()
        let information = Self.current.encoded
        // The newer device dials the 0.1 one (payload in message 3), and the other way round
        // (payload in message 2).
        for (alicePayload, bobPayload) in [(information, [UInt8]()), ([UInt8](), information)] {
            var wire = household.wire(alicePayload: alicePayload, bobPayload: bobPayload)
            wire.handshake()
            let aliceSees = try #require(wire.initiatorLog.peer)
            let bobSees = try #require(wire.responderLog.peer)
            #expect(wire.initiatorLog.errors.isEmpty && wire.responderLog.errors.isEmpty)
            #expect(try HandshakeInfo.decode(aliceSees.handshakePayload) == (bobPayload.isEmpty ? .release01 : Self.current))
            #expect(try HandshakeInfo.decode(bobSees.handshakePayload) == (alicePayload.isEmpty ? .release01 : Self.current))
            wire.initiatorWrote(try wire.initiator.send(FrameCodec.encode(.have(VersionVector()))))
            wire.deliverUntilQuiet()
            #expect(try wire.responderLog.frames.map(FrameCodec.decode) == [.have(VersionVector())])
        }
    }
}
