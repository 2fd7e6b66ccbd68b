#!/usr/bin/env bash
# Re-encryption throughput (issue 15, item 6), side by side in one run on one machine:
# a 1 GiB LUKS2 volume (aes-xts-plain64, 512-bit key, 4 KiB sectors) in an image file,
# re-encrypted offline to a new key by lukskit and by cryptsetup (--force-offline-reencrypt)
# with resilience `none` and `checksum`, against the rate at which the same storage copies
# the same bytes: `dd iflag=direct oflag=direct conv=fdatasync` of the 1 GiB data area to a
# file in the same directory, already written in full and overwritten in place (read 1 GiB +
# write 1 GiB over existing blocks, as a re-encryption in place does).
# Page cache dropped before every run; each run timed until \`sync\` of the image returns.
# $REENC_RUNS rounds (default 3), each one dd run then every tool run, interleaved. The
# storage of a VM varies by 2-3x within minutes, so each tool run is compared with the dd run
# of its own round (paired ratio, dd seconds / tool seconds), and the verdict is the median
# of those paired ratios; the best and slowest runs are shown too.
# Writes bench/reencrypt.md (or $1/reencrypt.md).
#
#   sudo bench/reencrypt.sh            # ~3-5 minutes
#   REENC_SIZE_MIB=256 REENC_RUNS=1 bench/reencrypt.sh /tmp/out
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$repo/bench}
size_mib=${REENC_SIZE_MIB:-1024}
runs=${REENC_RUNS:-3}
target=${CARGO_TARGET_DIR:-$repo/target}
work=${REENC_WORK_DIR:-$target/bench-reencrypt}

log() { echo "[reencrypt] $*" >&2; }
die() { echo "[reencrypt] $*" >&2; exit 1; }

[ "$(id -u)" = 0 ] || die "needs root (drop_caches)"
command -v cryptsetup >/dev/null || {
    log "installing cryptsetup-bin"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq cryptsetup-bin >/dev/null
}
if [ -z "${LUKSKIT_BIN:-}" ]; then
    log "building lukskit (release)"
    (cd "$repo" && cargo build --release -q -p lukskit-cli)
    L=$target/release/lukskit
else
    L=$LUKSKIT_BIN
fi

mkdir -p "$work" "$out"
trap 'rm -rf "$work"' EXIT
img=$work/vol.img
kf=$work/kf
printf 'bench passphrase' >"$kf"
fast=(--pbkdf pbkdf2 --pbkdf-force-iterations 1000)
hdr=$((16 << 20))
bytes=$((size_mib << 20))

drop() { sync; echo 3 >/proc/sys/vm/drop_caches; }
now() { date +%s.%N; }

fresh() {
    # Random data area (its content does not change the cost), then a LUKS2 header.
    head -c $((hdr + bytes)) /dev/urandom >"$img"
    cryptsetup luksFormat -q --type luks2 -c aes-xts-plain64 -s 512 --sector-size 4096 \
        "${fast[@]}" -d "$kf" "$img"
}

best() { sort -g | head -1; }
# Median of the numbers on stdin (one per line).
median() { sort -g | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
# Paired ratios of a tool: dd seconds of round i / the tool's seconds of round i.
paired() { paste <(printf '%s' "${secs[dd]}") <(printf '%s' "${secs[$1]}") | awk '{printf "%.4f\n", $1 / $2}'; }
worst() { sort -g | tail -1; }

time_dd() {
    # Into a file already written in full, overwritten in place (conv=notrunc), as a
    # re-encryption overwrites its data area: no block allocation in the baseline.
    local t0 t1
    [ -f "$work/copy" ] || head -c "$bytes" /dev/urandom >"$work/copy"
    drop
    t0=$(now)
    dd if="$img" of="$work/copy" bs=4M skip=$((hdr >> 22)) count=$((bytes >> 22)) \
        iflag=direct oflag=direct conv=notrunc,fdatasync status=none
    t1=$(now)
    echo "$t1 - $t0" | bc -l
}

time_tool() { # tool resilience
    local tool=$1 res=$2 bin t0 t1
    [ "$tool" = lukskit ] && bin=$L || bin=cryptsetup
    fresh
    drop
    t0=$(now)
    "$bin" reencrypt -q --force-offline-reencrypt --resilience "$res" "${fast[@]}" \
        -d "$kf" "$img" >/dev/null
    # Until the data is on the storage (resilience none syncs nothing per hot zone).
    sync "$img"
    t1=$(now)
    cryptsetup open --test-passphrase -d "$kf" "$img" || die "$tool $res: result does not open"
    echo "$t1 - $t0" | bc -l
}

load_start=$(cut -d' ' -f1-3 /proc/loadavg)
start=$(date -u '+%Y-%m-%d %H:%M UTC')
fresh
declare -A secs
for i in $(seq "$runs"); do
    log "run $i/$runs: dd"
    secs[dd]+="$(time_dd)"$'\n'
    for tool in lukskit cryptsetup; do
        for res in none checksum; do
            log "run $i/$runs: $tool --resilience $res"
            secs[$tool-$res]+="$(time_tool "$tool" "$res")"$'\n'
        done
    done
done
load_end=$(cut -d' ' -f1-3 /proc/loadavg)

rate() { echo "scale=1; $size_mib / $1" | bc -l; }
dd_s=$(printf '%s' "${secs[dd]}" | best)
dd_r=$(rate "$dd_s")
fs=$(df -T "$work" | awk 'NR==2 {print $2}')
cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')
{
    echo "## Re-encryption throughput (\`bench/reencrypt.sh\`)"
    echo
    echo "* Date: $start; load average at start $load_start, at end $load_end"
    echo "* Machine: $cpu, $(nproc) online CPUs; kernel $(uname -r)"
    echo "* Storage: files in \`$work\` ($fs); $(cryptsetup --version)"
    if [ -z "${LUKSKIT_BIN:-}" ]; then
        echo "* lukskit: $(cd "$repo" && git rev-parse --short HEAD), release build"
    else
        echo "* lukskit: \`$L\` (LUKSKIT_BIN)"
    fi
    echo
    echo "A ${size_mib} MiB LUKS2 data area (aes-xts-plain64, 512-bit key, 4096-byte sectors)"
    echo "re-encrypted offline in place to a new volume key with the same cipher. Baseline:"
    echo "\`dd bs=4M iflag=direct oflag=direct conv=notrunc,fdatasync\` of the same ${size_mib} MiB"
    echo "over a file of that size already written on the same storage (no block allocation)."
    echo "Page cache dropped before each run. $runs rounds, each a dd run then every tool run;"
    echo "the storage (a VM's virtual disk) varies by 2-3x within minutes, so each tool run is"
    echo "compared with the dd run of its own round: *paired ratio* = dd seconds / tool seconds"
    echo "of that round; the table gives their median and range, and the best and slowest run."
    echo
    echo "| What | Seconds (best) | MiB/s (best) | Slowest run (s) | vs dd, paired: median | paired: min-max | best vs best dd |"
    echo "|---|---|---|---|---|---|---|"
    printf '| dd copy (O_DIRECT) | %.2f | %s | %.2f | 1.00 | | 1.00 |\n' "$dd_s" "$dd_r" \
        "$(printf '%s' "${secs[dd]}" | worst)"
    for tool in lukskit cryptsetup; do
        for res in none checksum; do
            s=$(printf '%s' "${secs[$tool-$res]}" | best)
            r=$(rate "$s")
            printf '| %s reencrypt --resilience %s | %.2f | %s | %.2f | %.2f | %.2f-%.2f | %.2f |\n' \
                "$tool" "$res" "$s" "$r" "$(printf '%s' "${secs[$tool-$res]}" | worst)" \
                "$(paired "$tool-$res" | median)" "$(paired "$tool-$res" | best)" \
                "$(paired "$tool-$res" | worst)" "$(echo "$r / $dd_r" | bc -l)"
        done
    done
    echo
    echo "Seconds per round (dd, lukskit none, lukskit checksum, cryptsetup none, cryptsetup checksum):"
    echo
    echo '```'
    paste <(printf '%s' "${secs[dd]}") <(printf '%s' "${secs[lukskit-none]}") \
        <(printf '%s' "${secs[lukskit-checksum]}") <(printf '%s' "${secs[cryptsetup-none]}") \
        <(printf '%s' "${secs[cryptsetup-checksum]}") |
        awk '{printf "round %d: %.2f  %.2f  %.2f  %.2f  %.2f\n", NR, $1, $2, $3, $4, $5}'
    echo '```'
    echo
    m_none=$(paired lukskit-none | median)
    m_sum=$(paired lukskit-checksum | median)
    ratio=$(echo "if ($m_none < $m_sum) $m_none else $m_sum" | bc -l)
    verdict=$(echo "$ratio >= 0.8" | bc -l)
    echo "| Target (issue 15) | Measured | Verdict |"
    echo "|---|---|---|"
    printf '| lukskit (slower of none/checksum, median paired ratio) ≥ 80%% of the dd copy | %.2f | %s |\n' \
        "$ratio" "$([ "$verdict" = 1 ] && echo holds || echo "does not hold")"
} >"$out/reencrypt.md"
cat "$out/reencrypt.md"
