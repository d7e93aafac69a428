import CSodium
import Merge

/// The one place notesd calls libsodium: initialisation and the few primitives the channel uses.
///
/// `sodium_init()` must run before any other libsodium call. Swift runs a `static let`
/// initialiser exactly once, thread-safely, so every wrapper below touches `isReady` first and
/// no caller has to remember to initialise anything.
public enum Sodium {
    private static let isReady: Bool = sodium_init() >= 0

    /// Runs `sodium_init()` once per process; later calls are free.
    static func initialize() {
        precondition(isReady, "libsodium failed to initialise (sodium_init() returned -1); the system has no usable random source")
    }

    /// Bytes from the operating system's secure random source (`randombytes_buf`).
    public static func randomBytes(_ count: Int) -> [UInt8] {
        initialize()
        var bytes = [UInt8](repeating: 0, count: count)
        randombytes_buf(&bytes, count)
        return bytes
    }

    /// BLAKE2b (`crypto_generichash`) of `input`, keyed when `key` is not empty.
    /// `outputLength` is 16...64 bytes; `key` is empty or 16...64 bytes.
    static func blake2b(_ input: [UInt8], key: [UInt8] = [], outputLength: Int) -> [UInt8] {
        [UInt8](unsafeUninitializedCapacity: outputLength) { output, count in
            input.withUnsafeBytes { blake2b($0, key: key, into: output) }
            count = outputLength
        }
    }

    /// `blake2b` of the bytes at `input`, written into `output`, whose size is the output length.
    private static func blake2b(_ input: UnsafeRawBufferPointer, key: [UInt8], into output: UnsafeMutableBufferPointer<UInt8>) {
        initialize()
        precondition((16...64).contains(output.count), "BLAKE2b output length \(output.count) is outside 16...64")
        precondition(key.isEmpty || (16...64).contains(key.count), "BLAKE2b key length \(key.count) is outside 16...64")
        let status = crypto_generichash(
            output.baseAddress!, output.count, input.baseAddress?.assumingMemoryBound(to: UInt8.self), UInt64(input.count),
            key.isEmpty ? nil : key, key.count)
        precondition(status == 0, "crypto_generichash failed with valid lengths")
    }

    /// The X25519 public key for a 32-byte private key (`crypto_scalarmult_base`).
    static func x25519PublicKey(privateKey: [UInt8]) -> [UInt8] {
        initialize()
        precondition(privateKey.count == 32, "X25519 private keys are 32 bytes")
        var publicKey = [UInt8](repeating: 0, count: 32)
        let status = crypto_scalarmult_base(&publicKey, privateKey)
        precondition(status == 0, "crypto_scalarmult_base failed")
        return publicKey
    }

    /// X25519 Diffie-Hellman (`crypto_scalarmult`). `nil` when the peer's public key is a
    /// low-order point (the shared secret would be all zeros), which only an attacker sends.
    static func x25519(privateKey: [UInt8], publicKey: [UInt8]) -> [UInt8]? {
        initialize()
        precondition(privateKey.count == 32 && publicKey.count == 32, "X25519 keys are 32 bytes")
        var shared = [UInt8](repeating: 0, count: 32)
        guard crypto_scalarmult(&shared, privateKey, publicKey) == 0 else { return nil }
        return shared
    }

    /// The bytes `seal` adds to a message (an ephemeral public key and a MAC).
    public static let sealOverhead = Int(crypto_box_sealbytes())

    /// Seals `message` to an X25519 public key (`crypto_box_seal`): only the holder of the
    /// matching private key can open it, and the box says nothing about who sealed it.
    static func seal(_ message: [UInt8], to publicKey: [UInt8]) -> [UInt8] {
        initialize()
        precondition(publicKey.count == 32, "X25519 public keys are 32 bytes")
        var box = [UInt8](repeating: 0, count: message.count + sealOverhead)
        let status = crypto_box_seal(&box, message, UInt64(message.count), publicKey)
        precondition(status == 0, "crypto_box_seal failed with a valid key")
        return box
    }

    /// Opens a box made by `seal` for this key pair; `nil` when it was sealed to another key
    /// or altered.
    static func openSealed(_ box: [UInt8], publicKey: [UInt8], privateKey: [UInt8]) -> [UInt8]? {
        initialize()
        guard box.count >= sealOverhead, publicKey.count == 32, privateKey.count == 32 else { return nil }
        var message = [UInt8](repeating: 0, count: box.count - sealOverhead)
        guard crypto_box_seal_open(&message, box, UInt64(box.count), publicKey, privateKey) == 0 else { return nil }
        return message
    }

    /// ChaCha20-Poly1305 (IETF) with the Noise nonce encoding: 32 zero bits, then the
    /// 64-bit counter little-endian (Noise rev 34 §12.3).
    static func chaChaPolyEncrypt(key: [UInt8], nonce: UInt64, associatedData: [UInt8], plaintext: [UInt8]) -> [UInt8] {
        initialize()
        precondition(key.count == 32, "ChaCha20-Poly1305 keys are 32 bytes")
        let nonceBytes = noiseNonce(nonce)
        var ciphertext = [UInt8](repeating: 0, count: plaintext.count + 16)
        var length: UInt64 = 0
        let status = crypto_aead_chacha20poly1305_ietf_encrypt(
            &ciphertext, &length, plaintext, UInt64(plaintext.count),
            associatedData, UInt64(associatedData.count), nil, nonceBytes, key)
        precondition(status == 0 && length == UInt64(ciphertext.count), "crypto_aead_chacha20poly1305_ietf_encrypt failed")
        return ciphertext
    }

    /// The inverse of `chaChaPolyEncrypt`; `nil` when the tag does not authenticate.
    static func chaChaPolyDecrypt(key: [UInt8], nonce: UInt64, associatedData: [UInt8], ciphertext: [UInt8]) -> [UInt8]? {
        initialize()
        precondition(key.count == 32, "ChaCha20-Poly1305 keys are 32 bytes")
        guard ciphertext.count >= 16 else { return nil }
        let nonceBytes = noiseNonce(nonce)
        var plaintext = [UInt8](repeating: 0, count: ciphertext.count - 16)
        var length: UInt64 = 0
        let status = crypto_aead_chacha20poly1305_ietf_decrypt(
            &plaintext, &length, nil, ciphertext, UInt64(ciphertext.count),
            associatedData, UInt64(associatedData.count), nonceBytes, key)
        guard status == 0 else { return nil }
        return plaintext
    }

    /// Compares two secrets in time that depends only on their length (`sodium_memcmp`).
    static func constantTimeEqual(_ lhs: [UInt8], _ rhs: [UInt8]) -> Bool {
        initialize()
        guard lhs.count == rhs.count else { return false }
        if lhs.isEmpty { return true }
        return sodium_memcmp(lhs, rhs, lhs.count) == 0
    }

    private static func noiseNonce(_ counter: UInt64) -> [UInt8] {
        [0, 0, 0, 0] + (0..<8).map { UInt8(truncatingIfNeeded: counter >> (8 * $0)) }
    }
}

extension Sodium {
    /// BLAKE2b-256: the replica's one content hash (revision ids, block addresses). Written
    /// into a buffer on the stack: every block and revision a catch-up brings is hashed, and
    /// an array per hash was a measurable share of it.
    public static func hash256(_ input: [UInt8]) -> Hash256 {
        input.withUnsafeBytes { hash256($0) }
    }

    /// `hash256` of bytes that are part of a larger buffer (a block in a received frame).
    public static func hash256(_ input: ArraySlice<UInt8>) -> Hash256 {
        input.withUnsafeBytes { hash256($0) }
    }

    private static func hash256(_ input: UnsafeRawBufferPointer) -> Hash256 {
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 32) { output in
            blake2b(input, key: [], into: output)
            return Hash256(bytes: output)!
        }
    }
}
