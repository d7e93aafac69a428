/// One encrypted, authenticated connection between two devices, as a sans-I/O value: bytes
/// in, bytes and events out. No sockets, threads or clocks; the TCP shell feeds it.
///
/// 1. Handshake: `Noise_XXpsk0_25519_ChaChaPoly_BLAKE2b` with prologue `notesd/1`
///    (`NoiseHandshake`). The initiator knows one PSK (the household key, or an invite's);
///    the responder holds candidates and learns which one the initiator used. A device
///    without any candidate key fails at message 1, before either static key is sent.
/// 2. Transport: one secretstream per direction (`SecureTransport`).
///
/// Every message on the wire — handshake messages, stream headers, transport messages — is a
/// frame: a 4-byte big-endian length, then the bytes (`LengthPrefixFraming`). Lengths are checked
/// against a cap before anything is buffered: Noise's 65535-byte limit during the handshake,
/// `Configuration.maxFrameLength` afterwards.
///
/// This type authenticates keys; it does not decide who may talk. After `.established`, the
/// caller checks `ChannelPeer.deviceID` against the roster and drops the connection if needed.
public struct SecureChannel: Sendable {
    public enum Role: Sendable {
        /// Connects out, proving knowledge of `psk`.
        case initiator(psk: PreSharedKey)
        /// Accepts a connection from anyone holding one of `candidatePSKs`.
        case responder(candidatePSKs: [PreSharedKey])
    }

    public struct Configuration: Sendable {
        /// The largest transport frame (secretstream ciphertext, without its 4-byte length)
        /// accepted or sent; a plaintext may be 17 bytes shorter.
        public var maxFrameLength: Int

        public init(maxFrameLength: Int = 4 << 20) {
            precondition(maxFrameLength > SecureTransport.overhead, "frames must have room for the 17-byte secretstream overhead")
            self.maxFrameLength = maxFrameLength
        }
    }

    /// Bound into the handshake hash: both sides must agree on it.
    public static let prologue = Array("notesd/1".utf8)

    private enum State: Sendable {
        /// Initiator before `start()`: message 1 is not written yet.
        case initiatorReady(NoiseHandshake)
        /// Initiator sent message 1 and waits for message 2.
        case initiatorAwaitingMessage2(NoiseHandshake)
        /// Responder waits for message 1, holding one handshake per candidate PSK.
        case responderAwaitingMessage1([NoiseHandshake])
        /// Responder matched candidate `matchedPSKIndex`, sent message 2, waits for message 3.
        case responderAwaitingMessage3(NoiseHandshake, matchedPSKIndex: Int)
        /// The handshake finished; frames flow through the transport.
        case established(SecureTransport, ChannelPeer)
        /// Failed, or closed before the handshake finished; nothing more is accepted.
        case failed(ChannelError)
    }

    private var state: State
    private var decoder = LengthPrefixFraming()
    /// The room the receive buffer holds in memory (what an idle connection keeps).
    var receiveBufferCapacity: Int { decoder.heldCapacity }
    /// Bytes received that do not yet make a whole frame.
    var receivedBytesPending: Int { decoder.bufferedByteCount }
    private let configuration: Configuration
    private let handshakePayload: [UInt8]

    /// - Parameters:
    ///   - handshakePayload: small application data for the peer, encrypted and authenticated
    ///     by the handshake (message 3 for the initiator, message 2 for the responder); the peer
    ///     gets it in `ChannelPeer.handshakePayload`. Keep it well under 64 KiB.
    public init(role: Role, identity: DeviceIdentity, handshakePayload: [UInt8] = [], configuration: Configuration = Configuration()) {
        self.init(role: role, identity: identity, handshakePayload: handshakePayload, configuration: configuration, ephemeral: .generate())
    }

    /// For tests that need a fixed ephemeral key.
    init(role: Role, identity: DeviceIdentity, handshakePayload: [UInt8] = [], configuration: Configuration = Configuration(), ephemeral: X25519KeyPair) {
        self.configuration = configuration
        self.handshakePayload = handshakePayload
        switch role {
        case .initiator(let psk):
            state = .initiatorReady(NoiseHandshake(
                role: .initiator, prologue: Self.prologue, localStatic: identity.keyPair, psks: [psk.bytes], localEphemeral: ephemeral))
        case .responder(let candidates):
            state = .responderAwaitingMessage1(candidates.map {
                NoiseHandshake(role: .responder, prologue: Self.prologue, localStatic: identity.keyPair, psks: [$0.bytes], localEphemeral: ephemeral)
            })
        }
    }

    /// The authenticated peer, once established.
    public var peer: ChannelPeer? {
        switch state {
        case .established(_, let peer): peer
        case .initiatorReady, .initiatorAwaitingMessage2, .responderAwaitingMessage1, .responderAwaitingMessage3, .failed: nil
        }
    }

    public var isEstablished: Bool { peer != nil }

    /// Whether both directions have been closed cleanly.
    public var isClosed: Bool {
        switch state {
        case .established(let transport, _): transport.isOutboundFinished && transport.isInboundFinished
        case .failed: true
        case .initiatorReady, .initiatorAwaitingMessage2, .responderAwaitingMessage1, .responderAwaitingMessage3: false
        }
    }

    /// Any remote static key the handshake has decrypted so far, established or not (for tests
    /// proving that a failed handshake learned nothing).
    var remoteStaticKeySeen: [UInt8]? {
        switch state {
        case .initiatorReady(let handshake), .initiatorAwaitingMessage2(let handshake), .responderAwaitingMessage3(let handshake, _):
            handshake.remoteStaticKey
        case .responderAwaitingMessage1(let candidates): candidates.lazy.compactMap(\.remoteStaticKey).first
        case .established(_, let peer): peer.staticKey.bytes
        case .failed: nil
        }
    }

    /// The initiator's message 1, to send first. The responder has nothing to say first and
    /// gets no bytes, so a shell can call this for either role.
    public mutating func start() -> [UInt8] {
        switch state {
        case .initiatorReady(var handshake):
            do {
                let message = try handshake.writeMessage(payload: [])
                state = .initiatorAwaitingMessage2(handshake)
                return LengthPrefixFraming.frame(message)
            } catch {
                preconditionFailure("writing Noise message 1 with an empty payload cannot fail, yet failed: \(error)")
            }
        case .responderAwaitingMessage1:
            return []
        case .initiatorAwaitingMessage2, .responderAwaitingMessage3, .established, .failed:
            preconditionFailure("start() called after the channel started")
        }
    }

    /// Feeds bytes from the connection, split anywhere or several frames at once.
    public mutating func receive(_ bytes: some Collection<UInt8>) -> ChannelOutput {
        var output = ChannelOutput()
        if case .failed(let error) = state {
            output.error = error
            return output
        }
        decoder.append(bytes)
        do throws(ChannelError) {
            while let frame = try decoder.nextFrame(maxLength: frameLimit) {
                try handle(frame, into: &output)
            }
            decoder.releaseIfEmpty()
            if case .established(let transport, _) = state, transport.isInboundFinished, decoder.bufferedByteCount > 0 {
                throw ChannelError(.frameAfterClose)
            }
        } catch {
            state = .failed(error)
            output.error = error
            output.bytesToSend = []
        }
        return output
    }

    /// The connection reached end of stream. Unless the peer closed cleanly first, that is an
    /// error: a cut connection could otherwise pass for a complete one.
    public mutating func receiveEndOfStream() -> ChannelOutput {
        var output = ChannelOutput()
        switch state {
        case .established(let transport, _) where transport.isInboundFinished && decoder.bufferedByteCount == 0:
            break
        case .failed(let error):
            output.error = error
        case .initiatorAwaitingMessage2 where decoder.bufferedByteCount == 0:
            let error = ChannelError(.closedBeforeMessage2)
            state = .failed(error)
            output.error = error
        case .initiatorReady, .initiatorAwaitingMessage2, .responderAwaitingMessage1, .responderAwaitingMessage3, .established:
            let error = ChannelError(.unexpectedEndOfStream(midFrame: decoder.bufferedByteCount > 0))
            state = .failed(error)
            output.error = error
        }
        return output
    }

    /// Encrypts one frame for the peer; the bytes to write.
    public mutating func send(_ plaintext: [UInt8]) throws(ChannelError) -> [UInt8] {
        let limit = configuration.maxFrameLength - SecureTransport.overhead
        guard plaintext.count <= limit else { throw ChannelError(.plaintextTooLarge(length: plaintext.count, limit: limit)) }
        switch state {
        case .established(var transport, let peer):
            let bytes = try transport.seal(plaintext, final: false)
            state = .established(transport, peer)
            return bytes
        case .failed(let error):
            throw error
        case .initiatorReady, .initiatorAwaitingMessage2, .responderAwaitingMessage1, .responderAwaitingMessage3:
            throw ChannelError(.notEstablished)
        }
    }

    /// Closes our direction cleanly (a FINAL frame) and returns the bytes to write; the peer's
    /// direction stays readable until its FINAL arrives. Before the handshake finishes there is
    /// nothing to encrypt: the channel is abandoned and no bytes are returned.
    public mutating func close() -> [UInt8] {
        switch state {
        case .established(var transport, let peer):
            guard !transport.isOutboundFinished, let bytes = try? transport.seal([], final: true) else { return [] }
            state = .established(transport, peer)
            return bytes
        case .failed:
            return []
        case .initiatorReady, .initiatorAwaitingMessage2, .responderAwaitingMessage1, .responderAwaitingMessage3:
            state = .failed(ChannelError(.closedLocally))
            return []
        }
    }

    private var frameLimit: Int {
        switch state {
        case .established: configuration.maxFrameLength
        case .initiatorReady, .initiatorAwaitingMessage2, .responderAwaitingMessage1, .responderAwaitingMessage3, .failed:
            NoiseHandshake.maxMessageLength
        }
    }

    private mutating func handle(_ frame: [UInt8], into output: inout ChannelOutput) throws(ChannelError) {
        switch state {
        case .initiatorReady:
            throw ChannelError(.handshakeFailed(message: 1, reason: "the responder sent data before message 1"))

        case .initiatorAwaitingMessage2(var handshake):
            let payload: [UInt8], message3: [UInt8]
            do {
                payload = try handshake.readMessage(frame)
            } catch {
                throw ChannelError(.handshakeFailed(message: 2, reason: error.explanation))
            }
            do {
                message3 = try handshake.writeMessage(payload: handshakePayload)
            } catch {
                throw ChannelError(.handshakeFailed(message: 3, reason: error.explanation))
            }
            establish(handshake, matchedPSKIndex: nil, remotePayload: payload, sending: LengthPrefixFraming.frame(message3), into: &output)

        case .responderAwaitingMessage1(let candidates):
            var (index, handshake, payload) = try Self.acceptMessage1(frame, candidates: candidates)
            guard payload.isEmpty else {
                throw ChannelError(.handshakeFailed(message: 1, reason: "message 1 carried a payload; notesd/1 sends none"))
            }
            do {
                payload = try handshake.writeMessage(payload: handshakePayload)
            } catch {
                throw ChannelError(.handshakeFailed(message: 2, reason: error.explanation))
            }
            state = .responderAwaitingMessage3(handshake, matchedPSKIndex: index)
            output.bytesToSend += LengthPrefixFraming.frame(payload)

        case .responderAwaitingMessage3(var handshake, let matchedPSKIndex):
            let payload: [UInt8]
            do {
                payload = try handshake.readMessage(frame)
            } catch {
                throw ChannelError(.handshakeFailed(message: 3, reason: error.explanation))
            }
            establish(handshake, matchedPSKIndex: matchedPSKIndex, remotePayload: payload, sending: [], into: &output)

        case .established(var transport, let peer):
            switch try transport.open(frame) {
            case .header:
                break
            case .message(let plaintext):
                output.frames.append(plaintext)
            case .final(let plaintext):
                if !plaintext.isEmpty { output.frames.append(plaintext) }
                output.events.append(.closedCleanly)
            }
            state = .established(transport, peer)

        case .failed(let error):
            throw error
        }
    }

    /// Tries message 1 against each candidate PSK in turn; the first that authenticates wins.
    /// The candidates are values, so failed attempts leave them untouched.
    private static func acceptMessage1(
        _ message: [UInt8], candidates: [NoiseHandshake]
    ) throws(ChannelError) -> (index: Int, handshake: NoiseHandshake, payload: [UInt8]) {
        var firstError: NoiseError?
        for (index, candidate) in candidates.enumerated() {
            var attempt = candidate
            do {
                let payload = try attempt.readMessage(message)
                return (index, attempt, payload)
            } catch {
                firstError = firstError ?? error
            }
        }
        switch firstError {
        case .decryptionFailed, nil: throw ChannelError(.notInHousehold)
        case let error?: throw ChannelError(.handshakeFailed(message: 1, reason: error.explanation))
        }
    }

    /// The handshake is complete: start the transport and announce the peer.
    private mutating func establish(
        _ handshake: NoiseHandshake, matchedPSKIndex: Int?, remotePayload: [UInt8], sending handshakeBytes: [UInt8],
        into output: inout ChannelOutput
    ) {
        guard let result = handshake.result else { preconditionFailure("establish called before the last handshake message") }
        let peer = ChannelPeer(
            staticKey: DevicePublicKey(exactly: result.remoteStaticKey), matchedPSKIndex: matchedPSKIndex,
            handshakeHash: result.handshakeHash, handshakePayload: remotePayload)
        let (transport, headerFrame) = SecureTransport.start(sendingKey: result.sendingKey, receivingKey: result.receivingKey)
        state = .established(transport, peer)
        output.bytesToSend += handshakeBytes + headerFrame
        output.events.append(.established(peer))
    }
}

/// Who is on the other end, as the handshake proved it.
public struct ChannelPeer: Equatable, Sendable {
    /// The peer's static key; the caller checks `deviceID` against the roster.
    public let staticKey: DevicePublicKey
    /// Responder only: the index into `candidatePSKs` the initiator proved it knows (household
    /// key or which invite). `nil` on the initiator, which used its one PSK.
    public let matchedPSKIndex: Int?
    /// The Noise handshake hash, identical on both sides of this connection only.
    public let handshakeHash: [UInt8]
    /// The peer's handshake payload (see `SecureChannel.init`).
    public let handshakePayload: [UInt8]

    public var deviceID: DeviceID { staticKey.deviceID }
}

/// Something the channel reports besides received frames.
public enum ChannelEvent: Equatable, Sendable {
    /// The handshake finished; check the peer against the roster now.
    case established(ChannelPeer)
    /// The peer closed its direction cleanly; no more frames will come.
    case closedCleanly
}

/// What one input produced. `.established` always precedes the frames delivered with it, and
/// `.closedCleanly` follows them. With `error` set the connection must be closed: frames and
/// events reported alongside it came before the failure and are genuine, `bytesToSend` is
/// empty, and the channel refuses everything from then on.
public struct ChannelOutput: Equatable, Sendable {
    public var bytesToSend: [UInt8] = []
    /// Decrypted frames, in order.
    public var frames: [[UInt8]] = []
    public var events: [ChannelEvent] = []
    public var error: ChannelError?

    public init() {}
}

/// Why the channel stopped, in words for the log.
public struct ChannelError: Error, Equatable, Sendable, CustomStringConvertible {
    public enum Reason: Equatable, Sendable {
        /// A length prefix announced more than the cap; refused before buffering.
        case frameTooLarge(length: Int, limit: Int)
        /// Message 1 authenticated under none of the responder's candidate keys.
        case notInHousehold
        /// A handshake message (1, 2 or 3) was malformed or did not authenticate.
        case handshakeFailed(message: Int, reason: String)
        /// The peer's first transport frame was not a valid 24-byte stream header.
        case invalidStreamHeader(length: Int)
        /// A transport frame was tampered with, truncated, reordered or replayed.
        case decryptionFailed
        /// Bytes arrived after the peer's clean close.
        case frameAfterClose
        /// The connection ended without the peer's clean close.
        case unexpectedEndOfStream(midFrame: Bool)
        /// The responder closed without answering message 1: no key of its took ours.
        case closedBeforeMessage2
        /// `send` was given more than a frame can carry.
        case plaintextTooLarge(length: Int, limit: Int)
        /// `send` was called before the handshake finished.
        case notEstablished
        /// `send` was called after `close`.
        case sendAfterClose
        /// `close` was called before the handshake finished.
        case closedLocally
    }

    public let reason: Reason

    public init(_ reason: Reason) { self.reason = reason }

    public var description: String {
        switch reason {
        case .frameTooLarge(let length, let limit):
            "peer announced a frame of \(length) bytes, over the limit of \(limit); closing the connection"
        case .notInHousehold:
            "handshake failed at message 1: the peer does not hold the household key or an open invite's key (another household, or an expired or used invite)"
        case .handshakeFailed(let message, let reason):
            "handshake failed at message \(message): \(reason)"
        case .invalidStreamHeader(let length):
            "the peer's first transport frame (\(length) bytes) is not a valid 24-byte stream header"
        case .decryptionFailed:
            "a transport frame did not decrypt: it was tampered with, truncated, reordered or replayed; closing the connection"
        case .frameAfterClose:
            "the peer sent data after closing its side of the connection"
        case .unexpectedEndOfStream(let midFrame):
            "the connection ended\(midFrame ? " in the middle of a frame" : "") without the peer's clean close; what arrived may be cut short"
        case .closedBeforeMessage2:
            "the peer closed the connection without answering handshake message 1: it does not accept this device's key "
                + "(another household, a used or expired invite, or this device was removed from the household)"
        case .plaintextTooLarge(let length, let limit):
            "cannot send \(length) bytes in one frame; the limit is \(limit)"
        case .notEstablished:
            "cannot send before the handshake has finished"
        case .sendAfterClose:
            "cannot send after close()"
        case .closedLocally:
            "the channel was closed before the handshake finished"
        }
    }
}

extension NoiseError {
    /// Words for `ChannelError.handshakeFailed`.
    var explanation: String {
        switch self {
        case .decryptionFailed: "it did not authenticate (a different key, an impostor in the middle, or tampered bytes)"
        case .messageTooShort: "the message is too short"
        case .messageTooLong: "the message is longer than Noise's 65535-byte limit"
        case .invalidPublicKey: "the peer sent an invalid (low-order) public key"
        case .nonceExhausted: "the handshake ran out of nonces"
        }
    }
}
