# Sourced by kernel/open.sh (issue 33): the kernel engine (AF_ALG) of lukskit against
# lukskit's own engine and dm-crypt (image and open --engine of the serving process),
# `lukskit benchmark` against `cryptsetup benchmark`, and `lukskit engines` against
# /proc/crypto before and after unloading aesni_intel.
# Lines: "kcapi: SPEC BITS SECTOR: kernel=same|DIFFER|failed dm-crypt=same|DIFFER"
#        "kcbench: TOOL CASE: <line>" (stdout and stderr of each benchmark, in order)
#        "kcapi: done"
kct0=$(cut -d' ' -f1 /proc/uptime)
head -c 64 /dev/urandom > /tmp/kck
head -c 40960 /dev/urandom > /tmp/kcp
for c in "aes-xts-plain64 256 512" "aes-xts-plain64 512 4096" "aes-cbc-essiv:sha256 128 512" \
    "aes-cbc-essiv:sha256 256 4096" "aes-cbc-plain64 256 512" "aes-xts-plain 512 512" \
    "aes-xts-plain64be 512 4096" "aes-xts-essiv:sha256 512 512" "aes-ctr-plain64 256 4096" \
    "aes-lrw-benbi 384 512" "aes-lrw-benbi 256 4096" "capi:xts(aes)-plain64 512 512" \
    "serpent-xts-plain64 512 4096" "twofish-xts-plain64 512 512" \
    "serpent-cbc-essiv:sha256 256 512" "twofish-cbc-essiv:sha256 256 4096" \
    "twofish-cbc-plain 256 512" "xchacha12,aes-adiantum-plain64 256 512" \
    "xchacha20,aes-adiantum-plain64 256 4096"; do
    set -- $c
    o="--type plain -c $1 -s $2 --sector-size $3 --skip 16 -d /tmp/kck"
    k=failed; d=failed
    rm -f /tmp/kci /tmp/kcl
    if lukskit image encrypt -q $o --engine kernel /tmp/kcp /tmp/kci 2>/tmp/kce &&
        lukskit image encrypt -q $o --engine lukskit /tmp/kcp /tmp/kcl; then
        if cmp -s /tmp/kci /tmp/kcl; then k=same; else k=DIFFER; fi
        if cryptsetup open $o /tmp/kci kcmap; then
            if head -c 40960 /dev/mapper/kcmap | cmp -s - /tmp/kcp; then d=same; else d=DIFFER; fi
            cryptsetup close kcmap
        fi
        # And back: the kernel engine decrypts what lukskit's engine wrote.
        if lukskit image decrypt -q $o --engine kernel /tmp/kcl /tmp/kcd && cmp -s /tmp/kcd /tmp/kcp
        then k="$k decrypt=same"; else k="$k decrypt=DIFFER"; fi
    else
        sed 's/^/kcapi-err: /' /tmp/kce
    fi
    echo "kcapi: $1 $2 $3: kernel=$k dm-crypt=$d"
done
rm -f /tmp/kci /tmp/kcl /tmp/kcd /tmp/kcp
lap kcapi-images
bench() { # CASE ARGS...
    n=$1; shift
    cryptsetup benchmark "$@" 2>&1 | sed "s/^/kcbench: cryptsetup $n: /"
    LUKSKIT_BENCH_MS=300 lukskit benchmark "$@" 2>&1 | sed "s/^/kcbench: lukskit $n: /"
}
bench table -i 200 --pbkdf-memory 32768
bench xts -c aes-xts-plain64
bench cbc128 -c serpent-cbc -s 128
bench badkey -c aes-xts-plain64 -s 128
bench missing -c nosuchcipher-xts-plain64
LUKSKIT_BENCH_MS=100 lukskit benchmark --engine all -c aes-xts-plain64 2>&1 | sed "s/^/kcbench: lukskit all: /"
lap kcapi-benchmark

# open --engine (issue 33): the serving process (FUSE + loop device, FUSE file) with each
# engine writes the plaintext; the images must be the same and dm-crypt must read it back.
# Lines: "kcopen: SPEC BITS SECTOR EXPOSURE: kernel=same|DIFFER auto=same|DIFFER dm-crypt=same|DIFFER"
#        "kcstatus: ENGINE SPEC: <status's engine line>"
modprobe fuse 2>/dev/null; modprobe loop 2>/dev/null
[ -e /dev/fuse ] || mknod /dev/fuse c 10 229
head -c 262144 /dev/urandom > /tmp/kcp
rm -rf /run/lukskit-engines
for c in "aes-xts-plain64 512 4096 loop" "aes-cbc-essiv:sha256 256 512 file" \
    "serpent-xts-plain64 256 512 loop" "xchacha12,aes-adiantum-plain64 256 4096 file" \
    "aes-cbc-lmk 256 512 loop"; do
    set -- $c
    o="--type plain -c $1 -s $2 --sector-size $3 -d /tmp/kck"
    [ "$4" = file ] && x=--no-loop || x=
    for e in lukskit kernel auto; do
        rm -f /tmp/kco-$e; truncate -s 2M /tmp/kco-$e
        if lukskit open $o --backend userspace $x --engine $e /tmp/kco-$e kcu 2>/tmp/kce; then
            lukskit status kcu | grep '  engine:' | sed "s/^/kcstatus: $e $1: /"
            if [ -n "$x" ]; then t=/run/lukskit/kcu/device; else t=/dev/mapper/kcu; fi
            dd if=/tmp/kcp of=$t bs=65536 conv=notrunc,fsync 2>/dev/null
            lukskit close kcu
        else
            sed "s/^/kcstatus: $e $1: refused: /" /tmp/kce
            rm -f /tmp/kco-$e
        fi
    done
    k=missing; a=missing; d=failed
    [ -e /tmp/kco-kernel ] && { cmp -s /tmp/kco-lukskit /tmp/kco-kernel && k=same || k=DIFFER; }
    [ -e /tmp/kco-auto ] && { cmp -s /tmp/kco-lukskit /tmp/kco-auto && a=same || a=DIFFER; }
    if cryptsetup open $o /tmp/kco-lukskit kcmap; then
        if head -c 262144 /dev/mapper/kcmap | cmp -s - /tmp/kcp; then d=same; else d=DIFFER; fi
        cryptsetup close kcmap
    fi
    echo "kcopen: $1 $2 $3 $4: kernel=$k auto=$a dm-crypt=$d"
done
lap kcapi-open-engines
# image --engine auto: measured (and remembered) as open's auto, the same bytes as lukskit's
# engine writes. Line: "kcimage: SPEC BITS SECTOR: auto=same|DIFFER|failed"
o="--type plain -c twofish-xts-plain64 -s 512 --sector-size 512 --skip 16 -d /tmp/kck"
a=failed
if lukskit image encrypt -q $o --engine auto /tmp/kcp /tmp/kcia 2>/tmp/kce &&
    lukskit image encrypt -q $o --engine lukskit /tmp/kcp /tmp/kcil; then
    cmp -s /tmp/kcia /tmp/kcil && a=same || a=DIFFER
else
    sed 's/^/kcimage-err: /' /tmp/kce
fi
echo "kcimage: twofish-xts-plain64 512 512: auto=$a"
rm -f /tmp/kcia /tmp/kcil
# auto remembers its measurement: one owner-only file per spec, key size and sector size.
for f in /run/lukskit-engines/*; do
    echo "kcauto: $(stat -c '%a' /run/lukskit-engines) $(stat -c '%a %U' "$f") $(tr -d '\n' < "$f")"
done

# engines (issue 33): the driver dm-crypt uses, as /proc/crypto says (the highest-priority
# entry of the name whose self-test passed and that is not internal), before and after
# aesni_intel is unloaded (and kept from loading again); status of a mapping served by the
# kernel engine names the same driver.
# Lines: "kcengines: STAGE: engines=<driver engines names> proc=<driver /proc/crypto picks>"
#        "kcengines: STAGE status: <status's engine line>"
pick() { # NAME: the driver the kernel's lookup takes, from /proc/crypto
    awk -v n="$1" '
        function done() { if (nm == n && st == "passed" && il != "yes" && (b == "" || pr > bp)) { b = dr; bp = pr } nm = ""; st = ""; il = "" }
        /^$/ { done(); next }
        { k = $0; sub(/ *:.*/, "", k); v = $0; sub(/^[^:]*: /, "", v) }
        k == "name" { nm = v } k == "driver" { dr = v } k == "priority" { pr = v + 0 }
        k == "selftest" { st = v } k == "internal" { il = v }
        END { done(); print b }' /proc/crypto
}
stage() { # STAGE
    lukskit engines aes-xts-plain64 > /tmp/kcg 2>&1
    sed "s/^/kcengines-out: $1: /" /tmp/kcg
    echo "kcengines: $1: engines=$(sed -n 's/^  driver: *\([^ ]*\).*/\1/p' /tmp/kcg) proc=$(pick 'xts(aes)')"
    lukskit engines --json aes-xts-plain64 | tr -d '\n ' | sed "s/^/kcengines-json: $1: /"; echo
    truncate -s 2M /tmp/kcs
    if lukskit open --type plain -c aes-xts-plain64 -s 512 -d /tmp/kck --backend userspace \
        --engine kernel /tmp/kcs kcs; then
        lukskit status kcs | grep '  engine:' | sed "s/^/kcengines: $1 status: /"
        # The kernel engine holds the driver: it cannot be unloaded under it.
        if rmmod aesni_intel 2>/dev/null; then echo "kcengines: $1 rmmod-while-served: done"
        else echo "kcengines: $1 rmmod-while-served: refused"; fi
        lukskit close kcs
    fi
}
stage loaded
mkdir -p /etc/modprobe.d
echo "install aesni_intel /bin/false" > /etc/modprobe.d/kcapi.conf
rmmod aesni_intel && echo "kcengines: rmmod: done"
stage unloaded
rm -f /etc/modprobe.d/kcapi.conf
modprobe aesni_intel
rm -f /tmp/kcs /tmp/kco-* /tmp/kcp /tmp/kcg
echo "kcapi: took $(awk -v a="$kct0" '{ printf "%.0f", $1 - a }' /proc/uptime) s"
echo "kcapi: done"
