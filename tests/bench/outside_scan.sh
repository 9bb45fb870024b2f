#!/usr/bin/env bash
# What the local controller's scan for processes outside the stage costs per interval
# (docs/limitations.md, "What the local controller sees"): a local with a 1-s interval, a
# job of 202 processes (a shell, 100 sleeps carrying the stage, 100 setuid copies of sleep:
# unheld) against a job of 2 (a shell and one sleep), alternated ROUNDS times (default 3),
# 15 intervals each. Prints, per run, the local's CPU time (ticks of 10 ms, from
# /proc/PID/stat) and the median wall time of the scans after the first three (the local
# logs each scan's `took_us` at debug level). Run as root (the setuid copies belong to
# nobody). Environment: SLUICE_BIN_DIR (default target/release), ROUNDS.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
B=${SLUICE_BIN_DIR:-$root/target/release}
D=$(mktemp -d /tmp/sluice-outside.XXXX)
mkdir "$D/shm"
cp /bin/sleep "$D/suid-sleep"
chown 65534:65534 "$D/suid-sleep"
chmod 4755 "$D/suid-sleep"
printf 'interval = "1s"\n' > "$D/local.toml"
SLUICE_LOG_LEVEL=info,sluice_control::daemon=debug "$B/sluice" local --shm-dir "$D/shm" \
  --socket "$D/sock" --state-dir "$D/state" --config "$D/local.toml" 2> "$D/local.log" &
LP=$!
trap 'kill $LP 2>/dev/null; rm -rf "$D"' EXIT
sleep 2
ticks() { awk '{print $14+$15}' "/proc/$LP/stat"; }
for round in $(seq "${ROUNDS:-3}"); do
  for n in 100 0; do
    from=$(date +%s.%N) t0=$(ticks)
    SLUICE_STAGE=$B/libsluice_stage.so "$B/sluice" run --socket "$D/sock" --job "M$round.$n" -- \
      sh -c "for i in \$(seq $n); do sleep 14 & $D/suid-sleep 14 & done; sleep 14; wait" &
    RP=$!
    sleep 15
    wait $RP
    to=$(date +%s.%N)
    scans=$(sed 's/\x1b\[[0-9;]*m//g' "$D/local.log" | grep 'scanned /proc' | while read -r at rest; do
      s=$(date -d "$at" +%s.%N)
      if awk -v s="$s" -v a="$from" -v b="$to" 'BEGIN{exit !(s>=a && s<b)}'; then
        echo "$rest" | grep -o 'took_us=[0-9]*' | cut -d= -f2
      fi
    done | tail -n +4 | sort -n)
    median=$(echo "$scans" | awk '{v[NR]=$1} END{print v[int((NR+1)/2)]}')
    echo "round $round, job of $((2 * n + 2)) processes: cpu $(( $(ticks) - t0 )) ticks in 15 intervals, scan median ${median} us"
  done
done
