/// What a device says about itself in its Noise handshake payload (message 2 from the
/// responder, message 3 from the initiator; docs/protocol.md "Versions and features"): its
/// notesd version, the sync protocol versions it speaks and the features it offers.
///
/// Release 0.1 sends an empty payload there and never reads the peer's (its `SecureChannel`
/// hands the payload over and nothing looks at it), so a newer device can say all this to it
/// unnoticed. An empty payload therefore means "notesd 0.1, protocol 1, no features".
///
/// The encoding is a list of fields, each `tag: u8, length: u16 big-endian, value`. A tag this
/// release does not know is skipped, and so is a feature name: later releases add fields and
/// features without breaking this one.
public struct HandshakeInfo: Hashable, Sendable {
    /// The software version, e.g. "0.2.0"; nil when the peer sent none.
    public var software: String?
    /// Sync protocol versions spoken (the `hello` version), ascending.
    public var protocols: [UInt16]
    /// Feature names offered, known here or not.
    public var features: Set<String>

    public init(software: String?, protocols: [UInt16], features: Set<String>) {
        self.software = software
        self.protocols = protocols.sorted()
        self.features = features
    }

    /// What a device that advertised nothing (release 0.1) is taken to be.
    public static let release01 = HandshakeInfo(software: nil, protocols: [1], features: [])

    enum Tag: UInt8 {
        case software = 1, protocols = 2, features = 3
    }

    public enum Limits {
        /// The whole payload (Noise allows 65535 bytes per message, keys included).
        public static let payloadBytes = 4_096
        public static let softwareBytes = 64
        public static let protocols = 32
        public static let featureNameBytes = 64
        public static let features = 64
    }

    public enum DecodeError: Error, Equatable, Sendable, CustomStringConvertible {
        /// A field's header or value runs past the end of the payload.
        case truncated(tag: UInt8)
        /// A field this release knows appears twice.
        case repeated(tag: UInt8)
        /// A known field's value does not have its layout (odd length, bad UTF-8, over a cap).
        case malformed(tag: UInt8, reason: String)
        case tooLarge(bytes: Int)

        public var description: String {
            switch self {
            case .truncated(let tag): "handshake information field \(tag) is cut short"
            case .repeated(let tag): "handshake information field \(tag) appears twice"
            case .malformed(let tag, let reason): "handshake information field \(tag) is malformed: \(reason)"
            case .tooLarge(let bytes): "handshake information of \(bytes) bytes is over the \(Limits.payloadBytes)-byte limit"
            }
        }
    }

    /// The payload bytes. Fields are written in tag order, feature names sorted, so the same
    /// information always gives the same bytes.
    public var encoded: [UInt8] {
        var bytes: [UInt8] = []
        func field(_ tag: Tag, _ value: [UInt8]) {
            bytes.append(tag.rawValue)
            bytes.append(UInt8(value.count >> 8))
            bytes.append(UInt8(value.count & 0xFF))
            bytes += value
        }
        if let software { field(.software, Array(software.utf8.prefix(Limits.softwareBytes))) }
        field(.protocols, protocols.flatMap { [UInt8($0 >> 8), UInt8($0 & 0xFF)] })
        field(.features, features.sorted().flatMap { name -> [UInt8] in
            let utf8 = Array(name.utf8.prefix(Limits.featureNameBytes))
            return [UInt8(utf8.count)] + utf8
        })
        return bytes
    }

    /// Reads a peer's payload; an empty one is `release01`.
    public static func decode(_ payload: [UInt8]) throws(DecodeError) -> HandshakeInfo {
        guard !payload.isEmpty else { return .release01 }
        guard payload.count <= Limits.payloadBytes else { throw .tooLarge(bytes: payload.count) }
        var software: String?
        var protocols: [UInt16]?
        var features: Set<String>?
        var seen = Set<UInt8>()
        var offset = 0
        while offset < payload.count {
            let tag = payload[offset]
            guard offset + 3 <= payload.count else { throw .truncated(tag: tag) }
            let length = Int(payload[offset + 1]) << 8 | Int(payload[offset + 2])
            let start = offset + 3
            guard start + length <= payload.count else { throw .truncated(tag: tag) }
            let value = payload[start..<(start + length)]
            offset = start + length
            guard let known = Tag(rawValue: tag) else { continue }
            guard seen.insert(tag).inserted else { throw .repeated(tag: tag) }
            switch known {
            case .software:
                guard value.count <= Limits.softwareBytes, let text = String(validating: value, as: UTF8.self) else {
                    throw .malformed(tag: tag, reason: "not UTF-8 text of at most \(Limits.softwareBytes) bytes")
                }
                software = text
            case .protocols:
                guard value.count % 2 == 0, value.count / 2 <= Limits.protocols else {
                    throw .malformed(tag: tag, reason: "not a list of at most \(Limits.protocols) 16-bit versions")
                }
                protocols = stride(from: value.startIndex, to: value.endIndex, by: 2).map { UInt16(value[$0]) << 8 | UInt16(value[$0 + 1]) }
            case .features:
                var names = Set<String>()
                var index = value.startIndex
                while index < value.endIndex {
                    let count = Int(value[index])
                    let nameStart = index + 1
                    guard nameStart + count <= value.endIndex, names.count < Limits.features,
                          let name = String(validating: value[nameStart..<(nameStart + count)], as: UTF8.self) else {
                        throw .malformed(tag: tag, reason: "not a list of at most \(Limits.features) length-prefixed names")
                    }
                    names.insert(name)
                    index = nameStart + count
                }
                features = names
            }
        }
        // Protocol 1 is the only one a device could speak before this field existed.
        return HandshakeInfo(software: software, protocols: protocols ?? [1], features: features ?? [])
    }
}

/// A feature two devices may use on a connection once both advertise it. Names are kebab-case
/// ASCII and never reused for something else.
public struct Feature: Hashable, Sendable, RawRepresentable, CustomStringConvertible {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public var description: String { rawValue }
}

/// What one connection runs on, from both devices' `HandshakeInfo`.
public struct PeerAgreement: Hashable, Sendable {
    /// The peer's software version as it gave it; nil when it advertised nothing (0.1).
    public var peerSoftware: String?
    /// The sync protocol version spoken on this connection: the highest both speak.
    public var protocolVersion: UInt16
    /// Features offered by both and known here; only these may be used with the peer.
    public var features: Set<Feature>

    /// What is agreed with a device of release 0.1 (or any that advertised nothing).
    public static let release01 = PeerAgreement(peerSoftware: nil, protocolVersion: 1, features: [])

    public init(peerSoftware: String?, protocolVersion: UInt16, features: Set<Feature>) {
        self.peerSoftware = peerSoftware
        self.protocolVersion = protocolVersion
        self.features = features
    }

    public func uses(_ feature: Feature) -> Bool { features.contains(feature) }

    /// The peer's notesd version for people: "0.1 or earlier" when it advertised nothing.
    public var peerVersionText: String { peerSoftware ?? Self.unadvertisedVersion }

    public static let unadvertisedVersion = "0.1 or earlier"

    public enum Failure: Error, Equatable, Sendable, CustomStringConvertible {
        /// No protocol version in common: the peer is too new (or too old) for this device.
        case noCommonProtocol(local: [UInt16], remote: [UInt16], remoteSoftware: String?)

        public var description: String {
            switch self {
            case .noCommonProtocol(let local, let remote, let software):
                let list = { (versions: [UInt16]) in versions.map(String.init).joined(separator: ", ") }
                return "the peer\(software.map { " (notesd \($0))" } ?? "") speaks sync protocol \(list(remote)) and this device \(list(local)); update notesd on the older device"
            }
        }
    }

    /// Agrees on a protocol and features. `known` are the features this release implements.
    public static func negotiate(local: HandshakeInfo, remote: HandshakeInfo, known: Set<Feature>) throws(Failure) -> PeerAgreement {
        guard let version = Set(local.protocols).intersection(remote.protocols).max() else {
            throw .noCommonProtocol(local: local.protocols, remote: remote.protocols, remoteSoftware: remote.software)
        }
        let shared = local.features.intersection(remote.features).map(Feature.init(rawValue:))
        return PeerAgreement(peerSoftware: remote.software, protocolVersion: version, features: Set(shared).intersection(known))
    }
}
