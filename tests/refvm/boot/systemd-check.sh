#!/bin/sh
# tests/refvm/boot/systemd-check.sh — /check/run of the check disk (tests/refvm/boot/build.sh):
# systemd 252's own tools on volumes that lukskit enrolled, in the guest that has the software
# TPM (refvm_boot's TPM boot runs it from the real root, chrooted into the check disk).
#
# For each of two LUKS2 volumes (v1 without a PIN, v2 with the PIN 4711), by UUID from
# /check/params: `lukskit token enroll-tpm2 --tpm2-device=auto --tpm2-pcrs=7` (the existing
# passphrase from a key file, the PIN on standard input), then
#   - `systemd-cryptsetup attach NAME DEV - tpm2-device=auto,headless=1` (v2: the PIN in
#     systemd's $PIN variable; headless: no password agent, so only the token can unlock),
#     a random block written through the mapping, `systemd-cryptsetup detach`;
#   - v2 only: the same attach without $PIN must fail (the token needs its PIN; its messages
#     follow on LUKSKIT-BOOT-CHECK-LOG lines);
#   - `cryptsetup open --token-only` (libcryptsetup with systemd's token plugin; v2: the PIN on
#     standard input at "Enter token PIN:"), the block read back and compared, close;
#   - `systemd-cryptenroll --wipe-slot=tpm2`;
#   - a sealed key file instead of a token (crypttab's `tpm2-device=`/`tpm2-pcrs=`/`tpm2-pin=`
#     with a key file, as systemd 252 reads them for a volume without a token): enrolled again
#     by lukskit, the token's `tpm2-blob` written to a file, the token removed with cryptsetup
#     (its keyslot stays); `systemd-cryptsetup attach NAME DEV BLOB tpm2-device=auto,
#     tpm2-pcrs=7[,tpm2-pin=yes],headless=1` opens it (a block written through it), then
#     `lukskit crypttab open` of the same line (v2: the PIN on standard input) and the block
#     read back through lukskit's mapping.
# Output, one line each: `LUKSKIT-BOOT-CHECK <volume> <step> ok|FAIL rc=N (S s)` (with the
# command's output on LUKSKIT-BOOT-CHECK-LOG lines after a failure) and
# `LUKSKIT-BOOT-CHECK-JSON <volume> <enrolled|wiped> <LUKS2 JSON on one line>`; the test
# (refvm_boot.rs) checks them. Exit status: the number of failed steps.
export PATH=/usr/local/sbin:/usr/sbin:/usr/bin:/sbin:/bin DM_DISABLE_UDEV=1 LC_ALL=C
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mount -t tmpfs tmpfs /run
mount -t tmpfs tmpfs /tmp
. /check/params
# Kernel messages (dm, loop) would break this script's lines on the shared serial console.
printk=$(cat /proc/sys/kernel/printk)
echo 1 >/proc/sys/kernel/printk
PIN_V2=4711
T0=$(date +%s.%N)
failed=0
since() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }'; }

# step VOLUME NAME COMMAND...: runs COMMAND (a function of this script; each program it runs
# is bounded with `timeout`), says ok or FAIL with its output.
W="timeout 120"
step() {
    vol=$1 name=$2
    shift 2
    t=$(date +%s.%N)
    "$@" >/tmp/out 2>&1
    rc=$?
    secs=$(since "$t")
    if [ "$rc" = 0 ]; then
        echo "LUKSKIT-BOOT-CHECK $vol $name ok ($secs s)"
    else
        echo "LUKSKIT-BOOT-CHECK $vol $name FAIL rc=$rc ($secs s)"
        sed "s/^/LUKSKIT-BOOT-CHECK-LOG $vol $name: /" /tmp/out
        failed=$((failed + 1))
    fi
}
# The opposite: COMMAND must fail.
step_fails() {
    vol=$1 name=$2
    shift 2
    "$@" >/tmp/out 2>&1
    rc=$?
    if [ "$rc" != 0 ] && [ "$rc" != 124 ]; then
        echo "LUKSKIT-BOOT-CHECK $vol $name ok (refused, rc=$rc)"
        sed "s/^/LUKSKIT-BOOT-CHECK-LOG $vol $name: /" /tmp/out
    else
        echo "LUKSKIT-BOOT-CHECK $vol $name FAIL rc=$rc (it should have been refused)"
        sed "s/^/LUKSKIT-BOOT-CHECK-LOG $vol $name: /" /tmp/out
        failed=$((failed + 1))
    fi
}
json() { # volume label device
    echo "LUKSKIT-BOOT-CHECK-JSON $1 $2 $(cryptsetup luksDump --dump-json-metadata "$3" | tr -d '\n')"
}
enroll() { # device [pin]
    if [ -n "${2:-}" ]; then
        printf '%s\n' "$2" | $W lukskit token enroll-tpm2 --tpm2-device=auto --tpm2-pcrs=7 \
            --tpm2-with-pin=yes --key-file /check/passphrase "$1"
    else
        $W lukskit token enroll-tpm2 --tpm2-device=auto --tpm2-pcrs=7 --key-file /check/passphrase "$1" </dev/null
    fi
}
sd_attach() { # name device [pin]
    if [ -n "${3:-}" ]; then
        PIN=$3 $W /lib/systemd/systemd-cryptsetup attach "$1" "$2" - tpm2-device=auto,headless=1 </dev/null
    else
        env -u PIN $W /lib/systemd/systemd-cryptsetup attach "$1" "$2" - tpm2-device=auto,headless=1 </dev/null
    fi
}
blob_file() { # device file: the tpm2-blob of the device's token 0, decoded
    cryptsetup luksDump --dump-json-metadata "$1" | tr -d '\n ' |
        sed -n 's/.*"tpm2-blob":"\([^"]*\)".*/\1/p' | sed 's,\\/,/,g' | base64 -d >"$2" &&
        [ -s "$2" ]
}
sd_attach_sealed() { # name device blob options [pin]
    if [ -n "${5:-}" ]; then
        PIN=$5 $W /lib/systemd/systemd-cryptsetup attach "$1" "$2" "$3" "$4,headless=1" </dev/null
    else
        env -u PIN $W /lib/systemd/systemd-cryptsetup attach "$1" "$2" "$3" "$4,headless=1" </dev/null
    fi
}
lk_crypttab_sealed() { # name device blob options [pin]
    echo "$1 $2 $3 $4" >"/tmp/crypttab.$1"
    printf '%s' "${5:+$5
}" | $W lukskit crypttab open --crypttab "/tmp/crypttab.$1" "$1"
}
cs_open() { # device name [pin]
    printf '%s' "${3:-}" | $W cryptsetup open --token-only "$1" "$2"
}
write_block() { # mapping file
    head -c 4096 /dev/urandom >"$2" && $W dd if="$2" of="/dev/mapper/$1" bs=4096 count=1 conv=fsync 2>/dev/null
}
read_block() { # mapping file
    $W dd if="/dev/mapper/$1" bs=4096 count=1 iflag=direct 2>/dev/null | cmp - "$2"
}

echo "LUKSKIT-BOOT-CHECK-TPM $(ls /dev/tpmrm0 /dev/tpm0 2>&1 | tr '\n' ' ')"
for v in v1 v2; do
    case $v in v1) uuid=$UUID_V1 pin= ;; v2) uuid=$UUID_V2 pin=$PIN_V2 ;; esac
    dev=$(blkid -U "$uuid")
    [ -n "$dev" ] || { echo "LUKSKIT-BOOT-CHECK $v find FAIL no device with UUID $uuid"; failed=$((failed + 1)); continue; }
    step $v enroll enroll "$dev" "$pin"
    json $v enrolled "$dev"
    if [ -n "$pin" ]; then
        step_fails $v systemd-cryptsetup-no-pin sd_attach sd$v "$dev"
        [ -e /dev/mapper/sd$v ] && /lib/systemd/systemd-cryptsetup detach sd$v
    fi
    step $v systemd-cryptsetup-attach sd_attach sd$v "$dev" "$pin"
    step $v write write_block sd$v /tmp/block.$v
    step $v systemd-cryptsetup-detach $W /lib/systemd/systemd-cryptsetup detach sd$v
    step $v cryptsetup-token-open cs_open "$dev" cs$v "$pin"
    step $v read read_block cs$v /tmp/block.$v
    step $v cryptsetup-close $W cryptsetup close cs$v
    step $v systemd-cryptenroll-wipe env PASSWORD="$(cat /check/passphrase)" $W systemd-cryptenroll --wipe-slot=tpm2 "$dev"
    json $v wiped "$dev"
    step $v sealed-enroll enroll "$dev" "$pin"
    step $v sealed-blob-file blob_file "$dev" /tmp/blob.$v
    step $v sealed-token-remove $W cryptsetup token remove --token-id 0 "$dev"
    opts=tpm2-device=auto,tpm2-pcrs=7${pin:+,tpm2-pin=yes}
    step $v systemd-cryptsetup-sealed sd_attach_sealed sd$v "$dev" /tmp/blob.$v "$opts" "$pin"
    step $v sealed-write write_block sd$v /tmp/block.$v
    step $v systemd-cryptsetup-sealed-detach $W /lib/systemd/systemd-cryptsetup detach sd$v
    step $v lukskit-crypttab-sealed lk_crypttab_sealed lk$v "$dev" /tmp/blob.$v "$opts" "$pin"
    step $v sealed-read read_block lk$v /tmp/block.$v
    step $v lukskit-crypttab-sealed-close $W lukskit close lk$v
done
echo "LUKSKIT-BOOT-CHECK-TIME $(since "$T0") s"
sync
echo "$printk" >/proc/sys/kernel/printk
umount /tmp /run 2>/dev/null
umount /dev /sys /proc 2>/dev/null
exit "$failed"
