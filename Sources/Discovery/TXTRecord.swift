/// The two hints notesd reads from a peer's DNS-SD TXT record (RFC 6763 §6): `v` (protocol
/// version) and `id` (short device id). The record comes from the network, so parsing is
/// bounded and anything malformed is dropped rather than trusted.
struct TXTRecord: Hashable, Sendable {
    /// The `v=` this build advertises.
    static let currentVersion = 1
    /// A full device id is a 52-character base32 fingerprint; a little headroom, and the default
    /// service name `notesd-<id>` still fits in one 63-byte DNS label.
    static let maxDeviceIDLength = 56
    /// Entries looked at; the rest are ignored (ours has two).
    static let maxEntries = 32
    /// One TXT string is at most 255 bytes on the wire (RFC 6763 §6.1).
    static let maxEntryBytes = 255
    /// Digits accepted in `v=`: enough for any real version, too few to overflow.
    private static let maxVersionDigits = 6

    var version: Int?
    var deviceID: String?

    init(version: Int? = nil, deviceID: String? = nil) {
        self.version = version
        self.deviceID = deviceID
    }

    /// Reads `v` and `id` from raw TXT strings. Keys are case-insensitive and only the first
    /// occurrence of a key counts (RFC 6763 §6.4); keys without `=` are ignored.
    init(entries: some Sequence<[UInt8]>) {
        var seenKeys = Set<[UInt8]>()
        for entry in entries.prefix(Self.maxEntries) where entry.count <= Self.maxEntryBytes {
            let equals = entry.firstIndex(of: UInt8(ascii: "=")) ?? entry.endIndex
            let key = entry[..<equals].map(Self.asciiLowercased)
            guard !key.isEmpty, seenKeys.insert(key).inserted, equals < entry.endIndex else { continue }
            let value = entry[(equals + 1)...]
            switch key {
            case Array("v".utf8): version = Self.parseVersion(value)
            case Array("id".utf8): deviceID = Self.parseDeviceID(value)
            default: break
            }
        }
    }

    /// A device id we publish or accept: 1 to `maxDeviceIDLength` ASCII letters or digits.
    static func isValidDeviceID(_ text: String) -> Bool {
        parseDeviceID(Array(text.utf8)[...]) != nil
    }

    private static func parseDeviceID(_ value: ArraySlice<UInt8>) -> String? {
        guard (1...maxDeviceIDLength).contains(value.count),
              value.allSatisfy({ isASCIIDigit($0) || isASCIILetter($0) }) else { return nil }
        return String(decoding: value, as: UTF8.self)
    }

    private static func parseVersion(_ value: ArraySlice<UInt8>) -> Int? {
        guard (1...maxVersionDigits).contains(value.count), value.allSatisfy(isASCIIDigit) else { return nil }
        return value.reduce(0) { $0 * 10 + Int($1 - UInt8(ascii: "0")) }
    }

    private static func isASCIIDigit(_ byte: UInt8) -> Bool { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) }
    private static func isASCIILetter(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(asciiLowercased(byte))
    }
    private static func asciiLowercased(_ byte: UInt8) -> UInt8 {
        (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte) ? byte + 32 : byte
    }
}
