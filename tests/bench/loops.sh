#!/usr/bin/env bash
# What the stage adds to a call, measured on real programs (tests/c/bench_loop.c) and
# expressed so that figures from different machines compare:
#   - per call: a stat loop and an open+close loop on tmpfs, printf to a file and to
#     /dev/null; each without any preload (native), under a bare forwarding preload
#     (tests/bench/forward.c: the floor of any interposer), under the stage managing the
#     file (a catch-all rule whose rate is never reached) and under the stage judging it
#     unmanaged (the mount is elsewhere); and a stat of a file beside the managed
#     directory, unmanaged but sharing the first 29 bytes of its path with the managed
#     place (the site that manages /lustre/scratch and not /lustre/home);
#   - each overhead (variant − native) also as a multiple of this machine's
#     clock_gettime(CLOCK_MONOTONIC) and of the forwarding preload's own overhead;
#   - scaling: calls per second of one process of a job, and of two at once (distinct
#     files, the same job's segment), with the same for native processes.
# Variants run in turn, ROUNDS times (default 11); each time is the median of its rounds
# and each overhead the median of the rounds' paired differences (variant − native of the
# same round): interleaving and pairing cancel the drift a time-shared machine shows.
# Under each loop, the quartiles of those differences: how far a figure may be trusted.
# Environment: SLUICE_BIN_DIR (default target/release), ROUNDS, ONLY (a list of loops
# among stat, beside, open, printf, scale: only those; default all).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
bin=${SLUICE_BIN_DIR:-$root/target/release}
rounds=${ROUNDS:-11}
only=${ONLY:-}
for w in $only; do
    case $w in stat | beside | open | printf | scale) ;; *)
        echo "loops.sh: ONLY names '$w'; the loops are stat, beside, open, printf and scale" >&2
        exit 2
        ;;
    esac
done
work=$(mktemp -d /dev/shm/sluice-bench.XXXXXX)
trap 'rm -rf "$work"' EXIT
cc -O2 -o "$work/loop" "$root/tests/c/bench_loop.c"
cc -O2 -shared -fPIC -o "$work/forward.so" "$root/tests/bench/forward.c" -ldl
mkdir -p "$work/managed" "$work/beside" && touch "$work/managed/f" "$work/managed/g" "$work/beside/f"
export SLUICE_STAGE=$bin/libsluice_stage.so
rule='rate=1000000M/s'
# shellcheck source=tests/bench/stats.sh
. "$root/tests/bench/stats.sh"

# run VARIANT OP FILE N OUT: one run of the loop; prints ns per call.
run() {
    local variant=$1 op=$2 file=$3 n=$4 out=$5
    case $variant in
    native) "$work/loop" "$op" "$file" "$n" ;;
    forward) LD_PRELOAD=$work/forward.so "$work/loop" "$op" "$file" "$n" ;;
    managed | beside) "$bin/sluice" run --rule "$rule" --mount "$work/managed" -- "$work/loop" "$op" "$file" "$n" ;;
    unmanaged) "$bin/sluice" run --rule "$rule" --mount /scratch-not-here -- "$work/loop" "$op" "$file" "$n" ;;
    esac 2>&1 >"$out"
}

# ROUNDS runs of `clock_gettime`, the yardstick.
for _ in $(seq "$rounds"); do "$work/loop" clock - 2000000 2>&1; done >"$work/clock"
clock=$(median <"$work/clock")
printf 'clock_gettime(CLOCK_MONOTONIC): %.1f ns (median of %d runs)\n\n' "$clock" "$rounds"

printf '%-18s %9s %9s %9s %9s | %-26s %-26s %s\n' loop "native" forward managed unmanaged \
    "managed: +ns (×clock ×fwd)" "unmanaged: +ns (×clock ×fwd)" "forward +ns"
# diffs VARIANT: per round, VARIANT's figure minus native's of the same round.
diffs() { paste "$work/r-native" "$work/r-$1" | awk '{ print $2 - $1 }'; }
# paired VARIANT: the median of those differences.
paired() { diffs "$1" | median; }
# spread VARIANT: their first and third quartiles (nearest rank), "Q1 Q3": how far a
# figure near its target may be trusted on a time-shared machine.
spread() { diffs "$1" | quartiles; }

# loop LABEL OP FILE N OUT CALLS VARIANTS...: CALLS calls per iteration.
loop() {
    local label=$1 op=$2 file=$3 n=$4 out=$5 calls=$6
    shift 6
    local v
    rm -f "$work"/r-*
    for v in "$@"; do : >"$work/r-$v"; done
    for _ in $(seq "$rounds"); do
        for v in "$@"; do run "$v" "$op" "$file" "$n" "$out" >>"$work/r-$v"; done
    done
    local nat fwd man=- unm=- dfwd dman=- dunm=-
    nat=$(median <"$work/r-native")
    fwd=$(median <"$work/r-forward")
    dfwd=$(paired forward)
    local qman="- -" qunm="- -"
    [[ -s $work/r-managed ]] && man=$(median <"$work/r-managed") && dman=$(paired managed) && qman=$(spread managed)
    [[ -s $work/r-unmanaged ]] && unm=$(median <"$work/r-unmanaged") && dunm=$(paired unmanaged) && qunm=$(spread unmanaged)
    # A file beside the managed place is an unmanaged one: its figures take that column.
    [[ -s $work/r-beside ]] && unm=$(median <"$work/r-beside") && dunm=$(paired beside) && qunm=$(spread beside)
    awk -v l="$label" -v b="$nat" -v f="$fwd" -v m="$man" -v u="$unm" -v df="$dfwd" -v dm="$dman" -v du="$dunm" \
        -v c="$calls" -v k="$clock" -v qm="$qman" -v qu="$qunm" 'BEGIN {
        fo = df / c
        cell = "%+7.1f (%5.2f× %s)"
        split("", out)
        split(dm " " du, vs, " ")
        for (i = 1; i <= 2; i++) {
            if (vs[i] == "-") { out[i] = "—"; continue }
            o = vs[i] / c
            x = fo >= 0.5 ? sprintf("%5.1f×", o / fo) : "  n/a"
            out[i] = sprintf(cell, o, o / k, x)
        }
        printf "%-18s %9.1f %9.1f %9s %9s | %-26s %-26s %+.1f\n", l, b, f, m, u, out[1], out[2], fo
        split(qm " " qu, qs, " ")
        line = ""
        for (i = 1; i <= 2; i++) {
            if (qs[2 * i - 1] == "-") continue
            lo = qs[2 * i - 1] / c; hi = qs[2 * i] / c
            line = line sprintf("  %s %+.1f to %+.1f ns (%.2f–%.2f×)", i == 1 ? "managed" : "unmanaged", lo, hi, lo / k, hi / k)
        }
        if (line != "") printf "%-18s quartiles of the paired differences:%s\n", "", line
    }'
}
want() { [[ -z $only || " $only " == *" $1 "* ]]; }
want stat && loop stat stat "$work/managed/f" 100000 /dev/null 1 native forward managed unmanaged
want beside && loop "stat beside managed" stat "$work/beside/f" 100000 /dev/null 1 native forward beside
want open && loop "open+close" open "$work/managed/f" 50000 /dev/null 2 native forward managed unmanaged
want printf && loop "printf → file" printf - 1000000 "$work/managed/out" 1 native forward managed unmanaged
want printf && loop "printf → /dev/null" printf - 1000000 /dev/null 1 native forward unmanaged
printf '\n(per-call figures: ns; open+close per call; printf to /dev/null is never managed;\n "stat beside managed": the file beside the managed directory, in the unmanaged column)\n\n'

# Scaling: one process, then two at once on distinct files, 1 s each; calls per second.
scale() {
    local variant=$1 two
    for _ in $(seq "$rounds"); do
        case $variant in
        native)
            "$work/loop" statfor "$work/managed/f" 1000 2>&1 >/dev/null | tr '\n' ' '
            two=$( ("$work/loop" statfor "$work/managed/f" 1000 & "$work/loop" statfor "$work/managed/g" 1000; wait) 2>&1 >/dev/null | awk '{ s += $1 } END { print s }')
            ;;
        managed)
            "$bin/sluice" run --rule "$rule" --mount "$work/managed" -- "$work/loop" statfor "$work/managed/f" 1000 2>&1 >/dev/null | tr '\n' ' '
            two=$("$bin/sluice" run --rule "$rule" --mount "$work/managed" -- sh -c \
                "'$work/loop' statfor '$work/managed/f' 1000 & '$work/loop' statfor '$work/managed/g' 1000; wait" 2>&1 >/dev/null | awk '{ s += $1 } END { print s }')
            ;;
        esac
        echo "$two"
    done >"$work/scale"
    local one two
    one=$(cut -d' ' -f1 "$work/scale" | median)
    two=$(cut -d' ' -f2 "$work/scale" | median)
    awk -v v="$variant" -v a="$one" -v b="$two" 'BEGIN {
        printf "%-9s 1 process %9.0f calls/s, 2 processes %9.0f calls/s: %.2f×\n", v, a, b, b / a
    }'
}
if want scale; then
    printf 'stat, 1 s per run, median of %d runs (one job: the two processes share its segment)\n' "$rounds"
    scale native
    scale managed
fi
