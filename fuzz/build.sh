#!/bin/sh
# Builds the libFuzzer targets into fuzz/out/ by compiling Swift sources directly with swiftc
# (SwiftPM cannot build fuzzers). Each target is one module: its harness, the shared support
# file and the library sources it exercises.
#
#   fuzz/build.sh [TARGET...]          build the named targets (default: all)
#   fuzz/build.sh --seeds [TARGET...]  build, then rewrite fuzz/corpus/TARGET/ from the
#                                      target's own fixtures (real handshake and frame bytes)
#
# Then run one: fuzz/run.sh TARGET RUNS
set -eu
cd "$(dirname "$0")/.."

# Every target, one per line: its name, then the Swift sources it compiles (globs relative to
# the repository root) into one module. The Merge and Control modules are built first
# (instrumented, as static libraries), so sources may `import Merge` and `import Control`; add
# a target here and a harness under fuzz/targets/ to fuzz something new.
SYNC_SOURCES='Sources/Peer/Sync/Frame.swift Sources/Peer/Sync/HouseholdKeys.swift Sources/Peer/Sync/EntryPayload.swift Sources/Peer/Sync/BodyDelta.swift Sources/Peer/Store/Revision.swift Sources/Peer/Store/Versioning.swift'
TARGETS="
handshake  fuzz/targets/handshake.swift fuzz/targets/FuzzSupport.swift Sources/Peer/Channel/*.swift
transport  fuzz/targets/transport.swift fuzz/targets/FuzzSupport.swift Sources/Peer/Channel/*.swift
frames     fuzz/targets/frames.swift fuzz/targets/FuzzSupport.swift Sources/Peer/Channel/Sodium.swift $SYNC_SOURCES
web        fuzz/targets/web.swift fuzz/targets/FuzzSupport.swift Sources/Peer/Channel/Sodium.swift Sources/Web/HTTP/*.swift
"

SWIFTC=${SWIFTC:-swiftc}
write_seeds=no
if [ "${1:-}" = "--seeds" ]; then write_seeds=yes; shift; fi
wanted="$*"
[ -n "$wanted" ] || wanted=$(echo "$TARGETS" | awk 'NF { print $1 }')

mkdir -p fuzz/out/modules
if [ ! -f fuzz/out/libMerge.a ] || [ -n "$(find Sources/Merge -name '*.swift' -newer fuzz/out/libMerge.a)" ]; then
    echo "== building fuzz/out/libMerge.a"
    # shellcheck disable=SC2046 # the file list is meant to split
    "$SWIFTC" -swift-version 6 -parse-as-library -sanitize=fuzzer,address -O -g -emit-library -static -emit-module \
        -module-name Merge -emit-module-path fuzz/out/modules/Merge.swiftmodule -o fuzz/out/libMerge.a \
        $(find Sources/Merge -name '*.swift' | sort)
fi
if [ ! -f fuzz/out/libControl.a ] || [ -n "$(find Sources/Control -name '*.swift' -newer fuzz/out/libControl.a)" ]; then
    echo "== building fuzz/out/libControl.a"
    # shellcheck disable=SC2046 # the file list is meant to split
    "$SWIFTC" -swift-version 6 -parse-as-library -sanitize=fuzzer,address -O -g -emit-library -static -emit-module \
        -module-name Control -emit-module-path fuzz/out/modules/Control.swiftmodule -o fuzz/out/libControl.a \
        $(find Sources/Control -name '*.swift' | sort)
fi
for target in $wanted; do
    sources=$(echo "$TARGETS" | awk -v name="$target" '$1 == name { $1 = ""; print }')
    if [ -z "$sources" ]; then
        echo "fuzz/build.sh: unknown target '$target'; known: $(echo "$TARGETS" | awk 'NF { printf "%s ", $1 }')" >&2
        exit 64
    fi
    echo "== building fuzz/out/$target"
    # shellcheck disable=SC2086 # the source list is meant to split and glob
    "$SWIFTC" -swift-version 6 -parse-as-library -sanitize=fuzzer,address -O -g \
        -use-ld=lld -module-name NotesdFuzz -I Sources/CSodium -I fuzz/out/modules -lsodium fuzz/out/libMerge.a fuzz/out/libControl.a \
        -o "fuzz/out/$target" $sources
    if [ "$write_seeds" = yes ]; then
        rm -rf "fuzz/corpus/$target" && mkdir -p "fuzz/corpus/$target"
        empty=$(mktemp)
        NOTESD_FUZZ_WRITE_SEEDS="fuzz/corpus/$target" "fuzz/out/$target" -runs=1 "$empty" >/dev/null 2>&1
        rm -f "$empty"
        echo "   seeds: $(ls "fuzz/corpus/$target" | tr '\n' ' ')"
    fi
done
