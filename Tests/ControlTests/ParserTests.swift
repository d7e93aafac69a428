import Control
import Testing
@testable import notesctl

@Suite struct ParserTests {
    private func parse(_ line: String) -> Result<Invocation, UsageError> {
        CommandParser.parse(line.split(separator: " ").map(String.init))
    }

    private func command(_ line: String, sourceLocation: SourceLocation = #_sourceLocation) -> Command? {
        switch parse(line) {
        case .success(let invocation): return invocation.command
        case .failure(let error):
            Issue.record("\(line): \(error.message)", sourceLocation: sourceLocation)
            return nil
        }
    }

    private func usageError(_ arguments: [String]) -> UsageError? {
        if case .failure(let error) = CommandParser.parse(arguments) { return error }
        return nil
    }

    private func usageError(_ line: String) -> UsageError? { usageError(line.split(separator: " ").map(String.init)) }

    @Test func everyCommandParses() {
        #expect(command("status") == .status)
        #expect(command("devices") == .devices)
        #expect(command("devices remove ABCD") == .removeDevice("ABCD"))
        #expect(command("invite") == .invite)
        #expect(command("join CODE-1") == .join(code: "CODE-1", address: nil))
        #expect(command("join CODE-1 --address 10.0.0.2:7654") == .join(code: "CODE-1", address: "10.0.0.2:7654"))
        #expect(command("join --address=[::1]:7654 CODE-1") == .join(code: "CODE-1", address: "[::1]:7654"))
        #expect(command("connect host.local:7654") == .connect(address: "host.local:7654"))
        #expect(command("ls") == .list(NotesListParams()))
        #expect(command("ls --folder Work/Projects --tag t --trash --conflicts --pinned --search milk")
            == .list(NotesListParams(folder: "Work/Projects", tag: "t", trashed: true, conflicts: true, pinned: true, query: "milk")))
        #expect(command("show 0190") == .show(id: "0190", format: nil))
        #expect(command("show 0190 --html") == .show(id: "0190", format: .html))
        #expect(command("show --markdown 0190") == .show(id: "0190", format: .markdown))
        #expect(command("show 0190 --text --text") == .show(id: "0190", format: .text))
        #expect(command("new") == .new(NewNote()))
        #expect(command("new --title T --folder F --tag a --tag b --pin --color red --file x.html --text")
            == .new(NewNote(title: "T", folder: "F", tags: ["a", "b"], pinned: true, color: "red", file: "x.html", format: .text)))
        #expect(command("edit 0190") == .edit(EditNote(id: "0190", body: .stdinOrEditor)))
        #expect(command("edit 0190 --title T") == .edit(EditNote(id: "0190", title: "T", body: .unchanged)))
        #expect(command("edit 0190 --folder /") == .edit(EditNote(id: "0190", folder: "/", body: .unchanged)))
        #expect(command("edit 0190 --file - --text --title T") == .edit(EditNote(id: "0190", title: "T", body: .file("-"), format: .text)))
        #expect(command("edit 0190 --text") == .edit(EditNote(id: "0190", body: .stdinOrEditor, format: .text)))
        #expect(command("edit 0190 --html") == .edit(EditNote(id: "0190", body: .stdinOrEditor, format: .html)))
        #expect(command("new notes.md") == .new(NewNote(file: "notes.md")))
        #expect(command("new notes.txt --markdown --pin") == .new(NewNote(pinned: true, file: "notes.txt", format: .markdown)))
        #expect(command("new - --html") == .new(NewNote(file: "-", format: .html)))
        #expect(command("tag 0190") == .tag(id: "0190", add: [], remove: []))
        #expect(command("tag 0190 +a b -c") == .tag(id: "0190", add: ["a", "b"], remove: ["c"]))
        #expect(command("pin 0190") == .pin(id: "0190", pinned: true))
        #expect(command("pin 0190 --off") == .pin(id: "0190", pinned: false))
        #expect(command("mv 0190 Work") == .move(id: "0190", folder: "Work"))
        #expect(command("mv 0190 /") == .move(id: "0190", folder: "/"))
        #expect(command("trash 0190") == .trash(id: "0190"))
        #expect(command("restore 0190") == .restore(id: "0190"))
        #expect(command("restore 0190 --to abcd12") == .restoreRevision(id: "0190", revision: "abcd12"))
        #expect(command("show 0190 --at abcd12 --text") == .showRevision(id: "0190", revision: "abcd12", format: .text))
        #expect(command("log 0190 --patch") == .log(id: "0190", patch: true))
        #expect(command("backup") == .backup(file: nil, keep: nil))
        #expect(command("backup --keep 7") == .backup(file: nil, keep: 7))
        #expect(command("backup copy.db") == .backup(file: "copy.db", keep: nil))
        #expect(command("purge 0190") == .purge(id: "0190", confirmed: false))
        #expect(command("purge 0190 --yes") == .purge(id: "0190", confirmed: true))
        #expect(command("purge -y 0190") == .purge(id: "0190", confirmed: true))
        #expect(command("folders") == .folders)
        #expect(command("mkdir Work/Projects") == .makeFolder(path: "Work/Projects", parents: false))
        #expect(command("mkdir -p Work/Projects") == .makeFolder(path: "Work/Projects", parents: true))
        #expect(command("rmdir Work") == .removeFolder("Work", force: false))
        #expect(command("rmdir Work --force") == .removeFolder("Work", force: true))
        #expect(command("conflicts") == .conflicts)
        #expect(command("log 0190") == .log(id: "0190", patch: false))
        #expect(command("sync") == .sync(wait: false, timeoutSeconds: nil))
        #expect(command("sync --wait") == .sync(wait: true, timeoutSeconds: nil))
        #expect(command("sync --wait --timeout 2.5") == .sync(wait: true, timeoutSeconds: 2.5))
        #expect(command("watch") == .watch)
        #expect(command("export out") == .export(directory: "out", markdown: false, force: false))
        #expect(command("export out --markdown --force") == .export(directory: "out", markdown: true, force: true))
        #expect(command("import in") == .importFiles(directory: "in"))
        #expect(command("help") == .help(topic: nil))
        #expect(command("help ls") == .help(topic: "ls"))
    }

    @Test func globalOptionsGoAnywhereBeforeTheSeparator() throws {
        let invocation = try parse("--json ls --socket /tmp/s.sock --tag t").get()
        #expect(invocation.options == GlobalOptions(socket: "/tmp/s.sock", json: true))
        #expect(invocation.command == .list(NotesListParams(tag: "t")))
        #expect(try parse("status --socket=/x").get().options.socket == "/x")
        #expect(try parse("status").get().options == GlobalOptions())
    }

    @Test func doubleDashMakesEverythingAfterItPositional() throws {
        #expect(try CommandParser.parse(["show", "--", "--html"]).get().command == .show(id: "--html", format: nil))
        #expect(try CommandParser.parse(["mkdir", "--", "-p"]).get().command == .makeFolder(path: "-p", parents: false))
        #expect(try CommandParser.parse(["tag", "0190", "--", "-x", "--json"]).get() == Invocation(options: GlobalOptions(), command: .tag(id: "0190", add: [], remove: ["x", "-json"])))
        #expect(CommandParser.parse(["new", "--title", "--", "--", "x"]).isFailure, "a stray word after -- is still an unexpected argument")
        #expect(try CommandParser.parse(["trash", "--", "--help"]).get().command == .trash(id: "--help"), "--help after -- is an argument")
    }

    @Test func optionValuesMayLookLikeOptions() throws {
        #expect(try CommandParser.parse(["new", "--title", "-draft-"]).get().command == .new(NewNote(title: "-draft-")))
        #expect(try CommandParser.parse(["ls", "--search", "--pinned"]).get().command == .list(NotesListParams(query: "--pinned")))
        #expect(try CommandParser.parse(["new", "--title="]).get().command == .new(NewNote(title: "")))
    }

    @Test func helpAndVersionWinOverEverything() throws {
        #expect(try parse("--help").get().command == .help(topic: nil))
        #expect(try parse("-h").get().command == .help(topic: nil))
        #expect(try parse("ls --help").get().command == .help(topic: "ls"))
        #expect(try parse("ls --bogus --help").get().command == .help(topic: "ls"))
        #expect(try parse("nonsense --help").get().command == .help(topic: nil))
        #expect(try parse("--version").get().command == .version)
        #expect(try parse("status --version --json").get() == Invocation(options: GlobalOptions(json: true), command: .version))
    }

    @Test func badUsageIsAnErrorValueNamingTheCommand() {
        let cases: [(String, String?, String)] = [
            ("", nil, "no command"),
            ("frobnicate", nil, "unknown command"),
            ("ls --bogus", "ls", "unknown option --bogus"),
            ("ls extra", "ls", "unexpected argument"),
            ("status now", "status", "unexpected argument"),
            ("show", "show", "missing NOTE"),
            ("show 0190 --html --text", "show", "one of"),
            ("mv 0190", "mv", "missing FOLDER"),
            ("mv", "mv", "missing NOTE FOLDER"),
            ("join", "join", "missing CODE"),
            ("join CODE --address", "join", "--address needs a value"),
            ("join CODE --address nowhere", "join", "not HOST:PORT"),
            ("connect 10.0.0.1", "connect", "not HOST:PORT"),
            ("connect 10.0.0.1:0", "connect", "not HOST:PORT"),
            ("connect fe80::1:7654", "connect", "not HOST:PORT"),
            ("devices remove", "devices", "needs a DEVICE"),
            ("devices frob", "devices", "unexpected argument"),
            ("tag", "tag", "missing NOTE"),
            ("tag -x", "tag", "missing NOTE"),
            ("tag 0190 +", "tag", "cannot be empty"),
            ("tag 0190 --json=1", "tag", "takes no value"),
            ("tag 0190 --bogus", "tag", "unknown option"),
            ("pin 0190 --off=yes", "pin", "takes no value"),
            ("sync --timeout 5", "sync", "only with --wait"),
            ("sync --wait --timeout soon", "sync", "number of seconds"),
            ("sync --wait --timeout -1", "sync", "number of seconds"),
            ("sync --wait --timeout nan", "sync", "number of seconds"),
            ("mkdir /", "mkdir", "at least one folder name"),
            ("edit 0190 --title T --text", "edit", "--text applies to a body"),
            ("edit 0190 --title T --html", "edit", "--html applies to a body"),
            ("new a.md --file b.md", "new", "give the file once"),
            ("new a.md b.md", "new", "unexpected argument"),
            ("new --markdown --html", "new", "choose one of --markdown, --html, --text"),
            ("help frob", "help", "unknown command"),
            ("export", "export", "missing DIR"),
            ("import a b", "import", "unexpected argument"),
            ("status --socket", "status", "--socket needs a value"),
        ]
        for (line, command, fragment) in cases {
            guard let error = usageError(line) else {
                Issue.record("\"\(line)\" parsed")
                continue
            }
            #expect(error.command == command, "\(line)")
            #expect(error.message.contains(fragment), "\(line): \(error.message)")
            #expect(error.usage.hasPrefix("usage: notesctl "), "\(line)")
        }
    }

    @Test func hostPortForms() {
        for valid in ["a:1", "host.local:7654", "10.0.0.1:65535", "[::1]:7654", "[fe80::1%eth0]:1"] {
            #expect((try? HostPort.parse(valid, allowsPortZero: false).get()) != nil, "\(valid)")
        }
        for invalid in ["a", ":1", "a:", "a:65536", "a:x", "::1:7654", "[::1:7654", "[]:1", "a b:1", "a:+1"] {
            #expect((try? HostPort.parse(invalid, allowsPortZero: false).get()) == nil, "\(invalid)")
        }
    }

    @Test func folderPathComponents() {
        #expect(FolderPath.components(" /Work//Projects/ ") == ["Work", "Projects"])
        #expect(FolderPath.isRoot("/") && FolderPath.isRoot("") && FolderPath.isRoot(" / "))
        #expect(!FolderPath.isRoot("Work"))
    }
}

@Suite struct HelpTests {
    /// One sample line per command, to tie `Command`'s cases to the help table.
    static let samples: [String: [String]] = [
        "status": ["status"], "devices": ["devices"], "invite": ["invite"], "join": ["join", "C"],
        "connect": ["connect", "a:1"], "ls": ["ls"], "show": ["show", "n"], "new": ["new"], "edit": ["edit", "n"],
        "tag": ["tag", "n"], "pin": ["pin", "n"], "mv": ["mv", "n", "f"], "trash": ["trash", "n"],
        "restore": ["restore", "n"], "purge": ["purge", "n"], "folders": ["folders"], "mkdir": ["mkdir", "a"],
        "rmdir": ["rmdir", "a"], "conflicts": ["conflicts"], "log": ["log", "n"], "sync": ["sync"],
        "watch": ["watch"], "export": ["export", "d"], "import": ["import", "d"], "help": ["help"], "backup": ["backup"],
        "search": ["search", "quin"], "ui": ["ui"],
    ]

    @Test func everyCommandHasHelpAndEveryHelpEntryIsACommand() throws {
        #expect(Set(CommandSpec.all.map(\.name)) == Set(Self.samples.keys))
        for spec in CommandSpec.all {
            let arguments = try #require(Self.samples[spec.name])
            #expect((try? CommandParser.parse(arguments).get()) != nil, "\(spec.name) sample parses")
            #expect(spec.usage.hasPrefix(spec.name), "\(spec.name) usage starts with its name")
            #expect(!spec.summary.isEmpty && !spec.summary.contains("\n"), "\(spec.name) has a one-line summary")
            #expect(!spec.details.isEmpty, "\(spec.name) has details")
            #expect(spec.text.contains("usage: notesctl \(spec.usage)"))
            #expect(CommandSpec.overview.contains("  \(spec.name) "), "\(spec.name) is in the overview")
            #expect(try CommandParser.parse(["help", spec.name]).get().command == .help(topic: spec.name))
        }
    }

    @Test func everyOptionInAUsageLineIsAccepted() throws {
        // Each `--option` a usage line mentions parses for that command.
        for spec in CommandSpec.all {
            let options = spec.usage.split(whereSeparator: { " []|.".contains($0) }).filter { $0.hasPrefix("-") }
            for option in options {
                var arguments = try #require(Self.samples[spec.name])
                arguments.append(String(option))
                if ["--address", "--folder", "--tag", "--search", "--title", "--color", "--file", "--timeout", "--at", "--to", "--keep", "--limit"].contains(String(option)) {
                    arguments.append(option == "--address" ? "h:1" : "1")
                }
                if option == "--timeout" { arguments.append("--wait") }
                if spec.name == "edit", ["--text", "--html", "--markdown"].contains(String(option)) { arguments.removeAll { $0 == "--title" } }
                let result = CommandParser.parse(arguments)
                #expect((try? result.get()) != nil, "\(arguments): \(String(describing: result))")
            }
        }
    }
}

extension Result {
    var isFailure: Bool {
        if case .failure = self { return true }
        return false
    }
}

@Suite struct WebCommandTests {
    @Test func searchJoinsItsWordsAndTakesFilters() throws {
        let parsed = try CommandParser.parse(["search", "quin", "stew", "--tag", "food", "--limit", "5"]).get().command
        #expect(parsed == .search(NotesSearchParams(query: "quin stew", limit: 5, folder: nil, tag: "food")))
        #expect((try? CommandParser.parse(["search"]).get()) == nil)
        #expect((try? CommandParser.parse(["search", "x", "--limit", "0"]).get()) == nil)
    }

    @Test func uiSignsInListsOrLogsOut() throws {
        #expect(try CommandParser.parse(["ui"]).get().command == .ui(.signIn(open: true)))
        #expect(try CommandParser.parse(["ui", "--no-open"]).get().command == .ui(.signIn(open: false)))
        #expect(try CommandParser.parse(["ui", "--sessions"]).get().command == .ui(.sessions))
        #expect(try CommandParser.parse(["ui", "--logout-all"]).get().command == .ui(.logoutAll))
        #expect((try? CommandParser.parse(["ui", "--sessions", "--logout-all"]).get()) == nil)
    }
}
