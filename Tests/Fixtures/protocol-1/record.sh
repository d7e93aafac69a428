#!/bin/sh
# Records the golden transcripts of sync protocol 1 (Tests/PeerTests/ProtocolOneReplayTests)
# from release 0.1.0, commit 30d5e97. Needs a checkout of that commit OUTSIDE this repository:
#   git worktree add /tmp/r01 30d5e97
#   Tests/Fixtures/protocol-1/record.sh /tmp/r01 Tests/Fixtures/protocol-1
# It adds Recorder/main.swift to that checkout as an executable target compiled against the
# release's own Peer module, builds it and runs it: two replicas of that release sync through
# its SyncSession, in memory, in virtual time, with seeded randomness (so a second run gives
# the same files). Four sessions: initial-sync, live-edits, conflict, removal. For each it
# writes NAME.transcript (every frame's plaintext, who sent it, when), the databases of the
# sides the replay plays (NAME.alpha.db / NAME.bravo.db, as they were when the session began)
# and NAME.SIDE.state (what that side held after the session).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
release=$(cd "$1" && pwd)
out=$2
[ "$(git -C "$release" rev-parse --short=7 HEAD)" = 30d5e97 ] || { echo "$release is not a checkout of 30d5e97" >&2; exit 1; }
mkdir -p "$release/Sources/protocol1-recorder" "$out"
cp "$here/Recorder/main.swift" "$release/Sources/protocol1-recorder/main.swift"
if ! grep -q protocol1-recorder "$release/Package.swift"; then
    python3 - "$release/Package.swift" <<'PY'
import sys
path = sys.argv[1]
text = open(path).read()
anchor = "        // Helpers shared by the test targets"
target = '        .executableTarget(name: "protocol1-recorder", dependencies: ["Peer", "Merge"]),\n'
assert anchor in text, "Package.swift of 30d5e97 changed shape"
open(path, "w").write(text.replace(anchor, target + anchor, 1))
PY
fi
(cd "$release" && swift build --product protocol1-recorder)
"$release/.build/debug/protocol1-recorder" "$out"
