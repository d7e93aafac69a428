import Control
import Foundation

/// Runs one parsed command against the daemon: the I/O shell around the pure parser,
/// renderers and file-naming functions.
final class Runner {
    let options: GlobalOptions
    let socketPath: String
    let environment: [String: String]
    private let render: Render
    private var connection: ControlClient?

    init(options: GlobalOptions, environment: [String: String] = ProcessInfo.processInfo.environment) {
        self.options = options
        self.environment = environment
        socketPath = options.socket ?? ControlPaths.defaultSocketPath(environment: environment)
        render = Render(time: TimeText(now: Date()))
    }

    /// Runs `command`; returns the exit status after printing the result or the error.
    func run(_ command: Command) -> ExitStatus {
        do {
            try execute(command)
            return .ok
        } catch {
            Output.error(error.message)
            if error.status == .usage {
                Output.error(UsageError(message: error.message, command: error.usageCommand).usage)
            }
            return error.status
        }
    }

    private func client() throws(CLIFailure) -> ControlClient {
        if let connection { return connection }
        do {
            let client = try ControlClient(socketPath: socketPath)
            connection = client
            return client
        } catch {
            throw CLIFailure(error)
        }
    }

    private func call<M: ControlMethod>(_ method: M.Type, _ params: M.Params, timeout: Duration? = nil) throws(CLIFailure) -> M.Result {
        do { return try client().call(method, params, timeout: timeout) } catch let error as ControlClientError {
            throw CLIFailure(error)
        } catch let error as CLIFailure {
            throw error
        } catch {
            throw CLIFailure(String(describing: error))
        }
    }

    private func call<M: ControlMethod>(_ method: M.Type) throws(CLIFailure) -> M.Result where M.Params == EmptyParams {
        try call(method, EmptyParams())
    }

    /// Every note `filters` match, page by page: one answer holding a large library would
    /// not fit in a control line.
    private func listNotes(_ filters: NotesListParams) throws(CLIFailure) -> [NoteSummary] {
        do { return try client().listEveryNote(filters) } catch let error as ControlClientError {
            throw CLIFailure(error)
        } catch let error as CLIFailure {
            throw error
        } catch {
            throw CLIFailure(String(describing: error))
        }
    }

    /// Prints `value` as JSON with `--json`, else the human text.
    private func emit<Value: Encodable>(_ value: Value, _ human: @autoclosure () -> String) throws(CLIFailure) {
        if options.json {
            Output.line(try Output.json(value))
        } else {
            Output.line(human())
        }
    }

    private func execute(_ command: Command) throws(CLIFailure) {
        switch command {
        case .help(let topic):
            Output.line(topic.flatMap(CommandSpec.named)?.text ?? CommandSpec.overview)
        case .version:
            Output.line("notesctl \(NotesVersion.string)")
        case .status:
            let status = try call(ControlMethods.Status.self)
            try emit(status, render.status(status))
        case .devices:
            let devices = try call(ControlMethods.DevicesList.self)
            try emit(devices, render.devices(devices))
        case .removeDevice(let device):
            let removed = try call(ControlMethods.DevicesRemove.self, DeviceRemoveParams(device: device))
            try emit(removed, "Removed \(removed.name) (\(removed.short)); it can no longer sync with this household.")
        case .invite:
            let invite = try call(ControlMethods.Invite.self)
            try emit(invite, render.invite(invite))
        case .join(let code, let address):
            let joined = try call(ControlMethods.Join.self, JoinParams(code: code, address: address))
            try emit(joined, render.joined(joined))
        case .connect(let address):
            let peer = try call(ControlMethods.Connect.self, ConnectParams(address: address))
            try emit(peer, render.connected(peer))
        case .list(let filters):
            let notes = try listNotes(filters)
            try emit(notes, render.notes(notes))
        case .show(let id, let format):
            // People see Markdown by default (headings, lists and checkboxes stay visible);
            // scripts get the stored HTML.
            let document = try call(ControlMethods.NotesGet.self, NoteGetParams(id: id, format: format ?? (options.json ? .html : .markdown)))
            if options.json {
                Output.line(try Output.json(document))
            } else if format != nil {
                Output.raw(document.body)
            } else {
                Output.line(render.document(document))
            }
        case .showRevision(let id, let revision, let format):
            let params = NoteRevisionParams(id: id, revision: revision, format: format ?? (options.json ? .html : .markdown))
            let document = try call(ControlMethods.NotesGetRevision.self, params)
            if options.json {
                Output.line(try Output.json(document))
            } else if format != nil {
                Output.raw(document.body)
            } else {
                Output.line(render.document(document, atRevision: document.heads.first))
            }
        case .new(let note):
            try create(note)
        case .edit(let edit):
            try self.edit(edit)
        case .tag(let id, let add, let remove):
            let note = add.isEmpty && remove.isEmpty
                ? try call(ControlMethods.NotesGet.self, NoteGetParams(id: id, format: .text)).summary
                : try call(ControlMethods.NotesUpdate.self, NoteUpdateParams(id: id, addTags: add.isEmpty ? nil : add, removeTags: remove.isEmpty ? nil : remove))
            try emit(note, render.tags(note))
        case .pin(let id, let pinned):
            let note = try call(ControlMethods.NotesUpdate.self, NoteUpdateParams(id: id, pinned: pinned))
            try emit(note, render.noteLine(pinned ? "Pinned" : "Unpinned", note))
        case .move(let id, let folder):
            let note = try call(ControlMethods.NotesUpdate.self, NoteUpdateParams(id: id, folder: Self.folderChange(folder)))
            try emit(note, render.noteLine("Moved", note) + " to " + (note.folderPath.isEmpty ? "Uncategorized" : note.folderPath))
        case .trash(let id):
            let note = try call(ControlMethods.NotesTrash.self, NoteReference(id: id))
            try emit(note, render.noteLine("Trashed", note) + "  (notesctl restore \(note.short) takes it back)")
        case .restore(let id):
            let note = try call(ControlMethods.NotesRestore.self, NoteReference(id: id))
            try emit(note, render.noteLine("Restored", note))
        case .restoreRevision(let id, let revision):
            let restored = try call(ControlMethods.NotesRestoreRevision.self, RestoreRevisionParams(id: id, revision: revision))
            let from = String(restored.restoredFrom.prefix(12))
            try emit(restored, restored.changed
                ? render.noteLine("Restored", restored.note) + " to revision \(from) (a new revision; `notesctl log \(restored.note.short)` shows it)"
                : render.noteLine("Unchanged", restored.note) + ": it already matches revision \(from)")
        case .purge(let id, let confirmed):
            try purge(id: id, confirmed: confirmed)
        case .folders:
            let folders = try call(ControlMethods.FoldersList.self)
            try emit(folders, render.folders(folders))
        case .makeFolder(let path, let parents):
            let (folder, created) = try makeFolder(path: path, parents: parents)
            try emit(folder, created ? "Created folder \(folder.path)" : "Folder \(folder.path) already exists")
        case .removeFolder(let folder, let force):
            let deleted = try call(ControlMethods.FoldersDelete.self, FolderDeleteParams(folder: folder, force: force ? true : nil))
            let moved = deleted.notes + deleted.folders == 0 ? ""
                : " (\(deleted.notes) notes now in Uncategorized, \(deleted.folders) folders now at the top level)"
            try emit(deleted, "Deleted folder \(deleted.path)\(moved)")
        case .conflicts:
            let copies = try listNotes(NotesListParams(conflicts: true))
            if options.json { return Output.line(try Output.json(copies)) }
            let originals = try listNotes(NotesListParams()) + listNotes(NotesListParams(trashed: true))
            Output.line(render.conflicts(copies, originals: Dictionary(originals.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })))
        case .log(let id, let patch):
            let history = try call(ControlMethods.NotesHistory.self, NoteHistoryParams(id: id, patch: patch ? true : nil))
            try emit(history, patch ? render.historyWithPatches(history) : render.history(history))
        case .sync(let wait, let timeoutSeconds):
            let timeoutMs = timeoutSeconds.map { Int(($0 * 1000).rounded(.up)) }
            // The daemon enforces the timeout; ours only guards against a daemon that hangs.
            let guardTimeout: Duration? = wait ? .milliseconds((timeoutMs ?? 30_000) + 10_000) : nil
            let result = try call(ControlMethods.Sync.self, SyncParams(wait: wait, timeoutMs: timeoutMs), timeout: guardTimeout)
            try emit(result, render.sync(result, waited: wait))
        case .watch:
            try watch()
        case .export(let directory, let markdown, let force):
            let report = try Transfer.export(to: directory, markdown: markdown, force: force, client: client())
            try emit(report, "Exported \(report.written.count) notes to \(directory)" + (report.unchanged.isEmpty ? "" : " (\(report.unchanged.count) unchanged)"))
        case .backup(let file, let keep):
            try backup(file: file, keep: keep)

        case .search(let params):
            let hits = try call(ControlMethods.NotesSearch.self, params)
            try emit(hits, render.searchHits(hits))
        case .ui(let action):
            try ui(action)
        case .importFiles(let directory):
            let report = try Transfer.importFiles(from: directory, client: client())
            try emit(report, "Imported \(report.imported.count) notes from \(directory)"
                + (report.foldersCreated.isEmpty ? "" : ", created \(report.foldersCreated.count) folders"))
            for warning in report.warnings where !options.json { Output.error("\(warning.file): \(warning.warning)") }
            if !report.failed.isEmpty {
                for failure in report.failed where !options.json { Output.error("\(failure.file): \(failure.error)") }
                throw CLIFailure("\(report.failed.count) files were not imported")
            }
        }
    }

    /// `""` or `/` is Uncategorized (`null`); anything else a folder reference.
    static func folderChange(_ reference: String) -> FieldChange<String> {
        FolderPath.isRoot(reference) ? .clear : .set(reference)
    }

    private var stdinIsTerminal: Bool { isatty(STDIN_FILENO) == 1 }

    /// The contents of `path` (`-` is stdin) as UTF-8 text.
    private func readText(_ path: String) throws(CLIFailure) -> String {
        let data: Data?
        if path == "-" {
            data = FileHandle.standardInput.readDataToEndOfFile()
        } else {
            data = FileManager.default.contents(atPath: path)
            guard data != nil else { throw CLIFailure("cannot read \(path): no such readable file") }
        }
        guard let data, let text = String(data: data, encoding: .utf8) else {
            throw CLIFailure("\(path == "-" ? "stdin" : path) is not UTF-8 text")
        }
        return text
    }

    private func create(_ note: NewNote) throws(CLIFailure) {
        let input: String? = if let file = note.file { try readText(file) } else if !stdinIsTerminal { try readText("-") } else { nil }
        guard input != nil || note.title != nil else {
            throw .usage("give a --title, or a body with --file FILE or on stdin", command: "new")
        }
        var text = input ?? ""
        let format = BodyInput.format(flag: note.format, path: note.file, text: text)
        // Markdown's front matter (read by the daemon) fills what the options leave out.
        var front = MarkdownParseResult(hasFrontMatter: false, body: text)
        if format == .markdown, text.hasPrefix("---") || text.hasPrefix("\u{FEFF}---") {
            front = try call(ControlMethods.MarkdownParse.self, MarkdownParseParams(text: text))
            text = front.body
            if !front.unknownKeys.isEmpty {
                Output.error("front matter keys notesd keeps no field for, left out: " + front.unknownKeys.joined(separator: ", "))
            }
        }
        let (derivedTitle, body) = BodyInput.note(text, format: format)
        let markdownBody = front.title == nil ? body.body : text
        let folder = note.folder  // a front matter folder may not exist here; `import` creates folders, `new` does not
        let tags = note.tags.isEmpty ? front.tags : note.tags
        let params = NoteCreateParams(
            title: note.title ?? front.title ?? derivedTitle ?? "Untitled", html: body.html, body: markdownBody, format: body.format,
            folder: folder.flatMap { FolderPath.isRoot($0) ? nil : $0 },
            tags: tags?.isEmpty == false ? tags : nil, pinned: note.pinned ? true : front.pinned, color: note.color ?? front.color,
            created: front.created, modified: front.modified.map { max($0, front.created ?? $0) })
        let created = try call(ControlMethods.NotesCreate.self, params)
        try emit(created, render.noteLine("Created", created))
    }

    private func edit(_ edit: EditNote) throws(CLIFailure) {
        var params = NoteUpdateParams(id: edit.id, title: edit.title, folder: edit.folder.map(Self.folderChange) ?? .unchanged)
        /// A body read from a file or stdin, in the format `new` would read it.
        func setBody(_ text: String, path: String) {
            switch BodyInput.format(flag: edit.format, path: path, text: text) {
            case .markdown: (params.body, params.format) = (text, .markdown)
            case .text: params.html = NoteText.paragraphs(fromPlainText: text)
            case .html: params.html = NoteText.bodyFragment(ofHTML: text)
            }
        }
        switch edit.body {
        case .unchanged:
            break
        case .file(let path):
            setBody(try readText(path), path: path)
        case .stdinOrEditor where !stdinIsTerminal:
            let text = try readText("-")
            guard !text.allSatisfy(\.isWhitespace) else {
                throw CLIFailure("stdin was empty, so nothing was saved; to empty the body on purpose, use --file -")
            }
            setBody(text, path: "-")
        case .stdinOrEditor:
            // Markdown unless asked otherwise; the daemon then converts only the blocks changed
            // in the editor against what it showed (the note at `heads`), so the rest keep their HTML.
            let format = edit.format ?? .markdown
            let document = try call(ControlMethods.NotesGet.self, NoteGetParams(id: edit.id, format: format))
            let fileExtension = switch format { case .markdown: "md"; case .text: "txt"; case .html: "html" }
            let fileName = "\(FileNaming.safeName(document.summary.title)).\(fileExtension)"
            guard let edited = try Editor.edit(document.body, fileName: fileName, environment: environment) else {
                return try emit(document.summary, "No changes; nothing saved.")
            }
            params.id = document.summary.id
            params.baseHeads = document.heads
            switch format {
            case .markdown: (params.body, params.format) = (edited, .markdown)
            case .text: params.html = NoteText.paragraphs(fromPlainText: edited)
            case .html: params.html = NoteText.bodyFragment(ofHTML: edited)
            }
        }
        let updated = try call(ControlMethods.NotesUpdate.self, params)
        try emit(updated, render.noteLine("Updated", updated))
    }

    /// Deletes what was shown (or, with `--yes`, what was read just before): the daemon keeps
    /// the note when it changed since, so nobody deletes an edit they never saw.
    private func purge(id: String, confirmed: Bool) throws(CLIFailure) {
        if !confirmed {
            guard stdinIsTerminal else { throw .usage("purge deletes for good: add --yes when stdin is not a terminal", command: "purge") }
        }
        let document = try call(ControlMethods.NotesGet.self, NoteGetParams(id: id, format: .text))
        let note = document.summary
        if !confirmed {
            Output.prompt("Delete \(note.short) \"\(note.title)\" permanently, on every device? [y/N] ")
            guard let answer = readLine(), ["y", "yes"].contains(answer.trimmingCharacters(in: .whitespaces).lowercased()) else {
                Output.error("Nothing deleted.")
                return
            }
        }
        let purged = try call(ControlMethods.NotesPurge.self, NotePurgeParams(id: note.id, baseHeads: document.heads))
        try emit(purged, purged.purged ? "Deleted \(purged.id) permanently." : render.keptPurge(purged, note: note))
    }

    /// `backup FILE`: the file is created here (mode 0600, never over an existing one) and the
    /// open descriptor handed to notesd, which may not be allowed to write where the user can.
    private func backup(file: String?, keep: Int?) throws(CLIFailure) {
        guard let file else {
            let result = try call(ControlMethods.Backup.self, BackupParams(keep: keep), timeout: nil)
            return try emit(result, render.backup(result, file: nil))
        }
        let connection = try client()
        let descriptor = open(file, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else {
            let code = errno
            throw CLIFailure(code == EEXIST
                ? "\(file) already exists; choose another name or remove it first"
                : "cannot create \(file): \(String(cString: strerror(code)))")
        }
        defer { close(descriptor) }
        let result: BackupResult
        do {
            result = try connection.call(ControlMethods.Backup.self, BackupParams(toDescriptor: true), passing: descriptor)
        } catch {
            unlink(file)
            throw CLIFailure(error)
        }
        try emit(result, render.backup(result, file: file))
    }

    /// `mkdir`: the parent must exist, unless `parents`, which creates what is missing and
    /// accepts a folder that is already there. Returns the folder and whether it is new.
    private func makeFolder(path: String, parents: Bool) throws(CLIFailure) -> (FolderInfo, created: Bool) {
        let names = FolderPath.components(path)
        guard parents else {
            let parent = names.dropLast().joined(separator: "/")
            let params = FolderCreateParams(name: names[names.count - 1], parent: parent.isEmpty ? nil : parent)
            return (try call(ControlMethods.FoldersCreate.self, params), true)
        }
        let client = try client()
        var folder: FolderInfo?
        for depth in names.indices {
            let parent = names[..<depth].joined(separator: "/")
            do {
                folder = try client.call(ControlMethods.FoldersCreate.self, FolderCreateParams(name: names[depth], parent: parent.isEmpty ? nil : parent))
            } catch .server(let error) where error.code == .alreadyExists {
                folder = nil
            } catch {
                throw CLIFailure(error)
            }
        }
        if let folder { return (folder, true) }
        let existing = names.joined(separator: "/")
        guard let found = try call(ControlMethods.FoldersList.self).first(where: { $0.path == existing }) else {
            throw CLIFailure("the folder \(existing) exists but is not listed; try again")
        }
        return (found, false)
    }

    /// `ui`: a sign-in link (printed, and opened when a display is there), or the sessions.
    private func ui(_ action: UIAction) throws(CLIFailure) {
        switch action {
        case .signIn(let open):
            let login = try call(ControlMethods.WebLoginToken.self)
            struct Link: Encodable { let url: String }
            if options.json { return Output.line(try Output.json(Link(url: login.url))) }
            Output.line(login.url)
            let display = [environment["DISPLAY"], environment["WAYLAND_DISPLAY"]].contains { !($0 ?? "").isEmpty }
            guard open, display else { return Output.error("Open this link in a browser on this machine within 2 minutes; it works once.") }
            // The browser is given a private page that forwards to the link, never the link
            // itself: a command line is readable by every user (/proc/PID/cmdline), who could
            // sign in with the token first.
            let page: String
            do { page = try SignInPage.write(url: login.url, environment: environment) } catch {
                return Output.error("Could not write the sign-in page (\(error)); open the link by hand.")
            }
            let opener = Process()
            opener.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            opener.arguments = ["xdg-open", page]
            opener.standardOutput = FileHandle.nullDevice
            opener.standardError = FileHandle.nullDevice
            do {
                try opener.run()
                opener.waitUntilExit()
            } catch {
                return Output.error("Could not run xdg-open (\(error)); open the link by hand.")
            }
            if opener.terminationStatus != 0 { Output.error("xdg-open failed (status \(opener.terminationStatus)); open the link by hand.") }
        case .sessions:
            let sessions = try call(ControlMethods.WebSessions.self)
            try emit(sessions, render.webSessions(sessions))
        case .logoutAll:
            let result = try call(ControlMethods.WebLogoutAll.self)
            try emit(result, result.revoked == 0 ? "No browser was signed in." : "Signed out \(result.revoked) browser session\(result.revoked == 1 ? "" : "s").")
        }
    }

    private func watch() throws(CLIFailure) {
        let client = try client()
        do {
            try client.watch()
            if !options.json { Output.error("Watching notesd at \(socketPath); Ctrl-C stops.") }
            while let event = try client.nextEvent() {
                Output.line(options.json ? try Output.json(event, pretty: false) : render.event(event))
                Output.flush()
            }
        } catch let error as ControlClientError {
            if case .connectionClosed = error { throw CLIFailure("notesd closed the connection (did it stop?); run `notesctl status` to check") }
            throw CLIFailure(error)
        } catch let error as CLIFailure {
            throw error
        } catch {
            throw CLIFailure(String(describing: error))
        }
    }
}

/// Writing to the terminal: results to stdout, messages and prompts to stderr.
enum Output {
    static func line(_ text: String) { print(text) }

    /// Exactly `text` when redirected (`show --html > file` round-trips); on a terminal, with a
    /// final newline so the prompt does not land on the last line.
    static func raw(_ text: String) { print(text, terminator: isatty(STDOUT_FILENO) == 1 && !text.hasSuffix("\n") ? "\n" : "") }

    /// `fflush(nil)` flushes stdout (Swift's `print` buffers it) without naming the global.
    static func flush() { fflush(nil) }

    static func error(_ message: String) {
        flush()
        FileHandle.standardError.write(Data("notesctl: \(message)\n".utf8))
    }

    static func prompt(_ text: String) {
        flush()
        FileHandle.standardError.write(Data(text.utf8))
    }

    /// `--json` output: sorted keys; pretty for one result, one line per event.
    static func json(_ value: some Encodable, pretty: Bool = true) throws(CLIFailure) -> String {
        let encoder = ControlJSON.encoder()
        if pretty { encoder.outputFormatting.insert(.prettyPrinted) }
        do { return String(decoding: try encoder.encode(value), as: UTF8.self) } catch {
            throw CLIFailure("cannot encode the result as JSON: \(error)")
        }
    }
}
