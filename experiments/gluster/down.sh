#!/usr/bin/env bash
# Undoes up.sh: unmounts the volume, stops and deletes it, stops glusterd if up.sh
# started it, and removes the brick. Safe to rerun, and after a partial up.sh. The
# packages stay installed.
set -euo pipefail

PROG=down.sh
USAGE_TEXT="Unmounts volume NAME, stops and deletes it, stops glusterd if up.sh started it
(as recorded in the work dir's state file), and removes the brick and the state."
# shellcheck source=common.sh
. "$(dirname "$0")/common.sh"
parse_args "$@"
need_root

# --- unmount ------------------------------------------------------------------------
if mounted_here; then
    say "unmounting $MOUNT_POINT"
    if ! umount "$MOUNT_POINT"; then
        users=$(fuser -vm "$MOUNT_POINT" 2>&1 || true)
        die "cannot unmount $MOUNT_POINT (in use?); stop these and rerun:
$users"
    fi
else
    say "$MOUNT_POINT is not mounted"
fi
made=$(state_get mountpoint_made)
if [ -n "$made" ] && [ "$made" = "$MOUNT_POINT" ] && [ -d "$MOUNT_POINT" ] && ! mounted_here; then
    rmdir "$MOUNT_POINT" 2>/dev/null || say "left $MOUNT_POINT in place (not empty)"
fi

# --- volume -------------------------------------------------------------------------
started_here=$(state_get glusterd)
volume_left=
if command -v gluster >/dev/null; then
    # A volume still defined while glusterd is down (it was stopped by hand): start
    # glusterd for long enough to delete the volume, and stop it again below.
    if ! glusterd_up && [ -d "/var/lib/glusterd/vols/$VOLUME" ] && [ -n "$started_here" ]; then
        say "glusterd is down but volume '$VOLUME' is still defined: starting glusterd to delete it"
        if [ "$started_here" = systemd ]; then
            systemctl start glusterd
        else
            glusterd -p "$GLUSTERD_PID"
        fi
        for _ in $(seq 1 60); do glusterd_up && break; sleep 0.5; done
    fi
    if glusterd_up && volume_exists; then
        bricks=$(gl volume info "$VOLUME" | sed -n 's/^Brick[0-9]*: //p')
        case "$bricks" in
            *":$BRICK") ;;
            *) die "volume '$VOLUME' has brick(s) '$bricks', not this work dir's $BRICK:
  not deleting it (wrong --work-dir or --volume?)" ;;
        esac
        if gl volume info "$VOLUME" | grep -q '^Status: Started'; then
            say "stopping volume '$VOLUME'"
            gl volume stop "$VOLUME" force >&2 || die "gluster volume stop $VOLUME failed"
        fi
        say "deleting volume '$VOLUME'"
        gl volume delete "$VOLUME" >&2 || die "gluster volume delete $VOLUME failed"
    elif glusterd_up; then
        say "volume '$VOLUME' does not exist"
    elif [ -d "/var/lib/glusterd/vols/$VOLUME" ]; then
        volume_left=1
        say "warning: glusterd is not running and volume '$VOLUME' is still defined in
  /var/lib/glusterd/vols/$VOLUME (start glusterd and rerun to delete it); keeping its brick"
    fi
fi

# --- glusterd -----------------------------------------------------------------------
case "$started_here" in
    pidfile)
        pid=$(cat "$GLUSTERD_PID" 2>/dev/null || true)
        if [ -n "$pid" ] && [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = glusterd ]; then
            say "stopping glusterd (pid $pid, started by up.sh)"
            kill "$pid"
            for _ in $(seq 1 40); do [ -d "/proc/$pid" ] || break; sleep 0.25; done
            if [ -d "/proc/$pid" ]; then
                say "glusterd did not stop within 10 s: killing it"
                kill -9 "$pid" 2>/dev/null || true
            fi
        else
            say "glusterd started by up.sh is no longer running"
        fi
        ;;
    systemd)
        say "stopping glusterd (systemctl stop glusterd: up.sh started it)"
        systemctl stop glusterd || say "warning: systemctl stop glusterd failed"
        ;;
    *)
        glusterd_up 2>/dev/null && say "leaving glusterd running (up.sh did not start it)"
        ;;
esac

# A brick process of this work dir that outlived its volume (glusterd killed under it).
for pid in $(pgrep -x glusterfsd 2>/dev/null || true); do
    if tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -qF -- "--brick-name $BRICK "; then
        say "stopping leftover brick process $pid of $BRICK"
        kill "$pid" 2>/dev/null || true
    fi
done

# --- files --------------------------------------------------------------------------
if [ "$(state_get hosts_line)" = added ]; then
    say "removing the /etc/hosts line up.sh added"
    sed -i '/# added by sluice experiments\/gluster\/up.sh$/d' /etc/hosts
fi
if [ -n "$volume_left" ]; then
    exit 1
fi
if [ -d "$BRICK" ]; then
    say "removing brick $BRICK"
    rm -rf "$BRICK"
fi
rm -f "$STATE" "$GLUSTERD_PID"
rmdir "$WORK_DIR" 2>/dev/null || true

left=$(ps -eo pid=,comm=,args= | awk '$2 ~ /^(glusterd|glusterfsd|glusterfs)$/' || true)
if [ -n "$left" ]; then
    say "GlusterFS processes still running (not started by up.sh, or of other volumes):"
    printf '%s\n' "$left" >&2
else
    say "done: no GlusterFS process is running"
fi
