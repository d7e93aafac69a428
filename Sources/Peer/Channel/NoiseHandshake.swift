/// A Noise handshake pattern: the tokens of each message, initiator first (Noise rev 34 §7).
struct NoisePattern: Sendable {
    enum Token: Sendable { case e, s, ee, es, se, ss, psk }

    /// The pattern's name as it appears in the protocol name, e.g. `XXpsk0`.
    let name: String
    let messages: [[Token]]

    /// What notesd runs: XX with the household (or invite) key mixed in before anything else,
    /// so a device without the key fails at message 1, before either static key is sent.
    ///
    ///     -> psk, e
    ///     <- e, ee, s, es
    ///     -> s, se
    static let xxpsk0 = NoisePattern(name: "XXpsk0", messages: [[.psk, .e], [.e, .ee, .s, .es], [.s, .se]])

    /// With a `psk` token anywhere, every `e` is also mixed into the key (Noise §9.2).
    var usesPSK: Bool { messages.contains { $0.contains(.psk) } }

    var protocolName: String { "Noise_\(name)_25519_ChaChaPoly_BLAKE2b" }
}

/// The outcome of a finished handshake.
struct NoiseHandshakeResult: Equatable, Sendable {
    /// The peer's static X25519 public key, authenticated by the handshake.
    let remoteStaticKey: [UInt8]
    /// `h` after the last message: a transcript hash both sides share (channel binding).
    let handshakeHash: [UInt8]
    /// Split() keys, already assigned to this side's direction.
    let sendingKey: [UInt8]
    let receivingKey: [UInt8]
}

/// A Noise HandshakeState (§5.3) for one side of one connection, as a sans-I/O value type.
///
/// Messages alternate, initiator first: the side whose turn it is calls `writeMessage`, the
/// other `readMessage`. A failed message ends the handshake for good. Being a value type, a
/// copy can try a message and be thrown away: the responder tries message 1 against each
/// candidate PSK this way.
struct NoiseHandshake: Sendable {
    enum Role: Sendable { case initiator, responder }

    /// Noise limits every message to 65535 bytes (§3).
    static let maxMessageLength = 65535

    private enum State: Sendable {
        /// It is this side's turn to write message `index` (0-based).
        case writing(index: Int)
        /// This side waits for the peer's message `index`.
        case reading(index: Int)
        /// Every message went through; the split keys are ready.
        case complete(NoiseHandshakeResult)
        /// A message failed to parse or authenticate; nothing more is accepted.
        case failed
    }

    let role: Role
    private let pattern: NoisePattern
    private var state: State
    private var symmetric: NoiseSymmetricState
    private let localStatic: X25519KeyPair
    private let localEphemeral: X25519KeyPair
    private var unusedPSKs: ArraySlice<[UInt8]>
    private var remoteStatic: [UInt8]?
    private var remoteEphemeral: [UInt8]?

    /// - Parameters:
    ///   - psks: one 32-byte key per `psk` token, in the order the tokens occur.
    ///   - localEphemeral: injected only by tests reproducing published vectors; otherwise fresh.
    init(
        role: Role, pattern: NoisePattern = .xxpsk0, prologue: [UInt8], localStatic: X25519KeyPair,
        psks: [[UInt8]], localEphemeral: X25519KeyPair = .generate()
    ) {
        precondition(psks.allSatisfy { $0.count == 32 }, "Noise PSKs are 32 bytes")
        self.role = role
        self.pattern = pattern
        self.localStatic = localStatic
        self.localEphemeral = localEphemeral
        unusedPSKs = psks[...]
        symmetric = NoiseSymmetricState(protocolName: pattern.protocolName)
        symmetric.mixHash(prologue)
        state = role == .initiator ? .writing(index: 0) : .reading(index: 0)
    }

    /// The peer's static key once a message carrying it has been read and authenticated.
    var remoteStaticKey: [UInt8]? { remoteStatic }

    var result: NoiseHandshakeResult? {
        switch state {
        case .complete(let result): result
        case .writing, .reading, .failed: nil
        }
    }


    /// WriteMessage(payload): the next message, with `payload` encrypted when a key exists.
    mutating func writeMessage(payload: [UInt8]) throws(NoiseError) -> [UInt8] {
        guard case .writing(let index) = state else { preconditionFailure("writeMessage called when it is not this side's turn to write") }
        do throws(NoiseError) {
            var message: [UInt8] = []
            for token in pattern.messages[index] {
                switch token {
                case .e:
                    message += localEphemeral.publicKey
                    symmetric.mixHash(localEphemeral.publicKey)
                    if pattern.usesPSK { symmetric.mixKey(localEphemeral.publicKey) }
                case .s:
                    message += try symmetric.encryptAndHash(localStatic.publicKey)
                case .ee, .es, .se, .ss:
                    try mixDiffieHellman(token)
                case .psk:
                    symmetric.mixKeyAndHash(nextPSK())
                }
            }
            message += try symmetric.encryptAndHash(payload)
            guard message.count <= Self.maxMessageLength else { throw NoiseError.messageTooLong }
            advance(after: index)
            return message
        } catch {
            state = .failed
            throw error
        }
    }

    /// ReadMessage(message): the peer's payload, once every token and the payload authenticate.
    mutating func readMessage(_ message: [UInt8]) throws(NoiseError) -> [UInt8] {
        guard case .reading(let index) = state else { preconditionFailure("readMessage called when this side is not waiting for a message") }
        do throws(NoiseError) {
            guard message.count <= Self.maxMessageLength else { throw NoiseError.messageTooLong }
            var rest = message[...]
            for token in pattern.messages[index] {
                switch token {
                case .e:
                    let key = try take(32, from: &rest)
                    remoteEphemeral = key
                    symmetric.mixHash(key)
                    if pattern.usesPSK { symmetric.mixKey(key) }
                case .s:
                    let sealed = try take(symmetric.hasKey ? 48 : 32, from: &rest)
                    remoteStatic = try symmetric.decryptAndHash(sealed)
                case .ee, .es, .se, .ss:
                    try mixDiffieHellman(token)
                case .psk:
                    symmetric.mixKeyAndHash(nextPSK())
                }
            }
            if symmetric.hasKey && rest.count < 16 { throw NoiseError.messageTooShort }
            let payload = try symmetric.decryptAndHash(Array(rest))
            advance(after: index)
            return payload
        } catch {
            state = .failed
            remoteStatic = nil
            throw error
        }
    }

    private mutating func advance(after index: Int) {
        let next = index + 1
        if next == pattern.messages.count {
            state = .complete(finish())
        } else {
            // Messages alternate: even ones are the initiator's.
            let initiatorWrites = next % 2 == 0
            state = (initiatorWrites == (role == .initiator)) ? .writing(index: next) : .reading(index: next)
        }
    }

    private func finish() -> NoiseHandshakeResult {
        guard let remoteStatic else { preconditionFailure("handshake pattern \(pattern.name) completed without a remote static key") }
        let keys = symmetric.split()
        return NoiseHandshakeResult(
            remoteStaticKey: remoteStatic,
            handshakeHash: symmetric.handshakeHash,
            sendingKey: role == .initiator ? keys.initiatorToResponder : keys.responderToInitiator,
            receivingKey: role == .initiator ? keys.responderToInitiator : keys.initiatorToResponder)
    }

    /// ee, es, se, ss: the first letter is the initiator's key, the second the responder's.
    private mutating func mixDiffieHellman(_ token: NoisePattern.Token) throws(NoiseError) {
        let initiatorUsesEphemeral: Bool, responderUsesEphemeral: Bool
        switch token {
        case .ee: (initiatorUsesEphemeral, responderUsesEphemeral) = (true, true)
        case .es: (initiatorUsesEphemeral, responderUsesEphemeral) = (true, false)
        case .se: (initiatorUsesEphemeral, responderUsesEphemeral) = (false, true)
        case .ss: (initiatorUsesEphemeral, responderUsesEphemeral) = (false, false)
        case .e, .s, .psk: preconditionFailure("\(token) is not a Diffie-Hellman token")
        }
        let (localUsesEphemeral, remoteUsesEphemeral) = role == .initiator
            ? (initiatorUsesEphemeral, responderUsesEphemeral)
            : (responderUsesEphemeral, initiatorUsesEphemeral)
        let local = localUsesEphemeral ? localEphemeral : localStatic
        guard let remote = remoteUsesEphemeral ? remoteEphemeral : remoteStatic else {
            preconditionFailure("pattern \(pattern.name) uses a remote key before it is known")
        }
        guard let shared = Sodium.x25519(privateKey: local.privateKey, publicKey: remote) else { throw .invalidPublicKey }
        symmetric.mixKey(shared)
    }

    private mutating func nextPSK() -> [UInt8] {
        guard let psk = unusedPSKs.popFirst() else { preconditionFailure("pattern \(pattern.name) has more psk tokens than keys were given") }
        return psk
    }

    private func take(_ count: Int, from rest: inout ArraySlice<UInt8>) throws(NoiseError) -> [UInt8] {
        guard rest.count >= count else { throw .messageTooShort }
        let taken = Array(rest.prefix(count))
        rest = rest.dropFirst(count)
        return taken
    }
}
