#!/usr/bin/python3
"""moncmd.py CONF PREFIX [NAME=VALUE...]: one command to the monitor of CONF, sent only
once the client holds the cluster's monitor map; prints its output (as `ceph` would).

Why not the `ceph` CLI: a Ceph 16 client connects twice, a first session for the
monitor map and the configuration, then its own, whose initial monitor map it builds
from the addresses learned by the first and without the cluster's fsid. Until the
monitor's map reaches the new session, its commands carry a null fsid and the monitor
refuses them ("wrong fsid", EPERM). With authentication off the session opens at once,
and the CLI sends its first command in the same millisecond as the map arrives: on a
loaded machine about one command in fifty lost the race (logs: debug monc 10). Here the
command waits for the fsid.

A NAME=VALUE whose value is a whole number is sent as a number (pg_num=8).
"""

import json
import sys
import time

import rados  # python3-rados, a dependency of ceph-common

NULL_FSID = "00000000-0000-0000-0000-000000000000"


def main(argv):
    if len(argv) < 3:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    conf, prefix = argv[1], argv[2]
    cmd = {"prefix": prefix}
    for arg in argv[3:]:
        name, sep, value = arg.partition("=")
        if not sep:
            print(f"moncmd.py: '{arg}' is not NAME=VALUE", file=sys.stderr)
            return 2
        cmd[name] = int(value) if value.isdigit() else value
    cluster = rados.Rados(conffile=conf, name="client.admin")
    try:
        cluster.connect(timeout=10)
        deadline = time.monotonic() + 10
        while cluster.get_fsid() == NULL_FSID:
            if time.monotonic() > deadline:
                print("moncmd.py: no monitor map after 10 s", file=sys.stderr)
                return 1
            time.sleep(0.01)
        ret, out, outs = cluster.mon_command(json.dumps(cmd), b"")
    except rados.Error as e:
        print(f"moncmd.py: {prefix}: {e}", file=sys.stderr)
        return 1
    finally:
        cluster.shutdown()
    if out:
        sys.stdout.write(out.decode(errors="replace").rstrip("\n") + "\n")
    if outs:
        # As the CLI: the status text on stdout when there is no output, else on stderr.
        print(outs, file=sys.stderr if out or ret else sys.stdout)
    return 0 if ret == 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
