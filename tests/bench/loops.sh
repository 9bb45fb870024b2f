#!/usr/bin/env bash
# Times a C stat loop and an open+close loop on tmpfs without the stage, with the stage
# managing the file (catch-all rule whose rate is never reached), and with the stage
# judging the file unmanaged; prints ns per call and what the stage adds. The three are
# run in turn, 11 rounds, and the best of each is kept: interleaving cancels the drift a
# time-shared machine shows between minutes.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
bin=${SLUICE_BIN_DIR:-$root/target/release}
work=$(mktemp -d /dev/shm/sluice-bench.XXXXXX)
trap 'rm -rf "$work"' EXIT
cc -O2 -o "$work/loop" "$root/tests/c/bench_loop.c"
mkdir -p "$work/managed" && touch "$work/managed/f"
best() { sort -n | head -1; }
printf '%-12s %10s %10s %8s %10s %8s\n' loop "base ns" managed "+ns" unmanaged "+ns"
for op in stat open; do
  n=$([ "$op" = stat ] && echo 200000 || echo 100000)
  : > "$work/base"; : > "$work/man"; : > "$work/unm"
  for _ in $(seq 11); do
    "$work/loop" "$op" "$work/managed/f" "$n" >> "$work/base"
    "$bin/sluice" run --rule 'rate=1000000M/s' --mount "$work/managed" -- "$work/loop" "$op" "$work/managed/f" "$n" >> "$work/man"
    "$bin/sluice" run --rule 'rate=1000000M/s' --mount /scratch-not-here -- "$work/loop" "$op" "$work/managed/f" "$n" >> "$work/unm"
  done
  base=$(best < "$work/base"); man=$(best < "$work/man"); unm=$(best < "$work/unm")
  calls=$([ "$op" = stat ] && echo 1 || echo 2)
  awk -v op="$op" -v b="$base" -v m="$man" -v u="$unm" -v c="$calls" 'BEGIN {
    printf "%-12s %10.1f %10.1f %8.1f %10.1f %8.1f   (per call: +%.1f managed, +%.1f unmanaged; ratio %.3f)\n",
      op, b, m, m - b, u, u - b, (m - b) / c, (u - b) / c, m / b }'
done
