#!/usr/bin/env bash
# Compares builds of the stage on the managed `stat` loop of loops.sh, in one batch: per
# round a native run, then one managed run under each build (the order rotated each
# round), so that every build meets the same hours of a time-shared machine. Prints, per
# build, the median of the rounds' paired differences (build − native of the same round)
# and their quartiles.
#
# Usage: tests/bench/stages.sh ROUNDS STAGE.so...
#   e.g. cp target/release/libsluice_stage.so /tmp/a.so; (change, build);
#        tests/bench/stages.sh 61 /tmp/a.so target/release/libsluice_stage.so
# A stage with a `sluice` beside it runs under that launcher: builds whose segment layouts
# differ each need their own (a stage refuses a segment of another layout version, and
# reads a different layout under the same version wrongly).
# UNMANAGED=1 measures the unmanaged `stat` instead (the mount named is elsewhere);
# BESIDE=1 the unmanaged `stat` of a file beside the managed directory, whose path shares
# its first 29 bytes with the managed place.
# POOL=1 holds the managed `stat` by a pool instead of a rule: a `sluice local` started
# here with one pool of metadata calls that it never reaches, which times one call in 64.
# The local makes the segments, so under POOL=1 every build must share its layout.
# A change to the stage moves where its code lands as much as what it runs: compare each
# build under several layouts (cargo rustc -p sluice-stage --release --lib -- -C
# llvm-args=-align-all-functions=6 …) before believing a few nanoseconds.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
bin=${SLUICE_BIN_DIR:-$root/target/release}
if (($# < 2)); then
    echo "usage: $0 ROUNDS STAGE.so..." >&2
    exit 2
fi
rounds=$1
shift
stages=("$@")
for so in "${stages[@]}"; do
    [[ -f $so ]] || { echo "stages.sh: no such stage: $so" >&2; exit 2; }
done
work=$(mktemp -d /dev/shm/sluice-bench.XXXXXX)
local_pid=
trap '[[ -n $local_pid ]] && kill "$local_pid" 2>/dev/null; rm -rf "$work"' EXIT
cc -O2 -o "$work/loop" "$root/tests/c/bench_loop.c"
mkdir -p "$work/managed" "$work/beside" && touch "$work/managed/f" "$work/beside/f"
mount=$work/managed what=managed file=$work/managed/f
[[ -n ${UNMANAGED:-} ]] && mount=/scratch-not-here what=unmanaged
[[ -n ${BESIDE:-} ]] && file=$work/beside/f what="unmanaged beside managed"
hold=(--rule 'rate=1000000M/s')
if [[ -n ${POOL:-} ]]; then
    mkdir -p "$work/local/shm"
    printf '[[pool]]\nname = "md"\nmatch = "class=metadata"\ncapacity = "1000000M/s"\nalgorithm = "uniform-share"\n' >"$work/local.toml"
    "$bin/sluice" local --shm-dir "$work/local/shm" --socket "$work/local.sock" \
        --state-dir "$work/local/state" --config "$work/local.toml" 2>"$work/local.log" &
    local_pid=$!
    for _ in $(seq 50); do [[ -S $work/local.sock ]] && break; sleep 0.1; done
    [[ -S $work/local.sock ]] || { echo "stages.sh: sluice local did not start:" >&2; cat "$work/local.log" >&2; exit 1; }
    hold=(--socket "$work/local.sock")
    what="$what, pool"
fi
n=${#stages[@]}
: >"$work/native"
for i in $(seq 0 $((n - 1))); do : >"$work/r$i"; done
for r in $(seq "$rounds"); do
    "$work/loop" stat "$file" 100000 2>>"$work/native" >/dev/null
    for k in $(seq 0 $((n - 1))); do
        i=$(((k + r) % n))
        launcher=$bin/sluice
        [[ -x $(dirname "${stages[$i]}")/sluice ]] && launcher=$(dirname "${stages[$i]}")/sluice
        # Under a pool, a job of its own each run: a job's counts last as long as it does.
        job=()
        [[ -n ${POOL:-} ]] && job=(--job "bench-$r-$i")
        SLUICE_STAGE=${stages[$i]} "$launcher" run "${hold[@]}" "${job[@]}" --mount "$mount" \
            --stats "$work/stats" -- "$work/loop" stat "$file" 100000 2>>"$work/r$i" >/dev/null
        # A stage that could not use its segment passes calls through, uncounted: its
        # figure would be no stage's.
        if [[ -z ${UNMANAGED:-}${BESIDE:-} ]] && ! tr -d ' \n' <"$work/stats" | grep -Eq '"getattr":\{[^}]*"calls":300000[,}]'; then
            echo "stages.sh: ${stages[$i]} did not count the 300,000 stat calls it held:" >&2
            cat "$work/stats" >&2
            exit 1
        fi
    done
done
# shellcheck source=tests/bench/stats.sh
. "$root/tests/bench/stats.sh"
printf 'native stat: %.1f ns (median of %d rounds)\n' "$(median <"$work/native")" "$rounds"
for i in $(seq 0 $((n - 1))); do
    paste "$work/native" "$work/r$i" | awk '{ print $2 - $1 }' >"$work/d$i"
    read -r q1 q3 < <(quartiles <"$work/d$i")
    printf '%-40s %s %+6.1f ns (quartiles %+.1f to %+.1f)\n' "${stages[$i]}" "$what" "$(median <"$work/d$i")" "$q1" "$q3"
done
