#!/usr/bin/env bash
# The main job end to end on a file image: build lukskit, create a LUKS2 volume in a
# 64 MiB image file, add a second passphrase, test both, dump the header; then (as root)
# open it as a block device, make and mount a file system, close, reopen and read it back.
set -euo pipefail
cd "$(dirname "$0")/.."
echo "==> building lukskit (a few minutes the first time)"
cargo build --release --quiet
LUKSKIT="$PWD/target/release/lukskit"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
img="$work/volume.img"
truncate -s 64M "$img"

echo "==> luksFormat (LUKS2, aes-xts-plain64, argon2id with 64 MiB)"
printf 'first passphrase' | "$LUKSKIT" luksFormat -q --pbkdf-memory 65536 --iter-time 500 "$img" -d -
echo "==> luksAddKey (second passphrase into keyslot 1)"
printf 'first passphrase\nsecond passphrase\n' | "$LUKSKIT" luksAddKey -q --iter-time 500 --pbkdf-memory 65536 "$img"
echo "==> open --test-passphrase with each passphrase"
printf 'first passphrase\n' | "$LUKSKIT" -v open --test-passphrase "$img"
printf 'second passphrase\n' | "$LUKSKIT" -v open --test-passphrase "$img"
echo "==> luksDump"
"$LUKSKIT" luksDump "$img"

# The volume as a block device, without device-mapper: FUSE file + loop device, then a file
# system on /dev/mapper/NAME. Needs root, /dev/fuse, losetup and mkfs.ext4.
if [ "$(id -u)" != 0 ] || [ ! -e /dev/fuse ] || ! command -v losetup >/dev/null ||
    ! command -v mkfs.ext4 >/dev/null; then
    echo "SKIP: open/mount part of the demo needs root, /dev/fuse, losetup and mkfs.ext4"
    exit 0
fi
name="lukskit-demo-$$"
mnt="$work/mnt"
mkdir "$mnt"
cleanup() {
    mountpoint -q "$mnt" && umount "$mnt"
    "$LUKSKIT" close "$name" 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT
echo "==> open as /dev/mapper/$name, mkfs.ext4, mount, write a file"
printf 'first passphrase\n' | "$LUKSKIT" open "$img" "$name"
mkfs.ext4 -q "/dev/mapper/$name"
mount "/dev/mapper/$name" "$mnt"
echo "hello from an encrypted file system" >"$mnt/hello.txt"
df -h "$mnt" | tail -n 1
"$LUKSKIT" status "$name"
echo "==> umount, close, open again with the second passphrase, read the file back"
umount "$mnt"
"$LUKSKIT" close "$name"
printf 'second passphrase\n' | "$LUKSKIT" open "$img" "$name"
mount "/dev/mapper/$name" "$mnt"
cat "$mnt/hello.txt"
umount "$mnt"
"$LUKSKIT" close "$name"
echo "==> done: the image is an ordinary LUKS2 volume (cryptsetup open works on it too)"
