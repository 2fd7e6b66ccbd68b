#!/bin/sh
# Run in the reference VM with lukskit installed: devices held by the kernel for cryptsetup's
# dm-crypt mappings and for mounts, and by lukskit's own mappings. For each attempt, one line
# "TOOL CASE rc=N MESSAGE" for cryptsetup and for lukskit; the test compares them.
export DM_DISABLE_UDEV=1
cs="cryptsetup -q --pbkdf pbkdf2 --pbkdf-force-iterations 1000"
lk="lukskit -q --pbkdf pbkdf2 --pbkdf-force-iterations 1000"
printf secret > /tmp/k
head -c 32 /dev/zero | tr '\0' 'Z' > /tmp/k32
try() { # TOOLNAME CASE command...
    tool=$1; case=$2; shift 2
    out=$("$@" 2>&1); rc=$?
    echo "$tool $case rc=$rc $(echo "$out" | grep -v 'superblock signature' | tr '\n' ' ')"
}
both() { # CASE args... (the same arguments for both tools; FMT for the fast PBKDF prefix)
    case=$1; shift
    try cryptsetup "$case" cryptsetup "$@"
    try lukskit "$case" lukskit "$@"
}
$cs luksFormat /dev/vda -d /tmp/k || exit 1
cryptsetup open /dev/vda held -d /tmp/k || exit 1
both open-mapped open /dev/vda other -d /tmp/k
both open-ro-mapped open --readonly /dev/vda other -d /tmp/k
try cryptsetup format-mapped $cs luksFormat /dev/vda -d /tmp/k
try lukskit format-mapped $lk luksFormat /dev/vda -d /tmp/k
both convert-mapped -q convert --type luks1 /dev/vda
both plain-mapped open --type plain -d /tmp/k32 /dev/vda p
# A forced offline re-encryption of the mapped device: lukskit first (cryptsetup writes the
# re-encryption metadata before it refuses; lukskit must leave the header as it was).
hdr_kept() { # CASE DEVICE BEFORE
    [ "$(lukskit luksDump "$2" | md5sum)" = "$3" ] && echo "lukskit-header $1 kept" || echo "lukskit-header $1 changed"
}
before=$(lukskit luksDump /dev/vda | md5sum)
try lukskit reencrypt-mapped $lk reencrypt --force-offline-reencrypt -d /tmp/k /dev/vda
hdr_kept reencrypt-mapped /dev/vda "$before"
try cryptsetup reencrypt-mapped $cs reencrypt --force-offline-reencrypt -d /tmp/k /dev/vda
cryptsetup close held || exit 1
# A mounted file system.
mkfs.ext4 -q /dev/vdb && mkdir -p /m && mount /dev/vdb /m || exit 1
try cryptsetup format-mounted $cs luksFormat /dev/vdb -d /tmp/k
try lukskit format-mounted $lk luksFormat /dev/vdb -d /tmp/k
both plain-mounted open --type plain -d /tmp/k32 /dev/vdb p
try lukskit encrypt-mounted $lk reencrypt --encrypt --header /tmp/h-lk --force-offline-reencrypt -d /tmp/k /dev/vdb
[ -e /tmp/h-lk ] && echo "lukskit made a header for a mounted device"
try cryptsetup encrypt-mounted $cs reencrypt --encrypt --header /tmp/h-cs --force-offline-reencrypt -d /tmp/k /dev/vdb
umount /m
# lukskit's own mapping (FUSE + loop device): the kernel and cryptsetup respect its claim.
modprobe fuse 2>/dev/null; modprobe loop 2>/dev/null
[ -e /dev/fuse ] || mknod /dev/fuse c 10 229
[ -e /dev/loop-control ] || mknod /dev/loop-control c 10 237
$lk luksFormat /dev/vdc -d /tmp/k || exit 1
lukskit open /dev/vdc mine -d /tmp/k || { echo "lukskit open failed"; exit 1; }
both open-lukskit-mapped open /dev/vdc other -d /tmp/k
try cryptsetup format-lukskit-mapped $cs luksFormat /dev/vdc -d /tmp/k
try lukskit format-lukskit-mapped $lk luksFormat /dev/vdc -d /tmp/k
mount /dev/vdc /m 2>/dev/null && { echo "mount of a claimed device succeeded"; umount /m; }
before=$(lukskit luksDump /dev/vdc | md5sum)
try lukskit reencrypt-lukskit-mapped $lk reencrypt --force-offline-reencrypt -d /tmp/k /dev/vdc
hdr_kept reencrypt-lukskit-mapped /dev/vdc "$before"
try cryptsetup reencrypt-lukskit-mapped $cs reencrypt --force-offline-reencrypt -d /tmp/k /dev/vdc
lukskit close mine
echo "exclusive: done"
