import Control

/// One command's help: the usage line, the one-line summary for `notesctl help`, and the
/// full text for `notesctl help COMMAND`. The single source of help and usage text.
struct CommandSpec: Sendable {
    let name: String
    /// The usage line after `notesctl `.
    let usage: String
    let summary: String
    let details: String

    static func named(_ name: String) -> CommandSpec? { all.first { $0.name == name } }

    static let all: [CommandSpec] = [
        CommandSpec(
            name: "status", usage: "status",
            summary: "Show this device, its household, its peers and sync counters.",
            details: "Shows the device id and name, the household and its key (epoch, and what a rotation waits for), listen addresses, discovery, every peer's sync state and the counters since notesd started."),
        CommandSpec(
            name: "devices", usage: "devices [remove DEVICE]",
            summary: "List the household's devices, or remove one.",
            details: """
            devices                 list every device on the household roster, with its
                                    notesd version and household key epoch
            devices remove DEVICE   revoke DEVICE (its name, its full id or a unique id
                                    prefix) everywhere; it can no longer sync with the
                                    household, and the household key is replaced (a new
                                    invite can take it back)
            """),
        CommandSpec(
            name: "invite", usage: "invite",
            summary: "Print a one-time code for adding a new device (valid 10 minutes).",
            details: "Prints a one-time invite code and the addresses of this device. On the new device, run `notesctl join CODE`."),
        CommandSpec(
            name: "join", usage: "join CODE [--address HOST:PORT]",
            summary: "Join the household of the device that printed CODE.",
            details: """
            Joins the household that invited this device. Notes already on this device are
            merged into the household library; nothing is lost on either side.
              --address HOST:PORT   where the inviting device listens (default: find it on
                                    the local network)
            """),
        CommandSpec(
            name: "connect", usage: "connect HOST:PORT",
            summary: "Connect to a peer at an address (when discovery cannot find it).",
            details: "Connects to a household device at HOST:PORT (IPv6 as [ADDR]:PORT) and keeps it as a static peer."),
        CommandSpec(
            name: "ls", usage: "ls [--folder FOLDER] [--tag TAG] [--trash] [--conflicts] [--pinned] [--search TEXT]",
            summary: "List notes, pinned first, then newest first.",
            details: """
              --folder FOLDER   only notes directly in FOLDER (path, id or id prefix; / is Uncategorized)
              --tag TAG         only notes tagged TAG
              --trash           the notes in the Trash (instead of the others)
              --conflicts       only conflict copies
              --pinned          only pinned notes
              --search TEXT     notes whose title or text contains TEXT (any case)
            """),
        CommandSpec(
            name: "show", usage: "show NOTE [--at REV] [--html|--text|--markdown]",
            summary: "Print a note.",
            details: """
            Prints the note's details and its body as Markdown. With a format flag, prints
            only the body in that format, exactly (for scripts and redirection).
              --html --text --markdown   the body format
              --at REV                   the note as it was at revision REV (an id or a unique
                                         prefix, as `notesctl log` prints them)
            """),
        CommandSpec(
            name: "new", usage: "new [FILE] [--title TITLE] [--folder FOLDER] [--tag TAG]... [--pin] [--color COLOR] [--file FILE] [--markdown|--html|--text]",
            summary: "Create a note from a file or stdin.",
            details: """
            Creates a note. The body is read from FILE (or --file FILE; - is stdin), else from
            stdin when stdin is not a terminal. Its format comes from the flag, else from the
            file's extension (.md/.markdown Markdown, .html/.htm HTML, .txt text), else it is
            HTML when it starts with < and Markdown otherwise.
              --title TITLE     the title (default: a first line "# Title" of Markdown, the
                                HTML <title> or first heading, or the first line of text)
              --folder FOLDER   the folder (path, id or id prefix; default: Uncategorized)
              --tag TAG         add a tag (repeat for more)
              --pin             pin the note
              --color COLOR     the note colour
              --file FILE       read the body from FILE (- is stdin)
              --markdown        the body is Markdown (CommonMark with GitHub's tables, task
                                lists, strikethrough and autolinks)
              --html            the body is HTML
              --text            the body is plain text: each paragraph (lines separated by a
                                blank line) becomes an HTML paragraph
            """),
        CommandSpec(
            name: "edit", usage: "edit NOTE [--title TITLE] [--folder FOLDER] [--file FILE] [--markdown|--html|--text]",
            summary: "Change a note's body, title or folder; opens $EDITOR on a terminal.",
            details: """
            With --file, the body is read from FILE (- is stdin). With only --title or --folder,
            the body is left alone. With no flags, the body is read from stdin when stdin is not
            a terminal (its format found as `new` finds it); on a terminal, $VISUAL or $EDITOR
            (else vi) opens on the note as Markdown and the note is saved if the file changed:
            only the blocks you changed are converted, every other block keeps its formatting
            exactly. Changes synced in while the editor is open are merged, not overwritten.
              --title TITLE     the new title
              --folder FOLDER   move to FOLDER (/ is Uncategorized)
              --file FILE       read the new body from FILE (- is stdin)
              --markdown        Markdown in (the editor's default)
              --html            the raw HTML body in and out
              --text            plain text in and out (the editor shows the note's text)
            """),
        CommandSpec(
            name: "tag", usage: "tag NOTE [+TAG|-TAG]...",
            summary: "Add (+TAG or TAG) and remove (-TAG) tags; with none, show the tags.",
            details: "Adds each +TAG (or bare TAG) and removes each -TAG. With no tags, prints the note's tags."),
        CommandSpec(
            name: "pin", usage: "pin NOTE [--off]",
            summary: "Pin a note (--off unpins it).",
            details: "  --off   unpin instead"),
        CommandSpec(
            name: "mv", usage: "mv NOTE FOLDER",
            summary: "Move a note to a folder (/ is Uncategorized).",
            details: "FOLDER is a path like Work/Projects, a folder id or a unique id prefix; / moves the note to Uncategorized."),
        CommandSpec(
            name: "trash", usage: "trash NOTE",
            summary: "Move a note to the Trash.",
            details: "Moves the note to the Trash; `notesctl restore NOTE` takes it back out."),
        CommandSpec(
            name: "restore", usage: "restore NOTE [--to REV]",
            summary: "Take a note out of the Trash, or bring back an old revision.",
            details: """
            Puts the note back in the folder it was in.
              --to REV   instead, write a new revision whose title, body, folder, tags, pin and
                         colour are those of revision REV (an id or a unique prefix, as
                         `notesctl log` prints them); the history keeps everything in between
                         and shows "restored from REV". Changes made elsewhere meanwhile merge.
            """),
        CommandSpec(
            name: "purge", usage: "purge NOTE [--yes]",
            summary: "Delete a note permanently, on every device.",
            details: """
            Deletes the note for good on every device. Asks for confirmation on a terminal.
            The delete covers what you were shown: if the note is changed on another device
            before it lands, the note is kept and you are told who changed it.
              --yes   do not ask (required when stdin is not a terminal)
            """),
        CommandSpec(
            name: "folders", usage: "folders",
            summary: "List folders with their note counts.",
            details: "Lists every folder by path, with the number of notes directly in it (Trash excluded)."),
        CommandSpec(
            name: "mkdir", usage: "mkdir PATH [-p|--parents]",
            summary: "Create a folder, e.g. Work/Projects.",
            details: """
            Creates the folder at PATH (names separated by /). The parent must exist.
              -p, --parents   also create missing parents; an existing folder is not an error
            """),
        CommandSpec(
            name: "rmdir", usage: "rmdir FOLDER [--force]",
            summary: "Delete a folder (refused while it holds notes or folders).",
            details: """
            Deletes FOLDER (path, id or id prefix).
              --force   delete it even when not empty: its notes go to Uncategorized and its
                        subfolders to the top level
            """),
        CommandSpec(
            name: "conflicts", usage: "conflicts",
            summary: "List conflict copies (other versions kept by a merge).",
            details: "Lists conflict copies with the note each is the other version of. Keep what you need, then `notesctl trash` the copy."),
        CommandSpec(
            name: "log", usage: "log NOTE [-p|--patch]",
            summary: "Show a note's revision history.",
            details: """
            Lists the note's revisions, newest first: when, which device, what changed.
              -p, --patch   also each revision's blocks added (+) and removed (-) against its
                            first parent
            """),
        CommandSpec(
            name: "backup", usage: "backup [FILE] [--keep N]",
            summary: "Save a consistent copy of the whole library.",
            details: """
            Copies the database while notesd keeps running and syncing, and checks the copy
            with integrity_check. FILE is created (mode 0600; never over an existing file);
            without FILE the copy goes to backups/ in notesd's data directory.
              --keep N   without FILE: keep only the newest N backups there
            Restore a copy with notesd stopped: notesd --restore-backup FILE
            """),
        CommandSpec(
            name: "sync", usage: "sync [--wait] [--timeout SECONDS]",
            summary: "Sync with every peer now; --wait until caught up.",
            details: """
            Asks every known peer to sync now and prints their state.
              --wait              return once every connected peer is caught up
              --timeout SECONDS   with --wait, give up after SECONDS (default 30)
            """),
        CommandSpec(
            name: "watch", usage: "watch",
            summary: "Print events (note changes, peers, sync progress) as they happen.",
            details: "Prints one line per event until interrupted; with --json, one JSON object per line."),
        CommandSpec(
            name: "export", usage: "export DIR [--markdown] [--force]",
            summary: "Write every note (not in the Trash) to files under DIR.",
            details: """
            Writes one file per note, named after its title, with folders as subdirectories.
            An existing file with the same content is left alone; a different one is an error.
              --markdown   write .md files (front matter with the title, tags, times, pin,
                           colour, folder and id, then the Markdown) instead of .html
              --force      overwrite existing files that differ
            """),
        CommandSpec(
            name: "import", usage: "import DIR",
            summary: "Create notes from the .md, .markdown, .html, .htm, .txt and .enex files under DIR.",
            details: """
            Reads DIR recursively (hidden files skipped); subdirectories become folders, created
            when missing. Markdown keeps its structure (headings, lists, checklists, code,
            quotes, tables); its front matter gives the title, tags, times, pin, colour and
            folder. HTML keeps its markup; .txt is plain text. The title is the front matter's
            or HTML <title>, else the first heading (a first line `# Title` in Markdown), else
            the file name. An Evernote .enex becomes a folder named after the file. Files that
            cannot be imported (binary, not UTF-8, over 8 MB, malformed front matter or .enex)
            are named with the reason and the rest imported; the exit status is then 1.
            Importing twice creates the notes twice.
            """),
        CommandSpec(
            name: "help", usage: "help [COMMAND]",
            summary: "Show the commands, or one command's usage.",
            details: "With COMMAND, shows its usage and options."),
        CommandSpec(
            name: "search", usage: "search QUERY... [--folder FOLDER] [--tag TAG] [--limit N]",
            summary: "Find notes by the words in their title or body, best match first.",
            details: """
            Every word must match, each also as the start of a longer word (quin finds
            quinces); case and accents are ignored. Notes in the Trash are not searched.
            Prints each hit with the words around the match.
              --folder FOLDER   only notes directly in FOLDER (/ is Uncategorized)
              --tag TAG         only notes tagged TAG
              --limit N         at most N hits (1-500, default 50)
            """),
        CommandSpec(
            name: "ui", usage: "ui [--no-open | --sessions | --logout-all]",
            summary: "Open the web app: print a one-time sign-in link (valid 2 minutes).",
            details: """
            Asks notesd for a one-time sign-in link, prints it, and opens it with xdg-open
            when a display is available ($DISPLAY or $WAYLAND_DISPLAY). The link works once;
            the browser then stays signed in until it is unused for 30 days.
              --no-open      only print the link
              --sessions     list the signed-in browsers
              --logout-all   sign every browser out
            """),
    ]

    /// `notesctl help`: the usage, every command with its summary, and the global options.
    static var overview: String {
        let width = all.map(\.name.count).max() ?? 0
        let commands = all.map { "  " + $0.name.padding(toLength: width + 2, withPad: " ", startingAt: 0) + $0.summary }
        return """
        notesctl — control notesd, the peer-to-peer notes daemon

        usage: notesctl [--socket PATH] [--json] COMMAND [ARGS]

        commands:
        \(commands.joined(separator: "\n"))

        options (every command):
          --socket PATH   notesd's control socket (default: \(ControlPaths.defaultSocketPath()))
          --json          print the result as JSON (stable keys) instead of a table
          --help, -h      show help (`notesctl COMMAND --help` for one command)
          --version       show the version

        NOTE is a note id or a unique prefix of one (the short id `notesctl ls` shows).
        Exit status: 0 ok, 1 failed, 2 notesd unreachable, 64 usage error.
        """
    }

    /// `notesctl help COMMAND`.
    var text: String {
        """
        usage: notesctl \(usage)

        \(summary)

        \(details)
        """
    }
}
