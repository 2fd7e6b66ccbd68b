#!/usr/bin/env bash
# tests/refvm/run.sh — run a shell script inside a VM with Debian's kernel (real dm-crypt,
# device-mapper, every crypto module), Debian's cryptsetup/dmsetup and, optionally, lukskit.
#
#   run.sh [OPTIONS] SCRIPT [DISK ...]
#   run.sh --prepare            download and build everything, boot nothing
#   run.sh --initrd CPIO [--answer PROMPT=FILE] [--snapshot] [--append ARGS] [DISK ...]
#                               boot Debian's kernel with an initramfs of your own (e.g. one
#                               made by mkinitramfs); the serial console is the output
#   run.sh --tpm STATEDIR ...   (either form) with a software TPM 2.0 (swtpm) as a TIS device
#
# Each DISK (a raw image file on the host) is attached as /dev/vda, /dev/vdb, ... in the order
# given; whatever the guest writes to them is in the files when run.sh returns. SCRIPT runs under
# Debian's dash as root; its stdout and stderr come back on run.sh's stdout and stderr (kernel
# messages do not: they go to a console log), and its exit status is run.sh's exit status.
#
# Exit statuses of the harness itself: 77 = the VM cannot be provided here (qemu not installable,
# Debian mirror unreachable and nothing cached) — the tests fail on it unless LUKSKIT_ALLOW_SKIP=1;
# 124 = timeout; 125 = the VM did not report a status (boot failure, kernel panic, ...). See
# README.md.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SELF="$HERE/$(basename "${BASH_SOURCE[0]}")"
REFVM_TAG=refvm
# shellcheck source=tests/refvm/lib.sh
. "$HERE/lib.sh"

CACHE=${LUKSKIT_REFVM_CACHE:-${XDG_CACHE_HOME:-${HOME:-/tmp}/.cache}/lukskit-refvm}
TIMEOUT=${LUKSKIT_REFVM_TIMEOUT:-900}
MEM=${LUKSKIT_REFVM_MEM:-1536}
CPUS=${LUKSKIT_REFVM_CPUS:-2}
SHARE=${LUKSKIT_REFVM_SHARE:-}
VERBOSE=${LUKSKIT_REFVM_VERBOSE:-0}
KEEP=${LUKSKIT_REFVM_KEEP:-0}
KERNEL_PIN=${LUKSKIT_REFVM_KERNEL:-}
EXTRA_MODULES=${LUKSKIT_REFVM_EXTRA_MODULES:-}
APPEND=${LUKSKIT_REFVM_APPEND:-}
LUKSKIT_BIN=${LUKSKIT_BIN:-}
FIO=${LUKSKIT_REFVM_FIO:-0}

# Debian packages unpacked into the initramfs (the kernel package is added by version). Libraries
# that every Debian system has (libc, libblkid, libuuid, libselinux, libudev, ...) are taken from
# the host when a binary needs them; the others are listed here so that the VM does not depend on
# what happens to be installed.
PACKAGES=(
    busybox-static dash
    cryptsetup-bin libcryptsetup12 libpopt0 libargon2-1 libjson-c5 libssl3
    dmsetup libdevmapper1.02.1
    kmod
    e2fsprogs libext2fs2 libcom-err2 libss2
    mdadm
    util-linux mount
    # cryptsetup's own test scripts (tests/refvm/upstream): bash, keyctl, jq and GNU_PACKAGES.
    bash keyutils libkeyutils1 jq libjq1 libonig5
    coreutils grep sed findutils diffutils sharutils xz-utils
    # Debian's cryptdisks_start/stop and initramfs boot script (tests/refvm/crypttab): the
    # scripts of cryptsetup and cryptsetup-initramfs, /lib/lsb/init-functions and
    # initramfs-tools' /scripts/functions, see SCRIPT_TREES.
    cryptsetup sysvinit-utils cryptsetup-initramfs initramfs-tools-core
    # systemd-udevd and udevadm (tests/refvm/udev): started only by a script that runs
    # /refvm/start-udev, with the device-mapper rules of dmsetup (UDEV_RULES).
    udev
    # LVM on LUKS images for the boot tests (tests/refvm/boot): lvm.
    lvm2 libaio1 libdevmapper-event1.02.1
)
# Programs installed from those packages (they win over busybox applets of the same name).
BINARIES=(
    dash
    cryptsetup veritysetup integritysetup
    dmsetup
    kmod
    mke2fs e2fsck tune2fs dumpe2fs resize2fs debugfs
    mdadm
    mount umount losetup blkid wipefs blockdev lsblk
    bash keyctl jq
    udevadm
    lvm
)
# Every program of these packages goes into /opt/gnu/bin, which is not on PATH: scripts written
# for a GNU userland rather than busybox (cryptsetup's own tests) put it first in theirs.
GNU_PACKAGES=(coreutils grep sed findutils diffutils sharutils xz-utils util-linux mount)
# Script trees copied from the unpacked packages as they are (ELF files among them get their
# libraries): Debian's cryptdisks_start/stop with their functions, askpass and checks.
SCRIPT_TREES=(
    lib/cryptsetup sbin/cryptdisks_start sbin/cryptdisks_stop lib/lsb
    usr/share/initramfs-tools/scripts/functions usr/share/initramfs-tools/scripts/local-top/cryptroot
)
# name=target symlinks next to the binaries above.
LINKS=(
    sh=dash
    dmstats=dmsetup
    modprobe=kmod insmod=kmod rmmod=kmod lsmod=kmod modinfo=kmod depmod=kmod
    mkfs.ext2=mke2fs mkfs.ext3=mke2fs mkfs.ext4=mke2fs
    fsck.ext2=e2fsck fsck.ext3=e2fsck fsck.ext4=e2fsck
    systemd-udevd=udevadm
)
# The only udev rules in the guest (udev's own 50-udev-default.rules etc. are left out: the
# device-mapper rules are what /dev/mapper and /dev/disk/by-* of dm devices come from).
UDEV_RULES=(
    lib/udev/rules.d/55-dm.rules lib/udev/rules.d/60-persistent-storage-dm.rules
    lib/udev/rules.d/95-dm-notify.rules
)
# Kernel modules (paths under /lib/modules/KVER/kernel, files or whole directories); their
# dependencies are added from modules.dep. To add more, extend this list or set
# LUKSKIT_REFVM_EXTRA_MODULES="fs/btrfs drivers/block/zram" (paths or module names).
MODULES=(
    crypto arch/x86/crypto lib/crypto
    drivers/md
    drivers/virtio drivers/block/virtio_blk.ko drivers/char/virtio_console.ko
    drivers/char/hw_random/virtio-rng.ko
    drivers/block/loop.ko drivers/block/nbd.ko
    fs/ext4 fs/fuse fs/fat fs/9p net/9p/9pnet_virtio.ko
    drivers/scsi/scsi_debug.ko drivers/scsi/sd_mod.ko fs/nls fs/xfs
)
# Never included: tcrypt is the kernel's self-test module (loading it always fails).
MODULES_EXCLUDE=(crypto/tcrypt.ko drivers/md/md-cluster.ko)
# Loaded at boot, before SCRIPT runs (everything else loads on demand: cryptsetup and the kernel
# call modprobe for the ciphers they need).
BOOT_MODULES="virtio_pci virtio_blk virtio_console virtio_rng dm_mod dm_crypt loop"

usage() {
    cat <<'EOF'
usage: run.sh [OPTIONS] SCRIPT [DISK ...]
       run.sh --prepare

Boots Debian's kernel under qemu (TCG) and runs SCRIPT (/bin/sh = dash) as root inside it.
DISKs are raw image files attached as /dev/vda, /dev/vdb, ... (read-write).

options:
  --share DIR      mount host directory DIR read-write at /host in the guest (virtio-9p)
  --copy SRC[:DST] put host file SRC into the guest at DST (default /refvm/files/NAME)
  --timeout SEC    kill the VM after SEC seconds (default 900; LUKSKIT_REFVM_TIMEOUT)
  --mem MIB        guest memory (default 1536; LUKSKIT_REFVM_MEM)
  --prepare        only download and build the kernel and initramfs (exit 0, or 77 = skip)
  --verbose        show the kernel console and timings on stderr (LUKSKIT_REFVM_VERBOSE=1)
  --keep           keep the run directory (console log, initrd) (LUKSKIT_REFVM_KEEP=1)
  --initrd CPIO    boot this initramfs instead (no SCRIPT; the serial console, kernel messages
                   included, is stdout; exit status 0 once the guest powered off)
  --answer PROMPT=FILE  (with --initrd) when the console shows PROMPT, type FILE's bytes and
                   Enter on it (several --answer are answered in order)
  --append ARGS    more kernel command line (as LUKSKIT_REFVM_APPEND)
  --snapshot       the guest's writes to the DISKs are thrown away (qemu snapshot=on)
  --tpm STATEDIR   attach a software TPM 2.0 (swtpm, state kept in STATEDIR, created when
                   missing) as a tpm-tis device: the guest has /dev/tpm0 and /dev/tpmrm0
  --fio            put a static fio (built once from Debian's source package by fio-build.sh)
                   into the guest as /usr/bin/fio, for this run only (LUKSKIT_REFVM_FIO=1)

environment: LUKSKIT_BIN (lukskit binary, installed as /usr/bin/lukskit),
  LUKSKIT_REFVM_CACHE (cache dir), LUKSKIT_REFVM_KERNEL (e.g. 6.1.0-56-amd64),
  LUKSKIT_REFVM_EXTRA_MODULES, LUKSKIT_REFVM_CPUS, LUKSKIT_REFVM_APPEND (kernel command line).
exit status: SCRIPT's, or 77 (VM not available here), 124 (timeout), 125 (VM failed).
EOF
}

PREPARE=0
COPIES=()
INITRD=
ANSWERS=()
SNAPSHOT=0
TPM_STATE=
while [ $# -gt 0 ]; do
    case "$1" in
    --share) SHARE=$2; shift 2 ;;
    --copy) COPIES+=("$2"); shift 2 ;;
    --timeout) TIMEOUT=$2; shift 2 ;;
    --mem) MEM=$2; shift 2 ;;
    --prepare) PREPARE=1; shift ;;
    --verbose) VERBOSE=1; shift ;;
    --keep) KEEP=1; shift ;;
    --initrd) INITRD=$2; shift 2 ;;
    --answer) ANSWERS+=("$2"); shift 2 ;;
    --append) APPEND="$APPEND $2"; shift 2 ;;
    --snapshot) SNAPSHOT=1; shift ;;
    --fio) FIO=1; shift ;;
    --tpm) TPM_STATE=$2; shift 2 ;;
    -h | --help) usage; exit 0 ;;
    --) shift; break ;;
    -*) usage >&2; exit 2 ;;
    *) break ;;
    esac
done
SCRIPT=
if [ "$PREPARE" = 0 ] && [ -z "$INITRD" ]; then
    [ $# -ge 1 ] || { usage >&2; exit 2; }
    SCRIPT=$1
    shift
    [ -f "$SCRIPT" ] || die "no such script: $SCRIPT"
fi
DISKS=("$@")
if [ -n "$INITRD" ]; then [ -f "$INITRD" ] || die "no such initramfs: $INITRD"; fi
for a in "${ANSWERS[@]}"; do
    case "$a" in *=*) [ -f "${a#*=}" ] || die "--answer: no such file: ${a#*=}" ;; *) die "--answer PROMPT=FILE" ;; esac
done
for d in "${DISKS[@]}"; do
    [ -f "$d" ] || [ -b "$d" ] || die "no such disk image: $d"
done
if [ -n "$SHARE" ]; then [ -d "$SHARE" ] || die "no such directory: $SHARE"; fi
if [ -n "$TPM_STATE" ]; then
    command -v swtpm >/dev/null || skip "--tpm needs swtpm (apt-get install swtpm swtpm-tools)"
    mkdir -p "$TPM_STATE" || die "--tpm: cannot create $TPM_STATE"
fi
if [ -n "$LUKSKIT_BIN" ]; then [ -x "$LUKSKIT_BIN" ] || die "LUKSKIT_BIN is not executable: $LUKSKIT_BIN"; fi
[ "$(uname -m)" = x86_64 ] || skip "the reference VM needs an x86_64 host"

T0=$(date +%s.%N)

# --- host tools -------------------------------------------------------------------------------
APT_UPDATED=0
apt_update() {
    if [ "$APT_UPDATED" = 0 ] && [ "$(id -u)" = 0 ]; then
        say "apt-get update"
        apt-get update -qq >/dev/null 2>&1 || true
        APT_UPDATED=1
    fi
}
refvm_need_tools qemu-system-x86_64 qemu-system-x86
command -v dpkg-deb >/dev/null || skip "dpkg-deb not found (the reference VM is built from Debian packages)"
DEPMOD=$(command -v depmod || echo /sbin/depmod)

mkdir -p "$CACHE/debs" "$CACHE/vm"
exec 9>"$CACHE/lock"
flock 9

# --- which packages -----------------------------------------------------------------------------
# Resolving versions with apt-cache costs ~1.5 s, so the result (package -> cached .deb) is kept in
# $CACHE/resolved and reused while apt's package lists and this script are unchanged.
RESOLVE_KEY=$({
    cat "$SELF"
    echo "$KERNEL_PIN"
} | sha256sum | cut -c1-16)
DEBS=()
KPKG=
resolved_is_fresh() {
    local f=$CACHE/resolved line
    [ -f "$f" ] || return 1
    [ "$(head -n 1 "$f")" = "key $RESOLVE_KEY" ] || return 1
    if [ -d /var/lib/apt/lists ] && [ -n "$(find /var/lib/apt/lists -maxdepth 1 \( -name '*Packages*' -o -name '*Release' \) -newer "$f" -print -quit 2>/dev/null)" ]; then
        return 1
    fi
    while read -r line; do
        case "$line" in key\ *) continue ;; esac
        [ -f "$CACHE/debs/${line#* }" ] || return 1
    done <"$f"
    return 0
}
newest_kernel() {
    apt-cache pkgnames linux-image-6.1.0- 2>/dev/null |
        grep -E '^linux-image-6\.1\.0-[0-9]+-amd64$' | sort -V | tail -n 1
}
cached_kernel() {
    local f
    for f in "$CACHE"/debs/linux-image-6.1.0-*-amd64_*.deb; do
        [ -f "$f" ] && basename "$f" | sed 's/_.*//'
    done | sort -V | tail -n 1
}
deb_for() { # pkg [version] -> the cached .deb of that version (any version when none given)
    local pkg=$1 want=${2:-} f
    for f in "$CACHE/debs/${pkg}_"*.deb; do
        [ -f "$f" ] || continue
        if [ -z "$want" ] || [ "$(dpkg-deb -f "$f" Version)" = "$want" ]; then
            echo "$f"
            return 0
        fi
    done
    return 0
}
download() { # pkg...
    rm -rf "$CACHE/debs.tmp"
    mkdir -p "$CACHE/debs.tmp"
    (cd "$CACHE/debs.tmp" && apt-get download "$@") >"$CACHE/download.log" 2>&1
}
resolve() {
    if [ -n "$KERNEL_PIN" ]; then
        KPKG=linux-image-${KERNEL_PIN#linux-image-}
    else
        KPKG=$(newest_kernel)
        if [ -z "$KPKG" ] && [ -z "$(cached_kernel)" ]; then
            apt_update
            KPKG=$(newest_kernel)
        fi
        [ -n "$KPKG" ] || KPKG=$(cached_kernel)
        [ -n "$KPKG" ] || skip "no linux-image-6.1.0-*-amd64 package known to apt and none cached in $CACHE"
    fi
    local all=("$KPKG" "${PACKAGES[@]}") pkg ver f
    # Candidate versions of every package in one apt-cache call.
    declare -A want=()
    while read -r pkg ver; do
        [ "$ver" = "(none)" ] || want[$pkg]=$ver
    done < <(apt-cache policy "${all[@]}" 2>/dev/null |
        awk '/^[^ ].*:$/ { sub(":$", ""); p = $0 } /Candidate:/ { print p, $2 }')
    local have=() missing=()
    for pkg in "${all[@]}"; do
        f=$(deb_for "$pkg" "${want[$pkg]:-}")
        if [ -n "$f" ]; then have+=("$pkg $(basename "$f")"); else missing+=("$pkg"); fi
    done
    if [ ${#missing[@]} -gt 0 ]; then
        say "downloading ${missing[*]}"
        if ! download "${missing[@]}"; then
            apt_update
            if ! download "${missing[@]}"; then
                # Offline: an older cached version still does.
                for pkg in "${missing[@]}"; do
                    f=$(deb_for "$pkg")
                    [ -n "$f" ] || {
                        grep -E '^E:' "$CACHE/download.log" | head -n 5 | sed 's/^/  /' >&2
                        skip "could not download ${missing[*]} from the Debian mirror"
                    }
                    have+=("$pkg $(basename "$f")")
                done
                say "offline: using cached packages"
                missing=()
            fi
        fi
        for f in "$CACHE/debs.tmp"/*.deb; do
            [ -f "$f" ] || continue
            pkg=$(dpkg-deb -f "$f" Package)
            rm -f "$CACHE/debs/${pkg}_"*.deb
            mv "$f" "$CACHE/debs/"
            have+=("$pkg $(basename "$f")")
        done
        rm -rf "$CACHE/debs.tmp"
    fi
    [ ${#have[@]} -eq ${#all[@]} ] || die "expected ${#all[@]} packages, have ${#have[@]}: ${have[*]}"
    # Old kernels are large: keep only the one in use.
    for f in "$CACHE"/debs/linux-image-*.deb; do
        case "$(basename "$f")" in "${KPKG}_"*) ;; *) rm -f "$f" ;; esac
    done
    { echo "key $RESOLVE_KEY"; printf '%s\n' "${have[@]}"; } >"$CACHE/resolved.tmp"
    mv -f "$CACHE/resolved.tmp" "$CACHE/resolved"
}
resolved_is_fresh || resolve
while read -r pkg f; do
    [ "$pkg" = key ] && continue
    DEBS+=("$CACHE/debs/$f")
    case "$pkg" in linux-image-*) KPKG=$pkg ;; esac
done <"$CACHE/resolved"
KVER=${KPKG#linux-image-}

# --- the initramfs ------------------------------------------------------------------------------
STAMP=$({
    cat "$SELF" "$HERE/lib.sh"
    printf '%s\n' "$KVER" "$EXTRA_MODULES"
    for f in "${DEBS[@]}"; do basename "$f"; done | sort
} | sha256sum | cut -c1-16)

# /init of the guest. /refvm/config comes from the per-run overlay.
write_init() {
    cat >"$1" <<'INIT'
#!/bin/sh
export PATH=/usr/sbin:/usr/bin HOME=/root TERM=dumb
mount -t devtmpfs devtmpfs /dev
exec </dev/null >/dev/console 2>&1
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mkdir -p /dev/pts /dev/shm /dev/mapper
mount -t devpts devpts /dev/pts
mount -t tmpfs -o mode=1777 tmpfs /dev/shm
mount -t tmpfs -o mode=755 tmpfs /run
mount -t tmpfs -o mode=1777 tmpfs /tmp
ln -sf /proc/self/fd /dev/fd
ln -sf /proc/self/fd/0 /dev/stdin
ln -sf /proc/self/fd/1 /dev/stdout
ln -sf /proc/self/fd/2 /dev/stderr
mkdir -p /run/cryptsetup /run/lock /root
command -v modprobe >/proc/sys/kernel/modprobe
echo "refvm: init $(cut -d' ' -f1 /proc/uptime)s"
. /refvm/config
modprobe -a $BOOT_MODULES || echo "refvm: modprobe -a $BOOT_MODULES failed"
if [ "$REFVM_SHARE" = 1 ]; then
    mkdir -p /host
    modprobe 9pnet_virtio && modprobe 9p &&
        mount -t 9p -o trans=virtio,version=9p2000.L,msize=524288,cache=none host /host ||
        echo "refvm: cannot mount the shared directory"
fi
INIT
    refvm_init_tail >>"$1"
    chmod 755 "$1"
}

# /refvm/start-udev and /refvm/stop-udev: udevd runs only in scripts that start it (every other
# script sees no /run/udev/control, as before, and libdevmapper there needs DM_DISABLE_UDEV=1).
write_udev_helpers() {
    cat >"$1/start-udev" <<'START'
#!/bin/sh
# Start systemd-udevd (device-mapper rules only) and wait until it is listening and idle.
[ -e /run/udev/control ] && { echo "start-udev: udevd already runs" >&2; exit 1; }
/usr/bin/systemd-udevd --daemon --resolve-names=never || exit 1
n=0
while [ ! -e /run/udev/control ] && [ $n -lt 600 ]; do sleep 0.05; n=$((n + 1)); done
[ -e /run/udev/control ] || { echo "start-udev: no /run/udev/control after 30 s" >&2; exit 1; }
udevadm trigger --action=add --subsystem-match=block >/dev/null 2>&1
udevadm settle --timeout=120
START
    cat >"$1/stop-udev" <<'STOP'
#!/bin/sh
# Stop udevd. With --leave-control, leave /run/udev/control behind as a crashed udevd does.
udevadm control --exit || exit 1
n=0
while pidof systemd-udevd >/dev/null && [ $n -lt 600 ]; do sleep 0.05; n=$((n + 1)); done
pidof systemd-udevd >/dev/null && { echo "stop-udev: udevd still runs" >&2; exit 1; }
if [ "${1:-}" = --leave-control ]; then
    [ -e /run/udev/control ] || : >/run/udev/control
else
    rm -f /run/udev/control
fi
STOP
    chmod 755 "$1/start-udev" "$1/stop-udev"
}

# Copies ELF binary $1 (and the libraries ldd finds for it) into the root $2, as /usr/$3.
# Libraries are searched first in the unpacked packages ($U), then on the host.
install_elf() {
    local src=$1 root=$2 dest=$3 line lib rel
    mkdir -p "$root/$(dirname "$dest")"
    rm -f "$root/$dest"
    cp -L "$src" "$root/$dest"
    local libpath=
    if [ -n "${U:-}" ]; then
        libpath=$U/usr/lib/x86_64-linux-gnu:$U/lib/x86_64-linux-gnu
    fi
    local out
    out=$(LD_LIBRARY_PATH=$libpath ldd "$src" 2>&1) || {
        case "$out" in *"not a dynamic executable"* | *"statically linked"*) return 0 ;; esac
        die "ldd $src failed: $out"
    }
    while read -r line; do
        case "$line" in
        *"not found"*) die "$src needs ${line%% *}, found neither in the packages nor on the host (add its package to PACKAGES)" ;;
        *"=> /"*) lib=${line#*=> }; lib=${lib%% (*} ;;
        /*) lib=${line%% (*} ;;
        *) continue ;;
        esac
        rel=$lib
        if [ -n "${U:-}" ]; then rel=${rel#"$U"}; fi
        rel=${rel#/usr}
        [ -e "$root/usr$rel" ] && continue
        mkdir -p "$root/usr$(dirname "$rel")"
        cp -L "$lib" "$root/usr$rel"
    done <<<"$out"
}

build() {
    say "building the initramfs for $KVER (once; cached in $CACHE)"
    local tmp
    tmp=$(mktemp -d "$CACHE/build.XXXXXX")
    trap 'rm -rf "$tmp"' EXIT
    U=$tmp/unpack
    local R=$tmp/root f
    mkdir -p "$U"
    for f in "${DEBS[@]}"; do dpkg-deb -x "$f" "$U"; done
    # usrmerge layout in the guest
    mkdir -p "$R"/usr/bin "$R"/usr/sbin "$R"/usr/lib/x86_64-linux-gnu "$R"/usr/lib64 \
        "$R"/proc "$R"/sys "$R"/dev "$R"/run "$R"/tmp "$R"/mnt "$R"/root "$R"/etc "$R"/var "$R"/refvm
    ln -s usr/bin "$R/bin"
    ln -s usr/sbin "$R/sbin"
    ln -s usr/lib "$R/lib"
    ln -s usr/lib64 "$R/lib64"
    ln -s /tmp "$R/var/tmp"
    ln -s /run "$R/var/run"
    ln -s /proc/mounts "$R/etc/mtab"
    printf 'root:x:0:0:root:/root:/bin/sh\n' >"$R/etc/passwd"
    printf 'root:x:0:\ndisk:x:6:\n' >"$R/etc/group"
    : >"$R/etc/fstab"

    # busybox applets first, real programs replace them
    local bb=$U/bin/busybox applets applet name
    [ -x "$bb" ] || bb=$U/usr/bin/busybox
    [ -x "$bb" ] || die "busybox not found in busybox-static"
    cp "$bb" "$R/usr/bin/busybox"
    applets=$("$R/usr/bin/busybox" --list-full) || die "cannot run busybox on the host"
    for applet in $applets; do
        name=${applet##*/}
        [ "$name" = busybox ] && continue
        ln -sf busybox "$R/usr/bin/$name"
    done
    local bin src
    for bin in "${BINARIES[@]}"; do
        src=$(find "$U/bin" "$U/sbin" "$U/usr/bin" "$U/usr/sbin" -name "$bin" -type f 2>/dev/null | head -n 1)
        [ -n "$src" ] || die "$bin not found in the packages"
        rm -f "$R/usr/bin/$bin" "$R/usr/sbin/$bin"
        case "$src" in */sbin/*) install_elf "$src" "$R" "usr/sbin/$bin" ;; *) install_elf "$src" "$R" "usr/bin/$bin" ;; esac
    done
    local gpkg gdeb
    for gpkg in "${GNU_PACKAGES[@]}"; do
        gdeb=
        for f in "${DEBS[@]}"; do
            case "$(basename "$f")" in "${gpkg}_"*) gdeb=$f ;; esac
        done
        [ -n "$gdeb" ] || die "GNU_PACKAGES: $gpkg is not in PACKAGES"
        dpkg-deb -c "$gdeb" | awk '$1 ~ /^-/ { print $6 }' | grep -E '^\./(usr/)?s?bin/[^/]+$' |
            while read -r src; do
                install_elf "$U/${src#./}" "$R" "opt/gnu/bin/$(basename "$src")"
            done
    done
    local tree t
    for tree in "${SCRIPT_TREES[@]}"; do
        [ -e "$U/$tree" ] || [ -e "$U/usr/$tree" ] || die "SCRIPT_TREES: $tree not in the packages"
        [ -e "$U/$tree" ] || tree=usr/$tree
        (cd "$U" && find "$tree" -type f) | while read -r t; do
            if [ "$(head -c 4 "$U/$t" | od -An -tx1 | tr -d ' ')" = 7f454c46 ]; then
                install_elf "$U/$t" "$R" "usr/${t#usr/}"
            else
                mkdir -p "$R/usr/$(dirname "${t#usr/}")"
                cp -p "$U/$t" "$R/usr/${t#usr/}"
            fi
        done
    done
    # OpenSSL's legacy provider: cryptsetup needs it for whirlpool (and other legacy hashes).
    for f in "$U"/usr/lib/x86_64-linux-gnu/ossl-modules/*.so; do
        [ -f "$f" ] && install_elf "$f" "$R" "usr/lib/x86_64-linux-gnu/ossl-modules/$(basename "$f")"
    done
    # libgcc_s.so.1: glibc loads it with dlopen when a thread ends (pthread_exit), so ldd lists it
    # for no binary here, but cryptsetup's Argon2 runs in threads: without it every Argon2 keyslot
    # (luksAddKey/open of a LUKS2 slot) aborts with "libgcc_s.so.1 must be installed for
    # pthread_exit to work" (exit 134). Until 2026-11-25 it came in only with lukskit's libraries.
    for f in "$U"/usr/lib/x86_64-linux-gnu/libgcc_s.so.1 /usr/lib/x86_64-linux-gnu/libgcc_s.so.1 \
        /lib/x86_64-linux-gnu/libgcc_s.so.1 ""; do
        [ -n "$f" ] || die "libgcc_s.so.1 found neither in the packages nor on the host (apt-get install libgcc-s1)"
        [ -f "$f" ] && { install_elf "$f" "$R" usr/lib/x86_64-linux-gnu/libgcc_s.so.1; break; }
    done
    local r
    mkdir -p "$R/usr/lib/udev/rules.d" "$R/etc/udev/rules.d"
    for r in "${UDEV_RULES[@]}"; do
        [ -f "$U/$r" ] || die "UDEV_RULES: $r not in the packages"
        cp "$U/$r" "$R/usr/lib/udev/rules.d/"
    done
    write_udev_helpers "$R/refvm"
    local l dir
    for l in "${LINKS[@]}"; do
        rm -f "$R/usr/bin/${l%%=*}" "$R/usr/sbin/${l%%=*}"
        dir=usr/bin
        [ -e "$R/usr/sbin/${l#*=}" ] && dir=usr/sbin
        ln -s "${l#*=}" "$R/$dir/${l%%=*}"
    done

    # kernel and modules (with their dependency closure)
    local KD=$U/lib/modules/$KVER
    [ -d "$KD" ] || KD=$U/usr/lib/modules/$KVER
    cp "$U/boot/vmlinuz-$KVER" "$tmp/kernel"
    # The compressed kernel too: with a TPM attached (--tpm), the kernel booted through the PVH
    # entry below finds broken ACPI tables (QEMU 7.2: "Invalid table length 0x13 in RSDT/XSDT",
    # then no TPM and no ACPI power-off), the bzImage through SeaBIOS's Linux loader does not.
    cp "$U/boot/vmlinuz-$KVER" "$tmp/bzimage"
    # Debian's kernel has a PVH entry point: qemu can boot the uncompressed ELF directly, which
    # saves the ~3.5 s the xz decompressor takes under TCG. Fall back to the bzImage otherwise.
    local off
    if grep -q '^CONFIG_PVH=y' "$U/boot/config-$KVER" && command -v xz >/dev/null; then
        off=$(LC_ALL=C grep -obUaP '\xFD7zXZ\x00' "$tmp/kernel" | head -n 1 | cut -d: -f1)
        if [ -n "$off" ] && xz -dc --single-stream <(tail -c +$((off + 1)) "$tmp/kernel") >"$tmp/vmlinux" 2>/dev/null &&
            [ "$(head -c 4 "$tmp/vmlinux" | od -An -tx1 | tr -d ' ')" = 7f454c46 ]; then
            mv "$tmp/vmlinux" "$tmp/kernel"
        else
            rm -f "$tmp/vmlinux"
        fi
    fi
    "$DEPMOD" -b "$U" "$KVER" || die "depmod on the unpacked kernel failed"
    local sel=$tmp/modules.sel m
    : >"$sel"
    for m in "${MODULES[@]}" $EXTRA_MODULES; do
        if [ -e "$KD/kernel/$m" ]; then
            (cd "$KD" && find "kernel/$m" -name '*.ko*' -type f) >>"$sel"
        else # a module name
            awk -F: -v n="$m" '{ b = $1; sub(".*/", "", b); sub("\\.ko.*", "", b); gsub("-", "_", b); x = n; gsub("-", "_", x);
                                 if (b == x) print $1 }' "$KD/modules.dep" | grep . >>"$sel" ||
                die "module $m not found in $KVER"
        fi
    done
    for m in "${MODULES_EXCLUDE[@]}"; do sed -i "\\#^kernel/$m\$#d" "$sel"; done
    local deps=$tmp/modules.all
    awk -F': *' 'NR == FNR { want[$1] = 1; next }
                 ($1 in want) { print $1; n = split($2, d, " "); for (i = 1; i <= n; i++) print d[i] }' \
        "$sel" "$KD/modules.dep" | sort -u >"$deps"
    local MD=$R/usr/lib/modules/$KVER
    mkdir -p "$MD"
    while read -r m; do
        mkdir -p "$MD/$(dirname "$m")"
        cp "$KD/$m" "$MD/$m"
    done <"$deps"
    cp "$KD"/modules.order "$KD"/modules.builtin "$KD"/modules.builtin.modinfo "$MD/"
    "$DEPMOD" -b "$R" "$KVER" || die "depmod on the initramfs failed"

    write_init "$R/init"
    (cd "$R" && find . -mindepth 1 | LC_ALL=C sort | cpio -o -H newc -R 0:0 --quiet) >"$tmp/base.cpio"
    (cd "$R" && find . -mindepth 1 ! -type d | LC_ALL=C sort) >"$tmp/files.txt"
    {
        echo "kernel $KVER"
        echo "packages:"
        for f in "${DEBS[@]}"; do echo "  $(basename "$f")"; done
        echo "modules ($(wc -l <"$deps")):"
        sed 's/^/  /' "$deps"
    } >"$tmp/manifest.txt"
    echo "$STAMP" >"$tmp/stamp"
    local x
    for x in kernel bzimage base.cpio files.txt manifest.txt stamp; do mv -f "$tmp/$x" "$CACHE/vm/$x"; done
    say "initramfs built in $(elapsed)s ($(du -h "$CACHE/vm/base.cpio" | cut -f1), $(wc -l <"$deps") modules)"
    rm -rf "$tmp"
    trap - EXIT
    unset U
}

if [ "$(cat "$CACHE/vm/stamp" 2>/dev/null)" != "$STAMP" ] || [ ! -f "$CACHE/vm/base.cpio" ] || [ ! -f "$CACHE/vm/bzimage" ]; then
    build
fi

# fio is not in the base initramfs (Debian's binary needs ~84 MB of libraries): a static build
# goes into the per-run overlay of the runs that ask for it, so other boots do not change.
FIO_BIN=
if [ "$FIO" = 1 ]; then
    rc=0
    FIO_BIN=$("$HERE/fio-build.sh") || rc=$?
    [ "$rc" = 0 ] || { [ "$rc" = 77 ] && exit 77; die "fio-build.sh failed (exit $rc)"; }
    COPIES+=("$FIO_BIN:/usr/bin/fio")
fi

if [ "$PREPARE" = 1 ]; then
    echo "refvm: ready: kernel $KVER, cache $CACHE/vm"
    exit 0
fi

# --- one run ------------------------------------------------------------------------------------
RUN=$(mktemp -d "${TMPDIR:-/tmp}/refvm-run.XXXXXX")
# shellcheck disable=SC2317 # called by the EXIT trap
cleanup() { if [ "$KEEP" = 1 ]; then say "run directory kept: $RUN"; else rm -rf "$RUN"; fi; }
trap cleanup EXIT
if [ -n "$INITRD" ]; then
    cp "$INITRD" "$RUN/initrd"
else
    O=$RUN/overlay
    mkdir -p "$O/refvm/files"
    cp "$SCRIPT" "$O/refvm/script"
    {
        echo "REFVM_DISKS=${#DISKS[@]}"
        echo "REFVM_SHARE=$([ -n "$SHARE" ] && echo 1 || echo 0)"
        echo "BOOT_MODULES=\"$BOOT_MODULES\""
    } >"$O/refvm/config"
    if [ -n "$LUKSKIT_BIN" ]; then
        # Only the libraries the base does not already have.
        mkdir -p "$RUN/base"
        while read -r p; do
            case "$p" in ./usr/lib*) mkdir -p "$RUN/base/$(dirname "$p")" && : >"$RUN/base/$p" ;; esac
        done < <(grep -E '^\./usr/lib(64)?/[^/]+(/[^/]+)?$' "$CACHE/vm/files.txt")
        install_elf "$LUKSKIT_BIN" "$RUN/base" usr/bin/lukskit
        # Without its debug info (a test build carries about 130 MB of it; the symbols stay for
        # backtraces): every boot packs, loads and unpacks the initramfs, under emulation.
        strip --strip-debug "$RUN/base/usr/bin/lukskit" 2>/dev/null || true
        (cd "$RUN/base" && find . -type f -size +0) | while read -r p; do
            mkdir -p "$O/$(dirname "$p")"
            mv "$RUN/base/$p" "$O/$p"
        done
    fi
    for c in "${COPIES[@]}"; do
        src=${c%%:*}
        dst=/refvm/files/$(basename "$src")
        case "$c" in *:*) dst=${c#*:} ;; esac
        [ -f "$src" ] || die "--copy: no such file: $src"
        mkdir -p "$O/$(dirname "$dst")"
        cp "$src" "$O/$dst"
    done
    (cd "$O" && find . -mindepth 1 | LC_ALL=C sort | cpio -o -H newc -R 0:0 --quiet) >"$RUN/overlay.cpio"
    cat "$CACHE/vm/base.cpio" "$RUN/overlay.cpio" >"$RUN/initrd"
fi
if [ -n "$TPM_STATE" ]; then cp "$CACHE/vm/bzimage" "$RUN/kernel"; else cp "$CACHE/vm/kernel" "$RUN/kernel"; fi
flock -u 9

# shellcheck disable=SC2054 # qemu options are comma-separated
QEMU=(
    qemu-system-x86_64 -accel tcg,thread=multi -cpu max -smp "$CPUS" -m "$MEM" -M pc
    -nodefaults -no-user-config -display none -no-reboot
    -kernel "$RUN/kernel" -initrd "$RUN/initrd"
    -device virtio-rng-pci
)
CONSOLE=ttyS0
APPEND="mitigations=off $APPEND"
snap=
[ "$SNAPSHOT" = 1 ] && snap=,snapshot=on
DISK_ARGS=()
for d in "${DISKS[@]}"; do
    DISK_ARGS+=(-drive "file=${d//,/,,},format=raw,if=virtio,cache=unsafe$snap")
done
if [ -n "$SHARE" ]; then
    DISK_ARGS+=(-virtfs "local,path=${SHARE//,/,,},mount_tag=host,security_model=none,id=host")
fi
# The software TPM: swtpm serves QEMU's TPM emulator backend on a control socket (the command
# channel is passed over it); --terminate ends it when QEMU closes the connection, and the
# EXIT trap in case QEMU never connected.
if [ -n "$TPM_STATE" ]; then
    swtpm socket --tpm2 --tpmstate "dir=${TPM_STATE//,/,,}" --ctrl "type=unixio,path=$RUN/swtpm.sock" \
        --terminate --log "file=$RUN/swtpm.log" </dev/null >/dev/null 2>&1 &
    SWTPM_PID=$!
    # (|| true: swtpm --terminate has usually ended with QEMU, and under set -e a failing command
    # in the trap would make the run's exit status 1.)
    trap 'kill "$SWTPM_PID" 2>/dev/null || true; wait "$SWTPM_PID" 2>/dev/null || true; cleanup' EXIT
    n=0
    while [ ! -S "$RUN/swtpm.sock" ] && [ $n -lt 100 ]; do sleep 0.1; n=$((n + 1)); done
    [ -S "$RUN/swtpm.sock" ] || die "swtpm did not start (log: $(cat "$RUN/swtpm.log" 2>/dev/null))"
    # shellcheck disable=SC2054 # qemu options are comma-separated
    DISK_ARGS+=(-chardev "socket,id=chrtpm,path=$RUN/swtpm.sock" -tpmdev emulator,id=tpm0,chardev=chrtpm
        -device tpm-tis,tpmdev=tpm0)
fi
# no_timer_check: under TCG on a loaded host the kernel's check that the IO-APIC timer ticks
# can time out and panic at boot ("IO-APIC + timer doesn't work!"; seen 2026-11-27 in
# refvm_upstream at a load of 8-18). The check only guards real hardware quirks.
APPEND="no_timer_check${APPEND:+ $APPEND}"
refvm_boot "quiet rdinit=/init"
