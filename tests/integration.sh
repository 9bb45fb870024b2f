#!/usr/bin/env bash
# Runs sluice's integration tests (crates/sluice-cli/tests/integration.rs: one binary, a
# module per file) module by module, each in a process of its own, as `cargo test` ran
# each file's binary before they were one: a module's tests share a process and run side
# by side only with each other (several hold a lock so that their daemons and timings
# are not disturbed by each other's).
#
# The modules run in two lanes at once. They mostly wait on daemons, intervals and
# faults (measured 2026-11-28: 650 s one after another, for about 100 s of CPU): two
# lanes take half the time and leave a core for each. Lane A holds every module that
# uses something of the machine's own (its Slurm, a CephFS, the installed package and
# the default paths of the docs' commands), so that no two of them ever overlap, and
# the modules that use most CPU; lane B the others, and any module not listed.
# Each module's output goes to target/integration-logs/MODULE.log, and is printed when
# it fails. Runs every module, then names those that failed.
#
# usage: tests/integration.sh [MODULE…]   (default: every module; e.g. experiment cephfs)
# Environment: CARGO (default cargo); LANES=1 runs the modules one after another;
# SLUICE_BIN_DIR as for the tests themselves.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
crate=$root/crates/sluice-cli
cargo=${CARGO:-cargo}
lane_a="packages doc_commands slurm users tree cephfs supervise control restart experiment
    stdio efault counting"

all=$(sed -n 's/^mod \([a-z0-9_]*\);$/\1/p' "$crate/tests/integration.rs" | grep -vx common)
for m in $lane_a "$@"; do
    grep -qx "$m" <<<"$all" || {
        echo "tests/integration.sh: no module '$m' (one of: $(echo $all))" >&2
        exit 2
    }
done
if [[ $# -gt 0 ]]; then chosen=$*; else chosen=$all; fi
a=() b=()
for m in $chosen; do
    if grep -qw "$m" <<<"$lane_a"; then a+=("$m"); else b+=("$m"); fi
done
if [[ ${LANES:-2} == 1 ]]; then a+=("${b[@]}") b=(); fi

# Built once; its path from cargo's own report of the test target. The whole workspace
# selected, as make test's other cargo commands: a narrower selection unifies the
# dependencies' features differently and builds them all again.
bin=$(cd "$root" && "$cargo" test --release --workspace --test integration \
    --no-run --message-format=json 2>/dev/null |
    grep '"kind":\["test"\]' | sed -n 's/.*"executable":"\([^"]*\)".*/\1/p' | tail -1)
if [[ -z $bin || ! -x $bin ]]; then
    echo "tests/integration.sh: cannot build the integration tests:" >&2
    (cd "$root" && "$cargo" test --release --workspace --test integration --no-run) >&2
    exit 1
fi

logs=$root/target/integration-logs
mkdir -p "$logs"
rm -f "$logs"/*.log "$logs"/failed
# Runs each module of the lane in turn; a module that fails, or runs no test (its tests
# were renamed or lost), is added to the list of failures.
lane() {
    local m started
    for m in "$@"; do
        started=$SECONDS
        if (cd "$crate" && "$bin" "$m::") >"$logs/$m.log" 2>&1 &&
            grep -q '^test result: ok\. [1-9]' "$logs/$m.log"; then
            echo "=== integration tests: $m ok ($((SECONDS - started)) s)"
        else
            echo "=== integration tests: $m FAILED ($((SECONDS - started)) s):"
            cat "$logs/$m.log"
            echo "$m" >>"$logs/failed"
        fi
    done
}
started=$SECONDS
lane "${a[@]}" &
lane "${b[@]}" &
wait
echo "=== integration tests: $(wc -w <<<"$chosen") modules in $((SECONDS - started)) s" \
    "(logs: target/integration-logs)"
if [[ -s $logs/failed ]]; then
    echo "tests/integration.sh: failed: $(echo $(cat "$logs/failed"))" >&2
    echo "  rerun one: cargo test --release --workspace --test integration -- MODULE::" >&2
    exit 1
fi
