#!/usr/bin/env bash
# Run every cargo-fuzz target of lukskit for a fixed time and print the executions.
#
#   scripts/fuzz.sh [SECONDS_PER_TARGET] [TARGET...]     (default 20 s, all targets)
#
# Needs a nightly toolchain and cargo-fuzz:
#   rustup toolchain install nightly --profile minimal && cargo install cargo-fuzz
# Seeds are made at run time (never copied into the repository from elsewhere): headers of
# fresh `cryptsetup luksFormat` images (if cryptsetup is installed) and the first bytes of
# the cryptsetup test images in ../shared/testdata (if present, for the runs only). The
# committed corpora under fuzz/corpus/<target>/ are small minimised sets made by
# `scripts/fuzz.sh --seed-corpus` from the fresh seeds and what the fuzzer found.
# Each target runs with -malloc_limit_mb=64 -rss_limit_mb=1024 -timeout=10; a crash, timeout
# or out-of-memory stops the script with a non-zero status and leaves the input in
# fuzz/artifacts/<target>/. The malloc limit is the cap that matters: no single allocation a
# hostile input can ask for may reach 64 MiB (a LUKS2 JSON area is at most 4 MiB). The RSS
# limit only bounds the whole process, which under AddressSanitizer holds a 256 MiB quarantine
# of freed memory and its shadow: luks2_header (up to ten 4 MiB header areas read per input)
# levels off at about 466 MiB (2026-11-30, 530k executions), and the former 512 MiB limit
# (which was also its malloc limit) failed a 15 s CI run with an "oom-" artifact.
set -euo pipefail

here="$(cd "$(dirname "$0")/.." && pwd)"
fuzz="$here/fuzz"
secs="${1:-20}"
seed_only=0
if [ "$secs" = "--seed-corpus" ]; then
    seed_only=1
    secs=0
fi
shift || true
targets=("$@")
every_target=$(($# == 0))
if [ "${#targets[@]}" -eq 0 ]; then
    targets=(luks1_header luks2_header cipher_spec fvault2_metadata bitlk_metadata tcrypt_header tpm2_token clevis_token luks2_edits bind_config clevis_sss crypttab)
    if grep -q '^name = "nbd_request"' "$fuzz/Cargo.toml"; then
        targets+=(nbd_request)
    fi
fi
export CARGO_TARGET_DIR="${FUZZ_TARGET_DIR:-$fuzz/target}"

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# --- seeds made at run time -----------------------------------------------------------
seed_dir() { mkdir -p "$work/seeds/$1"; echo "$work/seeds/$1"; }

# Valid NBD messages for the nbd_request target (layout in fuzz/fuzz_targets/nbd_request.rs:
# byte 0 even = a 28-byte request header follows; odd = a 4-byte option number and its
# payload follow). Written from the NBD protocol description, not copied from a capture.
nbd_seeds() {
    local d="$1" magic='\x25\x60\x95\x13' handle='\x00\x00\x00\x00\xde\xad\xbe\xef'
    # request: mode, magic, flags (16), type (16), handle (64), offset (64), length (32)
    printf '%b' "\x00$magic\x00\x00\x00\x00$handle\x00\x00\x00\x00\x00\x00\x10\x00\x00\x00\x10\x00" >"$d/req-read"
    printf '%b' "\x02$magic\x00\x01\x00\x01$handle\x00\x00\x00\x00\x00\x01\x00\x00\x00\x00\x02\x00" >"$d/req-write-fua"
    printf '%b' "\x04$magic\x00\x00\x00\x04$handle\x00\x00\x00\x00\x00\x00\x00\x00\x00\x01\x00\x00" >"$d/req-trim"
    printf '%b' "\x06$magic\x00\x02\x00\x06$handle\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x10\x00" >"$d/req-wzeroes"
    printf '%b' "\x00$magic\x00\x00\x00\x03$handle\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00" >"$d/req-flush"
    printf '%b' "\x00$magic\x00\x00\x00\x02$handle\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00" >"$d/req-disc"
    # options: mode, option (32), payload
    printf '\x01\x00\x00\x00\x01vol' >"$d/opt-export-name"
    printf '\x01\x00\x00\x00\x02' >"$d/opt-abort"
    printf '\x01\x00\x00\x00\x03' >"$d/opt-list"
    printf '\x01\x00\x00\x00\x08' >"$d/opt-structured"
    # NBD_OPT_GO/INFO: name length (32), name, count (16), items (16 each)
    printf '\x01\x00\x00\x00\x07\x00\x00\x00\x03vol\x00\x02\x00\x03\x00\x01' >"$d/opt-go"
    printf '\x01\x00\x00\x00\x06\x00\x00\x00\x00\x00\x00' >"$d/opt-info-default"
    # option header (IHAVEOPT, NBD_OPT_GO, length 9); opt-list doubles as client flags 3
    printf '\x01IHAVEOPT\x00\x00\x00\x07\x00\x00\x00\x09' >"$d/opt-header"
}

# Copy the start of a LUKS2 device to $2: both header copies (2 x hdr_size, read from the
# primary binary header), at least 4 KiB and at most 64 KiB. The keyslot areas after them
# are random key material that the luks2_header target never parses.
luks2_cut() {
    local hex n
    hex="$(od -An -j8 -N8 -tx1 "$1" | tr -d ' \n')"
    n=65536
    if [ "${#hex}" = 16 ] && [ "${hex:0:10}" = 0000000000 ]; then
        n=$((2 * 16#$hex))
        [ "$n" -ge 4096 ] || n=4096
        [ "$n" -le 65536 ] || n=65536
    fi
    head -c "$n" "$1" >"$2"
}

# The FVE metadata areas (first 64 KiB) of the shared BitLocker images, for bitlk_metadata
# (its input is the area; the target puts a volume header in front of it).
bitlk_seeds() {
    local d="$1" archive="$here/../shared/testdata/other-formats/bitlk-images.tar.xz" img off
    [ -f "$archive" ] || return 0
    mkdir -p "$work/bitlk"
    tar xJSf "$archive" -C "$work/bitlk" 2>/dev/null || return 0
    for img in "$work"/bitlk/bitlk/*.img; do
        off="$(od -An -j176 -N8 -tu8 "$img" | tr -d ' ')"
        [ -n "$off" ] || continue
        dd if="$img" of="$d/td-$(basename "$img" .img)" iflag=skip_bytes,count_bytes \
            skip="$off" count=65536 status=none || true
    done
    rm -rf "$work/bitlk"
}

# systemd-tpm2 tokens for the tpm2_token target (layout in fuzz/fuzz_targets/tpm2_token.rs:
# byte 0 = 0 token JSON, 1 a TPMT_PUBLIC/blob/frame, 2 a TPM's responses). The token's shape
# is what systemd-cryptenroll 252 writes; the blob is a keyed-hash object's public area.
tpm2_seeds() {
    local d="$1" pub='\x00\x08\x00\x0b\x00\x00\x00\x12\x00\x20'
    printf '\x00{"type":"systemd-tpm2","keyslots":["1"],"tpm2-blob":"AAIAAAAKAAgACwAAABIAAA==","tpm2-pcrs":[7],"tpm2-pcr-bank":"sha256","tpm2-primary-alg":"ecc","tpm2-policy-hash":"00","tpm2-pin":true,"tpm2-salt":"AAAA"}' >"$d/token"
    printf '%b' "\x01$pub$(printf '\\x%02x' $(seq 1 32))\x00\x10\x00\x00" >"$d/public"
    # A success response to TPM2_PolicyGetDigest and an error response, as replies.
    printf '%b' '\x02\x00\x0c\x80\x01\x00\x00\x00\x0c\x00\x00\x00\x00\x00\x00\x00\x0a\x80\x01\x00\x00\x00\x0a\x00\x00\x09\x21' >"$d/replies"
}

# TrueCrypt and VeraCrypt headers for tcrypt_header (10 control bytes: byte 0 bit 0 seals the
# header's CRCs, bit 1 VeraCrypt; byte 1 the cascade; bytes 2-9 the device size; then the
# decrypted header): version 5, the rest mostly zeros; the fuzzer starts past the magic and
# CRC checks (without them a 20 s run may never get there: coverage 55 instead of 440).
tcrypt_seeds() {
    local d="$1" z8='\x00\x00\x00\x00\x00\x00\x00\x00' size='\x00\x00\x00\x40\x00\x00\x00\x00'
    local fields="\x00\x05\x07\x00\x00\x00\x00\x00$z8$z8$z8\x00\x00\x00\x00$z8\x00\x00\x00\x40\x00\x00\x00\x00\x00\x00\x00\x00\x00\x02\x00\x00\x00\x00\x00\x00\x40\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x02\x00"
    printf '%b' "\x01\x00${size}TRUE$fields" >"$d/truecrypt"
    printf '%b' "\x03\x05${size}VERA$fields" >"$d/veracrypt"
    printf '%b' "\x25\x0b${size}VERA$fields" >"$d/veracrypt-system"
}

# Pin configurations for bind_config (byte 0: 0 tang, 1 tpm2, 2 sss, 3 PCR list/bank/device)
# and pin trees for clevis_sss (byte 0 even: a protected header whose clevis.sss.jwe objects
# become compact JWEs), in the shapes clevis 19 takes and writes.
bind_seeds() {
    local d="$1" s="$2" p='"p":"wd0-g9t621WVX2GV-t27p9Y6lfrMjev1I_-xhkGSB_c"'
    printf '\x00{"url":"http://tang.example","thp":"abc"}' >"$d/tang"
    printf '\x01{"pcr_bank":"sha256","pcr_ids":"0,7"}' >"$d/tpm2"
    printf '\x02{"t":2,"pins":{"tang":[{"url":"http://a"},{"url":"http://b"}],"tpm2":{},"sss":{"t":1,"pins":{"tpm2":{"pcr_ids":[7]}}}}}' >"$d/sss"
    printf '\x037+8' >"$d/pcrs"
    printf '\x00{"alg":"dir","enc":"A256GCM","clevis":{"pin":"sss","sss":{"t":2,%s,"jwe":[{"alg":"dir","enc":"A256GCM","clevis":{"pin":"tpm2","tpm2":{}}},{"alg":"dir","enc":"A256GCM","clevis":{"pin":"sss","sss":{"t":1,%s,"jwe":[{"alg":"ECDH-ES","enc":"A256GCM","clevis":{"pin":"tang","tang":{"url":"http://a"}}}]}}}]}}}' "$p" "$p" >"$s/nested"
}

# Tables and fields for crypttab (byte 0 even: a whole table; odd: an options field and a
# device field), in the shapes Debian's and systemd's crypttab(5) describe.
crypttab_seeds() {
    local d="$1"
    printf '\x00# <target> <source> <key> <options>\nroot UUID=0b2c1d9e-8e5b-4f4c-9c0e-2c3f3e0f8a11 none luks,discard\nswap /dev/sda3 /dev/urandom swap,cipher=aes-xts-plain64,size=512\nvc /dev/sdb1 /etc/vc.key tcrypt,veracrypt,tcrypt-keyfile=/etc/k1\n' >"$d/table"
    printf '\x01luks,tpm2-device=auto,tpm2-pcrs=7+8,token-timeout=10s,tries=3,header=/h.img:UUID=1234' >"$d/options"
    printf '\x01PARTUUID=5e0f\\x20a' >"$d/device"
}

make_seeds() {
    bind_seeds "$(seed_dir bind_config)" "$(seed_dir clevis_sss)"
    crypttab_seeds "$(seed_dir crypttab)"
    local l1 l2 cs td
    bitlk_seeds "$(seed_dir bitlk_metadata)"
    l1="$(seed_dir luks1_header)"
    l2="$(seed_dir luks2_header)"
    cs="$(seed_dir cipher_spec)"
    for s in aes-xts-plain64 aes-cbc-essiv:sha256 serpent-xts-plain64 twofish-cbc-plain \
        aes-lrw-benbi aes aes-plain cipher_null 'capi:xts(aes)-plain64' aes:64-cbc-lmk \
        aes-xts-essiv:sha256 camellia-xts-plain64 cast5-cbc-tcw 'capi:cbc(aes)-essiv:sha256'; do
        printf '%s' "$s" >"$cs/$(printf '%s' "$s" | sha1sum | cut -c1-16)"
    done
    nbd_seeds "$(seed_dir nbd_request)"
    tpm2_seeds "$(seed_dir tpm2_token)"
    tcrypt_seeds "$(seed_dir tcrypt_header)"
    if command -v cryptsetup >/dev/null; then
        local i=0
        printf 'fuzz' >"$work/key"
        for args in "--type luks1" "--type luks2" "--type luks2 --luks2-metadata-size 32k --luks2-keyslots-size 1m" \
            "--type luks2 --sector-size 512 -c serpent-cbc-essiv:sha256 -s 256" "--type luks1 -c twofish-cbc-plain -h sha1 -s 128"; do
            i=$((i + 1))
            truncate -s 20M "$work/img$i"
            # shellcheck disable=SC2086
            if cryptsetup luksFormat -q $args --pbkdf pbkdf2 --pbkdf-force-iterations 1000 \
                -d "$work/key" "$work/img$i" 2>/dev/null; then
                cryptsetup token add --key-description fuzz:seed "$work/img$i" 2>/dev/null || true
                case "$args" in
                *luks1*) head -c 592 "$work/img$i" >"$l1/fresh$i" ;;
                *) luks2_cut "$work/img$i" "$l2/fresh$i" ;;
                esac
            fi
            rm -f "$work/img$i"
        done
    else
        echo "note: cryptsetup not installed; no fresh seeds" >&2
    fi
    td="$here/../shared/testdata/cryptsetup"
    if [ -d "$td" ]; then
        for f in "$td"/compatimage*.img.xz "$td"/evil_hdr-*.xz "$td"/luks2_*.img.xz; do
            [ -e "$f" ] || continue
            local b
            b="$(basename "$f" .xz)"
            xz -dc "$f" 2>/dev/null | head -c 65536 >"$work/hdr" || true
            if [ "$(head -c 6 "$work/hdr" | od -An -tx1 | tr -d ' ')" = "4c554b53babe" ] &&
                [ "$(head -c 8 "$work/hdr" | tail -c 2 | od -An -tx1 | tr -d ' ')" = "0001" ]; then
                head -c 592 "$work/hdr" >"$l1/td-$b"
            else
                luks2_cut "$work/hdr" "$l2/td-$b"
            fi
        done
    else
        echo "SKIP: ../shared/testdata/cryptsetup is absent; seeding from fresh images only" >&2
    fi
    # fvault2_metadata: the volume header, disk label and descriptor of the FileVault 2 test
    # image (its encrypted blocks lie 8 MiB in, past what the runs feed; a "td-" seed, never
    # committed).
    local fv="$here/../shared/testdata/other-formats/fvault2-images.tar.xz" f2
    f2="$(seed_dir fvault2_metadata)"
    if [ -f "$fv" ] && tar xJSf "$fv" -C "$work" fvault2/small 2>/dev/null; then
        head -c 12352 "$work/fvault2/small" >"$f2/td-small"
        rm -rf "$work/fvault2"
    fi
    printf '<key>com.apple.corestorage.lv.size</key><integer>0xa000000</integer>' >"$f2/plist"
}

make_seeds

if [ "$seed_only" = 1 ]; then
    # Minimise the run-time seeds (plus what is committed) into the committed corpora.
    # Nothing cut from ../shared/testdata goes into the repository: those seeds are only
    # used for the fixed-time runs.
    rm -f "$work"/seeds/*/td-*
    for t in "${targets[@]}"; do
        mkdir -p "$fuzz/corpus/$t" "$work/min-$t"
        (cd "$fuzz" && cargo +nightly fuzz run -O "$t" "$work/min-$t" "$fuzz/corpus/$t" \
            "$work/seeds/$t" -- -merge=1 -malloc_limit_mb=64 -rss_limit_mb=1024 -timeout=10 -max_len=65536) \
            >"$work/merge-$t.log" 2>&1 || { cat "$work/merge-$t.log"; exit 1; }
        rm -f "$fuzz/corpus/$t"/*
        cp "$work/min-$t"/* "$fuzz/corpus/$t/" 2>/dev/null || true
        echo "$t: $(find "$fuzz/corpus/$t" -type f | wc -l) corpus files"
    done
    exit 0
fi

# --- fixed-time runs -------------------------------------------------------------------
if [ "$every_target" = 1 ]; then
    # Every target: one cargo invocation (the targets link in parallel).
    (cd "$fuzz" && cargo +nightly fuzz build -O) >&2
else
    for t in "${targets[@]}"; do
        (cd "$fuzz" && cargo +nightly fuzz build -O "$t") >&2
    done
fi
status=0
for t in "${targets[@]}"; do
    mkdir -p "$fuzz/corpus/$t" "$work/run-$t" "$fuzz/artifacts/$t"
    cp "$fuzz/corpus/$t"/* "$work/run-$t/" 2>/dev/null || true
    cp "$work/seeds/$t"/* "$work/run-$t/" 2>/dev/null || true
    log="$work/$t.log"
    if (cd "$fuzz" && cargo +nightly fuzz run -O "$t" "$work/run-$t" -- \
        -max_total_time="$secs" -malloc_limit_mb=64 -rss_limit_mb=1024 -timeout=10 -max_len=65536 \
        -print_final_stats=1 -artifact_prefix="$fuzz/artifacts/$t/") >"$log" 2>&1; then
        result=ok
    else
        result=FAILED
        status=1
        tail -n 40 "$log" >&2
    fi
    execs="$(grep -m1 '^stat::number_of_executed_units' "$log" | awk '{print $2}')"
    cov="$(grep -E '^#[0-9]+' "$log" | tail -1 | grep -o 'cov: [0-9]*' || true)"
    echo "fuzz $t: ${secs}s, ${execs:-?} executions, ${cov:-cov: ?}, $result"
done
exit $status
