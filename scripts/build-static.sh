#!/usr/bin/env bash
# Static lukskit binaries (musl libc, no dynamic dependencies) for x86_64 and aarch64 (arm64)
# Linux, e.g. for an initramfs or an embedded board:
#
#   scripts/build-static.sh [x86_64|aarch64|all]      (default: all)
#
# Writes target/static-bin/lukskit-x86_64 and target/static-bin/lukskit-aarch64 (stripped,
# `[profile.static]` of Cargo.toml: release code with LTO, one codegen unit, no debug info) and
# checks each: an ELF of the right machine with no program interpreter and no NEEDED library.
#
# What it needs: the Rust targets `x86_64-unknown-linux-musl` and `aarch64-unknown-linux-musl`
# (`rustup target add`, done here when missing), and a C compiler for each target, for the
# assembly and C of `ring` (the crypto provider of rustls, used by NBD over TLS): `gcc` for
# x86_64 and `aarch64-linux-gnu-gcc` for aarch64 (Debian: gcc, gcc-aarch64-linux-gnu; set
# CC_<triple> to use another). ring's C code needs no libc headers of its own, so the glibc
# compilers serve for musl. Both targets link with the musl libc and C runtime objects that
# Rust's target ships ("self-contained"), with `rust-lld`, the LLVM linker of rustup's
# toolchains.
#
# Environment: LUKSKIT_STATIC_OUT (output directory, default target/static-bin),
# LUKSKIT_STATIC_TARGET_DIR (cargo's target directory for these builds, default
# target/static-build: a directory of its own, so that these builds never share cargo's lock
# with a build or test running in target/, e.g. the test that calls this script).
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)

usage() {
    echo "usage: scripts/build-static.sh [x86_64|aarch64|all]" >&2
    exit 2
}
case "${1:-all}" in
all) arches=(x86_64 aarch64) ;;
x86_64 | amd64) arches=(x86_64) ;;
aarch64 | arm64) arches=(aarch64) ;;
-h | --help) sed -n '2,23p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
*) usage ;;
esac
[ $# -le 1 ] || usage

out=${LUKSKIT_STATIC_OUT:-$repo/target/static-bin}
export CARGO_TARGET_DIR=${LUKSKIT_STATIC_TARGET_DIR:-$repo/target/static-build}
mkdir -p "$out"

command -v cargo >/dev/null || { echo "cargo not found: install Rust (https://rustup.rs) first" >&2; exit 1; }
sysroot=$(rustc --print sysroot)

need_target() { # triple
    local t=$1
    [ -d "$sysroot/lib/rustlib/$t/lib" ] && return 0
    if command -v rustup >/dev/null; then
        echo "==> rustup target add $t"
        rustup target add "$t"
    else
        echo "the Rust standard library for $t is missing and there is no rustup to add it" >&2
        exit 1
    fi
}
have_rust_lld() {
    local host
    host=$(rustc -vV | sed -n 's/^host: //p')
    [ -x "$sysroot/lib/rustlib/$host/bin/rust-lld" ]
}

# ELF checks without binutils: class/machine from the header, PT_INTERP and DT_NEEDED with
# readelf when it is there (it is part of binutils, which a Rust toolchain's linker driver
# usually brings), else with python3.
check_static() { # file expected-e_machine-number
    local f=$1 want=$2 machine
    [ "$(head -c 4 "$f" | od -An -tx1 | tr -d ' \n')" = 7f454c46 ] || { echo "$f: not an ELF file" >&2; return 1; }
    machine=$(od -An -tu2 -j 18 -N 2 "$f" | tr -d ' ')
    [ "$machine" = "$want" ] || { echo "$f: ELF machine $machine, expected $want" >&2; return 1; }
    if command -v readelf >/dev/null; then
        if readelf -lW "$f" | grep -q 'INTERP'; then echo "$f: has a program interpreter" >&2; return 1; fi
        if readelf -dW "$f" | grep -q '(NEEDED)'; then echo "$f: needs shared libraries:" >&2; readelf -dW "$f" | grep '(NEEDED)' >&2; return 1; fi
    else
        echo "   (readelf not found: interpreter/NEEDED not checked here; the test suite checks them)"
    fi
}

status=0
for arch in "${arches[@]}"; do
    triple=$arch-unknown-linux-musl
    need_target "$triple"
    var=CARGO_TARGET_$(echo "$triple" | tr 'a-z-' 'A-Z_')_LINKER
    if [ -z "${!var:-}" ]; then
        if have_rust_lld; then
            export "$var"=rust-lld
        elif [ "$arch" != "$(uname -m)" ]; then
            echo "rust-lld not found in the Rust toolchain (a rustup toolchain has it): set $var to an $arch linker" >&2
            exit 1
        fi
    fi
    # The C compiler (and archiver) for ring's build script.
    cc_var=CC_$(echo "$triple" | tr '-' '_')
    ar_var=AR_$(echo "$triple" | tr '-' '_')
    if [ -z "${!cc_var:-}" ]; then
        case "$arch" in
        x86_64) cc_bin=gcc ar_bin=ar ;;
        aarch64) cc_bin=aarch64-linux-gnu-gcc ar_bin=aarch64-linux-gnu-ar ;;
        esac
        command -v "$cc_bin" >/dev/null || { echo "$cc_bin not found: install it (Debian: gcc / gcc-aarch64-linux-gnu) or set $cc_var" >&2; exit 1; }
        export "$cc_var"="$cc_bin" "$ar_var"="$ar_bin"
    fi
    echo "==> cargo build --profile static --target $triple (linker: ${!var:-cc}, C compiler: ${!cc_var})"
    t0=$(date +%s)
    cargo build --locked -p lukskit-cli --bin lukskit --profile static --target "$triple"
    t1=$(date +%s)
    bin=$CARGO_TARGET_DIR/$triple/static/lukskit
    cp -f "$bin" "$out/lukskit-$arch.tmp"
    mv -f "$out/lukskit-$arch.tmp" "$out/lukskit-$arch"
    case "$arch" in x86_64) em=62 ;; aarch64) em=183 ;; esac
    if check_static "$out/lukskit-$arch" "$em"; then
        echo "==> $out/lukskit-$arch: $(stat -c %s "$out/lukskit-$arch") bytes, static, stripped (built in $((t1 - t0)) s)"
    else
        status=1
    fi
done
exit "$status"
