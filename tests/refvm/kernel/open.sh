#!/bin/sh
# Run in the reference VM with lukskit installed. For each case the same volume is opened by
# cryptsetup and by lukskit; for each tool one block of lines:
#   == CASE TOOL
#   table: <dmsetup table --showkeys>      uuid: <DM UUID>     attr: <dmsetup attributes>
#   status: <each line of `cryptsetup status`>
# plus data checks across the two tools' mappings. The test compares the blocks.
export DM_DISABLE_UDEV=1
# lap NAME: "kernel NAME: took N s", the seconds since the last lap (the test prints these).
lap_t=$(cut -d' ' -f1 /proc/uptime)
lap() {
    now=$(cut -d' ' -f1 /proc/uptime)
    echo "kernel $1: took $(awk -v a="$lap_t" -v b="$now" 'BEGIN { printf "%.0f", b - a }') s"
    lap_t=$now
}
cs="cryptsetup -q --pbkdf pbkdf2 --pbkdf-force-iterations 1000"
printf secret > /tmp/k
head -c 32 /dev/zero | tr '\0' 'K' > /tmp/k32
dd if=/dev/zero of=/tmp/img bs=1M count=24 2>/dev/null
$cs luksFormat --type luks2 /dev/vda -d /tmp/k || exit 1
$cs luksFormat --type luks1 /dev/vdb -d /tmp/k || exit 1
$cs luksFormat --type luks2 --sector-size 4096 -c serpent-xts-plain64 /dev/vdc -d /tmp/k || exit 1
$cs luksFormat --type luks2 /tmp/img -d /tmp/k || exit 1
dd if=/dev/zero of=/tmp/img2 bs=1M count=24 2>/dev/null
$cs luksFormat --type luks2 --header /tmp/hdr2 /tmp/img2 -d /tmp/k || exit 1
capture() { # CASE TOOL NAME
    echo "== $1 $2"
    echo "table: $(dmsetup table --showkeys "$3" | sed 's/ [0-9]*:[0-9]* / DEV /')"
    echo "uuid: $(dmsetup info -c --noheadings -o uuid "$3")"
    echo "attr: $(dmsetup info -c --noheadings -o attr "$3")"
    cryptsetup status "$3" | sed 's/^/status: /'
}
run() { # CASE OPEN-ARGS...
    c=$1; shift
    cryptsetup open "$@" csmap || { echo "== $c cryptsetup open failed"; return; }
    capture "$c" cryptsetup csmap
    cryptsetup close csmap
    lukskit open "$@" lkmap || { echo "== $c lukskit open failed"; return; }
    capture "$c" lukskit lkmap
    lukskit status lkmap | sed "s/^/lkstatus: /"
    # cryptsetup closes lukskit's mapping.
    cryptsetup close lkmap && echo "$c: cryptsetup closed lukskit's mapping"
}
lap luksformat
run luks2 -d /tmp/k /dev/vda
run luks1 -d /tmp/k /dev/vdb
run luks2-4k-serpent -d /tmp/k /dev/vdc
run luks2-flags -d /tmp/k --readonly --allow-discards --perf-same_cpu_crypt --perf-submit_from_crypt_cpus --perf-no_read_workqueue --perf-no_write_workqueue /dev/vda
run plain --type plain -d /tmp/k32 -c aes-cbc-essiv:sha256 -s 256 --offset 8 --skip 16 /dev/vdb
run image -d /tmp/k /tmp/img
run detached --header /tmp/hdr2 -d /tmp/k /tmp/img2
# A volume on a device-mapper device: status names it /dev/mapper/NAME.
dmsetup create lower --table "0 $(blockdev --getsz /dev/vdc) linear /dev/vdc 0" || exit 1
run stacked -d /tmp/k /dev/mapper/lower
dmsetup remove lower
# luksSuspend / luksResume / resize: the same states as cryptsetup's, each tool resuming the
# other's suspended mapping.
lifecycle() { # TOOL-A TOOL-B: A opens, suspends, B resumes, A resizes down, then grows
    a=$1; b=$2; c="life-$a-$b"
    $a open -d /tmp/k /dev/vda lifemap || { echo "== $c open failed"; return; }
    dd if=/dev/urandom of=/tmp/blk bs=4096 count=1 2>/dev/null
    dd if=/tmp/blk of=/dev/mapper/lifemap bs=4096 count=1 conv=fsync 2>/dev/null
    $a luksSuspend lifemap; echo "$c suspend rc=$?"
    capture "$c-suspended" "$a" lifemap
    $b luksResume -d /tmp/k lifemap; echo "$c resume rc=$?"
    capture "$c-resumed" "$a" lifemap
    cmp -n 4096 /tmp/blk /dev/mapper/lifemap && echo "$c data intact after resume"
    $a resize -d /tmp/k --size 65536 lifemap; echo "$c resize rc=$?"
    capture "$c-shrunk" "$a" lifemap
    $a resize -d /tmp/k lifemap; echo "$c grow rc=$?"
    capture "$c-grown" "$a" lifemap
    $a luksResume -d /tmp/k lifemap 2>&1; echo "$c resume-not-suspended rc=$?"
    $a close lifemap
}
lap mappings
lifecycle cryptsetup cryptsetup
lifecycle lukskit lukskit
lifecycle lukskit cryptsetup
lifecycle cryptsetup lukskit
# --persistent and refresh: the flags each tool stores in the LUKS2 header (luksDump's Flags
# line), the mappings they give, and the other tool applying them on its next open.
persist() { # TOOL OTHER
    t=$1; u=$2; c="persist-$t"
    $cs luksFormat --type luks2 /dev/vdc -d /tmp/k || return
    $t open --persistent --allow-discards --perf-same_cpu_crypt -d /tmp/k /dev/vdc pmap
    echo "$c open rc=$?"
    capture "$c-opened" "$t" pmap
    cryptsetup luksDump /dev/vdc | grep '^Flags' | sed "s/^/$c stored: /"
    $t close pmap
    $u open -d /tmp/k /dev/vdc pmap; capture "$c-reopened" "$t" pmap
    $t refresh --persistent --perf-no_read_workqueue -d /tmp/k pmap; echo "$c refresh rc=$?"
    capture "$c-refreshed" "$t" pmap
    cryptsetup luksDump /dev/vdc | grep '^Flags' | sed "s/^/$c restored: /"
    $t refresh --allow-discards -d /tmp/k pmap; echo "$c refresh2 rc=$?"
    capture "$c-refreshed2" "$t" pmap
    $t close pmap
}
lap lifecycle
persist cryptsetup cryptsetup
persist lukskit cryptsetup
# Data: lukskit's mapping writes, cryptsetup's reads, and the other way round; ext4 + fsck.
lukskit open -d /tmp/k /dev/vda lkmap || exit 1
mkfs.ext4 -q /dev/mapper/lkmap && mkdir -p /m && mount /dev/mapper/lkmap /m && echo hello > /m/f && umount /m
lukskit close lkmap || echo "lukskit close failed"
cryptsetup open -d /tmp/k /dev/vda csmap && e2fsck -fn /dev/mapper/csmap >/dev/null 2>&1 && echo "data: fsck clean through cryptsetup"
mount /dev/mapper/csmap /m && cat /m/f | sed 's/^/data: read /' && umount /m
# lukskit refuses to close a mapping in use, closes cryptsetup's.
mount /dev/mapper/csmap /m; lukskit close csmap 2>&1; echo "close-in-use rc=$?"; umount /m
lukskit close /dev/mapper/csmap && echo "lukskit closed cryptsetup's mapping"
dmsetup ls
# The other on-disk formats (TCRYPT, BITLK, FVAULT2, loop-AES): kernel/formats.sh.
lap persist-and-data
. /refvm/files/formats.sh
lap other-formats
# The kernel engine (AF_ALG) and benchmark against cryptsetup's: kernel/kcapi.sh.
. /refvm/files/kcapi.sh
lap kcapi-engines
echo "kernel: done"
