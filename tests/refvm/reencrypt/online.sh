# Online LUKS2 re-encryption in the reference VM (crates/lukskit-cli/tests/refvm_reencrypt.rs).
# The case is in /refvm/files/case; the volume is /dev/vda (64 MiB). Every case ends with
# "RESULT <case> ok" on stdout, or prints "FAIL: ..." and exits non-zero.
#
#   io       ext4 on a lukskit kernel mapping, mounted, re-encrypted online by lukskit to a
#            new key and cipher while a checksummed write / drop-caches / read-back loop runs
#            on it; then the files verify, e2fsck is clean, and real cryptsetup opens it.
#   fio:TOOL  ext4 on a mapping opened by TOOL (lukskit or cryptsetup, the control), mounted;
#            fio verify jobs (random writes with crc32c verify headers and a verify backlog,
#            four files, two with O_DIRECT and two buffered with fsync) start, then TOOL
#            re-encrypts the volume online to a new key and cipher; fio must still be running
#            when the re-encryption ends, then it is stopped (its trigger file), must report no
#            error, and a verify-only pass over every file must pass. Needs run.sh --fio.
#   cs-kill  cryptsetup's online re-encryption killed with kill -9 at a random point; the
#            helper devices are torn down as after a crash (the hot zone fails I/O), then
#            cryptsetup open recovers it and lukskit resumes it online (--resume-only).
#   lk-kill  the other way round (a volume made by cryptsetup, re-encrypted to a new key and
#            cipher by lukskit, killed with kill -9): cryptsetup open recovers and cryptsetup
#            finishes online; lukskit opens the result.
#   dshift-kill  offline --decrypt --header FILE of a device with its header at the start
#            (the data moves over the old header area): cryptsetup killed with kill -9,
#            finished by lukskit, then the other way round; the plain ext4 is intact.
#   dshift-online-kill  the same decryption ONLINE: ext4 on the mapping, mounted, under the
#            checksummed I/O loop; one tool killed with kill -9 in the middle of its online
#            run, the stack torn down as after a crash, the other tool recovers it (open
#            --header FILE) and finishes online; both directions; the files written before
#            the kill verify, e2fsck of the plain device is clean.
#   init-mismatch  luks2-reencryption-test [4]: an online re-encryption under a mapping
#            whose key description no longer matches the header fails and leaves the header
#            as it was (cryptsetup checks the mapping before it writes the metadata); each
#            tool.
#   fixed-online  luks2-reencryption-test [17]: a mapping resized smaller than the data is
#            re-encrypted online; only the mapping's size is (the rest of the data stays as
#            it was), --device-size must be the mapping's size, a size that is not whole new
#            sectors is refused; each tool.
#   reduce-online  a re-encryption with --reduce-device-size 8M (the data moves 8 MiB
#            further into the device: room for a larger header) under a live mapping. The
#            mapping of the whole data area is refused (it would not fit after the shift:
#            cryptsetup writes the metadata first and leaves the header in re-encryption,
#            lukskit writes nothing); then the ext4 on it is shrunk, the mapping resized to the
#            data less 8 MiB, mounted, and re-encrypted online under the checksummed I/O loop:
#            the files verify, e2fsck is clean, the mapping ends 8 MiB further on. Each tool;
#            the other tool opens the result.
#   reduce-kill  the online re-encryption of reduce-online (--reduce-device-size 8M under a
#            mapping resized to the data less 8 MiB, ext4 mounted, the checksummed I/O loop
#            running) killed with kill -9 in the middle, the power cut at the kill, the stack
#            torn down; the other tool recovers it (open) and finishes online (--resume-only);
#            cryptsetup killed first, then lukskit. The files written and fsync'd before the
#            kill verify, the mapping ends 8 MiB further on, e2fsck is clean, the killed tool
#            opens the result.
#   status-online  `status` of a LUKS2 mapping in re-encryption, by each tool, the same
#            words: an encryption with a data shift initialized with a name (the mapping is
#            dm-linear segments), then resumed online by cryptsetup (the helper stack), and an
#            online re-encryption by cryptsetup of an opened volume, caught midway.
#   luks1-kill  LUKS1 re-encryption (cryptsetup's legacy offline algorithm, its LUKS-<uuid>
#            .log/.org/.new files in the current directory) to a new key and cipher: one tool
#            interrupted (SIGTERM, see below) in the middle, the other resumes it from the
#            same directory;
#            cryptsetup then lukskit, then the other way round; the plaintext's checksum is
#            the same and both tools open the result. On an image file on /dev/vda.
export DM_DISABLE_UDEV=1
CASE=$(cat /refvm/files/case)
CASE_ARG=$CASE
# luks1-kill:PAIRS (e.g. luks1-kill:cryptsetup:cryptsetup) runs only those directions.
case "$CASE" in fio:*) FIO_TOOL=${CASE#fio:}; CASE=fio ;; esac
# debug:CASE runs CASE with kill_midway's hot-zone positions on stderr.
case "$CASE" in debug:*) KILL_DEBUG=1 CASE=${CASE#debug:} ;; esac
# reduce-kill:FIRST:LO:HI[:DELAY[:SECOND]] (to investigate): only FIRST is killed, when the
# hot zone has moved LO to HI % of the device, 0 to DELAY ms later (300), and SECOND recovers
# (the other tool); the header is dumped to stderr after the kill and the hot zone's moves too.
case "$CASE" in reduce-kill:*)
    set -- $(echo "${CASE#reduce-kill:}" | tr ':' ' ')
    REDUCE_FIRST=$1 KILL_AT="$2 $3" KILL_DELAY=${4:-300} REDUCE_SECOND=${5:-} KILL_DEBUG=1; CASE=reduce-kill ;;
esac
case "$CASE" in luks1-kill:*) LUKS1_PAIRS=${CASE#luks1-kill:} LUKS1_DEBUG=1; CASE=luks1-kill ;; esac
D=/dev/vda
KF=/root/kf
printf 'online reencryption pass' > $KF
FAST="--pbkdf pbkdf2 --pbkdf-force-iterations 1000"
mkdir -p /mnt /root/m

fail() {
    echo "FAIL: $CASE: $*"
    dmsetup ls >&2
    dmsetup table >&2 2>/dev/null | sed 's/[0-9a-f]\{32,\}/KEY/' >&2
    exit 1
}

rnd() { od -An -N2 -tu2 /dev/urandom | tr -d ' '; }

# Files with random content and a manifest of their checksums.
populate() {
    i=0
    : > /root/manifest
    while [ $i -lt 12 ]; do
        dd if=/dev/urandom of=/mnt/p$i bs=64k count=$((1 + $(rnd) % 16)) 2>/dev/null
        i=$((i + 1))
    done
    sync
    (cd /mnt && sha256sum p* > /root/manifest)
}

verify_files() {
    echo 3 > /proc/sys/vm/drop_caches
    (cd /mnt && sha256sum -c -s /root/manifest) || fail "checksums differ ($1)"
}

# The checksummed I/O loop: write a file, sync it, drop the caches, read every file back.
writer() {
    i=0
    : > /root/wmanifest
    while [ ! -e /root/stop ]; do
        dd if=/dev/urandom of=/mnt/w$i bs=16k count=$((1 + $(rnd) % 32)) conv=fsync 2>/dev/null \
            || { echo "writer: write $i failed" > /root/werr; return; }
        (cd /mnt && sha256sum w$i >> /root/wmanifest)
        echo 3 > /proc/sys/vm/drop_caches
        (cd /mnt && sha256sum -c -s /root/wmanifest) \
            || { echo "writer: read-back after w$i differs" > /root/werr; return; }
        # Keep the file system from filling up: rewrite old files in place.
        [ $i -ge 40 ] && { rm -f /mnt/w$((i - 40)); sed -i "/ w$((i - 40))\$/d" /root/wmanifest; }
        i=$((i + 1))
        echo $i > /root/wcount
    done
}

# The header is $HDR when set (a header moved out to a file), else the device's own.
in_reencryption() { cryptsetup luksDump ${HDR:-$D} | grep -q 'online-reencrypt'; }

# Run "$@" with a deadline of $1 seconds: a step that hangs (I/O stuck in a suspended
# device) fails the case at once with the device stack and the kernel's list of blocked
# tasks (sysrq w, in the kernel log printed here), instead of running into the VM's timeout.
guard() {
    secs=$1
    shift
    "$@" &
    gp=$!
    t=0
    while kill -0 $gp 2>/dev/null; do
        sleep 1
        t=$((t + 1))
        if [ $t -ge "$secs" ]; then
            echo "HUNG for ${secs} s: $*"
            dmsetup info -c -o name,attr,open,major,minor
            echo w > /proc/sysrq-trigger
            sleep 1
            dmesg | tail -n 120
            fail "hung: $*"
        fi
    done
    wait $gp
}

# A kill -9 in the middle of an online run is taken as a crash: the power is cut at the kill
# (power_cut, called by kill_midway): from then on nothing written through the mapping
# reaches the disk, as after a power loss; what the file system had fsync'd before is on the
# disk (in its journal, replayed at the next mount). Not the hot zone alone: a file system
# still running on the rest writes its dirty metadata back at the unmount, and where that
# metadata lies in the failing hot zone the kernel drops it ("lost async page write") and
# ext4 then clears its journal ("Couldn't clean up the journal"), which loses fsync'd files
# whichever tool ran (seen with cryptsetup killed, 2026-11-27).
power_cut() {
    n=$(dmsetup table v | awk '{s += $2} END {print s}')
    # The error table goes in v's inactive slot first (replacing a next table the kill left).
    guard 60 dmsetup load v --table "0 $n error" || fail "cannot load the power cut into v"
    # I/O the kill left queued below v (a suspended hot zone or overlay) was never completed:
    # it fails, as at a power loss. Then v switches to the error table: a suspend waits for
    # the I/O in flight below it, which no longer waits on a suspended device.
    for hz in $(dmsetup ls | awk '/-hotzone-/ {print $1}'); do
        hn=$(dmsetup table $hz | awk '{print $2}')
        guard 60 dmsetup load $hz --table "0 $hn error" && guard 60 dmsetup resume $hz \
            || fail "cannot fail $hz"
    done
    if suspended v-overlay; then guard 60 dmsetup resume v-overlay || fail "cannot resume v-overlay"; fi
    suspended v || guard 60 dmsetup suspend --noflush --nolockfs v || fail "cannot suspend v"
    guard 60 dmsetup resume v || fail "cannot cut v's power"
    echo "power cut at the kill"
}

# What the crash leaves is the helper stack, maybe with the hot-zone device suspended, and
# (killed between the two steps of a table switch, both tools suspend the overlay, then the
# hot zone, then resume the overlay) the overlay suspended too, with its next table loaded.
# Fail the hot zone's I/O (as cryptsetup's fatal path does), resume whatever is still
# suspended (its queued I/O fails), then unmount and remove the stack.
suspended() { dmsetup info -c --noheadings -o attr "$1" 2>/dev/null | grep -q '^..s'; }
teardown_after_kill() {
    for hz in $(dmsetup ls | awk '/-hotzone-/ {print $1}'); do
        n=$(dmsetup table $hz | awk '{print $2}')
        guard 60 dmsetup load $hz --table "0 $n error" && guard 60 dmsetup resume $hz \
            || fail "cannot fail $hz"
    done
    for dev in v-overlay v; do
        if suspended $dev; then
            echo "resuming $dev, left suspended by the kill"
            guard 60 dmsetup resume $dev || fail "cannot resume $dev"
        fi
    done
    echo "after the teardown's resumes:"
    dmsetup info -c -o name,attr | sed 's/^/  /'
    guard 180 umount /mnt 2>/dev/null || guard 60 umount -l /mnt
    dmsetup remove v 2>/dev/null || { sleep 1; dmsetup remove v; } || fail "cannot remove v"
    dmsetup remove v-overlay 2>/dev/null
    for hz in $(dmsetup ls | awk '/-hotzone-/ {print $1}'); do dmsetup remove $hz; done
    [ "$(dmsetup ls)" = "No devices found" ] || fail "stack left: $(dmsetup ls)"
}

# The start sector of the hot zone in v-overlay's table (its line mapping the hot-zone
# device, linear or crypt), empty while there is none.
hotzone_start() {
    hzdev=$(dmsetup ls 2>/dev/null | awk '/-hotzone-/ {print $1; exit}')
    [ -n "$hzdev" ] || return 0
    mm=$(dmsetup info -c --noheadings -o major,minor "$hzdev" 2>/dev/null | tr -d ' ')
    # linear: the device is field 4; crypt: field 7.
    dmsetup table v-overlay 2>/dev/null |
        awk -v mm="$mm" '($3 == "linear" && $4 == mm) || ($3 == "crypt" && $7 == mm) {print $1}'
}

# Start "$@" in the background, wait until its dm stack has a hot zone, then until the hot
# zone has moved a random 20 to 60 % of the device from where it was first seen (KILL_AT="LO
# HI" sets other bounds), then kill -9 it 0 to 300 ms (KILL_DELAY) later: at a random step
# of that hot zone (its copy, the header update, the table switch). Progress is read from
# the table, not the clock: a random delay of 0-2.5 s after the second hot zone reached the
# end of the run on a fast machine (CI, 2026-11-29) and stayed in the first zones on a slow
# one. Fails unless the re-encryption was caught in the middle.
kill_midway() {
    "$@" > /root/run.out 2>&1 &
    pid=$!
    set -- ${KILL_AT:-20 60}
    lo=$1 hi=$2
    t=0 s0= target=
    while :; do
        kill -0 $pid 2>/dev/null || fail "the run ended before the kill point: $(cat /root/run.out)"
        hz=$(hotzone_start)
        if [ -n "$KILL_DEBUG" ]; then
            echo "hot zone at ${hz:-none} (poll $t):" >&2
            dmsetup table v-overlay 2>&1 | sed 's/[0-9a-f]\{32,\}/KEY/; s/^/  /' >&2
        fi
        if [ -n "$hz" ]; then
            if [ -z "$s0" ]; then
                s0=$hz
                total=$(dmsetup table v-overlay | awk '{s += $2} END {print s}')
                pct=$((lo + $(rnd) % (hi - lo + 1)))
                target=$((total / 100 * pct))
            fi
            moved=$((hz - s0))
            [ $moved -ge 0 ] || moved=$((-moved))
            [ $moved -lt $target ] || break
        fi
        sleep 0.05
        t=$((t + 1))
        [ $t -lt 3600 ] || fail "the hot zone did not reach the kill point in 180 s"
    done
    ms=$(($(rnd) % ${KILL_DELAY:-300}))
    sleep $((ms / 1000)).$(printf %03d $((ms % 1000)))
    kill -9 $pid || fail "the run was already over"
    wait $pid
    power_cut
    echo "killed ${ms} ms after the hot zone moved ${pct} % of the device or more"
    dmsetup ls
    dmsetup info -c -o name,uuid,attr 2>/dev/null | grep -E 'hotzone|overlay' \
        | sed 's/-[0-9a-f]\{32\}-/-UUID-/'
    in_reencryption || fail "the kill came after the end of the re-encryption"
}

# A fresh LUKS2 volume (64 MiB disk: 48 MiB of data) opened by $1 as v, ext4 on it with the
# populated files, shrunk with its mapping to the data less 8 MiB (what is left after
# --reduce-device-size 8M), mounted on /mnt.
shrunk_for_the_shift() {
    cryptsetup luksFormat -q --type luks2 $FAST -d $KF $D || fail luksFormat
    $1 open -d $KF $D v || fail "$1 open"
    mkfs.ext4 -q /dev/mapper/v || fail mkfs
    mount -o noatime /dev/mapper/v /mnt || fail mount
    populate
    umount /mnt
    e2fsck -fy /dev/mapper/v > /dev/null 2>&1
    resize2fs /dev/mapper/v 40M > /dev/null 2>&1 || fail "resize2fs"
    $1 resize v --size 81920 -d $KF || fail "$1 resize"
    mount -o noatime /dev/mapper/v /mnt || fail "mount after resize"
}

# The file system after an interruption: mount (replays the journal), files, e2fsck.
check_fs() {
    mount -o noatime /dev/mapper/v /mnt || fail "mount after $1"
    verify_files "$1"
    umount /mnt
    e2fsck -fn /dev/mapper/v > /root/fsck.out 2>&1 || { cat /root/fsck.out; fail "e2fsck after $1"; }
}

case $CASE in
io)
    cryptsetup luksFormat -q --type luks2 $FAST -d $KF $D || fail luksFormat
    lukskit open -d $KF $D v || fail "lukskit open"
    dmsetup table v | awk '{print "before:", $4}'
    mkfs.ext4 -q /dev/mapper/v || fail mkfs
    mount -o noatime /dev/mapper/v /mnt || fail mount
    populate
    writer &
    wpid=$!
    # `status v` while the stack is up (v linear over v-overlay): the mapping is found
    # through the overlay (type, data device). (It then waits for the header's lock, which
    # lukskit's run holds to its end, so it reads the header as the run left it.)
    : > /root/st.out
    (
        while [ ! -e /root/stop ]; do
            if dmsetup info v-overlay > /dev/null 2>&1; then
                lukskit status v > /root/st.out 2>&1
                break
            fi
            sleep 0.2
        done
    ) &
    spid=$!
    lukskit reencrypt -d $KF --cipher aes-cbc-essiv:sha256 --key-size 256 --hotzone-size 1M \
        --progress-json $D > /root/re.out 2>&1
    rc=$?
    touch /root/stop
    wait $wpid
    wait $spid
    sed 's/^/during: /' /root/st.out
    cat /root/re.out | grep -v '^{' 
    echo "lukskit reencrypt: $rc, progress lines: $(grep -c '^{' /root/re.out)"
    [ $rc = 0 ] || fail "lukskit reencrypt online: $(cat /root/re.out)"
    [ -e /root/werr ] && fail "$(cat /root/werr)"
    echo "writer iterations during the run: $(cat /root/wcount)"
    [ "$(cat /root/wcount)" -ge 3 ] || fail "the writer did not run during the re-encryption"
    dmsetup ls | awk '{print "device:", $1}'
    dmsetup table v | awk '{print "after:", $1, $2, $3, $4, $6, $8}'
    verify_files "the run"
    (cd /mnt && sha256sum -c -s /root/wmanifest) || fail "writer files differ after the run"
    cat /root/wmanifest >> /root/manifest
    umount /mnt
    lukskit close v || fail "lukskit close"
    in_reencryption && fail "still in re-encryption"
    cryptsetup luksDump $D | awk '/cipher:/ {print "header", $1, $2; exit}'
    cryptsetup open -d $KF $D v || fail "cryptsetup open"
    check_fs "cryptsetup open"
    cryptsetup close v
    ;;
fio)
    command -v fio >/dev/null || fail "no fio in the guest (run.sh --fio)"
    up() { cut -d' ' -f1 /proc/uptime; }
    cryptsetup luksFormat -q --type luks2 $FAST -d $KF $D || fail luksFormat
    $FIO_TOOL open -d $KF $D v || fail "$FIO_TOOL open"
    dmsetup table v | awk '{print "before:", $4}'
    mkfs.ext4 -q /dev/mapper/v || fail mkfs
    mount -o noatime /dev/mapper/v /mnt || fail mount
    mkdir /mnt/fio
    # Every block fio writes carries a header (offset, sequence number) and a crc32c of the
    # block; fio reads back and checks the last 32 blocks written after every 32 writes
    # (verify_backlog) and the whole file at the end of each loop over it.
    cat > /root/job.fio <<'JOB'
[global]
directory=/mnt/fio
ioengine=psync
bs=4k
size=4M
nrfiles=1
rw=randwrite
verify=crc32c
verify_fatal=1
loops=100000
verify_backlog=32
[direct-a]
direct=1
[direct-b]
direct=1
bs=16k
[buffered-a]
fsync=8
[buffered-b]
fsync=32
bs=8k
JOB
    # The last pass: every block of every file read back and checked (no backlog, one loop:
    # fio replays the same offsets and checks each block's header and crc).
    sed -e 's/^loops=.*/loops=1/' -e '/^verify_backlog=/d' /root/job.fio > /root/verify.fio
    fio --trigger-file=/root/fio.stop /root/job.fio > /root/fio.out 2>&1 &
    fpid=$!
    # Wait until every job has laid out its file and is writing.
    t=0
    while [ "$(ls /mnt/fio 2>/dev/null | wc -l)" -lt 4 ]; do
        kill -0 $fpid 2>/dev/null || fail "fio ended before the re-encryption: $(cat /root/fio.out)"
        sleep 0.2; t=$((t + 1)); [ $t -lt 600 ] || fail "fio did not start"
    done
    sleep 2
    kill -0 $fpid 2>/dev/null || fail "fio ended before the re-encryption: $(cat /root/fio.out)"
    t_fio=$(up)
    t_start=$(up)
    if [ $FIO_TOOL = lukskit ]; then
        lukskit reencrypt -d $KF --cipher aes-cbc-essiv:sha256 --key-size 256 --hotzone-size 1M \
            --progress-json $D > /root/re.out 2>&1
    else
        cryptsetup reencrypt -q -d $KF --cipher aes-cbc-essiv:sha256 --key-size 256 \
            --hotzone-size 1M --progress-json $D > /root/re.out 2>&1
    fi
    rc=$?
    t_end=$(up)
    # fio must still be running: it overlapped the whole re-encryption, every hot zone.
    if kill -0 $fpid 2>/dev/null; then running=yes; else running=no; fi
    grep -v '^{' /root/re.out
    echo "$FIO_TOOL reencrypt: $rc, progress lines: $(grep -c '^{' /root/re.out)"
    echo "fio running at the end of the re-encryption: $running"
    echo "timeline: fio writing at ${t_fio}s, re-encryption ${t_start}s to ${t_end}s"
    [ $rc = 0 ] || fail "$FIO_TOOL reencrypt online: $(cat /root/re.out)"
    [ $running = yes ] || fail "fio ended during the re-encryption: $(cat /root/fio.out)"
    touch /root/fio.stop
    wait $fpid
    frc=$?
    echo "fio stopped at $(up)s: exit $frc"
    grep -E 'err=|verify|write:|read:|bad|fail' /root/fio.out | sed 's/^/fio: /'
    [ $frc = 0 ] || fail "fio failed during the re-encryption: $(cat /root/fio.out)"
    grep -q 'err= 0' /root/fio.out || fail "no fio job reported: $(cat /root/fio.out)"
    grep -E 'err= *[1-9]|verify failed|bad magic|crc32c: verify' /root/fio.out && fail "fio reported errors"
    echo 3 > /proc/sys/vm/drop_caches
    fio --verify_only /root/verify.fio > /root/fio.verify 2>&1
    vrc=$?
    grep -E 'err=|read:' /root/fio.verify | sed 's/^/verify-only: /'
    [ $vrc = 0 ] || fail "fio verify-only pass: $(cat /root/fio.verify)"
    grep -E 'err= *[1-9]|verify failed' /root/fio.verify && fail "fio verify-only pass reported errors"
    echo "fio verified after the re-encryption: $(grep -c 'err= 0' /root/fio.verify) jobs"
    umount /mnt
    $FIO_TOOL close v || fail "$FIO_TOOL close"
    in_reencryption && fail "still in re-encryption"
    cryptsetup luksDump $D | awk '/cipher:/ {print "header", $1, $2; exit}'
    # The other tool opens the result; the file system is clean and fio's files verify.
    other=cryptsetup
    [ $FIO_TOOL = cryptsetup ] && other=lukskit
    $other open -d $KF $D v || fail "$other open"
    dmsetup table v | awk '{print "after:", $1, $2, $3, $4}'
    e2fsck -fn /dev/mapper/v > /root/fsck.out 2>&1 || { cat /root/fsck.out; fail "e2fsck"; }
    mount -o noatime /dev/mapper/v /mnt || fail "mount after $other open"
    fio --verify_only /root/verify.fio > /root/fio.verify 2>&1 || fail "fio verify-only after $other open: $(cat /root/fio.verify)"
    echo "fio verified after $other open: $(grep -c 'err= 0' /root/fio.verify) jobs"
    umount /mnt
    $other close v
    ;;
cs-kill)
    cryptsetup luksFormat -q --type luks2 $FAST -d $KF $D || fail luksFormat
    cryptsetup open -d $KF $D v || fail "cryptsetup open"
    mkfs.ext4 -q /dev/mapper/v || fail mkfs
    mount -o noatime /dev/mapper/v /mnt || fail mount
    populate
    kill_midway cryptsetup reencrypt -q -d $KF --cipher aes-cbc-essiv:sha256 --key-size 256 \
        --resilience journal --hotzone-size 1M $D
    teardown_after_kill
    cryptsetup luksDump $D | grep -E '^  [0-9]+: (crypt|linear)|in-reencryption' | tr -s ' \t' ' '
    cryptsetup open -d $KF $D v || fail "cryptsetup open (recovery)"
    dmsetup table v | awk '{print "resumed from:", $1, $2, $3, $4}'
    mount -o noatime /dev/mapper/v /mnt || fail "mount after recovery"
    verify_files "recovery"
    lukskit reencrypt --resume-only -d $KF --hotzone-size 1M $D > /root/re.out 2>&1 \
        || fail "lukskit reencrypt --resume-only: $(cat /root/re.out)"
    grep -v Progress /root/re.out | tr -d '\033' | sed 's/\[2K//g'
    dmsetup ls | awk '{print "device:", $1}'
    dmsetup table v | awk '{print "after:", $1, $2, $3, $4}'
    verify_files "lukskit's resume"
    umount /mnt
    cryptsetup close v
    in_reencryption && fail "still in re-encryption"
    lukskit open -d $KF $D v || fail "lukskit open"
    check_fs "lukskit open"
    lukskit close v
    cryptsetup open -d $KF $D v || fail "cryptsetup open"
    check_fs "cryptsetup open"
    cryptsetup close v
    ;;
lk-kill)
    cryptsetup luksFormat -q --type luks2 $FAST -d $KF $D || fail luksFormat
    cryptsetup open -d $KF $D v || fail "cryptsetup open"
    mkfs.ext4 -q /dev/mapper/v || fail mkfs
    mount -o noatime /dev/mapper/v /mnt || fail mount
    populate
    kill_midway lukskit reencrypt -d $KF --cipher serpent-xts-plain64 --key-size 512 \
        --resilience checksum --hotzone-size 1M $D
    teardown_after_kill
    cryptsetup luksDump $D | grep -E '^  [0-9]+: (crypt|linear)|in-reencryption' | tr -s ' \t' ' '
    cryptsetup open -d $KF $D v || fail "cryptsetup open (recovery)"
    dmsetup table v | awk '{print "resumed from:", $1, $2, $3, $4}'
    mount -o noatime /dev/mapper/v /mnt || fail "mount after recovery"
    verify_files "recovery"
    cryptsetup reencrypt -q --resume-only -d $KF --hotzone-size 1M $D > /root/re.out 2>&1 \
        || fail "cryptsetup reencrypt --resume-only: $(cat /root/re.out)"
    dmsetup ls | awk '{print "device:", $1}'
    dmsetup table v | awk '{print "after:", $1, $2, $3, $4}'
    verify_files "cryptsetup's resume"
    umount /mnt
    cryptsetup close v
    in_reencryption && fail "still in re-encryption"
    cryptsetup luksDump $D | awk '/cipher:/ {print "header", $1, $2; exit}'
    cryptsetup open -d $KF $D v || fail "cryptsetup open"
    check_fs "cryptsetup open"
    cryptsetup close v
    lukskit open -d $KF $D v || fail "lukskit open"
    check_fs "lukskit open"
    lukskit close v
    ;;
dshift-kill)
    # Offline decryption of a device with its header at the start (--decrypt --header FILE:
    # the header moves out to FILE, the data down over it): each tool killed with kill -9 in
    # the middle, the other finishes; the plain ext4 left on the device is intact.
    # A run can be over in a few hundred ms: the header FILE is polled with grep (cheaper than
    # luksDump), the kill comes 0-400 ms after the start was seen, and a run that ended before
    # the kill (exit 0) is tried again, at most 5 times.
    for first in cryptsetup lukskit; do
        if [ $first = cryptsetup ]; then second=lukskit; else second=cryptsetup; fi
        H=/root/h-$first
        caught=
        for attempt in 1 2 3 4 5; do
        rm -f $H
        cryptsetup luksFormat -q --type luks2 $FAST --offset 2048 -d $KF $D || fail luksFormat
        cryptsetup open -d $KF $D v || fail "cryptsetup open"
        mkfs.ext4 -q /dev/mapper/v || fail mkfs
        mount -o noatime /dev/mapper/v /mnt || fail mount
        populate
        umount /mnt
        cryptsetup close v
        $first reencrypt -q --decrypt --force-offline-reencrypt --header $H -d $KF $D \
            > /root/run.out 2>&1 &
        pid=$!
        t=0
        over=
        while ! grep -q online-reencrypt-v3 $H 2>/dev/null; do
            if ! kill -0 $pid 2>/dev/null; then
                wait $pid || fail "$first failed (exit $?): $(cat /root/run.out)"
                over=1
                break
            fi
            sleep 0.01
            t=$((t + 1))
            [ $t -lt 10000 ] || fail "no initialization after 100 s"
        done
        if [ -z "$over" ]; then
            ms=$(($(rnd) % 400))
            sleep 0.$(printf %03d $ms)
            kill -9 $pid 2>/dev/null || over=1
            wait $pid
            cryptsetup luksDump $H | grep -q online-reencrypt-v3 || over=1
        fi
        if [ -n "$over" ]; then
            echo "attempt $attempt: $first was over before the kill"
            continue
        fi
        echo "$first killed after ${ms} ms (attempt $attempt)"
        caught=1
        break
        done
        [ -n "$caught" ] || fail "$first was never caught in the middle of its run in 5 attempts"
        cryptsetup luksDump $H | grep -E '^  [0-9]+: (crypt|linear)|in-reencryption' \
            | tr -s ' \t' ' ' | sed "s/^/state after $first: /"
        # Offline, cryptsetup recovers a crashed hot zone with repair first.
        if [ $second = cryptsetup ] && cryptsetup luksDump $H | grep -q in-reencryption; then
            cryptsetup repair -q --header $H -d $KF $D || fail "cryptsetup repair"
        fi
        if cryptsetup luksDump $H | grep -q online-reencrypt; then
            $second reencrypt -q --resume-only --force-offline-reencrypt --header $H -d $KF $D \
                > /root/re.out 2>&1 || fail "$second --resume-only: $(cat /root/re.out)"
        fi
        cryptsetup luksDump $H | grep -q online-reencrypt && fail "still in re-encryption"
        mount -o noatime,ro $D /mnt || fail "mount of the decrypted device"
        verify_files "$first killed, $second finished"
        umount /mnt
        e2fsck -fn $D > /root/fsck.out 2>&1 || { cat /root/fsck.out; fail "e2fsck"; }
        echo "decrypted: $first killed, $second finished"
    done
    ;;
dshift-online-kill)
    # Online decryption of a device with its header at the start (--decrypt --header FILE):
    # the mapping follows the data as it moves down over the old header area. One tool is
    # killed in the middle, the other recovers (open --header FILE) and finishes online.
    for first in cryptsetup lukskit; do
        if [ $first = cryptsetup ]; then second=lukskit; else second=cryptsetup; fi
        HDR=/root/h-$first
        rm -f $HDR /root/stop /root/werr /root/wcount
        cryptsetup luksFormat -q --type luks2 $FAST --offset 2048 -d $KF $D || fail luksFormat
        $first open -d $KF $D v || fail "$first open"
        mkfs.ext4 -q /dev/mapper/v || fail mkfs
        mount -o noatime /dev/mapper/v /mnt || fail mount
        populate
        writer &
        wpid=$!
        kill_midway $first reencrypt -q --decrypt --header $HDR -d $KF $D
        # The writer's I/O fails since the power cut: stop it.
        touch /root/stop
        teardown_after_kill
        wait $wpid
        echo "writer iterations before the kill ($first): $(cat /root/wcount 2>/dev/null)"
        cryptsetup luksDump $HDR | grep -E '^  [0-9]+: (crypt|linear)|in-reencryption' \
            | tr -s ' \t' ' ' | sed "s/^/state after $first: /"
        $second open --header $HDR -d $KF $D v || fail "$second open --header (recovery)"
        dmsetup table v | awk '{print "resumed from ('$first'):", $1, $2, $3, $4}'
        mount -o noatime /dev/mapper/v /mnt || fail "mount after recovery"
        verify_files "recovery ($first killed)"
        (cd /mnt && sha256sum -c -s /root/wmanifest) || fail "writer files differ after the kill"
        $second reencrypt -q --resume-only --header $HDR -d $KF $D > /root/re.out 2>&1 \
            || fail "$second reencrypt --resume-only --header: $(cat /root/re.out)"
        dmsetup ls | awk '{print "device ('$first' killed):", $1}'
        dmsetup table v | awk '{print "after ('$first' killed):", $1, $2, $3, $4}'
        verify_files "$second's online resume"
        (cd /mnt && sha256sum -c -s /root/wmanifest) || fail "writer files differ after the resume"
        umount /mnt
        # A finished decryption removes its mapping (deferred: on the unmount), as cryptsetup.
        dmsetup info v > /dev/null 2>&1 && fail "v left after the unmount"
        echo "mapping removed at the unmount ($first killed)"
        in_reencryption && fail "still in re-encryption"
        mount -o noatime,ro $D /mnt || fail "mount of the decrypted device"
        verify_files "$first killed, $second finished online"
        (cd /mnt && sha256sum -c -s /root/wmanifest) || fail "writer files differ on the plain device"
        umount /mnt
        e2fsck -fn $D > /root/fsck.out 2>&1 || { cat /root/fsck.out; fail "e2fsck"; }
        echo "decrypted online: $first killed, $second finished"
        HDR=
    done
    ;;
luks1-kill)
    # On an image file, not /dev/vda: cryptsetup 2.6.1 looks for a LUKS1 re-encryption in
    # progress only where stat() gives a size of at least a page (reencrypt_luks1_in_progress),
    # which a block device never does, so it cannot resume one on a block device itself.
    mkfs.ext4 -q -F $D || fail "mkfs of the scratch disk"
    mkdir -p /root/img
    mount $D /root/img || fail "mount of the scratch disk"
    D=/root/img/luks1.img
    for pair in ${LUKS1_PAIRS:-cryptsetup:lukskit lukskit:cryptsetup}; do
        first=${pair%:*} second=${pair#*:}
        W=/root/l1-$first
        rm -rf $W
        mkdir -p $W
        rm -f $D
        truncate -s 40M $D
        cryptsetup luksFormat -q --type luks1 $FAST -c aes-xts-plain64 -s 256 -d $KF $D \
            || fail luksFormat
        cryptsetup open -d $KF $D v || fail "cryptsetup open"
        dd if=/dev/urandom of=/dev/mapper/v bs=1M 2>/dev/null
        sync
        sum0=$(sha256sum < /dev/mapper/v)
        cryptsetup close v
        # serpent (slow under TCG) and 1 MiB blocks: the run takes long enough to be caught.
        (cd $W && exec $first reencrypt -q $FAST -c serpent-xts-plain64 -s 512 --block-size 1 --use-fsync --write-log \
            -d $KF $D > /root/run.out 2>&1) &
        pid=$!
        t=0
        # Under way: the device's magic is no longer LUKS1's and the log (written after each
        # block) shows a first block done (interrupted before that, cryptsetup rolls back).
        while cryptsetup isLuks $D || ! cat $W/LUKS-*.log 2>/dev/null | tr -d '\000' | grep -q '^offset = [1-9]'; do
            kill -0 $pid 2>/dev/null || fail "$first ended before its run was seen: $(cat /root/run.out)"
            sleep 0.05
            t=$((t + 1))
            [ $t -lt 2000 ] || fail "no log after 100 s"
        done
        # 0-0.5 s: lukskit does about 16 MiB/s here under TCG on a loaded host (38 MiB).
        ms=$(($(rnd) % 500))
        sleep $((ms / 1000)).$(printf %03d $((ms % 1000)))
        # SIGTERM, not kill -9: the legacy algorithm is safe only between blocks (with
        # --write-log the log is written after each block; a block killed half way is
        # re-encrypted from already new data on resume). Measured 2026-11-25 in the VM: real
        # cryptsetup killed with -9 and resumed by itself lost the plaintext without
        # --write-log (the log said offset 0 after 1.4 s). On SIGTERM both tools finish the
        # block, write the log and stop.
        kill -TERM $pid || fail "$first was already over"
        wait $pid
        echo "$first killed after ${ms} ms"
        # Temporary mappings and loop devices of the interrupted run.
        for m in $(dmsetup ls | awk '$1 != "No" {print $1}'); do dmsetup remove $m; done
        losetup -D
        ls $W/LUKS-*.log > /dev/null 2>&1 || fail "the kill came after the end of the run"
        cat $W/LUKS-*.log | tr -d '\000' | grep -E '^(direction|offset|shift) ' | sed 's/^/log after '$first': /'
        cryptsetup isLuks $D && fail "the device is not marked as in re-encryption"
        # The device has no LUKS1 magic now: --type luks1 takes cryptsetup to its legacy code.
        (cd $W && $second reencrypt -q --type luks1 $FAST -c serpent-xts-plain64 -s 512 --block-size 1 --use-fsync --write-log \
            -d $KF $D ${LUKS1_DEBUG:+--debug} > /root/re.out 2>&1) || fail "$second resuming (exit $?): $(tail -n 30 /root/re.out)"
        # cryptsetup's files are gone; lukskit's own journal of an interrupted run
        # (LUKS-<uuid>.lukskit-journal) is not known to cryptsetup and stays: shown, not failed.
        ls $W/LUKS-* 2>/dev/null | grep -v '\.lukskit-journal$' && fail "files left in $W: $(ls $W)"
        ls $W | sed 's/^/left in the directory: /'
        cryptsetup luksDump $D > /root/dump.out
        grep -q '^Cipher name:[[:space:]]*serpent$' /root/dump.out && grep -q '^Cipher mode:[[:space:]]*xts-plain64$' /root/dump.out \
            || fail "not the new cipher: $(cat /root/dump.out)"
        for tool in cryptsetup lukskit; do
            $tool open -d $KF $D v || fail "$tool open"
            [ "$(sha256sum < /dev/mapper/v)" = "$sum0" ] || fail "plaintext differs ($tool open)"
            $tool close v || fail "$tool close"
        done
        echo "luks1: $first killed, $second finished, plaintext intact"
    done
    ;;
shift-online)
    # luks2-reencryption-test [2]: an encryption with a data shift initialized with a name
    # (the mapping is the device less --reduce-device-size), resumed online with the
    # mapping auto-detected: each tool, then the mapping's size and plaintext as before.
    for tool in cryptsetup lukskit; do
        dd if=/dev/zero of=$D bs=1M 2>/dev/null
        $tool reencrypt $D --encrypt --init-only -c aes-cbc-essiv:sha256 -s 128 \
            --reduce-device-size 8M -q $FAST -d $KF v > /dev/null || fail "$tool init"
        before=$(sha256sum < /dev/mapper/v)
        $tool reencrypt --resume-only $D -q -d $KF || fail "$tool resume"
        [ "$(sha256sum < /dev/mapper/v)" = "$before" ] || fail "$tool: plaintext differs"
        echo "shift-online $tool: $(dmsetup table v | awk '{print $1, $2, $3, $4}')"
        [ "$(dmsetup ls | wc -l)" = 1 ] || fail "$tool: helpers left: $(dmsetup ls)"
        $tool close v || fail "$tool close"
    done
    ;;
reduce-online)
    # 64 MiB disk, 16 MiB header: 48 MiB of data (98304 sectors); after the shift 40 MiB.
    for tool in cryptsetup lukskit; do
        if [ $tool = cryptsetup ]; then other=lukskit; else other=cryptsetup; fi
        cryptsetup luksFormat -q --type luks2 $FAST -d $KF $D || fail luksFormat
        $tool open -d $KF $D v || fail "$tool open"
        cryptsetup luksDump $D | grep -v '^Epoch:' > /root/dump.before
        rc=0
        $tool reencrypt -q $FAST -d $KF --reduce-device-size 8M $D > /dev/null 2> /root/err \
            || rc=$?
        echo "reduce $tool: whole mapping: exit $rc"
        sed "s/^/reduce $tool: whole mapping: stderr: /" /root/err
        if in_reencryption; then
            echo "reduce $tool: whole mapping: left in reencryption"
        else
            echo "reduce $tool: whole mapping: not in reencryption"
        fi
        cryptsetup luksDump $D | grep -v '^Epoch:' > /root/dump.after
        cmp -s /root/dump.before /root/dump.after \
            && echo "reduce $tool: whole mapping: header as before"
        echo "reduce $tool: whole mapping: table: $(dmsetup table v | awk '{print $1, $2, $3, $4, $7, $8}')"
        $tool close v || fail "$tool close"

        shrunk_for_the_shift $tool
        rm -f /root/stop /root/werr /root/wcount
        writer &
        wpid=$!
        rc=0
        guard 900 $tool reencrypt -q $FAST -d $KF --reduce-device-size 8M --progress-json $D \
            > /root/re.out 2>&1 || rc=$?
        touch /root/stop
        wait $wpid
        echo "reduce $tool: online: exit $rc"
        [ $rc = 0 ] || fail "$tool reencrypt: $(cat /root/re.out)"
        [ -e /root/werr ] && fail "$(cat /root/werr)"
        echo "reduce $tool: writer iterations: $(cat /root/wcount)"
        [ "$(cat /root/wcount)" -ge 3 ] || fail "the writer did not run during the re-encryption"
        echo "reduce $tool: online: table: $(dmsetup table v | awk '{print $1, $2, $3, $4, $7, $8}')"
        echo "reduce $tool: online: mappings: $(dmsetup ls | awk '{print $1}' | tr '\n' ' ')"
        verify_files "the run"
        (cd /mnt && sha256sum -c -s /root/wmanifest) || fail "writer files differ after the run"
        cat /root/wmanifest >> /root/manifest
        umount /mnt
        in_reencryption && fail "still in re-encryption"
        cryptsetup luksDump $D | sed -n '/^Data segments:/,/^Keyslots:/p' \
            | sed "s/^/reduce $tool: segments: /"
        $tool close v || fail "$tool close"
        $other open -d $KF $D v || fail "$other open"
        echo "reduce $tool: $other opens: $(dmsetup table v | awk '{print $1, $2, $3, $4, $7, $8}')"
        check_fs "$other open"
        $other close v || fail "$other close"
    done
    ;;
reduce-kill)
    # As reduce-online (48 MiB of data, 40 MiB after the shift), one tool killed midway.
    for first in ${REDUCE_FIRST:-cryptsetup lukskit}; do
        if [ $first = cryptsetup ]; then second=lukskit; else second=cryptsetup; fi
        second=${REDUCE_SECOND:-$second}
        rm -f /root/stop /root/werr /root/wcount
        shrunk_for_the_shift $first
        writer &
        wpid=$!
        # A data shift moves 8 MiB hot zones: 5 of them here. The kill comes in the third
        # (10-25 %: the hot zone moved 8 MiB of the 48). Not the last: killed in its last hot
        # zone, cryptsetup 2.6.1's own recovery of its own crash loses data (2 of 3 runs in
        # the VM, 2026-11-29: unmountable ext4 or files that differ) where lukskit's recovery
        # keeps it (and finishes the run at the open, so no resume is left to do).
        KILL_AT=${KILL_AT:-10 25} kill_midway $first reencrypt -q $FAST -d $KF --reduce-device-size 8M --hotzone-size 1M $D
        touch /root/stop
        teardown_after_kill
        wait $wpid
        echo "reduce-kill: writer iterations before the kill ($first): $(cat /root/wcount 2>/dev/null)"
        [ -z "$KILL_DEBUG" ] || cryptsetup luksDump $D >&2
        cryptsetup luksDump $D | grep -E '^  [0-9]+: (crypt|linear)|in-reencryption' \
            | tr -s ' \t' ' ' | sed "s/^/reduce-kill: state after $first: /"
        $second open -d $KF $D v || fail "$second open (recovery)"
        echo "reduce-kill: resumed from ($first killed): $(dmsetup table v | wc -l) segments, $(dmsetup table v | awk '{s += $2} END {print s}') sectors"
        mount -o noatime /dev/mapper/v /mnt || fail "mount after recovery"
        verify_files "recovery ($first killed)"
        (cd /mnt && sha256sum -c -s /root/wmanifest) || fail "writer files differ after the kill"
        $second reencrypt -q --resume-only -d $KF $D > /root/re.out 2>&1 \
            || fail "$second reencrypt --resume-only: $(cat /root/re.out)"
        echo "reduce-kill: after ($first killed): $(dmsetup table v | awk '{print $1, $2, $3, $4, $7, $8}')"
        echo "reduce-kill: mappings ($first killed): $(dmsetup ls | awk '{print $1}' | tr '\n' ' ')"
        verify_files "$second's online resume"
        (cd /mnt && sha256sum -c -s /root/wmanifest) || fail "writer files differ after the resume"
        umount /mnt
        in_reencryption && fail "still in re-encryption"
        $second close v || fail "$second close"
        $first open -d $KF $D v || fail "$first open of the result"
        echo "reduce-kill: $first opens ($first killed): $(dmsetup table v | awk '{print $1, $2, $3, $4, $7, $8}')"
        check_fs "$first open"
        $first close v || fail "$first close"
        echo "reduce-kill: $first killed, $second finished online"
    done
    ;;
status-online)
    # Both tools' status of mapping v, compared; "$1" names the moment. Status reads v's own
    # table, which a run in the background replaces (its helper stack goes in under v, and
    # at its end the final table): the two reports are compared only when v's table was the
    # same before and after both, otherwise they are taken again.
    same_status() {
        n=0
        while :; do
            before=$(dmsetup table v 2>&1)
            cryptsetup status v > /root/st.cs 2>&1
            lukskit status v > /root/st.lk 2>&1
            [ "$(dmsetup table v 2>&1)" = "$before" ] && break
            n=$((n + 1))
            [ $n -lt 20 ] || fail "$1: the table of v changed under every one of 20 tries"
        done
        [ $n -eq 0 ] || echo "status-online: $1: taken again $n times (v's table changed)"
        sed "s/^/status-online: $1: /" /root/st.cs
        diff /root/st.cs /root/st.lk > /root/st.diff || fail "status differs ($1): $(cat /root/st.diff)"
        echo "status-online: $1: same"
    }
    # Run "$@" in the background; once its helper stack maps two zones and v is linear over
    # it, compare.
    same_status_midway() {
        label=$1
        shift
        "$@" > /root/run.out 2>&1 &
        pid=$!
        t=0
        until [ "$(dmsetup table v-overlay 2>/dev/null | wc -l)" -ge 2 ] &&
            overlay=$(dmsetup info -c --noheadings -o major,minor v-overlay 2>/dev/null) &&
            dmsetup table v 2>/dev/null | grep -q " linear $overlay "; do
            kill -0 $pid 2>/dev/null || fail "$label: the run ended first: $(cat /root/run.out)"
            sleep 0.1
            t=$((t + 1))
            [ $t -lt 900 ] || fail "$label: no helper stack after 90 s"
        done
        same_status "$label"
        wait $pid || fail "$label: $(cat /root/run.out)"
    }
    dd if=/dev/zero of=$D bs=1M 2>/dev/null
    cryptsetup reencrypt $D --encrypt --init-only -c serpent-xts-plain64 --reduce-device-size 8M \
        -q $FAST -d $KF v > /dev/null || fail "init"
    same_status "shift initialized"
    same_status_midway "shift online" cryptsetup reencrypt --resume-only -q -d $KF --hotzone-size 1M $D
    same_status "shift done"
    cryptsetup close v
    cryptsetup luksFormat -q --type luks2 $FAST -d $KF $D || fail luksFormat
    cryptsetup open -d $KF $D v || fail open
    same_status "opened"
    same_status_midway "online" cryptsetup reencrypt -q -d $KF --cipher serpent-xts-plain64 --hotzone-size 1M $D
    cryptsetup close v
    ;;
init-mismatch)
    # luks2-reencryption-test [4]: two mappings of one detached header, one on a 4 KiB
    # image, one on the disk; the first is re-encrypted online (new volume key), so the
    # second's key description names the old digest. Re-encrypting under the second must
    # fail ("Mismatching parameters") and leave the header as it was: no re-encryption
    # initialized, no keyslot added. Each tool, with the same commands.
    IMG=/root/img4k HDR=/root/hdr
    for tool in cryptsetup lukskit; do
        rm -f $HDR
        dd if=/dev/zero of=$IMG bs=4k count=1 2>/dev/null
        cryptsetup luksFormat --type luks2 -c aes-cbc-essiv:sha256 -s 128 --header $HDR -q \
            $FAST -d $KF $D || fail "$tool: format"
        $tool open $IMG a --header $HDR -d $KF || fail "$tool open a"
        $tool open $D b --header $HDR -d $KF || fail "$tool open b"
        $tool reencrypt --active-name a --header $HDR -q $FAST -d $KF > /dev/null \
            || fail "$tool reencrypt a"
        cryptsetup luksDump $HDR | grep -v '^Epoch:' > /root/dump.before
        rc=0
        $tool reencrypt --active-name b --header $HDR $FAST -d $KF > /dev/null 2> /root/err \
            || rc=$?
        echo "mismatch $tool: exit $rc"
        sed "s/^/mismatch $tool: stderr: /" /root/err
        if cryptsetup luksDump $HDR | grep -q online-reencrypt; then
            echo "mismatch $tool: left in reencryption"
        else
            echo "mismatch $tool: not in reencryption"
        fi
        cryptsetup luksDump $HDR | grep -v '^Epoch:' > /root/dump.after
        if cmp -s /root/dump.before /root/dump.after; then
            echo "mismatch $tool: header as before"
        else
            echo "mismatch $tool: header changed"
            diff /root/dump.before /root/dump.after | sed "s/^/mismatch $tool: diff: /"
        fi
        echo "mismatch $tool: mappings: $(dmsetup ls | awk '{print $1}' | sort | tr '\n' ' ')"
        $tool close a || fail "$tool close a"
        $tool close b || fail "$tool close b"
    done
    ;;
fixed-online)
    # luks2-reencryption-test [17]: a mapping resized to S sectors (less than the data) is
    # re-encrypted online: cryptsetup re-encrypts the active device's size only, so the data
    # beyond it stays as it was and the mapping keeps its size; --device-size other than the
    # mapping's size is refused, the same size is taken; a mapping whose size is not whole
    # sectors of the new layout is refused. Each tool, the same commands.
    S=57344 OFF=16384
    fmt_open() {
        cryptsetup -q luksFormat --type luks2 --sector-size 512 --offset $OFF $FAST -d $KF $D \
            || fail "format"
        $tool open $D v -d $KF || fail "$tool open"
    }
    for tool in cryptsetup lukskit; do
        fmt_open
        dd if=/dev/urandom of=/dev/mapper/v bs=1M count=56 conv=fsync 2>/dev/null
        head_sum=$(head -c $((S * 512)) /dev/mapper/v | sha256sum)
        $tool resize v --size $S -d $KF || fail "$tool resize"
        tail_before=$(dd if=$D bs=512 skip=$((OFF + S)) 2>/dev/null | sha256sum)
        $tool reencrypt -q $FAST -d $KF $D --sector-size 4096 --resilience checksum \
            --hotzone-size 4M > /dev/null || fail "$tool reencrypt"
        echo "fixed $tool: size $(blockdev --getsz /dev/mapper/v)"
        echo "fixed $tool: mappings: $(dmsetup ls | awk '{print $1}' | sort | tr '\n' ' ')"
        echo "fixed $tool: table: $(dmsetup table v | awk '{print $1, $2, $3, $4}')"
        if [ "$(dd if=$D bs=512 skip=$((OFF + S)) 2>/dev/null | sha256sum)" = "$tail_before" ]; then
            echo "fixed $tool: data beyond the mapping untouched"
        else
            echo "fixed $tool: data beyond the mapping changed"
        fi
        echo 3 > /proc/sys/vm/drop_caches
        [ "$(head -c $((S * 512)) /dev/mapper/v | sha256sum)" = "$head_sum" ] \
            && echo "fixed $tool: plaintext intact"
        cryptsetup luksDump $D | sed -n '/^Data segments:/,/^Keyslots:/p' \
            | sed "s/^/fixed $tool: segments: /"
        $tool close v || fail "$tool close"

        fmt_open
        $tool resize v --size $S -d $KF || fail "$tool resize"
        $tool reencrypt -q $FAST -d $KF $D --sector-size 4096 --init-only > /dev/null \
            || fail "$tool init-only"
        rc=0
        $tool reencrypt -q -d $KF $D --device-size $((S - 8))s > /dev/null 2> /root/err || rc=$?
        echo "fixed $tool: --device-size not the mapping's: exit $rc"
        sed "s/^/fixed $tool: stderr: /" /root/err
        $tool reencrypt -q -d $KF $D --device-size ${S}s > /dev/null || fail "$tool --device-size"
        echo "fixed $tool: --device-size of the mapping: size $(blockdev --getsz /dev/mapper/v)"
        $tool close v || fail "$tool close"

        fmt_open
        $tool resize v --size $((S + 7)) -d $KF || fail "$tool resize"
        $tool reencrypt -q $FAST -d $KF $D --sector-size 4096 --init-only > /dev/null \
            || fail "$tool init-only"
        rc=0
        $tool reencrypt -q -d $KF $D > /dev/null 2> /root/err || rc=$?
        echo "fixed $tool: mapping not whole new sectors: exit $rc"
        sed "s/^/fixed $tool: stderr: /" /root/err
        echo "fixed $tool: mappings after: $(dmsetup ls | awk '{print $1}' | sort | tr '\n' ' ')"
        $tool close v || fail "$tool close"
    done
    ;;
null-online)
    # luks2-reencryption-test [24]: a volume made with cipher_null (no key, so its mapping
    # has none in the keyring), re-encrypted online to aes-xts: the new key goes where
    # cryptsetup puts it (the kernel keyring, where dm-crypt takes keys from it), the
    # plaintext stays. Each tool, the same commands.
    for tool in cryptsetup lukskit; do
        cryptsetup -q luksFormat --type luks2 -s 128 -c cipher_null-ecb --offset 8192 $FAST \
            -d $KF $D || fail "format"
        $tool open $D v -d $KF || fail "$tool open"
        dd if=/dev/urandom of=/dev/mapper/v bs=1M count=8 conv=fsync 2>/dev/null
        sum=$(head -c 8M /dev/mapper/v | sha256sum)
        echo "null $tool: before: $($tool status v | grep -E '^ *(cipher|key location):' | tr -s ' ' | tr '\n' ' ')"
        $tool reencrypt -q $FAST -d $KF $D -c aes-xts-plain64 > /dev/null || fail "$tool reencrypt"
        echo "null $tool: after: $($tool status v | grep -E '^ *(cipher|key location):' | tr -s ' ' | tr '\n' ' ')"
        echo "null $tool: table key: $(dmsetup table --showkeys v | awk '{print $5}' \
            | sed -E 's/^:([0-9]+):logon:cryptsetup:.*-d([0-9]+)$/keyring \1 bytes digest \2/; s/^[0-9a-f]{32,}$/hex/')"
        echo 3 > /proc/sys/vm/drop_caches
        [ "$(head -c 8M /dev/mapper/v | sha256sum)" = "$sum" ] && echo "null $tool: plaintext intact"
        $tool close v || fail "$tool close"
    done
    ;;
*)
    fail "unknown case"
    ;;
esac
echo "RESULT $CASE_ARG ok"
