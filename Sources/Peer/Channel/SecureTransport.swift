import CSodium

/// The encrypted stream after the handshake: one `crypto_secretstream_xchacha20poly1305`
/// stream per direction (https://doc.libsodium.org/secret-key_cryptography/secretstream).
///
/// Keys: each direction's stream key is BLAKE2b-256 keyed with that direction's Noise Split()
/// key over the domain string `notesd/1 secretstream`, so the stream never reuses a key the
/// Noise CipherState could also use.
///
/// Wire: each side's first transport frame is its 24-byte stream header; every later frame is
/// one secretstream message (plaintext + 17 bytes). A clean close is a message with the FINAL
/// tag. Secretstream authenticates order, so a tampered, truncated, reordered or replayed frame
/// fails to decrypt, and the channel closes.
struct SecureTransport: Sendable {
    static let headerLength = Int(crypto_secretstream_xchacha20poly1305_headerbytes())
    static let overhead = Int(crypto_secretstream_xchacha20poly1305_abytes())

    private enum Outbound: Sendable {
        /// Our header is sent; we may push messages.
        case open(SecretStreamPush)
        /// We sent FINAL; nothing more goes out.
        case finished
    }

    private enum Inbound: Sendable {
        /// Waiting for the peer's stream header, its first transport frame.
        case awaitingHeader(key: [UInt8])
        /// Decrypting the peer's messages in order.
        case open(SecretStreamPull)
        /// The peer sent FINAL; any further frame is an error.
        case finished
    }

    /// What one inbound frame turned out to be.
    enum Received: Equatable, Sendable {
        case header
        case message([UInt8])
        /// The peer's FINAL message (normally empty).
        case final([UInt8])
    }

    private var outbound: Outbound
    private var inbound: Inbound

    /// Starts both directions; `headerFrame` must be sent before any message.
    static func start(sendingKey: [UInt8], receivingKey: [UInt8]) -> (transport: SecureTransport, headerFrame: [UInt8]) {
        let (push, header) = SecretStreamPush.start(key: streamKey(from: sendingKey))
        let transport = SecureTransport(outbound: .open(push), inbound: .awaitingHeader(key: streamKey(from: receivingKey)))
        return (transport, LengthPrefixFraming.frame(header))
    }

    private init(outbound: Outbound, inbound: Inbound) {
        self.outbound = outbound
        self.inbound = inbound
    }

    static func streamKey(from splitKey: [UInt8]) -> [UInt8] {
        Sodium.blake2b(Array("notesd/1 secretstream".utf8), key: splitKey, outputLength: 32)
    }

    var isOutboundFinished: Bool {
        switch outbound {
        case .open: false
        case .finished: true
        }
    }

    var isInboundFinished: Bool {
        switch inbound {
        case .awaitingHeader, .open: false
        case .finished: true
        }
    }

    /// One framed message; with `final`, the clean close, after which `seal` refuses.
    mutating func seal(_ plaintext: [UInt8], final: Bool) throws(ChannelError) -> [UInt8] {
        switch outbound {
        case .open(var push):
            let ciphertext = push.push(plaintext, final: final)
            outbound = final ? .finished : .open(push)
            return LengthPrefixFraming.frame(ciphertext)
        case .finished:
            throw ChannelError(.sendAfterClose)
        }
    }

    /// Interprets one inbound frame (without its length prefix).
    mutating func open(_ frame: [UInt8]) throws(ChannelError) -> Received {
        switch inbound {
        case .awaitingHeader(let key):
            guard frame.count == Self.headerLength, let pull = SecretStreamPull(key: key, header: frame) else {
                throw ChannelError(.invalidStreamHeader(length: frame.count))
            }
            inbound = .open(pull)
            return .header
        case .open(var pull):
            guard let (plaintext, isFinal) = pull.pull(frame) else { throw ChannelError(.decryptionFailed) }
            inbound = isFinal ? .finished : .open(pull)
            return isFinal ? .final(plaintext) : .message(plaintext)
        case .finished:
            throw ChannelError(.frameAfterClose)
        }
    }
}

/// The sending half of a secretstream; the C state is a plain struct, so this stays a value.
struct SecretStreamPush: @unchecked Sendable {
    // @unchecked: the imported C struct holds only fixed-size byte arrays (no pointers), and
    // this wrapper is a value type with no shared references, so copies cannot race.
    private var state = crypto_secretstream_xchacha20poly1305_state()

    static func start(key: [UInt8]) -> (SecretStreamPush, header: [UInt8]) {
        Sodium.initialize()
        precondition(key.count == Int(crypto_secretstream_xchacha20poly1305_keybytes()), "secretstream keys are 32 bytes")
        var push = SecretStreamPush()
        var header = [UInt8](repeating: 0, count: SecureTransport.headerLength)
        let status = crypto_secretstream_xchacha20poly1305_init_push(&push.state, &header, key)
        precondition(status == 0, "crypto_secretstream_xchacha20poly1305_init_push failed")
        return (push, header)
    }

    mutating func push(_ plaintext: [UInt8], final: Bool) -> [UInt8] {
        let tag = final ? crypto_secretstream_xchacha20poly1305_tag_final() : crypto_secretstream_xchacha20poly1305_tag_message()
        // Not zero-filled first: the cipher writes every byte (a frame is up to a few MiB).
        return [UInt8](unsafeUninitializedCapacity: plaintext.count + SecureTransport.overhead) { buffer, count in
            var length: UInt64 = 0
            let status = crypto_secretstream_xchacha20poly1305_push(
                &state, buffer.baseAddress, &length, plaintext, UInt64(plaintext.count), nil, 0, tag)
            precondition(status == 0 && length == UInt64(buffer.count), "crypto_secretstream_xchacha20poly1305_push failed")
            count = buffer.count
        }
    }
}

/// The receiving half of a secretstream.
struct SecretStreamPull: @unchecked Sendable {
    // @unchecked: as for `SecretStreamPush`, plain bytes in a value type.
    private var state = crypto_secretstream_xchacha20poly1305_state()

    /// `nil` when the header is rejected.
    init?(key: [UInt8], header: [UInt8]) {
        Sodium.initialize()
        precondition(key.count == Int(crypto_secretstream_xchacha20poly1305_keybytes()), "secretstream keys are 32 bytes")
        guard header.count == SecureTransport.headerLength,
              crypto_secretstream_xchacha20poly1305_init_pull(&state, header, key) == 0 else { return nil }
    }

    /// The plaintext and whether it carried the FINAL tag; `nil` if it does not authenticate in
    /// this position of the stream.
    mutating func pull(_ ciphertext: [UInt8]) -> (plaintext: [UInt8], isFinal: Bool)? {
        guard ciphertext.count >= SecureTransport.overhead else { return nil }
        var tag: UInt8 = 0
        var authentic = false
        // Not zero-filled first (as in `push`); nothing of it is kept unless it authenticates.
        // (At least one byte, so an empty message still has somewhere to go.)
        let plaintext = [UInt8](unsafeUninitializedCapacity: max(1, ciphertext.count - SecureTransport.overhead)) { buffer, count in
            var length: UInt64 = 0
            authentic = crypto_secretstream_xchacha20poly1305_pull(
                &state, buffer.baseAddress, &length, &tag, ciphertext, UInt64(ciphertext.count), nil, 0) == 0
            count = authentic ? Int(length) : 0
        }
        guard authentic else { return nil }
        return (plaintext, tag == crypto_secretstream_xchacha20poly1305_tag_final())
    }
}
