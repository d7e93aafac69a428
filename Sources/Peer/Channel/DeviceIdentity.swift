/// An X25519 key pair: a device's static identity or a handshake's ephemeral key.
struct X25519KeyPair: Sendable {
    let privateKey: [UInt8]
    let publicKey: [UInt8]

    /// The pair for a given 32-byte private key (X25519 clamps it when used).
    init(privateKey: [UInt8]) {
        precondition(privateKey.count == 32, "X25519 private keys are 32 bytes")
        self.privateKey = privateKey
        publicKey = Sodium.x25519PublicKey(privateKey: privateKey)
    }

    /// A fresh pair from the system's secure random source.
    static func generate() -> X25519KeyPair {
        X25519KeyPair(privateKey: Sodium.randomBytes(32))
    }
}

/// A device's static X25519 public key, as the handshake authenticates it.
public struct DevicePublicKey: Hashable, Sendable, CustomStringConvertible {
    public let bytes: [UInt8]

    /// `nil` unless exactly 32 bytes.
    public init?(bytes: some Collection<UInt8>) {
        guard bytes.count == 32 else { return nil }
        self.bytes = Array(bytes)
    }

    /// For keys whose length is already known to be right (e.g. from `crypto_scalarmult_base`).
    init(exactly bytes: [UInt8]) {
        precondition(bytes.count == 32, "X25519 public keys are 32 bytes")
        self.bytes = bytes
    }

    public var deviceID: DeviceID { DeviceID(publicKey: self) }

    public var description: String { "DevicePublicKey(\(deviceID))" }
}

/// This device's long-term identity: the static key pair the handshake proves it holds.
///
/// The private key never leaves the process except into the key file (mode 0600, see
/// `DeviceIdentity.loadOrCreate(inDirectory:)`). `description` never prints it.
public struct DeviceIdentity: Sendable, CustomStringConvertible {
    let keyPair: X25519KeyPair

    public let publicKey: DevicePublicKey
    public let deviceID: DeviceID

    init(keyPair: X25519KeyPair) {
        self.keyPair = keyPair
        publicKey = DevicePublicKey(exactly: keyPair.publicKey)
        deviceID = DeviceID(publicKey: publicKey)
    }

    /// The identity for a stored 32-byte private key; `nil` for any other length.
    public init?(privateKey: some Collection<UInt8>) {
        guard privateKey.count == 32 else { return nil }
        self.init(keyPair: X25519KeyPair(privateKey: Array(privateKey)))
    }

    /// Opens a household key sealed to this device (`PreSharedKey.sealed(to:)`); `nil` when it
    /// was sealed to another device, altered, or is not a 32-byte key.
    public func openSealedKey(_ box: [UInt8]) -> PreSharedKey? {
        Sodium.openSealed(box, publicKey: keyPair.publicKey, privateKey: keyPair.privateKey).flatMap { PreSharedKey(bytes: $0) }
    }

    /// A new random identity.
    public static func generate() -> DeviceIdentity {
        DeviceIdentity(keyPair: .generate())
    }

    public var description: String { "DeviceIdentity(\(deviceID))" }
}
