import Testing
@testable import Peer
import TestSupport

@Suite("Invite codes")
struct ChannelInviteCodeTests {
    static let knownSecret: [UInt8] = Array(100..<120)

    @Test("a known secret gives the expected code, PSK and id (computed independently)")
    func knownAnswers() throws {
        // Expected values from Python: base64.b32encode + Luhn mod 32, hashlib.blake2b keyed.
        let code = try #require(InviteCode(secret: Self.knownSecret))
        #expect(code.description == "MRSWM-Z3INF-VCGW3-DNNZX-XA4LL-SON2H-K5TXZ")
        #expect(code.pskForPairing.bytes.map { String($0, radix: 16).leftPadded } .joined()
            == "1f3ebfdb948f5c56e7695ffa8c467caa569cd8bda8d2635504faa47a66439efa")
        #expect(code.secretID == "0019c193df07b5bcb5214981761fa1df")
    }

    @Test("codes round-trip; parsing forgives case, spaces, dashes and look-alike digits")
    func roundTrip() throws {
        for _ in 0..<50 {
            let code = InviteCode.generate()
            let text = code.description
            #expect(text.split(separator: "-").map(\.count) == [5, 5, 5, 5, 5, 5, 5])
            #expect(try InviteCode(parsing: text) == code)
            #expect(try InviteCode(parsing: text.lowercased()) == code)
            #expect(try InviteCode(parsing: "  " + text.replacingOccurrences(of: "-", with: " ") + " ") == code)
            #expect(try InviteCode(parsing: text.replacingOccurrences(of: "-", with: "")) == code)
            let lookAlikes = text.replacingOccurrences(of: "O", with: "0").replacingOccurrences(of: "I", with: "1")
                .replacingOccurrences(of: "B", with: "8")
            #expect(try InviteCode(parsing: lookAlikes) == code)
        }
    }

    @Test("every single-character typo is caught")
    func typos() throws {
        let compact = InviteCode.generate().compactCharacters
        for position in compact.indices {
            for replacement in Base32.alphabet where replacement != compact[position] {
                var typo = compact
                typo[position] = replacement
                #expect(throws: InviteCodeParseError.checksumMismatch) { try InviteCode(parsing: String(decoding: typo, as: UTF8.self)) }
            }
        }
    }

    @Test("parse errors say what is wrong")
    func parseErrors() {
        let text = InviteCode.generate().description
        #expect(throws: InviteCodeParseError.tooShort(count: 30)) { try InviteCode(parsing: String(text.prefix(35))) }
        #expect(throws: InviteCodeParseError.tooLong(count: 36)) { try InviteCode(parsing: text + "A") }
        #expect(throws: InviteCodeParseError.invalidCharacter("!", position: 1)) { try InviteCode(parsing: "!" + text) }
        #expect(InviteCodeParseError.checksumMismatch.description.hasPrefix("invite code has a typo: checksum does not match"))
        #expect(InviteCodeParseError.tooShort(count: 3).description.hasPrefix("invite code is too short"))
    }

    @Test("pairing PSKs and ids differ per code and from each other")
    func derivationsAreDistinct() throws {
        let codes = (0..<200).map { _ in InviteCode.generate() }
        #expect(Set(codes.map { $0.pskForPairing.bytes }).count == codes.count)
        #expect(Set(codes.map(\.secretID)).count == codes.count)
        let code = codes[0]
        #expect(code.pskForPairing == (try InviteCode(parsing: code.description)).pskForPairing, "deterministic")
        #expect(!code.secretID.isEmpty && code.secretID.count == 32)
        // The id is not a piece of the PSK or of the secret.
        let pskHex = code.pskForPairing.bytes.map { String($0, radix: 16).leftPadded }.joined()
        let secretHex = code.secret.map { String($0, radix: 16).leftPadded }.joined()
        #expect(!pskHex.contains(code.secretID) && !secretHex.contains(code.secretID))
        #expect(code.secret.count * 8 == 160)
    }

    @Test("a device holding a fresh invite's PSK can handshake with a responder offering that invite")
    func inviteHandshake() throws {
        let code = InviteCode.generate()
        let typed = try InviteCode(parsing: code.description.lowercased())
        var wire = ChannelWire(
            initiator: SecureChannel(role: .initiator(psk: typed.pskForPairing), identity: .generate()),
            responder: SecureChannel(role: .responder(candidatePSKs: [.generate(), code.pskForPairing]), identity: .generate()))
        wire.handshake()
        #expect(wire.responderLog.peer?.matchedPSKIndex == 1)
        #expect(wire.initiatorLog.peer != nil)
    }
}

extension String {
    /// Two hex digits.
    fileprivate var leftPadded: String { count == 1 ? "0" + self : self }
}
