#!/usr/bin/env bash
# Unlock time of LUKS2 keyslots (issue 33, item 4): `open --test-passphrase` by lukskit and by
# cryptsetup 2.6.1 on volumes cryptsetup made, side by side in one run, interleaved (the tool
# order alternating each round), medians of wall time and of CPU time (user + sys).
#
# Cases (20 MiB LUKS2 images, one keyslot, made by cryptsetup here):
#   argon2id-default  cryptsetup 2.6.1's defaults on this machine (its benchmark picks the costs)
#   argon2id-1g       Argon2id 1 GiB x 4 iterations x 4 lanes asked (cryptsetup caps the lanes
#                     at the online CPUs: 2 on a 2-CPU machine)
#   pbkdf2-sha1       PBKDF2-SHA1,   $UNLOCK_ITER iterations (default 1000000)
#   pbkdf2-sha256     PBKDF2-SHA256, $UNLOCK_ITER iterations
#   pbkdf2-sha512     PBKDF2-SHA512, $UNLOCK_ITER iterations
# The key is 512 bits (aes-xts-plain64), so a keyslot derives 64 bytes: 4 SHA-1 blocks, 2
# SHA-256 blocks, 1 SHA-512 block (PBKDF2 computes each block as an independent chain).
#
# The physical floor of Argon2 is memory traffic: per pass every block is written once and a
# reference block read (passes after the first also read the block they overwrite), ~2 GiB
# on the first pass and ~3 GiB on each later one for 1 GiB; `mbw` (Debian package mbw)
# measures memcpy bandwidth here, and the floor is that traffic at that bandwidth (a copy
# moves each byte twice: read and write).
#
# $UNLOCK_RUNS rounds (default 5). Writes bench/unlock.md (or $1/unlock.md).
#
#   bench/unlock.sh                      # ~5 minutes on an idle 2-core machine
#   UNLOCK_RUNS=3 bench/unlock.sh /tmp/out
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$repo/bench}
mkdir -p "$out"
runs=${UNLOCK_RUNS:-5}
iter=${UNLOCK_ITER:-1000000}
target=${CARGO_TARGET_DIR:-$repo/target}

log() { echo "[unlock] $*" >&2; }
die() { echo "[unlock] $*" >&2; exit 1; }

command -v cryptsetup >/dev/null || die "cryptsetup is missing (apt-get install cryptsetup-bin)"
cryptsetup --version | grep -q ' 2\.6\.1' || log "warning: $(cryptsetup --version) is not 2.6.1"
if [ -z "${LUKSKIT_BIN:-}" ]; then
    log "building lukskit (release)"
    (cd "$repo" && cargo build --release -q -p lukskit-cli)
    LUKSKIT_BIN=$target/release/lukskit
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
pass=$work/pass
printf 'correct horse battery staple' >"$pass"

cases=(argon2id-default argon2id-1g pbkdf2-sha1 pbkdf2-sha256 pbkdf2-sha512)
format_args() {
    case $1 in
    argon2id-default) echo "" ;;
    argon2id-1g) echo "--pbkdf argon2id --pbkdf-memory 1048576 --pbkdf-force-iterations 4 --pbkdf-parallel 4" ;;
    pbkdf2-sha*) echo "--pbkdf pbkdf2 --hash ${1#pbkdf2-} --pbkdf-force-iterations $iter" ;;
    esac
}
declare -A params
for c in "${cases[@]}"; do
    img=$work/$c.img
    truncate -s 20M "$img"
    log "cryptsetup luksFormat $c"
    # shellcheck disable=SC2046
    cryptsetup luksFormat -q --type luks2 --key-file "$pass" $(format_args "$c") "$img"
    params[$c]=$(cryptsetup luksDump "$img" | awk '
        /^Keyslots:/ { k = 1 } /^Tokens:/ { k = 0 } /^Digests:/ { d = 1 }
        k && /PBKDF:/ { s = $2 } k && /Hash:/ { s = s "-" $2 }
        k && /Time cost:/ { s = s " t=" $3 } k && /Memory:/ { s = s " m=" $2 "KiB" }
        k && /Threads:/ { s = s " p=" $2 } k && /Iterations:/ && !d { s = s " i=" $2 }
        d && /Iterations:/ { s = s ", digest i=" $2 }
        END { print s }')
done

# One measurement: "WALL CPU" in seconds (bash's time: real, user + sys).
measure() { # tool image
    local t
    t=$( { TIMEFORMAT='%R %U %S'; time "$1" open --test-passphrase --key-file "$pass" "$2" >/dev/null 2>&1; } 2>&1 ) ||
        die "$1 open --test-passphrase $2 failed"
    awk -v t="$t" 'BEGIN { split(t, a, " "); printf "%s %.2f\n", a[1], a[2] + a[3] }'
}

res=$work/results
: >"$res"
for ((r = 0; r < runs; r++)); do
    for c in "${cases[@]}"; do
        if ((r % 2 == 0)); then order="cryptsetup lukskit"; else order="lukskit cryptsetup"; fi
        for tool in $order; do
            bin=cryptsetup
            [ "$tool" = lukskit ] && bin=$LUKSKIT_BIN
            m=$(measure "$bin" "$work/$c.img")
            echo "$c $tool $m" >>"$res"
            log "round $((r + 1))/$runs $c $tool $m"
        done
    done
done

median() { sort -n | awk '{ a[NR] = $1 } END { if (NR % 2) print a[(NR + 1) / 2]; else printf "%.3f\n", (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }
col() { awk -v c="$1" -v t="$2" -v f="$3" '$1 == c && $2 == t { print $f }' "$res" | median; }

bw=""
if command -v mbw >/dev/null; then
    bw=$(mbw -q -n 3 -t0 512 | awk '/^AVG/ && /MEMCPY/ { for (i = 1; i <= NF; i++) if ($i ~ /MiB\/s/) print $(i - 1) }' | tail -1)
fi

cpu=$(awk -F': ' '/model name/ { print $2; exit }' /proc/cpuinfo)
flags=$(grep -m1 '^flags' /proc/cpuinfo | tr ' ' '\n' | grep -xE 'sha_ni|avx2|avx512f|vaes' | tr '\n' ' ')
mem=$(awk '/MemTotal/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo)
{
    echo "# Unlock time: lukskit vs cryptsetup $(cryptsetup --version | awk '{ print $2 }')"
    echo
    echo "$(date -u '+%Y-%m-%d %H:%M UTC'), $(uname -m), $cpu ($flags), $(nproc) CPUs, $mem," \
        "kernel $(uname -r), load average at the end $(cut -d' ' -f1-3 /proc/loadavg)."
    echo "\`open --test-passphrase\` on 20 MiB LUKS2 images cryptsetup made, $runs rounds interleaved" \
        "(tool order alternating), medians. Speed-up = cryptsetup's time / lukskit's (> 1: lukskit faster)."
    echo
    echo "| case | keyslot (cryptsetup luksDump) | cryptsetup wall s | lukskit wall s | speed-up (wall) | cryptsetup CPU s | lukskit CPU s | speed-up (CPU) | goal ≥ 1.5x (wall) |"
    echo "|---|---|---:|---:|---:|---:|---:|---:|---|"
    for c in "${cases[@]}"; do
        cw=$(col "$c" cryptsetup 3) lw=$(col "$c" lukskit 3)
        cc=$(col "$c" cryptsetup 4) lc=$(col "$c" lukskit 4)
        awk -v c="$c" -v p="${params[$c]}" -v cw="$cw" -v lw="$lw" -v cc="$cc" -v lc="$lc" 'BEGIN {
            printf "| %s | %s | %.2f | %.2f | %.2fx | %.2f | %.2f | %.2fx | %s |\n", c, p, cw, lw, cw / lw, cc, lc, cc / lc, (cw / lw >= 1.5 ? "met" : "**missed**") }'
    done
    echo
    if [ -n "$bw" ]; then
        awk -v bw="$bw" 'BEGIN {
            gib = 1024; traffic = (2 + 3 * 3) * gib  # MiB moved by Argon2 1 GiB x 4 passes
            printf "Memory bandwidth (mbw memcpy, 512 MiB arrays): %.0f MiB/s copied = %.0f MiB/s moved.\n", bw, 2 * bw
            printf "Argon2id 1 GiB x 4 passes moves ~%d GiB: floor ~%.2f s at that bandwidth (one core copying; both cores together get more).\n", traffic / gib, traffic / (2 * bw) }'
    else
        echo "(mbw not installed: no memory-bandwidth floor measured; apt-get install mbw)"
    fi
    echo
    echo "Raw measurements (case tool wall-s cpu-s):"
    echo
    echo '```'
    cat "$res"
    echo '```'
} >"$out/unlock.md"
log "wrote $out/unlock.md"
cat "$out/unlock.md"
