#!/bin/sh
# Run in the reference VM with lukskit installed and six blank disks (crates/lukskit-cli/tests/
# refvm_crypttab.rs). One crypttab — a LUKS2 entry by UUID= with a key file, a LUKS1 entry
# whose passphrase is typed, a noauto entry, a nofail entry whose device is missing, a plain
# entry, a LUKS2 entry with a detached header, key slot and key file offset/size — is set up
# three ways, and for every entry one block of lines is printed per way:
#   A  Debian's cryptdisks_start with Debian's cryptsetup 2.6.1 (the reference)
#   B  lukskit crypttab open
#   C  Debian's cryptdisks_start with lukskit installed as /sbin/cryptsetup
#   DR, DL  Debian's initramfs boot script (cryptroot) with cryptsetup, then with lukskit as
#      /sbin/cryptsetup, for the entries a root would have (not noauto or missing ones)
#   == WAY NAME
#   table: <dmsetup table --showkeys>   uuid: <DM UUID>   attr: <dmsetup attributes>
#   status: <each line of real cryptsetup's status>
# The test compares the blocks. Debian's askpass needs a console, so for A and C the typed
# passphrase comes through a keyscript (the same pipe to `cryptsetup --key-file=- open` that
# askpass feeds); lukskit crypttab open reads it from standard input as a prompt would. Other
# checks print "ok: ..." or "FAIL: ...".
export DM_DISABLE_UDEV=1
CS=/usr/sbin/cryptsetup
cp "$CS" /usr/sbin/cryptsetup.real
REAL=/usr/sbin/cryptsetup.real
cs="$REAL -q --pbkdf pbkdf2 --pbkdf-force-iterations 1000"
mkdir -p /etc/keys /run/cryptsetup
head -c 64 /dev/urandom > /etc/keys/ka
head -c 64 /dev/urandom > /etc/keys/kb
head -c 64 /dev/urandom > /etc/keys/k64
chmod 600 /etc/keys/*
printf %s prompt-pass > /tmp/pass
printf '#!/bin/sh\ncat /tmp/pass\n' > /tmp/pass.sh
chmod 700 /tmp/pass.sh
$cs luksFormat --type luks2 /dev/vda -d /etc/keys/ka || exit 1
$cs luksFormat --type luks1 /dev/vdb -d /tmp/pass || exit 1
$cs luksFormat --type luks2 --sector-size 4096 /dev/vdc -d /etc/keys/ka || exit 1
$cs luksFormat --type luks2 --header /etc/keys/hdr /dev/vde -d /etc/keys/ka || exit 1
$cs luksAddKey --header /etc/keys/hdr /dev/vde -d /etc/keys/ka --new-key-slot 1 \
    --new-keyfile-offset 4 --new-keyfile-size 16 /etc/keys/kb || exit 1
mkfs.ext4 -q -L keydev /dev/vdf || exit 1
mkdir -p /mnt/k && mount /dev/vdf /mnt/k && mkdir /mnt/k/keys && cp /etc/keys/ka /mnt/k/keys/k && cp /etc/keys/hdr /mnt/k/keys/hdr && umount /mnt/k
UA=$($REAL luksUUID /dev/vda)
FSUUID=$(blkid -s UUID -o value /dev/vdf)
MISSING=0badc0de-0000-4000-8000-000000000000
table() { # PROMPT-KEY PROMPT-OPTIONS
    cat <<TAB
# name      source          key                 options
ctkey       UUID=$UA        /etc/keys/ka        luks,discard
ctprompt    /dev/vdb        $1                  luks,tries=2$2
ctnoauto    /dev/vdc        /etc/keys/ka        luks,noauto
ctmissing   UUID=$MISSING   /etc/keys/ka        luks,nofail
ctplain     /dev/vdd        /etc/keys/k64       plain,cipher=aes-xts-plain64,size=512,offset=2048,skip=16,same-cpu-crypt,no-read-workqueue
ctdetached  /dev/vde        /etc/keys/kb        luks,header=/etc/keys/hdr,keyslot=1,keyfile-offset=4,keyfile-size=16,readonly
TAB
}
table none ,keyscript=/tmp/pass.sh > /etc/crypttab
table none "" > /tmp/crypttab.lk
NAMES="ctkey ctprompt ctnoauto ctplain ctdetached"
capture() { # WAY NAME
    echo "== $1 $2"
    if ! dmsetup info "$2" >/dev/null 2>&1; then echo "missing: $2"; return; fi
    echo "table: $(dmsetup table --showkeys "$2")"
    echo "uuid: $(dmsetup info -c --noheadings -o uuid "$2")"
    echo "attr: $(dmsetup info -c --noheadings -o attr "$2")"
    $REAL status "$2" | sed 's/^/status: /'
}
none_left() { # WHAT
    if [ -z "$(dmsetup ls --target crypt | grep -v 'No devices')" ]; then echo "ok: $1"; else echo "FAIL: $1: $(dmsetup ls)"; fi
}
check() { # WHAT COMMAND...
    w=$1; shift
    if "$@"; then echo "ok: $w"; else echo "FAIL: $w"; fi
}

# A: Debian's cryptdisks_start with real cryptsetup.
cryptdisks_start $NAMES > /tmp/a.log 2>&1; echo "A start rc=$?"
cryptdisks_start ctmissing > /tmp/a2.log 2>&1; echo "A missing rc=$?"
for n in $NAMES; do capture A $n; done
REF_NOAUTO=$(dmsetup table --showkeys ctnoauto)
REF_DETACHED=$(dmsetup table --showkeys ctdetached)
cryptdisks_stop $NAMES > /tmp/a3.log 2>&1; echo "A stop rc=$?"
none_left "A: cryptdisks_stop closed every mapping"
sed 's/^/A log: /' /tmp/a.log /tmp/a2.log /tmp/a3.log

# D: Debian's initramfs boot script (scripts/local-top/cryptroot of cryptsetup-initramfs,
# which opens each /cryptroot/crypttab entry as NAME) with /sbin/cryptsetup as it is now.
BOOT_NAMES="ctkey ctprompt ctplain ctdetached"
mkdir -p /scripts/local-top /cryptroot
cp /usr/share/initramfs-tools/scripts/functions /scripts/functions
cp /usr/share/initramfs-tools/scripts/local-top/cryptroot /scripts/local-top/cryptroot
grep -E '^(ctkey|ctprompt|ctplain|ctdetached) ' /etc/crypttab > /cryptroot/crypttab
boot() { # WAY
    rm -f /run/cryptroot.initrd.cnt
    quiet=n panic= sh /scripts/local-top/cryptroot > /tmp/boot.log 2>&1; echo "$1 boot rc=$?"
    sed "s/^/$1 log: /" /tmp/boot.log
    for n in $BOOT_NAMES; do capture "$1" $n; done
    for n in $BOOT_NAMES; do /sbin/cryptsetup close $n; done
    none_left "$1: every boot mapping closed"
}
# The boot script refuses a plain mapping without a file system in it: give ctplain one.
$REAL open --type plain -c aes-xts-plain64 -s 512 --offset 2048 --skip 16 -d /etc/keys/k64 /dev/vdd mk &&
    mkfs.ext4 -q /dev/mapper/mk && $REAL close mk || echo "FAIL: mkfs in ctplain"
boot DR

# B: lukskit crypttab.
lukskit crypttab list --crypttab /tmp/crypttab.lk > /tmp/list.txt 2>&1; echo "B list rc=$?"
sed 's/^/list: /' /tmp/list.txt
printf 'prompt-pass\n' | lukskit crypttab open --crypttab /tmp/crypttab.lk > /tmp/b.log 2>&1
echo "B open rc=$?"
sed 's/^/B log: /' /tmp/b.log
check "B: noauto entry not opened by default" sh -c '! dmsetup info ctnoauto >/dev/null 2>&1'
check "B: noauto entry opened when named" lukskit crypttab open --crypttab /tmp/crypttab.lk ctnoauto
check "B: opening an active entry again succeeds" lukskit crypttab open --crypttab /tmp/crypttab.lk ctkey
for n in $NAMES; do capture B $n; done
lukskit crypttab close --crypttab /tmp/crypttab.lk > /tmp/b2.log 2>&1; echo "B close rc=$?"
sed 's/^/B log: /' /tmp/b2.log
none_left "B: crypttab close closed every mapping"

# B2: the systemd dialect: a key file on another device (ext4 by UUID=), an ignored token
# option (tpm2-signature=: tpm2-device= with a key file would make the key file a TPM2-sealed
# key, as in systemd), an entry lukskit refuses, and a missing device without nofail.
cat > /tmp/crypttab.sd <<TAB
ctkeydev  /dev/vdc  /keys/k:UUID=$FSUUID  tpm2-signature=/etc/tpm2-pcr-signature.json
ctlabel   /dev/vdc  /keys/k:LABEL=keydev  luks,noauto
cthdr     /dev/vde  /etc/keys/kb  header=/keys/hdr:UUID=$FSUUID,key-slot=1,keyfile-offset=4,keyfile-size=16,read-only,noauto
ctgone    UUID=$MISSING  /etc/keys/ka
ctvc      /dev/vdb  none  swap
TAB
lukskit crypttab open --crypttab /tmp/crypttab.sd > /tmp/sd.log 2>&1; echo "B2 open rc=$?"
sed 's/^/B2 log: /' /tmp/sd.log
check "B2: key file on a device by UUID= gives cryptsetup's table" \
    sh -c "[ \"\$(dmsetup table --showkeys ctkeydev)\" = \"$REF_NOAUTO\" ]"
check "B2: the key device is unmounted again" sh -c '! grep -q /dev/vdf /proc/mounts'
check "B2: refused entry not opened" sh -c '! dmsetup info ctvc >/dev/null 2>&1'
lukskit crypttab close --crypttab /tmp/crypttab.sd ctkeydev >/dev/null 2>&1
check "B2: key file on a device by LABEL=" lukskit crypttab open --crypttab /tmp/crypttab.sd ctlabel
check "B2: same table by LABEL=" sh -c "[ \"\$(dmsetup table --showkeys ctlabel)\" = \"$REF_NOAUTO\" ]"
check "B2: detached header on a device by UUID=" lukskit crypttab open --crypttab /tmp/crypttab.sd cthdr
check "B2: same table as cryptdisks_start's for the detached header" \
    sh -c "[ \"\$(dmsetup table --showkeys cthdr)\" = \"$REF_DETACHED\" ] && dmsetup info -c --noheadings -o attr cthdr | grep -q '^L--r'"
check "B2: closes" lukskit crypttab close --crypttab /tmp/crypttab.sd cthdr
# rename: what dmsetup rename does, for a lukskit and a cryptsetup mapping.
check "rename: lukskit renames" lukskit rename ctlabel ctrenamed
check "rename: the new name is active" sh -c 'dmsetup info ctrenamed >/dev/null 2>&1 && [ -b /dev/mapper/ctrenamed ] && [ ! -e /dev/mapper/ctlabel ]'
check "rename: cryptsetup status of the new name" sh -c "$REAL status ctrenamed >/dev/null"
check "rename: refuses an existing name" sh -c "$REAL open /dev/vda -d /etc/keys/ka other && ! lukskit rename ctrenamed other"
check "rename: renames cryptsetup's mapping" lukskit rename other other2
check "rename: closes" sh -c 'lukskit close ctrenamed && lukskit close other2'
none_left "B2: everything closed"

# RAID-1: LUKS on an md array with metadata 1.0 (at the end, so each leg starts with the
# LUKS header too): UUID= must find the array, never a leg, assembled or not.
dd if=/dev/zero of=/tmp/leg0 bs=1M count=40 2>/dev/null
dd if=/dev/zero of=/tmp/leg1 bs=1M count=40 2>/dev/null
L0=$(losetup -f --show /tmp/leg0); L1=$(losetup -f --show /tmp/leg1)
mdadm --create /dev/md0 --run --level=1 --metadata=1.0 --raid-devices=2 --assume-clean \
    "$L0" "$L1" > /tmp/md.log 2>&1 || { echo "FAIL: mdadm --create"; cat /tmp/md.log; }
$cs luksFormat --type luks2 /dev/md0 -d /etc/keys/ka || echo "FAIL: luksFormat md0"
UR=$($REAL luksUUID /dev/md0)
echo "ctraid UUID=$UR /etc/keys/ka luks" > /tmp/crypttab.md
check "raid: a leg shows the array's LUKS header" $REAL isLuks "$L0"
check "raid: opens on the assembled array" lukskit crypttab open --crypttab /tmp/crypttab.md
check "raid: the mapping is on md0" sh -c '[ "$(dmsetup table ctraid | cut -d" " -f7)" = "$(cat /sys/block/md0/dev)" ]'
check "raid: closes" lukskit crypttab close --crypttab /tmp/crypttab.md
mdadm --stop /dev/md0 > /tmp/md.log 2>&1 || { echo "FAIL: mdadm --stop"; cat /tmp/md.log; }
lukskit crypttab list --crypttab /tmp/crypttab.md > /tmp/md-list.txt 2>&1
sed 's/^/raid list: /' /tmp/md-list.txt
check "raid: a stopped array's legs are not the source" grep -q "fails: device UUID=$UR not found" /tmp/md-list.txt
losetup -d "$L0" "$L1"

# C: Debian's cryptdisks_start and cryptdisks_stop with lukskit as /sbin/cryptsetup.
rm -f "$CS" && ln -s /usr/bin/lukskit "$CS"
check "C: /sbin/cryptsetup is lukskit" sh -c '/sbin/cryptsetup --version | grep -q lukskit'
cryptdisks_start $NAMES > /tmp/c.log 2>&1; echo "C start rc=$?"
cryptdisks_start ctmissing > /tmp/c2.log 2>&1; echo "C missing rc=$?"
for n in $NAMES; do capture C $n; done
cryptdisks_stop $NAMES > /tmp/c3.log 2>&1; echo "C stop rc=$?"
none_left "C: cryptdisks_stop closed every mapping"
sed 's/^/C log: /' /tmp/c.log /tmp/c2.log /tmp/c3.log
boot DL
rm -f "$CS" && cp "$REAL" "$CS"
echo "crypttab: done"
