#!/usr/bin/env bash
# Launches beside a large write: a single-node `sluice local` (state directory under
# /var/tmp, on disk), then for each round a `dd` of GIB GiB into that file system and,
# 1.5 s in, five `sluice run -- true` one after another, each timed from start to exit.
# A launch waits for its job's record; a record that waited for the disk held it up.
# With several build directories as arguments, the rounds alternate between them (an
# A/B); each directory holds `sluice` and `libsluice_stage.so`.
# Usage: bash tests/bench/launch_busy_disk.sh [BIN_DIR…]   (default target/release)
# Environment: ROUNDS (default 5), GIB (default 5).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
(($#)) || set -- "${SLUICE_BIN_DIR:-$root/target/release}"
rounds=${ROUNDS:-5}
gib=${GIB:-5}
work=$(mktemp -d /var/tmp/sluice-launch.XXXXXX)
shm=$(mktemp -d /dev/shm/sluice-launch.XXXXXX)
pids=()
trap 'kill "${pids[@]}" 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$work" "$shm"' EXIT
printf 'interval = "1s"\n\n[[rule]]\nrule = "cap: op=getattr rate=2/s"\n' >"$work/c.toml"
echo "sluice run -- true beside a ${gib} GiB dd, ms from start to exit, 5 per round"
for round in $(seq "$rounds"); do
    for bins in "$@"; do
        dir=$work/$round.$(basename "$bins")
        mkdir -p "$dir"
        "$bins/sluice" local --socket "$dir/s.sock" --state-dir "$dir/state" \
            --config "$work/c.toml" --node n1 --shm-dir "$shm" >"$dir/local.log" 2>&1 &
        pids=($!)
        for _ in $(seq 100); do [[ -S $dir/s.sock ]] && break; sleep 0.05; done
        dd if=/dev/zero of="$work/big" bs=1M count=$((gib << 10)) 2>/dev/null &
        pids+=($!)
        sleep 1.5
        times=()
        for i in 1 2 3 4 5; do
            start=$(date +%s%N)
            SLUICE_STAGE=$bins/libsluice_stage.so "$bins/sluice" run --socket "$dir/s.sock" \
                --job "j$i" -- true
            times+=($((($(date +%s%N) - start) / 1000000)))
        done
        echo "round $round $bins: ${times[*]}"
        kill "${pids[@]}" 2>/dev/null || true
        wait 2>/dev/null || true
        rm -f "$work/big"
        sync
    done
done
