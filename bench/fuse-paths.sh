#!/usr/bin/env bash
# The FUSE file's request paths side by side, in one run: fio on ext4 (the jobs of
# bench/block.sh: 1 MiB sequential write/read, 4 KiB random write/read, iodepth 16,
# O_DIRECT, libaio) over
#   plain   a loop device (direct I/O) over a file,
#   classic `lukskit open` with the classic /dev/fuse request path (LUKSKIT_FUSE_URING=0;
#           what a kernel with fuse.enable_uring=N, its default, gets),
#   uring   `lukskit open` with FUSE over io_uring (LUKSKIT_FUSE_URING=1; lukskit's default
#           wherever the kernel offers it),
# interleaved, ROUNDS times (3), in one directory. PATHS picks the paths besides plain
# (default "classic uring"; also uring-pinned and uring-unpinned: io_uring with its threads
# kept on their queue's CPU or free to move, LUKSKIT_FUSE_URING_PIN=1/0). Prints a markdown
# report (per round: MiB/s or IOPS and the ratios to plain of the same round, the load
# average before each round; then each ratio's median over the rounds) to stdout or to the
# file given as $1. The machine may be shared: compare the ratios within a round.
#
#   sudo bench/fuse-paths.sh                       # ~3 minutes per round
#   PATHS="classic uring-pinned uring-unpinned" ROUNDS=5 bench/fuse-paths.sh /tmp/pin.md
#   ROUNDS=5 FIO_SECONDS=10 BLOCK_SIZE_MIB=1024 bench/fuse-paths.sh /tmp/paths.md
#
# Needs root, /dev/fuse, loop devices and a kernel with FUSE over io_uring (6.14+); turns
# on fuse.enable_uring. Installs fio and e2fsprogs with apt-get when missing.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
outfile=${1:-/dev/stdout}
size_mib=${BLOCK_SIZE_MIB:-1024}
secs=${FIO_SECONDS:-10}
rounds=${ROUNDS:-3}
target=${CARGO_TARGET_DIR:-$repo/target}
work=${BLOCK_WORK_DIR:-$target/bench-fuse-paths}

log() { echo "[fuse-paths] $*" >&2; }
die() { echo "[fuse-paths] $*" >&2; exit 1; }

[ "$(id -u)" = 0 ] || die "needs root (loop devices, FUSE mounts)"
[ -e /dev/fuse ] || die "needs /dev/fuse"
param=/sys/module/fuse/parameters/enable_uring
[ -e "$param" ] || die "the kernel has no FUSE over io_uring ($param)"
echo Y >"$param"
need=()
command -v fio >/dev/null || need+=(fio)
command -v mkfs.ext4 >/dev/null || need+=(e2fsprogs)
if [ ${#need[@]} -gt 0 ]; then
    log "installing ${need[*]}"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
fi

log "building lukskit (release)"
(cd "$repo" && cargo build --release -q -p lukskit-cli)
L=$target/release/lukskit

mkdir -p "$work"
name=lkpaths$$
mnt=$work/mnt
mkdir -p "$mnt"
plain_loop=""
cleanup() {
    set +e
    mountpoint -q "$mnt" && umount "$mnt"
    [ -n "$plain_loop" ] && losetup -d "$plain_loop"
    "$L" close "$name" 2>/dev/null
    rm -rf "$work"
}
trap cleanup EXIT
printf pw >"$work/kf"

# fio_run RW BS FILE -> "MiB/s IOPS" (as bench/block.sh)
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

jobs=("write 1M" "read 1M" "randwrite 4k" "randread 4k")
read -r -a paths <<<"${PATHS:-classic uring}"
declare -A R
suite() { # label device
    local label=$1 dev=$2
    mkfs.ext4 -q -F -E lazy_itable_init=0,lazy_journal_init=0 "$dev"
    mount "$dev" "$mnt"
    fio_run write 1M "$mnt/f" >/dev/null
    for job in "${jobs[@]}"; do
        # shellcheck disable=SC2086 # split "rw bs" on purpose
        set -- $job
        R[$round,$label,$1]=$(fio_run "$1" "$2" "$mnt/f")
        log "  round $round $label $1 $2: ${R[$round,$label,$1]}"
    done
    umount "$mnt"
}

truncate -s "${size_mib}M" "$work/plain.img"
truncate -s "$((size_mib + 16))M" "$work/luks.img"
"$L" luksFormat -q --pbkdf pbkdf2 --pbkdf-force-iterations 1000 -d "$work/kf" "$work/luks.img"
declare -A LOAD
for round in $(seq "$rounds"); do
    LOAD[$round]=$(cut -d' ' -f1-3 /proc/loadavg)
    log "round $round (load ${LOAD[$round]})"
    plain_loop=$(losetup --direct-io=on --show -f "$work/plain.img")
    suite plain "$plain_loop"
    losetup -d "$plain_loop"
    plain_loop=""
    for path in "${paths[@]}"; do
        flag=1 pin=1
        case $path in
        classic) flag=0 ;;
        uring) ;;
        uring-unpinned) pin=0 ;;
        uring-pinned) pin=1 ;;
        *) die "unknown path $path (classic, uring, uring-pinned, uring-unpinned)" ;;
        esac
        case $path in uring) envs=(LUKSKIT_FUSE_URING=1) ;; *) envs=(LUKSKIT_FUSE_URING=$flag LUKSKIT_FUSE_URING_PIN=$pin) ;; esac
        env "${envs[@]}" "$L" open -d "$work/kf" "$work/luks.img" "$name"
        pid=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["pid"])' \
            "/run/lukskit/$name/state.json")
        n=$(cat /proc/"$pid"/task/*/comm | grep -c lukskit-furing || true)
        if [ "$flag" = 1 ] && [ "$n" = 0 ]; then die "no FUSE io_uring threads: not served over io_uring"; fi
        if [ "$flag" = 0 ] && [ "$n" != 0 ]; then die "io_uring threads on the classic path"; fi
        suite "$path" "/dev/mapper/$name"
        "$L" close "$name"
    done
done
load_end=$(cut -d' ' -f1-3 /proc/loadavg)

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "-" }'; }
median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else printf "%.2f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
value() { # round label rw -> MiB/s (sequential) or IOPS (random)
    local col=1
    case $3 in rand*) col=2 ;; esac
    echo "${R[$1,$2,$3]}" | cut -d' ' -f$col
}
{
    echo "## FUSE request paths side by side (\`bench/fuse-paths.sh\`)"
    echo
    echo "* Date: $(date -u '+%Y-%m-%d %H:%M UTC'); $(nproc) CPUs; kernel $(uname -r); load average at the end $load_end"
    echo "* ${size_mib} MiB volumes in \`$work\`; fio ${secs} s per job, iodepth 16, O_DIRECT, ext4; paths: ${paths[*]}"
    echo
    head="| Round (load before) | Job | plain"
    rule="|---|---|---"
    for path in "${paths[@]}"; do head+=" | $path"; rule+="|---"; done
    for path in "${paths[@]}"; do head+=" | $path / plain"; rule+="|---"; done
    echo "$head |"
    echo "$rule|"
    for round in $(seq "$rounds"); do
        for job in "${jobs[@]}"; do
            # shellcheck disable=SC2086
            set -- $job
            unit="MiB/s"
            case $1 in rand*) unit=IOPS ;; esac
            p=$(value "$round" plain "$1")
            line="| $round (${LOAD[$round]}) | $1 $2 ($unit) | $p"
            for path in "${paths[@]}"; do line+=" | $(value "$round" "$path" "$1")"; done
            for path in "${paths[@]}"; do line+=" | $(ratio "$(value "$round" "$path" "$1")" "$p")"; done
            echo "$line |"
        done
    done
    echo
    echo "Median over the rounds of each round's ratio to plain:"
    echo
    head="| Job"
    rule="|---"
    for path in "${paths[@]}"; do head+=" | $path / plain"; rule+="|---"; done
    echo "$head |"
    echo "$rule|"
    declare -A MED
    for job in "${jobs[@]}"; do
        # shellcheck disable=SC2086
        set -- $job
        line="| $1 $2"
        for path in "${paths[@]}"; do
            rs=()
            for round in $(seq "$rounds"); do
                rs+=("$(ratio "$(value "$round" "$path" "$1")" "$(value "$round" plain "$1")")")
            done
            MED[$path,$1]=$(median "${rs[@]}")
            line+=" | ${MED[$path,$1]}"
        done
        echo "$line |"
    done
    # The issue's goals for each path, on the slower of the two jobs of a kind.
    slower() { printf '%s\n' "$@" | sort -g | head -1; }
    verdict() { awk -v m="$1" -v g="$2" 'BEGIN { print (m >= g) ? "holds" : "**missed**" }'; }
    echo
    echo "| Target (issue 17), medians over the rounds | Path | Measured | Verdict |"
    echo "|---|---|---|---|"
    for path in "${paths[@]}"; do
        seq_r=$(slower "${MED[$path,write]}" "${MED[$path,read]}")
        rnd_r=$(slower "${MED[$path,randwrite]}" "${MED[$path,randread]}")
        echo "| sequential (1 MiB, slower of write/read) >= 0.95x the plain loop device | $path | $seq_r | $(verdict "$seq_r" 0.95) |"
        echo "| random 4 KiB (slower of write/read) >= 0.85x the plain loop device | $path | $rnd_r | $(verdict "$rnd_r" 0.85) |"
    done
} >"$outfile"
