#!/bin/bash
# Is it the control? The victim of scenario.toml alone on a CephFS of its own, 12 s each
# way, interleaved twice: bare; under `sluice run --standalone` with a rule that never
# holds; under a local controller's pool (1M/s, PSFA); under the same pool weighing an
# unlink at 7. Prints mdstat's line (rounds, calls, rate in rounds/s, p50, p99) for each.
# Run from the repository's top directory, as root, with target/release built:
#   experiments/cephfs/overhead.sh [SECONDS]
set -u
case "${1:-}" in -h|--help) sed -n '2,7p' "$0" | sed 's/^# \{0,1\}//'; exit 0;; esac
SECONDS_EACH=${1:-12}
B=$PWD/target/release/sluice
T=$(mktemp -d /tmp/sluice-overhead.XXXXXX)
W=$T/cluster; R=$T/mnt
trap 'kill $(jobs -p) 2>/dev/null; wait; experiments/cephfs/down.sh --work-dir "$W" --mount-root "$R" >/dev/null; rm -rf "$T"' EXIT
experiments/cephfs/up.sh --work-dir "$W" --mount-root "$R" --port 6802 \
    --clients 'victim' --small-cache victim >/dev/null || exit 1
cc -O2 -o "$T/mdstat" tests/c/mdstat.c || exit 1
mkdir -p "$R/victim/files"
for i in $(seq 0 999); do : > "$R/victim/files/f$i"; done
for w in plain weighed; do
    mkdir -p "$T/st-$w" "$T/shm-$w"
    {
        printf 'interval = "1s"\n\n[[pool]]\nname = "md"\nmatch = "class=metadata"\n'
        printf 'capacity = "1M/s"\nalgorithm = "psfa"\n'
        [ "$w" = weighed ] && printf 'costs = { unlink = 7 }\n'
    } > "$T/$w.toml"
    "$B" local --config "$T/$w.toml" --shm-dir "$T/shm-$w" --socket "$T/$w.sock" \
        --state-dir "$T/st-$w" --node n1 > "$T/$w.log" 2>&1 &
done
sleep 2
victim=("$T/mdstat" -n 1000 "$R/victim/files" "$SECONDS_EACH")
for round in 1 2; do
    echo "bare       $("${victim[@]}")"
    echo "standalone $("$B" run --standalone --job v --mount "$R/victim" \
        --rule 'class=metadata rate=1000000/s' -- "${victim[@]}")"
    echo "pool       $("$B" run --socket "$T/plain.sock" --job "p$round" --mount "$R/victim" \
        -- "${victim[@]}")"
    echo "weighed    $("$B" run --socket "$T/weighed.sock" --job "w$round" --mount "$R/victim" \
        -- "${victim[@]}")"
done
