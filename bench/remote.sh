#!/usr/bin/env bash
# Ciphertext on a local NBD server: read and write the plaintext of a 1 GiB LUKS1 volume
# (aes-xts-plain64, 512-bit key) whose ciphertext nbdkit serves, side by side with the same
# volume as a local file and with nbdkit's own luks filter serving the same data, in one
# run on one machine. Writes bench/remote.md (or DIR/remote.md); bench/run.sh includes it
# in BENCHMARKS.md.
#
#   sudo bench/remote.sh                 # ~3-5 minutes
#   REMOTE_SIZE_MIB=256 bench/remote.sh /tmp/out
#
# Every setup serves the plaintext as an NBD export on a Unix socket, and `nbdcopy`
# (4 connections, --flush) reads all of it (to null:) and writes all of it (from a file of
# random data in the page cache); best of 3:
#   * lukskit, ciphertext behind nbdkit: `lukskit open --nbd unix:EXPORT` of
#     nbd+unix:///?socket=CIPHERTEXT, where `nbdkit file` serves the LUKS1 image;
#   * lukskit, ciphertext behind nbdkit over TLS: the same with nbds://localhost:PORT
#     (nbdkit --tls=require, certificates from scripts/nbd-tls-certs.sh);
#   * lukskit, local file: `lukskit open --nbd unix:EXPORT` of the image file itself;
#   * nbdkit luks filter: `nbdkit --filter=luks file IMAGE` (decrypts in nbdkit).
#
# Needs root (lukskit open keeps its state in /run/lukskit) and /dev/fuse; installs
# nbdkit, libnbd-bin, qemu-utils and gnutls-bin with apt-get when missing.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$repo/bench}
size_mib=${REMOTE_SIZE_MIB:-1024}
target=${CARGO_TARGET_DIR:-$repo/target}
work=${REMOTE_WORK_DIR:-$target/bench-remote}

log() { echo "[remote] $*" >&2; }
die() { echo "[remote] $*" >&2; exit 1; }

[ "$(id -u)" = 0 ] || die "needs root (lukskit open)"
need=()
command -v qemu-img >/dev/null || need+=(qemu-utils)
command -v nbdcopy >/dev/null || need+=(libnbd-bin)
command -v nbdkit >/dev/null || need+=(nbdkit)
command -v certtool >/dev/null || need+=(gnutls-bin)
command -v cryptsetup >/dev/null || need+=(cryptsetup-bin)
if [ ${#need[@]} -gt 0 ]; then
    log "installing ${need[*]}"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
fi

if [ -z "${LUKSKIT_BIN:-}" ]; then
    log "building lukskit (release)"
    (cd "$repo" && cargo build --release -q -p lukskit-cli)
fi
L=${LUKSKIT_BIN:-$target/release/lukskit}
revision="$(cd "$repo" && git rev-parse --short HEAD 2>/dev/null || echo unknown)"

rm -rf "$work"
mkdir -p "$work" "$out"
name=lkremote$$
exp=$work/export.sock
ciph=$work/ciphertext.sock
srv_pid=""
cleanup() {
    "$L" close "$name" >/dev/null 2>&1 || true
    [ -n "$srv_pid" ] && kill "$srv_pid" 2>/dev/null || true
}
trap cleanup EXIT
load_start=$(cut -d' ' -f1-3 /proc/loadavg)

log "LUKS1 image of $size_mib MiB"
head -c $((size_mib * 1048576)) /dev/urandom >"$work/data.raw"
printf pw >"$work/kf"
# cryptsetup's LUKS1 (payload at 2 MiB); the data area is filled with random bytes (no
# holes: every read does real I/O and decryption).
truncate -s $(((size_mib + 2) * 1048576)) "$work/vol.luks"
cryptsetup luksFormat -q --type luks1 -c aes-xts-plain64 -s 512 --pbkdf-force-iterations 1000 \
    -d "$work/kf" "$work/vol.luks"
dd if="$work/data.raw" of="$work/vol.luks" bs=1M seek=2 conv=notrunc status=none
"$repo/scripts/nbd-tls-certs.sh" "$work/pki" >/dev/null

wait_sock() { for _ in $(seq 200); do [ -S "$1" ] && return 0; sleep 0.05; done; die "no socket $1"; }
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
pair() { # -> "read_s write_s" of the plaintext export at $exp
    local uri="nbd+unix:///?socket=$exp" r w
    r=$(best_of nbdcopy --connections=4 "$uri" null:)
    w=$(best_of nbdcopy --connections=4 --flush "$work/data.raw" "$uri")
    echo "$r $w"
}
lukskit_pair() { # device -> "read_s write_s"
    rm -f "$exp"
    "$L" open --nbd "unix:$exp" -d "$work/kf" "$1" "$name" >/dev/null
    wait_sock "$exp"
    pair
    "$L" close "$name"
}
start_nbdkit() { # nbdkit arguments...
    nbdkit -f "$@" >/dev/null 2>&1 & srv_pid=$!
}
stop_nbdkit() { kill "$srv_pid"; wait "$srv_pid" 2>/dev/null || true; srv_pid=""; }

log "lukskit, ciphertext behind nbdkit (Unix socket)"
rm -f "$ciph"
start_nbdkit -U "$ciph" file "$work/vol.luks"
wait_sock "$ciph"
read -r ar aw < <(lukskit_pair "nbd+unix:///?socket=$ciph")
stop_nbdkit
log "  read $ar s, write $aw s"

log "lukskit, ciphertext behind nbdkit over TLS (TCP, localhost)"
port=$((20000 + $$ % 20000))
start_nbdkit -p "$port" -i 127.0.0.1 --tls=require --tls-certificates "$work/pki" \
    file "$work/vol.luks"
for _ in $(seq 100); do nbdinfo --size "nbds://localhost:$port/?tls-certificates=$work/pki" \
    >/dev/null 2>&1 && break; sleep 0.1; done
read -r tr tw < <(lukskit_pair "nbds://localhost:$port/?tls-certificates=$work/pki")
stop_nbdkit
log "  read $tr s, write $tw s"

log "lukskit, local file"
read -r fr fw < <(lukskit_pair "$work/vol.luks")
log "  read $fr s, write $fw s"

log "nbdkit luks filter"
rm -f "$exp"
start_nbdkit -U "$exp" --filter=luks file "$work/vol.luks" passphrase=pw
wait_sock "$exp"
read -r kr kw < <(pair)
stop_nbdkit
log "  read $kr s, write $kw s"

mibs() { awk -v s="$size_mib" -v t="$1" 'BEGIN {if (t+0>0) printf "%.0f", s/t; else print "n/a"}'; }
cell() { echo "$1 s ($(mibs "$1") MiB/s)"; }
{
    echo "## Ciphertext behind a local NBD server (\`bench/remote.sh\`)"
    echo
    echo "* Date: $(date -u '+%Y-%m-%d %H:%M UTC'); load average at start $load_start, at end $(cut -d' ' -f1-3 /proc/loadavg)"
    echo "* Machine: $(lscpu | sed -n 's/^Model name: *//p' | head -1), $(nproc) online CPUs; $(uname -r); $(nbdkit --version | head -1); $(nbdcopy --version | head -1)"
    echo "* lukskit: $revision, release build; $size_mib MiB LUKS1 volume (aes-xts-plain64, 512-bit key, 512-byte sectors) in \`$work\`"
    echo
    echo "\`nbdcopy --connections=4\` of the whole plaintext out of (read, to \`null:\`) and into"
    echo "(write, \`--flush\`) an NBD export of it on a Unix socket, best of 3. The three lukskit"
    echo "rows are \`lukskit open --nbd\` of the same image reached three ways; the last row is"
    echo "nbdkit decrypting the same image itself. With the ciphertext behind nbdkit, every"
    echo "request crosses two NBD hops (nbdcopy → lukskit → nbdkit) and only ciphertext crosses"
    echo "the second one."
    echo
    echo "| Plaintext served by | Read | Write |"
    echo "|---|---|---|"
    echo "| lukskit, ciphertext behind \`nbdkit file\` (nbd+unix://) | $(cell "$ar") | $(cell "$aw") |"
    echo "| lukskit, ciphertext behind \`nbdkit file --tls=require\` (nbds://localhost) | $(cell "$tr") | $(cell "$tw") |"
    echo "| lukskit, ciphertext in a local file | $(cell "$fr") | $(cell "$fw") |"
    echo "| nbdkit luks filter (LUKS1), same image | $(cell "$kr") | $(cell "$kw") |"
} >"$out/remote.md"
log "wrote $out/remote.md"
