#!/usr/bin/env bash
# tests/refvm/fio-build.sh — build (once) a small static fio from Debian's fio source package
# and print its path. run.sh --fio puts it into the guest as /usr/bin/fio, in the per-run
# overlay only: the base initramfs every VM test boots does not change.
#
# Why not Debian's fio binary: it links 60+ shared libraries (ceph, gluster, rdma, pmem, ...,
# ~84 MB with their dependencies), which would have to go into the initramfs. The static build
# below has the engines a block-device test needs (sync/psync/vsync/pvsync/posixaio/mmap,
# io_uring) and verify, ~2.8 MB stripped, built in ~30 s.
#
# Source: `apt-get source fio` (the Debian version apt's candidate has; patches applied by
# dpkg-source) through a private apt state in $CACHE/fio/apt with deb-src entries for the
# host's release, so the host's apt configuration is not changed. Cached under
# $CACHE/fio/VERSION/fio; offline, the newest cached build is used.
#
# Exit status: 0 (path on stdout), 77 when fio cannot be had here (no compiler and not root to
# install one, mirror unreachable and nothing cached).
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REFVM_TAG=refvm-fio
# shellcheck source=tests/refvm/lib.sh
. "$HERE/lib.sh"

CACHE=${LUKSKIT_REFVM_CACHE:-${XDG_CACHE_HOME:-${HOME:-/tmp}/.cache}/lukskit-refvm}
F=$CACHE/fio
mkdir -p "$F/apt/lists/partial" "$F/apt/cache/archives/partial"
exec 8>"$F/lock"
flock 8

cached() { # the newest cached build
    local f
    for f in "$F"/*/fio; do [ -x "$f" ] && echo "$f"; done | sort -V | tail -n 1
}

SRC_LIST=$F/apt/sources.list
if [ ! -f "$SRC_LIST" ]; then
    suite=bookworm
    if [ -r /etc/os-release ]; then
        suite=$(. /etc/os-release && echo "${VERSION_CODENAME:-bookworm}")
    fi
    kr=/usr/share/keyrings/debian-archive-keyring.gpg
    [ -f "$kr" ] || skip "$kr not found (package debian-archive-keyring)"
    {
        echo "deb-src [signed-by=$kr] http://deb.debian.org/debian $suite main"
        echo "deb-src [signed-by=$kr] http://deb.debian.org/debian $suite-updates main"
        echo "deb-src [signed-by=$kr] http://deb.debian.org/debian-security $suite-security main"
    } >"$SRC_LIST.tmp"
    mv -f "$SRC_LIST.tmp" "$SRC_LIST"
fi
[ -f "$F/apt/status" ] || : >"$F/apt/status"
APT_OPTS=(
    -o Dir::Etc::SourceList="$SRC_LIST" -o Dir::Etc::SourceParts=/dev/null
    -o Dir::State::Lists="$F/apt/lists" -o Dir::State::status="$F/apt/status"
    -o Dir::Cache="$F/apt/cache" -o APT::Sandbox::User=root -o Debug::NoLocking=1
)
src_version() {
    apt-cache "${APT_OPTS[@]}" showsrc fio 2>/dev/null | awk '/^Version:/ { print $2 }' | sort -V | tail -n 1
}

# The source lists are refreshed at most once a day.
if [ -z "$(find "$F/apt/lists" -maxdepth 1 -name '*Sources*' -mtime -1 -print -quit)" ]; then
    apt-get "${APT_OPTS[@]}" update -qq >"$F/update.log" 2>&1 || true
fi
VER=$(src_version)
if [ -z "$VER" ]; then
    f=$(cached)
    [ -n "$f" ] || skip "no fio source package known (Debian mirror unreachable?) and no cached build"
    say "offline: using the cached $f"
    echo "$f"
    exit 0
fi
OUT=$F/$VER/fio
if [ -x "$OUT" ]; then
    echo "$OUT"
    exit 0
fi

# Build tools (and libz.a, which fio's static build links when present).
need=()
command -v gcc >/dev/null || need+=(gcc libc6-dev)
command -v make >/dev/null || need+=(make)
command -v dpkg-source >/dev/null || need+=(dpkg-dev)
if [ ${#need[@]} -gt 0 ]; then
    [ "$(id -u)" = 0 ] || skip "fio: ${need[*]} missing and not root to install them"
    say "installing ${need[*]}"
    apt-get install -y -qq "${need[@]}" >"$F/install.log" 2>&1 ||
        { apt-get update -qq >/dev/null 2>&1 && apt-get install -y -qq "${need[@]}" >"$F/install.log" 2>&1; } ||
        skip "cannot install ${need[*]} (see $F/install.log)"
fi

say "building a static fio $VER (once; cached in $F)"
T0=$(date +%s.%N)
tmp=$(mktemp -d "$F/build.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && apt-get "${APT_OPTS[@]}" source "fio=$VER") >"$F/source.log" 2>&1 ||
    { tail -n 5 "$F/source.log" >&2; skip "apt-get source fio=$VER failed"; }
S=$(find "$tmp" -mindepth 1 -maxdepth 1 -type d -name 'fio-*' | head -n 1)
[ -n "$S" ] || die "apt-get source left no fio-* directory"
# Everything that would pull in a library the guest lacks is off; what is left is glibc
# (and zlib when its static library is installed).
(cd "$S" && ./configure --build-static --disable-native --disable-numa --disable-rdma \
    --disable-rados --disable-rbd --disable-http --disable-gfapi --disable-libnfs \
    --disable-pmem --disable-xnvme --disable-libzbc --disable-tcmalloc --disable-dfs \
    --disable-lex) >"$F/configure.log" 2>&1 || { tail -n 20 "$F/configure.log" >&2; die "fio's configure failed (see $F/configure.log)"; }
(cd "$S" && nice make -j"$(nproc)" fio) >"$F/make.log" 2>&1 || { tail -n 20 "$F/make.log" >&2; die "building fio failed (see $F/make.log)"; }
file_out=$(od -An -tx1 -N4 "$S/fio" | tr -d ' ')
[ "$file_out" = 7f454c46 ] || die "no ELF fio after the build"
if LC_ALL=C ldd "$S/fio" 2>&1 | grep -q '=>'; then die "the fio built is not static: $(ldd "$S/fio")"; fi
mkdir -p "$F/$VER"
strip -o "$F/$VER/fio.tmp" "$S/fio" 2>/dev/null || cp "$S/fio" "$F/$VER/fio.tmp"
chmod 755 "$F/$VER/fio.tmp"
mv -f "$F/$VER/fio.tmp" "$OUT"
say "static fio $VER built in $(elapsed)s ($(du -h "$OUT" | cut -f1))"
echo "$OUT"
