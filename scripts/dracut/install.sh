#!/bin/sh
# Activate (or deactivate) lukskit's dracut module:
#
#   dracut/install.sh [--lukskit BIN] [--root DIR] [--no-update]
#   dracut/install.sh --uninstall [--root DIR] [--no-update]
#
# From the source tree (scripts/dracut/install.sh) it copies the module into
# /usr/lib/dracut/modules.d/90lukskit; the Debian package ships it there already (inactive: dracut
# takes it only when a configuration adds it) and this script, as
# /usr/share/lukskit/dracut/install.sh, only writes the configuration. Then:
#   /etc/dracut.conf.d/90-lukskit.conf   add_dracutmodules+=" lukskit " and
#                                        omit_dracutmodules+=" crypt systemd-cryptsetup "
#                                        (dracut's own unlocking)
#   /etc/lukskit/initramfs.conf          when there is none (the binary, more names, options;
#                                        shared with the initramfs-tools hook)
# With --lukskit, BIN (best the static build, scripts/build-static.sh x86_64) is installed as
# /usr/local/sbin/lukskit. Last it runs `dracut --force` (not with --root DIR, which installs
# into another system's tree, nor with --no-update). The module reads /etc/crypttab: see
# 90lukskit/module-setup.sh for which entries it takes.
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT='' BIN='' UPDATE=1 UNINSTALL=0
while [ $# -gt 0 ]; do
    case "$1" in
    --root) ROOT=$2; shift 2 ;;
    --lukskit) BIN=$2; shift 2 ;;
    --no-update) UPDATE=0; shift ;;
    --uninstall) UNINSTALL=1; shift ;;
    -h | --help) sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "install.sh: unknown argument $1" >&2; exit 2 ;;
    esac
done
[ -z "$ROOT" ] || UPDATE=0
MOD=$ROOT/usr/lib/dracut/modules.d/90lukskit
CONF=$ROOT/etc/dracut.conf.d/90-lukskit.conf
# Set when this script copied the module (not the package's): --uninstall removes it then.
MARK=.installed-by-lukskit-install.sh
if [ "$UNINSTALL" = 1 ]; then
    rm -f "$CONF"
    if [ -e "$MOD/$MARK" ]; then
        rm -rf "$MOD"
    fi
    echo "deactivated lukskit's dracut module (removed $CONF; left: /etc/lukskit, the lukskit binary)"
else
    if [ -d "$HERE/90lukskit" ]; then
        for f in module-setup.sh lukskit-dracut.sh parse-lukskit.sh lukskit-emergency.sh; do
            install -D -m 0755 "$HERE/90lukskit/$f" "$MOD/$f"
        done
        : >"$MOD/$MARK"
    elif [ ! -e "$MOD/module-setup.sh" ]; then
        echo "install.sh: no dracut module in $HERE/90lukskit nor in $MOD" >&2
        exit 1
    fi
    if [ -n "$BIN" ]; then
        install -D -m 0755 "$BIN" "$ROOT/usr/local/sbin/lukskit"
    fi
    mkdir -p "$(dirname "$CONF")"
    cat >"$CONF" <<'CONF'
# lukskit unlocks the LUKS volumes in the initramfs (module 90lukskit, docs/boot.md);
# dracut's own crypt module (cryptsetup, systemd-cryptsetup; dracut 060 and later split the
# latter into a module of its own) would unlock the same ones.
add_dracutmodules+=" lukskit "
omit_dracutmodules+=" crypt systemd-cryptsetup "
CONF
    if [ ! -e "$ROOT/etc/lukskit/initramfs.conf" ]; then
        binline='#LUKSKIT_BIN=/usr/local/sbin/lukskit   (default: /usr/sbin/lukskit, /usr/local/sbin/lukskit, ...)'
        if [ -n "$BIN" ]; then
            binline=LUKSKIT_BIN=/usr/local/sbin/lukskit
        else
            for b in /usr/sbin/lukskit /usr/local/sbin/lukskit; do
                if [ -x "$ROOT$b" ]; then binline=LUKSKIT_BIN=$b; break; fi
            done
        fi
        mkdir -p "$ROOT/etc/lukskit"
        {
            echo "# lukskit in the initramfs (dracut module 90lukskit, initramfs-tools hook)."
            echo "# The binary put into the initramfs:"
            echo "$binline"
        } >"$ROOT/etc/lukskit/initramfs.conf"
        cat >>"$ROOT/etc/lukskit/initramfs.conf" <<'CONF'
# More crypttab names to unlock at boot (the root's /dev/mapper/NAME in /etc/fstab and entries
# with the option initramfs, x-initrd.attach or force are taken anyway), e.g. under LVM:
#LUKSKIT_NAMES="cryptroot"
# More kernel modules:
#LUKSKIT_MODULES=""
CONF
    fi
    echo "activated lukskit's dracut module ($CONF)"
fi
if [ "$UPDATE" = 1 ]; then
    dracut --force
fi
