#!/usr/bin/env bash
# lukskit-crypto's whole test suite (unit tests, the engine's known-answer vectors, the
# OpenSSL cross-checks of every cipher/mode/IV generator, cryptsetup's LUKS1 images) compiled
# for aarch64 and run under qemu-user: the code paths the arm64 binaries take (the `aes`
# crate's ARMv8 Crypto Extensions backend, which qemu's `-cpu max` has, and lukskit's portable
# engine where x86_64 has its AES-NI/VAES/AVX2 paths) checked against the same references.
#
#   scripts/test-aarch64-crypto.sh [cargo test arguments, e.g. -- --nocapture]
#
# The tests link OpenSSL, so this builds for aarch64-unknown-linux-gnu (not musl): Debian's
# gcc-aarch64-linux-gnu is the linker, Debian's arm64 libssl-dev/libssl3 (downloaded with
# tests/refvm/run-arm64.sh --download, unpacked into a sysroot in the cache) provide OpenSSL,
# and qemu-aarch64 (qemu-user) runs the test binaries with /usr/aarch64-linux-gnu as the guest
# library prefix. Installs what is missing (apt-get as root, rustup target add); exits 77 when
# it cannot (the test command fails on it unless LUKSKIT_ALLOW_SKIP=1).
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)
TRIPLE=aarch64-unknown-linux-gnu
CACHE=${LUKSKIT_REFVM_ARM64_CACHE:-${XDG_CACHE_HOME:-${HOME:-/tmp}/.cache}/lukskit-refvm-arm64}
SYSROOT=$CACHE/sysroot-openssl

skip() {
    echo "test-aarch64-crypto: SKIP: $*" >&2
    exit 77
}

pkgs=()
command -v qemu-aarch64 >/dev/null || pkgs+=(qemu-user)
command -v aarch64-linux-gnu-gcc >/dev/null || pkgs+=(gcc-aarch64-linux-gnu libc6-dev-arm64-cross)
if [ ${#pkgs[@]} -gt 0 ]; then
    if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
        skip "missing ${pkgs[*]} (apt-get install them as root)"
    fi
    echo "==> installing ${pkgs[*]}"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${pkgs[@]}" >/dev/null 2>&1 || {
        apt-get update -qq >/dev/null 2>&1 || true
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${pkgs[@]}" >/dev/null 2>&1 ||
            skip "could not install ${pkgs[*]}"
    }
fi
if [ ! -d "$(rustc --print sysroot)/lib/rustlib/$TRIPLE/lib" ]; then
    command -v rustup >/dev/null || skip "the Rust standard library for $TRIPLE is missing and there is no rustup"
    rustup target add "$TRIPLE"
fi
if [ ! -f "$SYSROOT/.done" ]; then
    echo "==> arm64 OpenSSL (libssl-dev, libssl3) into $SYSROOT"
    rm -rf "$SYSROOT" "$SYSROOT.debs"
    rc=0
    bash "$repo/tests/refvm/run-arm64.sh" --download "$SYSROOT.debs" libssl-dev libssl3 || rc=$?
    [ "$rc" = 0 ] || { [ "$rc" = 77 ] && skip "could not download arm64 OpenSSL"; exit "$rc"; }
    mkdir -p "$SYSROOT"
    for f in "$SYSROOT.debs"/*.deb; do dpkg-deb -x "$f" "$SYSROOT"; done
    # openssl-sys takes one include directory: put the arch-specific headers next to the others.
    cp "$SYSROOT"/usr/include/aarch64-linux-gnu/openssl/* "$SYSROOT/usr/include/openssl/"
    rm -rf "$SYSROOT.debs"
    touch "$SYSROOT/.done"
fi
LIB=$SYSROOT/usr/lib/aarch64-linux-gnu
export CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_LINKER=aarch64-linux-gnu-gcc
export CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_RUNNER="qemu-aarch64 -L /usr/aarch64-linux-gnu -E LD_LIBRARY_PATH=$LIB -E OPENSSL_MODULES=$LIB/ossl-modules"
export AARCH64_UNKNOWN_LINUX_GNU_OPENSSL_LIB_DIR=$LIB
export AARCH64_UNKNOWN_LINUX_GNU_OPENSSL_INCLUDE_DIR=$SYSROOT/usr/include
export PKG_CONFIG_ALLOW_CROSS=1
# A target directory of its own (unless one is set): the test command runs this beside other
# builds in target/ (the Python extension's, the doc tests), which would otherwise wait for
# cargo's lock on target/ until this one has finished.
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$repo/target/aarch64-crypto}
echo "==> cargo test -p lukskit-crypto --target $TRIPLE (under qemu-aarch64)"
exec cargo test -p lukskit-crypto --target "$TRIPLE" "$@"
