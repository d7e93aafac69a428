# bash completion for notesctl.
# Generated from `notesctl help` by Tests/ControlTests/ShellCompletions.swift; do not edit by
# hand (NOTES_UPDATE_GENERATED=1 swift test --filter ShellCompletionTests rewrites it).

_notesctl_values() {
    local kind=$1
    shift
    case $kind in
        note) { notesctl "$@" --json ls; notesctl "$@" --json ls --trash; } 2>/dev/null | sed -n 's/^ *"short" *: *"\([^"]*\)".*/\1/p' ;;
        folder) notesctl "$@" --json folders 2>/dev/null | sed -n 's/^ *"path" *: *"\([^"]*\)".*/\1/p' ;;
        device) notesctl "$@" --json devices 2>/dev/null | sed -n 's/^ *"name" *: *"\([^"]*\)".*/\1/p' ;;
        command) printf '%s\n' status devices invite join connect ls show new edit tag pin mv trash restore purge folders mkdir rmdir conflicts log backup sync watch export import help search ui ;;
    esac
}

# The options of command $1.
_notesctl_options() {
    case $1 in
        join) echo '--address' ;;
        ls) echo '--folder --tag --trash --conflicts --pinned --search' ;;
        show) echo '--at --html --text --markdown' ;;
        new) echo '--title --folder --tag --pin --color --file --markdown --html --text' ;;
        edit) echo '--title --folder --file --markdown --html --text' ;;
        pin) echo '--off' ;;
        restore) echo '--to' ;;
        purge) echo '--yes' ;;
        mkdir) echo '-p --parents' ;;
        rmdir) echo '--force' ;;
        log) echo '-p --patch' ;;
        backup) echo '--keep' ;;
        sync) echo '--wait --timeout' ;;
        export) echo '--markdown --force' ;;
        search) echo '--folder --tag --limit' ;;
        ui) echo '--no-open --sessions --logout-all' ;;
    esac
}

# The options of command $1 that take a value.
_notesctl_value_options() {
    case $1 in
        join) echo '--address' ;;
        ls) echo '--folder --tag --search' ;;
        show) echo '--at' ;;
        new) echo '--title --folder --tag --color --file' ;;
        edit) echo '--title --folder --file' ;;
        restore) echo '--to' ;;
        backup) echo '--keep' ;;
        sync) echo '--timeout' ;;
        search) echo '--folder --tag --limit' ;;
    esac
}

# What the value of option $2 of command $1 names.
_notesctl_value_kind() {
    case "$1 $2" in
        "join --address") echo 'text' ;;
        "ls --folder") echo 'folder' ;;
        "ls --tag") echo 'text' ;;
        "ls --search") echo 'text' ;;
        "show --at") echo 'text' ;;
        "new --title") echo 'text' ;;
        "new --folder") echo 'folder' ;;
        "new --tag") echo 'text' ;;
        "new --color") echo 'text' ;;
        "new --file") echo 'file' ;;
        "edit --title") echo 'text' ;;
        "edit --folder") echo 'folder' ;;
        "edit --file") echo 'file' ;;
        "restore --to") echo 'text' ;;
        "backup --keep") echo 'text' ;;
        "sync --timeout") echo 'text' ;;
        "search --folder") echo 'folder' ;;
        "search --tag") echo 'text' ;;
        "search --limit") echo 'text' ;;
    esac
}

# What the positional argument number $2 (from 0) of command $1 names.
_notesctl_positional() {
    case "$1 $2" in
        "devices 0") echo 'words:remove' ;;
        "devices 1") echo 'device' ;;
        "join 0") echo 'text' ;;
        "connect 0") echo 'text' ;;
        "show 0") echo 'note' ;;
        "new 0") echo 'file' ;;
        "edit 0") echo 'note' ;;
        "tag 0") echo 'note' ;;
        "tag 1") echo 'text' ;;
        "tag 2") echo 'text' ;;
        "pin 0") echo 'note' ;;
        "mv 0") echo 'note' ;;
        "mv 1") echo 'folder' ;;
        "trash 0") echo 'note' ;;
        "restore 0") echo 'note' ;;
        "purge 0") echo 'note' ;;
        "mkdir 0") echo 'folder' ;;
        "rmdir 0") echo 'folder' ;;
        "log 0") echo 'note' ;;
        "backup 0") echo 'file' ;;
        "export 0") echo 'directory' ;;
        "import 0") echo 'directory' ;;
        "help 0") echo 'command' ;;
        "search 0") echo 'text' ;;
    esac
}

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

# Offers the values of kind $1 that start with $2.
_notesctl_offer() {
    local IFS=$'\n'
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
        COMPREPLY=($(compgen -W "$(_notesctl_options "$command") --socket --json --help -h --version" -- "$cur"))
    elif [ -z "$command" ]; then
        _notesctl_offer command "$cur"
    else
        _notesctl_offer "$(_notesctl_positional "$command" "$position")" "$cur"
    fi
}

complete -F _notesctl notesctl
