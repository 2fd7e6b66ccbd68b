#!/usr/bin/env bash
# The main job end to end on a file image: build lukskit, create a LUKS2 volume in a
# 64 MiB image file, add a second passphrase, test both, and dump the header.
set -euo pipefail
cd "$(dirname "$0")/.."
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
