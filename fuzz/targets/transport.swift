/// libFuzzer target: the transport frame decoder and secretstream, fed arbitrary bytes.
///
/// The first input byte picks the victim: an established receiver that has its peer's stream
/// header (transport frames), or one still waiting for that header. The rest is fed in two
/// pieces, then end-of-stream. The bare `LengthPrefixFraming` also gets the rest, and must give back
/// frames that re-encode to a prefix of the input.
struct TransportFuzzFixture {
    let receiverReady: SecureChannel
    let receiverAwaitingHeader: SecureChannel
    let seeds: [(name: String, bytes: [UInt8])]

    static let shared: TransportFuzzFixture = {
        FuzzSupport.prepare()
        return TransportFuzzFixture()
    }()

    private init() {
        let householdKey = PreSharedKey.generate()
        var alice = SecureChannel(role: .initiator(psk: householdKey), identity: .generate())
        var bob = SecureChannel(role: .responder(candidatePSKs: [householdKey]), identity: .generate())
        let message2 = bob.receive(alice.start()).bytesToSend
        let flight = alice.receive(message2).bytesToSend
        // `flight` is message 3 then Alice's stream header: give Bob message 3 only first.
        let message3Length = 4 + flight.prefix(4).reduce(0) { $0 << 8 | Int($1) }
        _ = bob.receive(flight.prefix(message3Length))
        receiverAwaitingHeader = bob
        let header = Array(flight.dropFirst(message3Length))
        _ = bob.receive(header)
        receiverReady = bob
        let first = (try? alice.send(Array("first note".utf8))) ?? []
        let second = (try? alice.send([UInt8](repeating: 0x55, count: 300))) ?? []
        let empty = (try? alice.send([])) ?? []
        let close = alice.close()
        seeds = [
            ("frames", [0] + first + second),
            ("frame-then-close", [0] + first + empty + close),
            ("close-then-data", [0] + close + first),
            ("header-then-frame", [1] + header + first),
            ("oversized-length", [0, 0x7F, 0xFF, 0xFF, 0xFF]),
        ]
    }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzTransport(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let fixture = TransportFuzzFixture.shared
    FuzzSupport.writeSeedsIfRequested(fixture.seeds)
    guard let data, size > 0 else { return 0 }
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    let input = bytes.dropFirst()

    var channel = bytes[0] % 2 == 0 ? fixture.receiverReady : fixture.receiverAwaitingHeader
    let cut = input.startIndex + input.count / 2
    _ = channel.receive(input[..<cut])
    _ = channel.receive(input[cut...])
    _ = channel.receiveEndOfStream()

    var decoder = LengthPrefixFraming()
    decoder.append(input)
    var reencoded: [UInt8] = []
    while let frame = try? decoder.nextFrame(maxLength: 4096) {
        reencoded += LengthPrefixFraming.frame(frame)
    }
    guard reencoded.elementsEqual(input.prefix(reencoded.count)) else { fatalError("frame decoder changed the bytes it framed") }
    guard reencoded.count + decoder.bufferedByteCount == input.count else { fatalError("frame decoder lost or invented bytes") }
    return 0
}
