#!/bin/sh
# After removal: systemd forgets the units. The user, /etc/sluice and the state
# directories stay (a reinstall finds its jobs and admin changes again).
set -e
if [ -d /run/systemd/system ]; then
    systemctl daemon-reload >/dev/null 2>&1 || true
fi
