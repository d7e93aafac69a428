import Foundation

/// A moment on the wire: whole milliseconds since the Unix epoch (UTC), encoded as a JSON
/// integer. Milliseconds match the store and the HLC, compare as numbers, and need no parser.
public struct Timestamp: RawRepresentable, Hashable, Comparable, Sendable, Codable, CustomStringConvertible {
    /// Milliseconds since 1970-01-01T00:00:00Z.
    public let rawValue: Int64

    public init(rawValue: Int64) { self.rawValue = rawValue }

    public init(millisecondsSince1970: Int64) { rawValue = millisecondsSince1970 }

    public init(_ date: Date) { rawValue = Int64((date.timeIntervalSince1970 * 1000).rounded(.down)) }

    public var date: Date { Date(timeIntervalSince1970: Double(rawValue) / 1000) }

    public var description: String { String(rawValue) }

    public init(from decoder: any Decoder) throws {
        rawValue = try decoder.singleValueContainer().decode(Int64.self)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }

    public static func < (lhs: Timestamp, rhs: Timestamp) -> Bool { lhs.rawValue < rhs.rawValue }
}
