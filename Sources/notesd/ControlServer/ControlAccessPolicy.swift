#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Who may use the control socket (docs/security.md, protocol spec "Transport"): the daemon's own
/// user and root; and, when the administrator widened a socket-activated socket to a group
/// (`SocketGroup=` with `SocketMode=0660`), the members of that group. Checked with the
/// credentials the kernel recorded at `connect`, so file modes are a second fence, not the
/// only one.
struct ControlAccessPolicy: Hashable, Sendable {
    var ownerUserID: UInt32
    /// A group whose members are also served; `nil` for owner and root only.
    var groupID: UInt32?

    /// The daemon's effective user, no group.
    static func owner() -> ControlAccessPolicy { ControlAccessPolicy(ownerUserID: geteuid(), groupID: nil) }

    /// `supplementaryGroups` is only consulted when a group is allowed.
    func allows(_ peer: PeerCredentials, supplementaryGroups: () -> [UInt32]) -> Bool {
        if peer.userID == ownerUserID || peer.userID == 0 { return true }
        guard let groupID else { return false }
        return peer.groupID == groupID || supplementaryGroups().contains(groupID)
    }
}

/// Reads a connected Unix socket's peer identity.
enum PeerIdentity {
    /// `struct ucred` from <sys/socket.h>, which Swift does not import (it needs `_GNU_SOURCE`):
    /// the same three 32-bit fields in the same order.
    private struct KernelCredentials {
        var pid: Int32 = 0
        var uid: UInt32 = 0
        var gid: UInt32 = 0
    }

    /// `SO_PEERCRED`; `nil` with `errno` set when the kernel does not say.
    static func credentials(of descriptor: Int32) -> PeerCredentials? {
        var credentials = KernelCredentials()
        var length = socklen_t(MemoryLayout<KernelCredentials>.size)
        guard getsockopt(descriptor, SOL_SOCKET, SO_PEERCRED, &credentials, &length) == 0,
              length == socklen_t(MemoryLayout<KernelCredentials>.size) else { return nil }
        return PeerCredentials(processID: credentials.pid, userID: credentials.uid, groupID: credentials.gid)
    }

    /// `SO_PEERGROUPS` (Linux 4.13): the peer's supplementary groups at `connect` time;
    /// `[]` when the kernel does not say.
    static func supplementaryGroups(of descriptor: Int32) -> [UInt32] {
        var groups = [UInt32](repeating: 0, count: 64)
        for _ in 0..<2 {
            var length = socklen_t(groups.count * MemoryLayout<UInt32>.size)
            if getsockopt(descriptor, SOL_SOCKET, SO_PEERGROUPS, &groups, &length) == 0 {
                return Array(groups.prefix(Int(length) / MemoryLayout<UInt32>.size))
            }
            // ERANGE: `length` now says how much room the list needs.
            guard errno == ERANGE else { return [] }
            groups = [UInt32](repeating: 0, count: Int(length) / MemoryLayout<UInt32>.size)
        }
        return []
    }
}
