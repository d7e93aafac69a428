import Control
import Testing
@testable import notesd
import TestSupport

@Suite struct DaemonArgumentsTests {
    /// A login shell's environment: HOME, no systemd, no XDG overrides.
    static let shell = ProcessEnvironment(
        variables: ["HOME": "/home/ada", "PATH": "/usr/bin"], userID: 1000, hostName: "desk",
        passwordHome: "/home/ada-from-passwd", currentDirectory: "/work/here")

    static func config(_ arguments: [String], _ environment: ProcessEnvironment = shell) throws -> DaemonConfig {
        switch DaemonArguments.parse(arguments, environment: environment) {
        case .success(.run(let config)): return config
        case .success(let other): throw TestFailure("expected run, got \(other)")
        case .failure(let error): throw TestFailure("unexpected usage error: \(error.message)")
        }
    }

    static func usageError(_ arguments: [String], _ environment: ProcessEnvironment = shell) -> String? {
        guard case .failure(let error) = DaemonArguments.parse(arguments, environment: environment) else { return nil }
        return error.message
    }

    static func with(_ variables: [String: String], passwordHome: String? = "/home/ada-from-passwd", hostName: String = "desk") -> ProcessEnvironment {
        var environment = shell
        environment.variables = variables
        environment.passwordHome = passwordHome
        environment.hostName = hostName
        return environment
    }

    @Test func defaultsInALoginShell() throws {
        let config = try Self.config([])
        #expect(config == DaemonConfig(
            dataDirectory: "/home/ada/.local/share/notesd", listen: HostPort(host: "0.0.0.0", port: 7479),
            socketPath: "/tmp/notesd-1000/control.sock", name: "desk", staticPeers: [], mdnsEnabled: true, logLevel: .info,
            web: WebConfig(listen: HostPort(host: "127.0.0.1", port: 7480), root: "/usr/share/notesd/web")))
    }

    @Test func theWebServerListensOnLoopbackOnly() throws {
        #expect(try Self.config(["--web-listen", "[::1]:0"]).web?.listen == HostPort(host: "::1", port: 0))
        #expect(try Self.config(["--web-listen", "localhost:8000"]).web?.listen == HostPort(host: "127.0.0.1", port: 8000))
        #expect(try Self.config(["--no-web"]).web == nil)
        for address in ["0.0.0.0:7480", "192.168.1.5:7480", "[::]:7480", "nas.local:7480"] {
            let message = try #require(Self.usageError(["--web-listen", address]), "\(address) accepted")
            #expect(message.contains("no TLS"), "\(message)")
        }
        #expect(Self.usageError(["--no-web", "--web-listen", "127.0.0.1:1"])?.contains("contradict") == true)
        #expect(Self.usageError(["--no-web=yes"]) == "--no-web takes no value")
    }

    @Test func theWebRootDefaultsToShareBesideTheBinary() throws {
        var environment = Self.shell
        environment.executablePath = "/opt/notesd/bin/notesd"
        #expect(try Self.config([], environment).web?.root == "/opt/notesd/share/notesd/web")
        #expect(try Self.config(["--web-root", "web"], environment).web?.root == "/work/here/web")
    }

    @Test func restoreBackupTakesTheFileAndTheDataDirectoryOnly() throws {
        #expect(try DaemonArguments.parse(["--restore-backup", "copy.db"], environment: Self.shell).get()
            == .restoreBackup(file: "/work/here/copy.db", dataDirectory: "/home/ada/.local/share/notesd"))
        #expect(try DaemonArguments.parse(["--restore-backup=/b/c.db", "--data-dir", "/d"], environment: Self.shell).get()
            == .restoreBackup(file: "/b/c.db", dataDirectory: "/d"))
        #expect(Self.usageError(["--restore-backup", "c.db", "--listen", "127.0.0.1:1"]) == "--restore-backup takes only --data-dir (and --log-level)")
        #expect(Self.usageError(["--restore-backup"]) == "--restore-backup needs a value")
    }

    @Test func defaultsUnderSystemdUseStateAndRuntimeDirectories() throws {
        let environment = Self.with([
            "HOME": "/home/ada", "XDG_DATA_HOME": "/home/ada/data", "XDG_RUNTIME_DIR": "/run/user/1000",
            "STATE_DIRECTORY": "/var/lib/notesd:/var/lib/other", "RUNTIME_DIRECTORY": "/run/notesd:/run/other",
        ])
        let config = try Self.config([], environment)
        #expect(config.dataDirectory == "/var/lib/notesd")
        #expect(config.socketPath == "/run/notesd/control.sock")
    }

    @Test func defaultsUnderXDG() throws {
        let environment = Self.with(["HOME": "/home/ada", "XDG_DATA_HOME": "/home/ada/data", "XDG_RUNTIME_DIR": "/run/user/1000"])
        let config = try Self.config([], environment)
        #expect(config.dataDirectory == "/home/ada/data/notesd")
        #expect(config.socketPath == "/run/user/1000/notesd/control.sock")
        // The socket path is ControlPaths' rule, so notesctl finds the same file.
        #expect(config.socketPath == ControlPaths.defaultSocketPath(environment: environment.variables, userID: 1000))
    }

    @Test func relativeXDGDataHomeIsIgnoredAsTheSpecSays() throws {
        let config = try Self.config([], Self.with(["HOME": "/home/ada", "XDG_DATA_HOME": "data"]))
        #expect(config.dataDirectory == "/home/ada/.local/share/notesd")
    }

    @Test func notesdSocketVariableWins() throws {
        let config = try Self.config([], Self.with(["HOME": "/h", "NOTESD_SOCKET": "/srv/n.sock", "RUNTIME_DIRECTORY": "/run/notesd"]))
        #expect(config.socketPath == "/srv/n.sock")
    }

    @Test func withoutHomeThePasswordDatabaseDecidesOrTheUserMust() throws {
        #expect(try Self.config([], Self.with([:])).dataDirectory == "/home/ada-from-passwd/.local/share/notesd")
        #expect(try Self.config([], Self.with(["HOME": ""])).dataDirectory == "/home/ada-from-passwd/.local/share/notesd")
        #expect(Self.usageError([], Self.with([:], passwordHome: nil)) == "cannot choose a data directory because $HOME is not set; pass --data-dir DIR")
        #expect(try Self.config(["--data-dir", "/d"], Self.with([:], passwordHome: nil)).dataDirectory == "/d")
    }

    @Test func everyFlag() throws {
        let config = try Self.config([
            "--data-dir", "state/../notes", "--listen", "[::]:0", "--socket=run/c.sock", "--name", "  Ada's laptop ",
            "--peer", "192.168.1.5:7479", "--peer=[fe80::1%eth0]:7000", "--peer", "nas.local:7479", "--peer", "192.168.1.5:7479",
            "--no-mdns", "--log-level", "debug",
        ])
        #expect(config == DaemonConfig(
            dataDirectory: "/work/here/notes", listen: HostPort(host: "::", port: 0), socketPath: "/work/here/run/c.sock",
            name: "Ada's laptop",
            staticPeers: [HostPort(host: "192.168.1.5", port: 7479), HostPort(host: "fe80::1%eth0", port: 7000), HostPort(host: "nas.local", port: 7479)],
            mdnsEnabled: false, logLevel: .debug,
            web: WebConfig(listen: HostPort(host: "127.0.0.1", port: 7480), root: "/usr/share/notesd/web")))
    }

    @Test func aLaterValueOverridesAnEarlierOne() throws {
        let config = try Self.config(["--listen", "127.0.0.1:1", "--listen", "127.0.0.1:2", "--log-level=error", "--log-level", "notice"])
        #expect(config.listen == HostPort(host: "127.0.0.1", port: 2))
        #expect(config.logLevel == .notice)
    }

    @Test func valuesMayLookLikeOptions() throws {
        #expect(try Self.config(["--name", "--weird--"]).name == "--weird--")
    }

    @Test func helpAndVersionWinOverEverythingElse() {
        #expect(DaemonArguments.parse(["--help"], environment: Self.shell) == .success(.help))
        #expect(DaemonArguments.parse(["--bogus", "-h"], environment: Self.shell) == .success(.help))
        #expect(DaemonArguments.parse(["--listen", "nonsense", "--version"], environment: Self.shell) == .success(.version))
        #expect(DaemonArguments.parse(["--version", "--help"], environment: Self.shell) == .success(.help))
        #expect(DaemonArguments.help.contains(DaemonArguments.usage))
        for flag in ["--data-dir", "--listen", "--socket", "--name", "--peer", "--no-mdns", "--log-level", "--version", "--help"] {
            #expect(DaemonArguments.help.contains(flag))
        }
    }

    @Test(arguments: [
        (["--bogus"], "unknown option --bogus"),
        (["-x"], "unknown option -x"),
        (["serve"], "unexpected argument \"serve\""),
        (["--", "x"], "unexpected argument \"x\""),
        (["--data-dir"], "--data-dir needs a value"),
        (["--name="], "--name needs a non-empty value"),
        (["--no-mdns=yes"], "--no-mdns takes no value"),
        (["--log-level", "loud"], "--log-level must be one of debug, info, notice, warning, error, not \"loud\""),
        (["--listen", "7479"], "--listen \"7479\" is not HOST:PORT: it has no :PORT"),
        (["--listen", "host:70000"], "--listen \"host:70000\" is not HOST:PORT: the port must be a number from 0 to 65535"),
        (["--listen", "host:+1"], "--listen \"host:+1\" is not HOST:PORT: the port must be a number from 0 to 65535"),
        (["--listen", ":7479"], "--listen \":7479\" is not HOST:PORT: the host is empty"),
        (["--listen", "::1:7479"], "--listen \"::1:7479\" is not HOST:PORT: write an IPv6 address in brackets, e.g. [::1]:7479"),
        (["--listen", "[::1:7479"], "--listen \"[::1:7479\" is not HOST:PORT: the IPv6 address has no closing ]"),
        (["--listen", "[nope]:7479"], "--listen \"[nope]:7479\" is not HOST:PORT: \"nope\" is not an IPv6 address"),
        (["--listen", "a b:1"], "--listen \"a b:1\" is not HOST:PORT: \"a b\" is not a host name or IPv4 address"),
        (["--peer", "laptop:0"], "--peer \"laptop:0\" is not HOST:PORT: the port must be a number from 1 to 65535"),
        (["--name", "  "], "--name must not be empty"),
        (["--name", "a\u{7}b"], "--name must not contain control characters"),
        (["--name", String(repeating: "é", count: 33)], "--name is 66 bytes long; at most 64 are allowed"),
    ] as [([String], String)])
    func usageErrors(arguments: [String], message: String) {
        #expect(Self.usageError(arguments) == message)
    }

    @Test func aSocketPathMustFitSunPath() {
        let long = "/" + String(repeating: "s", count: 107)
        #expect(Self.usageError(["--socket", long]) == "--socket \(long) is 108 bytes long; a Unix socket path holds at most 107")
        #expect((try? Self.config(["--socket", String(long.dropLast())])) != nil)
    }

    @Test func anEmptyHostNameNeedsAName() throws {
        #expect(Self.usageError([], Self.with(["HOME": "/h"], hostName: "")) == "the host name is empty; pass --name NAME")
        #expect(try Self.config(["--name", "n"], Self.with(["HOME": "/h"], hostName: "")).name == "n")
    }

    @Test func hostAndPortPrintsWhatItParses() throws {
        for text in ["0.0.0.0:7479", "[::]:0", "[fe80::1%eth0]:1", "laptop.local:65535", "my_host-2:80"] {
            let parsed = try HostPort.parse(text, allowsPortZero: true).get()
            #expect(parsed.description == text)
        }
    }

    @Test func logLevelsOrderBySeverity() {
        #expect(LogLevel.allCases.sorted() == [.debug, .info, .notice, .warning, .error])
        #expect(LogLevel.allCases.map(\.syslogPriority) == [7, 6, 5, 4, 3])
    }
}
