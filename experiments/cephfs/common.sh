# Shared by up.sh and down.sh: options, messages, and the state both read.
# shellcheck shell=bash

WORK_DIR=${SLUICE_CEPHFS_WORK_DIR:-/var/tmp/sluice-cephfs}
MOUNT_ROOT=${SLUICE_CEPHFS_MOUNT_ROOT:-/mnt/sluice-cephfs}
PORT=${SLUICE_CEPHFS_PORT:-6789}
CLIENTS=${SLUICE_CEPHFS_CLIENTS:-"fuse victim"}
SMALL_CACHE=${SLUICE_CEPHFS_SMALL_CACHE:-victim}
WITH_MGR=

# shellcheck source=../lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

usage() {
    cat >&2 <<EOF
usage: $PROG [--work-dir DIR] [--mount-root DIR] [--port N] [--clients 'A B']
             [--small-cache 'A'] [--mgr]

$USAGE_TEXT

  --work-dir DIR       ceph.conf, daemons' data, pid files, admin sockets (run/)
                       and logs (log/)            (default $WORK_DIR,
                       or \$SLUICE_CEPHFS_WORK_DIR)
  --mount-root DIR     each client is mounted at DIR/NAME
                                                  (default $MOUNT_ROOT,
                       or \$SLUICE_CEPHFS_MOUNT_ROOT)
  --port N             the monitor's port on 127.0.0.1 (msgr v1)
                                                  (default $PORT, or \$SLUICE_CEPHFS_PORT)
  --clients 'A B'      ceph-fuse mounts, one per client name client.A, client.B
                                                  (default '$CLIENTS')
  --small-cache 'A'    clients whose cache holds 100 inodes (client_cache_size),
                       so that each of their calls is a request to the MDS
                                                  (default '$SMALL_CACHE')
  --mgr                also start a ceph-mgr (for 'ceph fs status' and
                       'ceph fs perf stats'; 300 MB more; up.sh only)
EOF
}

parse_args() {
    parse_opts "--work-dir=WORK_DIR --mount-root=MOUNT_ROOT --port=PORT --clients=CLIENTS
                --small-cache=SMALL_CACHE --mgr:WITH_MGR" "$@"
    case "$WORK_DIR" in /?*) ;; *) die "--work-dir must be an absolute path other than /, not '$WORK_DIR'" ;; esac
    case "$MOUNT_ROOT" in /?*) ;; *) die "--mount-root must be an absolute path other than /, not '$MOUNT_ROOT'" ;; esac
    case "$PORT" in ''|*[!0-9]*) die "--port must be a number, not '$PORT'" ;; esac
    for c in $CLIENTS $SMALL_CACHE; do
        case "$c" in
            admin|*[!A-Za-z0-9_-]*) die "client name '$c': letters, digits, _ or - (and not 'admin', the CLI's own)" ;;
        esac
    done
    WORK_DIR=${WORK_DIR%/}
    MOUNT_ROOT=${MOUNT_ROOT%/}
    CONF=$WORK_DIR/ceph.conf
    RUN=$WORK_DIR/run
    STATE=$WORK_DIR/state
}

need_root() {
    [ "$(id -u)" -eq 0 ] || die "must run as root (the daemons' data, FUSE mounts)"
}

# monc PREFIX [NAME=VALUE...]: a command to this cluster's monitor, never waiting long
# for one that is not there. Not the `ceph` CLI: moncmd.py says why.
monc() { timeout 30 "$HERE/moncmd.py" "$CONF" "$@"; }

# state_get KEY / state_add KEY VALUE: what up.sh did, for down.sh.
state_get() {
    [ -f "$STATE" ] || return 0
    sed -n "s/^$1=//p" "$STATE"
}
state_add() {
    mkdir -p "$WORK_DIR"
    printf '%s=%s\n' "$1" "$2" >>"$STATE"
}

# pid_of NAME EXE: the pid in run/NAME.pid if that process is alive and runs EXE.
pid_of() {
    local pid
    pid=$(cat "$RUN/$1.pid" 2>/dev/null || true)
    [ -n "$pid" ] || return 1
    [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = "$2" ] || return 1
    echo "$pid"
}

# Is DIR a ceph-fuse mount?
ceph_mounted() { findmnt -n -M "$1" -t fuse.ceph-fuse >/dev/null 2>&1; }

# The options down.sh needs, in SAME (an array), and as text for messages.
same_options() {
    SAME=()
    [ "$WORK_DIR" = /var/tmp/sluice-cephfs ] || SAME+=(--work-dir "$WORK_DIR")
    [ "$MOUNT_ROOT" = /mnt/sluice-cephfs ] || SAME+=(--mount-root "$MOUNT_ROOT")
    [ ${#SAME[@]} -eq 0 ] || printf ' %q' "${SAME[@]}"
}

elapsed() { awk -v a="$1" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }'; }
