import Glibc

/// One open file descriptor with one owner: closed exactly once, when the owner lets go of it.
/// Used instead of a raw `Int32` with a `-1` sentinel, which can be closed twice (the second
/// time closing whatever the number was reused for) or never.
public final class OwnedDescriptor: Sendable {
    public let raw: Int32

    /// Takes ownership of `raw`, an open descriptor.
    public init(_ raw: Int32) { self.raw = raw }

    /// Takes the result of a call that returns a descriptor or -1 (`errno` untouched).
    public static func adopting(_ raw: Int32) -> OwnedDescriptor? { raw >= 0 ? OwnedDescriptor(raw) : nil }

    deinit { close(raw) }
}
