#!/usr/bin/env bash
# tests/refvm/run-arm64.sh — run a shell script inside an arm64 VM: Debian's arm64 kernel
# (linux-image-6.1.0-*-arm64, real dm-crypt) under qemu-system-aarch64 (TCG, `-M virt -cpu max`)
# with a busybox initramfs and, optionally, a static aarch64 lukskit.
#
#   run-arm64.sh [OPTIONS] SCRIPT [DISK ...]
#   run-arm64.sh --prepare          download and build everything, boot nothing
#   run-arm64.sh --initrd CPIO [--append ARGS] [DISK ...]
#                                   boot the cached kernel with an initramfs of your own
#   run-arm64.sh --download DIR PKG...
#                                   only download arm64 .debs of PKGs into DIR (used by
#                                   scripts/test-aarch64-crypto.sh for its OpenSSL)
#
# Same conventions as run.sh (see README.md): each DISK is attached as /dev/vda, /dev/vdb, ...;
# SCRIPT runs under busybox sh as root, its stdout/stderr come back on ours (virtio-serial ports,
# no kernel messages mixed in) and its exit status is ours. Exit statuses of the harness: 77 the
# VM cannot be provided here, 124 timeout, 125 no status reported (boot failure, panic, ...).
#
# With --initrd, the initramfs is the whole guest userland (e.g. a board's ramdisk made by
# scripts/initramfs-add-lukskit.sh): nothing of the harness is added, the kernel console (serial,
# ttyAMA0) is our stdout, and the exit status is 0 once the VM has powered off (124 on timeout).
# The kernel's modules are in $CACHE/vm/modules (a /lib/modules tree) to build such a ramdisk.
#
# Only Debian's arm64 kernel and busybox-static:arm64 are downloaded (with apt-get, through a
# private apt state in $CACHE/apt, so the host's dpkg/apt configuration is not changed); the
# host needs qemu-system-arm (installed with apt-get when missing and root), cpio, kmod
# (depmod) and dpkg-deb.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SELF="$HERE/$(basename "${BASH_SOURCE[0]}")"
REFVM_TAG=refvm-arm64
# shellcheck source=tests/refvm/lib.sh
. "$HERE/lib.sh"

CACHE=${LUKSKIT_REFVM_ARM64_CACHE:-${XDG_CACHE_HOME:-${HOME:-/tmp}/.cache}/lukskit-refvm-arm64}
TIMEOUT=${LUKSKIT_REFVM_TIMEOUT:-1200}
MEM=${LUKSKIT_REFVM_MEM:-1024}
CPUS=${LUKSKIT_REFVM_CPUS:-2}
VERBOSE=${LUKSKIT_REFVM_VERBOSE:-0}
KEEP=${LUKSKIT_REFVM_KEEP:-0}
KERNEL_PIN=${LUKSKIT_REFVM_ARM64_KERNEL:-}
APPEND=${LUKSKIT_REFVM_APPEND:-}
LUKSKIT_BIN=${LUKSKIT_BIN:-}

PACKAGES=(busybox-static)
# Kernel modules (paths under /lib/modules/KVER/kernel, with their dependencies).
MODULES=(
    crypto arch/arm64/crypto lib/crypto
    drivers/md/dm-mod.ko drivers/md/dm-crypt.ko
    drivers/virtio drivers/block/virtio_blk.ko drivers/char/virtio_console.ko
    drivers/char/hw_random/virtio-rng.ko
    drivers/block/loop.ko fs/fuse fs/ext4
    # The vTPM proxy (a TPM served by a process in the guest: the board ramdisk's TPM boot in
    # static_binaries.rs); the kernel has no driver for QEMU's tpm-tis-device, see --tpm.
    drivers/char/tpm/tpm_vtpm_proxy.ko
)
MODULES_EXCLUDE=(crypto/tcrypt.ko)
# Loaded at boot (busybox modprobe does not serve the kernel's requests for crypto algorithms,
# so the ciphers lukskit's tests map are loaded here too).
BOOT_MODULES="virtio_pci virtio_blk virtio_console virtio_rng dm_mod dm_crypt loop fuse xts aes_ce_blk aes_neon_bs sha256_arm64 sha2_ce ext4"

usage() {
    cat <<'EOF'
usage: run-arm64.sh [OPTIONS] SCRIPT [DISK ...]
       run-arm64.sh --prepare
       run-arm64.sh --initrd CPIO [OPTIONS] [DISK ...]
       run-arm64.sh --download DIR PKG...

Boots Debian's arm64 kernel under qemu-system-aarch64 (TCG) and runs SCRIPT (busybox sh) as
root inside it. DISKs are raw image files attached as /dev/vda, /dev/vdb, ... (read-write).

options:
  --copy SRC[:DST] put host file SRC into the guest at DST (default /refvm/files/NAME)
  --initrd CPIO    boot this initramfs instead (no SCRIPT; the serial console is stdout)
  --append ARGS    extra kernel command line (LUKSKIT_REFVM_APPEND)
  --answer PROMPT=FILE  (with --initrd) when the console shows PROMPT, type FILE's bytes and
                   Enter on it (several --answer are answered in order)
  --timeout SEC    kill the VM after SEC seconds (default 1200; LUKSKIT_REFVM_TIMEOUT)
  --mem MIB        guest memory (default 1024; LUKSKIT_REFVM_MEM)
  --prepare        only download and build the kernel and initramfs (exit 0, or 77 = skip)
  --verbose        show the kernel console and timings on stderr (LUKSKIT_REFVM_VERBOSE=1)
  --keep           keep the run directory (console log, initrd) (LUKSKIT_REFVM_KEEP=1)
  --tpm STATEDIR   attach a software TPM 2.0 (swtpm, state kept in STATEDIR) as QEMU's
                   tpm-tis-device (MMIO TIS, device tree "tcg,tpm-tis-mmio"). Debian's arm64
                   6.1 kernel has no driver for it (CONFIG_TCG_TIS is not set): the guest sees
                   the device tree node but gets no /dev/tpm0 (README.md)

environment: LUKSKIT_BIN (a static aarch64 lukskit, installed as /usr/bin/lukskit),
  LUKSKIT_REFVM_ARM64_CACHE (cache dir), LUKSKIT_REFVM_ARM64_KERNEL (e.g. 6.1.0-56-arm64),
  LUKSKIT_REFVM_CPUS.
exit status: SCRIPT's, or 77 (VM not available here), 124 (timeout), 125 (VM failed).
EOF
}

PREPARE=0
INITRD=
DOWNLOAD=
COPIES=()
ANSWERS=()
TPM_STATE=
while [ $# -gt 0 ]; do
    case "$1" in
    --copy) COPIES+=("$2"); shift 2 ;;
    --initrd) INITRD=$2; shift 2 ;;
    --download) DOWNLOAD=$2; shift 2; break ;;
    --append) APPEND="$APPEND $2"; shift 2 ;;
    --answer) ANSWERS+=("$2"); shift 2 ;;
    --timeout) TIMEOUT=$2; shift 2 ;;
    --mem) MEM=$2; shift 2 ;;
    --prepare) PREPARE=1; shift ;;
    --verbose) VERBOSE=1; shift ;;
    --keep) KEEP=1; shift ;;
    --tpm) TPM_STATE=$2; shift 2 ;;
    -h | --help) usage; exit 0 ;;
    --) shift; break ;;
    -*) usage >&2; exit 2 ;;
    *) break ;;
    esac
done
SCRIPT=
if [ "$PREPARE" = 0 ] && [ -z "$INITRD" ] && [ -z "$DOWNLOAD" ]; then
    [ $# -ge 1 ] || { usage >&2; exit 2; }
    SCRIPT=$1
    shift
    [ -f "$SCRIPT" ] || die "no such script: $SCRIPT"
fi
if [ -n "$INITRD" ]; then [ -f "$INITRD" ] || die "no such initramfs: $INITRD"; fi
DISKS=()
[ -n "$DOWNLOAD" ] || DISKS=("$@")
for d in "${DISKS[@]}"; do
    [ -f "$d" ] || [ -b "$d" ] || die "no such disk image: $d"
done
if [ -n "$LUKSKIT_BIN" ]; then [ -x "$LUKSKIT_BIN" ] || die "LUKSKIT_BIN is not executable: $LUKSKIT_BIN"; fi
if [ -n "$TPM_STATE" ]; then
    command -v swtpm >/dev/null || skip "--tpm needs swtpm (apt-get install swtpm swtpm-tools)"
    mkdir -p "$TPM_STATE" || die "--tpm: cannot create $TPM_STATE"
fi

T0=$(date +%s.%N)

# --- host tools -------------------------------------------------------------------------------
refvm_need_tools qemu-system-aarch64 qemu-system-arm
command -v dpkg-deb >/dev/null || skip "dpkg-deb not found (the VM is built from Debian packages)"
command -v apt-get >/dev/null || skip "apt-get not found (the VM is built from Debian packages)"
DEPMOD=$(command -v depmod || echo /sbin/depmod)

mkdir -p "$CACHE/debs" "$CACHE/vm" "$CACHE/apt/lists/partial" "$CACHE/apt/cache/archives/partial"
exec 9>"$CACHE/lock"
flock 9

# --- a private apt state for arm64 ---------------------------------------------------------------
# The host's sources (Debian's mirror) with arm64 as the only architecture, lists and status of
# their own: `apt-get download` of arm64 packages without `dpkg --add-architecture` on the host.
SRC_LIST=$CACHE/apt/sources.list
write_sources() {
    local suite=bookworm
    if [ -r /etc/os-release ]; then
        suite=$(. /etc/os-release && echo "${VERSION_CODENAME:-bookworm}")
    fi
    local kr=/usr/share/keyrings/debian-archive-keyring.gpg
    [ -f "$kr" ] || skip "$kr not found (package debian-archive-keyring)"
    {
        echo "deb [signed-by=$kr] http://deb.debian.org/debian $suite main"
        echo "deb [signed-by=$kr] http://deb.debian.org/debian $suite-updates main"
        echo "deb [signed-by=$kr] http://deb.debian.org/debian-security $suite-security main"
    } >"$SRC_LIST.tmp"
    mv -f "$SRC_LIST.tmp" "$SRC_LIST"
}
[ -f "$SRC_LIST" ] || write_sources
[ -f "$CACHE/apt/status" ] || : >"$CACHE/apt/status"
APT_OPTS=(
    -o APT::Architecture=arm64 -o APT::Architectures::=arm64
    -o Dir::Etc::SourceList="$SRC_LIST" -o Dir::Etc::SourceParts=/dev/null
    -o Dir::State::Lists="$CACHE/apt/lists" -o Dir::State::status="$CACHE/apt/status"
    -o Dir::Cache="$CACHE/apt/cache" -o APT::Sandbox::User=root
    -o Debug::NoLocking=1
)
apt_update() {
    say "apt-get update (arm64 lists, private state in $CACHE/apt)"
    apt-get "${APT_OPTS[@]}" update -qq >"$CACHE/update.log" 2>&1
}

deb_for() { # pkg -> the cached .deb (any version)
    local f
    for f in "$CACHE/debs/${1}_"*.deb; do [ -f "$f" ] && { echo "$f"; return 0; }; done
    return 0
}
newest_kernel() {
    apt-cache "${APT_OPTS[@]}" pkgnames linux-image-6.1.0- 2>/dev/null |
        grep -E '^linux-image-6\.1\.0-[0-9]+-arm64$' | sort -V | tail -n 1
}
# Packages are resolved once a day at most (the lists are refreshed then); offline, whatever is
# cached is used.
resolve() {
    local fresh=0
    if [ -f "$CACHE/resolved" ] && [ -z "$(find "$CACHE/resolved" -mmin +1440 2>/dev/null)" ]; then
        fresh=1
        while read -r pkg f; do
            [ "$pkg" = kernel-pin ] || [ -f "$CACHE/debs/$f" ] || fresh=0
        done <"$CACHE/resolved"
        [ "$(head -n 1 "$CACHE/resolved")" = "kernel-pin ${KERNEL_PIN:-none}" ] || fresh=0
    fi
    [ "$fresh" = 1 ] && return 0
    local kpkg=
    if apt_update; then
        if [ -n "$KERNEL_PIN" ]; then kpkg=linux-image-${KERNEL_PIN#linux-image-}; else kpkg=$(newest_kernel); fi
    fi
    local all=("${PACKAGES[@]}") pkg f have=()
    if [ -n "$kpkg" ]; then
        all=("$kpkg" "${PACKAGES[@]}")
        rm -rf "$CACHE/debs.tmp" && mkdir -p "$CACHE/debs.tmp"
        local missing=() want ver
        for pkg in "${all[@]}"; do
            want=$(apt-cache "${APT_OPTS[@]}" policy "$pkg" 2>/dev/null | awk '/Candidate:/ { print $2 }')
            f=$(deb_for "$pkg")
            ver=
            [ -n "$f" ] && ver=$(dpkg-deb -f "$f" Version)
            if [ -z "$f" ] || { [ -n "$want" ] && [ "$want" != "(none)" ] && [ "$ver" != "$want" ]; }; then missing+=("$pkg"); fi
        done
        if [ ${#missing[@]} -gt 0 ]; then
            say "downloading ${missing[*]} (arm64)"
            if (cd "$CACHE/debs.tmp" && apt-get "${APT_OPTS[@]}" download "${missing[@]}") >"$CACHE/download.log" 2>&1; then
                for f in "$CACHE/debs.tmp"/*.deb; do
                    pkg=$(dpkg-deb -f "$f" Package)
                    rm -f "$CACHE/debs/${pkg}_"*.deb
                    mv "$f" "$CACHE/debs/"
                done
            else
                grep -E '^E:' "$CACHE/download.log" | head -n 5 | sed 's/^/  /' >&2
                say "download failed: using cached packages where there are any"
            fi
        fi
        rm -rf "$CACHE/debs.tmp"
        # Old kernels are large: keep only the one in use.
        for f in "$CACHE"/debs/linux-image-*.deb; do
            [ -f "$f" ] || continue
            case "$(basename "$f")" in "${kpkg}_"*) ;; *) rm -f "$f" ;; esac
        done
    else
        say "the Debian mirror is not reachable: using cached packages"
        kpkg=$(for f in "$CACHE"/debs/linux-image-6.1.0-*-arm64_*.deb; do [ -f "$f" ] && basename "$f" | sed 's/_.*//'; done | sort -V | tail -n 1)
        [ -n "$kpkg" ] || skip "no arm64 kernel cached in $CACHE and the Debian mirror is not reachable"
        all=("$kpkg" "${PACKAGES[@]}")
    fi
    for pkg in "${all[@]}"; do
        f=$(deb_for "$pkg")
        [ -n "$f" ] || skip "could not download $pkg (arm64) from the Debian mirror"
        have+=("$pkg $(basename "$f")")
    done
    { echo "kernel-pin ${KERNEL_PIN:-none}"; printf '%s\n' "${have[@]}"; } >"$CACHE/resolved.tmp"
    mv -f "$CACHE/resolved.tmp" "$CACHE/resolved"
}
if [ -n "$DOWNLOAD" ]; then
    [ $# -ge 1 ] || { usage >&2; exit 2; }
    mkdir -p "$DOWNLOAD"
    if [ -z "$(find "$CACHE/apt/lists" -maxdepth 1 -name '*Packages*' -print -quit)" ]; then
        apt_update || skip "apt-get update of the arm64 lists failed (Debian mirror unreachable?)"
    fi
    (cd "$DOWNLOAD" && apt-get "${APT_OPTS[@]}" download "$@") >"$CACHE/download.log" 2>&1 || {
        apt_update || true
        (cd "$DOWNLOAD" && apt-get "${APT_OPTS[@]}" download "$@") >"$CACHE/download.log" 2>&1 || {
            grep -E '^E:' "$CACHE/download.log" | head -n 5 | sed 's/^/  /' >&2
            skip "could not download $* (arm64)"
        }
    }
    exit 0
fi
resolve
DEBS=()
KPKG=
while read -r pkg f; do
    [ "$pkg" = kernel-pin ] && continue
    DEBS+=("$CACHE/debs/$f")
    case "$pkg" in linux-image-*) KPKG=$pkg ;; esac
done <"$CACHE/resolved"
KVER=${KPKG#linux-image-}

# --- the initramfs ------------------------------------------------------------------------------
STAMP=$({
    cat "$SELF" "$HERE/lib.sh"
    echo "$KVER"
    for f in "${DEBS[@]}"; do basename "$f"; done | sort
} | sha256sum | cut -c1-16)

write_init() {
    cat >"$1" <<'INIT'
#!/bin/sh
export PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root TERM=dumb
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
mkdir -p /run/cryptsetup /run/lock /root
echo /usr/bin/modprobe >/proc/sys/kernel/modprobe
echo "refvm: init $(cut -d' ' -f1 /proc/uptime)s"
. /refvm/config
for m in $BOOT_MODULES; do modprobe "$m" || echo "refvm: modprobe $m failed"; done
INIT
    refvm_init_tail >>"$1"
    chmod 755 "$1"
}

build() {
    say "building the arm64 initramfs for $KVER (once; cached in $CACHE)"
    local tmp
    tmp=$(mktemp -d "$CACHE/build.XXXXXX")
    trap 'rm -rf "$tmp"' EXIT
    local U=$tmp/unpack R=$tmp/root f
    mkdir -p "$U"
    for f in "${DEBS[@]}"; do dpkg-deb -x "$f" "$U"; done
    mkdir -p "$R"/usr/bin "$R"/usr/sbin "$R"/usr/lib "$R"/proc "$R"/sys "$R"/dev "$R"/run "$R"/tmp \
        "$R"/mnt "$R"/root "$R"/etc "$R"/var "$R"/refvm
    ln -s usr/bin "$R/bin"
    ln -s usr/sbin "$R/sbin"
    ln -s usr/lib "$R/lib"
    ln -s /proc/mounts "$R/etc/mtab"
    printf 'root:x:0:0:root:/root:/bin/sh\n' >"$R/etc/passwd"
    printf 'root:x:0:\ndisk:x:6:\n' >"$R/etc/group"
    local bb=$U/bin/busybox applet
    [ -f "$bb" ] || bb=$U/usr/bin/busybox
    [ -f "$bb" ] || die "busybox not found in busybox-static"
    cp "$bb" "$R/usr/bin/busybox"
    # The applet list, from busybox's own binary (it cannot run on an x86_64 host): every name
    # busybox --list would print is in its NUL-separated applet name table; the ones we use are
    # listed explicitly so a missing one fails here rather than in the guest.
    for applet in sh ash mount umount mkdir ln cat cut echo ls wc sleep poweroff modprobe insmod \
        lsmod sync dd cmp sha256sum head tail grep sed awk xxd od losetup blockdev switch_root \
        chroot mknod rm cp mv tr printf test [ stat readlink sort uname dmesg kill ps setsid \
        mkfifo touch truncate true false env find mke2fs hexdump seq expr basename \
        dirname timeout tee chmod; do
        ln -sf busybox "$R/usr/bin/$applet"
    done
    local KD=$U/lib/modules/$KVER
    [ -d "$KD" ] || KD=$U/usr/lib/modules/$KVER
    [ -d "$KD" ] || die "no modules for $KVER in the kernel package"
    cp "$U/boot/vmlinuz-$KVER" "$tmp/kernel"
    "$DEPMOD" -b "$U" "$KVER" || die "depmod on the unpacked kernel failed"
    local sel=$tmp/modules.sel m
    : >"$sel"
    for m in "${MODULES[@]}"; do
        [ -e "$KD/kernel/$m" ] || die "module path $m not in $KVER"
        (cd "$KD" && find "kernel/$m" -name '*.ko*' -type f) >>"$sel"
    done
    for m in "${MODULES_EXCLUDE[@]}"; do sed -i "\\#^kernel/$m\$#d" "$sel"; done
    local deps=$tmp/modules.all
    awk -F': *' 'NR == FNR { want[$1] = 1; next }
                 ($1 in want) { print $1; n = split($2, d, " "); for (i = 1; i <= n; i++) print d[i] }' \
        "$sel" "$KD/modules.dep" | sort -u >"$deps"
    local MT=$tmp/modules/lib/modules/$KVER
    mkdir -p "$MT"
    while read -r m; do
        mkdir -p "$MT/$(dirname "$m")"
        cp "$KD/$m" "$MT/$m"
    done <"$deps"
    cp "$KD"/modules.order "$KD"/modules.builtin "$KD"/modules.builtin.modinfo "$MT/"
    "$DEPMOD" -b "$tmp/modules" "$KVER" || die "depmod on the module tree failed"
    mkdir -p "$R/usr/lib/modules"
    cp -a "$MT" "$R/usr/lib/modules/"
    write_init "$R/init"
    (cd "$R" && find . -mindepth 1 | LC_ALL=C sort | cpio -o -H newc -R 0:0 --quiet) >"$tmp/base.cpio"
    {
        echo "kernel $KVER"
        echo "packages:"
        for f in "${DEBS[@]}"; do echo "  $(basename "$f")"; done
        echo "modules ($(wc -l <"$deps")):"
        sed 's/^/  /' "$deps"
    } >"$tmp/manifest.txt"
    echo "$STAMP" >"$tmp/stamp"
    rm -rf "$CACHE/vm/modules" "$CACHE/vm/busybox"
    mv "$tmp/modules" "$CACHE/vm/modules"
    cp "$R/usr/bin/busybox" "$CACHE/vm/busybox"
    local x
    for x in kernel base.cpio manifest.txt stamp; do mv -f "$tmp/$x" "$CACHE/vm/$x"; done
    echo "$KVER" >"$CACHE/vm/kver"
    say "initramfs built in $(elapsed)s ($(du -h "$CACHE/vm/base.cpio" | cut -f1), $(wc -l <"$deps") modules)"
    rm -rf "$tmp"
    trap - EXIT
}

if [ "$(cat "$CACHE/vm/stamp" 2>/dev/null)" != "$STAMP" ] || [ ! -f "$CACHE/vm/base.cpio" ]; then
    build
fi

if [ "$PREPARE" = 1 ]; then
    echo "refvm-arm64: ready: kernel $KVER, cache $CACHE/vm"
    exit 0
fi

# --- one run ------------------------------------------------------------------------------------
RUN=$(mktemp -d "${TMPDIR:-/tmp}/refvm-arm64-run.XXXXXX")
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
        echo "BOOT_MODULES=\"$BOOT_MODULES\""
    } >"$O/refvm/config"
    if [ -n "$LUKSKIT_BIN" ]; then
        mkdir -p "$O/usr/bin"
        cp "$LUKSKIT_BIN" "$O/usr/bin/lukskit"
        chmod 755 "$O/usr/bin/lukskit"
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
cp "$CACHE/vm/kernel" "$RUN/kernel"
flock -u 9

# shellcheck disable=SC2054 # qemu options are comma-separated
QEMU=(
    qemu-system-aarch64 -accel tcg,thread=multi -M virt -cpu max -smp "$CPUS" -m "$MEM"
    -nodefaults -no-user-config -display none -no-reboot
    -kernel "$RUN/kernel" -initrd "$RUN/initrd"
    -device virtio-rng-pci
)
CONSOLE=ttyAMA0
DISK_ARGS=()
for d in "${DISKS[@]}"; do
    DISK_ARGS+=(-drive "file=${d//,/,,},format=raw,if=none,id=d${#DISK_ARGS[@]},cache=unsafe" -device "virtio-blk-pci,drive=d${#DISK_ARGS[@]}")
done
# The software TPM as in run.sh, on the virt machine's platform bus (tpm-tis-device).
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
        -device tpm-tis-device,tpmdev=tpm0)
fi
refvm_boot "quiet rdinit=/init"
