# Shared by up.sh and down.sh: options, defaults, messages. Sourced, not run.
# shellcheck shell=bash

WORK_DIR=${SLUICE_GLUSTER_WORK_DIR:-/var/tmp/sluice-gluster}
MOUNT_POINT=${SLUICE_GLUSTER_MOUNT:-/mnt/sluice-gluster}
VOLUME=${SLUICE_GLUSTER_VOLUME:-sluice}

# shellcheck source=../lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

usage() {
    cat >&2 <<EOF
usage: $PROG [--work-dir DIR] [--mount DIR] [--volume NAME]

$USAGE_TEXT

  --work-dir DIR   brick, state file and glusterd pid file  (default $WORK_DIR,
                   or \$SLUICE_GLUSTER_WORK_DIR)
  --mount DIR      where the volume is mounted               (default $MOUNT_POINT,
                   or \$SLUICE_GLUSTER_MOUNT)
  --volume NAME    GlusterFS volume name                     (default $VOLUME,
                   or \$SLUICE_GLUSTER_VOLUME)
EOF
}

parse_args() {
    parse_opts "--work-dir=WORK_DIR --mount=MOUNT_POINT --volume=VOLUME" "$@"
    case "$WORK_DIR" in /*) ;; *) die "--work-dir must be an absolute path, not '$WORK_DIR'" ;; esac
    case "$MOUNT_POINT" in /*) ;; *) die "--mount must be an absolute path, not '$MOUNT_POINT'" ;; esac
    [ "$WORK_DIR" != / ] || die "--work-dir cannot be /"
    WORK_DIR=${WORK_DIR%/}
    MOUNT_POINT=${MOUNT_POINT%/}
    BRICK=$WORK_DIR/brick
    STATE=$WORK_DIR/state
    GLUSTERD_PID=$WORK_DIR/glusterd.pid
}

need_root() {
    [ "$(id -u)" -eq 0 ] || die "must run as root (glusterd, volumes and FUSE mounts need it)"
}

# The gluster CLI, never interactive, never hanging on a glusterd that is not there.
gl() { timeout 60 gluster --mode=script "$@"; }

glusterd_up() { timeout 10 gluster --mode=script pool list >/dev/null 2>&1; }

volume_exists() { gl volume info "$VOLUME" >/dev/null 2>&1; }

# state_get KEY: a value up.sh recorded in the state file, or nothing.
state_get() {
    [ -f "$STATE" ] || return 0
    sed -n "s/^$1=//p" "$STATE" | tail -n 1
}

# state_set KEY VALUE
state_set() {
    mkdir -p "$WORK_DIR"
    if [ -f "$STATE" ]; then
        sed -i "/^$1=/d" "$STATE"
    fi
    printf '%s=%s\n' "$1" "$2" >>"$STATE"
}

# Is DIR the FUSE mount of this volume?
mounted_here() {
    findmnt -n -M "$MOUNT_POINT" -t fuse.glusterfs >/dev/null 2>&1
}

# The options given, as a command line for the other script.
same_options() {
    [ "$WORK_DIR" = /var/tmp/sluice-gluster ] || printf ' --work-dir %q' "$WORK_DIR"
    [ "$MOUNT_POINT" = /mnt/sluice-gluster ] || printf ' --mount %q' "$MOUNT_POINT"
    [ "$VOLUME" = sluice ] || printf ' --volume %q' "$VOLUME"
}
