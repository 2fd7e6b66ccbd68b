#!/bin/sh
# lukskit-dracut: lukskit's boot-time script in a dracut initramfs (module 90lukskit), as
# /sbin/lukskit-dracut. Works under dracut's own init and under systemd in the initramfs.
#
#   lukskit-dracut parse       (cmdline hook) the boot table /run/lukskit/crypttab from the
#                              image's /etc/lukskit/crypttab and the rd.luks.* arguments, an
#                              initqueue job that unlocks it, and a "finished" condition per
#                              entry (dracut waits for it before it goes on)
#   lukskit-dracut unlock      (initqueue job, each round of dracut's main loop until every
#                              entry is done) unlocks the entries whose device is there
#   lukskit-dracut emergency   (emergency hook) what is still waiting, and what failed
#
# Kernel command line (systemd-cryptsetup-generator(8)'s meaning, and dracut's own forms):
#   rd.luks=0, luks=0               unlock nothing
#   rd.luks.crypttab=0              ignore the image's crypttab (rd.luks.uuid= still works)
#   rd.luks.uuid=UUID               unlock this LUKS volume (a leading "luks-" is dropped); may
#                                   be repeated. Once any rd.luks.uuid= or rd.luks.name= is
#                                   given, only the volumes it names are unlocked: a crypttab
#                                   entry for such a UUID (UUID=... or named luks-UUID) gives
#                                   its name, key and options; otherwise the name is luks-UUID
#   rd.luks.name=UUID=NAME          the same, mapped as /dev/mapper/NAME
#   rd.luks.key=PATH                key file (in the initramfs) for the rd.luks.uuid= volumes
#                                   without a crypttab entry
#   rd.luks.key=UUID=PATH[:DEVICE]  key file of that volume; with :DEVICE on that device
#                                   (UUID=, LABEL=, /dev/...), mounted read-only for the open
#   rd.luks.key=PATH:KEYDEV[:LUKSDEV]  dracut's form: KEYDEV "/" is the initramfs; LUKSDEV
#                                   (UUID=..., a UUID, or the crypttab source) limits it to
#                                   one volume; applies to every volume without a key file
#   rd.luks.options=UUID=OPTIONS    crypttab options of that volume (replacing the crypttab's)
#   rd.luks.options=OPTIONS         options of the rd.luks.uuid= volumes without their own and
#                                   without a crypttab entry
#   rd.luks.data=UUID=DEVICE        the data device of a volume whose header is detached
#                                   (header= in its options)
#   rd.luks.partuuid=PARTUUID       dracut's: unlock the volume on that GPT partition
#   rd.luks.allow-discards[=UUID]   dracut's: the option `discard` (for every volume, or one)
#   luks.uuid=, luks.name=, luks.key=, luks.options=, luks.data=, luks.crypttab= are read too.
# Not supported (ignored): rd.auto (unlock every LUKS device found), rd.luks.serial=,
# rd.luks.timeout= and rd.luks.key.tout=, the "keysource:" prefix, a dracut key with an empty
# KEYDEV (searching every device for the key file: give the device), plymouth.
#
# A volume with a key file is opened with it; when the key file is missing or does not open the
# volume, its passphrase is asked, `tries=` times (default 3, 0 for ever), through
# systemd-ask-password under systemd, else on the console. Each open is
# `lukskit [LUKSKIT_OPEN_OPTIONS] crypttab open --crypttab TABLE NAME`.
# A volume without a key file whose header has a systemd-tpm2 or clevis token (or whose options
# name tpm2-device=) is first opened by its tokens, with nothing typed: the TPM's device node is
# waited for (at most /etc/lukskit/tpm-wait seconds, default 10, once per boot) when the options
# name tpm2-device=, and the passphrase is asked only when no token unlocks. A token that needs
# a PIN (tpm2-pin) is not asked for here: the passphrase is.

PATH=/usr/sbin:/usr/bin:/sbin:/bin
# shellcheck disable=SC1091
type getarg >/dev/null 2>&1 || . /lib/dracut-lib.sh
hookdir=${hookdir:-/lib/dracut/hooks}

# (Other places for the host's test of the arguments, crates/lukskit-cli/tests/dracut_args.rs.)
STATE=${LUKSKIT_DRACUT_STATE:-/run/lukskit}
TAB=$STATE/crypttab
IMAGE_TAB=${LUKSKIT_DRACUT_IMAGE_TAB:-/etc/lukskit/crypttab}
ARGS=$STATE/args

say() { echo "lukskit: $*" >&2; }

# A UUID as the rd.luks.* arguments give it: without "luks-", lower case.
norm_uuid() {
    printf '%s' "${1#luks-}" | tr 'A-F' 'a-f'
}

is_uuid() {
    case "${1#luks-}" in
    "" | *[!0-9a-fA-F-]*) return 1 ;;
    esac
    [ "${#1}" -ge 32 ]
}

# Whether UUID is among the volumes named on the command line (no grep in every image).
named() { # uuid
    [ -r "$ARGS/order" ] || return 1
    while read -r _n; do
        [ "$_n" = "$1" ] && return 0
    done <"$ARGS/order"
    return 1
}

# Volumes named on the command line, in order (for each a directory under $ARGS).
add_volume() { # uuid [source]
    mkdir -p "$ARGS/$1"
    if ! named "$1"; then
        echo "$1" >>"$ARGS/order"
        echo "${2:-UUID=$1}" >"$ARGS/$1/source"
    fi
}

# The key of dracut's rd.luks.key=PATH:KEYDEV[:LUKSDEV] that applies to (uuid, source).
dracut_key() { # uuid source
    [ -r "$STATE/dracut.keys" ] || return 1
    while IFS='|' read -r luksdev keydev keypath; do
        case "$luksdev" in
        "" | "*") ;;
        UUID=* | luks-*) [ "$(norm_uuid "${luksdev#UUID=}")" = "$1" ] || continue ;;
        *)
            if is_uuid "$luksdev"; then
                [ "$(norm_uuid "$luksdev")" = "$1" ] || continue
            else
                [ "$luksdev" = "$2" ] || continue
            fi
            ;;
        esac
        case "$keydev" in
        "" | /) echo "$keypath" ;;
        *) echo "$keypath:$keydev" ;;
        esac
        return 0
    done <"$STATE/dracut.keys"
    return 1
}

# dracut's rd.luks.allow-discards: `discard` added to OPTIONS.
with_discards() { # uuid options
    _d=0
    if [ -n "$DISCARD_UUIDS" ]; then
        for _u in $DISCARD_UUIDS; do [ "$(norm_uuid "$_u")" = "$1" ] && _d=1; done
    elif [ "$DISCARD_ALL" = 1 ]; then
        _d=1
    fi
    case ",$2," in *,discard,*) _d=0 ;; esac
    if [ "$_d" = 1 ]; then echo "$2,discard"; else echo "$2"; fi
}

parse() {
    mkdir -p -m 0700 "$STATE"
    rm -rf "$ARGS" "$STATE/dracut.keys"
    mkdir -p "$ARGS"
    if ! getargbool 1 rd.luks -d -n rd_NO_LUKS || ! getargbool 1 luks; then
        say "rd.luks=0: no volume is unlocked"
        rm -f "$TAB"
        return 0
    fi
    for v in $(getargs rd.luks.uuid luks.uuid); do
        is_uuid "$v" || { say "WARNING: rd.luks.uuid=$v is not a UUID: ignored"; continue; }
        add_volume "$(norm_uuid "$v")"
    done
    for v in $(getargs rd.luks.partuuid); do
        add_volume "$(norm_uuid "$v")" "PARTUUID=${v#luks-}"
    done
    for v in $(getargs rd.luks.name luks.name); do
        u=${v%%=*}
        if [ "$u" = "$v" ] || [ -z "${v#*=}" ]; then
            say "WARNING: rd.luks.name=$v is not UUID=NAME: ignored"
            continue
        fi
        u=$(norm_uuid "$u")
        add_volume "$u"
        echo "${v#*=}" >"$ARGS/$u/name"
    done
    for v in $(getargs rd.luks.data luks.data); do
        u=${v%%=*}
        if [ "$u" = "$v" ] || ! is_uuid "$u"; then
            say "WARNING: rd.luks.data=$v is not UUID=DEVICE: ignored"
            continue
        fi
        u=$(norm_uuid "$u")
        mkdir -p "$ARGS/$u"
        echo "${v#*=}" >"$ARGS/$u/data"
    done
    for v in $(getargs rd.luks.options luks.options); do
        u=${v%%=*}
        if [ "$u" != "$v" ] && is_uuid "$u"; then
            u=$(norm_uuid "$u")
            mkdir -p "$ARGS/$u"
            echo "${v#*=}" >"$ARGS/$u/options"
        else
            echo "$v" >"$ARGS/.options"
        fi
    done
    for v in $(getargs rd.luks.key luks.key); do
        u=${v%%=*}
        if [ "$u" != "$v" ] && is_uuid "$u"; then
            # systemd's UUID=PATH[:DEVICE]: lukskit's crypttab reads PATH:DEVICE itself.
            u=$(norm_uuid "$u")
            mkdir -p "$ARGS/$u"
            echo "${v#*=}" >"$ARGS/$u/key"
            continue
        fi
        case "$v" in
        *:*)
            keypath=${v%%:*}
            rest=${v#*:}
            keydev=${rest%%:*}
            luksdev=
            [ "$rest" != "$keydev" ] && luksdev=${rest#*:}
            [ -n "$keypath" ] || { say "WARNING: rd.luks.key=$v has no key path: ignored"; continue; }
            [ -n "$keydev" ] || say "WARNING: rd.luks.key=$v: searching every device for the key file is not supported; looking in the initramfs"
            echo "$luksdev|$keydev|$keypath" >>"$STATE/dracut.keys"
            ;;
        *) echo "$v" >"$ARGS/.key" ;;
        esac
    done
    DISCARD_UUIDS=$(getargs rd.luks.allow-discards)
    DISCARD_ALL=0
    [ -z "$DISCARD_UUIDS" ] && getargbool 0 rd.luks.allow-discards && DISCARD_ALL=1

    allow_list=0
    [ -s "$ARGS/order" ] && allow_list=1
    : >"$TAB.new"
    chmod 0600 "$TAB.new"
    if [ -r "$IMAGE_TAB" ] && getargbool 1 rd.luks.crypttab -d -n rd_NO_CRYPTTAB && getargbool 1 luks.crypttab; then
        # shellcheck disable=SC2034
        while read -r name source key opts rest || [ -n "$name" ]; do
            case "$name" in "" | \#*) continue ;; esac
            u=
            case "$source" in
            UUID=*) u=${source#UUID=} ;;
            /dev/disk/by-uuid/*) u=${source#/dev/disk/by-uuid/} ;;
            esac
            [ -z "$u" ] && case "$name" in luks-*) u=${name#luks-} ;; esac
            [ -n "$u" ] && u=$(norm_uuid "$u")
            if [ "$allow_list" = 1 ]; then
                if [ -n "$u" ] && named "$u"; then
                    : >"$ARGS/$u/taken"
                else
                    say "$name: not unlocked: rd.luks.uuid=/rd.luks.name= name other volumes"
                    continue
                fi
            else
                case ",$opts," in *,noauto,*) continue ;; esac
            fi
            [ -n "$u" ] && [ -s "$ARGS/$u/options" ] && opts=$(cat "$ARGS/$u/options")
            case "${key:--}" in
            none | -) key=$(dracut_key "$u" "$source") || key=- ;;
            esac
            echo "$name $source $key $(with_discards "$u" "${opts:-luks}")" >>"$TAB.new"
        done <"$IMAGE_TAB"
    fi
    if [ "$allow_list" = 1 ]; then
        while read -r u; do
            [ -e "$ARGS/$u/taken" ] && continue
            name=luks-$u
            [ -s "$ARGS/$u/name" ] && name=$(cat "$ARGS/$u/name")
            source=$(cat "$ARGS/$u/source")
            [ -s "$ARGS/$u/data" ] && source=$(cat "$ARGS/$u/data")
            if [ -s "$ARGS/$u/key" ]; then
                key=$(cat "$ARGS/$u/key")
            elif [ -s "$ARGS/.key" ]; then
                key=$(cat "$ARGS/.key")
            else
                key=$(dracut_key "$u" "$source") || key=-
            fi
            opts=luks
            if [ -s "$ARGS/$u/options" ]; then
                opts=$(cat "$ARGS/$u/options")
            elif [ -s "$ARGS/.options" ]; then
                opts=$(cat "$ARGS/.options")
            fi
            echo "$name $source $key $(with_discards "$u" "$opts")" >>"$TAB.new"
        done <"$ARGS/order"
    fi
    mv -f "$TAB.new" "$TAB"
    [ -s "$TAB" ] || return 0

    # The unlock runs in each round of dracut's main loop, once udev has settled, until every
    # entry is done; dracut goes on only when each entry without nofail is done or failed.
    mkdir -p "$hookdir/initqueue/settled" "$hookdir/initqueue/finished"
    if command -v initqueue >/dev/null 2>&1; then
        initqueue --settled --unique --name 90-lukskit-unlock /sbin/lukskit-dracut unlock
    else
        echo "/sbin/lukskit-dracut unlock" >"$hookdir/initqueue/settled/90-lukskit-unlock.sh"
    fi
    while read -r name source key opts; do
        case ",$opts," in *,nofail,*) continue ;; esac
        printf '[ -e "%s/%s.done" ] || [ -e "%s/%s.failed" ]\n' "$STATE" "$name" "$STATE" "$name" \
            >"$hookdir/initqueue/finished/90-lukskit-$name.sh"
    done <"$TAB"
}

# The device of a crypttab source, when it is there (udev's links).
source_dev() {
    case "$1" in
    UUID=*) d=/dev/disk/by-uuid/$(norm_uuid "${1#UUID=}") ;;
    LABEL=*) d=/dev/disk/by-label/${1#LABEL=} ;;
    PARTUUID=*) d=/dev/disk/by-partuuid/$(printf '%s' "${1#PARTUUID=}" | tr 'A-F' 'a-f') ;;
    PARTLABEL=*) d=/dev/disk/by-partlabel/${1#PARTLABEL=} ;;
    *) d=$1 ;;
    esac
    [ -e "$d" ] || return 1
    readlink -f "$d" 2>/dev/null || echo "$d"
}

# Ask for the passphrase of NAME on DEVICE; it goes to standard output (a pipe to lukskit).
ask_passphrase() { # name device try tries
    _prompt="Enter passphrase for $2 ($1):"
    if [ -n "$DRACUT_SYSTEMD" ] && command -v systemd-ask-password >/dev/null 2>&1; then
        systemd-ask-password --timeout=0 --id="lukskit:$2" "$_prompt"
        return
    fi
    printf '%s ' "$_prompt" >/dev/console
    stty -echo </dev/console 2>/dev/null
    IFS= read -r _p </dev/console
    _rc=$?
    stty echo </dev/console 2>/dev/null
    printf '\n' >/dev/console
    [ "$_rc" = 0 ] || return 1
    printf '%s\n' "$_p"
    _p=
}

# tries= of an entry's options (default 3; 0 for ever).
tries_of() {
    _t=3
    _o=$1
    while [ -n "$_o" ]; do
        _x=${_o%%,*}
        case "$_x" in tries=*) _t=${_x#tries=} ;; esac
        [ "$_x" = "$_o" ] && break
        _o=${_o#*,}
    done
    case "$_t" in "" | *[!0-9]*) _t=3 ;; esac
    echo "$_t"
}

# Open NAME with a passphrase: its line in a table of its own with no key file.
open_with_passphrase() { # name source options device globalopts
    _tab=$STATE/$1.pass.tab
    echo "$1 $2 - $3" >"$_tab"
    chmod 0600 "$_tab"
    _tries=$(tries_of "$3")
    _i=1
    while :; do
        rm -f "$STATE/$1.noanswer"
        # shellcheck disable=SC2086 # $5: words
        { ask_passphrase "$1" "$4" "$_i" "$_tries" || : >"$STATE/$1.noanswer"; } |
            lukskit $5 crypttab open --crypttab "$_tab" "$1" >&2
        _rc=$?
        if [ -e "$STATE/$1.noanswer" ]; then
            say "$1: no passphrase was given"
            _rc=1
            break
        fi
        [ "$_rc" = 2 ] || break # 2: no key slot opened with it
        _i=$((_i + 1))
        [ "$_tries" != 0 ] && [ "$_i" -gt "$_tries" ] && break
    done
    rm -f "$_tab" "$STATE/$1.noanswer"
    return "$_rc"
}

# The TPM of an entry with tpm2-device= (auto: /dev/tpmrm0 or /dev/tpm0; a /dev path: that one):
# udev loads its driver; its node is waited for, at most /etc/lukskit/tpm-wait seconds (default
# 10), once per boot.
wait_for_tpm() { # tpm2-device value
    case "$1" in
    auto | "") set -- /dev/tpmrm0 /dev/tpm0 ;;
    /dev/*) ;;
    *) return 0 ;;
    esac
    for _d in "$@"; do [ -e "$_d" ] && return 0; done
    [ -e "$STATE/tpm.waited" ] && return 0
    : >"$STATE/tpm.waited"
    _limit=10
    [ -r /etc/lukskit/tpm-wait ] && _limit=$(cat /etc/lukskit/tpm-wait)
    say "waiting up to ${_limit} s for a TPM ($*)"
    _n=0
    while [ "$_n" -lt $((_limit * 10)) ]; do
        for _d in "$@"; do [ -e "$_d" ] && return 0; done
        sleep 0.1
        _n=$((_n + 1))
    done
    say "no TPM ($*) after ${_limit} s"
}

# The tpm2-device= value of OPTIONS (status 1 when there is none).
tpm2_device_of() { # options
    case ",$1," in
    *,tpm2-device=*)
        _v=${1#*tpm2-device=}
        echo "${_v%%,*}"
        ;;
    *) return 1 ;;
    esac
}

# Whether the volume on DEVICE has a token lukskit unlocks with nothing typed (systemd-tpm2,
# clevis), or OPTIONS name a TPM.
token_first() { # device options
    tpm2_device_of "$2" >/dev/null && return 0
    _dump=$(lukskit luksDump "$1" 2>/dev/null </dev/null) || return 1
    case "$_dump" in
    *": systemd-tpm2"* | *": clevis"*) return 0 ;;
    esac
    return 1
}

# Open NAME by its tokens alone: nothing on standard input, so lukskit asks nothing; its lines
# about tokens that cannot unlock are shown, the rest of its complaint (no passphrase) is not.
open_with_tokens() { # name globalopts
    # shellcheck disable=SC2086 # $2: words
    lukskit $2 crypttab open --crypttab "$TAB" "$1" </dev/null >&2 2>"$STATE/$1.tokens"
    _rc=$?
    while IFS= read -r _l; do
        case "$_l" in Token*) say "$1: $_l" ;; esac
    done <"$STATE/$1.tokens"
    rm -f "$STATE/$1.tokens"
    return "$_rc"
}

unlock() {
    [ -s "$TAB" ] || return 0
    opts=
    [ -r /etc/lukskit/options ] && opts=$(cat /etc/lukskit/options)
    if [ ! -e "$STATE/modules" ]; then
        modprobe -q dm_mod 2>/dev/null
        modprobe -q dm_crypt 2>/dev/null
        if [ -n "$opts" ]; then
            modprobe -q fuse 2>/dev/null
            modprobe -q loop 2>/dev/null
        fi
        : >"$STATE/modules"
    fi
    opened=0
    # The table on fd 3: nothing in the loop may read it from standard input.
    # shellcheck disable=SC2094
    while read -r name source key eopts rest <&3; do
        case "$name" in "" | \#*) continue ;; esac
        [ -e "$STATE/$name.done" ] && continue
        [ -e "$STATE/$name.failed" ] && continue
        if lukskit status "$name" >/dev/null 2>&1 </dev/null; then
            : >"$STATE/$name.done"
            continue
        fi
        if ! dev=$(source_dev "$source"); then
            if [ ! -e "$STATE/$name.waiting" ]; then
                say "$name: waiting for $source"
                : >"$STATE/$name.waiting"
            fi
            continue
        fi
        rc=
        case "${key:--}" in
        none | -)
            if token_first "$dev" "${eopts:-}"; then
                if tpm=$(tpm2_device_of "${eopts:-}"); then wait_for_tpm "$tpm"; fi
                open_with_tokens "$name" "$opts" && rc=0
            fi
            ;;
        *:*)
            # shellcheck disable=SC2086
            lukskit $opts crypttab open --crypttab "$TAB" "$name" </dev/null >&2
            rc=$?
            ;;
        *)
            if [ -e "$key" ]; then
                # shellcheck disable=SC2086
                lukskit $opts crypttab open --crypttab "$TAB" "$name" </dev/null >&2
                rc=$?
            else
                say "$name: key file $key is not in the initramfs"
            fi
            ;;
        esac
        if [ -z "$rc" ] || [ "$rc" = 2 ]; then
            [ "$rc" = 2 ] && say "$name: the key file did not unlock $dev: asking for the passphrase"
            open_with_passphrase "$name" "$source" "${eopts:-luks}" "$dev" "$opts"
            rc=$?
        fi
        if [ "$rc" = 0 ]; then
            : >"$STATE/$name.done"
            opened=1
        else
            say "$name: unlocking failed (exit $rc)"
            : >"$STATE/$name.failed"
        fi
    done 3<"$TAB"
    if [ "$opened" = 1 ]; then
        # dracut's shutdown hooks close device-mapper devices at power-off.
        type need_shutdown >/dev/null 2>&1 && need_shutdown
    fi
    return 0
}

emergency() {
    [ -s "$TAB" ] || return 0
    while read -r name source rest; do
        if [ -e "$STATE/$name.done" ]; then
            continue
        elif [ -e "$STATE/$name.failed" ]; then
            say "$name ($source): unlocking failed"
        else
            say "$name: $source never appeared"
        fi
    done <"$TAB"
}

case "${1:-}" in
parse) parse ;;
unlock) unlock ;;
emergency) emergency ;;
*)
    echo "usage: lukskit-dracut parse|unlock|emergency" >&2
    exit 2
    ;;
esac
exit 0
