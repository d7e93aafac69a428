/// The Noise building blocks below the handshake pattern, exactly as the Noise Protocol
/// Framework (revision 34, https://noiseprotocol.org/noise.html) defines them for
/// `25519_ChaChaPoly_BLAKE2b`: HASH, HMAC-HASH and HKDF (§4.3), CipherState (§5.1) and
/// SymmetricState (§5.2). Only libsodium primitives are used.

/// Why a Noise operation failed. The handshake turns these into a dead handshake; nothing retries.
enum NoiseError: Error, Equatable, Sendable {
    /// A ciphertext did not authenticate: wrong key (e.g. a different PSK) or tampered bytes.
    case decryptionFailed
    /// The message ended before a key or tag it must contain.
    case messageTooShort
    /// The message is longer than Noise's 65535-byte limit.
    case messageTooLong
    /// The peer sent a low-order X25519 point.
    case invalidPublicKey
    /// 2^64 - 1 messages were sent under one key (Noise reserves the last nonce).
    case nonceExhausted
}

/// HASH, HMAC-HASH and HKDF over BLAKE2b (HASHLEN 64, BLOCKLEN 128), Noise §4.3.
enum NoiseHash {
    static let hashLength = 64
    static let blockLength = 128

    static func hash(_ data: [UInt8]) -> [UInt8] {
        Sodium.blake2b(data, outputLength: hashLength)
    }

    /// HMAC (RFC 2104) with BLAKE2b as the hash, as Noise requires (not BLAKE2b's keyed mode).
    static func hmac(key: [UInt8], data: [UInt8]) -> [UInt8] {
        var paddedKey = key.count > blockLength ? hash(key) : key
        paddedKey += [UInt8](repeating: 0, count: blockLength - paddedKey.count)
        let inner = hash(paddedKey.map { $0 ^ 0x36 } + data)
        return hash(paddedKey.map { $0 ^ 0x5c } + inner)
    }

    /// HKDF(chaining_key, input_key_material, num_outputs) with 2 or 3 outputs of HASHLEN bytes.
    static func hkdf(chainingKey: [UInt8], inputKeyMaterial: [UInt8], outputs: Int) -> [[UInt8]] {
        precondition(outputs == 2 || outputs == 3, "Noise HKDF yields 2 or 3 outputs")
        let tempKey = hmac(key: chainingKey, data: inputKeyMaterial)
        var results: [[UInt8]] = []
        var previous: [UInt8] = []
        for index in 1...outputs {
            previous = hmac(key: tempKey, data: previous + [UInt8(index)])
            results.append(previous)
        }
        return results
    }
}

/// A Noise CipherState: a ChaChaPoly key (or none yet) and a 64-bit nonce counter.
struct NoiseCipherState: Sendable {
    private var key: [UInt8]?
    private var nonce: UInt64 = 0

    init(key: [UInt8]? = nil) {
        precondition(key == nil || key?.count == 32, "Noise cipher keys are 32 bytes")
        self.key = key
    }

    var hasKey: Bool { key != nil }

    /// Encrypts with the next nonce; with no key yet, returns the plaintext unchanged.
    mutating func encrypt(associatedData: [UInt8], plaintext: [UInt8]) throws(NoiseError) -> [UInt8] {
        guard let key else { return plaintext }
        guard nonce < UInt64.max else { throw .nonceExhausted }
        let ciphertext = Sodium.chaChaPolyEncrypt(key: key, nonce: nonce, associatedData: associatedData, plaintext: plaintext)
        nonce += 1
        return ciphertext
    }

    /// Decrypts with the next nonce; the nonce advances only when the tag authenticates.
    mutating func decrypt(associatedData: [UInt8], ciphertext: [UInt8]) throws(NoiseError) -> [UInt8] {
        guard let key else { return ciphertext }
        guard nonce < UInt64.max else { throw .nonceExhausted }
        guard let plaintext = Sodium.chaChaPolyDecrypt(key: key, nonce: nonce, associatedData: associatedData, ciphertext: ciphertext) else {
            throw .decryptionFailed
        }
        nonce += 1
        return plaintext
    }
}

/// A Noise SymmetricState: chaining key `ck`, handshake hash `h` and the current CipherState.
struct NoiseSymmetricState: Sendable {
    private(set) var chainingKey: [UInt8]
    private(set) var handshakeHash: [UInt8]
    private var cipher = NoiseCipherState()

    /// InitializeSymmetric(protocol_name).
    init(protocolName: String) {
        let name = Array(protocolName.utf8)
        handshakeHash = name.count <= NoiseHash.hashLength
            ? name + [UInt8](repeating: 0, count: NoiseHash.hashLength - name.count)
            : NoiseHash.hash(name)
        chainingKey = handshakeHash
    }

    var hasKey: Bool { cipher.hasKey }

    mutating func mixKey(_ inputKeyMaterial: [UInt8]) {
        let outputs = NoiseHash.hkdf(chainingKey: chainingKey, inputKeyMaterial: inputKeyMaterial, outputs: 2)
        chainingKey = outputs[0]
        cipher = NoiseCipherState(key: Array(outputs[1].prefix(32)))
    }

    mutating func mixHash(_ data: [UInt8]) {
        handshakeHash = NoiseHash.hash(handshakeHash + data)
    }

    /// Used for the `psk` token.
    mutating func mixKeyAndHash(_ inputKeyMaterial: [UInt8]) {
        let outputs = NoiseHash.hkdf(chainingKey: chainingKey, inputKeyMaterial: inputKeyMaterial, outputs: 3)
        chainingKey = outputs[0]
        mixHash(outputs[1])
        cipher = NoiseCipherState(key: Array(outputs[2].prefix(32)))
    }

    mutating func encryptAndHash(_ plaintext: [UInt8]) throws(NoiseError) -> [UInt8] {
        let ciphertext = try cipher.encrypt(associatedData: handshakeHash, plaintext: plaintext)
        mixHash(ciphertext)
        return ciphertext
    }

    mutating func decryptAndHash(_ ciphertext: [UInt8]) throws(NoiseError) -> [UInt8] {
        let plaintext = try cipher.decrypt(associatedData: handshakeHash, ciphertext: ciphertext)
        mixHash(ciphertext)
        return plaintext
    }

    /// Split(): the initiator-to-responder and responder-to-initiator keys (32 bytes each).
    func split() -> (initiatorToResponder: [UInt8], responderToInitiator: [UInt8]) {
        let outputs = NoiseHash.hkdf(chainingKey: chainingKey, inputKeyMaterial: [], outputs: 2)
        return (Array(outputs[0].prefix(32)), Array(outputs[1].prefix(32)))
    }
}
