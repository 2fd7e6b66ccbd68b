#!/bin/sh
# Run in the reference VM with lukskit installed: the kernel backend's node handling with a
# real systemd-udevd (device-mapper rules of Debian's dmsetup), with a dead udevd
# (/run/udev/control left behind) and with no udevd, next to cryptsetup's in the same states.
# Lines on stdout:
#   CASE TOOL node: <what /dev/mapper/NAME is>   (symlink ../dm-N -> "symlink ../dm-N",
#                                                  a block node -> "block 0660 root:disk")
#   CASE TOOL by-id: <dm-name-/dm-uuid- links of the mapping, NAME and dm-N normalised>
#   CASE TOOL by-uuid: <the by-uuid link of the file system on it>
#   CASE TOOL after-close: <what is left at /dev/mapper/NAME, by-id, by-uuid>
#   time: CASE TOOL COMMAND SECONDS
cs="cryptsetup -q --pbkdf pbkdf2 --pbkdf-force-iterations 1000"
printf secret >/tmp/k
up() { cut -d' ' -f1 /proc/uptime; }
timed() { # CASE TOOL WHAT COMMAND...
    c=$1 t=$2 w=$3
    shift 3
    t0=$(up)
    "$@"
    rc=$?
    echo "time: $c $t $w $(awk -v a="$t0" -v b="$(up)" 'BEGIN { printf "%.2f", b - a }') rc=$rc"
    return $rc
}
node() { # NAME -> description of /dev/mapper/NAME
    p=/dev/mapper/$1
    if [ -L "$p" ]; then
        l=$(readlink "$p")
        [ -b "$p" ] && [ "$(stat -L -c %t:%T "$p")" = "$(stat -L -c %t:%T "/dev/${l#../}")" ] || echo "dangling-or-wrong "
        echo "symlink $(echo "$l" | sed 's/dm-[0-9]*/dm-N/')"
    elif [ -b "$p" ]; then
        dev=$(dmsetup info -c --noheadings -o major,minor "$1" 2>/dev/null | tr -d ' ')
        mm=$(stat -c '%t %T' "$p")
        [ "$(printf '%d:%d' "0x${mm% *}" "0x${mm#* }")" = "$dev" ] || echo "wrong-dev "
        echo "block $(stat -c '%a %U:%G' "$p")"
    elif [ -e "$p" ]; then
        echo "other $(stat -c %F "$p")"
    else
        echo "none"
    fi
}
links() { # DIR NAME -> links in DIR mentioning NAME (or pointing at its dm-N), normalised
    d=/dev/disk/$1
    [ -d "$d" ] || { echo "(no $d)"; return; }
    out=
    for l in "$d"/*; do
        [ -L "$l" ] || continue
        b=${l##*/}
        case "$b" in *"$2"* | "$FSUUID") out="$out $(echo "$b" | sed "s/$2/NAME/;s/$FSUUID/FSUUID/") -> $(readlink "$l" | sed 's/dm-[0-9]*/dm-N/')" ;; esac
    done
    echo "${out# }"
}
report() { # CASE TOOL NAME
    echo "$1 $2 node: $(node "$3")"
    udevadm settle --timeout=60 2>/dev/null
    echo "$1 $2 by-id: $(links by-id "$3")"
    echo "$1 $2 by-uuid: $(links by-uuid "$3")"
}
after() { # CASE TOOL NAME
    udevadm settle --timeout=60 2>/dev/null
    echo "$1 $2 after-close: node=$(node "$3") by-id=[$(links by-id "$3")] by-uuid=[$(links by-uuid "$3")]"
}

# An ext4 file system inside the volume, so that blkid (60-persistent-storage-dm.rules) has a
# UUID to link.
$cs luksFormat --type luks2 /dev/vda -d /tmp/k || exit 1
DM_DISABLE_UDEV=1 cryptsetup open -d /tmp/k /dev/vda fsmap || exit 1
mkfs.ext4 -q /dev/mapper/fsmap || exit 1
FSUUID=$(blkid -s UUID -o value /dev/mapper/fsmap)
DM_DISABLE_UDEV=1 cryptsetup close fsmap || exit 1
echo "fs uuid: $FSUUID"

# --- 1. udevd running -------------------------------------------------------------------------
/refvm/start-udev || { echo "udev: cannot start udevd"; exit 1; }
echo "udev: running ($(udevadm --version))"
cryptsetup open -d /tmp/k /dev/vda csmap && report live cryptsetup csmap
cryptsetup close csmap && after live cryptsetup csmap
timed live lukskit open lukskit open -d /tmp/k /dev/vda lkmap && report live lukskit lkmap
dmsetup info -c --noheadings -o name,uuid lkmap | sed 's/^/live lukskit dm: /'
blkid -s UUID -o value /dev/mapper/lkmap | sed 's/^/live lukskit blkid: /'
timed live lukskit close lukskit close lkmap && after live lukskit lkmap
# cryptsetup closes lukskit's mapping and lukskit closes cryptsetup's, udev handling the nodes.
lukskit open -d /tmp/k /dev/vda lkmap && cryptsetup close lkmap && after cross cryptsetup lkmap
cryptsetup open -d /tmp/k /dev/vda csmap && timed cross lukskit close lukskit close csmap && after cross lukskit csmap
# --deferred: closed once the holder lets go; udevd removes the symlink then.
deferred() { # CASE TOOL NAME
    $2 open -d /tmp/k /dev/vda "$3" || return
    # shellcheck disable=SC2217 # the redirection is the point: it holds the mapping open
    sleep 600 <"/dev/mapper/$3" &
    holder=$!
    # Until the holder has the device open (a loaded host can take longer than a second).
    n=0
    until [ "$(dmsetup info -c --noheadings -o open "$3" 2>/dev/null)" -ge 1 ] 2>/dev/null; do
        [ $n -lt 600 ] || { echo "$1 $2 the holder did not open $3 in 60 s"; break; }
        sleep 0.1
        n=$((n + 1))
    done
    $2 close --deferred "$3"
    echo "$1 $2 deferred-close rc=$? mapping=$(dmsetup info -c --noheadings -o name "$3" 2>/dev/null || echo none)"
    echo "$1 $2 while-held: node=$(node "$3")"
    kill "$holder"
    wait "$holder" 2>/dev/null
    n=0
    while dmsetup info "$3" >/dev/null 2>&1 && [ $n -lt 200 ]; do sleep 0.05; n=$((n + 1)); done
    after "$1" "$2" "$3"
}
deferred live-deferred cryptsetup csmap
deferred live-deferred lukskit lkmap

# --- 2. udevd dead: /run/udev/control left behind -------------------------------------------
/refvm/stop-udev --leave-control || { echo "udev: cannot stop udevd"; exit 1; }
echo "udev: dead, control left: $(ls -d /run/udev/control 2>&1)"
timed dead lukskit open lukskit open -d /tmp/k /dev/vda lkmap && report dead lukskit lkmap
blkid -s UUID -o value /dev/mapper/lkmap | sed 's/^/dead lukskit blkid: /'
timed dead lukskit close lukskit close lkmap && after dead lukskit lkmap

# --- 3. no udevd at all ------------------------------------------------------------------------
rm -f /run/udev/control
export DM_DISABLE_UDEV=1
DM_DISABLE_UDEV=1 cryptsetup open -d /tmp/k /dev/vda csmap && report none cryptsetup csmap
cryptsetup close csmap && after none cryptsetup csmap
timed none lukskit open lukskit open -d /tmp/k /dev/vda lkmap && report none lukskit lkmap
timed none lukskit close lukskit close lkmap && after none lukskit lkmap
deferred none-deferred cryptsetup csmap
deferred none-deferred lukskit lkmap
# A stale node (what a dead udevd leaves after a deferred remove, or a crashed tool): a block
# node of a device number no mapping has. Does each tool open over it?
stale() { # TOOL NAME
    rm -f "/dev/mapper/$2"
    mknod -m 660 "/dev/mapper/$2" b 253 250
    $1 open -d /tmp/k /dev/vda "$2"
    echo "stale $1 open rc=$? node=$(node "$2")"
    $1 close "$2"
    echo "stale $1 close rc=$? node=$(node "$2")"
}
stale cryptsetup csmap
stale lukskit lkmap
echo "udev: done"
