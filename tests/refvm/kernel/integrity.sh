#!/bin/sh
# Run in the reference VM with lukskit installed: LUKS2 authenticated encryption (dm-integrity
# under dm-crypt). For each case, /dev/vda is formatted by cryptsetup, then by lukskit, and
# each volume is opened by both tools; one block per (case, formatter-opener):
#   == CASE cs-cs | cs-lk | lk-cs | lk-lk
#   table: <dmsetup table of NAME and NAME_dif>   uuid: <DM UUIDs>   status: <cryptsetup status>
#   sum: <sha256 of the opened mapping>   dump: <luksDump without salts and digests>
# (the volume UUID and the mapping name normalised). The test compares the blocks.
export DM_DISABLE_UDEV=1
P="--pbkdf pbkdf2 --pbkdf-force-iterations 1000"
head -c 512 /dev/urandom > /tmp/key
norm() { sed -e "s/$U/UUID/g" -e "s/$(echo "$U" | tr -d -)/UUIDHEX/g" -e 's/map_dif/NAME_dif/g' -e 's/\bmap\b/NAME/g'; }
capture() { # CASE TAG
    echo "== $1 $2"
    U=$(cryptsetup luksUUID /dev/vda)
    dmsetup table map | sed 's/^/table: /' | norm
    dmsetup table map_dif | sed 's/^/table: /' | norm
    echo "uuid: $(dmsetup info -c --noheadings -o uuid map)" | norm
    echo "uuid: $(dmsetup info -c --noheadings -o uuid map_dif)" | norm
    cryptsetup status map | sed 's/^/status: /' | norm
    lukskit status map | sed 's/^/lkstatus: /' | norm
    echo "sum: $(sha256sum /dev/mapper/map 2>&1 | cut -d' ' -f1)"
}
dump() { # TOOL
    U=$(cryptsetup luksUUID /dev/vda)
    $1 luksDump /dev/vda | grep -v -i 'salt\|digest:\|^\s*[0-9a-f][0-9a-f] [0-9a-f]\|Epoch\|Time cost\|Memory\|Threads\|Iterations' | sed 's/^/dump: /' | norm
}
opens() { # CASE FORMATTER
    cryptsetup open -d /tmp/key /dev/vda map || echo "cryptsetup open failed"
    capture "$1" "$2-cs"
    cryptsetup close map || echo "cryptsetup close failed"
    lukskit open -d /tmp/key /dev/vda map || echo "lukskit open failed"
    capture "$1" "$2-lk"
    lukskit close map || echo "lukskit close failed"
    echo "left: $(dmsetup ls | grep -c map)"
    dump cryptsetup | sed "s/^dump:/csdump:/"
    dump lukskit | sed "s/^dump:/lkdump:/"
}
run() { # CASE LUKSFORMAT-ARGS...
    c=$1; shift
    dd if=/dev/zero of=/dev/vda bs=1M count=32 conv=fsync 2>/dev/null
    cryptsetup luksFormat -q --type luks2 $P -d /tmp/key /dev/vda "$@" >/dev/null || { echo "== $c cryptsetup format failed"; return; }
    opens "$c" cs
    # lukskit formats over cryptsetup's volume (its superblock must be wiped first).
    lukskit luksFormat -q --type luks2 $P -d /tmp/key /dev/vda "$@" >/dev/null || { echo "== $c lukskit format failed"; return; }
    opens "$c" lk
    # A corrupted sector is an I/O error.
    echo -n XXXXX | dd of=/dev/vda bs=1M seek=28 count=1 conv=notrunc,fsync 2>/dev/null
    lukskit open -d /tmp/key /dev/vda map || echo "lukskit open failed"
    if dd if=/dev/mapper/map of=/dev/null bs=1M 2>/dev/null; then echo "$c: corruption: read"; else echo "$c: corruption: EIO"; fi
    lukskit close map
}
run hmac256-legacy -c aes-xts-plain64 --integrity hmac-sha256 -s 256 --sector-size 512 --offset 8192 --integrity-legacy-padding
run xts-random-4k -c aes-xts-random --integrity hmac-sha256 -s 512 --sector-size 4096 --offset 8192
run essiv-sha1 -c aes-cbc-essiv:sha256 --integrity hmac-sha1 -s 128 --sector-size 512
run gcm -c aes-gcm-random --integrity aead -s 128 --sector-size 512 --offset 8192
run ccm-4k -c aes-ccm-random --integrity aead -s 152 --sector-size 4096 --offset 8192 --integrity-legacy-padding
run chacha -c chacha20-random --integrity poly1305 -s 256 --sector-size 4096 --offset 8192
run aegis -c aegis128-random --integrity aead -s 128 --sector-size 512 --offset 8192
echo "integrity: done"
