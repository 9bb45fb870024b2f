#!/usr/bin/env bash
# Measures a victim's uncached stat rate on the GlusterFS volume of up.sh, alone and
# beside N aggressor processes that create and unlink files in a loop, with no control.
#
#   experiments/gluster/measure.sh [--runs 3] [--seconds 15] [--out DIR]
#
# Needs the volume mounted (up.sh) and target/release/sluice built. Loads are the
# project's own `sluice load` (victim: --ops getattr; aggressor: --ops mknod,unlink, one
# process each); the victim's latency is taken in separate runs by mdprobe.c, which
# stats its own files and times every call. Writes DIR/runs.csv (one line per process
# per run) and DIR/summary.md. Each run is bounded: --seconds plus about 2 s.
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
MOUNT=${SLUICE_GLUSTER_MOUNT:-/mnt/sluice-gluster}
RUNS=3
SECS=15
OUT=$HERE/results
AGGS="0 1 2 4"
while [ $# -gt 0 ]; do
    case "$1" in
        --runs) RUNS=$2; shift 2 ;;
        --seconds) SECS=$2; shift 2 ;;
        --out) OUT=$2; shift 2 ;;
        --aggressors) AGGS=$2; shift 2 ;;
        --mount) MOUNT=$2; shift 2 ;;
        *) echo "usage: measure.sh [--runs N] [--seconds S] [--out DIR] [--aggressors '0 1 2 4'] [--mount DIR]" >&2; exit 2 ;;
    esac
done
findmnt -n -M "$MOUNT" -t fuse.glusterfs >/dev/null \
    || { echo "measure.sh: $MOUNT is not a GlusterFS mount: run up.sh first" >&2; exit 1; }

# Private copies: the cargo target dir is shared and may be rebuilt during the runs.
BIN=$(mktemp -d /tmp/sluice-gluster-measure.XXXXXX)
trap 'rm -rf "$BIN"' EXIT
cp "$REPO/target/release/sluice" "$BIN/sluice" \
    || { echo "measure.sh: build first: cargo build --release" >&2; exit 1; }
cc -O2 -Wall -o "$BIN/mdprobe" "$HERE/mdprobe.c"
SLUICE=$BIN/sluice
mkdir -p "$OUT" "$MOUNT/victim" "$MOUNT/aggressors"
CSV=$OUT/runs.csv
echo "kind,run,aggressors,role,index,ops,seconds,rate,p50_us,p99_us,brick_cpu_pct,client_cpu_pct,others_cpu_pct" >"$CSV"

# CPU seconds (user+system) of the brick and FUSE client processes, for where the time goes.
cpu_of() { # comm
    local t=0 pid
    for pid in $(pgrep -x "$1"); do
        t=$((t + $(awk '{ print $14 + $15 }' "/proc/$pid/stat")))
    done
    echo "$t"
}
TCK=$(getconf CLK_TCK)

# The machine is shared (other people's builds run on its 2 cores): before each run, wait
# up to 3 minutes for it to be quiet, and record how much CPU others took during the run.
machine_busy() { awk '/^cpu / { print $2 + $3 + $4 + $7 + $8 + $9 }' /proc/stat; }
# CPU seconds of this shell's waited-for children (the loads, mdprobe, helpers), from
# the `times` builtin, which must run in this shell (not in a $(...) subshell): call
# `times >"$BIN/times"` first.
children_cpu() { tail -n 1 "$BIN/times" | awk '{ gsub(/[ms]/, " "); split($0, a, " "); print a[1] * 60 + a[2] + a[3] * 60 + a[4] }'; }
mark() { # sets M_BUSY M_GL M_CH M_T
    M_BUSY=$(machine_busy); M_GL=$(( $(cpu_of glusterfsd) + $(cpu_of glusterfs) + $(cpu_of glusterd) ))
    times >"$BIN/times"; M_CH=$(children_cpu); M_T=$EPOCHREALTIME
}
others_pct() { # % of one CPU used by others since mark (200 = both cores); after `times >"$BIN/times"`
    local busy gl ch t
    busy=$(machine_busy); gl=$(( $(cpu_of glusterfsd) + $(cpu_of glusterfs) + $(cpu_of glusterd) ))
    ch=$(children_cpu); t=$EPOCHREALTIME
    awk -v b="$((busy - M_BUSY))" -v g="$((gl - M_GL))" -v c0="$M_CH" -v c1="$ch" -v s="$M_T" -v e="$t" -v h="$TCK" \
        'BEGIN { o = (b - g) / h - (c1 - c0); if (o < 0) o = 0; printf "%.0f", 100 * o / (e - s) }'
}
# pct TICKS0 TICKS1 T0 T1: % of one core used between two readings of cpu_of.
pct() { awk -v a="$1" -v b="$2" -v s="$3" -v e="$4" -v h="$TCK" 'BEGIN { printf "%.0f", 100 * (b - a) / h / (e - s) }'; }
# busy OTHERS_PCT: whether a run must be made again (others took over 30% of a core), once.
busy() {
    [ "$1" -gt 30 ] && [ "${RETRY:-0}" -eq 0 ] || return 1
    echo "  (others took ${1}% CPU during the run: discarding it and running it again)" >&2
}
wait_quiet() {
    local i b0 b1
    for i in $(seq 1 90); do
        b0=$(machine_busy); sleep 2; b1=$(machine_busy)
        # under 15% of one core for 2 s
        if [ $(( (b1 - b0) * 100 / TCK / 2 )) -lt 15 ]; then return 0; fi
        [ "$i" -gt 1 ] || echo "  (waiting for the machine to be quiet: others use $(( (b1 - b0) * 100 / TCK / 2 ))% CPU)" >&2
    done
    echo "  (machine still busy after 3 minutes: measuring anyway)" >&2
}

# rate_of FILE: "ops seconds rate" from `sluice load`'s closing line.
rate_of() {
    sed -n 's/^total \([0-9]*\) ops in \([0-9.]*\) s: \([0-9]*\) ops\/s$/\1 \2 \3/p' "$1"
}

# load_rows KIND RUN N ROLE OUT CPUS OTHERS: a CSV row for each of N `sluice load`s,
# whose output is OUT.1 … OUT.N; CPUS is "brick%,client%" (or "," where not measured).
load_rows() {
    local kind=$1 run=$2 n=$3 role=$4 out=$5 cpus=$6 oth=$7 i ops secs rate
    for i in $(seq 1 "$n"); do
        read -r ops secs rate < <(rate_of "$out.$i")
        echo "$kind,$run,$n,$role,$i,$ops,$secs,$rate,,,$cpus,$oth" >>"$CSV"
    done
}

# one KIND RUN N: N aggressors started 1 s before a victim of SECS seconds.
one() {
    local kind=$1 run=$2 n=$3 tmp pids=() i b0 c0 b1 c1 t0 t1 oth
    tmp=$(mktemp -d)
    wait_quiet
    mark
    for i in $(seq 1 "$n"); do
        "$SLUICE" load --dir "$MOUNT/aggressors" --ops mknod,unlink \
            --duration "$((SECS + 2))" >"$tmp/agg.$i" 2>&1 &
        pids+=($!)
    done
    [ "$n" -eq 0 ] || sleep 1
    b0=$(cpu_of glusterfsd); c0=$(cpu_of glusterfs); t0=$EPOCHREALTIME
    if [ "$kind" = rate ]; then
        "$SLUICE" load --dir "$MOUNT/victim" --ops getattr --duration "$SECS" >"$tmp/victim" 2>&1
    else
        "$BIN/mdprobe" "$MOUNT/victim" "$SECS" >"$tmp/victim" 2>&1
    fi
    b1=$(cpu_of glusterfsd); c1=$(cpu_of glusterfs); t1=$EPOCHREALTIME
    local bcpu ccpu
    bcpu=$(pct "$b0" "$b1" "$t0" "$t1")
    ccpu=$(pct "$c0" "$c1" "$t0" "$t1")
    for pid in "${pids[@]}"; do wait "$pid"; done
    times >"$BIN/times"; oth=$(others_pct)
    if busy "$oth"; then
        rm -rf "$tmp"
        RETRY=1 one "$@"
        return
    fi
    if [ "$kind" = rate ]; then
        read -r ops secs rate < <(rate_of "$tmp/victim")
        echo "$kind,$run,$n,victim,0,$ops,$secs,$rate,,,$bcpu,$ccpu,$oth" >>"$CSV"
    else
        eval "$(tr ' ' '\n' <"$tmp/victim" | sed 's/\/s$//' | grep '=')"
        # shellcheck disable=SC2154 # set by the eval of mdprobe's line
        echo "$kind,$run,$n,victim,0,$calls,$seconds,$rate,$p50_us,$p99_us,$bcpu,$ccpu,$oth" >>"$CSV"
    fi
    load_rows "$kind" "$run" "$n" aggressor "$tmp/agg" , "$oth"
    tail -n "$((n + 1))" "$CSV" | sed 's/^/  /' >&2
    rm -rf "$tmp"
}

# capacity OP K: K processes of `sluice load --ops OP` together, SECS seconds.
capacity() {
    local ops=$1 k=$2 tmp pids=() i b0 c0 b1 c1 t0 t1 oth
    tmp=$(mktemp -d)
    wait_quiet
    mark
    b0=$(cpu_of glusterfsd); c0=$(cpu_of glusterfs); t0=$EPOCHREALTIME
    for i in $(seq 1 "$k"); do
        "$SLUICE" load --dir "$MOUNT/aggressors" --ops "$ops" --duration "$SECS" >"$tmp/p.$i" 2>&1 &
        pids+=($!)
    done
    for pid in "${pids[@]}"; do wait "$pid"; done
    b1=$(cpu_of glusterfsd); c1=$(cpu_of glusterfs); t1=$EPOCHREALTIME
    times >"$BIN/times"; oth=$(others_pct)
    if busy "$oth"; then
        rm -rf "$tmp"
        RETRY=1 capacity "$@"
        return
    fi
    local bcpu ccpu
    bcpu=$(pct "$b0" "$b1" "$t0" "$t1")
    ccpu=$(pct "$c0" "$c1" "$t0" "$t1")
    load_rows "capacity-${ops//,/+}" 1 "$k" load "$tmp/p" "$bcpu,$ccpu" "$oth"
    tail -n "$k" "$CSV" | sed 's/^/  /' >&2
    rm -rf "$tmp"
}

for run in $(seq 1 "$RUNS"); do
    for n in $AGGS; do
        echo "run $run: victim rate (sluice load getattr) beside $n aggressor(s)" >&2
        one rate "$run" "$n"
    done
    for n in 0 4; do
        echo "run $run: victim latency (mdprobe stat) beside $n aggressor(s)" >&2
        one latency "$run" "$n"
    done
done
for k in 1 2 4 8; do  # capacity: one run each
    echo "capacity: $k getattr process(es)" >&2
    capacity getattr "$k"
    echo "capacity: $k mknod+unlink process(es)" >&2
    capacity mknod,unlink "$k"
done
rmdir "$MOUNT/victim" "$MOUNT/aggressors" 2>/dev/null || true
python3 "$HERE/summarize.py" "$CSV" >"$OUT/summary.md"
cat "$OUT/summary.md"
