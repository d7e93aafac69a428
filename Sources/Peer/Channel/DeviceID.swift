/// A device's id: the fingerprint of its static X25519 public key, in a form people can read,
/// compare and type.
///
/// Fingerprint: BLAKE2b-256 of the 32-byte public key. Text: the fingerprint in base32
/// (RFC 4648 alphabet, upper-case, no padding) is 52 characters; they are cut into 4 groups of
/// 13 and each group is followed by its Luhn mod 32 check character (as Syncthing does), giving
/// 56 characters shown as 8 dash-separated groups of 7:
///
///     MFRGGZD-FMZTGQ3-...
///
/// Parsing ignores case, spaces and dashes. The short form (the first 7 characters) is for
/// display only; it is never accepted as an id.
public struct DeviceID: Hashable, Comparable, Sendable, CustomStringConvertible {
    /// The 32-byte fingerprint.
    public let fingerprint: [UInt8]

    static let groupCount = 4
    static let dataCharactersPerGroup = 13
    /// Length of the full form without dashes.
    public static let characterCount = groupCount * (dataCharactersPerGroup + 1)

    public init(publicKey: DevicePublicKey) {
        fingerprint = Sodium.blake2b(publicKey.bytes, outputLength: 32)
    }

    /// An id from its stored 32-byte fingerprint; `nil` for any other length.
    public init?(fingerprint: some Collection<UInt8>) {
        guard fingerprint.count == 32 else { return nil }
        self.fingerprint = Array(fingerprint)
    }

    /// Parses the full form, forgiving of case, spaces and dashes.
    public init(parsing text: String) throws(DeviceIDParseError) {
        let characters = Base32.normalize(text)
        if let position = characters.firstIndex(where: { Base32.value(of: $0) == nil }) {
            throw .invalidCharacter(Character(Unicode.Scalar(characters[position])), position: position + 1)
        }
        guard characters.count >= Self.characterCount else {
            throw characters.count == 7 ? .shortFormGiven : .tooShort(count: characters.count)
        }
        guard characters.count == Self.characterCount else { throw .tooLong(count: characters.count) }
        var data: [UInt8] = []
        for group in 0..<Self.groupCount {
            let start = group * (Self.dataCharactersPerGroup + 1)
            let groupData = characters[start..<start + Self.dataCharactersPerGroup]
            guard Base32.luhnCheckCharacter(for: groupData) == characters[start + Self.dataCharactersPerGroup] else {
                throw .checkCharacterMismatch(group: group + 1)
            }
            data += groupData
        }
        guard let fingerprint = Base32.decode(data, byteCount: 32) else { throw .checkCharacterMismatch(group: Self.groupCount) }
        self.fingerprint = fingerprint
    }

    /// Parses the full form; `nil` for anything else.
    public init?(_ text: String) {
        guard let id = try? DeviceID(parsing: text) else { return nil }
        self = id
    }

    /// The 56 characters without dashes.
    var compactCharacters: [UInt8] {
        let data = Base32.encode(fingerprint)
        var out: [UInt8] = []
        for group in 0..<Self.groupCount {
            let groupData = data[group * Self.dataCharactersPerGroup..<(group + 1) * Self.dataCharactersPerGroup]
            out += groupData
            out.append(Base32.luhnCheckCharacter(for: groupData))
        }
        return out
    }

    /// The full form: 8 groups of 7 characters joined by dashes.
    public var description: String {
        let characters = compactCharacters
        let groups = stride(from: 0, to: characters.count, by: 7).map {
            String(decoding: characters[$0..<$0 + 7], as: UTF8.self)
        }
        return groups.joined(separator: "-")
    }

    /// The first 7 characters, for display where space is short (e.g. mDNS TXT, status lines).
    /// They are data characters alone (the first check character follows 13 of them), so the
    /// check characters are not computed: short ids name devices in every log line.
    public var short: String { String(decoding: Base32.encode(fingerprint).prefix(7), as: UTF8.self) }

    public static func < (lhs: DeviceID, rhs: DeviceID) -> Bool {
        lhs.fingerprint.lexicographicallyPrecedes(rhs.fingerprint)
    }
}

/// Why a device id did not parse; each message says what to check.
public enum DeviceIDParseError: Error, Equatable, Sendable, CustomStringConvertible {
    case invalidCharacter(Character, position: Int)
    case tooShort(count: Int)
    case tooLong(count: Int)
    /// Exactly 7 characters: someone pasted the short display form.
    case shortFormGiven
    /// A group's check character does not match: a typo in that group (1-based).
    case checkCharacterMismatch(group: Int)

    public var description: String {
        let expected = "\(DeviceID.characterCount) characters (dashes and spaces are ignored)"
        return switch self {
        case .invalidCharacter(let character, let position):
            "device id has a typo: '\(character)' at position \(position) is not used in device ids (they use letters A-Z and digits 2-7)"
        case .tooShort(let count): "device id is too short: expected \(expected), got \(count)"
        case .tooLong(let count): "device id is too long: expected \(expected), got \(count)"
        case .shortFormGiven: "that is the short form of a device id, shown for display only; give the full id (\(expected))"
        case .checkCharacterMismatch(let group):
            "device id has a typo: the check character of part \(group) of 4 does not match (each part is 14 characters)"
        }
    }
}
