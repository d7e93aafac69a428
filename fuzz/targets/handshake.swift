/// libFuzzer target: the handshake fed arbitrary bytes, at each point a peer can speak.
///
/// The first input byte picks the victim: a fresh responder (message 1), a responder that has
/// answered a genuine message 1 (message 3 and beyond), or an initiator that has sent message 1
/// (message 2). The rest is fed in two pieces, then end-of-stream. Besides memory errors the
/// target checks one property: only the genuine handshake messages establish a session. (The
/// fixture is deterministic, so its genuine messages are known; the seeds contain them.)
struct HandshakeFuzzFixture {
    let freshResponder: SecureChannel
    let responderAwaitingMessage3: SecureChannel
    let initiatorAwaitingMessage2: SecureChannel
    /// Per mode, the bytes an input must start with to establish a session.
    let genuineMessages: [[UInt8]]
    let seeds: [(name: String, bytes: [UInt8])]

    static let shared: HandshakeFuzzFixture = {
        FuzzSupport.prepare()
        return HandshakeFuzzFixture()
    }()

    private init() {
        let householdKey = PreSharedKey.generate()
        let invite = InviteCode.generate()
        let alice = DeviceIdentity.generate(), bob = DeviceIdentity.generate()
        var initiator = SecureChannel(role: .initiator(psk: householdKey), identity: alice, handshakePayload: [1])
        var responder = SecureChannel(role: .responder(candidatePSKs: [invite.pskForPairing, householdKey]), identity: bob, handshakePayload: [2])
        freshResponder = responder
        let message1 = initiator.start()
        initiatorAwaitingMessage2 = initiator
        let message2 = responder.receive(message1).bytesToSend
        responderAwaitingMessage3 = responder
        let flight = initiator.receive(message2).bytesToSend
        let data = (try? initiator.send(Array("first frame".utf8))) ?? []
        let message3Length = 4 + flight.prefix(4).reduce(0) { $0 << 8 | Int($1) }
        let message3 = Array(flight.prefix(message3Length))
        genuineMessages = [message1 + message3, message3, message2]
        seeds = [
            ("message1", [0] + message1),
            ("message1-split-prefix", [0] + message1.prefix(3)),
            ("message3-header-data", [1] + flight + data),
            ("message2", [2] + message2),
            ("garbage-length", [0, 0xFF, 0xFF, 0xFF, 0xFF]),
        ]
    }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzHandshake(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let fixture = HandshakeFuzzFixture.shared
    FuzzSupport.writeSeedsIfRequested(fixture.seeds)
    guard let data, size > 0 else { return 0 }
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    let mode = Int(bytes[0] % 3)
    var channel = switch mode {
    case 0: fixture.freshResponder
    case 1: fixture.responderAwaitingMessage3
    default: fixture.initiatorAwaitingMessage2
    }
    let input = bytes.dropFirst()
    let cut = input.startIndex + input.count / 2
    let outputs = [channel.receive(input[..<cut]), channel.receive(input[cut...]), channel.receiveEndOfStream()]
    for output in outputs {
        for event in output.events {
            if case .established = event, !input.starts(with: fixture.genuineMessages[mode]) {
                fatalError("bytes other than the genuine handshake established a session (mode \(mode))")
            }
        }
    }
    return 0
}
