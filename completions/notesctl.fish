# fish completion for notesctl.
# Generated from `notesctl help` by Tests/ControlTests/ShellCompletions.swift; do not edit by
# hand (NOTES_UPDATE_GENERATED=1 swift test --filter ShellCompletionTests rewrites it).

# The command on the line, or nothing.
function __notesctl_command
    set -l words (commandline -opc)
    set -e words[1]
    set -l skip 0
    for word in $words
        if test $skip = 1
            set skip 0
        else if test $word = --socket
            set skip 1
        else if not string match -q -- '-*' $word
            echo $word
            return
        end
    end
end

# True when the argument being typed is positional number $argv[1] (from 0) of the command.
function __notesctl_at
    set -l words (commandline -opc)
    set -e words[1]
    set -l command (__notesctl_command)
    set -l values
    switch $command
        case join
            set values --address
        case ls
            set values --folder --tag --search
        case show
            set values --at
        case new
            set values --title --folder --tag --color --file
        case edit
            set values --title --folder --file
        case restore
            set values --to
        case backup
            set values --keep
        case sync
            set values --timeout
        case search
            set values --folder --tag --limit
    end
    set -l position -1
    set -l skip 0
    for word in $words
        if test $skip = 1
            set skip 0
        else if test $word = --socket; or contains -- $word $values
            set skip 1
        else if not string match -q -- '-*' $word
            set position (math $position + 1)
        end
    end
    test $position -eq $argv[1]
end

# Notes, folders or devices, asked of the running notesd (with the --socket on the line).
function __notesctl_values
    set -l socket
    set -l words (commandline -opc)
    if set -l index (contains -i -- --socket $words)
        set socket --socket $words[(math $index + 1)]
    end
    switch $argv[1]
        case note
            begin; notesctl $socket --json ls; notesctl $socket --json ls --trash; end 2>/dev/null | string replace -rf '^ *"short" *: *"([^"]*)".*' '$1'
        case folder
            notesctl $socket --json folders 2>/dev/null | string replace -rf '^ *"path" *: *"([^"]*)".*' '$1'
        case device
            notesctl $socket --json devices 2>/dev/null | string replace -rf '^ *"name" *: *"([^"]*)".*' '$1'
    end
end

complete -c notesctl -f
complete -c notesctl -l socket -r -F -d 'notesd'\''s control socket'
complete -c notesctl -l json -d 'print the result as JSON'
complete -c notesctl -l help -s h -d 'show help'
complete -c notesctl -l version -d 'show the version'
complete -c notesctl -n '__fish_is_nth_token 1' -a status -d 'Show this device, its household, its peers and sync counters.'
complete -c notesctl -n '__fish_is_nth_token 1' -a devices -d 'List the household'\''s devices, or remove one.'
complete -c notesctl -n '__fish_is_nth_token 1' -a invite -d 'Print a one-time code for adding a new device (valid 10 minutes).'
complete -c notesctl -n '__fish_is_nth_token 1' -a join -d 'Join the household of the device that printed CODE.'
complete -c notesctl -n '__fish_is_nth_token 1' -a connect -d 'Connect to a peer at an address (when discovery cannot find it).'
complete -c notesctl -n '__fish_is_nth_token 1' -a ls -d 'List notes, pinned first, then newest first.'
complete -c notesctl -n '__fish_is_nth_token 1' -a show -d 'Print a note.'
complete -c notesctl -n '__fish_is_nth_token 1' -a new -d 'Create a note from a file or stdin.'
complete -c notesctl -n '__fish_is_nth_token 1' -a edit -d 'Change a note'\''s body, title or folder; opens $EDITOR on a terminal.'
complete -c notesctl -n '__fish_is_nth_token 1' -a tag -d 'Add (+TAG or TAG) and remove (-TAG) tags; with none, show the tags.'
complete -c notesctl -n '__fish_is_nth_token 1' -a pin -d 'Pin a note (--off unpins it).'
complete -c notesctl -n '__fish_is_nth_token 1' -a mv -d 'Move a note to a folder (/ is Uncategorized).'
complete -c notesctl -n '__fish_is_nth_token 1' -a trash -d 'Move a note to the Trash.'
complete -c notesctl -n '__fish_is_nth_token 1' -a restore -d 'Take a note out of the Trash, or bring back an old revision.'
complete -c notesctl -n '__fish_is_nth_token 1' -a purge -d 'Delete a note permanently, on every device.'
complete -c notesctl -n '__fish_is_nth_token 1' -a folders -d 'List folders with their note counts.'
complete -c notesctl -n '__fish_is_nth_token 1' -a mkdir -d 'Create a folder, e.g. Work/Projects.'
complete -c notesctl -n '__fish_is_nth_token 1' -a rmdir -d 'Delete a folder (refused while it holds notes or folders).'
complete -c notesctl -n '__fish_is_nth_token 1' -a conflicts -d 'List conflict copies (other versions kept by a merge).'
complete -c notesctl -n '__fish_is_nth_token 1' -a log -d 'Show a note'\''s revision history.'
complete -c notesctl -n '__fish_is_nth_token 1' -a backup -d 'Save a consistent copy of the whole library.'
complete -c notesctl -n '__fish_is_nth_token 1' -a sync -d 'Sync with every peer now; --wait until caught up.'
complete -c notesctl -n '__fish_is_nth_token 1' -a watch -d 'Print events (note changes, peers, sync progress) as they happen.'
complete -c notesctl -n '__fish_is_nth_token 1' -a export -d 'Write every note (not in the Trash) to files under DIR.'
complete -c notesctl -n '__fish_is_nth_token 1' -a import -d 'Create notes from the .md, .markdown, .html, .htm, .txt and .enex files under DIR.'
complete -c notesctl -n '__fish_is_nth_token 1' -a help -d 'Show the commands, or one command'\''s usage.'
complete -c notesctl -n '__fish_is_nth_token 1' -a search -d 'Find notes by the words in their title or body, best match first.'
complete -c notesctl -n '__fish_is_nth_token 1' -a ui -d 'Open the web app: print a one-time sign-in link (valid 2 minutes).'
complete -c notesctl -n '__fish_seen_subcommand_from devices; and __notesctl_at 0' -a 'remove'
complete -c notesctl -n '__fish_seen_subcommand_from devices; and __notesctl_at 1' -x -a '(__notesctl_values device)'
complete -c notesctl -n '__fish_seen_subcommand_from join' -l address -x
complete -c notesctl -n '__fish_seen_subcommand_from join; and __notesctl_at 0' -x
complete -c notesctl -n '__fish_seen_subcommand_from connect; and __notesctl_at 0' -x
complete -c notesctl -n '__fish_seen_subcommand_from ls' -l folder -x -a '(__notesctl_values folder)'
complete -c notesctl -n '__fish_seen_subcommand_from ls' -l tag -x
complete -c notesctl -n '__fish_seen_subcommand_from ls' -l trash
complete -c notesctl -n '__fish_seen_subcommand_from ls' -l conflicts
complete -c notesctl -n '__fish_seen_subcommand_from ls' -l pinned
complete -c notesctl -n '__fish_seen_subcommand_from ls' -l search -x
complete -c notesctl -n '__fish_seen_subcommand_from show' -l at -x
complete -c notesctl -n '__fish_seen_subcommand_from show' -l html
complete -c notesctl -n '__fish_seen_subcommand_from show' -l text
complete -c notesctl -n '__fish_seen_subcommand_from show' -l markdown
complete -c notesctl -n '__fish_seen_subcommand_from show; and __notesctl_at 0' -x -a '(__notesctl_values note)'
complete -c notesctl -n '__fish_seen_subcommand_from new' -l title -x
complete -c notesctl -n '__fish_seen_subcommand_from new' -l folder -x -a '(__notesctl_values folder)'
complete -c notesctl -n '__fish_seen_subcommand_from new' -l tag -x
complete -c notesctl -n '__fish_seen_subcommand_from new' -l pin
complete -c notesctl -n '__fish_seen_subcommand_from new' -l color -x
complete -c notesctl -n '__fish_seen_subcommand_from new' -l file -r -F
complete -c notesctl -n '__fish_seen_subcommand_from new' -l markdown
complete -c notesctl -n '__fish_seen_subcommand_from new' -l html
complete -c notesctl -n '__fish_seen_subcommand_from new' -l text
complete -c notesctl -n '__fish_seen_subcommand_from new; and __notesctl_at 0' -r -F
complete -c notesctl -n '__fish_seen_subcommand_from edit' -l title -x
complete -c notesctl -n '__fish_seen_subcommand_from edit' -l folder -x -a '(__notesctl_values folder)'
complete -c notesctl -n '__fish_seen_subcommand_from edit' -l file -r -F
complete -c notesctl -n '__fish_seen_subcommand_from edit' -l markdown
complete -c notesctl -n '__fish_seen_subcommand_from edit' -l html
complete -c notesctl -n '__fish_seen_subcommand_from edit' -l text
complete -c notesctl -n '__fish_seen_subcommand_from edit; and __notesctl_at 0' -x -a '(__notesctl_values note)'
complete -c notesctl -n '__fish_seen_subcommand_from tag; and __notesctl_at 0' -x -a '(__notesctl_values note)'
complete -c notesctl -n '__fish_seen_subcommand_from tag; and __notesctl_at 1' -x
complete -c notesctl -n '__fish_seen_subcommand_from tag; and __notesctl_at 2' -x
complete -c notesctl -n '__fish_seen_subcommand_from pin' -l off
complete -c notesctl -n '__fish_seen_subcommand_from pin; and __notesctl_at 0' -x -a '(__notesctl_values note)'
complete -c notesctl -n '__fish_seen_subcommand_from mv; and __notesctl_at 0' -x -a '(__notesctl_values note)'
complete -c notesctl -n '__fish_seen_subcommand_from mv; and __notesctl_at 1' -x -a '(__notesctl_values folder)'
complete -c notesctl -n '__fish_seen_subcommand_from trash; and __notesctl_at 0' -x -a '(__notesctl_values note)'
complete -c notesctl -n '__fish_seen_subcommand_from restore' -l to -x
complete -c notesctl -n '__fish_seen_subcommand_from restore; and __notesctl_at 0' -x -a '(__notesctl_values note)'
complete -c notesctl -n '__fish_seen_subcommand_from purge' -l yes
complete -c notesctl -n '__fish_seen_subcommand_from purge; and __notesctl_at 0' -x -a '(__notesctl_values note)'
complete -c notesctl -n '__fish_seen_subcommand_from mkdir' -s p
complete -c notesctl -n '__fish_seen_subcommand_from mkdir' -l parents
complete -c notesctl -n '__fish_seen_subcommand_from mkdir; and __notesctl_at 0' -x -a '(__notesctl_values folder)'
complete -c notesctl -n '__fish_seen_subcommand_from rmdir' -l force
complete -c notesctl -n '__fish_seen_subcommand_from rmdir; and __notesctl_at 0' -x -a '(__notesctl_values folder)'
complete -c notesctl -n '__fish_seen_subcommand_from log' -s p
complete -c notesctl -n '__fish_seen_subcommand_from log' -l patch
complete -c notesctl -n '__fish_seen_subcommand_from log; and __notesctl_at 0' -x -a '(__notesctl_values note)'
complete -c notesctl -n '__fish_seen_subcommand_from backup' -l keep -x
complete -c notesctl -n '__fish_seen_subcommand_from backup; and __notesctl_at 0' -r -F
complete -c notesctl -n '__fish_seen_subcommand_from sync' -l wait
complete -c notesctl -n '__fish_seen_subcommand_from sync' -l timeout -x
complete -c notesctl -n '__fish_seen_subcommand_from export' -l markdown
complete -c notesctl -n '__fish_seen_subcommand_from export' -l force
complete -c notesctl -n '__fish_seen_subcommand_from export; and __notesctl_at 0' -r -F
complete -c notesctl -n '__fish_seen_subcommand_from import; and __notesctl_at 0' -r -F
complete -c notesctl -n '__fish_seen_subcommand_from help; and __notesctl_at 0' -x -a 'status devices invite join connect ls show new edit tag pin mv trash restore purge folders mkdir rmdir conflicts log backup sync watch export import help search ui'
complete -c notesctl -n '__fish_seen_subcommand_from search' -l folder -x -a '(__notesctl_values folder)'
complete -c notesctl -n '__fish_seen_subcommand_from search' -l tag -x
complete -c notesctl -n '__fish_seen_subcommand_from search' -l limit -x
complete -c notesctl -n '__fish_seen_subcommand_from search; and __notesctl_at 0' -x
complete -c notesctl -n '__fish_seen_subcommand_from ui' -l no-open
complete -c notesctl -n '__fish_seen_subcommand_from ui' -l sessions
complete -c notesctl -n '__fish_seen_subcommand_from ui' -l logout-all
