#!/bin/sh
# The other on-disk formats in the kernel (sourced by kernel/open.sh in the reference VM, with
# the unpacked images of ../shared/testdata/other-formats on an ext4 disk after open.sh's
# three, mounted here at /host): every TrueCrypt /
# VeraCrypt, BitLocker and FileVault 2 image there, and a loop-AES volume made here, opened by
# cryptsetup and by lukskit. For each, per tool, one block of lines:
#   == fmt-IMAGE TOOL
#   dev: SUFFIX table: <dmsetup table --showkeys>   for NAME and its stack (NAME_1, NAME_2, ...)
#   dev: SUFFIX uuid: <DM UUID>     dev: SUFFIX attr: <attributes>
#   status: <cryptsetup status NAME>
#   data: <SHA-256 of the first 4 MiB of NAME, or of all of it when smaller>
#   fs: <the UUID blkid finds on NAME>
# The test compares cryptsetup's block with lukskit's. Images are found by name, so a set with
# more images is covered as it is: the options come from the names (README of the set).
H=/host
mkdir -p $H
modprobe ext4 2>/dev/null
mount -o ro /dev/vdd $H || echo "formats: cannot mount the image disk /dev/vdd"
fcapture() { # CASE TOOL NAME
    echo "== $1 $2"
    for d in $(dmsetup ls | awk '{print $1}' | grep -E "^$3(_[0-9]+)?\$" | sort); do
        s=${d#"$3"}
        echo "dev: ${s:-top} table: $(dmsetup table --showkeys "$d" | sed 's/ [0-9]*:[0-9]* / DEV /g')"
        echo "dev: ${s:-top} uuid: $(dmsetup info -c --noheadings -o uuid "$d" | sed "s/$3/NAME/g")"
        echo "dev: ${s:-top} attr: $(dmsetup info -c --noheadings -o attr "$d")"
    done
    cryptsetup status "$3" | sed "s/^/status: /; s/$3/NAME/g"
    echo "data: $(head -c 4194304 "/dev/mapper/$3" | sha256sum | cut -c1-64)"
    echo "fs: $(blkid -o value -s UUID "/dev/mapper/$3")"
}
# CASE SECRET-ON-STDIN OPEN-ARGS...: each tool opens, the stack is captured and closed; a
# refusal is captured as its exit code and message, which must be cryptsetup's too. With
# $csargs set, cryptsetup opens with those arguments (and no secret) instead.
# (A subshell: its variable stays its own.)
open_as() ( # TOOL OPEN-ARGS...: TOOL opens fmtmap, the secret $pw on its standard input
    if [ "$1" = cryptsetup ] && [ -n "${csargs:-}" ]; then
        # shellcheck disable=SC2086 # a list of arguments without spaces
        cryptsetup open $csargs fmtmap < /dev/null
    else
        tool=$1
        shift
        printf '%s' "$pw" | $tool open "$@" fmtmap
    fi
)
fopen() {
    c=$1 pw=$2; shift 2
    t0=$(date +%s)
    for tool in cryptsetup lukskit; do
        t1=$(date +%s)
        if open_as $tool "$@" > /tmp/fo.err 2>&1; then
            echo "fmt-$c $tool open: took $(($(date +%s) - t1)) s"
            fcapture "fmt-$c" $tool fmtmap
            $tool close fmtmap || echo "fmt-$c: $tool close failed"
        else
            rc=$?
            echo "== fmt-$c $tool"
            echo "refused: rc=$rc $(tr '\n' ' ' < /tmp/fo.err)"
        fi
        [ -z "$(dmsetup ls | grep fmtmap)" ] || echo "fmt-$c: $tool left $(dmsetup ls | grep fmtmap)"
    done
    echo "fmt-$c: compared"
    echo "fmt-$c: took $(($(date +%s) - t0)) s"
}
# TrueCrypt / VeraCrypt: KIND_VERSION-HASH-MODE-CIPHER[-CIPHER...][-hidden]. Under TCG a
# VeraCrypt key derivation takes long, so one image per mapping shape (mode, cascade, hidden,
# system) is opened, TrueCrypt's first (fewer iterations): key files and PIMs change only
# the key derivation, which the host tests check (tests/tcrypt.rs).
seen=" "
for f in "$H"/tcrypt/tc_*-* "$H"/tcrypt/*_*-*; do
    [ -f "$f" ] || continue
    n=$(basename "$f")
    shape=$(echo "$n" | cut -d- -f3-)
    case $n in sys_*) shape="system:$shape" ;; esac
    case "$seen" in *" $shape "*) continue ;; esac
    seen="$seen$shape "
    hash=$(echo "$n" | cut -d- -f2)
    set -- --type tcrypt -h "$hash"
    case $n in tc_*) set -- "$@" --disable-veracrypt ;; esac
    case $n in vck_*) set -- "$@" -d "$H/tcrypt/keyfile1" -d "$H/tcrypt/keyfile2" ;; esac
    case $n in vcpim_*) set -- "$@" --veracrypt-pim 1234 ;; esac
    case $n in sys_*) set -- "$@" --tcrypt-system ;; esac
    fopen "$n" aaaaaaaaaaaa "$@" "$f"
    case $n in *-hidden) fopen "$n-hidden" bbbbbbbbbbbb "$@" --tcrypt-hidden "$f" ;; esac
done
# System encryption given a partition (the first system image, attached with its partition
# table): the header is read from the whole disk, the partition is the data, IVs count from
# the disk's start (TCRYPT_read_phdr, TCRYPT_get_data_offset/_iv_offset).
for f in "$H"/tcrypt/sys_*-*; do
    [ -f "$f" ] || continue
    n=$(basename "$f")
    hash=$(echo "$n" | cut -d- -f2)
    ld=$(losetup -P -r -f --show "$f")
    udevadm settle 2>/dev/null
    i=0
    while [ ! -b "${ld}p1" ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
    fopen "syspart-$n" aaaaaaaaaaaa --type tcrypt -h "$hash" --tcrypt-system "${ld}p1"
    # The dump (and lukskit's passphrase test) read the disk's header through the partition.
    # (Not cryptsetup's passphrase test: it opened the volume above, and every VeraCrypt key
    # derivation takes about 40 s under TCG.)
    for tool in cryptsetup lukskit; do
        echo "== fmt-syspart-dump-$n $tool"
        printf aaaaaaaaaaaa | $tool tcryptDump --tcrypt-system -h "$hash" "${ld}p1" 2>&1 |
            sed "s|${ld}p1|PART|; s/^/dump: /"
    done
    echo "fmt-syspart-dump-$n: compared"
    printf aaaaaaaaaaaa | lukskit open --test-passphrase --type tcrypt --tcrypt-system \
        -h "$hash" "${ld}p1" > /dev/null 2>&1
    echo "fmt-syspart-test-passphrase: lukskit rc=$?"
    losetup -d "$ld"
    break
done
# TrueCrypt <= 4 volumes whose legacy CBC headers were written on the host by
# scripts/tc-legacy-image.py (python3-cryptography, not lukskit): tcrypt-made/tc_1-HASH-cbc-CHAIN,
# cbc-tcw (cast5, des3_ede: both tools map them) and cbc-tcrypt (blowfish_le chains:
# both tools find the header and refuse to map it).
for f in "$H"/tcrypt-made/tc_*; do
    [ -f "$f" ] || continue
    n=$(basename "$f")
    fopen "made-$n" aaaaaaaaaaaa --type tcrypt -h "$(echo "$n" | cut -d- -f2)" --disable-veracrypt "$f"
done
# BitLocker: images.conf gives each image's cipher and password (none: a clear key, or a
# startup key, opened with its .BEK file). One image per cipher and kind (To Go or not),
# startup keys first; every clear-key image (refused as cryptsetup).
conf() { awk -v s="[$1]" -v k="$2" '$0 == s {on = 1; next} /^\[/ {on = 0} on && $1 == k {print $3}' "$H/bitlk/images.conf"; }
seen=" "
if [ -f "$H/bitlk/images.conf" ]; then
    for f in "$H"/bitlk/*startup-key*.img "$H"/bitlk/*.img; do
        [ -f "$f" ] || continue
        n=$(basename "$f" .img)
        shape=$(conf "$n" CIPHER)
        case $n in *togo*) shape="togo:$shape" ;; *clearkey*) shape="clearkey:$n" ;; esac
        case "$seen" in *" $shape "*) continue ;; esac
        seen="$seen$shape "
        sk=$(conf "$n" SK_VMK_GUID | tr a-f A-F)
        # cryptsetup maps with the volume key the host's cryptsetup derived (refvm_kernel.rs:
        # bitlk_volume_keys), lukskit unlocks with the secret.
        csargs=
        [ -f "$H/bitlk/$n.vk" ] && csargs="--type bitlk --volume-key-file $H/bitlk/$n.vk $f"
        if [ -n "$sk" ]; then
            fopen "$n" "" --type bitlk -d "$H/bitlk/$sk.BEK" "$f"
        else
            fopen "$n" "$(conf "$n" PW)" --type bitlk "$f"
        fi
        csargs=
    done
fi
# FileVault 2: the README's password.
for f in "$H"/fvault2/*; do
    [ -f "$f" ] || continue
    fopen "fvault2-$(basename "$f")" heslo123 --type fvault2 "$f"
done
# loop-AES: a single-key volume (aes-cbc-plain) and a 64-key volume (aes-cbc-lmk), from
# key files of hex keys made here; each tool opens with the same key file.
dd if=/dev/urandom of=/tmp/la.img bs=1M count=8 2>/dev/null
head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' > /tmp/la1.key
echo >> /tmp/la1.key
: > /tmp/la64.key
i=0
while [ $i -lt 64 ]; do
    head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >> /tmp/la64.key
    echo >> /tmp/la64.key
    i=$((i + 1))
done
fopen loopaes-1 "" --type loopaes --key-file /tmp/la1.key --key-size 256 /tmp/la.img
fopen loopaes-64 "" --type loopaes --key-file /tmp/la64.key --key-size 256 /tmp/la.img
umount $H
echo "formats: done"
