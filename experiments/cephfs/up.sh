#!/usr/bin/env bash
# Brings up a single-node CephFS by hand (no cephadm, no containers): one monitor on
# 127.0.0.1 with authentication off, one OSD on memstore, one MDS, and a ceph-fuse mount
# per client name. Every daemon writes a pid file in WORK_DIR/run and down.sh stops it by
# that pid. A failure part way tears down what was started. Prints the mount root on
# stdout (each client at ROOT/NAME); messages go to stderr.
set -euo pipefail

PROG=up.sh
USAGE_TEXT="Installs Debian's ceph packages if missing (--no-install-recommends), starts a
monitor, an OSD (memstore, 6 GiB) and an MDS, makes file system 'cephfs', and mounts it
with ceph-fuse once per client name at ROOT/NAME. The MDS's admin socket is
WORK_DIR/run/ceph-mds.a.asok; WORK_DIR/env has the paths as shell variables."
# shellcheck source=common.sh
. "$(dirname "$0")/common.sh"
parse_args "$@"
need_root
started=$EPOCHREALTIME
HERE=$(cd "$(dirname "$0")" && pwd)

# Anything that fails from here on undoes what this run started.
teardown_on_error() {
    local rc=$?
    trap - EXIT
    if [ "$rc" -ne 0 ]; then
        say "failed (exit $rc): tearing down; the daemons' logs are kept in $WORK_DIR.log.failed"
        [ -d "$WORK_DIR/log" ] && rm -rf "$WORK_DIR.log.failed" && cp -a "$WORK_DIR/log" "$WORK_DIR.log.failed" 2>/dev/null || true
        # The logs' last lines here too: a caller that removes the work directory (a
        # test's temporary one) keeps the reason in what it prints.
        for f in "$WORK_DIR"/log/*.log; do
            [ -s "$f" ] && { echo "--- ${f##*/}:"; tail -n 8 "$f"; } >&2
        done
        same_options >/dev/null
        "$HERE/down.sh" "${SAME[@]}" >&2 || true
    fi
    exit "$rc"
}

# --- packages -----------------------------------------------------------------------
missing=()
for tool in ceph-mon:ceph-mon ceph-osd:ceph-osd ceph-mds:ceph-mds ceph-fuse:ceph-fuse \
    ceph:ceph-common monmaptool:ceph-common; do
    command -v "${tool%%:*}" >/dev/null || missing+=("${tool#*:}")
done
[ -z "$WITH_MGR" ] || command -v ceph-mgr >/dev/null || missing+=(ceph-mgr)
command -v uuidgen >/dev/null || missing+=(uuid-runtime)
if [ ${#missing[@]} -gt 0 ]; then
    mapfile -t missing < <(printf '%s\n' "${missing[@]}" | sort -u)
    say "installing ${missing[*]} (apt-get, --no-install-recommends)"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >&2 || die "apt-get update failed"
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2 \
        || die "apt-get install ${missing[*]} failed"
    say "installed in $(elapsed "$started") s"
fi
if [ ! -c /dev/fuse ]; then
    modprobe fuse 2>/dev/null || true
    [ -c /dev/fuse ] || die "/dev/fuse is missing: this machine (or container) cannot mount FUSE
  file systems; a container needs --device /dev/fuse and CAP_SYS_ADMIN"
fi

# --- already up? --------------------------------------------------------------------
if pid_of mon.a ceph-mon >/dev/null && pid_of mds.a ceph-mds >/dev/null \
    && monc "mds stat" 2>/dev/null | grep -q 'up:active'; then
    say "the cluster of $WORK_DIR is already running"
else
    if [ -e "$WORK_DIR" ]; then
        say "clearing what an earlier run left in $WORK_DIR"
        same_options >/dev/null
        "$HERE/down.sh" "${SAME[@]}" >&2 || die "down.sh could not clear $WORK_DIR"
    fi
    trap teardown_on_error EXIT
    if ss -Hltn "sport = :$PORT" 2>/dev/null | grep -q .; then
        die "port $PORT is taken (another monitor?): choose --port"
    fi
    mkdir -p "$RUN" "$WORK_DIR/log" "$WORK_DIR/mon.a" "$WORK_DIR/osd.0" "$WORK_DIR/mds.a"
    FSID=$(uuidgen)
    # Authentication off (one machine, loopback); pools of one replica; the OSD keeps its
    # objects in memory (memstore), so nothing is written to disk and teardown is a kill.
    cat >"$CONF" <<EOF
# Written by sluice experiments/cephfs/up.sh; removed by down.sh.
[global]
fsid = $FSID
mon host = v1:127.0.0.1:$PORT
mon initial members = a
ms bind msgr2 = false
auth cluster required = none
auth service required = none
auth client required = none
osd pool default size = 1
osd pool default min size = 1
osd pool default pg autoscale mode = off
mon allow pool size one = true
mon allow pool delete = true
mon warn on pool no redundancy = false
mon data avail warn = 2
mon data avail crit = 1
osd objectstore = memstore
memstore device bytes = 6442450944
osd crush chooseleaf type = 0
mon data = $WORK_DIR/mon.\$id
osd data = $WORK_DIR/osd.\$id
mds data = $WORK_DIR/mds.\$id
mgr data = $WORK_DIR/mgr.\$id
run dir = $RUN
admin socket = $RUN/\$cluster-\$name.asok
pid file = $RUN/\$name.pid
log file = $WORK_DIR/log/\$cluster-\$name.log
EOF
    for c in $SMALL_CACHE; do
        # Each call of this client reaches the MDS: its cache is too small to answer it.
        printf '\n[client.%s]\nclient cache size = 100\n' "$c" >>"$CONF"
    done
    state_add conf "$CONF"

    # The daemons and the mounts run with --no-mon-config: they take everything from this
    # file, and without the first session that fetches the monitors' configuration
    # database (empty here) their monitor map starts with the fsid of this file. After
    # that session a Ceph 16 daemon's map starts with a null fsid until the monitor's
    # reaches it, and a command sent meanwhile is refused: the OSD's first one, which
    # sets its CRUSH device class, failed its start with "wrong fsid" about once in
    # five bring-ups on a loaded machine (see moncmd.py for the CLI's side).
    say "starting the monitor (127.0.0.1:$PORT)"
    monmaptool --create --addv a "v1:127.0.0.1:$PORT" --fsid "$FSID" "$WORK_DIR/monmap" >/dev/null
    ceph-mon -c "$CONF" --mkfs -i a --monmap "$WORK_DIR/monmap" 2>>"$WORK_DIR/log/mkfs.log"
    ceph-mon -c "$CONF" -i a
    state_add daemon mon.a:ceph-mon

    if [ -n "$WITH_MGR" ]; then
        say "starting the manager"
        mkdir -p "$WORK_DIR/mgr.x"
        ceph-mgr -c "$CONF" --no-mon-config -i x
        state_add daemon mgr.x:ceph-mgr
    fi

    say "starting the OSD (memstore)"
    id=$(monc "osd create" 2>>"$WORK_DIR/log/cli.log") \
        || die "ceph osd create failed: $(tail -n 3 "$WORK_DIR/log/cli.log")"
    [ "$id" = 0 ] || die "the new OSD is osd.$id, not osd.0"
    ceph-osd -c "$CONF" --no-mon-config -i 0 --mkfs 2>>"$WORK_DIR/log/mkfs.log"
    ceph-osd -c "$CONF" --no-mon-config -i 0 2>>"$WORK_DIR/log/mkfs.log"
    state_add daemon osd.0:ceph-osd

    say "making file system 'cephfs' and starting the MDS"
    for pool in cephfs_data cephfs_metadata; do
        monc "osd pool create" pool=$pool pg_num=8 >>"$WORK_DIR/log/cli.log" 2>&1 \
            || die "ceph osd pool create $pool failed: $(tail -n 3 "$WORK_DIR/log/cli.log")"
    done
    monc "fs new" fs_name=cephfs metadata=cephfs_metadata data=cephfs_data \
        >>"$WORK_DIR/log/cli.log" 2>&1 \
        || die "ceph fs new failed: $(tail -n 3 "$WORK_DIR/log/cli.log")"
    ceph-mds -c "$CONF" --no-mon-config -i a >/dev/null
    state_add daemon mds.a:ceph-mds
    waited=$EPOCHREALTIME
    until monc "mds stat" 2>>"$WORK_DIR/log/cli.log" | grep -q 'up:active'; do
        awk -v a="$waited" -v b="$EPOCHREALTIME" 'BEGIN { exit !(b - a > 30) }' \
            && die "the MDS is not active after 30 s: $(monc "mds stat" 2>&1); see $WORK_DIR/log"
        sleep 0.25
    done
fi

# --- mounts -------------------------------------------------------------------------
trap teardown_on_error EXIT
for c in $CLIENTS; do
    m=$MOUNT_ROOT/$c
    if ceph_mounted "$m"; then
        say "client.$c already mounted at $m"
        continue
    fi
    findmnt -n -M "$m" >/dev/null 2>&1 && die "$m is already a mount point of something else"
    mkdir -p "$m"
    state_add mount "$m"
    say "mounting client.$c at $m (ceph-fuse)"
    # Each client under its own name: its own session at the MDS, its own cache, and an
    # admin socket of its own (run/ceph-client.NAME.asok).
    ceph-fuse -c "$CONF" --no-mon-config --id "$c" "$m" >>"$WORK_DIR/log/ceph-fuse.out" 2>&1 \
        || die "ceph-fuse for client.$c failed: see $WORK_DIR/log/ceph-client.$c.log"
    state_add daemon "client.$c:ceph-fuse"
    for _ in $(seq 1 40); do
        ceph_mounted "$m" && stat "$m/." >/dev/null 2>&1 && break
        sleep 0.25
    done
    ceph_mounted "$m" && stat "$m/." >/dev/null 2>&1 || die "$m is not usable after mounting"
    # Jobs may run as other users.
    chmod 1777 "$m"
done

cat >"$WORK_DIR/env" <<EOF
# Written by up.sh: source it for the paths of this cluster.
CEPH_CONF=$CONF
CEPHFS_MOUNT_ROOT=$MOUNT_ROOT
CEPHFS_MDS_ASOK=$RUN/ceph-mds.a.asok
EOF
trap - EXIT
say "ready in $(elapsed "$started") s; the MDS's admin socket: $RUN/ceph-mds.a.asok; undo with: $HERE/down.sh$(same_options)"
echo "$MOUNT_ROOT"
