# open of a LUKS2 device whose re-encryption is in progress, lukskit against cryptsetup
# 2.6.1 in the reference VM (crates/lukskit-cli/tests/refvm_reencrypt_open.rs). /dev/vda is
# a blank 64 MiB disk. For each state, both tools open the device in turn and print
# "== STATE TOOL" then table:, uuid:, status: and sum: lines (the test compares them).
# Ends with "RESULT ok", or prints "FAIL: ..." and exits non-zero.
export DM_DISABLE_UDEV=1
D=/dev/vda
KF=/root/kf
printf 'open during reencryption' > $KF
FAST="--pbkdf pbkdf2 --pbkdf-force-iterations 1000"
MB=40

fail() {
    echo "FAIL: $*"
    dmsetup ls
    exit 1
}

state() {
    j=$(cryptsetup luksDump --dump-json-metadata $D)
    if echo "$j" | grep -q in-reencryption; then echo crash
    elif echo "$j" | grep -q online-reencrypt; then echo clean
    else echo none; fi
}

sum() { dd if=/dev/mapper/$1 bs=1M count=$MB 2>/dev/null | sha256sum | cut -d' ' -f1; }

# Print what the mapping $2 opened by $1 looks like.
show() {
    echo "== $STATE $1"
    dmsetup table --showkeys $2 | sed 's/^/table: /'
    echo "uuid: $(dmsetup info -c --noheadings -o uuid $2)"
    $1 status $2 | sed 's/^/status: /'
    echo "sum: $(sum $2)"
}

open_both() {
    # $1: the tool that opens first (it recovers a hot zone in flight).
    for t in $1 $2; do
        $t open -d $KF $D v || fail "$STATE: $t open"
        show $t v
        $t close v || fail "$STATE: $t close"
        dmsetup info v >/dev/null 2>&1 && fail "$STATE: $t close left v"
    done
}

cryptsetup luksFormat -q --type luks2 $FAST -d $KF $D || fail luksFormat
cryptsetup open -d $KF $D v || fail "cryptsetup open"
dd if=/dev/urandom of=/dev/mapper/v bs=1M count=$MB conv=fsync 2>/dev/null
echo "plain: $(sum v)"
cryptsetup close v
# The whole disk (header and ciphertext) as the crash cases start from it: section 1
# re-encrypts the data to a new key, so restoring the header alone would not do.
dd if=$D of=/root/base.img bs=1M 2>/dev/null || fail backup

# 1. Initialized by real cryptsetup, nothing done yet.
cryptsetup reencrypt -q --init-only $FAST -d $KF -c aes-cbc-essiv:sha256 -s 256 $D \
    || fail "cryptsetup --init-only"
STATE=init; echo "state $STATE: $(state)"
open_both cryptsetup lukskit
# lukskit's open, then lukskit resumes online on that mapping (found by the device).
lukskit open -d $KF $D v || fail "init: lukskit open for resume"
lukskit reencrypt -q --resume-only -d $KF --hotzone-size 1M $D > /root/re.out 2>&1 \
    || { cat /root/re.out; fail "lukskit online resume on lukskit's mapping"; }
echo "resumed online: $(state), sum: $(sum v)"
dmsetup table v | awk '{print "after resume:", $1, $2, $3, $4}'
lukskit close v || fail "close after resume"

# 2. lukskit runs, stopped at its Nth metadata write (crash injection): a clean state with
#    two segments, or a hot zone in flight. lukskit opens first (recovering), then cryptsetup;
#    cryptsetup finishes, both open the result.
for n in ${CRASH_POINTS:-10 13 16 19 22 25}; do
    dd if=/root/base.img of=$D bs=1M conv=fsync 2>/dev/null || fail restore
    LUKSKIT_CRASH_AT=write:$n lukskit reencrypt -q --force-offline-reencrypt -d $KF $FAST \
        -c aes-xts-plain64 -s 256 --resilience checksum --hotzone-size 1M $D
    rc=$?
    STATE=w$n
    echo "state $STATE: $(state) (exit $rc)"
    dmsetup ls | grep -qv "No devices found" && fail "$STATE: mappings left"
    [ "$(state)" = none ] && continue
    open_both lukskit cryptsetup
    echo "state $STATE after open: $(state)"
    cryptsetup reencrypt -q --resume-only -d $KF --force-offline-reencrypt $D \
        || fail "$STATE: cryptsetup finishes"
    echo "state $STATE finished: $(state)"
    STATE=w$n-done
    open_both lukskit cryptsetup
done

# 3. reencrypt --encrypt --init-only --header FILE DEVICE NAME activates NAME, for both
#    tools (cryptsetup activates only after an encryption's initialization).
dd if=/dev/urandom of=$D bs=1M count=$MB conv=fsync 2>/dev/null
dd if=$D bs=1M count=$MB 2>/dev/null | sha256sum | cut -d' ' -f1 > /root/plain2
echo "plain2: $(cat /root/plain2)"
for t in cryptsetup lukskit; do
    rm -f /root/h.hdr
    $t reencrypt -q --encrypt --init-only --header /root/h.hdr $FAST -d $KF \
        --uuid 11111111-2222-3333-4444-555555555555 -c aes-cbc-essiv:sha256 -s 256 $D v \
        > /root/init.out || fail "$t reencrypt --encrypt --init-only NAME"
    STATE=initname
    echo "== $STATE $t"
    sed 's/^/initout: /' /root/init.out
    dmsetup table --showkeys v | sed 's/^/table: /'
    echo "uuid: $(dmsetup info -c --noheadings -o uuid v)"
    echo "namesum: $(sum v)"
    $t close v || fail "$t close after --init-only NAME"
done
echo "RESULT ok"
