# Shared helpers of the conformance suites; sourced by cpython.sh and fio.sh.
# shellcheck shell=bash

CONF_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO_ROOT=$(cd "$CONF_DIR/../.." && pwd)

say() { printf '[%s] %s\n' "${SUITE:-conformance}" "$*"; }
# A setup failure: the message, then the summary line (one failed check).
die() {
    printf '[%s] error: %s\n' "${SUITE:-conformance}" "$*" >&2
    echo "conformance-${SUITE:-?}: 0 passed, 1 failed"
    exit 2
}

# Seconds since the epoch, with nanoseconds.
now() { date +%s.%N; }
# Seconds between two now() values, 1 decimal.
elapsed() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", b - a }'; }

# Finds `sluice` and the stage: SLUICE_BIN_DIR, else the repository's target/release.
# Sets SLUICE and exports SLUICE_STAGE (so that the pair always matches).
find_sluice() {
    local dir=${SLUICE_BIN_DIR:-$REPO_ROOT/target/release}
    [[ -x $dir/sluice ]] ||
        die "no sluice binary at $dir/sluice: build it with 'cargo build --release' in $REPO_ROOT, or set SLUICE_BIN_DIR"
    [[ -f $dir/libsluice_stage.so ]] ||
        die "no stage library at $dir/libsluice_stage.so: build it with 'cargo build --release' in $REPO_ROOT, or set SLUICE_BIN_DIR"
    SLUICE=$(cd "$dir" && pwd)/sluice
    SLUICE_STAGE=$(cd "$dir" && pwd)/libsluice_stage.so
    export SLUICE_STAGE
    say "sluice: $SLUICE"
    say "stage:  $SLUICE_STAGE"
}

# Copies sluice and the stage into the work directory and uses the copies, so that a
# rebuild while a suite runs cannot mix two builds (their segment layouts may differ).
snapshot_sluice() {
    mkdir -p "$WORK/bin"
    cp "$SLUICE" "$SLUICE_STAGE" "$WORK/bin/"
    SLUICE=$WORK/bin/sluice
    SLUICE_STAGE=$WORK/bin/libsluice_stage.so
    export SLUICE_STAGE
}

# apt_install PKG...: installs Debian packages (only called when something is missing).
apt_install() {
    command -v apt-get >/dev/null || die "missing $*, and no apt-get to install it with"
    [[ $(id -u) -eq 0 ]] || die "missing $*: install it (apt-get install $*) or run as root"
    say "installing $* (apt-get)"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq "$@" >/dev/null
}

# Directories removed on exit (unless SLUICE_CONFORMANCE_KEEP is set).
CLEANUP=()
cleanup() {
    if [[ -n ${SLUICE_CONFORMANCE_KEEP:-} ]]; then
        say "kept: ${CLEANUP[*]}"
    else
        rm -rf "${CLEANUP[@]}"
    fi
}

# A fresh work directory under TMPDIR (default /tmp), removed on exit. /dev, /proc, /sys
# and /run are never managed by a catch-all rule, so the work must not live there.
make_workdir() {
    local base=${TMPDIR:-/tmp}
    case "$(readlink -f "$base")/" in
        /dev/* | /proc/* | /sys/* | /run/*)
            die "TMPDIR=$base lies under /dev, /proc, /sys or /run, which the stage never manages; use a directory elsewhere (e.g. TMPDIR=/tmp)" ;;
    esac
    WORK=$(mktemp -d "$base/sluice-$SUITE.XXXXXX")
    WORK=$(readlink -f "$WORK")
    CLEANUP+=("$WORK")
    trap cleanup EXIT
    say "work directory: $WORK"
}

# The summary line, then the exit status.
finish() {
    local passed=$1 failed=$2
    echo "conformance-$SUITE: $passed passed, $failed failed"
    [[ $failed -eq 0 ]]
}
