#!/usr/bin/env bash
# Where the time of a 4 KiB random read over the FUSE + loop path goes: fio randread 4k,
# iodepth 16, O_DIRECT, on ext4 over a plain loop device (direct I/O) and over `lukskit open`
# (FUSE over io_uring where the kernel offers it), each measured with
#   - the requests in flight at the loop device and at the backing disk (sampled from
#     /sys/block/*/inflight: Little's law turns them into time spent there),
#   - context switches per request, system-wide (perf stat),
#   - for lukskit, the latency of each stage from kernel tracepoints (perf record
#     block:block_rq_issue/complete, fuse:fuse_request_send/end): the loop request, the FUSE
#     request, and the backing disk's read,
# and a markdown report on stdout or in the file given as $1. The machine may be shared:
# the figures of one run belong together, compare them with each other.
#
#   sudo bench/fuse-trace.sh /tmp/trace.md        # about a minute
#
# Needs root, /dev/fuse, loop devices, perf (apt-get install linux-perf), fio, e2fsprogs.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
outfile=${1:-/dev/stdout}
secs=${FIO_SECONDS:-8}
target=${CARGO_TARGET_DIR:-$repo/target}
work=${TRACE_WORK_DIR:-$target/bench-fuse-trace}

log() { echo "[fuse-trace] $*" >&2; }
die() { echo "[fuse-trace] $*" >&2; exit 1; }

[ "$(id -u)" = 0 ] || die "needs root (loop devices, FUSE mounts, perf tracepoints)"
for t in fio perf mkfs.ext4 python3; do command -v $t >/dev/null || die "needs $t"; done
param=/sys/module/fuse/parameters/enable_uring
[ -e "$param" ] && echo Y >"$param"

log "building lukskit (release)"
(cd "$repo" && cargo build --release -q -p lukskit-cli)
L=$target/release/lukskit

mkdir -p "$work/mnt"
name=lktrace$$
mnt=$work/mnt
plain_loop=""
cleanup() {
    set +e
    mountpoint -q "$mnt" && umount "$mnt"
    [ -n "$plain_loop" ] && losetup -d "$plain_loop"
    "$L" close "$name" 2>/dev/null
    rm -rf "$work"
}
trap cleanup EXIT

# The whole disk under the work directory ("major,minor" as block tracepoints print it).
src=$(df --output=source "$work" | tail -1)
disk=$(lsblk -no PKNAME "$src" 2>/dev/null | head -1)
[ -n "$disk" ] || disk=$(basename "$src")
[ -e "/sys/block/$disk/dev" ] || die "cannot find the disk under $work ($src)"
disk_dev=$(tr ':' ',' <"/sys/block/$disk/dev")

truncate -s 1024M "$work/plain.img"
truncate -s 1040M "$work/luks.img"
printf pw >"$work/kf"
"$L" luksFormat -q --pbkdf pbkdf2 --pbkdf-force-iterations 1000 -d "$work/kf" "$work/luks.img"

inflight() { # block device name -> mean requests in flight over 2 s
    for _ in $(seq 40); do cat "/sys/block/$1/inflight"; sleep 0.05; done |
        awk '{ s += $1 + $2; n++ } END { printf "%.1f", s / n }'
}

declare -A R
measure() { # label device
    local label=$1 dev=$2 lo
    lo=$(basename "$(readlink -f "$dev")")
    mkfs.ext4 -q -F "$dev"
    mount "$dev" "$mnt"
    fio --name=w --filename="$mnt/f" --size=512M --rw=write --bs=1M --direct=1 \
        --ioengine=libaio --iodepth=16 >/dev/null
    fio --name=b --filename="$mnt/f" --size=512M --rw=randread --bs=4k --iodepth=16 \
        --ioengine=libaio --direct=1 --runtime="$secs" --time_based --output-format=json \
        >"$work/fio.json" 2>/dev/null &
    local fpid=$!
    sleep 1.5
    R[$label,loop]=$(inflight "$lo")
    R[$label,disk]=$(inflight "$disk")
    R[$label,cs]=$(perf stat -a -x, -e context-switches -- sleep 2 2>&1 >/dev/null |
        awk -F, '/context-switches/ { print $1 }')
    if [ "$label" = lukskit ]; then
        perf record -q -a -o "$work/trace.data" \
            -e block:block_rq_issue,block:block_rq_complete,fuse:fuse_request_send,fuse:fuse_request_end \
            -- sleep 0.5 >/dev/null 2>&1
    fi
    wait $fpid
    local iops clat
    read -r iops clat < <(python3 -c '
import json, sys
j = json.load(open(sys.argv[1]))["jobs"][0]["read"]
print("%.0f %.0f" % (j["iops"], j["clat_ns"]["mean"] / 1000))' "$work/fio.json")
    R[$label,iops]=$iops
    R[$label,clat]=$clat
    R[$label,lo]=$lo
    umount "$mnt"
    log "$label: ${R[$label,iops]} IOPS"
}

load_start=$(cut -d' ' -f1-3 /proc/loadavg)
plain_loop=$(losetup --direct-io=on --show -f "$work/plain.img")
measure plain "$plain_loop"
losetup -d "$plain_loop"
plain_loop=""
"$L" open -d "$work/kf" "$work/luks.img" "$name"
pid=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["pid"])' "/run/lukskit/$name/state.json")
uring=$(grep -c lukskit-furing /proc/"$pid"/task/*/comm | awk -F: '{ s += $2 } END { print s + 0 }')
measure lukskit "/dev/mapper/$name"
"$L" close "$name"
load_end=$(cut -d' ' -f1-3 /proc/loadavg)
loop_dev=$(tr ':' ',' <"/sys/block/${R[lukskit,lo]}/dev" 2>/dev/null || echo "7,0")
stages=$(perf script -i "$work/trace.data" 2>/dev/null | python3 -c '
import re, sys, statistics as st
loop_dev, disk_dev = sys.argv[1], sys.argv[2]
issued, sent, lat = {}, {}, {"loop": [], "fuse": [], "disk": []}
for line in sys.stdin:
    m = re.match(r"\s*.+?\s+\d+\s+\[\d+\]\s+([\d.]+):\s+(\S+):\s+(.*)", line)
    if not m:
        continue
    t, ev, rest = float(m.group(1)) * 1e6, m.group(2), m.group(3)
    if ev.startswith("fuse:"):
        u = re.search(r"req (\d+)", rest).group(1)
        if ev.endswith("send"):
            sent[u] = t
        elif u in sent:
            lat["fuse"].append(t - sent.pop(u))
        continue
    dev = rest.split()[0]
    sec = re.search(r"\) (\d+) \+", rest)
    if not sec or dev not in (loop_dev, disk_dev):
        continue
    k = (dev, sec.group(1))
    if ev.endswith("issue"):
        issued[k] = t
    elif k in issued:
        lat["loop" if dev == loop_dev else "disk"].append(t - issued.pop(k))
for k in ("loop", "fuse", "disk"):
    v = lat[k]
    if v:
        print("%s %d %.0f %.0f" % (k, len(v), st.mean(v), st.median(v)))
' "$loop_dev" "$disk_dev")

stage() { echo "$stages" | awk -v k="$1" -v f="$2" '$1 == k { print $f }'; }
per_req() { awk -v c="$1" -v i="$2" 'BEGIN { printf "%.2f", c / 2 / i }'; }
{
    echo "## 4 KiB random reads over the FUSE + loop path, traced (\`bench/fuse-trace.sh\`)"
    echo
    echo "* Date: $(date -u '+%Y-%m-%d %H:%M UTC'); $(nproc) CPUs; kernel $(uname -r); lukskit $(cd "$repo" && git rev-parse --short HEAD)"
    echo "* Load average at the start $load_start, at the end $load_end; backing disk $disk ($disk_dev)"
    echo "* fio randread 4k, iodepth 16, O_DIRECT, libaio, ${secs} s, on ext4; lukskit served over io_uring: $([ "$uring" -gt 0 ] && echo "yes ($uring ring threads)" || echo no)"
    echo
    echo "| | plain loop device | lukskit |"
    echo "|---|---|---|"
    echo "| IOPS | ${R[plain,iops]} | ${R[lukskit,iops]} |"
    echo "| mean completion latency (fio clat, µs) | ${R[plain,clat]} | ${R[lukskit,clat]} |"
    echo "| requests in flight at the loop device | ${R[plain,loop]} | ${R[lukskit,loop]} |"
    echo "| requests in flight at the backing disk | ${R[plain,disk]} | ${R[lukskit,disk]} |"
    echo "| context switches per request (system-wide) | $(per_req "${R[plain,cs]}" "${R[plain,iops]}") | $(per_req "${R[lukskit,cs]}" "${R[lukskit,iops]}") |"
    echo
    echo "lukskit's stages (a sample: what perf recorded of the tracepoints in 0.5 s; the"
    echo "disk's completions that the block layer reports in batches are not matched, so its"
    echo "count is lower):"
    echo
    echo "| Stage | requests | mean µs | median µs |"
    echo "|---|---|---|---|"
    echo "| loop request (issue → complete) | $(stage loop 2) | $(stage loop 3) | $(stage loop 4) |"
    echo "| FUSE request (sent → answered by lukskit) | $(stage fuse 2) | $(stage fuse 3) | $(stage fuse 4) |"
    echo "| backing disk read (issue → complete) | $(stage disk 2) | $(stage disk 3) | $(stage disk 4) |"
} >"$outfile"
