#!/usr/bin/env bash
# A real file system's metadata server, protected: a victim (mdprobe, closed-
# loop uncached stat, every call timed) beside 4 aggressors (`sluice load --ops
# mknod,unlink`, one process each) on the GlusterFS volume of up.sh, under set-ups:
#
#   none          no control
#   static        a static per-job rule on each aggressor (sluice run --standalone)
#   pool          a metadata pool, reservations (the victim's limit guaranteed), fixed capacity; the victim's reservation only
#   pool-lim      the same, and each aggressor given a limit in the pool too
#   auto          the pool with capacity = "auto" (p99 target); the victim's reservation only
#   auto-lim      the same, and each aggressor given a limit in the pool too
#
# then a timeline (auto pool; victim throughout; aggressors at 10-50 s and from 70 s),
# sampled every second. Writes OUT/protect.csv, OUT/protect.md, OUT/timeline.csv,
# OUT/timeline.png.
#
#   sudo experiments/gluster/protect.sh [options]    (see --help; about 6-8 minutes)
#
# Brings the volume up if it is not (and then takes it down at the end), works on private
# copies of target/release/{sluice,libsluice_stage.so}, waits for the shared machine to be
# quiet before each run and records the CPU others took during it. Every process it
# starts is killed on exit; the whole script is bounded by --max-seconds.
set -euo pipefail

PROG=protect.sh
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
# shellcheck source=common.sh
. "$HERE/common.sh"

OUT=$HERE/results
ALONE_SECS=15
SECS=20
TL_SECS=90
AGGS=4
CAPACITY=1000            # fixed capacity of the pool (ops/s): the volume's measured md capacity
RESERVE=auto             # the victim's limit in the pool: its rate alone, rounded down to 50
ALGO=reservations        # the pool's algorithm: the victim's limit is a guarantee under it
AGG_RATE=25              # an aggressor's static rule and its limit in the pool (ops/s): see README
TARGET_MS=auto           # p99 target of the auto pool: from the first auto run (see below)
START=1000               # the auto pool's starting capacity
WATCH='op=getattr,open'  # the calls whose latency steers the auto pool ('' for every call)
SETUPS="none static pool pool-lim auto auto-lim"
TL_SETUP=auto            # the set-up of the timeline: auto or auto-lim
MAX_SECS=600
QUIET_WAIT=15            # at most this long waiting for a quiet machine before a run (10 min budget)
TIMELINE=1

usage_text() {
    sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'
    cat <<EOF
options:
  --out DIR          results directory                     (default $OUT)
  --alone S          seconds of the victim alone           (default $ALONE_SECS)
  --seconds S        seconds of each set-up's victim       (default $SECS)
  --setups 'A B ..'  set-ups to run, in order              (default '$SETUPS')
  --capacity R       fixed pool capacity, ops/s            (default $CAPACITY)
  --reserve R|auto   victim's limit in the pool, ops/s     (default: rate alone, rounded down to 50)
  --agg-rate R       aggressor's static rule / pool limit  (default $AGG_RATE)
  --target MS|auto   auto pool's p99 target, whole ms      (default: the pool's median p99 in an
                     auto run with the victim alone, times 2, rounded up, within 2-10 ms)
  --start R          auto pool's starting capacity         (default $START)
  --watch CONDS      the calls whose p99 steers the auto pool (default '$WATCH'; '' for
                     every call of the pool: the aggressors' creates and unlinks too)
  --timeline S       timeline length, s; 0: none           (default $TL_SECS)
  --timeline-setup auto|auto-lim                           (default $TL_SETUP)
  --max-seconds S    bound on the whole script             (default $MAX_SECS)
  --work-dir/--mount/--volume as up.sh
EOF
}

UP_ARGS=()
while [ $# -gt 0 ]; do
    case "$1" in
        --out) OUT=$2; shift 2 ;;
        --alone) ALONE_SECS=$2; shift 2 ;;
        --seconds) SECS=$2; shift 2 ;;
        --setups) SETUPS=$2; shift 2 ;;
        --capacity) CAPACITY=$2; shift 2 ;;
        --reserve) RESERVE=$2; shift 2 ;;
        --agg-rate) AGG_RATE=$2; shift 2 ;;
        --target) TARGET_MS=$2; shift 2 ;;
        --start) START=$2; shift 2 ;;
        --watch) WATCH=$2; shift 2 ;;
        --timeline) TL_SECS=$2; shift 2 ;;
        --timeline-setup) TL_SETUP=$2; shift 2 ;;
        --max-seconds) MAX_SECS=$2; shift 2 ;;
        --work-dir|--mount|--volume) UP_ARGS+=("$1" "$2"); shift 2 ;;
        -h|--help) usage_text >&2; exit 0 ;;
        *) usage_text >&2; die "unknown argument '$1'" ;;
    esac
done
[ "$TL_SECS" -gt 0 ] || TIMELINE=0
parse_args "${UP_ARGS[@]}"
need_root
T_START=$SECONDS

# --- clean-up: every process we start is in PIDS; the volume goes down only if we brought it up
PIDS=()
WE_UPPED=0
TMP=$(mktemp -d /tmp/sluice-gluster-protect.XXXXXX)
cleanup() {
    local rc=$? pid
    trap - EXIT INT TERM
    for pid in "${PIDS[@]}"; do
        # the process and, as `sluice run` and timeout start their own, its group
        kill -TERM "$pid" 2>/dev/null || true
    done
    sleep 0.5
    for pid in "${PIDS[@]}"; do kill -KILL "$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "${MOUNT_POINT:?}/protect" 2>/dev/null || true
    if [ "$WE_UPPED" = 1 ]; then
        say "taking the volume down (we brought it up)"
        "$HERE/down.sh" "${UP_ARGS[@]}" || true
    fi
    rm -rf "$TMP"
    exit "$rc"
}
trap cleanup EXIT
trap 'say "interrupted"; exit 130' INT TERM

# A watchdog: past --max-seconds, the script is ended (its trap cleans up).
# (its sleep must not outlive it: it would hold the script's output open)
(
    trap 'kill "$sp" 2>/dev/null; exit 0' TERM
    sleep "$MAX_SECS" >/dev/null 2>&1 </dev/null & sp=$!
    wait "$sp"
    echo "$PROG: --max-seconds $MAX_SECS reached: stopping" >&2
    kill -TERM $$
) &
WATCHDOG=$!
PIDS+=("$WATCHDOG")

left() { echo $(( MAX_SECS - (SECONDS - T_START) )); }

# --- the volume and the binaries
if mounted_here; then
    say "volume already mounted at $MOUNT_POINT: using it (and leaving it up)"
else
    WE_UPPED=1
    "$HERE/up.sh" "${UP_ARGS[@]}" >/dev/null
fi
M=$MOUNT_POINT
BIN=$TMP/bin
mkdir -p "$BIN" "$OUT"
cp "$REPO/target/release/sluice" "$REPO/target/release/libsluice_stage.so" "$BIN/" \
    || die "build first: cargo build --release"
cc -O2 -Wall -o "$BIN/mdprobe" "$HERE/mdprobe.c"
SLUICE=$BIN/sluice
export SLUICE_STAGE=$BIN/libsluice_stage.so
PY=python3
/usr/bin/python3 -c 'import matplotlib' 2>/dev/null && PY=/usr/bin/python3
if ! $PY -c 'import matplotlib' 2>/dev/null; then
    say "installing python3-matplotlib (for the timeline's plot)"
    { apt-get install -y python3-matplotlib || { apt-get update && apt-get install -y python3-matplotlib; }; } >/dev/null 2>&1 || true
    PY=/usr/bin/python3
fi
rm -rf "$M/protect"
mkdir -p "$M/protect/victim" "$M/protect/aggressors"

# --- the shared machine (as measure.sh): CPU of GlusterFS, of this script's processes, of others
TCK=$(getconf CLK_TCK)
machine_busy() { awk '/^cpu / { print $2 + $3 + $4 + $7 + $8 + $9 }' /proc/stat; }
cpu_of() { # comm: CPU ticks of every process of that name
    local t=0 pid s
    for pid in $(pgrep -x "$1"); do
        s=$(awk '{ print $14 + $15 }' "/proc/$pid/stat" 2>/dev/null) || continue
        t=$((t + ${s:-0}))
    done
    echo "$t"
}
gluster_cpu() { echo $(( $(cpu_of glusterfsd) + $(cpu_of glusterfs) + $(cpu_of glusterd) )); }
# this shell's own and its waited-for children's ticks (the loads, the local, mdprobe …)
ours_cpu() { awk '{ print $14 + $15 + $16 + $17 }' "/proc/$$/stat"; }
mark() { M_BUSY=$(machine_busy); M_GL=$(gluster_cpu); M_OURS=$(ours_cpu); M_T=$EPOCHREALTIME; M_B=$(cpu_of glusterfsd); M_C=$(cpu_of glusterfs); }
# after every process of the run was waited for: "others brick client" in % of one core
cpu_report() {
    local busy gl ours t b c
    busy=$(machine_busy); gl=$(gluster_cpu); ours=$(ours_cpu); t=$EPOCHREALTIME
    b=$(cpu_of glusterfsd); c=$(cpu_of glusterfs)
    awk -v bu="$((busy - M_BUSY))" -v g="$((gl - M_GL))" -v o="$((ours - M_OURS))" \
        -v b="$((b - M_B))" -v c="$((c - M_C))" -v s="$M_T" -v e="$t" -v h="$TCK" \
        'BEGIN { d = e - s; x = (bu - g - o) / h; if (x < 0) x = 0;
                 printf "%.0f %.0f %.0f", 100 * x / d, 100 * b / h / d, 100 * c / h / d }'
}
wait_quiet() {
    local i b0 b1 pct n=$(( QUIET_WAIT / 2 ))
    for i in $(seq 1 "$n"); do
        b0=$(machine_busy); sleep 2; b1=$(machine_busy)
        pct=$(( (b1 - b0) * 100 / TCK / 2 ))
        [ "$pct" -ge 15 ] || return 0
        [ "$i" -gt 1 ] || say "  (waiting up to ${QUIET_WAIT}s for the machine to be quiet: others use ${pct}% CPU)"
    done
    say "  (machine still busy after ${QUIET_WAIT}s: measuring anyway; its CPU is recorded)"
}

# --- helpers
bg() { "$@" & PIDS+=($!); }
# mdprobe's line → shell variables calls seconds rate p50_us p90_us p99_us max_us
parse_probe() { tr ' ' '\n' <"$1" | sed 's/\/s$//' | grep -E '^(calls|seconds|rate|p50_us|p90_us|p99_us|max_us)='; }
# aggressors' rate over the victim's window: `sluice load --csv` prints "second,ops";
# the victim runs from second $2+1 to $2+$3 of the aggressors' clock
agg_rate() { # files... (last two args: offset, seconds)
    local n=$# off=${*: -2:1} secs=${*: -1}
    local files=("${@:1:$((n - 2))}")
    cat "${files[@]}" | awk -F, -v a="$off" -v b="$((off + secs))" \
        '$1 ~ /^[0-9]+$/ && $1 > a && $1 <= b { s += $2 } END { printf "%.0f", s / (b - a) }'
}
# the victim's rate over its seconds 3.. (past the controller's first cycles), from -s lines
steady_rate() {
    awk '/^sec=/ { split($1, k, "="); split($3, c, "="); if (k[2] > 2) { s += c[2]; n++ } }
         END { if (n) printf "%.0f", s / n; else print "" }' "$1"
}

LOCAL_PID=
start_local() { # config → a local controller on $TMP/w
    local w=$TMP/w i
    rm -rf "$w"; mkdir -p "$w/state" "$w/shm"
    cp "$1" "$w/local.toml"
    bg timeout "$(left)" "$SLUICE" local --socket "$w/local.sock" --state-dir "$w/state" \
        --config "$w/local.toml" --shm-dir "$w/shm" >"$w/local.log" 2>&1
    LOCAL_PID=$!
    for i in $(seq 1 50); do [ -S "$w/local.sock" ] && return 0; sleep 0.1; done
    cat "$w/local.log" >&2; die "the local controller did not start"
}
stop_local() {
    [ -n "$LOCAL_PID" ] || return 0
    kill -TERM "$LOCAL_PID" 2>/dev/null || true
    wait "$LOCAL_PID" 2>/dev/null || true
    cp "$TMP/w/local.log" "$TMP/last-local.log" 2>/dev/null || true
    LOCAL_PID=
}
SOCK() { echo "$TMP/w/local.sock"; }

# pool_config KIND LIMITED: the pool (fixed or auto), the victim's reservation, and with
# LIMITED=1 each aggressor's limit. mknod is class "directory" (docs/operations.md), not
# "metadata": a pool of class=metadata alone would not hold the aggressors' creates.
pool_config() {
    local kind=$1 limited=$2 f=$TMP/pool.toml i
    {
        echo 'interval = "1s"'
        echo '[[pool]]'
        echo 'name = "md"'
        echo "match = \"class=metadata,directory mount=$M\""
        echo "algorithm = \"$ALGO\""
        if [ "$kind" = auto ]; then
            echo 'capacity = "auto"'
            echo "auto = { target_p99 = \"${TARGET_MS}ms\", start = \"${START}/s\"${WATCH:+, watch = \"$WATCH\"} }"
        else
            echo "capacity = \"${CAPACITY}/s\""
        fi
        printf '[[job]]\njob = "victim"\npool = "md"\nlimit = "%s/s"\n' "$RESERVE"
        if [ "$limited" = 1 ]; then
            for i in $(seq 1 "$AGGS"); do
                printf '[[job]]\njob = "agg%d"\npool = "md"\nlimit = "%s/s"\n' "$i" "$AGG_RATE"
            done
        fi
    } >"$f"
    echo "$f"
}

# prefix HOW JOB: sets PFX, what a process of a set-up runs under: nothing (bare), a
# static rule (standalone), or attached to the local controller as job JOB
prefix() {
    case "$1" in
        bare) PFX=() ;;
        static) PFX=("$SLUICE" run --standalone --rule "class=metadata,directory rate=${AGG_RATE}/s" --mount "$M" --) ;;
        attach) PFX=("$SLUICE" run --socket "$(SOCK)" --job "$2" --mount "$M" --) ;;
    esac
}

CSV=$OUT/protect.csv
[ -f "$CSV.partial" ] && rm -f "$CSV.partial"
echo "setup,run,victim_rate,victim_steady_rate,pct_of_alone,p50_us,p90_us,p99_us,max_us,aggressors_total_rate,aggressor_rates,pool_capacity_end,pool_p99_end_ms,target_ms,reserve,agg_rate,brick_cpu_pct,client_cpu_pct,others_cpu_pct" >"$CSV.partial"
ALONE_RATE=

# one SETUP: 4 aggressors (none for "alone"), the victim from 2 s after them for SECS
one() {
    local setup=$1 run=${2:-1} secs=$SECS how_v=bare how_a=bare n=$AGGS cfg= d=$TMP/run.$1.$2 i
    mkdir -p "$d"
    case "$setup" in
        alone) n=0; secs=$ALONE_SECS ;;
        none) ;;
        static) how_a=static ;;
        pool|auto) cfg=$(pool_config "${setup%%-*}" 0); how_v=attach; how_a=attach ;;
        pool-lim|auto-lim) cfg=$(pool_config "${setup%%-*}" 1); how_v=attach; how_a=attach ;;
        *) die "unknown set-up $setup" ;;
    esac
    [ "$(left)" -gt $((secs + 20)) ] || { say "skipping $setup: not enough time left"; return 0; }
    say "set-up $setup (run $run): victim ${secs}s$([ "$n" -gt 0 ] && echo " beside $n aggressors")"
    wait_quiet
    mark
    [ -z "$cfg" ] || start_local "$cfg"
    local apids=()
    for i in $(seq 1 "$n"); do
        prefix "$how_a" "agg$i"
        bg timeout $((secs + 15)) "${PFX[@]}" "$SLUICE" load --dir "$M/protect/aggressors" \
            --ops mknod,unlink --duration $((secs + 4)) --csv >"$d/agg.$i" 2>"$d/agg.$i.err"
        apids+=($!)
    done
    [ "$n" -eq 0 ] || sleep 2
    prefix "$how_v" victim
    timeout $((secs + 15)) "${PFX[@]}" "$BIN/mdprobe" -s "$M/protect/victim" "$secs" \
        >"$d/victim" 2>"$d/victim.sec" &
    PIDS+=($!)
    local vpid=$!
    local cap_end= p99_end=
    if [ -n "$cfg" ]; then
        sleep $((secs - 1))
        "$SLUICE" pool list --socket "$(SOCK)" --json >"$d/pool.json" 2>/dev/null || true
        cap_end=$(jq -r '.pools[0].capacity' "$d/pool.json" 2>/dev/null | sed 's/^auto //' || true)
        p99_end=$(jq -r '.pools[0].latency_p99_s * 1000 | . * 100 | round / 100' "$d/pool.json" 2>/dev/null || true)
        "$SLUICE" jobs --socket "$(SOCK)" --json >"$d/jobs.json" 2>/dev/null || true
    fi
    wait "$vpid" || say "  victim exited with $?"
    for i in "${apids[@]}"; do wait "$i" || true; done
    stop_local
    local cpu oth bcpu ccpu
    cpu=$(cpu_report); read -r oth bcpu ccpu <<<"$cpu"
    local calls seconds rate p50_us p90_us p99_us max_us
    local got
    got=$(parse_probe "$d/victim") || die "no result from the victim: $(cat "$d/victim" "$d/victim.sec" | tail -3)"
    eval "$got"
    local steady agg_total=0 agg_each=""
    steady=$(steady_rate "$d/victim.sec")
    for i in $(seq 1 "$n"); do
        local r; r=$(agg_rate "$d/agg.$i" 2 "$secs")
        agg_each="$agg_each${agg_each:+ }$r"; agg_total=$((agg_total + r))
    done
    [ "$setup" != alone ] || ALONE_RATE=$rate
    local pct
    pct=$(awk -v r="$rate" -v a="${ALONE_RATE:-$rate}" 'BEGIN { printf "%.0f", 100 * r / a }')
    # shellcheck disable=SC2154 # calls, seconds, p50_us… are set by the eval above
    echo "$setup,$run,$rate,$steady,$pct,$p50_us,$p90_us,$p99_us,$max_us,$agg_total,$agg_each,$cap_end,$p99_end,$([ -n "$cfg" ] && [ "${setup%%-*}" = auto ] && echo "$TARGET_MS"),$([ -n "$cfg" ] && echo "$RESERVE"),$([ "$how_a" != bare ] && echo "$AGG_RATE"),$bcpu,$ccpu,$oth" >>"$CSV.partial"
    say "  victim $rate/s (steady $steady/s, ${pct}% of alone) p50 ${p50_us}us p99 ${p99_us}us; aggressors $agg_total/s ($agg_each)${cap_end:+; pool capacity $cap_end, p99 ${p99_end}ms}; others' CPU ${oth}%"
    cp -r "$d" "$TMP/keep.$setup.$run" 2>/dev/null || true
    [ ! -f "$TMP/last-local.log" ] || cp "$TMP/last-local.log" "$TMP/keep.$setup.$run/local.log"
}

# 1. the victim alone
one alone 1
[ "$RESERVE" != auto ] || RESERVE=$(( ALONE_RATE / 50 * 50 ))
say "victim alone: $ALONE_RATE/s; its reservation in the pool: $RESERVE/s"

# the p99 target: the pool's own p99 (its watched calls, without the throttle's wait) with
# the victim alone under an auto pool, ×2, rounded up, kept within 2-10 ms. Not closer:
# on this machine a stat's latency rises at low rates as well (idle CPUs wake slowly),
# so a target near the p99 alone (×1.25 gave 3 ms) cannot be held at any capacity, and
# AIMD cuts the pool to its floor (README, "Run with the watch")
if [ "$TARGET_MS" = auto ]; then
    TARGET_MS=100   # a target nobody reaches: the pool only measures
    say "calibrating the p99 target: victim alone under an automatic pool"
    cfg=$(pool_config auto 0)
    start_local "$cfg"
    timeout 30 "$SLUICE" run --socket "$(SOCK)" --job victim --mount "$M" -- \
        "$BIN/mdprobe" "$M/protect/victim" 8 >"$TMP/calib" 2>/dev/null &
    PIDS+=($!); cpid=$!
    p99s=()
    for i in $(seq 1 8); do
        sleep 1
        v=$("$SLUICE" pool list --socket "$(SOCK)" --json 2>/dev/null | jq -r '.pools[0].latency_p99_s' || echo 0)
        [ "$i" -le 2 ] || p99s+=("$v")
    done
    wait "$cpid" || true
    stop_local
        # (whole milliseconds: the configuration takes no fraction of one)
    TARGET_MS=$(printf '%s\n' "${p99s[@]}" | sort -g | awk '{ a[NR] = $1 } END { m = a[int((NR + 1) / 2)] * 1000 * 2; m = (m == int(m)) ? m : int(m) + 1; if (m < 2) m = 2; if (m > 10) m = 10; print m }')
    say "  pool p99 with the victim alone: $(printf '%s ' "${p99s[@]}")s; target $TARGET_MS ms"
fi

# 2. the set-ups
for s in $SETUPS; do one "$s" 1; done
mv "$CSV.partial" "$CSV"

# 3. the timeline
TL_CSV=$OUT/timeline.csv
if [ "$TIMELINE" = 1 ] && [ "$(left)" -gt $((TL_SECS + 20)) ]; then
    say "timeline (${TL_SECS}s, $TL_SETUP, target ${TARGET_MS} ms): aggressors at 10-50 s and from 70 s"
    wait_quiet
    mark
    d=$TMP/timeline; mkdir -p "$d"
    start_local "$(pool_config auto "$([ "$TL_SETUP" = auto-lim ] && echo 1 || echo 0)")"
    T0=$EPOCHREALTIME
    timeout $((TL_SECS + 15)) "$SLUICE" run --socket "$(SOCK)" --job victim --mount "$M" -- \
        "$BIN/mdprobe" -s "$M/protect/victim" "$TL_SECS" >"$d/victim" 2>"$d/victim.sec" &
    PIDS+=($!); vpid=$!
    # the sampler: pool and jobs every second
    (
        while :; do
            t=$EPOCHREALTIME
            p=$("$SLUICE" pool list --socket "$(SOCK)" --json 2>/dev/null | jq -c '.pools[0]' 2>/dev/null) || p=null
            j=$("$SLUICE" jobs --socket "$(SOCK)" --json 2>/dev/null | jq -c '[.jobs[] | {job, a: .pools.md.allocation, r: .pools.md.rate}]' 2>/dev/null) || j=null
            echo "{\"t\": $t, \"pool\": ${p:-null}, \"jobs\": ${j:-null}}"
            sleep 1
        done
    ) >"$d/samples.jsonl" &
    PIDS+=($!); spid=$!
    agg_wave() { # seconds-from-T0 duration tag
        local at=$1 dur=$2 tag=$3 i
        sleep "$(awk -v a="$at" -v t0="$T0" -v n="$EPOCHREALTIME" 'BEGIN { s = t0 + a - n; print (s > 0 ? s : 0) }')"
        for i in $(seq 1 "$AGGS"); do
            echo "$EPOCHREALTIME" >"$d/agg.$tag.$i.t0"
            timeout $((dur + 10)) "$SLUICE" run --socket "$(SOCK)" --job "agg$i" --mount "$M" -- \
                "$SLUICE" load --dir "$M/protect/aggressors" --ops mknod,unlink --duration "$dur" --csv \
                >"$d/agg.$tag.$i" 2>/dev/null &
            PIDS+=($!)
        done
    }
    agg_wave 10 40 a
    agg_wave 70 $((TL_SECS - 70)) b
    wait "$vpid" || true
    kill "$spid" 2>/dev/null || true; wait "$spid" 2>/dev/null || true
    wait_all_aggs() { local p; for p in $(jobs -p); do [ "$p" = "$WATCHDOG" ] || [ "$p" = "$LOCAL_PID" ] || wait "$p" 2>/dev/null || true; done; }
    wait_all_aggs
    stop_local
    read -r oth bcpu ccpu <<<"$(cpu_report)"
    say "  others' CPU during the timeline: ${oth}%"
    cp -r "$d" "$TMP/keep.timeline"
    T0="$T0" TARGET_MS="$TARGET_MS" WATCH="$WATCH" OTHERS="$oth" $PY "$HERE/timeline.py" "$d" "$TL_CSV" "$OUT/timeline.png" \
        "$TL_SETUP" >"$OUT/timeline-summary.md" || say "timeline.py failed"
fi

# 4. the summary
CAPACITY=$CAPACITY ALONE_SECS=$ALONE_SECS SECS=$SECS AGGS=$AGGS \
    $PY "$HERE/protect_summary.py" "$CSV" "$OUT/timeline-summary.md" >"$OUT/protect.md" || true
# keep the raw files of the last run (victim per-second lines, aggressors' CSV, pool/jobs JSON)
rm -rf "$OUT/raw"; mkdir -p "$OUT/raw"; cp -r "$TMP"/keep.* "$OUT/raw/" 2>/dev/null || true
cat "$OUT/protect.md"
say "done in $((SECONDS - T_START)) s"
