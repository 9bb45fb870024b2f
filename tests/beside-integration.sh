#!/usr/bin/env bash
# What make test runs beside the integration tests, which mostly wait (about 100 s of CPU
# in 606 s): tests/integration.sh starts it at nice 19 once the modules that measure
# rates have run. One after another, so that at most one compiler runs at a time:
#   1. the upgrade test's build of the previous release (tests/old-release.sh), first
#      because the `versions` module waits for it;
#   2. clippy on every target, warnings as errors;
#   3. the build of the unit, property and doc tests, which make test runs next.
# Runs all three, then fails if any failed. Environment: CARGO (default cargo), MAKE.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
cargo=${CARGO:-cargo}
failed=()
step() {
    local name=$1 started=$SECONDS
    shift
    echo "=== beside: $name: $*"
    if "$@"; then
        echo "=== beside: $name ok ($((SECONDS - started)) s)"
    else
        echo "=== beside: $name FAILED ($((SECONDS - started)) s)"
        failed+=("$name")
    fi
}
step old-release bash tests/old-release.sh
step clippy "${MAKE:-make}" --no-print-directory clippy
step unit-test-build "$cargo" test --workspace --no-run
if [[ ${#failed[@]} -gt 0 ]]; then
    echo "tests/beside-integration.sh: failed: ${failed[*]}" >&2
    exit 1
fi
