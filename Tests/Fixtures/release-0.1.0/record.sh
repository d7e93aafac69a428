#!/bin/sh
# Records the databases of release 0.1.0 (commit 30d5e97, protocol 1) that every later
# version must open with every note, revision and device intact (Tests/EndToEndTests/
# ReleaseFixtureTests). Run from a checkout of 30d5e97 after `swift build`:
#   Tests/Fixtures/release-0.1.0/record.sh .build/debug OUTPUT_DIR
# Three devices on loopback are paired by invite and join; they write notes in folders with
# tags, pins, colours and checklists, edit them (several revisions, edits from two devices),
# make a conflict while apart (a conflict copy), trash one note and purge another (a
# tombstone), and alpha removes charlie. For alpha and bravo it keeps the data directory
# (database checkpointed into one file, keys) and what that release's notesctl answered
# about it: `ls`, `ls --trash`, `show --html` and `log` of every note, `folders`, `devices`.
set -eu
bin=$(cd "$1" && pwd)
out=$2
work=$(mktemp -d /tmp/notesd-fixture-XXXXXX)
trap 'for p in $work/*.pid; do [ -f "$p" ] && kill "$(cat "$p")" 2>/dev/null; done; sleep 1; rm -rf "$work"' EXIT

port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
start() { # name port
    "$bin/notesd" --data-dir "$work/$1" --socket "$work/$1.sock" --listen "127.0.0.1:$2" --name "$1" --no-mdns \
        --log-level debug >>"$work/$1.log" 2>&1 &
    echo $! >"$work/$1.pid"
    i=0
    until "$bin/notesctl" --socket "$work/$1.sock" status >/dev/null 2>&1; do
        i=$((i + 1)); [ $i -lt 300 ] || { echo "$1 did not start" >&2; exit 1; }; sleep 0.1
    done
}
stop() { kill "$(cat "$work/$1.pid")"; while kill -0 "$(cat "$work/$1.pid")" 2>/dev/null; do sleep 0.1; done; rm "$work/$1.pid"; }
ctl() { name=$1; shift; "$bin/notesctl" --socket "$work/$name.sock" "$@"; }
id_of() { ctl "$1" --json ls | python3 -c "import json,sys; print(next(n['id'] for n in json.load(sys.stdin) if n['title']=='$2'))"; }

pa=$(port); pb=$(port); pc=$(port)
start alpha "$pa"; start bravo "$pb"; start charlie "$pc"
code=$(ctl alpha --json invite | python3 -c 'import json,sys; print(json.load(sys.stdin)["code"])')
ctl bravo join "$code" --address "127.0.0.1:$pa" >/dev/null
code=$(ctl alpha --json invite | python3 -c 'import json,sys; print(json.load(sys.stdin)["code"])')
ctl charlie join "$code" --address "127.0.0.1:$pa" >/dev/null

ctl alpha mkdir -p Work/Projects >/dev/null
ctl alpha mkdir Home >/dev/null
printf '<h1>Groceries</h1>\n<ul data-type="checklist"><li data-checked="true">eggs</li><li data-checked="false">milk</li></ul>\n<p>From the <b>market</b>, not the shop.</p>' |
    ctl alpha new --title Groceries --folder Home --tag home --tag weekly --pin --color yellow >/dev/null
printf '<h2>Plan</h2>\n<p>First step.</p>\n<ol><li>design</li><li>build</li></ol>\n<pre><code>make test</code></pre>' |
    ctl alpha new --title "Project plan" --folder Work/Projects --tag work >/dev/null
printf '<p>Leave Friday at six.</p>\n<blockquote><p>Pack light.</p></blockquote>\n<hr>\n<p>Passport.</p>' |
    ctl alpha new --title Trip >/dev/null
printf '<p>An old idea.</p>' | ctl alpha new --title Scratch >/dev/null
printf '<p>To be deleted for good.</p>' | ctl alpha new --title Gone >/dev/null
ctl alpha sync --wait --timeout 60 >/dev/null

plan=$(id_of alpha "Project plan")
printf '<h2>Plan</h2>\n<p>First step, agreed.</p>\n<ol><li>design</li><li>build</li></ol>\n<pre><code>make test</code></pre>' | ctl alpha edit "$plan" >/dev/null
ctl alpha sync --wait --timeout 60 >/dev/null
printf '<h2>Plan</h2>\n<p>First step, agreed.</p>\n<ol><li>design</li><li>build</li><li>ship</li></ol>\n<pre><code>make test</code></pre>' | ctl bravo edit "$plan" >/dev/null
ctl bravo tag "$plan" +release >/dev/null
ctl bravo sync --wait --timeout 60 >/dev/null
ctl alpha sync --wait --timeout 60 >/dev/null

# A conflict: the same paragraph changed on alpha and on bravo while they are apart.
trip=$(id_of alpha Trip)
stop bravo
printf '<p>Leave Friday at five.</p>\n<blockquote><p>Pack light.</p></blockquote>\n<hr>\n<p>Passport.</p>' | ctl alpha edit "$trip" >/dev/null
stop alpha
start bravo "$pb"
printf '<p>Leave Saturday at six.</p>\n<blockquote><p>Pack light.</p></blockquote>\n<hr>\n<p>Passport.</p>' | ctl bravo edit "$trip" >/dev/null
start alpha "$pa"
ctl alpha connect "127.0.0.1:$pb" >/dev/null 2>&1 || true
ctl alpha sync --wait --timeout 60 >/dev/null
ctl bravo sync --wait --timeout 60 >/dev/null

ctl alpha trash "$(id_of alpha Scratch)" >/dev/null
ctl alpha purge "$(id_of alpha Gone)" --yes >/dev/null
ctl alpha devices remove charlie >/dev/null
ctl alpha sync --wait --timeout 60 >/dev/null
ctl bravo sync --wait --timeout 60 >/dev/null

mkdir -p "$out"
for name in alpha bravo; do
    dir=$out/$name
    rm -rf "$dir"; mkdir -p "$dir/data" "$dir/answers"
    ctl "$name" --json ls >"$dir/answers/ls.json"
    ctl "$name" --json ls --trash >"$dir/answers/ls-trash.json"
    ctl "$name" --json folders >"$dir/answers/folders.json"
    ctl "$name" --json devices >"$dir/answers/devices.json"
    python3 - "$dir/answers" <<'PY'
import json, sys, os
d = sys.argv[1]
ids = [n["id"] for f in ("ls.json", "ls-trash.json") for n in json.load(open(os.path.join(d, f)))]
open(os.path.join(d, "ids.txt"), "w").write("\n".join(ids) + "\n")
PY
    while read -r id; do
        ctl "$name" --json show "$id" --html >"$dir/answers/show-$id.json"
        ctl "$name" --json log "$id" >"$dir/answers/log-$id.json"
    done <"$dir/answers/ids.txt"
    rm "$dir/answers/ids.txt"
    stop "$name"
    sqlite3 "$work/$name/notes.db" 'PRAGMA wal_checkpoint(TRUNCATE);' >/dev/null
    cp "$work/$name/notes.db" "$work/$name/device.key" "$work/$name/household.key" "$dir/data/"
done
stop charlie
echo "recorded alpha and bravo under $out"
