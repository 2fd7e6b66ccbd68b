#!/bin/sh
# Runs inside the reference VM (tests/refvm/run.sh) with /dev/vda (80 MiB) and the dmctl
# example at /refvm/files/dmctl. For every case, cryptsetup 2.6.1 makes a mapping and we record
# what the kernel and cryptsetup say about it; then lukskit-dm (through dmctl) makes the same
# mapping and the records must be byte-for-byte equal. Data written through one mapping must
# read back through the other. Prints "ok: ..." / "FAIL: ..." lines; exits 1 on any failure.
set -u
export DM_DISABLE_UDEV=1
DMCTL=/refvm/files/dmctl
chmod 755 "$DMCTL"
W=/tmp/w
mkdir -p "$W"
FAILS=0
OKS=0
ok() { OKS=$((OKS + 1)); echo "ok: $*"; }
bad() { FAILS=$((FAILS + 1)); echo "FAIL: $*"; }
same() { # description fileA fileB
    if cmp -s "$2" "$3"; then ok "$1"; else
        bad "$1"
        echo "--- cryptsetup"; cat "$2"; echo "--- lukskit-dm"; cat "$3"; echo "---"
    fi
}
# Everything the kernel and cryptsetup report about mapping $1.
snap() {
    {
        dmsetup table --showkeys "$1"
        dmsetup info -c --noheadings -o name,uuid,attr "$1"
        dmsetup info "$1"
        cryptsetup status "$1"
        stat -c '%A %U %G %t:%T %F' "/dev/mapper/$1"
    } 2>&1
}
md5() { dd if="$1" bs=65536 count=16 2>/dev/null | md5sum | cut -d' ' -f1; }
put() { dd if="$1" of="$2" bs=65536 count=16 conv=fsync 2>/dev/null; }

head -c 64 /dev/urandom >/tmp/vk64
head -c 32 /dev/urandom >/tmp/vk32
printf pass >/tmp/pass
head -c 1048576 /dev/urandom >/tmp/d1
head -c 1048576 /dev/urandom >/tmp/d2
D1=$(md5sum </tmp/d1 | cut -d' ' -f1)
D2=$(md5sum </tmp/d2 | cut -d' ' -f1)
U=11111111-2222-3333-4444-555555555555

echo "== $($DMCTL features | tr '\n' ' ')"

# compare CASE NAME "cryptsetup open args" "dmctl create-crypt args" rw|ro
compare() {
    c=$1 n=$2 csargs=$3 dmargs=$4 mode=$5
    # shellcheck disable=SC2086
    if ! cryptsetup open $csargs /dev/vda "$n"; then bad "$c: cryptsetup open"; return; fi
    snap "$n" >"$W/$c.cs"
    echo "== $c (cryptsetup):"; sed 's/^/   /' "$W/$c.cs"
    if [ "$mode" = rw ]; then put /tmp/d1 "/dev/mapper/$n"; fi
    R1=$(md5 "/dev/mapper/$n")
    cryptsetup close "$n" || bad "$c: cryptsetup close"
    # shellcheck disable=SC2086
    if ! $DMCTL create-crypt "$n" --device /dev/vda $dmargs >"$W/$c.out" 2>&1; then
        bad "$c: dmctl create-crypt"; cat "$W/$c.out"; return
    fi
    snap "$n" >"$W/$c.dm"
    same "$c: table, DM UUID, attrs, info, cryptsetup status, node" "$W/$c.cs" "$W/$c.dm"
    $DMCTL table "$n" --showkeys >"$W/$c.ours" 2>&1
    dmsetup table --showkeys "$n" >"$W/$c.kernel"
    # Our parse + render of the kernel's line; differs only by option order for
    # iv_large_sectors + sector_size (kernel: sector_size first), normalised here.
    sed 's/ iv_large_sectors sector_size:\([0-9]*\)$/ sector_size:\1 iv_large_sectors/' "$W/$c.ours" >"$W/$c.ours.n"
    same "$c: dmctl table re-renders the kernel's table" "$W/$c.kernel" "$W/$c.ours.n"
    R2=$(md5 "/dev/mapper/$n")
    if [ "$R1" = "$R2" ]; then ok "$c: same plaintext through both mappings"; else bad "$c: plaintext differs"; fi
    if [ "$mode" = rw ]; then
        [ "$R1" = "$D1" ] || bad "$c: cryptsetup mapping did not return written data"
        put /tmp/d2 "/dev/mapper/$n"
        # cryptsetup recognises and closes our mapping (and our node goes with it).
        if cryptsetup close "$n"; then ok "$c: cryptsetup close of our mapping"; else bad "$c: cryptsetup close of our mapping"; fi
        [ -e "/dev/mapper/$n" ] && bad "$c: node left after close"
        # shellcheck disable=SC2086
        cryptsetup open $csargs /dev/vda "$n"
        if [ "$(md5 "/dev/mapper/$n")" = "$D2" ]; then ok "$c: cryptsetup reads what we wrote"; else bad "$c: cryptsetup reads other data"; fi
        cryptsetup close "$n"
    else
        if $DMCTL remove "$n" >/dev/null; then ok "$c: dmctl remove"; else bad "$c: dmctl remove"; fi
        [ -e "/dev/mapper/$n" ] && bad "$c: node left after dmctl remove"
    fi
}

FMT="-q --pbkdf pbkdf2 --pbkdf-force-iterations 1000"
KF="--key-file /tmp/pass"
PERF="--perf-same_cpu_crypt --perf-submit_from_crypt_cpus --perf-no_read_workqueue --perf-no_write_workqueue"
PERFF="same_cpu_crypt,submit_from_crypt_cpus,no_read_workqueue,no_write_workqueue"

# LUKS2, key through the keyring.
# shellcheck disable=SC2086
cryptsetup luksFormat $FMT --type luks2 -s 512 --volume-key-file /tmp/vk64 --uuid $U /dev/vda /tmp/pass
L2="--type LUKS2 --uuid $U --cipher aes-xts-plain64 --key-file /tmp/vk64 --offset 32768"
compare luks2-keyring l2 "$KF" "$L2 --keyring-digest 0" rw
compare luks2-hex l2h "$KF --disable-keyring" "$L2" rw
compare luks2-ro-flags l2f "$KF --readonly --allow-discards $PERF" \
    "$L2 --keyring-digest 0 --readonly --flags allow_discards,$PERFF" ro

# Suspend / resume through key messages.
$DMCTL create-crypt l2 --device /dev/vda $L2 --keyring-digest 0 >/dev/null
put /tmp/d1 /dev/mapper/l2
snap l2 >"$W/live.dm"
cryptsetup luksSuspend l2 && snap l2 >"$W/susp.cs"
cryptsetup luksResume $KF l2 && snap l2 >"$W/resumed.cs"
same "luksSuspend/luksResume by cryptsetup on our mapping" "$W/live.dm" "$W/resumed.cs"
$DMCTL suspend l2 >/dev/null && $DMCTL wipe-key l2 && snap l2 >"$W/susp.dm"
same "suspend + key wipe: same state as cryptsetup luksSuspend" "$W/susp.cs" "$W/susp.dm"
if $DMCTL set-key l2 --key-file /tmp/vk64 --keyring-desc "cryptsetup:$U-d0" && $DMCTL resume l2 >/dev/null; then
    snap l2 >"$W/resumed.dm"
    same "key set (keyring) + resume restores the mapping" "$W/live.dm" "$W/resumed.dm"
    [ "$(md5 /dev/mapper/l2)" = "$D1" ] && ok "data readable after our resume" || bad "data after our resume"
else bad "set-key/resume"; fi
cryptsetup luksSuspend l2
if $DMCTL set-key l2 --key-file /tmp/vk64 && $DMCTL resume l2 >/dev/null; then
    [ "$(md5 /dev/mapper/l2)" = "$D1" ] && ok "hex key set after cryptsetup luksSuspend" || bad "data after hex key set"
    dmsetup table --showkeys l2 | grep -q " $(od -An -tx1 /tmp/vk64 | tr -d ' \n') " &&
        ok "hex key set shows the key in the table" || bad "hex key set table"
else bad "hex set-key/resume"; fi
# Wrong key set: data must not read back (shows the message really sets the key).
cryptsetup luksSuspend l2
$DMCTL set-key l2 --key-file /tmp/vk32 2>/dev/null && bad "a 32-byte key accepted for a 64-byte table" || ok "key set with a wrong-size key refused"
$DMCTL set-key l2 --key-file /tmp/vk64 --keyring-desc "cryptsetup:$U-d0" && $DMCTL resume l2 >/dev/null
# Deferred remove with an opener.
exec 3</dev/mapper/l2
$DMCTL remove l2 2>/dev/null
[ $? = 3 ] && ok "remove of an open mapping is busy" || bad "remove of an open mapping"
[ "$($DMCTL remove l2 --deferred)" = deferred ] && ok "deferred remove accepted" || bad "deferred remove"
[ -n "$($DMCTL info l2 | grep "deferred=1")" ] && ok "info shows deferred remove" || bad "info deferred flag"
$DMCTL cancel-deferred l2 && [ -n "$($DMCTL info l2 | grep "deferred=0")" ] && ok "deferred remove cancelled" || bad "cancel deferred"
$DMCTL remove l2 --deferred >/dev/null
exec 3<&-
sleep 1
dmsetup info l2 >/dev/null 2>&1 && bad "deferred remove did not happen on last close" || ok "deferred remove on last close"
$DMCTL info l2 2>/dev/null; [ $? = 4 ] && ok "info of a missing mapping is not-found" || bad "not-found status"
rm -f /dev/mapper/l2 # the kernel removed it behind our back: the node is stale

# LUKS2 with 4096-byte sectors.
cryptsetup luksFormat $FMT --type luks2 -s 512 --sector-size 4096 --volume-key-file /tmp/vk64 --uuid $U /dev/vda /tmp/pass
compare luks2-4k l24k "$KF" "$L2 --keyring-digest 0 --sector-size 4096" rw

# LUKS2 cipher_null.
cryptsetup luksFormat $FMT --type luks2 -c cipher_null-ecb --uuid $U /dev/vda /tmp/pass
compare luks2-null l2n "$KF" "--type LUKS2 --uuid $U --cipher cipher_null-ecb --offset 32768" rw

# LUKS1 (hex key).
cryptsetup luksFormat -q --type luks1 --pbkdf-force-iterations 1000 -s 256 --volume-key-file /tmp/vk32 --uuid $U /dev/vda /tmp/pass
compare luks1 l1 "$KF" "--type LUKS1 --uuid $U --cipher aes-xts-plain64 --key-file /tmp/vk32 --offset 4096" rw

# Plain.
P="--type plain --key-file /tmp/vk64 -c aes-xts-plain64 -s 512"
PD="--type PLAIN --cipher aes-xts-plain64 --key-file /tmp/vk64"
compare plain-skip pl "$P --offset 2048 --skip 16" "$PD --offset 2048 --iv-offset 16" rw
compare plain-4k-large pl4 "$P --sector-size 4096 --iv-large-sectors --allow-discards $PERF" \
    "$PD --sector-size 4096 --flags allow_discards,$PERFF,iv_large_sectors" rw
compare plain-null pn "--type plain --key-file /tmp/vk64 -c null -s 256" "--type PLAIN --cipher cipher_null-ecb" rw
compare plain-essiv pe "--type plain --key-file /tmp/vk32 -c aes-cbc-essiv:sha256 -s 256" \
    "--type PLAIN --cipher aes-cbc-essiv:sha256 --key-file /tmp/vk32" rw

# Resize (table read with keys, reloaded with a new length) against cryptsetup resize.
cryptsetup open $P /dev/vda pr && cryptsetup resize --size 8192 pr && snap pr >"$W/resize.cs"
cryptsetup close pr
$DMCTL create-crypt pr --device /dev/vda $PD >/dev/null && $DMCTL resize pr --size 8192 >/dev/null && snap pr >"$W/resize.dm"
same "resize: same as cryptsetup resize" "$W/resize.cs" "$W/resize.dm"
dmsetup status pr >"$W/prs.kernel"
$DMCTL status pr >"$W/prs.ours"
same "crypt status (STATUSTYPE_INFO)" "$W/prs.kernel" "$W/prs.ours"
$DMCTL remove pr >/dev/null

# Linear, zero and error targets; rename; listing.
$DMCTL create-linear lin --device /dev/vda --offset 2048 --size 4096 >/dev/null
A=$(dd if=/dev/vda bs=512 skip=2048 count=2048 2>/dev/null | md5sum)
B=$(dd if=/dev/mapper/lin bs=512 count=2048 2>/dev/null | md5sum)
[ "$A" = "$B" ] && ok "linear target maps the device" || bad "linear target data"
[ "$(dmsetup table lin)" = "0 4096 linear 254:0 2048" ] && [ "$($DMCTL table lin)" = "0 4096 linear 254:0 2048" ] &&
    ok "linear table line" || bad "linear table: $(dmsetup table lin)"
$DMCTL rename lin lin2 >/dev/null && [ -b /dev/mapper/lin2 ] && [ ! -e /dev/mapper/lin ] &&
    dmsetup info lin2 >/dev/null && ok "rename (and node)" || bad "rename"
$DMCTL create-zero z --size 2048 >/dev/null
dmsetup table z >"$W/z.kernel"
$DMCTL table z >"$W/z.ours"
printf '0 1024 zero \n1024 1024 error \n' >"$W/z.want"
same "zero+error table (dmsetup)" "$W/z.want" "$W/z.kernel"
same "zero+error table (dmctl)" "$W/z.kernel" "$W/z.ours"
dmsetup status z >"$W/zs.kernel"
$DMCTL status z >"$W/zs.ours"
same "zero+error status (STATUSTYPE_INFO)" "$W/zs.kernel" "$W/zs.ours"
[ "$(dd if=/dev/mapper/z bs=512 count=1024 2>/dev/null | tr -d '\000' | wc -c)" = 0 ] && ok "zero target reads zeros" || bad "zero target"
dd if=/dev/mapper/z bs=512 skip=1024 count=1 of=/dev/null 2>/dev/null && bad "error target read succeeded" || ok "error target fails I/O"
LIST=$($DMCTL list)
echo "$LIST" | grep -q "^lin2 253:[0-9]* -$" && echo "$LIST" | grep -q "^z 253:[0-9]* -$" && ok "list" || bad "list: $LIST"
$DMCTL remove lin2 >/dev/null && $DMCTL remove z >/dev/null && [ ! -e /dev/mapper/z ] && ok "remove linear/zero" || bad "remove linear/zero"

# A table the kernel refuses: no half-made mapping, no node, typed error.
$DMCTL create-crypt bad --device /dev/vda --type PLAIN --cipher nosuchcipher-xts-plain64 --key-file /tmp/vk64 2>"$W/bad.err"
rc=$?
[ $rc = 2 ] && ok "refused table: error status ($(cat "$W/bad.err"))" || bad "refused table rc=$rc"
dmsetup info bad >/dev/null 2>&1 && bad "half-made mapping left behind" || ok "half-made mapping removed"
[ -e /dev/mapper/bad ] && bad "node of a failed create" || ok "no node after a failed create"
$DMCTL create-crypt dup --device /dev/vda --type PLAIN --cipher aes-xts-plain64 --key-file /tmp/vk64 >/dev/null
$DMCTL create-crypt dup --device /dev/vda --type PLAIN --cipher aes-xts-plain64 --key-file /tmp/vk64 2>/dev/null
[ $? = 5 ] && ok "create of an existing name: exists" || bad "duplicate create status"
$DMCTL remove dup >/dev/null

# /dev/mapper/control re-created when missing.
before=$(stat -c '%A %t:%T %F' /dev/mapper/control)
rm /dev/mapper/control
$DMCTL features >/dev/null && [ "$(stat -c '%A %t:%T %F' /dev/mapper/control)" = "$before" ] &&
    ok "control node re-created ($before)" || bad "control node: $(stat -c '%A %t:%T %F' /dev/mapper/control 2>&1)"

echo "summary: $OKS ok, $FAILS failed"
[ "$FAILS" = 0 ]
