#!/usr/bin/env bash
# Conformance: fio's data verification passes while a throttling rule holds the I/O, and
# the rule holds it to its rate. See tests/conformance/README.md.
#
#   tests/conformance/fio.sh            (SLUICE_BIN_DIR=DIR to test other binaries)
#
# Environment: SLUICE_BIN_DIR (default: the repository's target/release),
# SLUICE_CONFORMANCE_KEEP=1 (keep the work directory: fio output, stats).
set -euo pipefail
SUITE=fio
# shellcheck source=tests/conformance/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

find_sluice
command -v fio >/dev/null || apt_install fio
FIO=$(command -v fio)
say "fio: $FIO ($("$FIO" --version))"
[[ -x /usr/bin/python3 ]] || apt_install python3 # reads fio's JSON
PY=/usr/bin/python3

make_workdir
snapshot_sluice
passed=0
failed=0

# The data files: on tmpfs (/dev/shm) when it has room, so that the runs measure the rule
# and not a disk (fio's verify phase reads back 4 KiB blocks one at a time; from a disk at
# queue depth 1 it can be slower than the limit). /dev is not managed by default: each run
# names its data directory with --mount. Else under the work directory, with
# --invalidate=0 so that the verify reads come from the page cache.
DATA_BASE=$WORK
if [[ -d /dev/shm && -w /dev/shm ]] && (($(df -Pk /dev/shm | awk 'NR==2 { print $4 }') > 1024 * 1024)); then
    DATA_BASE=$(mktemp -d /dev/shm/sluice-fio.XXXXXX)
    CLEANUP+=("$DATA_BASE")
fi
say "data directory: $DATA_BASE"

# job NAME UNIT LIMIT RULE FIO-ARGS...: runs fio under `sluice run --rule RULE`, managing
# only the job's data directory (so that the rule's counters are fio's data I/O alone),
# then checks verification, holding and rate with fio_check.py.
job() {
    local name=$1 unit=$2 limit=$3 rule=$4
    shift 4
    local dir=$WORK/$name data=$DATA_BASE/$name-data
    mkdir -p "$dir" "$data"
    say "job $name: rule '$rule'"
    say "  fio $*"
    local t0 t1 rc=0
    t0=$(now)
    # In $dir: fio leaves its verify state files (*-verify.state) in its working directory.
    (cd "$dir" && "$SLUICE" run --rule "$rule" --mount "$data" --job "conformance-fio-$name-$$" \
        --stats "$dir/stats.json" -- "$FIO" --name="$name" --directory="$data" --output-format=json \
        --output="$dir/fio.json" --invalidate=0 --verify_fatal=1 "$@") 2>"$dir/fio.err" || rc=$?
    rm -rf "$data"
    t1=$(now)
    say "  fio exit $rc, $(elapsed "$t0" "$t1") s wall"
    "$PY" "$CONF_DIR/fio_check.py" "$name" "$unit" "$limit" "$rc" "$dir/fio.json" "$dir/fio.err" "$dir/stats.json" |
        tee "$dir/check.txt" || true
    local p=0 f=1 # unless the check says otherwise
    if [[ $(tail -n 1 "$dir/check.txt") =~ ^checks:\ ([0-9]+)\ passed,\ ([0-9]+)\ failed$ ]]; then
        p=${BASH_REMATCH[1]} f=${BASH_REMATCH[2]}
    fi
    passed=$((passed + p))
    failed=$((failed + f))
}

# (a) psync random writes of 4 KiB, each block checksummed (crc32c) and read back, under a
#     bytes rule on data calls: 64 MiB written + 64 MiB read back = 128 MiB at 32 MiB/s,
#     4.0 s. --fallocate=none: a fallocate is a data call charged its full length, and fio
#     issues it while laying the file out, before its write-phase clock starts, so its
#     charge would fall outside the measured window (job (b) keeps fio's fallocate).
job psync-randwrite-crc32c bytes $((32 << 20)) 'class=data rate=32MiB/s' \
    --ioengine=psync --rw=randwrite --bs=4k --size=64M --fallocate=none --verify=crc32c --do_verify=1

# (b) two jobs (two processes sharing the job's bucket) with the sync engine, an fsync
#     every 32 writes, md5 verification, under an operations rule on writes:
#     2 x 16 MiB / 4 KiB = 8192 writes at 2000/s, about 4.1 s (the verify reads are not held).
job sync-fsync-2jobs-md5 ops 2000 'op=write rate=2000/s' \
    --ioengine=sync --rw=randwrite --bs=4k --size=16M --numjobs=2 --fsync=32 --group_reporting \
    --verify=md5 --do_verify=1

finish "$passed" "$failed"
