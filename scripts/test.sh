#!/usr/bin/env bash
# Run every lukskit test: installs what the tests need on a fresh Debian machine
# (cryptsetup-bin as the reference implementation, xz-utils for cryptsetup's test images,
# OpenSSL headers for the cross-checks), then formatting, lint and the whole cargo test suite.
#
# A test whose environment lacks something it needs (a tool, root, a kernel or CPU feature, the
# reference VM) fails. LUKSKIT_ALLOW_SKIP=1 in the environment lets such tests skip instead,
# for people whose machine cannot provide it; this script never sets it (CI must not skip).
set -euo pipefail
cd "$(dirname "$0")/.."

need_pkgs=()
command -v cryptsetup >/dev/null 2>&1 || [ -x /usr/sbin/cryptsetup ] || need_pkgs+=(cryptsetup-bin)
command -v xz >/dev/null 2>&1 || need_pkgs+=(xz-utils)
# The crypto tests cross-check against OpenSSL (the `openssl` crate needs its headers).
command -v pkg-config >/dev/null 2>&1 || need_pkgs+=(pkg-config)
pkg-config --exists openssl 2>/dev/null || need_pkgs+=(libssl-dev)
# Terminal-prompt tests run lukskit on a pseudo-terminal with util-linux `script`.
command -v script >/dev/null 2>&1 || need_pkgs+=(bsdutils)
# open/close tests: FUSE (fusermount3 for non-root mounts), loop devices, ext4 tools; the NBD
# server is checked with real clients (qemu-img/qemu-io, nbdcopy/nbdinfo).
command -v fusermount3 >/dev/null 2>&1 || need_pkgs+=(fuse3)
command -v losetup >/dev/null 2>&1 || need_pkgs+=(mount)
command -v mkfs.ext4 >/dev/null 2>&1 || [ -x /sbin/mkfs.ext4 ] || need_pkgs+=(e2fsprogs)
# luksFormat's warning on an existing file system is compared with cryptsetup on images made
# by mkfs.vfat and mkfs.xfs (cryptsetup_gaps.rs); the man page test renders with man.
command -v mkfs.vfat >/dev/null 2>&1 || [ -x /sbin/mkfs.vfat ] || need_pkgs+=(dosfstools)
# TrueCrypt volumes of tcrypt.rs are made (and read back with `tcplay -i`) by tcplay.
command -v tcplay >/dev/null 2>&1 || need_pkgs+=(tcplay)
command -v mkfs.xfs >/dev/null 2>&1 || [ -x /sbin/mkfs.xfs ] || need_pkgs+=(xfsprogs)
command -v man >/dev/null 2>&1 || need_pkgs+=(man-db)
command -v qemu-img >/dev/null 2>&1 || need_pkgs+=(qemu-utils)
command -v nbdcopy >/dev/null 2>&1 || need_pkgs+=(libnbd-bin)
# Online re-encryption of userspace mappings (userspace_online.rs): fio verify jobs run on the
# volume while it re-encrypts.
command -v fio >/dev/null 2>&1 || need_pkgs+=(fio)
# NBD devices (lukskit as the NBD client, crates/lukskit-nbd) are tested against nbdkit (file,
# memory, error and delay filters) and qemu-nbd (qemu-utils); NBD over TLS with certificates
# made by scripts/nbd-tls-certs.sh with GnuTLS's certtool.
command -v nbdkit >/dev/null 2>&1 || need_pkgs+=(nbdkit)
command -v certtool >/dev/null 2>&1 || need_pkgs+=(gnutls-bin)
# Static binaries (static_binaries.rs): the aarch64 one runs under qemu-user and in
# qemu-system-aarch64 (tests/refvm/run-arm64.sh); scripts/test-aarch64-crypto.sh links the
# crypto tests for aarch64 with Debian's cross gcc. (scripts/build-static.sh adds the Rust
# musl targets itself.)
command -v qemu-aarch64 >/dev/null 2>&1 || need_pkgs+=(qemu-user)
command -v qemu-system-aarch64 >/dev/null 2>&1 || need_pkgs+=(qemu-system-arm)
command -v aarch64-linux-gnu-gcc >/dev/null 2>&1 || need_pkgs+=(gcc-aarch64-linux-gnu libc6-dev-arm64-cross)
command -v gcc >/dev/null 2>&1 || need_pkgs+=(gcc)  # ring (rustls) in the static x86_64 build
command -v cpio >/dev/null 2>&1 || need_pkgs+=(cpio)
# The reference VM's static fio (tests/refvm/fio-build.sh, refvm_reencrypt's fio cases) is
# built from Debian's fio source package: make, dpkg-source (dpkg-dev), libz.a (zlib1g-dev).
command -v make >/dev/null 2>&1 || need_pkgs+=(make)
command -v dpkg-source >/dev/null 2>&1 || need_pkgs+=(dpkg-dev)
[ -f /usr/lib/x86_64-linux-gnu/libz.a ] || need_pkgs+=(zlib1g-dev)
# reencrypt_decrypt_shift.rs kills cryptsetup at chosen syscalls with strace fault injection.
command -v strace >/dev/null 2>&1 || need_pkgs+=(strace)
# clevis/tang tokens (tests/tang.rs): Debian's tang server run by socat on loopback, and
# clevis-luks to bind volumes and decrypt lukskit's tokens.
[ -x /usr/libexec/tangd ] || need_pkgs+=(tang)
command -v socat >/dev/null 2>&1 || need_pkgs+=(socat)
command -v jose >/dev/null 2>&1 || need_pkgs+=(jose)
[ -x /usr/bin/clevis-luks-bind ] || need_pkgs+=(clevis clevis-luks)
# systemd-tpm2 tokens (tests/tpm2.rs): a socket swtpm, tpm2-tools (and the swtpm TCTI that
# both they and systemd-cryptenroll load) to enroll with systemd 252 and change PCRs; the
# board ramdisk's TPM boot (static_binaries.rs) and boot/build.sh stop swtpm with swtpm_ioctl.
command -v swtpm >/dev/null 2>&1 || need_pkgs+=(swtpm swtpm-tools)
command -v swtpm_ioctl >/dev/null 2>&1 || need_pkgs+=(swtpm-tools)
command -v tpm2_pcrextend >/dev/null 2>&1 || need_pkgs+=(tpm2-tools)
[ -e /usr/lib/x86_64-linux-gnu/libtss2-tcti-swtpm.so.0 ] || need_pkgs+=(libtss2-tcti-swtpm0)
command -v systemd-cryptenroll >/dev/null 2>&1 || need_pkgs+=(systemd)
# clevis tpm2/sss pins (tests/clevis.rs): clevis' tpm2 pin (it runs tpm2-tools).
[ -x /usr/bin/clevis-encrypt-tpm2 ] || need_pkgs+=(clevis-tpm2)
# systemd-pkcs11 tokens (tests/systemd_tokens.rs): a SoftHSM2 token, opensc's pkcs11-tool to
# make its key pair, p11-kit's proxy module (what lukskit loads when the URI names no module,
# as systemd loads p11-kit's modules); certtool (gnutls-bin, above) makes the certificate.
command -v softhsm2-util >/dev/null 2>&1 || need_pkgs+=(softhsm2)
command -v pkcs11-tool >/dev/null 2>&1 || need_pkgs+=(opensc)
[ -e /usr/lib/x86_64-linux-gnu/p11-kit-proxy.so ] || need_pkgs+=(p11-kit-modules)
# Kernel keyring features (tests/keyring.rs): keyutils' keyctl looks at the keys lukskit
# adds (--link-vk-to-keyring, crypttab's passphrase cache) and adds the ones it reads.
command -v keyctl >/dev/null 2>&1 || need_pkgs+=(keyutils)
# Boot tests (refvm_boot.rs, tests/refvm/boot/build.sh): a Debian system made with mmdebstrap
# builds the initramfs images with its own mkinitramfs, a second one (dracut and systemd,
# from the mirror into the chroot: nothing of it on this machine) the dracut image, and a
# third (systemd 252, cryptsetup-bin, tpm2-tss) is the TPM boot's check disk of systemd's tools
# (made with mke2fs -d: e2fsprogs).
command -v mmdebstrap >/dev/null 2>&1 || need_pkgs+=(mmdebstrap)
# scripts/test-lanes.sh reads cargo's list of test binaries with python3; image tests decrypt
# lukskit's output with Python's `cryptography` as an independent check (Debian's package: the
# system Python of Debian 12 is externally managed, so no pip).
command -v python3 >/dev/null 2>&1 || need_pkgs+=(python3)
python3 -c 'import cryptography' >/dev/null 2>&1 || need_pkgs+=(python3-cryptography)
# The Python bindings (scripts/test-python.sh): a virtual environment of Debian's python3
# (python3-venv brings ensurepip) into which maturin and pytest come from PyPI.
/usr/bin/python3 -c 'import ensurepip, venv' >/dev/null 2>&1 || need_pkgs+=(python3-venv)
# The `openssl` command: the reference VM's smoke test and the NBD TLS tests make keys and
# certificates with it (libssl-dev above has the headers, not the command).
command -v openssl >/dev/null 2>&1 || need_pkgs+=(openssl)
# FileVault 2 (fvault2.rs): libfvde's fvdemount decrypts the logical volume independently.
command -v fvdemount >/dev/null 2>&1 || need_pkgs+=(libfvde-utils)
if [ ${#need_pkgs[@]} -gt 0 ]; then
    if [ "$(id -u)" = 0 ]; then
        echo "==> installing ${need_pkgs[*]}"
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_pkgs[@]}" >/dev/null
    else
        echo "WARNING: ${need_pkgs[*]} missing and not root: the tests that need them will fail (LUKSKIT_ALLOW_SKIP=1 skips them)" >&2
    fi
fi
# The tests run the python3 on PATH: one that is not Debian's (a virtualenv, pyenv) needs
# the module itself.
if ! python3 -c 'import cryptography' >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
    echo "WARNING: $(command -v python3) has no 'cryptography' module although python3-cryptography is installed: put Debian's /usr/bin/python3 first on PATH" >&2
fi
if ! command -v cargo >/dev/null 2>&1; then
    echo "cargo not found: install Rust (https://rustup.rs) first" >&2
    exit 1
fi

# The reference VMs' caches and the boot tests' Debian systems, made in the background while
# the test binaries build (scripts/test-prefetch.sh; its log is printed at the end).
prefetch_log=$(mktemp)
trap 'rm -f "$prefetch_log"' EXIT
prefetch_pid=
if [ "${LUKSKIT_REFVM:-}" != 0 ]; then
    bash scripts/test-prefetch.sh >"$prefetch_log" 2>&1 </dev/null &
    prefetch_pid=$!
fi
echo "==> cargo fmt --check"
cargo fmt --all -- --check
# No import circles between the modules of any crate (issue 34; the allow file, checked
# against every crate, stays empty).
for src in crates/*/src; do
    echo "==> scripts/module-cycles.py $src"
    python3 scripts/module-cycles.py "$src" --allow scripts/module-cycles.allow
done
# clippy, the API docs, the MSRV build, cargo deny, the cargo features.
bash scripts/static-checks.sh
if [ "${LUKSKIT_ALLOW_SKIP:-}" = 1 ]; then
    echo "WARNING: LUKSKIT_ALLOW_SKIP=1: tests that cannot run here skip instead of failing" >&2
fi
# lukskit serves its FUSE files over io_uring wherever the kernel offers FUSE over io_uring;
# a kernel offers it only while fuse.enable_uring is Y. Turned on here (where the kernel has
# it and we are root) so that every host test runs that default path, whatever ran before;
# the classic /dev/fuse path, a kernel's default, is tested by name (open.rs, fuse_uring.rs).
uring_param=/sys/module/fuse/parameters/enable_uring
if [ -w "$uring_param" ]; then
    echo Y >"$uring_param" || echo "WARNING: could not turn on $uring_param" >&2
fi
echo "==> cargo test"
log=$(mktemp)
set +e
# Every test binary, as `cargo test --workspace --no-fail-fast` runs them (a failing binary
# does not hide the results of the others), in two lanes at once: the reference-VM tests, and
# the rest; then the three parts of scripts/test-more.sh (a short fuzzing run, lukskit-crypto's
# tests on aarch64 under qemu-user, the Python bindings), longest first, each run by whichever
# lane is free first; scripts/test-lanes.sh says why.
bash scripts/test-lanes.sh --then "scripts/test-more.sh fuzz" --then "scripts/test-more.sh aarch64" \
    --then "scripts/test-more.sh python" 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
if [ -n "$prefetch_pid" ]; then
    wait "$prefetch_pid"
    echo "==> scripts/test-prefetch.sh (in the background): exit $?"
    cat "$prefetch_log"
fi
set -e
# One closing line for the whole run (cargo prints one per test binary, the last of which
# is usually the empty doc-test run).
awk '/^test result:/ { p += $4; f += $6; s += $8 } /^SKIP: / { k++ }
     END { printf "lukskit: %d passed, %d failed, %d ignored, %d SKIP lines (skips happen only under LUKSKIT_ALLOW_SKIP=1)\n", p, f, s, k }' "$log"
rm -f "$log"
exit "$status"
