#!/usr/bin/env bash
# AES-256-XTS side by side in one process (bench/xts-peers): lukskit's sector path, AWS-LC's
# and OpenSSL's EVP AES-256-XTS on the same buffer, plus lukskit's 256-bit kernels, 512-byte
# sectors (eight- and four-register 512-bit kernels) and 1 vs 2 threads (XTS and CBC-ESSIV
# decryption) beside the machine's own ceiling (AWS-LC in 1 and 2 threads, `openssl speed
# -multi 2` vs `-multi 1`). Several runs; each run's ratios come from that run only. Writes bench/xts-peers.md (or the file given as $1).
#
#   bench/xts-peers.sh                       # 3 runs, 5 rounds of 400 ms per implementation
#   XTS_RUNS=5 XTS_MS=300 bench/xts-peers.sh /tmp/x.md
#
# Needs cargo, a C compiler and cmake (AWS-LC is built from source by aws-lc-sys) and
# OpenSSL's headers (libssl-dev). bench/xts-peers is not part of the lukskit workspace: the
# normal and static builds never compile AWS-LC.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$repo/bench/xts-peers.md}
runs=${XTS_RUNS:-3}
ms=${XTS_MS:-400}
target=${CARGO_TARGET_DIR:-$repo/target}/xts-peers
log() { echo "[xts-peers] $*" >&2; }

if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    for p in cmake:cmake cc:gcc pkg-config:pkg-config; do
        command -v "${p%%:*}" >/dev/null ||
            DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${p#*:}" >/dev/null
    done
    [ -e /usr/include/openssl/evp.h ] ||
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libssl-dev >/dev/null
fi
log "building bench/xts-peers (release; AWS-LC from source the first time)"
(cd "$repo/bench/xts-peers" && CARGO_TARGET_DIR=$target cargo build --release -q)
bin=$target/release/lukskit-xts-peers
revision="$(cd "$repo" && git rev-parse --short HEAD 2>/dev/null || echo unknown)"

# One run -> markdown rows; $1 = run number.
one_run() {
    local load res
    load=$(cut -d' ' -f1-3 /proc/loadavg)
    res=$("$bin" --ms "$ms" --rounds 5 --cpu-time)
    # The machine's ceiling once more, from another program: OpenSSL in 1 and 2 processes.
    local m
    for m in 1 2; do
        res+=$'\n'"openssl-speed-multi$m 4096 enc	$(openssl speed -multi "$m" -seconds 1 -bytes 4096 \
            -evp aes-256-xts 2>/dev/null | awk '/^AES-256-XTS/ {sub("k", "", $2); printf "%.1f", $2 * 1000 / 1048576}')"
    done
    echo "$res" | awk -F'\t' -v run="$1" -v load="$load" -v ratios="$ratios" '
        { v[$1] = $2 }
        function min(a, b) { return a < b ? a : b }
        function max(a, b) { return a > b ? a : b }
        function r(a, b) { return b > 0 ? sprintf("%.2f", a / b) : "n/a" }
        END {
            l4 = min(v["lukskit 4096 enc"], v["lukskit 4096 dec"])
            l5 = min(v["lukskit 512 enc"], v["lukskit 512 dec"])
            n4 = min(v["lukskit-256bit 4096 enc"], v["lukskit-256bit 4096 dec"])
            a4 = min(v["awslc 4096 enc"], v["awslc 4096 dec"])
            a5 = min(v["awslc 512 enc"], v["awslc 512 dec"])
            o4 = min(max(v["openssl 4096 enc"], v["openssl-sameiv 4096 enc"]),
                     max(v["openssl 4096 dec"], v["openssl-sameiv 4096 dec"]))
            x1 = min(v["lukskit-threads1 4096 enc"], v["lukskit-threads1 4096 dec"])
            x2 = min(v["lukskit-threads2 4096 enc"], v["lukskit-threads2 4096 dec"])
            q5 = min(v["lukskit-4reg 512 enc"], v["lukskit-4reg 512 dec"])
            c1 = v["cbc-essiv-threads1 512 dec"]; c2 = v["cbc-essiv-threads2 512 dec"]
            w1 = min(v["awslc-threads1 4096 enc"], v["awslc-threads1 4096 dec"])
            w2 = min(v["awslc-threads2 4096 enc"], v["awslc-threads2 4096 dec"])
            m1 = v["openssl-speed-multi1 4096 enc"]; m2 = v["openssl-speed-multi2 4096 enc"]
            ceil = w1 > 0 ? w2 / w1 : 0
            printf "| %d | %s | %.0f | %.0f | %.0f | %.0f | %.0f | **%s** | **%s** | %s | **%s** | %s | %s | **%s** | **%s** | %s | %s | %s | %s |\n",
                run, load, l4, n4, l5, a4, o4, r(l4, a4), r(l4, o4), r(l4, n4), r(l5, l4),
                r(l5, q5), r(l5, a5), r(x2, x1), r(c2, c1), r(w2, w1), r(m2, m1),
                r(x2 / x1, ceil), r(c2 / c1, ceil)
            printf "%s %s %s %s %s %s %s %s\n", r(l4, a4), r(l4, o4), r(l5, l4), r(x2, x1),
                r(c2, c1), r(w2, w1), r(x2 / x1, ceil), r(c2 / c1, ceil) >> ratios
        }'
    echo "$res" >>"$raw"
}

raw=$(mktemp)
ratios=$(mktemp)
rows=""
for i in $(seq 1 "$runs"); do
    log "run $i of $runs"
    echo "# run $i, load $(cut -d' ' -f1-3 /proc/loadavg)" >>"$raw"
    rows+="$(one_run "$i")"$'\n'
done
{
    echo "## AES-XTS beside AWS-LC and OpenSSL (\`bench/xts-peers.sh\`)"
    echo
    echo "* Date: $(date -u '+%Y-%m-%d %H:%M UTC'); lukskit $revision; $(nproc) online CPUs;" \
        "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
    echo "* AWS-LC: aws-lc-sys $(awk '/^name = "aws-lc-sys"/ {getline; gsub(/"/, "", $3); print $3}' "$repo/bench/xts-peers/Cargo.lock"); $(openssl version | cut -d' ' -f1-2)"
    echo "* One process, 1 MiB buffer, AES-256-XTS (512-bit key), plain64 IV per data unit;"
    echo "  implementations measured in turns, 5 rounds of $ms ms each, best round kept."
    echo "  Single-thread figures are per second of the measuring thread's CPU time (\`--cpu-time\`:"
    echo "  on this shared machine, time slices given to other processes do not count), the"
    echo "  thread-scaling ones per wall-clock second. The machine's own 1 → 2 thread ceiling is"
    echo "  AWS-LC in 1 and 2 threads (own context and buffer each, nothing shared) and"
    echo "  \`openssl speed -multi 2\` vs \`-multi 1\` (4 KiB, 1 s each); lukskit's scaling is"
    echo "  also given relative to the AWS-LC ceiling."
    echo "  OpenSSL: the faster of a new IV per unit and \`openssl speed\`'s unchanged IV."
    echo "  Each figure is the slower of encryption and decryption (MiB/s); the ratios of a row"
    echo "  come from that run only. Load = load average (1/5/15 min) at the start of the run:"
    echo "  with 2 CPUs, figures are only meaningful when it is well below 2."
    echo
    echo "| Run | Load | lukskit 4 KiB | lukskit 256-bit kernels 4 KiB | lukskit 512 B | AWS-LC 4 KiB | OpenSSL 4 KiB | vs AWS-LC (≥ 1.0) | vs OpenSSL (≥ 1.8) | 512-bit / 256-bit kernels | 512 B / 4 KiB (≥ 0.80) | 512 B: 8 / 4 registers | 512 B vs AWS-LC 512 B | XTS 2 / 1 threads (≥ 1.9) | CBC-ESSIV dec 2 / 1 threads (≥ 1.9) | ceiling: AWS-LC 2 / 1 threads | ceiling: openssl speed -multi 2 / 1 | XTS scaling / ceiling | CBC-ESSIV dec scaling / ceiling |"
    echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
    printf '%s' "$rows"
    echo
    echo "| Target (issue 17), median of the $runs runs | Measured | Verdict |"
    echo "|---|---|---|"
    med() { # column -> median of that column of $ratios
        cut -d' ' -f"$1" "$ratios" | sort -g | awk '{a[NR] = $1} END {print (NR % 2) ? a[(NR + 1) / 2] : sprintf("%.2f", (a[NR / 2] + a[NR / 2 + 1]) / 2)}'
    }
    verdict() { awk -v v="$1" -v t="$2" 'BEGIN {print (v + 0 >= t) ? "holds" : "**missed**"}'; }
    row() { echo "| $1 | $(med "$2")$3 | $(verdict "$(med "$2")" "$4") |"; }
    row "AES-XTS 4 KiB, 1 core ≥ 1.0x AWS-LC" 1 x 1.0
    row "AES-XTS 4 KiB, 1 core ≥ 1.8x OpenSSL" 2 x 1.8
    row "512-byte sectors ≥ 80% of 4 KiB" 3 "" 0.80
    # A scaling figure says nothing when the trivially parallel load (AWS-LC, one context
    # per thread) could not scale either: other processes held the second CPU.
    scaling_row() {
        if awk -v c="$(med 6)" 'BEGIN {exit !(c + 0 < 1.8)}'; then
            echo "| $1 | $(med "$2")x | not judged: the machine's own ceiling was $(med 6)x (load) |"
        else
            row "$@"
        fi
    }
    scaling_row "AES-XTS 1 → 2 threads ≥ 1.9x" 4 x 1.9
    scaling_row "AES-CBC-ESSIV decryption 1 → 2 threads ≥ 1.9x" 5 x 1.9
    echo "| (machine ceiling: AWS-LC 1 → 2 threads) | $(med 6)x | — |"
    echo "| (XTS scaling relative to that ceiling) | $(med 7) | — |"
    echo "| (CBC-ESSIV dec scaling relative to that ceiling) | $(med 8) | — |"
    echo
    echo "<details><summary>Raw figures (MiB/s)</summary>"
    echo
    echo '```'
    cat "$raw"
    echo '```'
    echo
    echo "</details>"
} >"$out"
rm -f "$raw" "$ratios"
log "wrote $out"
