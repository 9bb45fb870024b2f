#!/bin/sh
# After install or upgrade (.deb and .rpm alike): the sluice system user and group the
# global controller runs as (User=sluice), its state directory, and the cluster's token
# made readable to it. Starts and enables nothing: the site chooses which daemon runs
# where (`systemctl enable --now sluice-local` or `sluice-global`).
set -e
if ! getent group sluice >/dev/null; then
    groupadd --system sluice
fi
if ! getent passwd sluice >/dev/null; then
    useradd --system --gid sluice --home-dir /var/lib/sluice/global --no-create-home \
        --shell /usr/sbin/nologin --comment "sluice global controller" sluice
fi
# The local's (root's) and in it the global's (sluice's), made here and by the units'
# StateDirectory= alike, so that either comes first. systemd gives a unit's state
# directory, all of it, to the unit's user when its top is another's: the local's must be
# root's, or a start of the local would take the global's away from sluice.
mkdir -p /var/lib/sluice/global
chown root:root /var/lib/sluice
chmod 0755 /var/lib/sluice
chown sluice:sluice /var/lib/sluice/global
chmod 0750 /var/lib/sluice/global
# The daemons refuse a token open to group or others: the global (sluice) reads it as
# its owner, the local (root) as root. A token the site already put in place keeps its
# text; only its owner and mode are set.
if [ -f /etc/sluice/token ]; then
    chown sluice:sluice /etc/sluice/token
    chmod 0600 /etc/sluice/token
fi
if [ -d /run/systemd/system ]; then
    systemctl daemon-reload >/dev/null 2>&1 || true
fi
