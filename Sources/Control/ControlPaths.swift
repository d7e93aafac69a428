import Foundation

/// Where the control socket lives by default, the same rule for notesd and notesctl
/// (docs/control-protocol.md, "Socket path"), first match wins:
///
/// 1. `$NOTESD_SOCKET`, when set and not empty (tests, several daemons, system units);
/// 2. `$RUNTIME_DIRECTORY/control.sock` — systemd sets it for a unit with
///    `RuntimeDirectory=`; the first entry when it lists several, separated by `:`;
/// 3. `$XDG_RUNTIME_DIR/notesd/control.sock` — the user session's runtime directory. The
///    user unit uses `RuntimeDirectory=notesd`, so 2 and 3 name the same file and a shell's
///    notesctl finds the daemon systemd started;
/// 4. `/tmp/notesd-$UID/control.sock`, when no runtime directory exists.
///
/// `--socket PATH` on either program overrides all of these.
public enum ControlPaths {
    public static let socketFileName = "control.sock"
    public static let environmentVariable = "NOTESD_SOCKET"

    /// The default socket path for this environment and user.
    public static func defaultSocketPath(
        environment: [String: String] = ProcessInfo.processInfo.environment,
        userID: UInt32 = getuid()
    ) -> String {
        if let path = environment[environmentVariable], !path.isEmpty { return path }
        if let directories = environment["RUNTIME_DIRECTORY"],
           let first = directories.split(separator: ":").first, !first.isEmpty {
            return join(String(first), socketFileName)
        }
        if let runtime = environment["XDG_RUNTIME_DIR"], runtime.hasPrefix("/") {
            return join(join(runtime, "notesd"), socketFileName)
        }
        return join("/tmp/notesd-\(userID)", socketFileName)
    }

    private static func join(_ directory: String, _ name: String) -> String {
        directory.hasSuffix("/") ? directory + name : directory + "/" + name
    }
}
