#!/usr/bin/env bash
# What the Slurm plugin adds to a task's start: slurm_spank_task_init timed in
# the task's process, outside Slurm (tests/bench/spank_task.c stands in for slurmstepd),
# for a static task (the plugin starts its supervisor and installs the filter) and a
# dynamic one (one look at its ELF headers), interleaved, ROUNDS of each (default 41);
# then the same with supervise=off (the hook returns before looking at the program: what
# any task pays for the plugin's hook being called in a forked process).
# Prints each kind's median and quartiles, in microseconds.
# Environment: SLUICE_BIN_DIR (default target/release), ROUNDS.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
bin=${SLUICE_BIN_DIR:-$root/target/release}
rounds=${ROUNDS:-41}
work=$(mktemp -d /tmp/sluice-spank-bench.XXXXXX)
trap 'rm -rf "$work"' EXIT
cc -O2 -rdynamic -o "$work/spank_task" "$root/tests/bench/spank_task.c" -ldl
cc -O2 -static -o "$work/static" "$root/tests/c/bench_loop.c"
cc -O2 -o "$work/dynamic" "$root/tests/c/bench_loop.c"
# shellcheck source=tests/bench/stats.sh
. "$root/tests/bench/stats.sh"
for mode in on off; do
    "$work/spank_task" "$bin/libsluice_spank.so" "$work/never.sock" \
        "$work/static" "$work/dynamic" "$rounds" "supervise=$mode" >"$work/times" 2>"$work/err" || {
        cat "$work/err" >&2
        exit 1
    }
    for kind in static dynamic; do
        us() { awk -v k="$kind" '$1 == k { printf "%.1f\n", $2 / 1000 }' "$work/times"; }
        echo "supervise=$mode $kind: median $(us | median) us (quartiles $(us | quartiles)), $(us | wc -l) tasks"
    done
done
