import Foundation
import Merge
import Testing
@testable import Peer
import TestSupport

/// One vector in the cacophony/snow JSON format.
struct NoiseTestVector: Decodable, CustomTestStringConvertible, Sendable {
    struct Message: Decodable, Sendable {
        let payload: String
        let ciphertext: String
    }

    let protocolName: String
    let initPrologue: String
    let initPSKs: [String]?
    let initStatic: String
    let initEphemeral: String
    let respPrologue: String
    let respPSKs: [String]?
    let respStatic: String
    let respEphemeral: String
    let handshakeHash: String?
    let messages: [Message]

    enum CodingKeys: String, CodingKey {
        case protocolName = "protocol_name", initPrologue = "init_prologue", initPSKs = "init_psks"
        case initStatic = "init_static", initEphemeral = "init_ephemeral", respPrologue = "resp_prologue"
        case respPSKs = "resp_psks", respStatic = "resp_static", respEphemeral = "resp_ephemeral"
        case handshakeHash = "handshake_hash", messages
    }

    var testDescription: String { protocolName }

    static let all: [NoiseTestVector] = {
        struct File: Decodable { let vectors: [NoiseTestVector] }
        do {
            return try JSONDecoder().decode(File.self, from: Data(channelNoiseVectorsJSON.utf8)).vectors
        } catch {
            preconditionFailure("the vector fixture does not parse: \(error)")
        }
    }()
}

/// The patterns the fixtures use, spelled out from Noise rev 34 §7.5 and §9.
let vectorPatterns: [String: NoisePattern] = [
    "Noise_XX_25519_ChaChaPoly_BLAKE2b":
        NoisePattern(name: "XX", messages: [[.e], [.e, .ee, .s, .es], [.s, .se]]),
    "Noise_XXpsk3_25519_ChaChaPoly_BLAKE2b":
        NoisePattern(name: "XXpsk3", messages: [[.e], [.e, .ee, .s, .es], [.s, .se, .psk]]),
    "Noise_XXpsk0+psk1_25519_ChaChaPoly_BLAKE2b":
        NoisePattern(name: "XXpsk0+psk1", messages: [[.psk, .e, .psk], [.e, .ee, .s, .es], [.s, .se]]),
]

func hex(_ text: String) -> [UInt8] {
    guard let bytes = Hex.decode(text) else { preconditionFailure("bad hex in fixture: \(text)") }
    return bytes
}

@Suite("Noise handshake against published test vectors")
struct ChannelNoiseVectorTests {
    @Test("reproduces every handshake and transport message byte for byte", arguments: NoiseTestVector.all)
    func reproducesVector(_ vector: NoiseTestVector) throws {
        let pattern = try #require(vectorPatterns[vector.protocolName])
        #expect(pattern.protocolName == vector.protocolName)

        var initiator = NoiseHandshake(
            role: .initiator, pattern: pattern, prologue: hex(vector.initPrologue),
            localStatic: X25519KeyPair(privateKey: hex(vector.initStatic)), psks: (vector.initPSKs ?? []).map(hex),
            localEphemeral: X25519KeyPair(privateKey: hex(vector.initEphemeral)))
        var responder = NoiseHandshake(
            role: .responder, pattern: pattern, prologue: hex(vector.respPrologue),
            localStatic: X25519KeyPair(privateKey: hex(vector.respStatic)), psks: (vector.respPSKs ?? []).map(hex),
            localEphemeral: X25519KeyPair(privateKey: hex(vector.respEphemeral)))

        let handshakeCount = pattern.messages.count
        for (index, message) in vector.messages.prefix(handshakeCount).enumerated() {
            let payload = hex(message.payload)
            let written = index % 2 == 0
                ? try initiator.writeMessage(payload: payload)
                : try responder.writeMessage(payload: payload)
            #expect(Hex.encode(written) == message.ciphertext, "handshake message \(index + 1)")
            let read = index % 2 == 0 ? try responder.readMessage(written) : try initiator.readMessage(written)
            #expect(read == payload, "handshake message \(index + 1) payload")
        }

        let initiatorResult = try #require(initiator.result)
        let responderResult = try #require(responder.result)
        #expect(initiatorResult.handshakeHash == responderResult.handshakeHash)
        if let expectedHash = vector.handshakeHash {
            #expect(Hex.encode(initiatorResult.handshakeHash) == expectedHash)
        }
        #expect(initiatorResult.remoteStaticKey == X25519KeyPair(privateKey: hex(vector.respStatic)).publicKey)
        #expect(responderResult.remoteStaticKey == X25519KeyPair(privateKey: hex(vector.initStatic)).publicKey)
        #expect(initiatorResult.sendingKey == responderResult.receivingKey)

        // Transport messages keep alternating; each direction uses its own Split() key.
        var initiatorSends = NoiseCipherState(key: initiatorResult.sendingKey)
        var responderSends = NoiseCipherState(key: responderResult.sendingKey)
        for (offset, message) in vector.messages.dropFirst(handshakeCount).enumerated() {
            let index = handshakeCount + offset
            let payload = hex(message.payload)
            let sealed = index % 2 == 0
                ? try initiatorSends.encrypt(associatedData: [], plaintext: payload)
                : try responderSends.encrypt(associatedData: [], plaintext: payload)
            #expect(Hex.encode(sealed) == message.ciphertext, "transport message \(index + 1)")
        }
    }

    @Test("notesd runs XX with psk0 over 25519, ChaChaPoly and BLAKE2b")
    func notesdPattern() {
        let pattern = NoisePattern.xxpsk0
        #expect(pattern.protocolName == "Noise_XXpsk0_25519_ChaChaPoly_BLAKE2b")
        let xxpsk3 = vectorPatterns["Noise_XXpsk3_25519_ChaChaPoly_BLAKE2b"]!
        // XXpsk0 is XX with a psk token first; the vectors cover XX and a leading psk.
        #expect(pattern.messages[0] == [.psk] + xxpsk3.messages[0])
        #expect(pattern.messages[1] == xxpsk3.messages[1])
        #expect(pattern.messages[2] == xxpsk3.messages[2].filter { $0 != .psk })
        #expect(SecureChannel.prologue == Array("notesd/1".utf8))
    }

    @Test("a wrong PSK fails message 1 and leaves the responder with no static key")
    func wrongPSKFailsAtMessageOne() throws {
        let vector = try #require(NoiseTestVector.all.first { $0.protocolName.hasPrefix("Noise_XXpsk0") })
        let pattern = try #require(vectorPatterns[vector.protocolName])
        var initiator = NoiseHandshake(
            role: .initiator, pattern: pattern, prologue: hex(vector.initPrologue),
            localStatic: X25519KeyPair(privateKey: hex(vector.initStatic)), psks: (vector.initPSKs ?? []).map(hex))
        var wrongPSKs = (vector.respPSKs ?? []).map(hex)
        wrongPSKs[0][0] ^= 1
        var responder = NoiseHandshake(
            role: .responder, pattern: pattern, prologue: hex(vector.respPrologue),
            localStatic: X25519KeyPair(privateKey: hex(vector.respStatic)), psks: wrongPSKs)
        let message1 = try initiator.writeMessage(payload: [])
        #expect(throws: NoiseError.decryptionFailed) { try responder.readMessage(message1) }
        #expect(responder.remoteStaticKey == nil)
        #expect(responder.result == nil)
    }
}
