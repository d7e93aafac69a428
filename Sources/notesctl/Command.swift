import Control

/// What one `notesctl` run asks for, parsed from the command line with no I/O
/// (`CommandLine.parse`). The runner turns it into control-socket calls.
enum Command: Hashable, Sendable {
    /// `help [COMMAND]`, `--help`, `-h`.
    case help(topic: String?)
    case version
    case status
    case devices
    case removeDevice(String)
    case invite
    case join(code: String, address: String?)
    case connect(address: String)
    case list(NotesListParams)
    /// `format` is `nil` for the default view (details, then the Markdown); with a format flag
    /// only the body is printed, exactly.
    case show(id: String, format: NoteFormat?)
    /// `show NOTE --at REV`: the note as it was at that revision.
    case showRevision(id: String, revision: String, format: NoteFormat?)
    case new(NewNote)
    case edit(EditNote)
    /// `tag ID` with no changes shows the tags.
    case tag(id: String, add: [String], remove: [String])
    case pin(id: String, pinned: Bool)
    /// `folder` is a folder reference; `/` is Uncategorized.
    case move(id: String, folder: String)
    case trash(id: String)
    case restore(id: String)
    /// `restore NOTE --to REV`: a new revision with that revision's content.
    case restoreRevision(id: String, revision: String)
    case purge(id: String, confirmed: Bool)
    case folders
    case makeFolder(path: String, parents: Bool)
    case removeFolder(String, force: Bool)
    case conflicts
    /// `patch`: each revision's block-level diff against its first parent.
    case log(id: String, patch: Bool)
    case sync(wait: Bool, timeoutSeconds: Double?)
    case watch
    case export(directory: String, markdown: Bool, force: Bool)
    case importFiles(directory: String)
    /// `backup [FILE] [--keep N]`: FILE is opened here and its descriptor passed to notesd.
    case backup(file: String?, keep: Int?)

    /// `search QUERY...`: full-text search (docs/web.md, "Search").
    case search(NotesSearchParams)
    case ui(UIAction)
}

/// `notesctl ui` modes.
enum UIAction: Hashable, Sendable {
    /// Print (and, with a display, open) a one-time sign-in link; `open: false` with `--no-open`.
    case signIn(open: Bool)
    /// `--sessions`: list the signed-in browsers.
    case sessions
    /// `--logout-all`: end every session.
    case logoutAll
}

/// `notesctl new` options.
struct NewNote: Hashable, Sendable {
    var title: String?
    var folder: String?
    var tags: [String] = []
    var pinned = false
    var color: String?
    /// `FILE` or `--file`; `-` is stdin. `nil`: stdin when it is not a terminal, else an empty body.
    var file: String?
    /// `--markdown`, `--html` or `--text`; `nil`: from the file's extension, else Markdown
    /// unless the input starts with `<` (`BodyFormat.resolve`).
    var format: NoteFormat?
}

/// `notesctl edit` options.
struct EditNote: Hashable, Sendable {
    var id: String
    var title: String?
    var folder: String?
    var body: BodySource
    /// `--markdown`, `--html` or `--text`: what the input (or the editor's buffer) is. `nil`:
    /// the editor shows Markdown; a file or stdin is read as `new` reads it.
    var format: NoteFormat?

    enum BodySource: Hashable, Sendable {
        /// `--file F` (`-` is stdin).
        case file(String)
        /// Only `--title`/`--folder` were given: the body stays as it is.
        case unchanged
        /// Nothing but the id: stdin when it is not a terminal, else `$VISUAL`/`$EDITOR`.
        case stdinOrEditor
    }
}

/// Options every command takes.
struct GlobalOptions: Hashable, Sendable {
    /// `--socket PATH`; `nil`: `ControlPaths.defaultSocketPath()`.
    var socket: String?
    /// `--json`: print results as JSON (stable keys) instead of tables.
    var json = false
}

/// A whole command line, parsed.
struct Invocation: Hashable, Sendable {
    var options: GlobalOptions
    var command: Command
}

/// A command line that cannot be run: the message and the command's usage line (exit 64).
struct UsageError: Error, Hashable, Sendable, CustomStringConvertible {
    var message: String
    /// The command whose usage to show; `nil` for the general usage.
    var command: String?

    var usage: String {
        if let command, let spec = CommandSpec.named(command) { return "usage: notesctl \(spec.usage)" }
        return "usage: notesctl [--socket PATH] [--json] COMMAND [ARGS]   (notesctl help lists the commands)"
    }

    var description: String { message }
}
