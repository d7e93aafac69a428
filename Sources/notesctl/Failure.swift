import Control

/// `notesctl`'s exit statuses.
enum ExitStatus: Int32 {
    case ok = 0
    /// The daemon refused or the work failed; the message is on stderr.
    case failure = 1
    /// No daemon answers at the socket path.
    case unreachable = 2
    /// The command line is wrong (`EX_USAGE`).
    case usage = 64
}

/// A run that ends with a message on stderr and a non-zero status.
struct CLIFailure: Error, CustomStringConvertible {
    var message: String
    var status: ExitStatus
    /// For `.usage`: the command whose usage line follows the message.
    var usageCommand: String?

    init(_ message: String, status: ExitStatus = .failure, usageCommand: String? = nil) {
        self.message = message
        self.status = status
        self.usageCommand = usageCommand
    }

    static func usage(_ message: String, command: String) -> CLIFailure {
        CLIFailure(message, status: .usage, usageCommand: command)
    }

    var description: String { message }

    /// How to start the daemon, said whenever it cannot be reached.
    static let startHint = "Start it with `systemctl --user start notesd`, or run `notesd` (`make run` in the source tree)."

    /// The one line for a failed control call.
    init(_ error: ControlClientError) {
        switch error {
        case .daemonUnreachable(_, let reason) where reason.hasPrefix("permission denied"):
            // Starting a daemon will not help: this socket is another user's.
            self.init("\(error). Use your own notesd's socket (--socket or $NOTESD_SOCKET).", status: .unreachable)
        case .daemonUnreachable:
            self.init("\(error). \(Self.startHint)", status: .unreachable)
        case .server(let rpc):
            self.init(Self.message(for: rpc))
        case .connectionClosed, .protocolViolation, .timedOut, .io:
            self.init(error.description)
        }
    }

    /// The server's message, with the details its `data` adds for people: the candidates of
    /// an ambiguous reference, the peers still behind at a sync timeout.
    static func message(for error: RPCError) -> String {
        if error.code == .ambiguousReference, let data = error.data(as: AmbiguousData.self) {
            let candidates = data.candidates.prefix(5).map { "\(String($0.id.prefix(12))) (\(Render.truncate($0.label, to: 30)))" }
            let more = data.candidates.count > 5 ? ", …" : ""
            return "\(error.message) Candidates: \(candidates.joined(separator: ", "))\(more)"
        }
        if error.code == .timeout, let data = error.data(as: SyncResult.self) {
            let behind = data.peers.filter { $0.connected && $0.entriesBehind > 0 }
                .map { "\($0.name ?? $0.short ?? "?") (\($0.entriesBehind) behind)" }
            if !behind.isEmpty { return "\(error.message) Still behind: \(behind.joined(separator: ", "))." }
        }
        return error.message
    }
}
