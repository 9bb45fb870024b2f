#!/usr/bin/env bash
# Conformance: the stage's shortcut for formatted stdio on unmanaged targets (the C shim
# passes printf & co on a descriptor it knows to be unmanaged straight to the real
# function) never lets a managed byte through uncounted. tests/c/stdio_fastpath.c moves
# stdout and its streams between /dev/null, unmanaged and managed files (dup2 under a
# stream, freopen, fclose and a fopen that reuses the FILE and the descriptor, fdopen,
# dprintf, __printf_chk, fscanf); --stats must count exactly the bytes it wrote to and
# read from managed files, and its unmanaged calls as unmanaged. The program also runs
# without the stage: every call must return the same.
#
#   tests/conformance/stdio-fastpath.sh   (SLUICE_BIN_DIR=DIR to test other binaries)
set -euo pipefail
SUITE=stdio-fastpath
# shellcheck source=tests/conformance/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

find_sluice
[[ -x /usr/bin/python3 ]] || apt_install python3 # reads the --stats JSON
make_workdir
snapshot_sluice
passed=0
failed=0
check() { # NAME CONDITION-RESULT DETAIL
    if [[ $2 == ok ]]; then
        passed=$((passed + 1))
        say "ok: $1"
    else
        failed=$((failed + 1))
        say "FAILED: $1: $3"
    fi
}

cc -O2 -Wall -o "$WORK/prog" "$REPO_ROOT/tests/c/stdio_fastpath.c"
for variant in native staged; do
    rm -rf "$WORK/m" "$WORK/u" && mkdir -p "$WORK/m" "$WORK/u"
    rc=0
    if [[ $variant == native ]]; then
        "$WORK/prog" "$WORK/m" "$WORK/u" >/dev/null 2>"$WORK/$variant.err" || rc=$?
    else
        "$SLUICE" run --standalone --rule 'class=data rate=1000000M/s' --mount "$WORK/m" \
            --stats "$WORK/stats.json" -- "$WORK/prog" "$WORK/m" "$WORK/u" >/dev/null 2>"$WORK/$variant.err" || rc=$?
    fi
    if [[ $rc -eq 0 ]]; then
        check "$variant: every call returns what it should" ok ""
    else
        check "$variant: every call returns what it should" no "exit $rc: $(cat "$WORK/$variant.err")"
    fi
done
read -r _ written _ readb _ unmanaged < <(grep '^written' "$WORK/staged.err")
sizes=$(( $(stat -c %s "$WORK/m/a") + $(stat -c %s "$WORK/m/b") ))
verdict=$(/usr/bin/python3 - "$WORK/stats.json" "$written" "$readb" "$unmanaged" "$sizes" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
written, readb, unmanaged, sizes = map(int, sys.argv[2:])
ops = s["ops"]
w = ops.get("write", {}).get("bytes", 0)
r = ops.get("read", {}).get("bytes", 0)
problems = []
if written != sizes:
    problems.append(f"the program wrote {written} bytes, the files hold {sizes}")
if w != written:
    problems.append(f"write bytes counted {w}, written to managed files {written}")
if r != readb:
    problems.append(f"read bytes counted {r}, read from managed files {readb}")
if s["unmanaged"] < unmanaged:
    problems.append(f"unmanaged calls counted {s['unmanaged']}, made at least {unmanaged}")
print("ok" if not problems else "; ".join(problems))
PY
)
check "managed bytes counted exactly, unmanaged calls counted" "$verdict" "$verdict"
finish "$passed" "$failed"
