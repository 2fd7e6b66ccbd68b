#!/bin/sh
# Install (or remove) lukskit's initramfs-tools integration:
#
#   scripts/initramfs-tools/install.sh [--lukskit BIN] [--root DIR] [--no-update]
#   scripts/initramfs-tools/install.sh --uninstall [--root DIR] [--no-update]
#
# Puts the hook into /etc/initramfs-tools/hooks/lukskit and the boot scripts into
# /etc/initramfs-tools/scripts/local-top/lukskit and .../local-block/lukskit; with --lukskit,
# installs BIN (best the static build, scripts/build-static.sh x86_64) as /usr/local/sbin/lukskit
# (without --lukskit the hook takes the installed one: the Debian package's /usr/sbin/lukskit);
# writes /etc/lukskit/initramfs.conf when there is none; then runs `update-initramfs -u` (not
# with --root DIR, which installs into another system's tree, nor with --no-update).
# The hook reads /etc/crypttab: see hooks/lukskit for which entries it takes.
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT='' BIN='' UPDATE=1 UNINSTALL=0
while [ $# -gt 0 ]; do
    case "$1" in
    --root) ROOT=$2; shift 2 ;;
    --lukskit) BIN=$2; shift 2 ;;
    --no-update) UPDATE=0; shift ;;
    --uninstall) UNINSTALL=1; shift ;;
    -h | --help) sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "install.sh: unknown argument $1" >&2; exit 2 ;;
    esac
done
[ -z "$ROOT" ] || UPDATE=0
IT=$ROOT/etc/initramfs-tools
FILES="hooks/lukskit scripts/local-top/lukskit scripts/local-block/lukskit"
if [ "$UNINSTALL" = 1 ]; then
    for f in $FILES; do rm -f "$IT/$f"; done
    echo "removed lukskit's hook and boot scripts from $IT (left: /usr/local/sbin/lukskit, /etc/lukskit)"
else
    for f in $FILES; do
        install -D -m 0755 "$HERE/$f" "$IT/$f"
    done
    if [ -n "$BIN" ]; then
        install -D -m 0755 "$BIN" "$ROOT/usr/local/sbin/lukskit"
    fi
    if [ ! -e "$ROOT/etc/lukskit/initramfs.conf" ]; then
        # The binary: the one installed here with --lukskit, else the Debian package's
        # (/usr/sbin/lukskit) or one installed by hand, else whatever lukskit is on PATH.
        binline='#LUKSKIT_BIN=/usr/local/sbin/lukskit   (default: the lukskit on PATH)'
        if [ -n "$BIN" ]; then
            binline=LUKSKIT_BIN=/usr/local/sbin/lukskit
        else
            for b in /usr/sbin/lukskit /usr/local/sbin/lukskit; do
                if [ -x "$ROOT$b" ]; then binline=LUKSKIT_BIN=$b; break; fi
            done
        fi
        mkdir -p "$ROOT/etc/lukskit"
        {
            echo "# lukskit's initramfs hook (see /etc/initramfs-tools/hooks/lukskit)."
            echo "# The binary put into the initramfs:"
            echo "$binline"
        } >"$ROOT/etc/lukskit/initramfs.conf"
        cat >>"$ROOT/etc/lukskit/initramfs.conf" <<'CONF'
# More crypttab names to unlock at boot (the root's /dev/mapper/NAME in /etc/fstab and entries
# with the option initramfs or x-initrd.attach are taken anyway), e.g. the volume under LVM:
#LUKSKIT_NAMES="cryptroot"
# More kernel modules:
#LUKSKIT_MODULES=""
CONF
    fi
    echo "installed lukskit's hook and boot scripts into $IT"
fi
if [ "$UPDATE" = 1 ]; then
    update-initramfs -u
fi
