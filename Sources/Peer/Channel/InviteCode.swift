/// A one-time pairing code: `notesctl invite` prints it, `notesctl join CODE` types it.
///
/// The code carries a 160-bit random secret. Text form: the secret in base32 (32 characters,
/// RFC 4648 alphabet, upper-case) cut into parts of 11, 11 and 10 characters, each followed by
/// its Luhn mod 32 check character — 35 characters shown as 7 groups of 5:
///
///     ABCDE-FGHIJ-KLMNO-PQRST-UVWXY-Z2345-67ABC
///
/// Parsing ignores case, spaces and dashes and maps `0`, `1`, `8` to `O`, `I`, `B`.
///
/// This type is pure: expiry (10 minutes) and single use are the store's job, which finds an
/// outstanding code by `secretID` without keeping the secret in an index.
public struct InviteCode: Equatable, Sendable, CustomStringConvertible {
    public static let secretByteCount = 20
    /// Data characters in each checked part.
    static let partLengths = [11, 11, 10]
    /// Length of the text form without dashes.
    public static let characterCount = 35

    /// The 160-bit secret.
    public let secret: [UInt8]

    /// `nil` unless exactly 20 bytes.
    public init?(secret: some Collection<UInt8>) {
        guard secret.count == Self.secretByteCount else { return nil }
        self.secret = Array(secret)
    }

    init(exactly secret: [UInt8]) {
        precondition(secret.count == Self.secretByteCount, "invite secrets are 20 bytes")
        self.secret = secret
    }

    /// A new code with a fresh random secret.
    public static func generate() -> InviteCode {
        InviteCode(exactly: Sodium.randomBytes(secretByteCount))
    }

    /// Parses what a person typed.
    public init(parsing text: String) throws(InviteCodeParseError) {
        let characters = Base32.normalize(text)
        if let position = characters.firstIndex(where: { Base32.value(of: $0) == nil }) {
            throw .invalidCharacter(Character(Unicode.Scalar(characters[position])), position: position + 1)
        }
        guard characters.count >= Self.characterCount else { throw .tooShort(count: characters.count) }
        guard characters.count == Self.characterCount else { throw .tooLong(count: characters.count) }
        var data: [UInt8] = []
        var start = 0
        for length in Self.partLengths {
            let part = characters[start..<start + length]
            guard Base32.luhnCheckCharacter(for: part) == characters[start + length] else { throw .checksumMismatch }
            data += part
            start += length + 1
        }
        // 32 characters hold exactly 160 bits, so every checked string decodes.
        guard let secret = Base32.decode(data, byteCount: Self.secretByteCount) else { throw .checksumMismatch }
        self.secret = secret
    }

    /// The 35 characters, without dashes.
    var compactCharacters: [UInt8] {
        let data = Base32.encode(secret)
        var out: [UInt8] = []
        var start = 0
        for length in Self.partLengths {
            let part = data[start..<start + length]
            out += part
            out.append(Base32.luhnCheckCharacter(for: part))
            start += length
        }
        return out
    }

    /// The code as shown to people: 7 groups of 5 joined by dashes.
    public var description: String {
        let characters = compactCharacters
        return stride(from: 0, to: characters.count, by: 5)
            .map { String(decoding: characters[$0..<$0 + 5], as: UTF8.self) }
            .joined(separator: "-")
    }

    /// The PSK both sides use for the pairing handshake:
    /// BLAKE2b-256 keyed with the secret, over the domain string `notesd/1 pairing psk`.
    public var pskForPairing: PreSharedKey {
        PreSharedKey(exactly: Sodium.blake2b(Array("notesd/1 pairing psk".utf8), key: secret, outputLength: 32))
    }

    /// A non-secret handle for the store to find this code: BLAKE2b-128 keyed with the secret
    /// over `notesd/1 invite id`, as 32 lower-case hex digits. It reveals nothing about the PSK.
    public var secretID: String {
        let digits = Array("0123456789abcdef".utf8)
        let hash = Sodium.blake2b(Array("notesd/1 invite id".utf8), key: secret, outputLength: 16)
        return String(decoding: hash.flatMap { [digits[Int($0 >> 4)], digits[Int($0 & 15)]] }, as: UTF8.self)
    }

    public static func == (lhs: InviteCode, rhs: InviteCode) -> Bool {
        Sodium.constantTimeEqual(lhs.secret, rhs.secret)
    }
}

/// Why an invite code did not parse; each message says what to check.
public enum InviteCodeParseError: Error, Equatable, Sendable, CustomStringConvertible {
    case invalidCharacter(Character, position: Int)
    case tooShort(count: Int)
    case tooLong(count: Int)
    case checksumMismatch

    public var description: String {
        let expected = "\(InviteCode.characterCount) characters (dashes and spaces are ignored)"
        return switch self {
        case .invalidCharacter(let character, let position):
            "invite code has a typo: '\(character)' at position \(position) is not used in codes (they use letters A-Z and digits 2-7)"
        case .tooShort(let count): "invite code is too short: expected \(expected), got \(count)"
        case .tooLong(let count): "invite code is too long: expected \(expected), got \(count)"
        case .checksumMismatch: "invite code has a typo: checksum does not match; check it against the code shown by `notesctl invite`"
        }
    }
}
