/// A 32-byte key for the Noise `psk` token: the household key, or one derived from an invite
/// code (`InviteCode.pskForPairing`). Knowing it is what lets a device get past message 1.
///
/// Compared in constant time; `description` never prints the key.
public struct PreSharedKey: Equatable, Sendable, CustomStringConvertible {
    public static let byteCount = 32

    public let bytes: [UInt8]

    /// `nil` unless exactly 32 bytes.
    public init?(bytes: some Collection<UInt8>) {
        guard bytes.count == Self.byteCount else { return nil }
        self.bytes = Array(bytes)
    }

    init(exactly bytes: [UInt8]) {
        precondition(bytes.count == Self.byteCount, "pre-shared keys are 32 bytes")
        self.bytes = bytes
    }

    /// A new random key (a new household's key).
    public static func generate() -> PreSharedKey {
        PreSharedKey(exactly: Sodium.randomBytes(byteCount))
    }

    /// A public name for the key (16 bytes of a hash): devices say which key they hold
    /// without revealing it (docs/security.md, "Key rotation").
    public var fingerprint: [UInt8] { Sodium.blake2b(Array("notesd key fingerprint v1".utf8) + bytes, outputLength: 16) }

    /// The key sealed to one device, so only that device can read it.
    public func sealed(to device: DevicePublicKey) -> [UInt8] { Sodium.seal(bytes, to: device.bytes) }

    public static func == (lhs: PreSharedKey, rhs: PreSharedKey) -> Bool {
        Sodium.constantTimeEqual(lhs.bytes, rhs.bytes)
    }

    public var description: String { "PreSharedKey(redacted)" }
}
