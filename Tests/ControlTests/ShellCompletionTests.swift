import Control
import Foundation
import Testing
import TestSupport
@testable import notesctl

/// The completions in `completions/` are `CommandSpec` rendered (so every command and option
/// is there), and they work: each shell, given a partly typed line, offers the commands,
/// options and — asked of a daemon through the real `notesctl` — the notes, folders and
/// devices a person would want next.
@Suite(.serialized) struct ShellCompletionTests {
    static let files = ["completions/notesctl.bash": ShellCompletions.bash, "completions/_notesctl": ShellCompletions.zsh, "completions/notesctl.fish": ShellCompletions.fish]

    @Test(arguments: files.keys.sorted()) func fileIsTheRendering(path: String) throws {
        let difference = try GeneratedText.checkFile(path, content: Self.files[path]!)
        #expect(difference == nil, "\(difference ?? "")")
    }

    /// Every option a command's help names is offered for it.
    @Test func everyOptionOfTheHelpIsOffered() {
        for spec in CommandSpec.all {
            let options = Set(ShellCompletions.command(spec).options)
            let named = spec.details.split(separator: "\n").compactMap { line -> Substring? in
                let trimmed = line.drop { $0 == " " }
                guard line.hasPrefix("  "), trimmed.hasPrefix("-") else { return nil }
                return trimmed.prefix { $0 != " " && $0 != "," }
            }
            for option in named { #expect(options.contains(String(option)), "\(spec.name): \(option) is in its help but not in its usage line") }
        }
    }

    /// A daemon that knows one note (not in the Trash), one folder and one device, for
    /// `connections` calls.
    static func daemon(connections: Int) throws -> TestControlServer {
        try TestControlServer(connections: connections) { request in
            switch request.method {
            case ControlMethods.FoldersList.name: request.respond(to: ControlMethods.FoldersList.self) { _ in [Samples.folder] }
            case ControlMethods.DevicesList.name: request.respond(to: ControlMethods.DevicesList.self) { _ in [Samples.device] }
            default: request.respond(to: ControlMethods.NotesList.self) { params in params.trashed == true ? [] : [Samples.note] }
            }
        }
    }

    /// Runs `script` in `shell` with the built notesctl first on PATH.
    static func run(_ shell: [String], _ script: String) throws -> String {
        let bin = try TemporaryDirectory()
        try FileManager.default.createSymbolicLink(atPath: bin.path + "/notesctl", withDestinationPath: try NotesctlBinaryTests.executable().path)
        let result = try ChildProcess.runBlocking(["/usr/bin/env", "-i", "PATH=\(bin.path):/usr/bin:/bin", "HOME=\(bin.path)"] + shell + [script])
        #expect(result.status == 0, "\(shell[0]) failed: \(result.error)")
        return result.output
    }

    /// What bash's completion offers for `line` (the cursor at its end).
    static func bash(_ line: String) throws -> [String] {
        let script = """
            source \(packageRoot)/completions/notesctl.bash
            read -ra COMP_WORDS <<< \(quoted(line))
            \(line.hasSuffix(" ") ? "COMP_WORDS+=(\"\")" : "")
            COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
            _notesctl
            printf '%s\\n' "${COMPREPLY[@]}"
            """
        return try run(["bash", "-c"], script).split(separator: "\n").map(String.init)
    }

    /// What fish offers for `line`.
    static func fish(_ line: String) throws -> [String] {
        let script = "source \(packageRoot)/completions/notesctl.fish; complete -C \(quoted(line))"
        return try run(["fish", "--no-config", "-c"], script).split(separator: "\n").map { String($0.prefix { $0 != "\t" }) }
    }

    static func quoted(_ text: String) -> String { "'" + text.replacingOccurrences(of: "'", with: "'\\''") + "'" }

    @Test func bashOffersCommandsOptionsAndTheDaemonsNames() throws {
        #expect(try Self.bash("notesctl st") == ["status"])
        #expect(try Self.bash("notesctl ls --f") == ["--folder"])
        #expect(try Self.bash("notesctl --json ls --p") == ["--pinned"])
        #expect(try Self.bash("notesctl devices ") == ["remove"])
        #expect(try Self.bash("notesctl help mk") == ["mkdir"])
        let server = try Self.daemon(connections: 2)
        #expect(try Self.bash("notesctl --socket \(server.path) show ") == ["0190a1b2"])
        let folders = try Self.daemon(connections: 1)
        #expect(try Self.bash("notesctl --socket \(folders.path) mv 0190a1b2 H") == ["Home/Lists"])
        let devices = try Self.daemon(connections: 1)
        #expect(try Self.bash("notesctl --socket \(devices.path) devices remove d") == ["desktop"])
        let values = try Self.daemon(connections: 1)
        #expect(try Self.bash("notesctl --socket \(values.path) new --title x --folder ") == ["Home/Lists"])
        // A value that is not a name (a title) offers nothing, and does not count as an argument.
        #expect(try Self.bash("notesctl new --title ").isEmpty)
    }

    @Test func fishOffersCommandsOptionsAndTheDaemonsNames() throws {
        #expect(try Self.fish("notesctl sta") == ["status"])
        #expect(try Self.fish("notesctl ls --fo") == ["--folder"])
        let server = try Self.daemon(connections: 2)
        #expect(try Self.fish("notesctl --socket \(server.path) show ") == ["0190a1b2"])
        let folders = try Self.daemon(connections: 1)
        #expect(try Self.fish("notesctl --socket \(folders.path) mv 0190a1b2 ") == ["Home/Lists"])
    }

    /// zsh runs the same tables and line scanner as bash; its completion widget itself needs
    /// a terminal, so this checks the script loads and the shared pieces answer in zsh.
    @Test func zshLoadsAndScansTheLine() throws {
        let script = """
            autoload -Uz compinit && compinit -u -d $HOME/.zcompdump
            source \(packageRoot)/completions/_notesctl
            _notesctl_scan --socket /s mv 0190a1b2
            print -r -- "$command $position ${socket[2]} $(_notesctl_positional mv $position)"
            _notesctl_scan new --folder
            print -r -- "$pending $(_notesctl_value_kind new $pending)"
            """
        let lines = try Self.run(["zsh", "-f", "-c"], script).split(separator: "\n")
        #expect(lines == ["mv 1 /s folder", "--folder folder"])
    }
}
