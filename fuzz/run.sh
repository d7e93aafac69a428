#!/bin/sh
# Runs one fuzz target built by fuzz/build.sh for RUNS executions.
#
#   fuzz/run.sh TARGET RUNS [libFuzzer options...]   e.g. fuzz/run.sh handshake 10000000
#
# New interesting inputs go to fuzz/out/corpus/TARGET/ (the seeds in fuzz/corpus/TARGET/ are
# read, never written); a crash is saved as fuzz/out/crash-TARGET-* and replays with
# fuzz/out/TARGET fuzz/out/crash-TARGET-<hash>.
set -eu
cd "$(dirname "$0")/.."
if [ $# -lt 2 ]; then
    echo "usage: fuzz/run.sh TARGET RUNS [libFuzzer options...]" >&2
    exit 64
fi
target=$1
runs=$2
shift 2
binary=fuzz/out/$target
if [ ! -x "$binary" ]; then
    echo "fuzz/run.sh: $binary is not built; run: fuzz/build.sh $target" >&2
    exit 64
fi
mkdir -p "fuzz/out/corpus/$target" "fuzz/corpus/$target"
# The Swift runtime's crash backtracer reads raw stack memory, which ASan reports as a false
# stack-buffer-underflow on top of the real failure; libFuzzer prints its own stack anyway.
SWIFT_BACKTRACE=enable=no exec "$binary" "fuzz/out/corpus/$target" "fuzz/corpus/$target" \
    -runs="$runs" -artifact_prefix="fuzz/out/crash-$target-" -print_final_stats=1 "$@"
