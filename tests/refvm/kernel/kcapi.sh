# Sourced by kernel/open.sh (issue 33): the kernel engine (AF_ALG) of lukskit against
# lukskit's own engine and dm-crypt, and `lukskit benchmark` against `cryptsetup benchmark`.
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
echo "kcapi: took $(awk -v a="$kct0" '{ printf "%.0f", $1 - a }' /proc/uptime) s"
echo "kcapi: done"
