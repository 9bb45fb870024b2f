#!/usr/bin/env bash
# make dist: a tarball that runs on the nodes sites have (RHEL 7 and later: glibc 2.17).
#
# Builds sluice, the stage and the SPANK plugin for x86_64-unknown-linux-gnu against
# glibc 2.17 with cargo-zigbuild (zig from PyPI's ziglang; both installed here when
# missing), checks that no symbol of the stage or the plugin needs a newer glibc
# (objdump -T), packs the binaries, man pages, completions, systemd units, example
# configs and docs, then checks that the packed `sluice run` works from the unpacked
# tarball on this machine. `make deb` and `make rpm` (packaging/package.sh) package what
# it built.
#
# Layout: sluice-VERSION-x86_64-linux-glibc2.17/ as packaging/tree.sh lays it out:
#   bin/sluice -> ../lib/sluice/sluice   lib/sluice/{sluice,libsluice_stage.so,libsluice_spank.so}
#   share/man/man1/  share/completions/  systemd/  etc/  docs/  README.md
# Environment: SLUICE_SLURM_VERSION (the Slurm release the plugin is for, e.g. 23.11).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
glibc=2.17
target=x86_64-unknown-linux-gnu
version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)
name=sluice-$version-x86_64-linux-glibc$glibc
out=$root/target/dist

# Tools, pinned to full versions (cargo install refuses a partial one such as 0.24):
# zig from PyPI's ziglang (run as `python3 -m ziglang`) and cargo-zigbuild. Installed when
# missing or at another version, so every machine builds with the same linker.
zig_version=0.14.1
zigbuild_version=0.24.1
if [[ $(python3 -m ziglang version 2>/dev/null) != "$zig_version" ]]; then
    echo "dist: installing zig $zig_version (PyPI ziglang)"
    if ! python3 -m pip --version >/dev/null 2>&1; then
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends python3-pip >/dev/null
    fi
    python3 -m pip install -q "ziglang==$zig_version" ||
        python3 -m pip install -q --break-system-packages "ziglang==$zig_version"
fi
if [[ $(cargo-zigbuild --version 2>/dev/null) != "cargo-zigbuild $zigbuild_version" ]]; then
    echo "dist: installing cargo-zigbuild $zigbuild_version"
    cargo install -q --locked "cargo-zigbuild@$zigbuild_version"
fi
rustup target list --installed | grep -qx "$target" || rustup target add "$target"

echo "dist: building for $target with glibc $glibc"
# No debug information in what is shipped: the tarball is a quarter of the size.
CARGO_PROFILE_RELEASE_DEBUG=false CARGO_PROFILE_RELEASE_STRIP=debuginfo \
    CARGO_TARGET_DIR=$out/build cargo zigbuild -q --release --target "$target.$glibc" \
    -p sluice -p sluice-stage -p sluice-spank
built=$out/build/$target/release

# No symbol newer than glibc 2.17 in what is preloaded into jobs or loaded by slurmstepd.
for lib in libsluice_stage.so libsluice_spank.so; do
    newest=$(objdump -T "$built/$lib" | grep -o 'GLIBC_[0-9.]*' | sort -uV | tail -1)
    too_new=$(objdump -T "$built/$lib" | grep -o 'GLIBC_[0-9.]*' | sort -uV |
        awk -v max="GLIBC_$glibc" '{ split(substr($0, 7), a, "."); split(substr(max, 7), b, ".");
            if (a[1] > b[1] || (a[1] == b[1] && a[2] > b[2])) print }')
    if [[ -n $too_new ]]; then
        echo "dist: $lib needs $too_new, newer than glibc $glibc" >&2
        exit 1
    fi
    echo "dist: $lib: newest glibc symbol version $newest (≤ $glibc)"
done

stage=$out/$name
bash packaging/tree.sh "$built" "$stage"
tar -C "$out" -czf "$out/$name.tar.gz" "$name"
echo "dist: $out/$name.tar.gz ($(du -h "$out/$name.tar.gz" | cut -f1))"

# The packed sluice run, from the unpacked tarball: a stat loop held to 1,000/s.
check=$(mktemp -d)
trap 'rm -rf "$check"' EXIT
tar -C "$check" -xzf "$out/$name.tar.gz"
env -u SLUICE_STAGE "$check/$name/bin/sluice" run --standalone --rule 'op=getattr rate=1000/s' \
    --stats "$check/stats.json" -- "$check/$name/bin/sluice" load --dir "$check" --ops getattr \
    --duration 2 >"$check/load.txt"
python3 - "$check/stats.json" "$check/load.txt" <<'PY'
import json, sys
stats = json.load(open(sys.argv[1]))
calls = stats["ops"]["getattr"]["calls"]
total = open(sys.argv[2]).read().strip().splitlines()[-1]
print(f"dist: unpacked sluice run: {calls} getattr calls held in 2 s ({total})")
if not 1800 <= calls <= 2200:
    sys.exit(f"dist: the unpacked sluice run did not hold 1,000/s: {calls} calls in 2 s")
PY
