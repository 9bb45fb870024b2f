#!/usr/bin/env bash
# Instructions per `stat` over native, under valgrind's callgrind: exact and repeatable,
# where times on a shared machine are not. For each variant (native, unmanaged, beside a
# managed place, managed) the loop of tests/c/bench_loop.c runs 20,000 and 40,000 rounds
# (three calls each); the difference, over 60,000 calls, leaves out start-up and exit.
#
# Usage: tests/bench/callgrind.sh [BIN_DIR]   (a directory with sluice and
#        libsluice_stage.so; default target/release). Needs valgrind.
# OP=read counts a 4 KiB pread instead (of a managed file: a data call, which the
# managed lane leaves to the full admission path, ticket and all).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
bin=${1:-$root/target/release}
command -v valgrind >/dev/null || { echo "callgrind.sh: valgrind is not installed" >&2; exit 2; }
work=$(mktemp -d /dev/shm/sluice-bench.XXXXXX)
trap 'rm -rf "$work"' EXIT
cc -O2 -o "$work/loop" "$root/tests/c/bench_loop.c"
mkdir -p "$work/managed" "$work/beside" && touch "$work/managed/f" "$work/beside/f"
export SLUICE_STAGE=$bin/libsluice_stage.so
# count VARIANT FILE ROUNDS: the instructions of one run.
count() {
    local out=$work/cg.$RANDOM mount=$work/managed
    local grind=(valgrind --tool=callgrind --callgrind-out-file="$out" "$work/loop" "$op" "$2" "$3")
    [[ $1 == unmanaged ]] && mount=/scratch-not-here
    if [[ $1 == native ]]; then
        "${grind[@]}" >/dev/null 2>&1
    else
        "$bin/sluice" run --rule 'rate=1000000M/s' --mount "$mount" -- "${grind[@]}" >/dev/null 2>&1
    fi
    grep -m1 '^summary:\|^totals:' "$out" | awk '{print $2}'
}
op=${OP:-stat}
declare -A per
for v in native unmanaged beside managed; do
    f=$work/managed/f
    [[ $v == beside ]] && f=$work/beside/f
    a=$(count "$v" "$f" 20000)
    b=$(count "$v" "$f" 40000)
    per[$v]=$(((b - a) / 60000))
done
echo "native $op: ${per[native]} instructions"
for v in unmanaged beside managed; do
    printf '%-10s +%d instructions over native\n' "$v" $((per[$v] - per[native]))
done
