#!/usr/bin/env bash
# Sets up a one-brick GlusterFS volume on this machine and mounts it through FUSE with
# every metadata cache off, so that each stat, open, create and unlink reaches the
# volume's server (the brick process). Safe to rerun: what is already there is kept.
# Undo with down.sh (same options). Prints the mount point on stdout; messages go to
# stderr.
set -euo pipefail

PROG=up.sh
USAGE_TEXT="Installs glusterfs-server and glusterfs-client if missing, starts glusterd if it
is not running, creates and starts volume NAME with one brick on \$(hostname), turns
its metadata caches off, and mounts it with FUSE attribute/entry/negative timeouts 0."
# shellcheck source=common.sh
. "$(dirname "$0")/common.sh"
parse_args "$@"
need_root
started=$EPOCHREALTIME

# --- packages -----------------------------------------------------------------------
if ! command -v glusterd >/dev/null || ! command -v gluster >/dev/null \
    || ! command -v mount.glusterfs >/dev/null; then
    say "installing glusterfs-server and glusterfs-client (apt-get)"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >&2 || die "apt-get update failed"
    apt-get install -y -qq glusterfs-server glusterfs-client >&2 \
        || die "apt-get install glusterfs-server glusterfs-client failed"
    # The package may start glusterd itself (under systemd); that one is not ours.
fi
command -v setfattr >/dev/null && command -v getfattr >/dev/null \
    || die "setfattr/getfattr missing (install package 'attr')"

# --- FUSE ---------------------------------------------------------------------------
if [ ! -c /dev/fuse ]; then
    modprobe fuse 2>/dev/null || true
    [ -c /dev/fuse ] || die "/dev/fuse is missing: this machine (or container) cannot mount FUSE
  file systems; a container needs --device /dev/fuse and CAP_SYS_ADMIN"
fi

# --- host name ----------------------------------------------------------------------
# The brick is named by the host name (GlusterFS refuses localhost and 127.0.0.1), and
# glusterd must find that name among its own addresses.
HOST=$(hostname)
[ -n "$HOST" ] || die "hostname is empty"
if ! getent hosts "$HOST" >/dev/null; then
    say "host name '$HOST' does not resolve: adding '127.0.1.1 $HOST' to /etc/hosts"
    printf '127.0.1.1 %s # added by sluice experiments/gluster/up.sh\n' "$HOST" >>/etc/hosts
    state_set hosts_line added
fi

# --- glusterd -----------------------------------------------------------------------
mkdir -p "$WORK_DIR"
if glusterd_up; then
    say "glusterd is already running"
else
    if [ -d /run/systemd/system ] && command -v systemctl >/dev/null; then
        say "starting glusterd (systemctl start glusterd)"
        systemctl start glusterd || die "systemctl start glusterd failed: see 'journalctl -u glusterd'"
        state_set glusterd systemd
    else
        say "starting glusterd (no systemd here: started by hand, pid file $GLUSTERD_PID)"
        mkdir -p /var/lib/glusterd /var/log/glusterfs /var/run/gluster
        glusterd -p "$GLUSTERD_PID" \
            || die "glusterd failed to start: see /var/log/glusterfs/glusterd.log"
        state_set glusterd pidfile
    fi
    for _ in $(seq 1 60); do
        glusterd_up && break
        sleep 0.5
    done
    glusterd_up || die "glusterd started but does not answer 'gluster pool list' within 30 s:
  see /var/log/glusterfs/glusterd.log"
fi

# --- volume -------------------------------------------------------------------------
if volume_exists; then
    bricks=$(gl volume info "$VOLUME" | sed -n 's/^Brick[0-9]*: //p')
    [ "$bricks" = "$HOST:$BRICK" ] || die "volume '$VOLUME' already exists with brick(s)
  '$bricks', not '$HOST:$BRICK': not touching it (choose --volume, or remove it)"
    say "volume '$VOLUME' already exists on $HOST:$BRICK"
else
    mkdir -p "$BRICK"
    # A brick directory left by an earlier volume of the same path carries that volume's
    # id and refuses to join a new one: clear it (it is our own directory).
    if getfattr -n trusted.glusterfs.volume-id "$BRICK" >/dev/null 2>&1; then
        say "clearing the marks of an earlier volume from $BRICK"
        setfattr -x trusted.glusterfs.volume-id "$BRICK" 2>/dev/null || true
        setfattr -x trusted.gfid "$BRICK" 2>/dev/null || true
        rm -rf "$BRICK/.glusterfs"
    fi
    say "creating volume '$VOLUME' on $HOST:$BRICK"
    # 'force': the brick is on the root file system, which GlusterFS refuses otherwise.
    gl volume create "$VOLUME" "$HOST:$BRICK" force >&2 \
        || die "gluster volume create failed: see /var/log/glusterfs/glusterd.log"
fi
state_set volume "$VOLUME"

if ! gl volume info "$VOLUME" | grep -q '^Status: Started'; then
    say "starting volume '$VOLUME'"
    gl volume start "$VOLUME" >&2 || die "gluster volume start $VOLUME failed:
  see /var/log/glusterfs/glusterd.log and /var/log/glusterfs/bricks/"
fi

# Metadata caches off, so that every metadata call reaches the brick. stat-prefetch is
# md-cache; the others cache, prefetch or fake lookups, opens and directory entries.
for opt in performance.stat-prefetch performance.readdir-ahead performance.parallel-readdir \
    performance.quick-read performance.io-cache performance.open-behind \
    performance.nl-cache performance.read-ahead; do
    current=$(gl volume get "$VOLUME" "$opt" 2>/dev/null | awk -v o="$opt" '$1 == o { print $2 }')
    if [ "$current" != off ]; then
        gl volume set "$VOLUME" "$opt" off >/dev/null || die "gluster volume set $VOLUME $opt off failed"
    fi
done

# --- mount --------------------------------------------------------------------------
if mounted_here; then
    say "already mounted at $MOUNT_POINT"
else
    if findmnt -n -M "$MOUNT_POINT" >/dev/null 2>&1; then
        die "$MOUNT_POINT is already a mount point of something else:
  $(findmnt -n -M "$MOUNT_POINT")"
    fi
    if [ ! -d "$MOUNT_POINT" ]; then
        mkdir -p "$MOUNT_POINT"
        state_set mountpoint_made "$MOUNT_POINT"
    fi
    say "mounting $HOST:/$VOLUME at $MOUNT_POINT (FUSE, attribute/entry/negative timeouts 0)"
    mount -t glusterfs \
        -o attribute-timeout=0,entry-timeout=0,negative-timeout=0 \
        "$HOST:/$VOLUME" "$MOUNT_POINT" \
        || die "mount failed: see /var/log/glusterfs/$(echo "${MOUNT_POINT#/}" | tr / -).log"
fi
state_set mount "$MOUNT_POINT"
for _ in $(seq 1 20); do
    stat "$MOUNT_POINT/." >/dev/null 2>&1 && mounted_here && break
    sleep 0.5
done
mounted_here && stat "$MOUNT_POINT/." >/dev/null 2>&1 \
    || die "$MOUNT_POINT is not usable after mounting: see /var/log/glusterfs/"
# Anyone may make their own files there (jobs may run as other users).
chmod 1777 "$MOUNT_POINT"

say "ready in $(awk -v a="$started" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }') s; undo with: $(dirname "$0")/down.sh$(same_options)"
echo "$MOUNT_POINT"
