#!/bin/sh
# The kernel half of the dm-crypt interop matrix (crates/lukskit-cli/tests/refvm_matrix.rs),
# run inside the reference VM:
#
#   tests/refvm/run.sh --copy PLAN:/refvm/files/plan --copy KEYS:/refvm/files/keys \
#       tests/refvm/matrix/matrix.sh WORK
#
# WORK (/dev/vda) is one disk holding every case's regions: images, detached headers,
# plaintexts, read-back areas. KEYS holds every case's key material (plain-mode keys and
# LUKS passphrases, read with --keyfile-offset). PLAN has one case per line:
#
#   id dir kind cipher bits sector large offset skip len reg_off reg_len hdr_off hdr_len buf_off key_off [extra...]
#
#   dir      a: cryptsetup formats (LUKS) or opens (plain) the region and the kernel writes the
#               LEN plaintext bytes found at BUF_OFF of WORK through /dev/mapper (dd);
#            b: the region holds an image lukskit wrote on the host; cryptsetup opens it and
#               the kernel's decryption of the whole mapping is copied to BUF_OFF of WORK.
#   kind     plain, luks1 or luks2; cipher/bits/sector as cryptsetup's -c/-s/--sector-size
#   large    1 = --iv-large-sectors (plain mode)
#   offset   --offset in 512-byte sectors ("-" = cryptsetup's default; LUKS data offset)
#   skip     --skip in 512-byte sectors (plain mode; "-" otherwise)
#   len      a: bytes of plaintext; b: size of the read-back area at BUF_OFF
#   reg_*    byte offset and length of the image region on WORK (a loop device is put on it)
#   hdr_*    the detached LUKS header region ("-" = header in the image)
#   key_off  offset in KEYS: the plain-mode key (cryptsetup reads BITS/8 bytes) or a 32-byte
#            LUKS passphrase
#   extra    more luksFormat options (direction a), e.g. --luks2-metadata-size 16k
#
# Output, one line per case: "case ID DIR: ok SIZE SECONDS" (SIZE = bytes of the mapping) or
# "case ID DIR: FAIL what went wrong", and "table ID DIR: ..." with the dm table (key hidden).
# JOBS cases run at the same time (the VM has 2 vCPUs). Exit status 0 when every case was run
# (the host decides what agrees), 1 when the setup itself failed.
set -u

PLAN=/refvm/files/plan
KEYS=/refvm/files/keys
WORK=/dev/vda
JOBS=2
PBKDF="--pbkdf pbkdf2 --pbkdf-force-iterations 1000"

if ! [ -r "$PLAN" ] || ! [ -r "$KEYS" ] || ! [ -b "$WORK" ]; then
    echo "matrix.sh: needs $PLAN, $KEYS and the work disk $WORK" >&2
    exit 1
fi
modprobe dm-crypt

# Each plan line gets its own loop devices (/dev/loop<2n> for the image, /dev/loop<2n+1> for a
# detached header) and mapping (mx<id><dir>): no two cases ever share one, whatever runs in
# parallel. Mappings and loop devices are torn down in batches (one dmsetup and one losetup
# for BATCH cases: every program start costs ~0.1 s under TCG).
BATCH=16

# Uptime in 1/100 s (no program started; uptime has two decimals and is > 1 s here).
centiseconds() {
    local u _
    read -r u _ </proc/uptime
    echo "${u%.*}${u#*.}"
}

# run_case N: plan line N (in the variables read by worker). Appends "name:id:dir:seconds"
# to $pending on success, prints a FAIL line otherwise.
run_case() {
    local tag name err t0 dt L H hdr opts keyf fopts
    tag="$id $dir"
    name=mx$id$dir
    err=/tmp/err.$name
    t0=$(centiseconds)
    L=/dev/loop$(($1 * 2))
    H=
    fail() {
        echo "case $tag: FAIL $1: $(tr '\n' ' ' <"$err" 2>/dev/null | cut -c1-300)"
        [ -e "/dev/mapper/$name" ] && dmsetup remove "$name" 2>/dev/null
        losetup -d $L $H 2>/dev/null
        rm -f "$err"
    }
    losetup -o "$reg_off" --sizelimit "$reg_len" "$L" "$WORK" 2>"$err" || { fail losetup; return; }
    hdr=
    if [ "$hdr_off" != - ]; then
        H=/dev/loop$(($1 * 2 + 1))
        losetup -o "$hdr_off" --sizelimit "$hdr_len" "$H" "$WORK" 2>"$err" || { fail "losetup header"; return; }
        hdr="--header $H"
    fi
    # shellcheck disable=SC2086 # option lists are split on purpose
    case "$kind" in
    plain)
        opts="--type plain -c $cipher -s $bits --sector-size $sector --offset $offset --skip $skip"
        [ "$large" = 1 ] && opts="$opts --iv-large-sectors"
        cryptsetup open -q $opts -d "$KEYS" --keyfile-offset "$key_off" "$L" "$name" </dev/null 2>"$err" ||
            { fail "cryptsetup open"; return; }
        ;;
    luks1 | luks2)
        keyf="-d $KEYS --keyfile-offset $key_off --keyfile-size 32"
        if [ "$dir" = a ]; then
            fopts="--type $kind -c $cipher -s $bits $PBKDF"
            [ "$kind" = luks2 ] && fopts="$fopts --sector-size $sector"
            [ "$offset" != - ] && fopts="$fopts --offset $offset"
            cryptsetup luksFormat -q $fopts $hdr $extra $keyf "$L" </dev/null 2>"$err" ||
                { fail "cryptsetup luksFormat"; return; }
        fi
        cryptsetup open -q --type "$kind" $hdr $keyf "$L" "$name" </dev/null 2>"$err" ||
            { fail "cryptsetup open"; return; }
        ;;
    *)
        echo "unknown kind $kind" >"$err"
        fail plan
        return
        ;;
    esac
    if [ "$dir" = a ]; then
        dd if="$WORK" of="/dev/mapper/$name" bs=65536 iflag=skip_bytes,count_bytes,fullblock \
            skip="$buf_off" count="$len" conv=fsync 2>"$err" || { fail "dd to the mapping"; return; }
    else
        # The whole mapping, but never more than the case's read-back area.
        dd if="/dev/mapper/$name" of="$WORK" bs=65536 iflag=count_bytes,fullblock oflag=seek_bytes \
            seek="$buf_off" count="$len" conv=notrunc,fsync 2>"$err" || { fail "dd from the mapping"; return; }
    fi
    rm -f "$err"
    dt=$(($(centiseconds) - t0))
    dt=$((dt / 100)).$((dt / 10 % 10))$((dt % 10))s
    pending="$pending $name:$id:$dir:$dt"
    loops="$loops $L $H"
}

# Report the pending cases (size of each mapping from sysfs, its dm table with the key
# hidden) and tear them down.
flush() {
    [ -n "$pending" ] || return 0
    local names p name rest id dir dt size d dmname table
    names=
    for p in $pending; do names="$names ${p%%:*}"; done
    # shellcheck disable=SC2086
    dmsetup table $names 2>&1 | awk '$1 ~ /^mx/ { sub(":", "", $1); $6 = "<key>"; print }' >"/tmp/tables.$worker"
    for p in $pending; do
        name=${p%%:*}
        rest=${p#*:}
        id=${rest%%:*}
        rest=${rest#*:}
        dir=${rest%%:*}
        dt=${rest#*:}
        size=
        for d in /sys/block/dm-*; do
            # (the other workers remove their mappings meanwhile)
            { read -r dmname <"$d/dm/name"; } 2>/dev/null || continue
            if [ "$dmname" = "$name" ]; then
                read -r size <"$d/size"
                break
            fi
        done
        while read -r dmname table; do
            [ "$dmname" = "$name" ] && echo "table $id $dir: $table"
        done <"/tmp/tables.$worker"
        if [ -n "$size" ]; then
            echo "case $id $dir: ok $((size * 512)) $dt"
        else
            echo "case $id $dir: FAIL the mapping $name disappeared"
        fi
    done
    # shellcheck disable=SC2086
    dmsetup remove $names || echo "matrix: dmsetup remove failed" >&2
    # shellcheck disable=SC2086
    losetup -d $loops || echo "matrix: losetup -d failed" >&2
    rm -f "/tmp/tables.$worker"
    pending='' loops='' batched=0
}

# claim N: true for the one worker that takes plan line N first (an O_EXCL create: dash's
# noclobber, no program started).
claim() {
    set -C
    true 2>/dev/null >"/tmp/claims/$1"
    set -- $?
    set +C
    return "$1"
}

# worker W: takes the plan lines no other worker has taken; results go to /tmp/out.W.
worker() {
    worker=$1 n=0 pending='' loops='' batched=0
    while read -r id dir kind cipher bits sector large offset skip len reg_off reg_len hdr_off hdr_len buf_off key_off extra <&3; do
        if claim "$n"; then
            run_case "$n"
            batched=$((batched + 1))
            [ "$batched" -ge "$BATCH" ] && flush
        fi
        n=$((n + 1))
    done 3<"$PLAN" >"/tmp/out.$1"
    flush >>"/tmp/out.$1"
}

echo "matrix: $(uname -r), $(cryptsetup --version), $(wc -l <"$PLAN") mappings, $JOBS jobs"
mkdir -p /tmp/claims
w=0
while [ "$w" -lt "$JOBS" ]; do
    worker "$w" &
    w=$((w + 1))
done
wait
w=0
while [ "$w" -lt "$JOBS" ]; do
    cat "/tmp/out.$w"
    w=$((w + 1))
done
sync
# `cryptsetup benchmark -c` where it has AF_ALG (the host may not): what scripts asking it
# whether a cipher is there get, with the default 256-bit key; the test compares lukskit's
# answer (lines "bench CIPHER: rc=N", then its standard output prefixed "bench CIPHER> "
# and its standard error "bench CIPHER! ").
for c in blowfish-cbc des3_ede-cbc camellia-xts kuznyechik-xts cast5-cbc; do
    cryptsetup benchmark -c "$c" >/tmp/bench.out 2>/tmp/bench.err
    echo "bench $c: rc=$?"
    sed "s/^/bench $c> /" /tmp/bench.out
    sed "s/^/bench $c! /" /tmp/bench.err
done
echo "matrix: done"
