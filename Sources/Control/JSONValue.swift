/// Any JSON value, for the parts of the protocol whose shape is open: error `data` and the
/// raw envelope fields checked before a request is decoded into its typed parameters.
public enum JSONValue: Hashable, Sendable, Codable {
    case null
    case bool(Bool)
    /// Integers keep full 64-bit precision; only numbers with a fraction or exponent that
    /// do not fit `Int64` become `.double`.
    case int(Int64)
    case double(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let value = try? container.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? container.decode(Int64.self) {
            self = .int(value)
        } else if let value = try? container.decode(Double.self) {
            self = .double(value)
        } else if let value = try? container.decode(String.self) {
            self = .string(value)
        } else if let value = try? container.decode([JSONValue].self) {
            self = .array(value)
        } else {
            self = .object(try container.decode([String: JSONValue].self))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .null: try container.encodeNil()
        case .bool(let value): try container.encode(value)
        case .int(let value): try container.encode(value)
        case .double(let value): try container.encode(value)
        case .string(let value): try container.encode(value)
        case .array(let value): try container.encode(value)
        case .object(let value): try container.encode(value)
        }
    }

    /// The value as an object's members, or `nil` when it is not an object.
    public var objectValue: [String: JSONValue]? {
        if case .object(let members) = self { return members }
        return nil
    }

    /// The value re-read as a `Decodable` type (e.g. the typed `data` of an error).
    public func decode<T: Decodable>(as type: T.Type) throws -> T {
        try ControlJSON.decoder().decode(T.self, from: ControlJSON.encoder().encode(self))
    }

    /// Any `Encodable` value as a `JSONValue` (e.g. to attach typed `data` to an error).
    public init(encoding value: some Encodable) throws {
        self = try ControlJSON.decoder().decode(JSONValue.self, from: ControlJSON.encoder().encode(value))
    }
}

import Foundation

/// The one JSON configuration used on the control socket, by both sides and by `--json`.
public enum ControlJSON {
    /// Keys sorted (stable, diff-friendly output) and `/` unescaped; never pretty-printed,
    /// so one value is always exactly one line.
    public static func encoder() -> JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }

    public static func decoder() -> JSONDecoder { JSONDecoder() }
}
