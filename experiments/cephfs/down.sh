#!/usr/bin/env bash
# Undoes up.sh: removes every ceph-fuse mount it made, stops every daemon by the pid in
# its pid file (clients, MDS, OSD, manager, monitor), and removes the work dir (the
# cluster's data was in memory). Safe to rerun, and after a partial up.sh. The packages
# stay installed.
set -euo pipefail

PROG=down.sh
USAGE_TEXT="Unmounts the ceph-fuse mounts under ROOT, stops the daemons of WORK_DIR by their pid
files, and removes WORK_DIR."
# shellcheck source=common.sh
. "$(dirname "$0")/common.sh"
parse_args "$@"
need_root
started=$EPOCHREALTIME

# stop GRACE SIGNAL NAME:EXE...: SIGNAL to the pid of each run/NAME.pid that still runs
# EXE, all at once, then SIGKILL to those still there after GRACE seconds.
stop() {
    local grace=$1 signal=$2 pid t item
    shift 2
    local pids=()
    for item in "$@"; do
        pid=$(pid_of "${item%%:*}" "${item#*:}") || continue
        say "stopping ${item%%:*} (pid $pid)"
        kill "-$signal" "$pid" 2>/dev/null && pids+=("$pid")
    done
    t=$EPOCHREALTIME
    for pid in ${pids[@]+"${pids[@]}"}; do
        while [ -d "/proc/$pid" ]; do
            if awk -v a="$t" -v b="$EPOCHREALTIME" -v g="$grace" 'BEGIN { exit !(b - a > g) }'; then
                say "$(cat "/proc/$pid/comm" 2>/dev/null) (pid $pid) did not exit within $grace s: killing it"
                kill -9 "$pid" 2>/dev/null || true
                break
            fi
            sleep 0.1
        done
    done
    for pid in ${pids[@]+"${pids[@]}"}; do
        for _ in $(seq 1 50); do [ -d "/proc/$pid" ] || break; sleep 0.1; done
    done
}

# --- mounts -------------------------------------------------------------------------
# Those up.sh recorded, and any other ceph-fuse mount under the root.
mounts=$( { state_get mount; { findmnt -rn -t fuse.ceph-fuse -o TARGET 2>/dev/null || true; } \
    | awk -v r="$MOUNT_ROOT/" 'index($0, r) == 1'; } | sort -u)
for m in $mounts; do
    if ceph_mounted "$m"; then
        say "unmounting $m"
        if ! umount "$m" 2>/dev/null; then
            users=$(fuser -vm "$m" 2>&1 || true)
            say "warning: $m is busy; detaching it (lazy unmount). Held by:
$users"
            umount -l "$m" || say "warning: cannot unmount $m"
        fi
    fi
    rmdir "$m" 2>/dev/null || true
done
rmdir "$MOUNT_ROOT" 2>/dev/null || true

# --- daemons ------------------------------------------------------------------------
if [ -d "$RUN" ]; then
    clients=()
    for f in "$RUN"/client.*.pid; do
        [ -e "$f" ] && clients+=("$(basename "$f" .pid):ceph-fuse")
    done
    # A ceph-fuse ends with its mount; one still there is stopped.
    [ ${#clients[@]} -eq 0 ] || stop 3 TERM "${clients[@]}"
    # The MDS first, killed: asked to stop, it tells the monitor, and the map that takes
    # it out comes back to it as "removed me", on which it respawns, re-executing itself
    # as a new daemon with a new pid that no pid file names (seen in four of seven
    # stops under load, 2026-11-28). The cluster is thrown away, so nothing needs an
    # orderly stop.
    stop 2 KILL mds.a:ceph-mds
    # The others all at once, SIGKILL to any still there after 2 s.
    stop 2 TERM osd.0:ceph-osd mgr.x:ceph-mgr mon.a:ceph-mon
fi

# --- files --------------------------------------------------------------------------
left=$(ps -eo pid=,comm=,args= | awk -v c="$CONF" '$2 ~ /^(ceph-mon|ceph-osd|ceph-mds|ceph-mgr|ceph-fuse)$/ && index($0, c)' || true)
if [ -n "$left" ]; then
    say "warning: processes of $CONF still running (not stopped by pid); keeping $WORK_DIR:"
    printf '%s\n' "$left" >&2
    exit 1
fi
rm -rf "$WORK_DIR"
say "done in $(elapsed "$started") s"
