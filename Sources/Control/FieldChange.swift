/// One field of an update request where "leave it alone" and "clear it" are different wishes.
///
/// On the wire: the key **absent** is `.unchanged`, the key present with **`null`** is
/// `.clear`, and a value is `.set`. Used for `notes.update`'s `folder` (clear = Uncategorized)
/// and `color` (clear = no colour).
public enum FieldChange<Value: Codable & Hashable & Sendable>: Hashable, Sendable {
    case unchanged
    case clear
    case set(Value)

    /// `.set(value)` for a value, `.clear` for `nil`.
    public init(_ value: Value?) {
        self = value.map(FieldChange.set) ?? .clear
    }

    /// The value the field ends up with, given its current value.
    public func applied(to current: Value?) -> Value? {
        switch self {
        case .unchanged: current
        case .clear: nil
        case .set(let value): value
        }
    }
}

extension KeyedDecodingContainer {
    /// Reads a `FieldChange`: absent key → `.unchanged`, `null` → `.clear`, value → `.set`.
    public func decodeChange<Value>(_ type: Value.Type, forKey key: Key) throws -> FieldChange<Value> {
        guard contains(key) else { return .unchanged }
        if try decodeNil(forKey: key) { return .clear }
        return .set(try decode(Value.self, forKey: key))
    }
}

extension KeyedEncodingContainer {
    /// Writes a `FieldChange`: `.unchanged` writes nothing, `.clear` writes `null`.
    public mutating func encodeChange<Value>(_ change: FieldChange<Value>, forKey key: Key) throws {
        switch change {
        case .unchanged: break
        case .clear: try encodeNil(forKey: key)
        case .set(let value): try encode(value, forKey: key)
        }
    }

    /// Writes an optional result field as `null` when empty, so every documented key is
    /// always present in results (scripts see stable keys).
    public mutating func encodeNullable<Value: Encodable>(_ value: Value?, forKey key: Key) throws {
        if let value { try encode(value, forKey: key) } else { try encodeNil(forKey: key) }
    }
}
