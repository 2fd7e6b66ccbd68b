#!/usr/bin/env bash
# Add lukskit and an unlock step to an existing initramfs (a cpio archive of a busybox tree, as
# embedded boards build their ramdisk before wrapping it with mkimage):
#
#   scripts/initramfs-add-lukskit.sh --lukskit BIN --root DEVICE [OPTIONS] IN.cpio[.gz|.xz|.zst] OUT
#
# OUT is IN with an overlay appended (IN itself is not unpacked, so this needs no root and keeps
# IN's device nodes and owners): the static lukskit as /lukskit/bin/lukskit, an optional key file,
# and a new /init that
#   1. mounts /proc, /sys, /dev (devtmpfs) and /run, runs `mdev -s` when there is one, loads
#      the listed kernel modules,
#   2. waits for the root device (a path, UUID=... or LABEL=... resolved with busybox findfs),
#   3. unlocks it with `lukskit open` (the key file; without one the volume's tokens first, e.g.
#      a systemd-tpm2 token with the board's TPM, then a passphrase typed on the console),
#   4. mounts /dev/mapper/NAME on /newroot and `switch_root`s into the real root's init.
# When the unlock or the mount fails it says so on the console and starts a shell (or the
# ramdisk's own /init, kept as /init.board, with --fallback-board-init; lukskit.fallback=
# shell|board|halt on the kernel command line chooses too).
# OUT is compressed like IN (--compress gzip|xz|zstd|none to choose); wrap it for U-Boot as
# before, e.g. `mkimage -A arm64 -O linux -T ramdisk -C none -d OUT uramdisk.img` or in a FIT.
#
# Options:
#   --lukskit BIN        the static lukskit for the board (scripts/build-static.sh aarch64)
#   --root DEVICE        the LUKS device of the root file system: /dev/mmcblk0p2, UUID=..., LABEL=...
#                        (the kernel command line's lukskit.root= overrides it)
#   --name NAME          mapping name (default cryptroot; lukskit.name= overrides it)
#   --key-file FILE      put FILE into the ramdisk (/lukskit/root.key, mode 0400) and unlock with
#                        it; without it lukskit asks for the passphrase on the console
#   --fstype TYPE        root file system type (default ext4), --mount-options OPTS (default ro)
#   --init PATH          the real root's init (default /sbin/init; init= on the command line wins)
#   --modules "M ..."    kernel modules to load first (e.g. "dm_mod dm_crypt xts aes_ce_blk crc32c_generic ext4")
#   --open-options "..." more `lukskit open` options (e.g. "--allow-discards --tries 5")
#   --wait SECONDS       how long to wait for the root device (default 30)
#   --tpm2-device DEV    the TPM of the root's systemd-tpm2 token: auto (/dev/tpmrm0 or /dev/tpm0)
#                        or a /dev path; its node is waited for (--tpm-wait SECONDS, default 10)
#                        before the unlock. Put its driver into the ramdisk and --modules (e.g.
#                        tpm_tis_spi, tpm_tis_i2c_cr50, tpm_ftpm_tee) when it is a module
#   --fallback-board-init  on failure run the ramdisk's own /init instead of a shell
#   --compress gzip|xz|zstd|none
set -euo pipefail

usage() {
    sed -n '2,40p' "$0" | sed 's/^# \{0,1\}//'
    exit "${1:-2}"
}

LUKSKIT='' ROOT='' NAME=cryptroot KEY='' FSTYPE=ext4 MOUNT_OPTS=ro INIT=/sbin/init MODULES=''
OPEN_OPTS='' WAIT=30 FALLBACK=shell COMPRESS= TPM='' TPM_WAIT=10
while [ $# -gt 0 ]; do
    case "$1" in
    --lukskit) LUKSKIT=$2; shift 2 ;;
    --root) ROOT=$2; shift 2 ;;
    --name) NAME=$2; shift 2 ;;
    --key-file) KEY=$2; shift 2 ;;
    --fstype) FSTYPE=$2; shift 2 ;;
    --mount-options) MOUNT_OPTS=$2; shift 2 ;;
    --init) INIT=$2; shift 2 ;;
    --modules) MODULES=$2; shift 2 ;;
    --open-options) OPEN_OPTS=$2; shift 2 ;;
    --wait) WAIT=$2; shift 2 ;;
    --tpm2-device) TPM=$2; shift 2 ;;
    --tpm-wait) TPM_WAIT=$2; shift 2 ;;
    --fallback-board-init) FALLBACK=board; shift ;;
    --compress) COMPRESS=$2; shift 2 ;;
    -h | --help) usage 0 ;;
    --) shift; break ;;
    -*) echo "unknown option $1" >&2; usage ;;
    *) break ;;
    esac
done
[ $# -eq 2 ] || usage
IN=$1 OUT=$2
die() { echo "initramfs-add-lukskit: $*" >&2; exit 1; }
[ -f "$IN" ] || die "no such file: $IN"
[ -n "$LUKSKIT" ] || die "--lukskit BIN is required (a static lukskit: scripts/build-static.sh)"
[ -f "$LUKSKIT" ] || die "no such file: $LUKSKIT"
[ -n "$ROOT" ] || die "--root DEVICE is required"
[ -z "$KEY" ] || [ -f "$KEY" ] || die "no such key file: $KEY"
case "$NAME" in *[!A-Za-z0-9_.-]* | "") die "--name: letters, digits, '_', '.', '-' only" ;; esac
case "$WAIT" in *[!0-9]* | "") die "--wait: a number of seconds" ;; esac
case "$TPM_WAIT" in *[!0-9]* | "") die "--tpm-wait: a number of seconds" ;; esac
case "$TPM" in "" | auto | /dev/*) ;; *) die "--tpm2-device: auto or a /dev path" ;; esac
command -v cpio >/dev/null || die "cpio not found (apt-get install cpio)"
# The binary must not need a dynamic loader: a busybox ramdisk has no libc.
if [ "$(head -c 4 "$LUKSKIT" | od -An -tx1 | tr -d ' \n')" != 7f454c46 ]; then die "$LUKSKIT is not an ELF binary"; fi
if command -v readelf >/dev/null && readelf -lW "$LUKSKIT" | grep -q INTERP; then
    die "$LUKSKIT is dynamically linked: use the static build (scripts/build-static.sh)"
fi

magic=$(head -c 6 "$IN" | od -An -tx1 | tr -d ' \n')
case "$magic" in
1f8b*) incomp=gzip; cat_in() { gzip -dc "$IN"; } ;;
fd377a585a00) incomp=xz; cat_in() { xz -dc "$IN"; } ;;
28b52ffd*) incomp=zstd; cat_in() { zstd -dcq "$IN"; } ;;
303730373031 | 303730373032) incomp=none; cat_in() { cat "$IN"; } ;;
*) die "$IN: neither a newc cpio archive nor a gzip/xz/zstd compressed one" ;;
esac
COMPRESS=${COMPRESS:-$incomp}
case "$COMPRESS" in
gzip) compress() { gzip -9n; } ;;
xz) compress() { xz --check=crc32 -9; } ;; # the kernel's xz decoder wants CRC32
zstd) compress() { zstd -19q; } ;;
none) compress() { cat; } ;;
*) die "--compress: gzip, xz, zstd or none" ;;
esac

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cat_in >"$tmp/in.cpio"
# Only /init is read from IN (kept as /init.board): nothing else is unpacked.
mkdir -p "$tmp/o/lukskit/bin"
if (cd "$tmp" && cpio -i --quiet --to-stdout init ./init <in.cpio >board-init 2>/dev/null) && [ -s "$tmp/board-init" ]; then
    cp "$tmp/board-init" "$tmp/o/init.board"
    chmod 755 "$tmp/o/init.board"
fi
[ -n "$(cd "$tmp" && cpio -t --quiet <in.cpio 2>/dev/null | grep -E '^(\./)?(bin|usr/bin|sbin)/(sh|busybox)$' | head -n 1)" ] ||
    echo "initramfs-add-lukskit: warning: $IN has no /bin/sh or busybox: the new /init needs a shell" >&2

cp "$LUKSKIT" "$tmp/o/lukskit/bin/lukskit"
chmod 755 "$tmp/o/lukskit/bin/lukskit"
keypath=
if [ -n "$KEY" ]; then
    cp "$KEY" "$tmp/o/lukskit/root.key"
    chmod 400 "$tmp/o/lukskit/root.key"
    keypath=/lukskit/root.key
fi
q() { printf "'%s'" "$(printf '%s' "$1" | sed "s/'/'\\\\''/g")"; }
{
    echo "# written by scripts/initramfs-add-lukskit.sh"
    echo "LUKSKIT_ROOT=$(q "$ROOT")"
    echo "LUKSKIT_NAME=$(q "$NAME")"
    echo "LUKSKIT_KEY=$(q "$keypath")"
    echo "LUKSKIT_FSTYPE=$(q "$FSTYPE")"
    echo "LUKSKIT_MOUNT_OPTS=$(q "$MOUNT_OPTS")"
    echo "LUKSKIT_INIT=$(q "$INIT")"
    echo "LUKSKIT_MODULES=$(q "$MODULES")"
    echo "LUKSKIT_OPEN_OPTS=$(q "$OPEN_OPTS")"
    echo "LUKSKIT_WAIT=$(q "$WAIT")"
    echo "LUKSKIT_FALLBACK=$(q "$FALLBACK")"
    echo "LUKSKIT_TPM=$(q "$TPM")"
    echo "LUKSKIT_TPM_WAIT=$(q "$TPM_WAIT")"
} >"$tmp/o/lukskit/config"

cat >"$tmp/o/init" <<'INIT'
#!/bin/sh
# /init written by lukskit's scripts/initramfs-add-lukskit.sh: unlock the encrypted root with
# lukskit, mount it and switch_root into it. Settings in /lukskit/config; on the kernel command
# line lukskit.root=, lukskit.name= and init= override them.
PATH=/lukskit/bin:/sbin:/bin:/usr/sbin:/usr/bin
export PATH
. /lukskit/config
mkdir -p /proc /sys /dev /run /newroot
grep -qs ' /proc ' /proc/mounts || mount -t proc proc /proc
grep -q ' /sys ' /proc/mounts || mount -t sysfs sysfs /sys
grep -q ' /dev ' /proc/mounts || mount -t devtmpfs devtmpfs /dev
grep -q ' /run ' /proc/mounts || mount -t tmpfs -o mode=755,nosuid,nodev tmpfs /run
exec </dev/console >/dev/console 2>&1
mkdir -p /dev/mapper /run/cryptsetup
msg() { echo "lukskit-initramfs: $*"; }
fail() {
    msg "$*"
    if [ "$LUKSKIT_FALLBACK" = board ] && [ -x /init.board ]; then
        msg "starting the ramdisk's own init (/init.board)"
        exec /init.board
    fi
    if [ "$LUKSKIT_FALLBACK" = halt ]; then
        msg "powering off (lukskit.fallback=halt)"
        sync
        poweroff -f
    fi
    msg "starting a shell; unlock and mount the root on /newroot, then: exec switch_root /newroot $LUKSKIT_INIT"
    exec sh
}
for arg in $(cat /proc/cmdline); do
    case "$arg" in
    lukskit.root=*) LUKSKIT_ROOT=${arg#lukskit.root=} ;;
    lukskit.name=*) LUKSKIT_NAME=${arg#lukskit.name=} ;;
    lukskit.fallback=*) LUKSKIT_FALLBACK=${arg#lukskit.fallback=} ;;
    init=*) LUKSKIT_INIT=${arg#init=} ;;
    esac
done
if command -v mdev >/dev/null; then
    [ -e /proc/sys/kernel/hotplug ] && command -v mdev >/proc/sys/kernel/hotplug
    mdev -s
fi
command -v modprobe >/dev/null && command -v modprobe >/proc/sys/kernel/modprobe
for m in $LUKSKIT_MODULES; do modprobe "$m" || msg "modprobe $m failed"; done
# Wait for the root device (a path, UUID=... or LABEL=...).
dev= n=0
while :; do
    case "$LUKSKIT_ROOT" in
    UUID=* | LABEL=*) dev=$(findfs "$LUKSKIT_ROOT" 2>/dev/null) || dev= ;;
    *) dev=$LUKSKIT_ROOT ;;
    esac
    [ -n "$dev" ] && [ -b "$dev" ] && break
    [ "$n" -ge $((LUKSKIT_WAIT * 10)) ] && fail "the root device $LUKSKIT_ROOT did not appear in ${LUKSKIT_WAIT}s"
    [ "$n" = 0 ] && msg "waiting for $LUKSKIT_ROOT"
    command -v mdev >/dev/null && [ $((n % 10)) = 9 ] && mdev -s
    n=$((n + 1))
    sleep 0.1
done
# The TPM of the root's token (--tpm2-device): its node, waited for at most LUKSKIT_TPM_WAIT s.
tpmopt=
if [ -n "$LUKSKIT_TPM" ]; then
    case "$LUKSKIT_TPM" in auto) tpmdevs="/dev/tpmrm0 /dev/tpm0" ;; *) tpmdevs=$LUKSKIT_TPM tpmopt="--tpm2-device $LUKSKIT_TPM" ;; esac
    n=0 found=
    while [ -z "$found" ]; do
        for t in $tpmdevs; do [ -e "$t" ] && found=$t; done
        [ -n "$found" ] && break
        [ "$n" -ge $((LUKSKIT_TPM_WAIT * 10)) ] && { msg "no TPM ($tpmdevs) after ${LUKSKIT_TPM_WAIT}s"; break; }
        [ "$n" = 0 ] && msg "waiting for a TPM ($tpmdevs)"
        command -v mdev >/dev/null && [ $((n % 10)) = 9 ] && mdev -s
        n=$((n + 1))
        sleep 0.1
    done
fi
msg "unlocking $dev as $LUKSKIT_NAME"
# shellcheck disable=SC2086 # LUKSKIT_OPEN_OPTS is a list of options
if [ -n "$LUKSKIT_KEY" ]; then
    lukskit open $LUKSKIT_OPEN_OPTS -d "$LUKSKIT_KEY" "$dev" "$LUKSKIT_NAME" || fail "lukskit open failed (exit $?)"
else
    # The prompt needs a controlling terminal, which /dev/console never is: busybox's cttyhack
    # runs lukskit on the real console device (ttyS0, ttyAMA0, ...) in a session of its own
    # (busybox's setsid does not fork here: a child of this script leads no process group).
    ctty=
    command -v setsid >/dev/null && command -v cttyhack >/dev/null && ctty="setsid cttyhack"
    $ctty lukskit open $LUKSKIT_OPEN_OPTS $tpmopt "$dev" "$LUKSKIT_NAME" || fail "lukskit open failed (exit $?)"
fi
mount -t "$LUKSKIT_FSTYPE" -o "$LUKSKIT_MOUNT_OPTS" "/dev/mapper/$LUKSKIT_NAME" /newroot ||
    fail "cannot mount /dev/mapper/$LUKSKIT_NAME ($LUKSKIT_FSTYPE) on /newroot"
[ -x "/newroot$LUKSKIT_INIT" ] || [ -L "/newroot$LUKSKIT_INIT" ] || fail "no $LUKSKIT_INIT on the unlocked root"
msg "root unlocked and mounted; switching to $LUKSKIT_INIT"
# The key file is not needed any more; switch_root empties the ramdisk anyway.
[ -n "$LUKSKIT_KEY" ] && rm -f "$LUKSKIT_KEY"
grep -q ' /newroot/run ' /proc/mounts || { [ -d /newroot/run ] && mount --move /run /newroot/run; }
[ -d /newroot/dev ] && mount --move /dev /newroot/dev
umount /sys 2>/dev/null
umount /proc 2>/dev/null
exec switch_root /newroot "$LUKSKIT_INIT"
INIT
chmod 755 "$tmp/o/init"

(cd "$tmp/o" && find . -mindepth 1 | LC_ALL=C sort | cpio -o -H newc -R 0:0 --quiet) >"$tmp/overlay.cpio"
# A newc archive may be followed by another one: the kernel unpacks both in order, and the later
# /init replaces the earlier one.
cat "$tmp/in.cpio" "$tmp/overlay.cpio" | compress >"$OUT.tmp"
mv -f "$OUT.tmp" "$OUT"
echo "initramfs-add-lukskit: $OUT: $IN plus lukskit ($(stat -c %s "$LUKSKIT") bytes), /init unlocking $ROOT as $NAME ($(stat -c %s "$OUT") bytes, $COMPRESS)"
