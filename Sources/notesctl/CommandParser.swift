import Control

/// Parses `notesctl`'s arguments into an `Invocation`, by hand: `popFirst()` over an
/// `ArraySlice`, options anywhere before `--`, everything after `--` positional.
/// Pure: the same arguments always give the same value or the same `UsageError`.
enum CommandParser {
    static func parse(_ arguments: [String]) -> Result<Invocation, UsageError> {
        Result { () throws(UsageError) -> Invocation in try parseOrThrow(arguments) }
    }

    private static func parseOrThrow(_ arguments: [String]) throws(UsageError) -> Invocation {
        var reader = ArgumentReader(arguments)
        // `--help` and `--version` win over anything else on the line, even bad usage.
        let flags = arguments.prefix { $0 != "--" }
        let commandName = try firstWord(of: arguments)
        if flags.contains("--help") || flags.contains("-h") {
            return Invocation(options: try reader.globalOptionsOnly(), command: .help(topic: commandName))
        }
        if flags.contains("--version") {
            return Invocation(options: try reader.globalOptionsOnly(), command: .version)
        }
        guard case .word(let name)? = try reader.next() else {
            throw UsageError(message: "no command given", command: nil)
        }
        var parser = CommandArguments(name: name, reader: reader)
        let command = try parser.parseCommand()
        return Invocation(options: parser.reader.options, command: command)
    }

    /// The command name, for `--help` (`nil` when none, or not a command).
    private static func firstWord(of arguments: [String]) throws(UsageError) -> String? {
        var reader = ArgumentReader(arguments)
        while let token = try? reader.next() {
            if case .word(let word) = token { return CommandSpec.named(word) == nil ? nil : word }
        }
        return nil
    }
}

/// One command-line item, as seen before the command decides what it means.
enum ArgumentToken: Hashable {
    /// `--name`, `--name=value` (`value` set) or `-x`.
    case option(name: String, value: String?)
    case word(String)
}

/// Walks the arguments, taking the global options (`--socket`, `--json`, `--help`, `-h`,
/// `--version`) wherever they appear before `--`.
struct ArgumentReader {
    private var remaining: ArraySlice<String>
    private var afterSeparator = false
    private(set) var options = GlobalOptions()
    /// The command being parsed, for usage errors.
    var command: String?

    init(_ arguments: [String]) { remaining = arguments[...] }

    /// The next token that is not a global option; `nil` at the end.
    mutating func next() throws(UsageError) -> ArgumentToken? {
        while let raw = remaining.popFirst() {
            if afterSeparator { return .word(raw) }
            if raw == "--" {
                afterSeparator = true
                continue
            }
            guard raw.hasPrefix("-"), raw != "-" else { return .word(raw) }
            let token = Self.option(raw)
            guard case .option(let name, let inline) = token else { return token }
            switch name {
            case "--json":
                try noValue(inline, for: name)
                options.json = true
            case "--socket":
                options.socket = try value(inline, for: name)
            case "--help", "-h", "--version":
                try noValue(inline, for: name)
            default:
                return token
            }
        }
        return nil
    }

    /// The value of an option: `--name=value`, or the next argument whatever it looks like
    /// (so `--title -draft-` works).
    mutating func value(_ inline: String?, for option: String) throws(UsageError) -> String {
        if let inline { return inline }
        guard let next = remaining.popFirst(), afterSeparator || next != "--" else {
            throw UsageError(message: "\(option) needs a value", command: command)
        }
        return next
    }

    func noValue(_ inline: String?, for option: String) throws(UsageError) {
        if inline != nil { throw UsageError(message: "\(option) takes no value", command: command) }
    }

    /// Reads the rest for the global options alone (for `--help`/`--version` lines).
    mutating func globalOptionsOnly() throws(UsageError) -> GlobalOptions {
        while (try? next()) != nil {}
        return options
    }

    private static func option(_ raw: String) -> ArgumentToken {
        guard raw.hasPrefix("--"), let equals = raw.firstIndex(of: "=") else { return .option(name: raw, value: nil) }
        return .option(name: String(raw[..<equals]), value: String(raw[raw.index(after: equals)...]))
    }
}

/// The options and words of one command line, after the command's option table sorted
/// them.
struct ParsedArguments {
    var words: [String] = []
    /// In command-line order; aliases already replaced by their long name.
    var options: [(name: String, value: String?)] = []

    func has(_ name: String) -> Bool { options.contains { $0.name == name } }
    /// The last value given (a later option overrides an earlier one).
    func value(_ name: String) -> String? { options.last { $0.name == name }?.value }
    func values(_ name: String) -> [String] { options.filter { $0.name == name }.compactMap(\.value) }
}

/// How a command's option is read.
enum OptionKind {
    case flag
    case value
    /// Another spelling of the named option.
    case alias(String)
}

/// The arguments after the command name, parsed into that command's `Command` value.
struct CommandArguments {
    let name: String
    var reader: ArgumentReader

    init(name: String, reader: ArgumentReader) {
        self.name = name
        self.reader = reader
        self.reader.command = name
    }

    private func usage(_ message: String) -> UsageError { UsageError(message: message, command: name) }

    /// Reads the rest of the line with `options` as the command's option table; the number
    /// of words must be in `count` (`names` name the missing ones).
    @discardableResult
    private mutating func read(
        _ count: ClosedRange<Int>, names: [String] = [], options table: [String: OptionKind] = [:]
    ) throws(UsageError) -> ParsedArguments {
        var parsed = ParsedArguments()
        while let token = try reader.next() {
            switch token {
            case .word(let word):
                guard parsed.words.count < count.upperBound else { throw usage("unexpected argument \"\(word)\"") }
                parsed.words.append(word)
            case .option(var option, let inline):
                if case .alias(let long)? = table[option] { option = long }
                switch table[option] {
                case .flag?:
                    try reader.noValue(inline, for: option)
                    parsed.options.append((option, nil))
                case .value?:
                    parsed.options.append((option, try reader.value(inline, for: option)))
                case .alias?, nil:
                    throw usage("unknown option \(option)")
                }
            }
        }
        guard parsed.words.count >= count.lowerBound else {
            throw usage("missing \(names[parsed.words.count..<count.lowerBound].joined(separator: " "))")
        }
        return parsed
    }

    mutating func parseCommand() throws(UsageError) -> Command {
        switch name {
        case "help":
            let topic = try read(0...1).words.first
            if let topic, CommandSpec.named(topic) == nil { throw usage("unknown command \"\(topic)\"") }
            return .help(topic: topic)
        case "status":
            try read(0...0)
            return .status
        case "devices":
            let words = try read(0...2, names: ["remove", "DEVICE"]).words
            switch words.count {
            case 0: return .devices
            case 2 where words[0] == "remove": return .removeDevice(words[1])
            case 1 where words[0] == "remove": throw usage("devices remove needs a DEVICE")
            default: throw usage("unexpected argument \"\(words[0])\"")
            }
        case "invite":
            try read(0...0)
            return .invite
        case "join":
            let parsed = try read(1...1, names: ["CODE"], options: ["--address": .value])
            let address = parsed.value("--address")
            if let address { try checkAddress(address) }
            return .join(code: parsed.words[0], address: address)
        case "connect":
            let address = try read(1...1, names: ["HOST:PORT"]).words[0]
            try checkAddress(address)
            return .connect(address: address)
        case "ls":
            let parsed = try read(0...0, options: [
                "--folder": .value, "--tag": .value, "--search": .value,
                "--trash": .flag, "--conflicts": .flag, "--pinned": .flag,
            ])
            return .list(NotesListParams(
                folder: parsed.value("--folder"), tag: parsed.value("--tag"),
                trashed: parsed.has("--trash") ? true : nil, conflicts: parsed.has("--conflicts") ? true : nil,
                pinned: parsed.has("--pinned") ? true : nil, query: parsed.value("--search")))
        case "show":
            let parsed = try read(1...1, names: ["NOTE"], options: ["--html": .flag, "--text": .flag, "--markdown": .flag, "--at": .value])
            let formats = Set(parsed.options.compactMap { NoteFormat(rawValue: String($0.name.dropFirst(2))) })
            guard formats.count <= 1 else { throw usage("choose one of --html, --text, --markdown") }
            if let revision = parsed.value("--at") { return .showRevision(id: parsed.words[0], revision: revision, format: formats.first) }
            return .show(id: parsed.words[0], format: formats.first)
        case "new":
            let parsed = try read(0...1, names: ["FILE"], options: [
                "--title": .value, "--folder": .value, "--tag": .value, "--color": .value, "--file": .value,
                "--pin": .flag, "--text": .flag, "--markdown": .flag, "--html": .flag,
            ])
            if !parsed.words.isEmpty, parsed.value("--file") != nil { throw usage("give the file once: FILE or --file FILE") }
            return .new(NewNote(
                title: parsed.value("--title"), folder: parsed.value("--folder"), tags: parsed.values("--tag"),
                pinned: parsed.has("--pin"), color: parsed.value("--color"), file: parsed.words.first ?? parsed.value("--file"),
                format: try bodyFormat(parsed)))
        case "edit":
            return try parseEdit()
        case "tag":
            return try parseTag()
        case "pin":
            let parsed = try read(1...1, names: ["NOTE"], options: ["--off": .flag])
            return .pin(id: parsed.words[0], pinned: !parsed.has("--off"))
        case "mv":
            let words = try read(2...2, names: ["NOTE", "FOLDER"]).words
            return .move(id: words[0], folder: words[1])
        case "trash":
            return .trash(id: try read(1...1, names: ["NOTE"]).words[0])
        case "restore":
            let parsed = try read(1...1, names: ["NOTE"], options: ["--to": .value])
            if let revision = parsed.value("--to") { return .restoreRevision(id: parsed.words[0], revision: revision) }
            return .restore(id: parsed.words[0])
        case "purge":
            let parsed = try read(1...1, names: ["NOTE"], options: ["--yes": .flag, "-y": .alias("--yes")])
            return .purge(id: parsed.words[0], confirmed: parsed.has("--yes"))
        case "folders":
            try read(0...0)
            return .folders
        case "mkdir":
            let parsed = try read(1...1, names: ["PATH"], options: ["--parents": .flag, "-p": .alias("--parents")])
            guard !FolderPath.components(parsed.words[0]).isEmpty else { throw usage("PATH needs at least one folder name") }
            return .makeFolder(path: parsed.words[0], parents: parsed.has("--parents"))
        case "rmdir":
            let parsed = try read(1...1, names: ["FOLDER"], options: ["--force": .flag, "-f": .alias("--force")])
            return .removeFolder(parsed.words[0], force: parsed.has("--force"))
        case "conflicts":
            try read(0...0)
            return .conflicts
        case "log":
            let parsed = try read(1...1, names: ["NOTE"], options: ["--patch": .flag, "-p": .alias("--patch")])
            return .log(id: parsed.words[0], patch: parsed.has("--patch"))
        case "sync":
            return try parseSync()
        case "watch":
            try read(0...0)
            return .watch
        case "export":
            let parsed = try read(1...1, names: ["DIR"], options: ["--markdown": .flag, "--force": .flag, "-f": .alias("--force")])
            return .export(directory: parsed.words[0], markdown: parsed.has("--markdown"), force: parsed.has("--force"))
        case "backup":
            let parsed = try read(0...1, names: ["FILE"], options: ["--keep": .value])
            var keep: Int?
            if let text = parsed.value("--keep") {
                guard let number = Int(text), number >= 1 else { throw usage("--keep needs a whole number of backups, at least 1, not \"\(text)\"") }
                guard parsed.words.isEmpty else { throw usage("--keep applies to backups in the data directory, not to FILE") }
                keep = number
            }
            return .backup(file: parsed.words.first, keep: keep)
        case "import":
            return .importFiles(directory: try read(1...1, names: ["DIR"]).words[0])
        case "search":
            let parsed = try read(1...1000, names: ["QUERY"], options: ["--folder": .value, "--tag": .value, "--limit": .value])
            var limit: Int?
            if let text = parsed.value("--limit") {
                guard let number = Int(text), (1...500).contains(number) else { throw usage("--limit needs a number from 1 to 500, not \"\(text)\"") }
                limit = number
            }
            return .search(NotesSearchParams(
                query: parsed.words.joined(separator: " "), limit: limit, folder: parsed.value("--folder"), tag: parsed.value("--tag")))
        case "ui":
            let parsed = try read(0...0, options: ["--sessions": .flag, "--logout-all": .flag, "--no-open": .flag])
            let modes = ["--sessions", "--logout-all"].filter(parsed.has)
            guard modes.count <= 1 else { throw usage("choose one of --sessions, --logout-all") }
            if !modes.isEmpty && parsed.has("--no-open") { throw usage("--no-open applies only to signing in") }
            if parsed.has("--sessions") { return .ui(.sessions) }
            if parsed.has("--logout-all") { return .ui(.logoutAll) }
            return .ui(.signIn(open: !parsed.has("--no-open")))
        default:
            throw UsageError(message: "unknown command \"\(name)\"", command: nil)
        }
    }

    private func checkAddress(_ address: String) throws(UsageError) {
        guard case .success = HostPort.parse(address, allowsPortZero: false) else { throw usage("\"\(address)\" is not HOST:PORT (IPv6 as [ADDR]:PORT)") }
    }

    private mutating func parseEdit() throws(UsageError) -> Command {
        let parsed = try read(1...1, names: ["NOTE"], options: [
            "--title": .value, "--folder": .value, "--file": .value, "--text": .flag, "--markdown": .flag, "--html": .flag,
        ])
        let title = parsed.value("--title"), folder = parsed.value("--folder")
        let body: EditNote.BodySource =
            if let file = parsed.value("--file") { .file(file) } else if title != nil || folder != nil { .unchanged } else { .stdinOrEditor }
        let format = try bodyFormat(parsed)
        if body == .unchanged, let format {
            throw usage("--\(format.rawValue) applies to a body: give --file, or leave out --title and --folder")
        }
        return .edit(EditNote(id: parsed.words[0], title: title, folder: folder, body: body, format: format))
    }

    /// At most one of `--markdown`, `--html`, `--text`.
    private func bodyFormat(_ parsed: ParsedArguments) throws(UsageError) -> NoteFormat? {
        let formats = NoteFormat.allCases.filter { parsed.has("--" + $0.rawValue) }
        guard formats.count <= 1 else { throw usage("choose one of --markdown, --html, --text") }
        return formats.first
    }

    /// `tag NOTE [+TAG|-TAG|TAG]...`: here `-TAG` is a tag to remove, not an option.
    private mutating func parseTag() throws(UsageError) -> Command {
        var id: String?
        var add: [String] = [], remove: [String] = []
        while let token = try reader.next() {
            let word: String
            switch token {
            case .word(let text): word = text
            case .option(let option, let inline):
                guard !option.hasPrefix("--") else { throw usage("unknown option \(option)") }
                word = inline.map { "\(option)=\($0)" } ?? option
            }
            guard id != nil else {
                guard !word.hasPrefix("-") else { throw usage("missing NOTE") }
                id = word
                continue
            }
            if word.hasPrefix("-") {
                remove.append(try tagName(word.dropFirst()))
            } else {
                add.append(try tagName(word.hasPrefix("+") ? word.dropFirst() : word[...]))
            }
        }
        guard let id else { throw usage("missing NOTE") }
        return .tag(id: id, add: add, remove: remove)
    }

    private func tagName(_ text: Substring) throws(UsageError) -> String {
        guard !text.allSatisfy(\.isWhitespace) else { throw usage("a tag name cannot be empty") }
        return String(text)
    }

    private mutating func parseSync() throws(UsageError) -> Command {
        let parsed = try read(0...0, options: ["--wait": .flag, "--timeout": .value])
        var timeout: Double?
        if let text = parsed.value("--timeout") {
            guard let seconds = Double(text), seconds.isFinite, seconds > 0, seconds <= 86_400 else {
                throw usage("--timeout needs a number of seconds above 0 and at most 86400, not \"\(text)\"")
            }
            timeout = seconds
        }
        if timeout != nil && !parsed.has("--wait") { throw usage("--timeout applies only with --wait") }
        return .sync(wait: parsed.has("--wait"), timeoutSeconds: timeout)
    }
}

