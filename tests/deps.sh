#!/usr/bin/env bash
# Installs what the integration tests need besides Rust, when it is missing: a C compiler
# (they build small C programs to preload the stage into) and Debian's python3 (a ready
# made caller of vfork, memfd and large reads), openssl, Prometheus, tmux, Slurm with
# munge and slurmdbd on MariaDB, Chromium, the packaging tools, fio, and Ceph for a real metadata server. The conformance suites install their own.
set -euo pipefail
missing=()
command -v cc >/dev/null || missing+=(gcc libc6-dev)
[[ -x /usr/bin/python3 ]] || missing+=(python3)
# The link tests make their certificates with openssl, as docs/deploy.md shows.
command -v openssl >/dev/null || missing+=(openssl)
# A real Prometheus scrapes the global's /metrics (tests/metrics.rs).
command -v prometheus >/dev/null || missing+=(prometheus)
# `sluice top` is tested in a real terminal (tests/top.rs).
command -v tmux >/dev/null || missing+=(tmux)
# The SPANK plugin is tested in a real single-node Slurm (tests/slurm.rs); its build reads
# the Slurm version from libslurm-dev's header.
command -v slurmctld >/dev/null || missing+=(slurmctld)
command -v slurmd >/dev/null || missing+=(slurmd)
command -v srun >/dev/null || missing+=(slurm-client)
command -v munged >/dev/null || missing+=(munge)
[[ -f /usr/include/slurm/slurm_version.h ]] || missing+=(libslurm-dev)
# Slurm's accounting, for shares from the association tree (tests/tree.rs): slurmdbd on
# a private MariaDB; only the server's core (mariadbd, mariadb-install-db) and the
# my_print_defaults that mariadb-install-db runs, no system service.
[[ -x /usr/sbin/slurmdbd ]] || missing+=(slurmdbd)
[[ -x /usr/sbin/mariadbd ]] || missing+=(mariadb-server-core)
command -v my_print_defaults >/dev/null || missing+=(mariadb-client-core)
# The live dashboard is tested in a real headless browser (tests/dashboard_browser.rs).
command -v chromium >/dev/null || missing+=(chromium)
# The packages are built and checked (tests/packages.rs): rpm lists the .rpm, lintian
# checks the .deb, dpkg-deb (dpkg) unpacks it; packaging/package.sh fetches nfpm itself.
command -v rpm >/dev/null || missing+=(rpm)
command -v lintian >/dev/null || missing+=(lintian)
command -v dpkg-deb >/dev/null || missing+=(dpkg)
# Go programs under the seccomp supervisor (tests/supervise.rs): Debian's Go when no Go
# release is installed in /usr/local/go.
[[ -x /usr/local/go/bin/go ]] || command -v go >/dev/null || missing+=(golang-go)
# fio's io_uring engine under `--io-uring deny` (tests/supervise.rs; the fio conformance
# suite installs it too, but runs after the unit and integration tests).
command -v fio >/dev/null || missing+=(fio)
# A single-node CephFS (tests/cephfs.rs, experiments/cephfs/up.sh, which also installs
# these when missing): monitor, OSD, MDS, the FUSE client and the CLI.
command -v ceph-mon >/dev/null || missing+=(ceph-mon)
command -v ceph-osd >/dev/null || missing+=(ceph-osd)
command -v ceph-mds >/dev/null || missing+=(ceph-mds)
command -v ceph-fuse >/dev/null || missing+=(ceph-fuse)
command -v ceph >/dev/null || missing+=(ceph-common)
[[ ${#missing[@]} -eq 0 ]] && exit 0
if [[ $(id -u) -ne 0 ]] || ! command -v apt-get >/dev/null; then
    echo "tests/deps.sh: missing ${missing[*]}: install them (apt-get install ${missing[*]})" >&2
    exit 1
fi
echo "tests/deps.sh: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
