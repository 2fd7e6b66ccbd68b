#!/usr/bin/env bash
# Side-by-side benchmark of an opened lukskit volume as a block device and as an NBD export,
# in one run on one machine. Writes bench/block.md and bench/block.svg (or the directory
# given as $1); bench/run.sh includes them in BENCHMARKS.md.
#
#   sudo bench/block.sh              # ~6-8 minutes
#   BLOCK_SIZE_MIB=512 FIO_SECONDS=5 bench/block.sh /tmp/out
#
# 1. fio on ext4: over /dev/mapper/NAME (lukskit open: FUSE file + loop device) against ext4
#    on a plain loop device over the same kind of file in the same directory: 1 MiB
#    sequential read/write and 4 KiB random read/write, iodepth 16, O_DIRECT.
# 2. NBD: nbdcopy reading and writing a LUKS1 image served by `lukskit open --nbd`, by
#    `qemu-nbd` (QEMU's LUKS driver) and by nbdkit's luks filter.
# 3. Throughput by block size (4 KiB .. 1 MiB, sequential, direct) plain vs encrypted: a plot.
#
# Needs root, /dev/fuse and loop devices; installs fio, qemu-utils, libnbd-bin, nbdkit and
# e2fsprogs with apt-get when missing.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$repo/bench}
size_mib=${BLOCK_SIZE_MIB:-1024}
secs=${FIO_SECONDS:-10}
target=${CARGO_TARGET_DIR:-$repo/target}
work=${BLOCK_WORK_DIR:-$target/bench-block}

log() { echo "[block] $*" >&2; }
die() { echo "[block] $*" >&2; exit 1; }

[ "$(id -u)" = 0 ] || die "needs root (loop devices, FUSE mounts)"
[ -e /dev/fuse ] || die "needs /dev/fuse"
need=()
command -v fio >/dev/null || need+=(fio)
command -v qemu-nbd >/dev/null || need+=(qemu-utils)
command -v nbdcopy >/dev/null || need+=(libnbd-bin)
command -v nbdkit >/dev/null || need+=(nbdkit)
command -v mkfs.ext4 >/dev/null || need+=(e2fsprogs)
if [ ${#need[@]} -gt 0 ]; then
    log "installing ${need[*]}"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
fi

log "building lukskit (release)"
(cd "$repo" && cargo build --release -q -p lukskit-cli)
L=$target/release/lukskit

mkdir -p "$work" "$out"
name=lkbench$$
mnt=$work/mnt
mkdir -p "$mnt"
plain_loop=""
cleanup() {
    set +e
    mountpoint -q "$mnt" && umount "$mnt"
    [ -n "$plain_loop" ] && losetup -d "$plain_loop"
    "$L" close "$name" 2>/dev/null
    "$L" close "${name}n" 2>/dev/null
    [ -n "${srv_pid:-}" ] && kill "$srv_pid" 2>/dev/null
    rm -rf "$work"
}
trap cleanup EXIT

printf pw >"$work/kf"
load_start=$(cut -d' ' -f1-3 /proc/loadavg)

# ------------------------------------------------------------------- fio ----
# fio_json JOB RW BS FILE -> "MiB/s IOPS" (read or write side, whichever the job does)
fio_run() {
    local rw=$1 bs=$2 file=$3
    fio --name=b --filename="$file" --size=$((size_mib / 2))M --rw="$rw" --bs="$bs" \
        --iodepth=16 --ioengine=libaio --direct=1 --runtime="$secs" --time_based \
        --group_reporting --output-format=json 2>/dev/null |
        python3 -c '
import json, sys
j = json.load(sys.stdin)["jobs"][0]
side = j["read"] if j["read"]["io_bytes"] > 0 else j["write"]
print("%.1f %.0f" % (side["bw"] / 1024.0, side["iops"]))'
}

declare -A R
suite() { # label device
    local label=$1 dev=$2
    mkfs.ext4 -q -F -E lazy_itable_init=0,lazy_journal_init=0 "$dev"
    mount "$dev" "$mnt"
    # Lay the test file out once so reads read real data.
    fio_run write 1M "$mnt/f" >/dev/null
    for job in "write 1M" "read 1M" "randwrite 4k" "randread 4k"; do
        # shellcheck disable=SC2086 # split "rw bs" on purpose
        set -- $job
        R[$label,$1]=$(fio_run "$1" "$2" "$mnt/f")
        log "  $label $1 $2: ${R[$label,$1]}"
    done
    for bs in 4k 16k 64k 256k 1M; do
        R[$label,sr$bs]=$(fio_run read "$bs" "$mnt/f" | cut -d' ' -f1)
        R[$label,sw$bs]=$(fio_run write "$bs" "$mnt/f" | cut -d' ' -f1)
    done
    umount "$mnt"
}

log "plain loop device over $work/plain.img"
truncate -s "${size_mib}M" "$work/plain.img"
plain_loop=$(losetup --direct-io=on --show -f "$work/plain.img")
suite plain "$plain_loop"
losetup -d "$plain_loop"
plain_loop=""
rm -f "$work/plain.img"

log "lukskit LUKS2 volume over $work/luks.img"
truncate -s "$((size_mib + 16))M" "$work/luks.img"
"$L" luksFormat -q --pbkdf pbkdf2 --pbkdf-force-iterations 1000 -d "$work/kf" "$work/luks.img"
"$L" open -d "$work/kf" "$work/luks.img" "$name"
suite lukskit "/dev/mapper/$name"
"$L" close "$name"
rm -f "$work/luks.img"

# ------------------------------------------------------------------- NBD ----
log "NBD: LUKS1 image of $size_mib MiB"
head -c $((size_mib * 1048576)) /dev/urandom >"$work/data.raw"
# Made by lukskit (cryptsetup's LUKS1 layout, which QEMU's LUKS driver and nbdkit open), not
# by `qemu-img convert -O luks`: qemu-img's PBKDF calibration fails now and then here with
# "Unable to get accurate CPU usage".
"$L" image encrypt -q --type luks1 -c aes-xts-plain64 -s 512 --pbkdf-force-iterations 1000 \
    -d "$work/kf" "$work/data.raw" "$work/nbd.luks"
sock=$work/nbd.sock
best_of() { # command... -> best seconds of 3
    local b=""
    for _ in 1 2 3; do
        local t0 t1 t
        t0=$(date +%s.%N)
        "$@" >/dev/null 2>&1 || { echo FAIL; return; }
        t1=$(date +%s.%N)
        t=$(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.2f", b-a}')
        if [ -z "$b" ] || awk -v t="$t" -v b="$b" 'BEGIN {exit !(t<b)}'; then b=$t; fi
    done
    echo "$b"
}
uri="nbd+unix:///?socket=$sock"
nbd_pair() { # -> "read_s write_s write_flush_s"
    local r w f
    r=$(best_of nbdcopy "$uri" null:)
    w=$(best_of nbdcopy "$work/data.raw" "$uri")
    # --flush: the copy ends with NBD_CMD_FLUSH, which must reach the disk.
    f=$(best_of nbdcopy --flush "$work/data.raw" "$uri")
    echo "$r $w $f"
}
wait_sock() { for _ in $(seq 100); do [ -S "$sock" ] && return 0; sleep 0.1; done; return 1; }

rm -f "$sock"
"$L" open --nbd "unix:$sock" -d "$work/kf" "$work/nbd.luks" "${name}n"
wait_sock
read -r lr lw lf < <(nbd_pair)
"$L" close "${name}n"
log "  lukskit: read $lr s, write $lw s, write --flush $lf s"

qemu_pair() { # qemu-nbd options... -> "read_s write_s"
    rm -f "$sock"
    qemu-nbd --object secret,id=s0,data=pw --image-opts \
        "driver=luks,key-secret=s0,file.filename=$work/nbd.luks" -k "$sock" -e 8 -t "$@" \
        >/dev/null 2>&1 & srv_pid=$!
    wait_sock
    nbd_pair
    kill "$srv_pid"; wait "$srv_pid" 2>/dev/null || true; srv_pid=""
}
# Its default cache mode (writeback: the page cache, as lukskit's NBD export) is the
# comparison; --cache=none (O_DIRECT) is shown beside it.
# (Command substitution, not `read < <(...)`: it waits until the server has exited and
# removed its socket, before the next one binds the same path.)
pair=$(qemu_pair)
read -r qr qw qf <<<"$pair"
log "  qemu-nbd: read $qr s, write $qw s, write --flush $qf s"
pair=$(qemu_pair --cache=none --aio=native)
read -r qdr qdw qdf <<<"$pair"
log "  qemu-nbd --cache=none: read $qdr s, write $qdw s, write --flush $qdf s"

rm -f "$sock"
nbdkit -f -U "$sock" file "$work/nbd.luks" --filter=luks passphrase=pw & srv_pid=$!
wait_sock
read -r kr kw kf < <(nbd_pair)
kill "$srv_pid"; wait "$srv_pid" 2>/dev/null || true; srv_pid=""
log "  nbdkit luks: read $kr s, write $kw s, write --flush $kf s"
# The floor of a flushed write: the same bytes copied into the same storage and synced,
# no encryption, no NBD.
cpf=$(best_of sh -c "rm -f '$work/cp.out'; cp --reflink=never '$work/data.raw' '$work/cp.out' && sync -d '$work/cp.out'")
rm -f "$work/cp.out"
log "  cp + sync: $cpf s"

# ----------------------------------------------------------------- report ----
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {if (b+0>0) printf "%.2f", a/b; else print "n/a"}'; }
first() { echo "$1" | cut -d' ' -f1; }
second() { echo "$1" | cut -d' ' -f2; }
mibs() { awk -v s="$size_mib" -v t="$1" 'BEGIN {if (t+0>0) printf "%.0f", s/t; else print "n/a"}'; }
verdict() { awk -v v="$1" -v t="$2" 'BEGIN {print (v+0 >= t) ? "holds" : "**missed**"}'; }
sw=$(ratio "$(first "${R[lukskit,write]}")" "$(first "${R[plain,write]}")")
sr=$(ratio "$(first "${R[lukskit,read]}")" "$(first "${R[plain,read]}")")
rw=$(ratio "$(second "${R[lukskit,randwrite]}")" "$(second "${R[plain,randwrite]}")")
rr=$(ratio "$(second "${R[lukskit,randread]}")" "$(second "${R[plain,randread]}")")
nr=$(ratio "$qr" "$lr")
nw=$(ratio "$qw" "$lw")
nf=$(ratio "$qf" "$lf")
nfc=$(ratio "$qf" "$cpf")
min() { awk -v a="$1" -v b="$2" 'BEGIN {print (a+0<b+0)?a:b}'; }
{
    echo "## Block device and NBD (\`bench/block.sh\`)"
    echo
    echo "* Date: $(date -u '+%Y-%m-%d %H:%M UTC'); load average at start $load_start, at end $(cut -d' ' -f1-3 /proc/loadavg)"
    echo "* Storage: files in \`$work\` ($(df -T "$work" | awk 'NR==2 {print $2}')); $size_mib MiB volumes; fio ${secs} s per job"
    echo
    echo "fio on ext4, iodepth 16, \`--direct=1\`, libaio. *plain*: a loop device (direct I/O) over"
    echo "a file; *lukskit*: \`lukskit open\` of a LUKS2 volume (aes-xts-plain64, 4 KiB sectors) in"
    uring=$(cat /sys/module/fuse/parameters/enable_uring 2>/dev/null || echo absent)
    case $uring in
    Y) path="FUSE over io_uring (fuse.enable_uring=Y: lukskit's default where the kernel offers it)";;
    *) path="the classic /dev/fuse path (fuse.enable_uring: $uring)";;
    esac
    echo "a file of the same directory, i.e. FUSE file + loop device, /dev/mapper/NAME; requests"
    echo "served by $path."
    echo
    echo "| Job | plain MiB/s | plain IOPS | lukskit MiB/s | lukskit IOPS | lukskit / plain |"
    echo "|---|---|---|---|---|---|"
    for j in write read randwrite randread; do
        case $j in write|read) k=first;; *) k=second;; esac
        echo "| $j $( [ "${j#rand}" = "$j" ] && echo '1 MiB' || echo '4 KiB') | $(first "${R[plain,$j]}") | $(second "${R[plain,$j]}") | $(first "${R[lukskit,$j]}") | $(second "${R[lukskit,$j]}") | $(ratio "$($k "${R[lukskit,$j]}")" "$($k "${R[plain,$j]}")") |"
    done
    echo
    echo "NBD: \`nbdcopy\` of the whole $size_mib MiB plaintext of a LUKS1 image (aes-xts-plain64,"
    echo "512-bit key) out of (read) and into (write) the export, best of 3; the write once without"
    echo "and once with \`--flush\` (the copy ends with an NBD flush, which reaches the disk). lukskit's"
    echo "export and qemu-nbd's default both write through the page cache; the ratios below are"
    echo "against qemu-nbd's default. \"cp + sync\": the same bytes copied into the same storage and"
    echo "synced, no encryption: the floor of a flushed write (ceiling of its ratio: qemu-nbd / cp)."
    echo
    echo "| Server | Read | Write | Write with --flush |"
    echo "|---|---|---|---|"
    echo "| lukskit open --nbd | $lr s ($(mibs "$lr") MiB/s) | $lw s ($(mibs "$lw") MiB/s) | $lf s ($(mibs "$lf") MiB/s) |"
    echo "| qemu-nbd (QEMU LUKS driver, default cache) | $qr s ($(mibs "$qr") MiB/s) | $qw s ($(mibs "$qw") MiB/s) | $qf s ($(mibs "$qf") MiB/s) |"
    echo "| qemu-nbd --cache=none --aio=native | $qdr s ($(mibs "$qdr") MiB/s) | $qdw s ($(mibs "$qdw") MiB/s) | $qdf s ($(mibs "$qdf") MiB/s) |"
    echo "| nbdkit luks filter | $kr s ($(mibs "$kr") MiB/s) | $kw s ($(mibs "$kw") MiB/s) | $kf s ($(mibs "$kf") MiB/s) |"
    echo "| cp + sync (no NBD, no encryption) | | | $cpf s ($(mibs "$cpf") MiB/s) |"
    echo
    echo "| Target (issue 5) | Measured | Verdict |"
    echo "|---|---|---|"
    echo "| sequential ≥ 75% of the plain loop device (slower of read/write) | $(min "$sw" "$sr") | $(verdict "$(min "$sw" "$sr")" 0.75) |"
    echo "| random 4 KiB ≥ 50% of the plain loop device (IOPS, slower of read/write) | $(min "$rw" "$rr") | $(verdict "$(min "$rw" "$rr")" 0.50) |"
    echo "| NBD ≥ 3x qemu-nbd (nbdcopy, slower of read/write) | $(min "$nr" "$nw")x | $(verdict "$(min "$nr" "$nw")" 3) |"
    echo "| NBD read ≥ 5x qemu-nbd (issue 17) | ${nr}x | $(verdict "$nr" 5) |"
    echo "| NBD write with --flush ≥ 3x qemu-nbd (issue 17; ceiling there: cp + sync, ${nfc}x) | ${nf}x | $(verdict "$nf" 3) |"
    echo
    echo "![Throughput by block size](block.svg)"
    echo
    echo "| Block size | plain read | lukskit read | plain write | lukskit write |"
    echo "|---|---|---|---|---|"
    for bs in 4k 16k 64k 256k 1M; do
        echo "| $bs | ${R[plain,sr$bs]} | ${R[lukskit,sr$bs]} | ${R[plain,sw$bs]} | ${R[lukskit,sw$bs]} |"
    done
} >"$out/block.md"

# A small SVG line plot (no plotting library needed).
{
    for bs in 4k 16k 64k 256k 1M; do
        echo "$bs ${R[plain,sr$bs]} ${R[lukskit,sr$bs]} ${R[plain,sw$bs]} ${R[lukskit,sw$bs]}"
    done
} | python3 "$repo/bench/plot.py" >"$out/block.svg"
log "wrote $out/block.md and $out/block.svg"
