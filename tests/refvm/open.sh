#!/bin/sh
# Files on volumes opened by lukskit and by the kernel, checked across the two (run inside the
# reference VM by crates/lukskit-cli/tests/refvm_open.rs):
#
#   tests/refvm/run.sh tests/refvm/open.sh A B KEY
#
#   /dev/vda  A:   a LUKS2 volume that lukskit formatted and filled through `lukskit open` on
#                  the host (ext4 with files): cryptsetup opens it, the kernel mounts it, prints
#                  the files' SHA-256 and checks the file system.
#   /dev/vdb  B:   a blank disk: cryptsetup formats it as LUKS1, the kernel makes ext4 with files
#                  on it; the host then opens it with lukskit and checks the files.
#   /dev/vdc  KEY: the passphrase (its first 16 bytes).
set -eu
modprobe dm-crypt
modprobe ext4 2>/dev/null || true
mkdir -p /mnt /tmp
head -c 16 /dev/vdc >/tmp/kf

cryptsetup open --key-file /tmp/kf /dev/vda a
mount -o ro /dev/mapper/a /mnt
(cd /mnt && sha256sum hello blob) | sed 's/^/a: /'
umount /mnt
if e2fsck -fn /dev/mapper/a >/tmp/fsck.log 2>&1; then echo "a: fsck clean"; else cat /tmp/fsck.log; fi
cryptsetup close a

cryptsetup luksFormat -q --type luks1 --pbkdf-force-iterations 1000 --key-file /tmp/kf /dev/vdb
cryptsetup open --key-file /tmp/kf /dev/vdb b
mkfs.ext4 -q /dev/mapper/b
mount /dev/mapper/b /mnt
echo "written by the kernel" >/mnt/hello
dd if=/dev/urandom of=/mnt/blob bs=65536 count=40 2>/dev/null
(cd /mnt && sha256sum hello blob) | sed 's/^/b: /'
umount /mnt
cryptsetup close b
echo "open: ok"
