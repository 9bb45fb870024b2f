#!/usr/bin/env bash
# Builds `sluice` and the stage of the release before versioned segments (commit b068009)
# once, for the upgrade test (crates/sluice-tests/tests/versions.rs), and keeps them under
# TARGET/old-release/COMMIT; prints that directory. The build seeds its own target
# directory with the workspace's compiled registry crates (the same versions, so they
# stay fresh: their libraries, build scripts' outputs and fingerprints) and compiles
# only sluice's own crates, from the commit's source.
#
# tests/integration.sh starts it in the background once the modules that measure rates
# have run, so that the build overlaps tests that mostly wait; the upgrade test runs it
# too, and a second run waits for the first (flock) instead of building again.
# Environment: SLUICE_BIN_DIR (default target/release: the build it seeds from).
set -euo pipefail
commit=b068009
root=$(cd "$(dirname "$0")/.." && pwd)
bin=${SLUICE_BIN_DIR:-$root/target/release}
target=$(dirname "$bin")
kept=$target/old-release/$commit
mkdir -p "$target/old-release"
exec 9>"$target/old-release/.lock"
flock 9
if [[ -f $kept/sluice && -f $kept/libsluice_stage.so ]]; then
    echo "$kept"
    exit 0
fi
started=$SECONDS
build=$(mktemp -d "$target/old-release/.build-XXXXXX")
trap 'rm -rf "$build"' EXIT
mkdir "$build/src"
if ! git -C "$root" archive --format=tar "$commit" | tar -x -C "$build/src"; then
    echo "old-release.sh: cannot extract commit $commit of $root: the upgrade test builds it," \
        "the release before versioned segments; a shallow clone lacks it (git fetch --unshallow)" >&2
    exit 1
fi
seeded=$build/src/target/release
mkdir -p "$seeded"
for part in build .fingerprint; do
    cp -a "$bin/$part" "$seeded/"
    # sluice's own crates are built from the old source, never taken from ours.
    rm -rf "$seeded/$part"/sluice* "$seeded/$part"/libsluice*
done
# Of deps, the registry crates' libraries only (lib*.rlib, .rmeta, .so), and as hard
# links: 1.4 GB copied at nice 19 still put that much writeback on the disk under the
# tests that ran beside it. rustc and the linker replace an output (a new file renamed
# over it, or the old one unlinked first) rather than write into it, so a crate rebuilt
# here leaves ours as they are; cargo's own records above are rewritten in place, and
# are copied.
mkdir "$seeded/deps"
find "$bin/deps" -maxdepth 1 -type f -name 'lib*' ! -name 'libsluice*' \
    -exec cp -al -t "$seeded/deps/" {} +
# The release's own crates at opt-level 0, without line tables: the same source, segment
# layout and protocol, built in 68 s (109 s of CPU) here; the test drives them at 2,000
# calls a second, far below what either build holds.
quick=()
for c in sluice sluice-core sluice-policy sluice-stage sluice-workload sluice-control; do
    quick+=(--config "profile.release.package.$c.opt-level=0"
        --config "profile.release.package.$c.debug=0")
done
if ! log=$(cd "$build/src" && CARGO_TARGET_DIR=$build/src/target \
    cargo build --release --offline --locked "${quick[@]}" -p sluice -p sluice-stage \
    2>&1 </dev/null); then
    echo "old-release.sh: cannot build commit $commit: $log" >&2
    exit 1
fi
mkdir "$build/bins"
cp "$seeded/sluice" "$seeded/libsluice_stage.so" "$build/bins/"
mv "$build/bins" "$kept"
echo "old-release.sh: built release $commit in $((SECONDS - started)) s," \
    "$(grep -c 'Compiling ' <<<"$log") crates compiled" >&2
echo "$kept"
