#!/usr/bin/env bash
# stdio under a bytes rule: a program writes 200 MiB through fprintf to a
# managed file under `class=data rate=20MiB/s`, then reads it back with getline and with
# fscanf (tests/c/stdio.c). Each should take (200 MiB - burst) / 20 MiB/s, about 10 s;
# prints each run's bytes, seconds, and its deviation from that, and the bytes --stats
# counted. Environment: SLUICE_BIN_DIR (default target/release), MIB (default 200).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
bin=${SLUICE_BIN_DIR:-$root/target/release}
mib=${MIB:-200}
work=$(mktemp -d /dev/shm/sluice-stdio.XXXXXX)
trap 'rm -rf "$work"' EXIT
cc -O2 -o "$work/stdio" "$root/tests/c/stdio.c"
mkdir -p "$work/managed"
export SLUICE_STAGE=$bin/libsluice_stage.so
rate=$((20 << 20))
printf 'stdio under class=data rate=20MiB/s, %d MiB (want (bytes - 10 ms of burst) / rate)\n' "$mib"
for mode in write getline fscanf; do
    args=("$work/managed/out")
    [[ $mode == write ]] && args+=($((mib << 20)))
    out=$("$bin/sluice" run --rule 'class=data rate=20MiB/s' --mount "$work/managed" \
        --stats "$work/stats.json" -- "$work/stdio" "$mode" "${args[@]}")
    op=$([[ $mode == write ]] && echo write || echo read)
    counted=$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d["ops"].get(sys.argv[2], {}).get("bytes", 0))' "$work/stats.json" "$op")
    awk -v m="$mode" -v o="$out" -v r="$rate" -v c="$counted" 'BEGIN {
        split(o, f, " "); want = (f[1] - r / 100) / r
        printf "%-8s %10d B in %7.3f s (want %.3f s: %+.2f%%); --stats counted %d B\n",
            m, f[1], f[2], want, (f[2] - want) / want * 100, c
    }'
done
