#!/usr/bin/env bash
# What supervision costs a call of a program the stage cannot enter, as a ratio to the
# same call made natively in the same round: a stat loop (tests/c/bench_loop.c) linked
# statically, run natively and under `sluice run` (supervised), the file managed (a
# catch-all rule whose rate is never reached) and unmanaged (the mount is elsewhere);
# and, for the same loop linked dynamically, the stage's cost (unchanged by supervision:
# a dynamic program carries no filter). Then a loop of 4 KiB writes, static: to /dev/null
# (a descriptor on no managed place: judged and let through) and to a managed file
# (admitted through the catch-all rule), natively and supervised.
# Variants run in turn, ROUNDS times (default 11); each figure is the median of its
# rounds, each ratio the median of the rounds' ratios.
# Environment: SLUICE_BIN_DIR (default target/release), ROUNDS, N (calls per run).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
bin=${SLUICE_BIN_DIR:-$root/target/release}
rounds=${ROUNDS:-11}
n=${N:-20000}
work=$(mktemp -d /dev/shm/sluice-bench.XXXXXX)
trap 'rm -rf "$work"' EXIT
cc -O2 -static -o "$work/static" "$root/tests/c/bench_loop.c"
cc -O2 -o "$work/dynamic" "$root/tests/c/bench_loop.c"
mkdir -p "$work/managed" && touch "$work/managed/f"
export SLUICE_STAGE=$bin/libsluice_stage.so
rule='rate=1000000M/s'
# shellcheck source=tests/bench/stats.sh
. "$root/tests/bench/stats.sh"
f=$work/managed/f

# run VARIANT: one run of the loop; prints ns per call.
run() {
    case $1 in
    native) "$work/static" stat "$f" "$n" ;;
    supervised) "$bin/sluice" run --rule "$rule" --mount "$work/managed" -- "$work/static" stat "$f" "$n" ;;
    unmanaged) "$bin/sluice" run --rule "$rule" --mount /scratch-not-here -- "$work/static" stat "$f" "$n" ;;
    dyn-native) "$work/dynamic" stat "$f" "$((n * 10))" ;;
    dyn-stage) "$bin/sluice" run --rule "$rule" --mount "$work/managed" -- "$work/dynamic" stat "$f" "$((n * 10))" ;;
    w-null) "$work/static" write /dev/null "$n" ;;
    w-null-sup) "$bin/sluice" run --rule "$rule" --mount "$work/managed" -- "$work/static" write /dev/null "$n" ;;
    w-file) "$work/static" write "$work/managed/w" "$n" ;;
    w-file-sup) "$bin/sluice" run --rule "$rule" --mount "$work/managed" -- "$work/static" write "$work/managed/w" "$n" ;;
    esac 2>&1 >/dev/null
}

variants="native supervised unmanaged dyn-native dyn-stage w-null w-null-sup w-file w-file-sup"
for v in $variants; do : >"$work/r-$v"; done
for _ in $(seq "$rounds"); do
    for v in $variants; do run "$v" >>"$work/r-$v"; done
done
ratio() { paste "$work/r-$1" "$work/r-$2" | awk '{ print $2 / $1 }' | median; }
printf 'stat, ns per call (median of %d rounds of %d calls)\n' "$rounds" "$n"
printf '%-30s %9s %8s\n' variant ns "× native"
printf '%-30s %9.0f %8s\n' "static, native" "$(median <"$work/r-native")" 1
printf '%-30s %9.0f %8.1f\n' "static, supervised, managed" "$(median <"$work/r-supervised")" "$(ratio native supervised)"
printf '%-30s %9.0f %8.1f\n' "static, supervised, unmanaged" "$(median <"$work/r-unmanaged")" "$(ratio native unmanaged)"
printf '%-30s %9.0f %8s\n' "dynamic, native" "$(median <"$work/r-dyn-native")" 1
printf '%-30s %9.0f %8.2f\n' "dynamic, stage, managed" "$(median <"$work/r-dyn-stage")" "$(ratio dyn-native dyn-stage)"
printf '4 KiB write, ns per call (median of %d rounds of %d calls)\n' "$rounds" "$n"
printf '%-30s %9.0f %8s\n' "/dev/null, native" "$(median <"$work/r-w-null")" 1
printf '%-30s %9.0f %8.1f\n' "/dev/null, supervised" "$(median <"$work/r-w-null-sup")" "$(ratio w-null w-null-sup)"
printf '%-30s %9.0f %8s\n' "managed file, native" "$(median <"$work/r-w-file")" 1
printf '%-30s %9.0f %8.1f\n' "managed file, supervised" "$(median <"$work/r-w-file-sup")" "$(ratio w-file w-file-sup)"
