#!/usr/bin/env bash
# Runs sluice's integration tests (crates/sluice-tests/tests/integration.rs: one binary, a
# module per file) module by module, each in a process of its own, as `cargo test` ran
# each file's binary before they were one: a module's tests share a process and run side
# by side only with each other (several hold a lock so that their daemons and timings
# are not disturbed by each other's).
#
# The modules run one after another, each with the machine to itself: run two at once
# (they mostly wait: 650 s in all for about 100 s of CPU), accuracy's and a Slurm test
# failed in a clean clone's make test (2026-11-28).
# The modules that measure a rate to 2% (`quiet` below) run first, with the machine to
# themselves. Only then does work meant to overlap the others (they mostly wait) start
# in the background, at nice 19: the command in BESIDE if set (make test's
# tests/beside-integration.sh), else the upgrade test's build of the previous release
# (tests/old-release.sh) when `versions` runs. Started before them, that build cost a
# one-thread stat loop 7% of its rate in CI (accuracy::getattr_rate_is_held_for_one_thread:
# 1866/s for 2000/s; a bucket cannot give back time its caller was not running).
# The background command's output goes to target/integration-logs/beside.log; it is
# waited for at the end, and its failure is a failure.
# Each module's output goes to target/integration-logs/MODULE.log, and is printed when
# it fails. Runs every module, then names those that failed.
#
# usage: tests/integration.sh [MODULE…]   (default: every module; e.g. experiment cephfs)
# Environment: CARGO (default cargo); BESIDE (a shell command); SLUICE_BIN_DIR as for the
# tests themselves.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
crate=$root/crates/sluice-tests
cargo=${CARGO:-cargo}
all=$(sed -n 's/^mod \([a-z0-9_]*\);$/\1/p' "$crate/tests/integration.rs" | grep -vx common)
for m in "$@"; do
    grep -qx "$m" <<<"$all" || {
        echo "tests/integration.sh: no module '$m' (one of: $(echo $all))" >&2
        exit 2
    }
done
if [[ $# -gt 0 ]]; then chosen=$*; else chosen=$all; fi
# Built once; its path from cargo's own report of the test target. The whole workspace
# selected, as make test's other cargo commands: a narrower selection unifies the
# dependencies' features differently and builds them all again. Compile errors reach
# stderr.
bin=$(cd "$root" && "$cargo" test --workspace --test integration \
    --no-run --message-format=json-render-diagnostics |
    grep '"kind":\["test"\]' | sed -n 's/.*"executable":"\([^"]*\)".*/\1/p' | tail -1)
if [[ -z $bin || ! -x $bin ]]; then
    echo "tests/integration.sh: cannot build the integration tests" >&2
    exit 1
fi

logs=$root/target/integration-logs
mkdir -p "$logs"
rm -f "$logs"/*.log "$logs"/failed
started=$SECONDS
quiet=" accuracy "
first=() rest=()
for m in $chosen; do
    if [[ $quiet == *" $m "* ]]; then first+=("$m"); else rest+=("$m"); fi
done
# A module that fails, or runs no test (its tests were renamed or lost), is a failure.
run() {
    local m=$1 m_started=$SECONDS
    if (cd "$crate" && "$bin" "$m::") >"$logs/$m.log" 2>&1 &&
        grep -q '^test result: ok\. [1-9]' "$logs/$m.log"; then
        echo "=== integration tests: $m ok ($((SECONDS - m_started)) s)"
    else
        echo "=== integration tests: $m FAILED ($((SECONDS - m_started)) s):"
        cat "$logs/$m.log"
        echo "$m" >>"$logs/failed"
    fi
}
for m in "${first[@]}"; do run "$m"; done
beside=${BESIDE:-}
if [[ -z $beside && " ${rest[*]} " == *" versions "* ]]; then
    beside="bash tests/old-release.sh"
fi
if [[ -n $beside ]]; then
    (cd "$root" && exec nice -n 19 bash -c "$beside") >"$logs/beside.log" 2>&1 &
    beside_pid=$!
fi
for m in "${rest[@]}"; do run "$m"; done
if [[ -n $beside ]]; then
    waited=$SECONDS
    if wait "$beside_pid"; then
        echo "=== integration tests: beside them, '$beside' ok" \
            "(waited $((SECONDS - waited)) s for it)"
    else
        echo "=== integration tests: beside them, '$beside' FAILED:"
        cat "$logs/beside.log"
        echo "beside" >>"$logs/failed"
    fi
fi
echo "=== integration tests: $(wc -w <<<"$chosen") modules in $((SECONDS - started)) s" \
    "(logs: target/integration-logs)"
if [[ -s $logs/failed ]]; then
    echo "tests/integration.sh: failed: $(echo $(cat "$logs/failed"))" >&2
    echo "  rerun one: cargo test --workspace --test integration -- MODULE::" >&2
    exit 1
fi
