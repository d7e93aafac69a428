import Foundation
@testable import notesctl

/// The shell completions in `completions/`, rendered from `CommandSpec` (the one source of
/// `notesctl`'s usage): every command, every option, and for each argument what it names —
/// notes, folders and devices are asked of the running daemon (`notesctl --json ls`, …).
enum ShellCompletions {
    /// What an argument or an option's value names.
    enum Kind: String {
        case note, folder, device, file, directory, command
        /// Free text (a title, a tag, a code, an address): nothing to offer.
        case text

        /// The kind of a placeholder in a usage line (`NOTE`, `FILE`, …).
        init(placeholder: String, ofOption: Bool) {
            switch placeholder {
            case "NOTE": self = .note
            case "FOLDER": self = .folder
            case "DEVICE": self = .device
            case "FILE": self = .file
            case "DIR": self = .directory
            case "COMMAND": self = .command
            // `mkdir PATH` is a folder path; `--socket PATH` is a file.
            case "PATH": self = ofOption ? .file : .folder
            default: self = .text
            }
        }
    }

    /// A positional argument: a placeholder's kind, or literal words (`devices remove`).
    enum Positional: Equatable {
        case kind(Kind)
        case words([String])
    }

    struct Command {
        let name: String
        let summary: String
        /// Every option, long and short spellings, in usage order.
        var options: [String] = []
        /// The options that take a value, and what it names.
        var values: [(option: String, kind: Kind)] = []
        var positionals: [Positional] = []
    }

    static let globalOptions = ["--socket", "--json", "--help", "-h", "--version"]

    static var commands: [Command] { CommandSpec.all.map(command) }

    /// Reads one command's usage line: `[`, `]`, `|` and `...` only group; `-x`/`--name`
    /// are options, an upper-case word after one is its value, other upper-case words and
    /// lower-case words are positionals (`+TAG|-TAG` is an argument, not an option).
    static func command(_ spec: CommandSpec) -> Command {
        var command = Command(name: spec.name, summary: spec.summary)
        let grouping = spec.usage.replacingOccurrences(of: "...", with: " ")
        let spaced = String(grouping.map { "[]|".contains($0) ? " " : $0 })
        var tokens = spaced.split(separator: " ").map(String.init).dropFirst()[...]
        while let token = tokens.popFirst() {
            if token.hasPrefix("-"), token.dropFirst().first.map({ $0 == "-" || $0.isLowercase }) == true {
                command.options.append(token)
                if let next = tokens.first, isPlaceholder(next) {
                    tokens.removeFirst()
                    command.values.append((token, Kind(placeholder: next, ofOption: true)))
                }
            } else if isPlaceholder(token) {
                command.positionals.append(.kind(Kind(placeholder: token, ofOption: false)))
            } else if token.first?.isLowercase == true {
                command.positionals.append(.words([token]))
            } else {
                // `+TAG`, `-TAG`: the arguments of `tag`, free text.
                command.positionals.append(.kind(.text))
            }
        }
        return command
    }

    private static func isPlaceholder(_ token: String) -> Bool {
        token.first?.isUppercase == true && token.allSatisfy { $0.isUppercase || $0 == ":" || $0 == "_" }
    }

    /// `words` quoted for a shell word list.
    private static func list(_ words: [String]) -> String { words.joined(separator: " ") }

    private static func singleQuoted(_ text: String) -> String { "'" + text.replacingOccurrences(of: "'", with: "'\\''") + "'" }

    private static let header = """
        Generated from `notesctl help` by Tests/ControlTests/ShellCompletions.swift; do not edit by
        hand (NOTES_UPDATE_GENERATED=1 swift test --filter ShellCompletionTests rewrites it).
        """

    /// `notesctl --json ls` and friends, read without a JSON parser: the pretty-printed answer
    /// has one key per line, so one `sed` takes the values of one key.
    private static let valuesFunction = """
        _notesctl_values() {
            local kind=$1
            shift
            case $kind in
                note) { notesctl "$@" --json ls; notesctl "$@" --json ls --trash; } 2>/dev/null | sed -n 's/^ *"short" *: *"\\([^"]*\\)".*/\\1/p' ;;
                folder) notesctl "$@" --json folders 2>/dev/null | sed -n 's/^ *"path" *: *"\\([^"]*\\)".*/\\1/p' ;;
                device) notesctl "$@" --json devices 2>/dev/null | sed -n 's/^ *"name" *: *"\\([^"]*\\)".*/\\1/p' ;;
                command) printf '%s\\n' \(list(CommandSpec.all.map(\.name))) ;;
            esac
        }
        """

    /// The per-command tables, as shell `case` functions both bash and zsh run.
    private static var tables: String {
        let all = commands
        func caseFunction(_ name: String, _ comment: String, _ arms: [(String, String)], subject: String = "$1") -> String {
            let body = arms.map { "        \($0.0)) echo \(singleQuoted($0.1)) ;;" }.joined(separator: "\n")
            return "# \(comment)\n\(name)() {\n    case \(subject) in\n\(body)\n    esac\n}"
        }
        let options = caseFunction(
            "_notesctl_options", "The options of command $1.",
            all.filter { !$0.options.isEmpty }.map { ($0.name, list($0.options)) })
        let valueOptions = caseFunction(
            "_notesctl_value_options", "The options of command $1 that take a value.",
            all.filter { !$0.values.isEmpty }.map { ($0.name, list($0.values.map(\.option))) })
        let valueKind = caseFunction(
            "_notesctl_value_kind", "What the value of option $2 of command $1 names.",
            all.flatMap { command in command.values.map { ("\"\(command.name) \($0.option)\"", $0.kind.rawValue) } },
            subject: "\"$1 $2\"")
        let positional = caseFunction(
            "_notesctl_positional", "What the positional argument number $2 (from 0) of command $1 names.",
            all.flatMap { command in
                command.positionals.enumerated().map { index, positional in
                    switch positional {
                    case .kind(let kind): ("\"\(command.name) \(index)\"", kind.rawValue)
                    case .words(let words): ("\"\(command.name) \(index)\"", "words:" + list(words))
                    }
                }
            },
            subject: "\"$1 $2\"")
        return [options, valueOptions, valueKind, positional].joined(separator: "\n\n")
    }

    /// Finds the command, the argument being completed and the `--socket` given, from the
    /// words before the cursor (in `$@`); sets `command`, `position`, `pending` (the option
    /// whose value is being typed) and `socket`.
    private static let scanFunction = """
        _notesctl_scan() {
            command= position=0 pending= socket=()
            local word values=
            while [ $# -gt 0 ]; do
                word=$1
                shift
                if [ -n "$pending" ]; then
                    [ "$pending" = --socket ] && socket=(--socket "$word")
                    pending=
                    continue
                fi
                case $word in
                    --socket) pending=--socket ;;
                    --*=*|-*) ;;
                    *)
                        if [ -z "$command" ]; then
                            command=$word
                            values=" $(_notesctl_value_options "$command") "
                        else
                            position=$((position + 1))
                        fi
                        continue ;;
                esac
                case $values in *" $word "*) pending=$word ;; esac
            done
        }
        """

    static var bash: String {
        """
        # bash completion for notesctl.
        \(header.split(separator: "\n").map { "# " + $0 }.joined(separator: "\n"))

        \(valuesFunction)

        \(tables)

        \(scanFunction)

        # Offers the values of kind $1 that start with $2.
        _notesctl_offer() {
            local IFS=$'\\n'
            case $1 in
                file) COMPREPLY=($(compgen -f -- "$2")); compopt -o filenames 2>/dev/null ;;
                directory) COMPREPLY=($(compgen -d -- "$2")); compopt -o filenames 2>/dev/null ;;
                words:*) IFS=' '; COMPREPLY=($(compgen -W "${1#words:}" -- "$2")) ;;
                note|folder|device|command) COMPREPLY=($(compgen -W "$(_notesctl_values "$1" "${socket[@]}")" -- "$2")) ;;
                *) COMPREPLY=() ;;
            esac
        }

        _notesctl() {
            local cur=${COMP_WORDS[COMP_CWORD]} command position pending socket
            _notesctl_scan "${COMP_WORDS[@]:1:COMP_CWORD-1}"
            if [ "$pending" = --socket ]; then
                _notesctl_offer file "$cur"
            elif [ -n "$pending" ]; then
                _notesctl_offer "$(_notesctl_value_kind "$command" "$pending")" "$cur"
            elif [[ $cur == -* ]]; then
                COMPREPLY=($(compgen -W "$(_notesctl_options "$command") \(list(globalOptions))" -- "$cur"))
            elif [ -z "$command" ]; then
                _notesctl_offer command "$cur"
            else
                _notesctl_offer "$(_notesctl_positional "$command" "$position")" "$cur"
            fi
        }

        complete -F _notesctl notesctl

        """
    }

    static var zsh: String {
        """
        #compdef notesctl
        # zsh completion for notesctl.
        \(header.split(separator: "\n").map { "# " + $0 }.joined(separator: "\n"))

        \(valuesFunction)

        \(tables)

        \(scanFunction)

        # Offers the values of kind $1.
        _notesctl_offer() {
            case $1 in
                file) _files ;;
                directory) _files -/ ;;
                words:*) compadd -- ${=${1#words:}} ;;
                note|folder|device|command) compadd -- ${(f)"$(_notesctl_values "$1" "${socket[@]}")"} ;;
            esac
        }

        _notesctl() {
            local command position pending
            local -a socket
            _notesctl_scan "${(@)words[2,CURRENT-1]}"
            if [[ $pending == --socket ]]; then
                _notesctl_offer file
            elif [[ -n $pending ]]; then
                _notesctl_offer "$(_notesctl_value_kind "$command" "$pending")"
            elif [[ $PREFIX == -* ]]; then
                compadd -- ${=$(_notesctl_options "$command")} \(list(globalOptions))
            elif [[ -z $command ]]; then
                local -a described
                described=(
        \(CommandSpec.all.map { "            \(singleQuoted("\($0.name):\($0.summary)"))" }.joined(separator: "\n"))
                )
                _describe command described
            else
                _notesctl_offer "$(_notesctl_positional "$command" "$position")"
            fi
        }

        if [[ $zsh_eval_context[-1] == loadautofunc ]]; then
            _notesctl "$@"
        else
            compdef _notesctl notesctl
        fi

        """
    }

    static var fish: String {
        var lines = [
            "# fish completion for notesctl.",
            header.split(separator: "\n").map { "# " + $0 }.joined(separator: "\n"),
            "",
            "# The command on the line, or nothing.",
            "function __notesctl_command",
            "    set -l words (commandline -opc)",
            "    set -e words[1]",
            "    set -l skip 0",
            "    for word in $words",
            "        if test $skip = 1",
            "            set skip 0",
            "        else if test $word = --socket",
            "            set skip 1",
            "        else if not string match -q -- '-*' $word",
            "            echo $word",
            "            return",
            "        end",
            "    end",
            "end",
            "",
            "# True when the argument being typed is positional number $argv[1] (from 0) of the command.",
            "function __notesctl_at",
            "    set -l words (commandline -opc)",
            "    set -e words[1]",
            "    set -l command (__notesctl_command)",
            "    set -l values",
            "    switch $command",
        ]
        for command in commands where !command.values.isEmpty {
            lines.append("        case \(command.name)")
            lines.append("            set values \(list(command.values.map(\.option)))")
        }
        lines += [
            "    end",
            "    set -l position -1",
            "    set -l skip 0",
            "    for word in $words",
            "        if test $skip = 1",
            "            set skip 0",
            "        else if test $word = --socket; or contains -- $word $values",
            "            set skip 1",
            "        else if not string match -q -- '-*' $word",
            "            set position (math $position + 1)",
            "        end",
            "    end",
            "    test $position -eq $argv[1]",
            "end",
            "",
            "# Notes, folders or devices, asked of the running notesd (with the --socket on the line).",
            "function __notesctl_values",
            "    set -l socket",
            "    set -l words (commandline -opc)",
            "    if set -l index (contains -i -- --socket $words)",
            "        set socket --socket $words[(math $index + 1)]",
            "    end",
            "    switch $argv[1]",
            "        case note",
            "            begin; notesctl $socket --json ls; notesctl $socket --json ls --trash; end 2>/dev/null | string replace -rf '^ *\"short\" *: *\"([^\"]*)\".*' '$1'",
            "        case folder",
            "            notesctl $socket --json folders 2>/dev/null | string replace -rf '^ *\"path\" *: *\"([^\"]*)\".*' '$1'",
            "        case device",
            "            notesctl $socket --json devices 2>/dev/null | string replace -rf '^ *\"name\" *: *\"([^\"]*)\".*' '$1'",
            "    end",
            "end",
            "",
            "complete -c notesctl -f",
            "complete -c notesctl -l socket -r -F -d \(singleQuoted("notesd's control socket"))",
            "complete -c notesctl -l json -d \(singleQuoted("print the result as JSON"))",
            "complete -c notesctl -l help -s h -d \(singleQuoted("show help"))",
            "complete -c notesctl -l version -d \(singleQuoted("show the version"))",
        ]
        for spec in CommandSpec.all {
            lines.append("complete -c notesctl -n '__fish_is_nth_token 1' -a \(spec.name) -d \(singleQuoted(spec.summary))")
        }
        for command in commands {
            let when = "__fish_seen_subcommand_from \(command.name)"
            for option in command.options {
                let spelling = option.hasPrefix("--") ? "-l \(option.dropFirst(2))" : "-s \(option.dropFirst())"
                let value = command.values.first { $0.option == option }?.kind
                lines.append("complete -c notesctl -n '\(when)' \(spelling)\(value.map { fishArguments($0) } ?? "")")
            }
            for (index, positional) in command.positionals.enumerated() {
                let arguments: String
                switch positional {
                case .words(let words): arguments = " -a \(singleQuoted(list(words)))"
                case .kind(let kind): arguments = fishArguments(kind)
                }
                guard !arguments.isEmpty else { continue }
                lines.append("complete -c notesctl -n '\(when); and __notesctl_at \(index)'\(arguments)")
            }
        }
        return lines.joined(separator: "\n") + "\n"
    }

    /// The `complete` arguments that offer values of `kind` (an option's `-r` included).
    private static func fishArguments(_ kind: Kind) -> String {
        switch kind {
        case .note, .folder, .device: " -x -a '(__notesctl_values \(kind.rawValue))'"
        case .command: " -x -a \(singleQuoted(list(CommandSpec.all.map(\.name))))"
        case .file, .directory: " -r -F"
        case .text: " -x"
        }
    }
}
