#!/usr/bin/env bash
# The Debian packages, installed and used as a user would (crates/lukskit-cli/tests/deb_package.rs
# runs this): builds them with scripts/build-deb.sh, makes a minimal Debian system with
# mmdebstrap (the host's release; cached as a tarball under target/deb-test/, rebuilt when this
# script's package list changes), and in a fresh copy of it:
#   - `apt install ./lukskit_*.deb`; `lukskit --version`; the man page found by `man -w`; the
#     bash completion file; a stripped binary (`file`, and no .debug or .symtab section);
#     the initramfs-tools hook under /usr/share/lukskit, not active in /etc/initramfs-tools until
#     its install.sh runs (which then takes /usr/sbin/lukskit); the dracut module in
#     /usr/lib/dracut/modules.d/90lukskit, not in a dracut configuration until
#     /usr/share/lukskit/dracut/install.sh runs (and out of it again with --uninstall);
#     the licence files; luksFormat, isLuks, luksDump and open --test-passphrase of an image file;
#   - `apt install ./lukskit-cryptsetup-compat_*.deb`: /sbin/cryptsetup is lukskit, Debian's is
#     /sbin/cryptsetup.real; `apt remove` gives Debian's back and drops the diversion;
#   - `apt remove lukskit` removes the binary.
#
#   scripts/test-deb.sh [--debs DIR | --binary PATH]
#
# DIR: packages already built by build-deb.sh; PATH: the lukskit binary to package (build-deb.sh
# --binary; the test suite gives the one its other tests ran). Without either, build-deb.sh makes
# the release build.
#
# Needs root (chroot), mmdebstrap, dpkg-deb and, for the first run, the Debian mirror.
# Exit 77 when those cannot be had.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
SELF="$repo/scripts/test-deb.sh"
debs= binary=()
case "${1:-}" in
--debs) debs=$2 ;;
--binary) binary=(--binary "$2") ;;
esac
say() { echo "test-deb: $*" >&2; }
skip() { say "SKIP: $*"; exit 77; }
die() { say "FAILED: $*"; exit 1; }
[ "$(id -u)" = 0 ] || skip "installing into a chroot needs root"
command -v dpkg-deb >/dev/null || skip "dpkg-deb is missing (apt-get install dpkg)"
command -v mmdebstrap >/dev/null || skip "mmdebstrap is missing (apt-get install mmdebstrap)"

target=${CARGO_TARGET_DIR:-$repo/target}
cache=$target/deb-test
mkdir -p "$cache"
exec 8>"$cache/lock"
flock 8

if [ -z "$debs" ]; then
    debs=$cache/debs
    rm -rf "$debs"
    bash "$repo/scripts/build-deb.sh" --out "$debs" "${binary[@]}" >/dev/null
fi
deb=$(ls "$debs"/lukskit_*.deb)
compat=$(ls "$debs"/lukskit-cryptsetup-compat_*.deb)

# --- the base system (cached) --------------------------------------------------------------------
# man-db for `man -w`, file to see that the binary is stripped, fuse3 (the package recommends
# it: installed already, apt needs no mirror), cryptsetup-bin for the compat package's diversion.
PKGS=man-db,file,fuse3,cryptsetup-bin
SUITE=$(. /etc/os-release && echo "${VERSION_CODENAME:-bookworm}")
KEY=$({ echo "$PKGS $SUITE"; sed -n '/^# --- the base system/,/^# --- end base/p' "$SELF"; } | sha256sum | cut -c1-16)
base=$cache/base-$KEY.tar
if [ ! -f "$base" ]; then
    rm -f "$cache"/base-*.tar
    say "making a minimal Debian $SUITE system with mmdebstrap (once; $base)"
    mmdebstrap --variant=apt --mode=root --format=tar --include="$PKGS" \
        --dpkgopt='path-exclude=/usr/share/locale/*' \
        "$SUITE" "$base.tmp" >"$cache/mmdebstrap.log" 2>&1 || {
        tail -n 20 "$cache/mmdebstrap.log" >&2
        rm -f "$base.tmp"
        skip "mmdebstrap failed (Debian mirror unreachable?)"
    }
    mv "$base.tmp" "$base"
fi
# --- end base

ch=$(mktemp -d "$cache/chroot.XXXXXX")
trap 'rm -rf "$ch"' EXIT
tar -xf "$base" -C "$ch"
cp "$deb" "$compat" "$ch/tmp/"
# Each step in a private mount namespace with the chroot's own /proc.
in_chroot() {
    # shellcheck disable=SC2016 # expanded by the inner sh
    unshare -m --propagation private sh -c '
        ch=$1; shift
        mount -t proc proc "$ch/proc" && mount --rbind /dev "$ch/dev" &&
            exec chroot "$ch" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root \
                LANG=C.UTF-8 DEBIAN_FRONTEND=noninteractive "$@"' sh "$ch" "$@"
}

say "apt install ./$(basename "$deb")"
in_chroot sh -c "cd /tmp && apt-get install -y ./$(basename "$deb")" >"$cache/apt.log" 2>&1 || {
    tail -n 30 "$cache/apt.log" >&2
    die "apt install of the package failed"
}
in_chroot sh -ec '
    fail() { echo "test-deb: FAILED: $*" >&2; exit 1; }
    v=$(lukskit --version); echo "lukskit --version: $v"
    case "$v" in "lukskit "*) ;; *) fail "lukskit --version printed: $v" ;; esac
    m=$(man -w lukskit) || fail "man -w lukskit found no man page"
    echo "man -w lukskit: $m"
    man lukskit 2>/dev/null | grep -q EXAMPLES || fail "the man page has no EXAMPLES section"
    [ -f /usr/share/bash-completion/completions/lukskit ] || fail "no bash completion"
    grep -q _lukskit_complete /usr/share/bash-completion/completions/lukskit || fail "bash completion without mapping names"
    f=$(file -L /usr/sbin/lukskit); echo "file: $f"
    case "$f" in *", stripped"*) ;; *) fail "the binary is not stripped: $f" ;; esac
    for l in LICENSE-MIT LICENSE-APACHE copyright; do
        [ -s /usr/share/doc/lukskit/$l ] || fail "no /usr/share/doc/lukskit/$l"
    done
    [ -x /usr/share/lukskit/initramfs-tools/hooks/lukskit ] || fail "no initramfs-tools hook in the package"
    [ ! -e /etc/initramfs-tools/hooks/lukskit ] || fail "the initramfs-tools hook is active after install"
    # Activated as docs/boot.md says (without update-initramfs: no initramfs-tools here), it
    # takes the packaged binary; --uninstall deactivates it again.
    /usr/share/lukskit/initramfs-tools/install.sh --no-update >/dev/null
    [ -x /etc/initramfs-tools/hooks/lukskit ] || fail "install.sh did not activate the hook"
    grep -qx "LUKSKIT_BIN=/usr/sbin/lukskit" /etc/lukskit/initramfs.conf ||
        fail "initramfs.conf does not name /usr/sbin/lukskit: $(cat /etc/lukskit/initramfs.conf)"
    /usr/share/lukskit/initramfs-tools/install.sh --uninstall --no-update >/dev/null
    [ ! -e /etc/initramfs-tools/hooks/lukskit ] || fail "install.sh --uninstall left the hook"
    # The dracut module: where dracut looks, inactive until dracut/install.sh adds it to a
    # dracut configuration; --uninstall drops that and leaves the package'"'"'s module.
    [ -x /usr/lib/dracut/modules.d/90lukskit/module-setup.sh ] || fail "no dracut module in the package"
    [ -x /usr/lib/dracut/modules.d/90lukskit/lukskit-dracut.sh ] || fail "no lukskit-dracut.sh in the package"
    [ ! -e /etc/dracut.conf.d/90-lukskit.conf ] || fail "the dracut module is active after install"
    /usr/share/lukskit/dracut/install.sh --no-update >/dev/null
    grep -q "add_dracutmodules+=\" lukskit \"" /etc/dracut.conf.d/90-lukskit.conf ||
        fail "dracut/install.sh did not add the module: $(cat /etc/dracut.conf.d/90-lukskit.conf)"
    /usr/share/lukskit/dracut/install.sh --uninstall --no-update >/dev/null
    [ ! -e /etc/dracut.conf.d/90-lukskit.conf ] || fail "dracut/install.sh --uninstall left the configuration"
    [ -x /usr/lib/dracut/modules.d/90lukskit/module-setup.sh ] || fail "dracut/install.sh --uninstall removed the package'"'"'s module"
    echo "initramfs-tools hook and dracut module: inactive until activated: ok"
    cd /tmp
    truncate -s 32M volume.img
    printf "a passphrase" | lukskit luksFormat -q --pbkdf pbkdf2 --pbkdf-force-iterations 1000 volume.img -d -
    lukskit isLuks volume.img || fail "isLuks after luksFormat"
    lukskit luksDump volume.img >dump.txt
    grep -q "^LUKS header information" dump.txt || fail "luksDump: $(cat dump.txt)"
    grep -q "^Version:[[:space:]]*2" dump.txt || fail "luksDump: not LUKS2: $(cat dump.txt)"
    printf "a passphrase" | lukskit open --test-passphrase -d - volume.img || fail "open --test-passphrase"
    echo "luksFormat, isLuks, luksDump, open --test-passphrase: ok"
'
# The binary as installed, seen from the host: no debug or symbol sections.
if command -v readelf >/dev/null; then
    ! readelf -S "$ch/usr/sbin/lukskit" | grep -e '\.debug_' -e '\.symtab' ||
        die "the installed binary has debug or symbol sections"
fi

say "apt install ./$(basename "$compat")"
in_chroot sh -c "cd /tmp && apt-get install -y ./$(basename "$compat")" >>"$cache/apt.log" 2>&1 || {
    tail -n 30 "$cache/apt.log" >&2
    die "apt install of the compat package failed"
}
in_chroot sh -ec '
    fail() { echo "test-deb: FAILED: $*" >&2; exit 1; }
    v=$(cryptsetup --version); echo "with the compat package: cryptsetup --version: $v"
    case "$v" in *lukskit*) ;; *) fail "cryptsetup is not lukskit: $v" ;; esac
    [ -x /sbin/cryptsetup.real ] || fail "Debian'"'"'s cryptsetup is not at /sbin/cryptsetup.real"
    case "$(/sbin/cryptsetup.real --version)" in *lukskit*) fail "cryptsetup.real is lukskit" ;; esac
    cryptsetup isLuks /tmp/volume.img || fail "cryptsetup (lukskit) isLuks"
    dpkg-divert --list /sbin/cryptsetup | grep -q lukskit-cryptsetup-compat || fail "no diversion"
'
in_chroot apt-get remove -y lukskit-cryptsetup-compat >>"$cache/apt.log" 2>&1 || die "apt remove of the compat package failed"
in_chroot sh -ec '
    fail() { echo "test-deb: FAILED: $*" >&2; exit 1; }
    v=$(cryptsetup --version); echo "compat package removed: cryptsetup --version: $v"
    case "$v" in *lukskit*) fail "cryptsetup is still lukskit: $v" ;; esac
    [ ! -e /sbin/cryptsetup.real ] || fail "/sbin/cryptsetup.real is left"
    [ -z "$(dpkg-divert --list /sbin/cryptsetup)" ] || fail "the diversion is left"
'
in_chroot apt-get remove -y lukskit >>"$cache/apt.log" 2>&1 || die "apt remove lukskit failed"
[ ! -e "$ch/usr/sbin/lukskit" ] || die "/usr/sbin/lukskit is left after apt remove"
[ ! -e "$ch/usr/lib/dracut/modules.d/90lukskit" ] || die "the dracut module is left after apt remove"
say "ok: the packages install, work and remove cleanly"
