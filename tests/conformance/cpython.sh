#!/usr/bin/env bash
# Conformance: CPython's own file-API tests give the same results under the stage as
# without it. See tests/conformance/README.md.
#
#   tests/conformance/cpython.sh            (SLUICE_BIN_DIR=DIR to test other binaries)
#
# Environment: SLUICE_BIN_DIR (default: the repository's target/release),
# SLUICE_CONFORMANCE_JOBS (regrtest -j, default 2), SLUICE_CONFORMANCE_KEEP=1 (keep the
# work directory: logs, junit XML, stats).
set -euo pipefail
SUITE=cpython
# shellcheck source=tests/conformance/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

TESTS=(test_os test_posix test_shutil test_tempfile test_io test_fileio test_stat test_glob)
RULE='rate=1000000M/s' # a catch-all rule (every call matches) that never holds anything
JOBS=${SLUICE_CONFORMANCE_JOBS:-2}

find_sluice

# Debian's interpreter by its real path (not a pyenv or other shim found on PATH), and
# Debian's copy of its test suite.
if [[ ! -x /usr/bin/python3.11 || ! -f /usr/lib/python3.11/test/test_os.py ]]; then
    apt_install python3.11 libpython3.11-testsuite
fi
PY=$(readlink -f /usr/bin/python3.11)
[[ $(head -c4 "$PY" | od -An -c | tr -d ' ') == '177ELF' ]] || die "$PY is not an ELF executable (a shim?)"
say "python: $PY ($("$PY" -c 'import sys; print(sys.version.split()[0])')), tests from /usr/lib/python3.11/test"

make_workdir
snapshot_sluice

# The same environment for both runs, independent of the caller's: no PYTHON* or PYENV*
# variables, no pyenv shims on PATH, temporary files under the work directory (which the
# catch-all rule manages).
clean_env=(env)
while IFS='=' read -r name _; do
    case $name in PYTHON* | PYENV*) clean_env+=(-u "$name") ;; esac
done < <(env)
path=$(tr ':' '\n' <<<"$PATH" | grep -v -e '\.pyenv' -e '^$' | paste -sd:)
clean_env+=("PATH=$path")

# run NAME [PREFIX...]: regrtest in WORK/NAME, junit to WORK/NAME.xml, output to WORK/NAME.log.
run() {
    local name=$1
    shift
    mkdir -p "$WORK/$name/tmp"
    (cd "$WORK/$name" && "${clean_env[@]}" "TMPDIR=$WORK/$name/tmp" "$@" \
        "$PY" -m test -j"$JOBS" --timeout=900 --junit-xml "$WORK/$name.xml" "${TESTS[@]}") \
        >"$WORK/$name.log" 2>&1
}

say "baseline: $PY -m test -j$JOBS ${TESTS[*]}"
t0=$(now)
rc_base=0
run base || rc_base=$?
t1=$(now)
say "baseline: exit $rc_base, $(elapsed "$t0" "$t1") s; $(grep -E '^Tests result:' "$WORK/base.log" || echo 'no result line')"

say "staged:   $SLUICE run --rule '$RULE' --stats stats.json -- $PY -m test -j$JOBS ..."
rc_stage=0
run stage "$SLUICE" run --rule "$RULE" --job "conformance-cpython-$$" --stats "$WORK/stats.json" -- || rc_stage=$?
t2=$(now)
say "staged:   exit $rc_stage, $(elapsed "$t1" "$t2") s; $(grep -E '^Tests result:' "$WORK/stage.log" || echo 'no result line')"

say "per-module and per-test-case comparison (baseline vs staged):"
"$PY" "$CONF_DIR/regrtest_compare.py" "$WORK" "${TESTS[@]}" | tee "$WORK/compare.txt" || true
passed=0 failed=1 # unless the comparison says otherwise
if [[ $(tail -n 1 "$WORK/compare.txt") =~ ^checks:\ ([0-9]+)\ passed,\ ([0-9]+)\ failed$ ]]; then
    passed=${BASH_REMATCH[1]} failed=${BASH_REMATCH[2]}
fi
if [[ $failed -gt 0 ]]; then
    say "the differing runs' logs: $WORK/{base,stage}.log (set SLUICE_CONFORMANCE_KEEP=1 to keep them)"
    tail -n 25 "$WORK/stage.log" | sed 's/^/    stage.log: /'
fi
say "wall time: baseline $(elapsed "$t0" "$t1") s, staged $(elapsed "$t1" "$t2") s"
finish "$passed" "$failed"
