#!/usr/bin/env bash
# The kernel engine vs lukskit's own engine vs `cryptsetup benchmark` (issue 33), in the
# reference VM (one boot): Debian's 6.1 kernel with AF_ALG and its drivers (AES-NI, AVX2
# Serpent, generic C) under QEMU TCG, 2 vCPUs. This host's kernel has no AF_ALG.
#
# Per round and cipher, one after the other (rounds interleave the tools):
#   cryptsetup   `cryptsetup benchmark -c SPEC -s BITS`: the kernel's crypto API over AF_ALG,
#                64 KiB requests with one IV (what dm-crypt's driver can do)
#   lk-kapi      `lukskit benchmark --engine all …`, its kernel columns: the same measurement
#                by lukskit (should equal cryptsetup's)
#   lk-own       the same command's lukskit columns: lukskit's engine, the whole dm-crypt
#                sector path (IV per 512-byte sector), 1 thread
#   img-kernel   `lukskit image encrypt|decrypt --engine kernel --threads 1` of $ENGINES_MIB MiB
#                in the guest's RAM: the kernel engine as `open --engine kernel` uses it (one
#                AF_ALG request per 512-byte sector, dm-crypt's IVs)
#   img-lukskit  the same with --engine lukskit
# Medians over $ENGINES_ROUNDS rounds (default 5) of each figure and of each round's ratios.
# The seconds are TCG's (several times the host's): the ratios are the figures.
# Writes bench/engines.md (or $1).
#
#   bench/engines.sh                  # ~5 minutes
#   ENGINES_ROUNDS=3 ENGINES_MIB=16 bench/engines.sh /tmp/e.md
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$repo/bench/engines.md}
rounds=${ENGINES_ROUNDS:-5}
mib=${ENGINES_MIB:-32}
target=${CARGO_TARGET_DIR:-$repo/target}
log() { echo "[engines] $*" >&2; }

if [ -z "${LUKSKIT_BIN:-}" ]; then
    log "building lukskit (release)"
    (cd "$repo" && cargo build --release -q -p lukskit-cli)
    LUKSKIT_BIN=$target/release/lukskit
fi
export LUKSKIT_BIN
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

cat >"$work/guest.sh" <<EOF
rounds=$rounds
mib=$mib
EOF
cat >>"$work/guest.sh" <<'EOF'
modprobe dm-crypt
head -c 64 /dev/urandom > /tmp/key
head -c $((mib * 1048576)) /dev/urandom > /tmp/plain
now() { cut -d' ' -f1 /proc/uptime; }
rate() { awk -v m="$mib" -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", m / (b - a) }'; }
echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //'), $(nproc) vCPUs, kernel $(uname -r)"
r=1
while [ $r -le "$rounds" ]; do
    for c in "aes-xts-plain64 512" "aes-cbc-essiv:sha256 256" "serpent-xts-plain64 512"; do
        set -- $c
        cryptsetup benchmark -c "$1" -s "$2" | tail -1 |
            awk -v r=$r -v c="$1" '{ print "m", r, c, "cryptsetup", $3, $5 }'
        lukskit benchmark --engine all -c "$1" -s "$2" --sector-size 512 | tail -1 |
            awk -v r=$r -v c="$1" '{ print "m", r, c, "lk-kapi", $3, $5; print "m", r, c, "lk-own", $7, $9 }'
        for e in kernel lukskit; do
            o="--type plain -c $1 -s $2 --sector-size 512 -d /tmp/key --threads 1 --engine $e"
            rm -f /tmp/img /tmp/back
            t0=$(now); lukskit image encrypt -q $o /tmp/plain /tmp/img; t1=$(now)
            lukskit image decrypt -q $o /tmp/img /tmp/back; t2=$(now)
            cmp -s /tmp/plain /tmp/back || echo "error: $c $e: round trip differs"
            echo "m $r $1 img-$e $(rate "$t0" "$t1") $(rate "$t1" "$t2")"
        done
        # Both engines wrote the same image (checked once per round).
        o="--type plain -c $1 -s $2 --sector-size 512 -d /tmp/key --threads 1"
        lukskit image encrypt -q $o --engine kernel /tmp/plain /tmp/ik
        lukskit image encrypt -q $o --engine lukskit /tmp/plain /tmp/il
        cmp -s /tmp/ik /tmp/il || echo "error: $c: engines wrote different images"
        rm -f /tmp/ik /tmp/il
    done
    r=$((r + 1))
done
for n in 'xts(aes)' 'cbc(aes)' 'xts(serpent)'; do
    lukskit engines --json "capi:$n-plain64" | tr -d '\n ' |
        sed 's/.*"driver":{"driver":"\([^"]*\)".*/\1/; s/^/drivers: /'
    echo
done
echo "done"
EOF

log "reference VM: $rounds rounds of 3 ciphers × 5 measurements"
load0=$(cut -d' ' -f1-3 /proc/loadavg)
res=$(nice -n 10 "$repo/tests/refvm/run.sh" --timeout 3600 "$work/guest.sh")
load1=$(cut -d' ' -f1-3 /proc/loadavg)
if ! grep -q '^done$' <<<"$res" || grep -q '^error' <<<"$res"; then
    echo "$res" >&2
    log "the guest script failed"
    exit 1
fi
revision="$(cd "$repo" && git rev-parse --short HEAD 2>/dev/null || echo unknown)"
{
    echo "## Kernel engine vs lukskit's engine vs \`cryptsetup benchmark\` (\`bench/engines.sh\`)"
    echo
    echo "* Date: $(date -u '+%Y-%m-%d %H:%M UTC'); lukskit $revision, release build"
    echo "* Host: $(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //'), $(nproc) CPUs; load average $load0 at start, $load1 at end"
    echo "* Guest (reference VM, QEMU TCG): $(sed -n 's/^cpu: //p' <<<"$res")"
    echo "* Kernel drivers picked (xts(aes), cbc(aes), xts(serpent)): $(sed -n "s/^drivers: //p" <<<"$res" | tr "\n" " ")"
    echo "* $rounds rounds, medians; image: $mib MiB, 512-byte sectors, 1 thread. Enc/dec MiB/s."
    echo
    echo "| Cipher | cryptsetup benchmark | lukskit benchmark, kernel | lukskit engine (benchmark) | kernel engine (image) | lukskit engine (image) | lukskit/cryptsetup (kernel API) | kernel engine / lukskit engine (image) |"
    echo "|---|---|---|---|---|---|---|---|"
    grep '^m ' <<<"$res" | awk '
        function median(s,   n, a, i, j, t) {
            n = split(s, a, " ")
            for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
            return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
        }
        { v[$2, $3, $4, "e"] = $5; v[$2, $3, $4, "d"] = $6; rs[$2] = 1; if (!($3 in seen)) { seen[$3] = 1; order[++nc] = $3 } }
        END {
            split("cryptsetup lk-kapi lk-own img-kernel img-lukskit", tools, " ")
            for (ci = 1; ci <= nc; ci++) {
                c = order[ci]; line = "| " c
                for (ti = 1; ti <= 5; ti++) {
                    se = ""; sd = ""
                    for (r in rs) { se = se " " v[r, c, tools[ti], "e"]; sd = sd " " v[r, c, tools[ti], "d"] }
                    line = line sprintf(" | %.1f / %.1f", median(se), median(sd))
                }
                ra = ""; rb = ""
                for (r in rs) {
                    ra = ra " " (v[r, c, "lk-kapi", "e"] + v[r, c, "lk-kapi", "d"]) / (v[r, c, "cryptsetup", "e"] + v[r, c, "cryptsetup", "d"])
                    rb = rb " " (v[r, c, "img-kernel", "e"] + v[r, c, "img-kernel", "d"]) / (v[r, c, "img-lukskit", "e"] + v[r, c, "img-lukskit", "d"])
                }
                print line sprintf(" | %.2f | %.2f |", median(ra), median(rb))
            }
        }'
    echo
    echo "Ratios are per round (encryption + decryption), then the median. \"kernel API\" is"
    echo "cryptsetup's measurement (64 KiB requests, one IV); the image columns are the sector path"
    echo "that \`open --engine kernel|lukskit\` serves with (an IV per 512-byte sector: one AF_ALG"
    echo "request per sector for the kernel engine), file I/O in the guest's RAM included."
} >"$out"
log "wrote $out"
cat "$out"
