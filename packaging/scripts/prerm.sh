#!/bin/sh
# Before removal (not before an upgrade: .deb "remove", .rpm "0"): the daemons stop, so
# that none runs on from deleted files. Jobs run on at their last rates.
set -e
case "$1" in
remove | 0)
    if [ -d /run/systemd/system ]; then
        systemctl stop sluice-local.service sluice-global.service >/dev/null 2>&1 || true
    fi
    ;;
esac
