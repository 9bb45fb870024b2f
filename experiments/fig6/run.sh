#!/usr/bin/env bash
# PADLL §5.1–5.2, Fig. 6: per-operation (open, getattr, read, write) and per-class
# (metadata, data) limits, stepped live through the admin API (`sluice rule change`),
# scaled to one 2-core machine and tmpfs.
#
# For each of six panels: one job (`sluice run --job fig6-NAME`) under a private local
# controller, a closed-loop `sluice load` asking for far more than any limit, a rule
# `sluice rule start`ed for that job and changed every STEP seconds through five limits.
# Before it, BASELINE seconds of the same load without sluice (the paper's "baseline").
# Writes experiments/fig6/PANEL.csv, PANEL.stats.txt (the stage's counters of the job),
# fig6.png and summary.md (per step: the limit, the
# achieved mean over the step without its first second, and the deviation), and fails
# when a step misses its limit by more than TOLERANCE percent.
#
#   bash experiments/fig6/run.sh
#
# Environment: STEP (s, default 4), BASELINE (s, default 3; 0 skips it), THREADS
# (default 2), TOLERANCE (%, default 2), PANELS (default: all six, e.g. "open getattr").
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
OUT=$ROOT/experiments/fig6
STEP=${STEP:-4}
BASELINE=${BASELINE:-3}
THREADS=${THREADS:-2}
TOLERANCE=${TOLERANCE:-2}
PANELS=${PANELS:-open getattr read write metadata data}
NSTEPS=5
BLOCK=262144                         # bytes per read or write in the data panels (256 KiB)

say() { printf 'fig6: %s\n' "$*" >&2; }

# name | filter | ops | unit | limits (rule syntax, one per step)
panel_spec() {
    case $1 in
        open)     echo "op=open|open|ops|2k/s 5k/s 1k/s 8k/s 3k/s" ;;
        getattr)  echo "op=getattr|getattr|ops|2k/s 5k/s 1k/s 8k/s 3k/s" ;;
        read)     echo "op=read|read|MiB|20MiB/s 50MiB/s 10MiB/s 80MiB/s 30MiB/s" ;;
        write)    echo "op=write|write|MiB|20MiB/s 50MiB/s 10MiB/s 80MiB/s 30MiB/s" ;;
        # the production mix of §2.1: open, close, getattr and rename are 98% of it
        metadata) echo "class=metadata|getattr,open,getattr,close,rename|ops|2k/s 5k/s 1k/s 8k/s 3k/s" ;;
        data)     echo "class=data|read,write|MiB|20MiB/s 50MiB/s 10MiB/s 80MiB/s 30MiB/s" ;;
        *) say "unknown panel $1"; exit 2 ;;
    esac
}

# A rate in rule syntax as a number in the panel's unit: 2k/s -> 2000, 20MiB/s -> 20.
rate_value() {
    local r=${1%/s}
    case $r in
        *MiB) echo "${r%MiB}" ;;
        *k)   echo $(( ${r%k} * 1000 )) ;;
        *)    echo "$r" ;;
    esac
}

# A private copy of the binaries: target/ may be rebuilt while this runs.
if [[ ! -x $ROOT/target/release/sluice || ! -f $ROOT/target/release/libsluice_stage.so ]]; then
    say "building sluice (cargo build --release)"
    (cd "$ROOT" && cargo build --release)
fi
if ! python3 -c 'import matplotlib' 2>/dev/null; then
    say "installing matplotlib (pip)"
    python3 -m pip install --quiet matplotlib
fi

W=$(mktemp -d /dev/shm/sluice-fig6.XXXXXX)
LOCAL_PID=
JOB_PID=
cleanup() {
    local rc=$?
    set +e
    # the job: timeout, sluice run and the load (timeout passes the signal on)
    if [[ -n $JOB_PID ]]; then kill "$JOB_PID" 2>/dev/null; wait "$JOB_PID" 2>/dev/null; fi
    if [[ -n $LOCAL_PID ]]; then kill "$LOCAL_PID" 2>/dev/null; wait "$LOCAL_PID" 2>/dev/null; fi
    rm -rf "$W"
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

mkdir -p "$W/bin" "$W/state" "$W/shm" "$W/dir"
cp "$ROOT/target/release/sluice" "$ROOT/target/release/libsluice_stage.so" "$W/bin/"
SLUICE=$W/bin/sluice
export SLUICE_STAGE=$W/bin/libsluice_stage.so
SOCK=$W/local.sock

"$SLUICE" local --socket "$SOCK" --state-dir "$W/state" --shm-dir "$W/shm" --config none \
    >"$W/local.log" 2>&1 &
LOCAL_PID=$!
for _ in $(seq 100); do [[ -S $SOCK ]] && break; sleep 0.05; done
[[ -S $SOCK ]] || { cat "$W/local.log" >&2; say "local controller did not start"; exit 1; }

DURATION=$(( STEP * NSTEPS ))
for p in $PANELS; do
    IFS='|' read -r filter ops unit limits <<<"$(panel_spec "$p")"
    read -r -a lim <<<"$limits"
    csv=$OUT/$p.csv
    echo "phase,second,limit,achieved,unit" >"$csv"
    per=1; [[ $unit == MiB ]] && per=$BLOCK          # ops -> bytes

    # baseline: the same load without sluice, a few seconds
    if (( BASELINE > 0 )); then
        say "$p: baseline ${BASELINE}s"
        timeout $(( BASELINE + 20 )) "$SLUICE" load --dir "$W/dir" --ops "$ops" \
            --threads "$THREADS" --duration "$BASELINE" --block "$BLOCK" --csv >"$W/base.csv"
        awk -F, -v per="$per" -v unit="$unit" '
            NF == 2 { v = $2 * per; if (unit == "MiB") v /= 1048576;
                      printf "baseline,%d,,%.3f,%s\n", $1, v, unit }' "$W/base.csv" >>"$csv"
    fi

    # padll: the rule started for this job, then changed every STEP seconds
    job=fig6-$p rule=fig6-$p
    say "$p: $filter, limits ${lim[*]}, ${STEP}s each"
    "$SLUICE" rule start --socket "$SOCK" "$rule: job=$job $filter rate=${lim[0]}" >/dev/null
    timeout $(( DURATION + 30 )) "$SLUICE" run --socket "$SOCK" --job "$job" --mount "$W/dir" \
        --stats "$W/stats.json" -- \
        "$SLUICE" load --dir "$W/dir" --ops "$ops" --threads "$THREADS" \
        --duration "$DURATION" --block "$BLOCK" --csv >"$W/run.csv" 2>"$W/run.err" &
    JOB_PID=$!
    # Change the rule as soon as the load has printed the last second of a step, so that
    # step k covers the load's seconds k*STEP+1 .. (k+1)*STEP.
    deadline=$(( SECONDS + DURATION + 30 ))
    : >"$W/changes.txt"
    for (( k = 1; k < NSTEPS; k++ )); do
        until (( $(grep -c , "$W/run.csv" || true) >= k * STEP )); do
            kill -0 "$JOB_PID" 2>/dev/null || { cat "$W/run.err" >&2; say "$p: the job ended early"; exit 1; }
            (( SECONDS < deadline )) || { say "$p: timed out"; exit 1; }
            sleep 0.02
        done
        t0=$(date +%s%N)
        "$SLUICE" rule change --socket "$SOCK" "$rule" "rate=${lim[k]}" >/dev/null
        echo "change to rate=${lim[k]} after second $(( k * STEP )):" \
            "the command took $(( ($(date +%s%N) - t0) / 1000000 )) ms" >>"$W/changes.txt"
    done
    wait "$JOB_PID" || { cat "$W/run.err" >&2; say "$p: the job failed"; exit 1; }
    JOB_PID=
    # the stage's own counters of the job, to check the load's count and the op mix
    python3 - "$W/stats.json" >"$OUT/$p.stats.txt" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
for op, c in s["ops"].items():
    if c["calls"]:
        print(f"op {op}: {c['calls']} calls, {c['bytes']} bytes")
for r in s["rules"]:
    print(f"rule {r['rule']}: admitted {r['admitted']}, {r['bytes']} bytes, "
          f"threads held {r['wait_ns'] / 1e9:.1f} s")
PY
    cat "$W/changes.txt" >>"$OUT/$p.stats.txt"
    "$SLUICE" rule stop --socket "$SOCK" "$rule" >/dev/null
    limvals=""
    for l in "${lim[@]}"; do limvals+="$(rate_value "$l") "; done
    awk -F, -v per="$per" -v unit="$unit" -v step="$STEP" -v lims="$limvals" '
        BEGIN { n = split(lims, L, " ") }
        NF == 2 && $1 >= 1 { k = int(($1 - 1) / step) + 1; if (k > n) next
                 v = $2 * per; if (unit == "MiB") v /= 1048576;
                 printf "padll,%d,%s,%.3f,%s\n", $1, L[k], v, unit }' "$W/run.csv" >>"$csv"
    say "$p: done ($(grep -c '^padll' "$csv") s)"
done

python3 "$OUT/plot.py" --dir "$OUT" --step "$STEP" --tolerance "$TOLERANCE" --threads "$THREADS" \
    --block "$BLOCK" --panels $PANELS
