#!/bin/sh
# The static aarch64 lukskit on Debian's arm64 kernel (run inside run-arm64.sh by
# crates/lukskit-cli/tests/static_binaries.rs):
#
#   LUKSKIT_BIN=lukskit-aarch64 tests/refvm/run-arm64.sh --copy KEY tests/refvm/arm64/open.sh VOL
#
#   /dev/vda  VOL: a LUKS2 volume that cryptsetup formatted on the x86_64 host (key file KEY)
#                  and whose first 8 MiB of data the x86_64 static lukskit wrote there.
#
# Prints one `NAME: VALUE` line per fact, which the test compares with the host's:
#   kernel A / userspace A: SHA-256 of the first 8 MiB read through a kernel dm-crypt mapping
#     (lukskit unlocks, the kernel decrypts) and through lukskit's own engine (FUSE + loop);
#   B: SHA-256 of 4 MiB of random data written at 8 MiB through lukskit's engine, and
#   kernel B: the same range read back through dm-crypt.
set -eu
K=/refvm/files/key
echo "arch: $(uname -m)"
echo "version: $(lukskit --version)"
printf 'not the key' >/tmp/bad
set +e
lukskit open --test-passphrase -d /tmp/bad /dev/vda
echo "wrong key: exit $?"
set -e
lukskit open --test-passphrase -d "$K" /dev/vda
echo "test-passphrase: ok"

lukskit open --backend kernel -d "$K" /dev/vda k
lukskit status k | sed 's/^/status k: /'
echo "kernel A: $(dd if=/dev/mapper/k bs=1M count=8 2>/dev/null | sha256sum | cut -d' ' -f1)"
lukskit close k

lukskit open --backend userspace -d "$K" /dev/vda u
lukskit status u | sed 's/^/status u: /'
echo "userspace A: $(dd if=/dev/mapper/u bs=1M count=8 2>/dev/null | sha256sum | cut -d' ' -f1)"
dd if=/dev/urandom of=/tmp/b bs=1M count=4 2>/dev/null
echo "B: $(sha256sum </tmp/b | cut -d' ' -f1)"
dd if=/tmp/b of=/dev/mapper/u bs=1M seek=8 conv=fsync 2>/dev/null
lukskit close u

lukskit open --backend kernel --readonly -d "$K" /dev/vda k
echo "kernel B: $(dd if=/dev/mapper/k bs=1M skip=8 count=4 2>/dev/null | sha256sum | cut -d' ' -f1)"
echo "kernel A again: $(dd if=/dev/mapper/k bs=1M count=8 2>/dev/null | sha256sum | cut -d' ' -f1)"
lukskit close k
left=
for m in /dev/mapper/*; do [ "$m" = /dev/mapper/control ] || left="$left${m#/dev/mapper/} "; done
echo "left in /dev/mapper: $left."
echo "arm64: done"
