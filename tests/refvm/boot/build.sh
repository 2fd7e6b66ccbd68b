#!/usr/bin/env bash
# tests/refvm/boot/build.sh — the disks and initramfs images of the boot tests (refvm_boot.rs):
#
#   build.sh LUKSKIT_STATIC_BIN        prints the directory holding everything (below)
#   build.sh --chroots                 only the three Debian systems (chroot, systemd chroot,
#                                      dracut chroot: downloads and dpkg, no VM, no lukskit),
#                                      as scripts/test-prefetch.sh makes them ahead of the tests
#
# Everything is cached in $LUKSKIT_REFVM_CACHE/boot (default ~/.cache/lukskit-refvm/boot), each
# part under a key made of the hash of its inputs, so a rerun with the same inputs costs nothing:
#
#  - chroot-KEY/: a Debian system (mmdebstrap of the host's release: initramfs-tools, busybox,
#    udev, mdadm, lvm2, cryptsetup-initramfs) with run.sh's kernel unpacked into it. This is the
#    machine whose initramfs is built, with Debian's own mkinitramfs (as update-initramfs does).
#    KEY: the package list, this script, the kernel package.
#  - disks-KEY/: made in the reference VM (run.sh) by Debian's cryptsetup, mdadm and lvm:
#      a1.img a2.img  md RAID-1 (metadata 1.2) -> LUKS2 (key file slot pbkdf2, passphrase slot
#                     argon2id) -> ext4 with the real root
#      b1.img b2.img  md RAID-1 -> LUKS2 -> LVM (vg0/root) -> ext4 with the real root
#      c.img          LUKS2 on the whole disk (no RAID) -> ext4 with the real root
#    plus mdadm.conf (mdadm --detail --scan), params (UUIDs LUKS_A, LUKS_B, LUKS_C), marker (the
#    random line the real root's init prints), root.key, passphrase. KEY: this script,
#    busybox-static's version.
#  - tpm-KEY/: copies of the disks with systemd-tpm2 tokens and the software TPM's state (see
#    "the TPM disks" below).
#  - initrd-KEY/: initramfs images made by mkinitramfs in the chroot, where lukskit is installed
#    from its Debian packages (scripts/build-deb.sh --binary LUKSKIT_STATIC_BIN) with apt, and
#    its hook activated with the packaged /usr/share/lukskit/initramfs-tools/install.sh:
#      key.img     lukskit's hook, crypttab `cryptroot UUID=<a> /etc/keys/root.key luks`
#      tpm.img     lukskit's hook, crypttab `cryptplain UUID=<c> none luks,initramfs,tpm2-device=auto`
#                  and `cryptroot UUID=<a> none luks,discard,tpm2-device=auto`, lukskit --verbose:
#                  booted with the TPM disks below, the TPM unlocks the root and cryptplain's
#                  passphrase is asked after its token failed
#      fuse.img    lukskit's hook with LUKSKIT_OPEN_OPTIONS="--backend userspace": the root is
#                  served by lukskit's own process (FUSE + loop device) across switch_root
#      lvm.img     lukskit's hook, crypttab `cryptlvm UUID=<b> /etc/keys/root.key luks`, root on
#                  /dev/mapper/vg0-root (LUKSKIT_NAMES=cryptlvm)
#      debian.img  Debian's cryptsetup-initramfs hook (cryptroot) with lukskit installed as
#                  /sbin/cryptsetup (the lukskit-cryptsetup-compat package's dpkg-divert),
#                  crypttab with `initramfs`
#    and for each a listing (NAME.list, lsinitramfs). KEY: the lukskit binary, the hook and boot
#    scripts, build-deb.sh, the chroot, disks and TPM disks keys.
#  - dracut-chroot-KEY/: a Debian system with dracut and systemd (dracut conflicts with
#    initramfs-tools), run.sh's kernel unpacked into it.
#  - dracut-initrd-KEY/: dracut.img, made by Debian's dracut in that chroot with lukskit's
#    module from the Debian package (activated by the packaged dracut/install.sh): crypttab
#    `cryptroot UUID=<a> /etc/keys/root.key luks`, a generic image (--no-hostonly) with the VM's
#    drivers and rd.md.uuid of the array; its listing dracut.list (lsinitrd). KEY: the lukskit
#    binary, the dracut module and install.sh, build-deb.sh, the chroot and disks keys.
#
# The real root (on every disk set) is a static busybox with /sbin/init printing
#   LUKSKIT-BOOT-MARKER <marker>
# (read from /etc/lukskit-boot-marker on the root file system), the root mount, /proc/mdstat and
# the device-mapper names/UUIDs (and whether each is read-only), then powering off; it has an
# /etc/os-release, without which systemd (dracut's initramfs) does not switch into it.
#
# Needs root (chroot, mount namespace), mmdebstrap (installed with apt-get when missing) and the
# Debian mirror for the first build. Exit 77 when that cannot be had.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/../../.." && pwd)
SELF="$HERE/$(basename "${BASH_SOURCE[0]}")"
RUNSH=$HERE/../run.sh
CACHE=${LUKSKIT_REFVM_CACHE:-${XDG_CACHE_HOME:-${HOME:-/tmp}/.cache}/lukskit-refvm}
BC=$CACHE/boot
CHROOTS_ONLY=0
if [ "${1:-}" = --chroots ]; then
    CHROOTS_ONLY=1
else
    LUKSKIT=${1:?usage: build.sh LUKSKIT_STATIC_BIN | --chroots}
    [ -x "$LUKSKIT" ] || { echo "build.sh: not executable: $LUKSKIT" >&2; exit 2; }
fi

say() { echo "refvm-boot: $*" >&2; }
skip() { say "SKIP: $*"; exit 77; }
die() { say "error: $*"; exit 1; }
[ "$(id -u)" = 0 ] || skip "building a Debian chroot and its initramfs needs root"
hash_of() { sha256sum | cut -c1-16; }

mkdir -p "$BC"
exec 8>"$BC/lock"
flock 8

# --- the kernel of run.sh ---------------------------------------------------------------------
"$RUNSH" --prepare >&2 || exit $?
KDEB=$(awk '$1 ~ /^linux-image-/ { print $2 }' "$CACHE/resolved")
{ [ -n "$KDEB" ] && [ -f "$CACHE/debs/$KDEB" ]; } || die "run.sh's kernel package not found in $CACHE/resolved"
KVER=$(dpkg-deb -f "$CACHE/debs/$KDEB" Package)
KVER=${KVER#linux-image-}
BBDEB=$(awk '$1 == "busybox-static" { print $2 }' "$CACHE/resolved")

# --chroots: the three sections below that make a Debian system, run as they are (their keys
# hash their own text, so the full build finds them made).
if [ "$CHROOTS_ONLY" = 1 ]; then
    for part in "chroot" "systemd chroot" "dracut chroot"; do
        code=$(sed -n "/^# --- the $part -/,/^# --- end $part\$/p" "$SELF")
        [ -n "$code" ] || die "no section '$part' in $SELF"
        eval "$code"
    done
    say "the Debian systems are ready"
    exit 0
fi

# --- the chroot -----------------------------------------------------------------------------------
PKGS=initramfs-tools,busybox,udev,mdadm,lvm2,cryptsetup-initramfs,kmod,cpio,zstd
SUITE=$(. /etc/os-release && echo "${VERSION_CODENAME:-bookworm}")
CKEY=$({ echo "$PKGS $SUITE $KDEB"; sed -n '/^# --- the chroot/,/^# --- end chroot/p' "$SELF"; } | hash_of)
CH=$BC/chroot-$CKEY
if [ ! -e "$CH/.done" ]; then
    command -v mmdebstrap >/dev/null || {
        say "installing mmdebstrap"
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends mmdebstrap >/dev/null 2>&1 ||
            skip "mmdebstrap is not installed and apt-get could not install it"
    }
    rm -rf "$BC"/chroot-*
    say "building a Debian $SUITE system for mkinitramfs (once; $CH)"
    mmdebstrap --variant=apt --mode=root --include="$PKGS" \
        --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-exclude=/usr/share/man/*' \
        --dpkgopt='path-exclude=/usr/share/locale/*' \
        "$SUITE" "$CH.tmp" >"$BC/mmdebstrap.log" 2>&1 || {
        tail -n 20 "$BC/mmdebstrap.log" >&2
        rm -rf "$CH.tmp"
        skip "mmdebstrap failed (Debian mirror unreachable?)"
    }
    # The kernel the tests boot, unpacked as its package would install it.
    # (--keep-directory-symlink: /lib is a symlink to usr/lib on a merged-/usr system)
    dpkg-deb --fsys-tarfile "$CACHE/debs/$KDEB" | tar -x -C "$CH.tmp" --keep-directory-symlink
    chroot "$CH.tmp" /usr/bin/env PATH=/usr/sbin:/usr/bin depmod "$KVER"
    mv "$CH.tmp" "$CH"
    : >"$CH/.done"
fi
# --- end chroot

# --- the disks ------------------------------------------------------------------------------------
DKEY=$({ echo "$BBDEB"; sed -n '/^# --- the disks/,/^# --- end disks/p' "$SELF"; } | hash_of)
DK=$BC/disks-$DKEY
if [ ! -e "$DK/.done" ]; then
    rm -rf "$BC"/disks-* "$DK.tmp"
    mkdir -p "$DK.tmp/root" "$DK.tmp/share"
    say "making the RAID-1 / LUKS2 / (LVM) / ext4 disks in the reference VM (once; $DK)"
    T=$DK.tmp
    # The real root: a static busybox and an init that proves which file system it runs from.
    dpkg-deb -x "$CACHE/debs/$BBDEB" "$T/bb"
    R=$T/root
    mkdir -p "$R/bin" "$R/sbin" "$R/etc" "$R/proc" "$R/sys" "$R/dev" "$R/run" "$R/tmp" "$R/root" "$R/mnt"
    cp "$T/bb/bin/busybox" "$R/bin/busybox"
    od -An -N16 -tx1 /dev/urandom | tr -d ' \n' >"$T/marker"
    cp "$T/marker" "$R/etc/lukskit-boot-marker"
    # systemd in an initramfs (dracut's) switches only into an OS tree: one with os-release.
    printf 'ID=lukskit-boot-test\nNAME="lukskit boot test root"\n' >"$R/etc/os-release"
    cat >"$R/sbin/init" <<'INIT'
#!/bin/busybox sh
# The real root's init (lukskit's boot tests): say what it runs from, then power off.
/bin/busybox mount -t proc proc /proc 2>/dev/null
/bin/busybox mount -t sysfs sysfs /sys 2>/dev/null
echo "LUKSKIT-BOOT-MARKER $(/bin/busybox cat /etc/lukskit-boot-marker)"
echo "LUKSKIT-BOOT-ROOT $(/bin/busybox awk '$2 == "/" { print $1, $3 }' /proc/mounts)"
for d in /sys/block/dm-*; do
    [ -e "$d/dm/name" ] && echo "LUKSKIT-BOOT-DM $(/bin/busybox cat "$d/dm/name") $(/bin/busybox cat "$d/dm/uuid") ro=$(/bin/busybox cat "$d/ro")"
done
/bin/busybox sed 's/^/LUKSKIT-BOOT-MDSTAT /' /proc/mdstat
# More checks in the same boot (refvm_boot's TPM boot: systemd's tools on lukskit's
# enrolments): lukskit.check=DEVICE on the kernel command line names an ext4 file system whose
# /check/run is run chrooted into it (the check disk of build.sh, tests/refvm/boot/systemd-check.sh).
chk=$(/bin/busybox sed -n 's/.*lukskit\.check=\([^ ]*\).*/\1/p' /proc/cmdline)
if [ -n "$chk" ]; then
    if /bin/busybox mount -t ext4 "$chk" /mnt; then
        /bin/busybox chroot /mnt /check/run
        echo "LUKSKIT-BOOT-CHECK-EXIT $?"
        /bin/busybox sync
        /bin/busybox umount -l /mnt
    else
        echo "LUKSKIT-BOOT-CHECK-EXIT cannot mount $chk"
    fi
fi
# Processes that survived switch_root as root-storage daemons (argv[0] starting with '@').
for p in /proc/[0-9]*; do
    a=$(/bin/busybox tr '\0' '\n' <"$p/cmdline" 2>/dev/null | /bin/busybox head -n 1)
    case "$a" in @*) echo "LUKSKIT-BOOT-PROC ${p#/proc/} $a" ;; esac
done
echo "LUKSKIT-BOOT-END"
/bin/busybox sync
/bin/busybox poweroff -f
INIT
    chmod 755 "$R/sbin/init"
    (cd "$R" && tar -cf "$T/root.tar" .)
    head -c 4096 /dev/urandom >"$T/root.key"
    printf 'correct horse battery staple' >"$T/passphrase"
    uuid() { cat /proc/sys/kernel/random/uuid; }
    {
        echo "LUKS_A=$(uuid)"
        echo "LUKS_B=$(uuid)"
        echo "LUKS_C=$(uuid)"
    } >"$T/params"
    # shellcheck disable=SC1091
    . "$T/params"
    cat >"$T/make.sh" <<EOF
set -e
export DM_DISABLE_UDEV=1
F=/refvm/files
modprobe raid1
LVM="lvm"
LVMCONF='activation { udev_sync = 0 udev_rules = 0 } devices { obtain_device_list_from_udev = 0 }'
mkroot() { # device
    mkfs.ext4 -q -L realroot "\$1"
    mkdir -p /mnt/r
    mount "\$1" /mnt/r
    tar -xf \$F/root.tar -C /mnt/r
    umount /mnt/r
}
luks() { # device uuid
    cryptsetup luksFormat -q --type luks2 --uuid "\$2" --pbkdf pbkdf2 --pbkdf-force-iterations 1000 \\
        --key-file \$F/root.key "\$1"
    cryptsetup luksAddKey -q --key-file \$F/root.key --pbkdf argon2id --pbkdf-memory 32768 \\
        --pbkdf-force-iterations 4 --pbkdf-parallel 1 "\$1" \$F/passphrase
}
# A: md0 on vda+vdb -> LUKS2 -> ext4
mdadm --create /dev/md0 --run --assume-clean --level=1 --raid-devices=2 --metadata=1.2 --name=roota --homehost=lukskit /dev/vda /dev/vdb
luks /dev/md0 $LUKS_A
cryptsetup open --key-file \$F/root.key /dev/md0 a
mkroot /dev/mapper/a
cryptsetup close a
# B: md1 on vdc+vdd -> LUKS2 -> LVM vg0/root -> ext4
mdadm --create /dev/md1 --run --assume-clean --level=1 --raid-devices=2 --metadata=1.2 --name=rootb --homehost=lukskit /dev/vdc /dev/vdd
luks /dev/md1 $LUKS_B
cryptsetup open --key-file \$F/root.key /dev/md1 b
\$LVM pvcreate -q --config "\$LVMCONF" /dev/mapper/b
\$LVM vgcreate -q --config "\$LVMCONF" vg0 /dev/mapper/b
\$LVM lvcreate -q --config "\$LVMCONF" -l 100%FREE -n root vg0
[ -e /dev/mapper/vg0-root ] || dmsetup mknodes
mkroot /dev/mapper/vg0-root
\$LVM vgchange -q --config "\$LVMCONF" -an vg0
cryptsetup close b
# C: vde (no RAID) -> LUKS2 -> ext4
luks /dev/vde $LUKS_C
cryptsetup open --key-file \$F/root.key /dev/vde c
mkroot /dev/mapper/c
cryptsetup close c
mdadm --detail --scan > /host/mdadm.conf
mdadm --stop /dev/md0 /dev/md1
cat /host/mdadm.conf
EOF
    for d in a1 a2 b1 b2 c; do truncate -s 64M "$T/$d.img"; done
    "$RUNSH" --timeout 900 --share "$T/share" --copy "$T/root.tar" --copy "$T/root.key" --copy "$T/passphrase" \
        "$T/make.sh" "$T/a1.img" "$T/a2.img" "$T/b1.img" "$T/b2.img" "$T/c.img" >&2 || die "making the disks in the VM failed"
    grep -q '^ARRAY' "$T/share/mdadm.conf" || die "no ARRAY lines from mdadm --detail --scan"
    mv "$T/share/mdadm.conf" "$T/mdadm.conf"
    rm -rf "$T/bb" "$T/root" "$T/share" "$T/root.tar"
    mv "$T" "$DK"
    : >"$DK/.done"
fi
# --- end disks
# shellcheck disable=SC1091
. "$DK/params"

# --- the TPM disks --------------------------------------------------------------------------------
# tpm-KEY/: copies of the disks with systemd-tpm2 tokens enrolled by Debian's systemd-cryptenroll
# (systemd 252) against a software TPM on the host, whose state (state/) the boot tests hand to
# the VM's TPM (run.sh --tpm, a fresh copy per boot):
#   t1.img t2.img  a1/a2 with a token sealed to PCR 7 as the VM's firmware (SeaBIOS) leaves it:
#                  its separator event (4 bytes 0xff) extended into the zero PCR; the TPM
#                  unlocks the root with no keyboard
#   tc.img         c with a token sealed to PCR 7 at zero (nothing measured), as if PCR 7 had
#                  changed since: at boot the token cannot unlock and the passphrase is asked
# The LUKS2 volume of a1/a2 is inside the md array: its data area (md 1.2's data_offset) is
# enrolled as a file and written back to both mirrors. KEY: the disks' key, this section.
TKEY=$({ echo "$DKEY"; sed -n '/^# --- the TPM disks/,/^# --- end TPM disks/p' "$SELF"; } | hash_of)
TK=$BC/tpm-$TKEY
if [ ! -e "$TK/.done" ]; then
    for t in swtpm swtpm_ioctl systemd-cryptenroll tpm2_pcrextend tpm2_pcrread tpm2_flushcontext; do
        command -v "$t" >/dev/null || skip "$t is not installed (swtpm swtpm-tools tpm2-tools systemd)"
    done
    rm -rf "$BC"/tpm-* "$TK.tmp"
    mkdir -p "$TK.tmp/state"
    say "enrolling systemd-tpm2 tokens on copies of the disks (once; $TK)"
    for d in a1:t1 a2:t2 c:tc; do cp --sparse=always "$DK/${d%%:*}.img" "$TK.tmp/${d#*:}.img"; done
    sock=$TK.tmp/swtpm.sock
    swtpm socket --tpm2 --flags startup-clear --tpmstate "dir=$TK.tmp/state" \
        --server "type=unixio,path=$sock" --ctrl "type=unixio,path=$sock.ctrl" \
        --log "file=$TK.tmp/swtpm.log" </dev/null >/dev/null 2>&1 &
    swpid=$!
    n=0
    while { [ ! -S "$sock" ] || [ ! -S "$sock.ctrl" ]; } && [ $n -lt 100 ]; do sleep 0.1; n=$((n + 1)); done
    [ -S "$sock" ] || { kill "$swpid"; die "swtpm did not start: $(cat "$TK.tmp/swtpm.log")"; }
    export TPM2TOOLS_TCTI=swtpm:path=$sock
    enroll() { # image
        PASSWORD=$(cat "$DK/passphrase") systemd-cryptenroll --tpm2-device="$TPM2TOOLS_TCTI" \
            --tpm2-pcrs=7 "$1" >"$TK.tmp/enroll.log" 2>&1 || {
            cat "$TK.tmp/enroll.log" >&2
            kill "$swpid"
            die "systemd-cryptenroll $1 failed"
        }
        # systemd 252 leaves its sessions loaded on a TPM without a resource manager.
        tpm2_flushcontext -l >/dev/null 2>&1 || true
    }
    enroll "$TK.tmp/tc.img"
    tpm2_pcrextend "7:sha256=$(printf '\377\377\377\377' | sha256sum | cut -c1-64)" ||
        { kill "$swpid"; die "tpm2_pcrextend failed"; }
    tpm2_pcrread sha256:7 >"$TK.tmp/pcr7" 2>&1
    # The data area of the md member: data_offset (sectors) at byte 128 of the superblock at 4 KiB.
    off=$(od -An -tu8 -j $((4096 + 128)) -N 8 "$TK.tmp/t1.img" | tr -d ' ')
    [ "$(od -An -tx4 -j 4096 -N 4 "$TK.tmp/t1.img" | tr -d ' ')" = a92b4efc ] && [ "$off" -gt 0 ] ||
        { kill "$swpid"; die "t1.img: no md 1.2 superblock with a data offset"; }
    dd if="$TK.tmp/t1.img" of="$TK.tmp/root.luks" bs=512 skip="$off" status=none
    enroll "$TK.tmp/root.luks"
    for t in t1 t2; do
        dd if="$TK.tmp/root.luks" of="$TK.tmp/$t.img" bs=512 seek="$off" conv=notrunc status=none
    done
    swtpm_ioctl --unix "$sock.ctrl" -s >/dev/null 2>&1 || kill "$swpid"
    wait "$swpid" 2>/dev/null || true
    unset TPM2TOOLS_TCTI
    rm -f "$TK.tmp/root.luks" "$sock" "$sock.ctrl"
    mv "$TK.tmp" "$TK"
    : >"$TK/.done"
fi
# --- end TPM disks

# --- the systemd chroot ---------------------------------------------------------------------------
# A Debian system with systemd 252's cryptsetup tools (systemd-cryptsetup, systemd-cryptenroll,
# the token plugins of libcryptsetup under /usr/lib/x86_64-linux-gnu/cryptsetup), Debian's
# cryptsetup and the tpm2-tss libraries systemd loads with dlopen: the guest side of the check
# disk below.
SPKGS=systemd,cryptsetup-bin,dmsetup,libtss2-esys-3.0.2-0,libtss2-rc0,libtss2-mu0,libtss2-tcti-device0
SCKEY=$({ echo "$SPKGS $SUITE"; sed -n '/^# --- the systemd chroot/,/^# --- end systemd chroot/p' "$SELF"; } | hash_of)
SCH=$BC/systemd-chroot-$SCKEY
if [ ! -e "$SCH/.done" ]; then
    rm -rf "$BC"/systemd-chroot-*
    say "building a Debian $SUITE system with systemd's cryptsetup tools (once; $SCH)"
    mmdebstrap --variant=apt --mode=root --include="$SPKGS" \
        --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-exclude=/usr/share/man/*' \
        --dpkgopt='path-exclude=/usr/share/locale/*' \
        "$SUITE" "$SCH.tmp" >"$BC/mmdebstrap-systemd.log" 2>&1 || {
        tail -n 20 "$BC/mmdebstrap-systemd.log" >&2
        rm -rf "$SCH.tmp"
        skip "mmdebstrap (systemd) failed (Debian mirror unreachable?)"
    }
    for f in lib/systemd/systemd-cryptsetup usr/bin/systemd-cryptenroll sbin/cryptsetup \
        usr/lib/x86_64-linux-gnu/cryptsetup/libcryptsetup-token-systemd-tpm2.so; do
        [ -e "$SCH.tmp/$f" ] || die "the systemd chroot has no /$f"
    done
    mv "$SCH.tmp" "$SCH"
    : >"$SCH/.done"
fi
# --- end systemd chroot

# --- the check disk -------------------------------------------------------------------------------
# check-KEY/: what refvm_boot's TPM boot checks from the real root (lukskit.check=/dev/vdd, see
# the real root's init): check.img, an ext4 file system holding the systemd chroot with the
# static lukskit as /usr/local/sbin/lukskit and tests/refvm/boot/systemd-check.sh as /check/run;
# v1.img and v2.img, two LUKS2 volumes made by the host's cryptsetup (passphrase keyslot 0,
# PBKDF2) that the script enrols with `lukskit token enroll-tpm2` in the guest (v2 with a PIN)
# and opens with systemd-cryptsetup and with cryptsetup through systemd's token plugin;
# /check/params their UUIDs. KEY: the lukskit binary, the script, the systemd chroot.
XKEY=$({
    sha256sum "$LUKSKIT" | cut -d' ' -f1
    cat "$HERE/systemd-check.sh"
    echo "$SCKEY"
    sed -n '/^# --- the check disk/,/^# --- end check disk/p' "$SELF"
} | hash_of)
XC=$BC/check-$XKEY
if [ ! -e "$XC/.done" ]; then
    rm -rf "$BC"/check-* "$XC.tmp"
    mkdir -p "$XC.tmp"
    say "making the check disk of systemd's tools (once per lukskit binary; $XC)"
    T=$XC.tmp/tree
    cp -a "$SCH" "$T"
    rm -f "$T/.done"
    mkdir -p "$T/check" "$T/usr/local/sbin"
    install -m 0755 "$LUKSKIT" "$T/usr/local/sbin/lukskit"
    install -m 0755 "$HERE/systemd-check.sh" "$T/check/run"
    install -m 0400 "$DK/passphrase" "$T/check/passphrase"
    for v in v1 v2; do
        truncate -s 20M "$XC.tmp/$v.img"
        cryptsetup luksFormat -q --type luks2 --pbkdf pbkdf2 --pbkdf-force-iterations 1000 \
            --key-file "$DK/passphrase" "$XC.tmp/$v.img" || die "cryptsetup luksFormat $v.img failed"
        echo "UUID_${v^^}=$(cryptsetup luksUUID "$XC.tmp/$v.img")" >>"$T/check/params"
    done
    size=$(($(du -sm "$T" | cut -f1) * 5 / 4 + 64))
    mke2fs -q -t ext4 -L lukskit-check -d "$T" "$XC.tmp/check.img" "${size}M" || die "mke2fs -d failed"
    cp "$T/check/params" "$XC.tmp/params"
    rm -rf "$T"
    mv "$XC.tmp" "$XC"
    : >"$XC/.done"
fi
# --- end check disk

# --- the initramfs images -------------------------------------------------------------------------
IKEY=$({
    sha256sum "$LUKSKIT" | cut -d' ' -f1
    cat "$REPO"/scripts/initramfs-tools/install.sh "$REPO"/scripts/initramfs-tools/hooks/lukskit \
        "$REPO"/scripts/initramfs-tools/scripts/local-top/lukskit "$REPO"/scripts/initramfs-tools/scripts/local-block/lukskit \
        "$REPO"/scripts/build-deb.sh
    echo "$CKEY $DKEY $TKEY"
    sed -n '/^# --- the initramfs images/,/^# --- end initramfs/p' "$SELF"
} | hash_of)
IN=$BC/initrd-$IKEY
if [ ! -e "$IN/.done" ]; then
    rm -rf "$BC"/initrd-* "$IN.tmp"
    mkdir -p "$IN.tmp"
    say "building the initramfs images with mkinitramfs in the chroot (once per lukskit binary; $IN)"
    # Every build in a private mount namespace (/proc, /sys, /dev of the chroot vanish with it).
    in_chroot() {
        # shellcheck disable=SC2016 # expanded by the inner sh
        unshare -m --propagation private sh -c '
            ch=$1; shift
            mount -t proc proc "$ch/proc" && mount -t sysfs sysfs "$ch/sys" &&
                mount --rbind /dev "$ch/dev" &&
                exec chroot "$ch" /usr/bin/env PATH=/usr/sbin:/usr/bin "$@"' sh "$CH" "$@"
    }
    # Common configuration of the machine: a small VM (virtio disks), key files private.
    mkdir -p "$CH/etc/keys" "$CH/etc/mdadm"
    install -m 0400 "$DK/root.key" "$CH/etc/keys/root.key"
    cp "$DK/mdadm.conf" "$CH/etc/mdadm/mdadm.conf"
    sed -i -e 's/^MODULES=.*/MODULES=list/' -e 's/^COMPRESS=.*/COMPRESS=gzip/' "$CH/etc/initramfs-tools/initramfs.conf"
    grep -q '^UMASK=' "$CH/etc/initramfs-tools/initramfs.conf" || echo UMASK=0077 >>"$CH/etc/initramfs-tools/initramfs.conf"
    printf '%s\n' virtio_pci virtio_blk ext4 raid1 >"$CH/etc/initramfs-tools/modules"
    mkinitrd() { # name
        in_chroot mkinitramfs -o "/tmp/$1.img" "$KVER" >"$IN.tmp/$1.log" 2>&1 || {
            tail -n 30 "$IN.tmp/$1.log" >&2
            die "mkinitramfs ($1) failed"
        }
        mv "$CH/tmp/$1.img" "$IN.tmp/$1.img"
        cp "$IN.tmp/$1.img" "$CH/tmp/list.img"
        in_chroot lsinitramfs -l /tmp/list.img >"$IN.tmp/$1.list"
        rm -f "$CH/tmp/list.img"
    }
    # For lukskit's hook, the machine is as without cryptsetup-initramfs: its hooks and boot
    # scripts are diverted out of initramfs-tools' directories (restored for Debian's case).
    mkdir -p "$CH/usr/share/lukskit-test-diverted"
    CRFILES="hooks/cryptroot hooks/cryptroot-unlock scripts/local-top/cryptroot scripts/local-block/cryptroot scripts/local-bottom/cryptroot"
    for f in $CRFILES; do
        in_chroot dpkg-divert --local --rename --divert "/usr/share/lukskit-test-diverted/${f//\//-}" \
            --add "/usr/share/initramfs-tools/$f" >/dev/null
    done
    # lukskit from its Debian package, with the static binary (docs/install.md), and its hook
    # activated with the packaged install.sh (docs/boot.md): the conf names /usr/sbin/lukskit.
    # A build interrupted before its purge below leaves lukskit's packages installed in the
    # cached chroot, and apt keeps an installed package of the same version: its old binary
    # would go into these images. Purge them first.
    in_chroot dpkg --purge lukskit-cryptsetup-compat lukskit >"$IN.tmp/apt.log" 2>&1 ||
        die "dpkg --purge of lukskit's packages left in the chroot failed"
    rm -rf "$CH/etc/lukskit" "$CH/tmp/debs"
    bash "$REPO/scripts/build-deb.sh" --binary "$LUKSKIT" --out "$CH/tmp/debs" >/dev/null
    in_chroot sh -c 'apt-get install -y --no-install-recommends /tmp/debs/lukskit_*.deb' >>"$IN.tmp/apt.log" 2>&1 || {
        tail -n 30 "$IN.tmp/apt.log" >&2
        die "apt-get install of lukskit's package in the chroot failed"
    }
    in_chroot /usr/share/lukskit/initramfs-tools/install.sh --no-update >&2
    grep -qx 'LUKSKIT_BIN=/usr/sbin/lukskit' "$CH/etc/lukskit/initramfs.conf" ||
        die "the packaged install.sh did not name /usr/sbin/lukskit in /etc/lukskit/initramfs.conf"
    echo "/dev/mapper/cryptroot / ext4 defaults 0 1" >"$CH/etc/fstab"
    echo "cryptroot UUID=$LUKS_A /etc/keys/root.key luks,discard" >"$CH/etc/crypttab"
    mkinitrd key
    # The root unlocked by the TPM (tpm-KEY/t1+t2), and a volume whose token fails (tc: PCR 7
    # changed) asking for its passphrase; --verbose says which keyslot opened each.
    {
        echo "cryptplain UUID=$LUKS_C none luks,initramfs,tpm2-device=auto"
        echo "cryptroot UUID=$LUKS_A none luks,discard,tpm2-device=auto"
    } >"$CH/etc/crypttab"
    cp "$CH/etc/lukskit/initramfs.conf" "$IN.tmp/initramfs.conf.saved"
    echo 'LUKSKIT_OPEN_OPTIONS="--verbose"' >>"$CH/etc/lukskit/initramfs.conf"
    mkinitrd tpm
    cp "$IN.tmp/initramfs.conf.saved" "$CH/etc/lukskit/initramfs.conf"
    rm -f "$IN.tmp/initramfs.conf.saved"
    echo "/dev/mapper/vg0-root / ext4 defaults 0 1" >"$CH/etc/fstab"
    echo "cryptlvm UUID=$LUKS_B /etc/keys/root.key luks" >"$CH/etc/crypttab"
    echo 'LUKSKIT_NAMES="cryptlvm"' >>"$CH/etc/lukskit/initramfs.conf"
    mkinitrd lvm
    # The root served by lukskit's own process (FUSE + loop), as where the kernel has no dm-crypt.
    echo "/dev/mapper/cryptroot / ext4 defaults 0 1" >"$CH/etc/fstab"
    echo "cryptroot UUID=$LUKS_A /etc/keys/root.key luks" >"$CH/etc/crypttab"
    sed -i '/^LUKSKIT_NAMES=/d' "$CH/etc/lukskit/initramfs.conf"
    echo 'LUKSKIT_OPEN_OPTIONS="--backend userspace"' >>"$CH/etc/lukskit/initramfs.conf"
    mkinitrd fuse
    in_chroot /usr/share/lukskit/initramfs-tools/install.sh --uninstall --no-update >&2
    for f in $CRFILES; do
        in_chroot dpkg-divert --local --rename --remove "/usr/share/initramfs-tools/$f" >/dev/null
    done
    # Debian's own hook with lukskit as /sbin/cryptsetup (the compat package, docs/install.md).
    # Its hook finds the cipher modules from the active mapping, which this chroot does not
    # have: the modules file names them, as on a machine whose root is not unlocked yet.
    printf '%s\n' dm_mod dm_crypt xts aesni_intel sha256_ssse3 >>"$CH/etc/initramfs-tools/modules"
    in_chroot sh -c 'apt-get install -y --no-install-recommends /tmp/debs/lukskit-cryptsetup-compat_*.deb' >>"$IN.tmp/apt.log" 2>&1 || {
        tail -n 30 "$IN.tmp/apt.log" >&2
        die "apt-get install of lukskit-cryptsetup-compat in the chroot failed"
    }
    [ "$(readlink "$CH/sbin/cryptsetup")" = /usr/sbin/lukskit ] || die "/sbin/cryptsetup is not lukskit after the compat package"
    echo "/dev/mapper/cryptroot / ext4 defaults 0 1" >"$CH/etc/fstab"
    echo "cryptroot UUID=$LUKS_A /etc/keys/root.key luks,initramfs" >"$CH/etc/crypttab"
    echo 'KEYFILE_PATTERN="/etc/keys/*.key"' >>"$CH/etc/cryptsetup-initramfs/conf-hook"
    mkinitrd debian
    # What Debian's hook put in as cryptsetup: the link and the bytes behind it.
    cp "$IN.tmp/debian.img" "$CH/tmp/u.img"
    rm -rf "$CH/tmp/u"
    in_chroot unmkinitramfs /tmp/u.img /tmp/u
    u=$CH/tmp/u
    [ -d "$u/main" ] && u=$u/main
    {
        echo "cryptsetup-link $(readlink "$u/usr/sbin/cryptsetup" || echo none)"
        echo "cryptsetup-sha256 $(sha256sum <"$u/usr/sbin/cryptsetup" | cut -d' ' -f1)"
    } >"$IN.tmp/debian.facts"
    rm -rf "$CH/tmp/u" "$CH/tmp/u.img"
    # Back to Debian's cryptsetup (removing the compat package), and no lukskit in the chroot.
    in_chroot apt-get purge -y lukskit-cryptsetup-compat lukskit >>"$IN.tmp/apt.log" 2>&1 ||
        die "apt-get purge of lukskit's packages in the chroot failed"
    [ ! -e "$CH/sbin/cryptsetup.real" ] || die "Debian's cryptsetup is still diverted after apt-get purge"
    sed -i '/^KEYFILE_PATTERN=/d' "$CH/etc/cryptsetup-initramfs/conf-hook"
    rm -rf "$CH/etc/keys/root.key" "$CH/etc/crypttab" "$CH/etc/lukskit" "$CH/tmp/debs"
    sha256sum "$LUKSKIT" | cut -d' ' -f1 >"$IN.tmp/lukskit.sha256"
    mv "$IN.tmp" "$IN"
    : >"$IN/.done"
fi
# --- end initramfs

# --- the dracut chroot ---------------------------------------------------------------------------
# dracut conflicts with initramfs-tools: a Debian system of its own, with systemd (dracut puts
# systemd into the initramfs when it is installed, as on the distributions that use dracut).
DPKGS=dracut,udev,mdadm,systemd,dmsetup,kmod,cpio,zstd
DCKEY=$({ echo "$DPKGS $SUITE $KDEB"; sed -n '/^# --- the dracut chroot/,/^# --- end dracut chroot/p' "$SELF"; } | hash_of)
DCH=$BC/dracut-chroot-$DCKEY
if [ ! -e "$DCH/.done" ]; then
    rm -rf "$BC"/dracut-chroot-*
    say "building a Debian $SUITE system with dracut (once; $DCH)"
    mmdebstrap --variant=apt --mode=root --include="$DPKGS" \
        --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-exclude=/usr/share/man/*' \
        --dpkgopt='path-exclude=/usr/share/locale/*' \
        "$SUITE" "$DCH.tmp" >"$BC/mmdebstrap-dracut.log" 2>&1 || {
        tail -n 20 "$BC/mmdebstrap-dracut.log" >&2
        rm -rf "$DCH.tmp"
        skip "mmdebstrap (dracut) failed (Debian mirror unreachable?)"
    }
    dpkg-deb --fsys-tarfile "$CACHE/debs/$KDEB" | tar -x -C "$DCH.tmp" --keep-directory-symlink
    chroot "$DCH.tmp" /usr/bin/env PATH=/usr/sbin:/usr/bin depmod "$KVER"
    mv "$DCH.tmp" "$DCH"
    : >"$DCH/.done"
fi
# --- end dracut chroot

# --- the dracut image ----------------------------------------------------------------------------
# dracut.img: Debian's dracut with lukskit's module from the package (activated by the packaged
# dracut/install.sh): crypttab `cryptroot UUID=<a> /etc/keys/root.key luks` for the root on the
# RAID-1, fstab root /dev/mapper/cryptroot; a generic image (--no-hostonly: the chroot is not the
# machine) with the VM's drivers only and rd.md.uuid of the array in its /etc/cmdline.d, as a
# host-only image would have it. The rest comes from the kernel command line (refvm_boot.rs).
DIKEY=$({
    sha256sum "$LUKSKIT" | cut -d' ' -f1
    cat "$REPO"/scripts/dracut/install.sh "$REPO"/scripts/dracut/90lukskit/* "$REPO"/scripts/build-deb.sh
    echo "$DCKEY $DKEY"
    sed -n '/^# --- the dracut image/,/^# --- end dracut image/p' "$SELF"
} | hash_of)
DI=$BC/dracut-initrd-$DIKEY
if [ ! -e "$DI/.done" ]; then
    rm -rf "$BC"/dracut-initrd-* "$DI.tmp"
    mkdir -p "$DI.tmp"
    say "building the dracut image in the dracut chroot (once per lukskit binary and module; $DI)"
    in_dchroot() {
        # shellcheck disable=SC2016 # expanded by the inner sh
        unshare -m --propagation private sh -c '
            ch=$1; shift
            mount -t proc proc "$ch/proc" && mount -t sysfs sysfs "$ch/sys" &&
                mount --rbind /dev "$ch/dev" &&
                exec chroot "$ch" /usr/bin/env PATH=/usr/sbin:/usr/bin "$@"' sh "$DCH" "$@"
    }
    # As for the initramfs images: nothing an interrupted build installed may stay.
    in_dchroot dpkg --purge lukskit >"$DI.tmp/apt.log" 2>&1 ||
        die "dpkg --purge of lukskit's package left in the dracut chroot failed"
    rm -rf "$DCH/etc/lukskit" "$DCH/tmp/debs" "$DCH/etc/dracut.conf.d/90-lukskit.conf"
    bash "$REPO/scripts/build-deb.sh" --binary "$LUKSKIT" --out "$DCH/tmp/debs" >/dev/null
    in_dchroot sh -c 'apt-get install -y --no-install-recommends /tmp/debs/lukskit_*.deb' >>"$DI.tmp/apt.log" 2>&1 || {
        tail -n 30 "$DI.tmp/apt.log" >&2
        die "apt-get install of lukskit's package in the dracut chroot failed"
    }
    [ -e "$DCH/usr/lib/dracut/modules.d/90lukskit/module-setup.sh" ] || die "the package did not install the dracut module"
    in_dchroot /usr/share/lukskit/dracut/install.sh --no-update >&2
    grep -q 'add_dracutmodules+=" lukskit "' "$DCH/etc/dracut.conf.d/90-lukskit.conf" ||
        die "the packaged dracut/install.sh did not write /etc/dracut.conf.d/90-lukskit.conf"
    mkdir -p "$DCH/etc/keys" "$DCH/etc/mdadm"
    install -m 0400 "$DK/root.key" "$DCH/etc/keys/root.key"
    cp "$DK/mdadm.conf" "$DCH/etc/mdadm/mdadm.conf"
    echo "/dev/mapper/cryptroot / ext4 defaults 0 1" >"$DCH/etc/fstab"
    echo "cryptroot UUID=$LUKS_A /etc/keys/root.key luks" >"$DCH/etc/crypttab"
    # The array of the root: its UUID from mdadm --detail --scan (name lukskit:roota).
    MDUUID=$(awk '/name=lukskit:roota/ { for (i = 1; i <= NF; i++) if ($i ~ /^UUID=/) print substr($i, 6) }' "$DK/mdadm.conf")
    [ -n "$MDUUID" ] || die "no UUID of the array roota in mdadm.conf"
    in_dchroot dracut --force --no-hostonly --no-hostonly-cmdline --kver "$KVER" \
        --drivers "virtio_pci virtio_blk ext4 raid1" --kernel-cmdline "rd.md.uuid=$MDUUID" \
        --compress gzip /tmp/dracut.img >"$DI.tmp/dracut.log" 2>&1 || {
        tail -n 30 "$DI.tmp/dracut.log" >&2
        die "dracut failed"
    }
    mv "$DCH/tmp/dracut.img" "$DI.tmp/dracut.img"
    cp "$DI.tmp/dracut.img" "$DCH/tmp/list.img"
    in_dchroot lsinitrd /tmp/list.img >"$DI.tmp/dracut.list"
    rm -f "$DCH/tmp/list.img"
    in_dchroot apt-get purge -y lukskit >>"$DI.tmp/apt.log" 2>&1 || die "apt-get purge lukskit in the dracut chroot failed"
    in_dchroot /bin/sh -c 'rm -f /etc/dracut.conf.d/90-lukskit.conf'
    rm -rf "$DCH/etc/keys/root.key" "$DCH/etc/crypttab" "$DCH/etc/lukskit" "$DCH/tmp/debs"
    mv "$DI.tmp" "$DI"
    : >"$DI/.done"
fi
# --- end dracut image
echo "DISKS=$DK"
echo "INITRDS=$IN"
echo "TPM=$TK"
echo "DRACUT=$DI"
echo "CHECK=$XC"
echo "CHROOT=$CH"
echo "KVER=$KVER"
