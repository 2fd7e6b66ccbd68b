#!/bin/sh
# Smoke test of the reference VM, run inside it (by /bin/sh in the VM):
#
#   tests/refvm/run.sh tests/refvm/smoke.sh DATA KEY PLAIN
#
#   /dev/vda  DATA:  the disk that gets encrypted (whole device, plain mode, no header)
#   /dev/vdb  KEY:   its first 64 bytes are the key (aes-xts-plain64, 512-bit key = AES-256-XTS)
#   /dev/vdc  PLAIN: the plaintext, written through /dev/mapper/smoke at sector 0
#
# The kernel's dm-crypt encrypts PLAIN onto DATA; the host then checks DATA with an independent
# implementation (OpenSSL: AES-256-XTS, tweak = little-endian 512-byte sector number).
set -eu

echo "kernel: $(uname -r)"
modprobe dm-crypt
cryptsetup --version
cryptsetup open --type plain --cipher aes-xts-plain64 --key-size 512 \
    --key-file /dev/vdb /dev/vda smoke
# Shown without the key.
dmsetup table smoke | awk '{ $5 = "<key>"; print "table:", $0 }'
cryptsetup status smoke | sed -n 's/^ *\(type\|cipher\|keysize\|sector size\|offset\|skipped\): */\1: /p'

bytes=$(blockdev --getsize64 /dev/vdc)
dd if=/dev/vdc of=/dev/mapper/smoke bs=4096 conv=fsync 2>/dev/null
# Read back through the kernel's decryption, not from the page cache.
sync
echo 3 >/proc/sys/vm/drop_caches
if head -c "$bytes" /dev/mapper/smoke | cmp -s - /dev/vdc; then
    echo "readback: ok ($bytes bytes)"
else
    echo "readback: MISMATCH" >&2
    exit 1
fi
cryptsetup close smoke
[ ! -e /dev/mapper/smoke ] || { echo "smoke mapping still present after close" >&2; exit 1; }

if command -v lukskit >/dev/null; then
    echo "lukskit: $(lukskit --version)"
fi
echo "smoke: ok"
