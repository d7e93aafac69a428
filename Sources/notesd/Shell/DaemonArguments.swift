import Control
import Foundation

/// What `notesd`'s command line asks for.
enum DaemonCommand: Hashable, Sendable {
    case run(DaemonConfig)
    /// `--version`: print `notesd VERSION` and exit 0.
    case version
    /// `--help` or `-h`: print `DaemonArguments.help` and exit 0.
    case help
    /// `--restore-backup FILE [--data-dir DIR]`: install a backup as the library, daemon stopped.
    case restoreBackup(file: String, dataDirectory: String)
}

/// A command line `notesd` cannot use; `main` prints the message and the usage, exits 64.
struct DaemonUsageError: Error, Hashable, Sendable, CustomStringConvertible {
    var message: String

    var description: String { message }
}

/// Parses `notesd`'s flags by hand (STYLE "CLI": `popFirst()` over an `ArraySlice`), the
/// defaults following systemd first, then XDG (docs/systemd.md). Pure: the same arguments and
/// `ProcessEnvironment` always give the same command or the same error.
enum DaemonArguments {
    static let usage = """
        usage: notesd [--data-dir DIR] [--listen HOST:PORT] [--socket PATH] [--name NAME] [--peer HOST:PORT]... [--no-mdns] [--web-listen HOST:PORT | --no-web] [--web-root DIR] [--log-level LEVEL]
               notesd --restore-backup FILE [--data-dir DIR]
        """

    static let help = """
        notesd \(NotesVersion.string): peer-to-peer notes sync daemon; drive it with notesctl.

        \(usage)

          --data-dir DIR       database and device key; default $STATE_DIRECTORY,
                               else $XDG_DATA_HOME/notesd, else ~/.local/share/notesd
          --listen HOST:PORT   sync listener (default 0.0.0.0:\(DaemonConfig.defaultPort); IPv6 as [::]:\(DaemonConfig.defaultPort); port 0 picks one)
          --socket PATH        control socket; default $NOTESD_SOCKET, else
                               $RUNTIME_DIRECTORY/control.sock, else $XDG_RUNTIME_DIR/notesd/control.sock,
                               else /tmp/notesd-$UID/control.sock
          --name NAME          this device's name as others show it (default: the host name)
          --peer HOST:PORT     a peer to dial without discovery; repeatable
          --no-mdns            do not publish or browse _notesd._tcp with Avahi
          --web-listen HOST:PORT  the web app and API, loopback only (default 127.0.0.1:\(WebConfig.defaultPort);
                               [::1]:PORT for IPv6; a port in use falls back to a free one)
          --no-web             do not serve the web app and API
          --web-root DIR       the web app's files (default: share/notesd/web beside the binary's bin/)
          --log-level LEVEL    debug, info (default), notice, warning or error
          --restore-backup FILE  with notesd stopped: replace the library in the data
                               directory by the backup FILE (from `notesctl backup`), under a
                               new replica id; the library it replaces is kept, renamed
          --version            print the version and exit
          --help, -h           print this help and exit
        """

    static func parse(_ arguments: [String], environment: ProcessEnvironment) -> Result<DaemonCommand, DaemonUsageError> {
        Result { () throws(DaemonUsageError) -> DaemonCommand in try parseOrThrow(arguments, environment: environment) }
    }

    /// The option values as given, before defaults.
    private struct Options {
        var dataDirectory: String?
        var listen: String?
        var socket: String?
        var name: String?
        var peers: [String] = []
        var noMDNS = false
        var logLevel: String?
        var restoreBackup: String?
        var webListen: String?
        var noWeb = false
        var webRoot: String?
    }

    private static func parseOrThrow(_ arguments: [String], environment: ProcessEnvironment) throws(DaemonUsageError) -> DaemonCommand {
        // Like notesctl: `--help` and `--version` win over anything else on the line.
        let flags = arguments.prefix { $0 != "--" }
        if flags.contains("--help") || flags.contains("-h") { return .help }
        if flags.contains("--version") { return .version }

        var options = Options()
        var remaining = arguments[...]
        while let argument = remaining.popFirst() {
            if argument == "--" {
                if let extra = remaining.first { throw DaemonUsageError(message: "unexpected argument \"\(extra)\"") }
                break
            }
            guard argument.hasPrefix("-"), argument != "-" else {
                throw DaemonUsageError(message: "unexpected argument \"\(argument)\"")
            }
            let name: String, inline: String?
            if argument.hasPrefix("--"), let equals = argument.firstIndex(of: "=") {
                name = String(argument[..<equals])
                inline = String(argument[argument.index(after: equals)...])
            } else {
                name = argument
                inline = nil
            }
            /// The option's value: `--name=value`, or the next argument whatever it looks like.
            func value() throws(DaemonUsageError) -> String {
                guard let value = inline ?? remaining.popFirst() else { throw DaemonUsageError(message: "\(name) needs a value") }
                guard !value.isEmpty else { throw DaemonUsageError(message: "\(name) needs a non-empty value") }
                return value
            }
            switch name {
            case "--data-dir": options.dataDirectory = try value()
            case "--listen": options.listen = try value()
            case "--socket": options.socket = try value()
            case "--name": options.name = try value()
            case "--peer": options.peers.append(try value())
            case "--log-level": options.logLevel = try value()
            case "--restore-backup": options.restoreBackup = try value()

            case "--web-listen": options.webListen = try value()
            case "--web-root": options.webRoot = try value()
            case "--no-web":
                guard inline == nil else { throw DaemonUsageError(message: "--no-web takes no value") }
                options.noWeb = true
            case "--no-mdns":
                guard inline == nil else { throw DaemonUsageError(message: "--no-mdns takes no value") }
                options.noMDNS = true
            default:
                throw DaemonUsageError(message: "unknown option \(name)")
            }
        }
        if let file = options.restoreBackup {
            guard options.listen == nil, options.socket == nil, options.name == nil, options.peers.isEmpty, !options.noMDNS,
                  options.webListen == nil, !options.noWeb, options.webRoot == nil else {
                throw DaemonUsageError(message: "--restore-backup takes only --data-dir (and --log-level)")
            }
            guard let directory = options.dataDirectory.map({ absolute($0, in: environment) }) ?? defaultDataDirectory(environment) else {
                throw DaemonUsageError(message: "cannot choose a data directory because $HOME is not set; pass --data-dir DIR")
            }
            return .restoreBackup(file: absolute(file, in: environment), dataDirectory: directory)
        }
        return .run(try config(from: options, environment: environment))
    }

    private static func config(from options: Options, environment: ProcessEnvironment) throws(DaemonUsageError) -> DaemonConfig {
        let dataDirectory: String
        if let given = options.dataDirectory {
            dataDirectory = absolute(given, in: environment)
        } else if let found = defaultDataDirectory(environment) {
            dataDirectory = found
        } else {
            throw DaemonUsageError(message: "cannot choose a data directory because $HOME is not set; pass --data-dir DIR")
        }

        let socketPath: String
        if let given = options.socket {
            socketPath = absolute(given, in: environment)
            guard socketPath.utf8.count <= UnixSocketAddress.maximumPathLength else {
                throw DaemonUsageError(message: "--socket \(socketPath) is \(socketPath.utf8.count) bytes long; a Unix socket path holds at most \(UnixSocketAddress.maximumPathLength)")
            }
        } else {
            socketPath = absolute(ControlPaths.defaultSocketPath(environment: environment.variables, userID: environment.userID), in: environment)
        }

        var listen = HostPort(host: "0.0.0.0", port: DaemonConfig.defaultPort)
        if let given = options.listen {
            switch HostPort.parse(given, allowsPortZero: true) {
            case .success(let address): listen = address
            case .failure(let error): throw DaemonUsageError(message: "--listen \(error)")
            }
        }

        var peers: [HostPort] = []
        for text in options.peers {
            switch HostPort.parse(text, allowsPortZero: false) {
            case .success(let address): if !peers.contains(address) { peers.append(address) }
            case .failure(let error): throw DaemonUsageError(message: "--peer \(error)")
            }
        }

        let name: String
        if let given = options.name {
            name = try checkedName(given)
        } else {
            guard !environment.hostName.isEmpty else { throw DaemonUsageError(message: "the host name is empty; pass --name NAME") }
            name = try checkedName(environment.hostName)
        }

        var logLevel = LogLevel.info
        if let given = options.logLevel {
            guard let level = LogLevel(rawValue: given) else {
                throw DaemonUsageError(message: "--log-level must be one of \(LogLevel.allCases.map(\.rawValue).joined(separator: ", ")), not \"\(given)\"")
            }
            logLevel = level
        }

        return DaemonConfig(
            dataDirectory: dataDirectory, listen: listen, socketPath: socketPath, name: name,
            staticPeers: peers, mdnsEnabled: !options.noMDNS, logLevel: logLevel,
            web: try webConfig(from: options, environment: environment))
    }

    /// The web server's settings; `nil` with `--no-web`. Only loopback: there is no TLS yet,
    /// and a session secret must never cross a network in clear text.
    private static func webConfig(from options: Options, environment: ProcessEnvironment) throws(DaemonUsageError) -> WebConfig? {
        if options.noWeb {
            guard options.webListen == nil else { throw DaemonUsageError(message: "--no-web and --web-listen contradict each other; pass one") }
            return nil
        }
        var listen = HostPort(host: "127.0.0.1", port: WebConfig.defaultPort)
        if let given = options.webListen {
            switch HostPort.parse(given, allowsPortZero: true) {
            case .success(let address): listen = address
            case .failure(let error): throw DaemonUsageError(message: "--web-listen \(error)")
            }
            if listen.host == "localhost" { listen.host = "127.0.0.1" }
            guard listen.host == "127.0.0.1" || listen.host == "::1" else {
                throw DaemonUsageError(message: "--web-listen \(given): the web server listens only on 127.0.0.1 or [::1], because it has no TLS yet and a session would cross the network in clear text; reach it from another machine through an SSH tunnel (ssh -L)")
            }
        }
        let root: String
        if let given = options.webRoot {
            root = absolute(given, in: environment)
        } else if let binary = environment.executablePath, binary.hasPrefix("/") {
            root = URL(fileURLWithPath: binary).deletingLastPathComponent().deletingLastPathComponent()
                .appendingPathComponent("share/notesd/web").standardizedFileURL.path
        } else {
            root = "/usr/share/notesd/web"
        }
        return WebConfig(listen: listen, root: root)
    }

    /// systemd's `StateDirectory=` (first entry), else `$XDG_DATA_HOME/notesd` (absolute
    /// only, as the XDG Base Directory spec requires), else `~/.local/share/notesd`; `nil`
    /// when there is no home directory either.
    static func defaultDataDirectory(_ environment: ProcessEnvironment) -> String? {
        let variables = environment.variables
        if let state = variables["STATE_DIRECTORY"], let first = state.split(separator: ":").first {
            return absolute(String(first), in: environment)
        }
        if let data = variables["XDG_DATA_HOME"], data.hasPrefix("/") {
            return join(data, "notesd")
        }
        guard let home = variables["HOME"].flatMap({ $0.isEmpty ? nil : $0 }) ?? environment.passwordHome, home.hasPrefix("/") else {
            return nil
        }
        return join(home, ".local/share/notesd")
    }

    /// Trimmed; non-empty, without control characters, at most `DaemonConfig.maximumNameLength` bytes.
    private static func checkedName(_ given: String) throws(DaemonUsageError) -> String {
        let name = given.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !name.isEmpty else { throw DaemonUsageError(message: "--name must not be empty") }
        guard !name.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else {
            throw DaemonUsageError(message: "--name must not contain control characters")
        }
        guard name.utf8.count <= DaemonConfig.maximumNameLength else {
            throw DaemonUsageError(message: "--name is \(name.utf8.count) bytes long; at most \(DaemonConfig.maximumNameLength) are allowed")
        }
        return name
    }

    /// `path` made absolute against the current directory, `.` and `..` removed (no
    /// symbolic links resolved: that would read the file system).
    static func absolute(_ path: String, in environment: ProcessEnvironment) -> String {
        let base = URL(fileURLWithPath: environment.currentDirectory, isDirectory: true)
        return URL(fileURLWithPath: path, relativeTo: path.hasPrefix("/") ? nil : base).standardizedFileURL.path
    }

    private static func join(_ directory: String, _ name: String) -> String {
        directory.hasSuffix("/") ? directory + name : directory + "/" + name
    }
}
