#!/usr/bin/env bash
# Runs every conformance suite (tests/conformance/README.md), even after one fails, and
# sums their summary lines into one: `conformance: N passed, M failed`.
# Environment: as for each suite (SLUICE_BIN_DIR, SLUICE_CONFORMANCE_KEEP, ...).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
passed=0
failed=0
for suite in stdio-fastpath cpython fio; do
    echo "[conformance] === $suite ($here/$suite.sh) ==="
    log=$(mktemp)
    rc=0
    "$here/$suite.sh" 2>&1 | tee "$log" || rc=$?
    line=$(grep -E "^conformance-$suite: [0-9]+ passed, [0-9]+ failed$" "$log" | tail -n 1 || true)
    rm -f "$log"
    if [[ -z $line ]]; then
        echo "[conformance] $suite.sh ended (exit $rc) without its summary line: counted as 1 failed"
        failed=$((failed + 1))
        continue
    fi
    [[ $line =~ ([0-9]+)\ passed,\ ([0-9]+)\ failed ]]
    p=${BASH_REMATCH[1]} f=${BASH_REMATCH[2]}
    if [[ $rc -ne 0 && $f -eq 0 ]]; then
        echo "[conformance] $suite.sh exited $rc with no failed check: counted as 1 failed"
        f=1
    fi
    passed=$((passed + p))
    failed=$((failed + f))
done
echo "conformance: $passed passed, $failed failed"
[[ $failed -eq 0 ]]
