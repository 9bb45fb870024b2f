#!/usr/bin/env bash
# Clippy, warnings as errors, on every target, at the lowest priority beside the tests
# (make test): the tests mostly wait on daemons and leave the cores idle, and clippy's
# check of every crate was four minutes of make test's critical path before them. Its
# own target directory (target/clippy), so that it never holds cargo's lock on the one
# the tests run from.
#
# usage: tests/clippy-beside.sh start   start it in the background
#        tests/clippy-beside.sh wait    wait for it; print its findings and fail on any
#        tests/clippy-beside.sh stop    stop it (the tests failed)
set -euo pipefail
cd "$(dirname "$0")/.."
dir=target/clippy-beside
case ${1:-} in
start)
    mkdir -p "$dir"
    rm -f "$dir/rc" "$dir/log"
    # A process group of its own (job control), so that stop ends cargo and every rustc
    # under it; but the same session: with the kernel's autogroups, a process in a session
    # of its own (setsid) shares the CPU evenly with the tests' session whatever its nice.
    set -m
    (nice -n 19 "${CARGO:-cargo}" clippy --workspace --all-targets --test integration --release \
        --target-dir target/clippy -- -D warnings >"$dir/log" 2>&1
    echo $? >"$dir/rc") </dev/null >/dev/null 2>&1 &
    echo $! >"$dir/pid"
    ;;
wait)
    started=$SECONDS
    while [[ ! -f $dir/rc ]]; do
        if ! kill -0 "$(cat "$dir/pid")" 2>/dev/null && [[ ! -f $dir/rc ]]; then
            echo "tests/clippy-beside.sh: clippy ended without a status" >&2
            exit 1
        fi
        sleep 1
    done
    if [[ $(cat "$dir/rc") != 0 ]]; then
        cat "$dir/log" >&2
        echo "tests/clippy-beside.sh: clippy failed (make clippy shows the same)" >&2
        exit 1
    fi
    echo "clippy: no warnings (waited $((SECONDS - started)) s for it after the tests)"
    ;;
stop)
    [[ -f $dir/pid ]] && kill -- -"$(cat "$dir/pid")" 2>/dev/null || true
    ;;
*)
    echo "usage: tests/clippy-beside.sh start|wait|stop" >&2
    exit 2
    ;;
esac
