#!/bin/bash
# dracut module of lukskit: unlocks LUKS volumes at boot with lukskit instead of cryptsetup /
# systemd-cryptsetup (docs/boot.md, "Encrypted root with dracut").
#
# Inactive until asked for: check() returns 255, so dracut includes the module only when a
# configuration names it, e.g. /etc/dracut.conf.d/90-lukskit.conf (written by lukskit's
# dracut/install.sh):
#   add_dracutmodules+=" lukskit "
#   omit_dracutmodules+=" crypt systemd-cryptsetup "   # dracut's own LUKS unlocking
#
# Into the image go: lukskit (/usr/sbin/lukskit), /sbin/lukskit-dracut (the boot-time script),
# its cmdline, initqueue and emergency hooks, dm-crypt with every crypto module of the kernel,
# fuse and loop (the userspace backend), and the crypttab entries needed at boot with their key
# files and detached headers, chosen as lukskit's initramfs-tools hook chooses them (from
# /etc/crypttab, or CRYPTTAB of /etc/lukskit/initramfs.conf):
#   - the entry whose /dev/mapper/NAME is the root file system's device in /etc/fstab,
#   - every entry with the option `initramfs` (Debian), `x-initrd.attach` (systemd) or `force`
#     (dracut's crypt module),
#   - the names listed in LUKSKIT_NAMES.
# At boot the kernel command line's rd.luks.* arguments add to, select from or replace them
# (lukskit-dracut.sh says how). /etc/lukskit/initramfs.conf (shell syntax, all optional, the
# same file as for the initramfs-tools hook): LUKSKIT_BIN, LUKSKIT_NAMES, LUKSKIT_MODULES,
# LUKSKIT_OPEN_OPTIONS, LUKSKIT_TPM_WAIT, CRYPTTAB. The TPM drivers the kernel has as modules
# (drivers/char/tpm) go in too, for systemd-tpm2 and clevis tpm2 tokens.

# The configuration, read from the system the image is built for.
lukskit_conf() {
    LUKSKIT_BIN=
    LUKSKIT_NAMES=
    LUKSKIT_MODULES=
    LUKSKIT_OPEN_OPTIONS=
    LUKSKIT_TPM_WAIT=
    CRYPTTAB=/etc/crypttab
    # shellcheck disable=SC1091
    [[ -r "$dracutsysrootdir"/etc/lukskit/initramfs.conf ]] && . "$dracutsysrootdir"/etc/lukskit/initramfs.conf
    if [[ -z $LUKSKIT_BIN ]]; then
        local b
        for b in /usr/sbin/lukskit /usr/local/sbin/lukskit /sbin/lukskit /usr/bin/lukskit /usr/local/bin/lukskit; do
            if [[ -x "$dracutsysrootdir$b" ]]; then
                LUKSKIT_BIN=$b
                break
            fi
        done
    fi
}

# called by dracut
check() {
    lukskit_conf
    [[ -n $LUKSKIT_BIN && -x "$dracutsysrootdir$LUKSKIT_BIN" ]] || {
        derror "lukskit: no lukskit binary (install lukskit, or set LUKSKIT_BIN in /etc/lukskit/initramfs.conf)"
        return 1
    }
    # Only when a configuration adds it (add_dracutmodules+=" lukskit ").
    return 255
}

# called by dracut
depends() {
    # dm: device-mapper's udev rules (/dev/mapper links, by-uuid of what is inside);
    # rootfs-block: root= and the wait for the root device.
    echo dm rootfs-block
    return 0
}

# called by dracut
installkernel() {
    lukskit_conf
    instmods dm_mod dm_crypt
    # Which cipher, mode and hash a volume needs is only known when it is opened: all of them.
    hostonly='' instmods "=crypto"
    local arch
    arch=${DRACUT_ARCH:-$(uname -m)}
    case "$arch" in i?86 | x86_64) arch=x86 ;; aarch64) arch=arm64 ;; armv*) arch=arm ;; esac
    hostonly='' instmods "=arch/$arch/crypto"
    # The userspace backend (a kernel without dm-crypt): FUSE and loop devices.
    hostonly='' instmods fuse loop
    # TPM 2.0 drivers (systemd-tpm2 and clevis tpm2 tokens) the kernel has as modules.
    hostonly='' instmods "=drivers/char/tpm"
    # shellcheck disable=SC2086
    [[ -z $LUKSKIT_MODULES ]] || hostonly='' instmods $LUKSKIT_MODULES
    return 0
}

# The crypttab entries needed at boot, rewritten for the image (key files and headers copied
# in), to $initdir/etc/lukskit/crypttab.
lukskit_install_crypttab() {
    local tab="$dracutsysrootdir$CRYPTTAB" out="$initdir/etc/lukskit" rootname= rootdev
    [[ -r $tab ]] || return 0
    if [[ -r "$dracutsysrootdir"/etc/fstab ]]; then
        rootdev=$(awk '$1 !~ /^#/ && $2 == "/" { print $1; exit }' "$dracutsysrootdir"/etc/fstab)
        [[ $rootdev == /dev/mapper/* ]] && rootname=${rootdev#/dev/mapper/}
    fi
    mkdir -p "$out"
    : > "$out/crypttab"
    local name source key opts rest want n o newopts h found=0 _opts
    # shellcheck disable=SC2034
    while read -r name source key opts rest || [[ -n $name ]]; do
        [[ -z $name || $name == \#* ]] && continue
        want=0
        [[ $name == "$rootname" ]] && want=1
        for n in $LUKSKIT_NAMES; do [[ $n == "$name" ]] && want=1; done
        [[ ",${opts}," == *,initramfs,* || ",${opts}," == *,x-initrd.attach,* || ",${opts}," == *,force,* ]] && want=1
        [[ $want == 1 ]] || continue
        found=$((found + 1))
        # A key file on this system is copied in; devices, none, - and PATH:DEVICE stay.
        case "${key:--}" in
            none | - | /dev/* | *:*) ;;
            /*)
                if [[ -f "$dracutsysrootdir$key" ]]; then
                    mkdir -p "$out/keys"
                    cp "$dracutsysrootdir$key" "$out/keys/$name.key"
                    chmod 0400 "$out/keys/$name.key"
                    key=/etc/lukskit/keys/$name.key
                else
                    dwarn "lukskit: $name: key file $key not found; the entry will ask for a passphrase"
                    key=none
                fi
                ;;
        esac
        newopts=
        IFS=, read -r -a _opts <<< "${opts:-luks}"
        for o in "${_opts[@]}"; do
            case "$o" in
                force) continue ;; # dracut's: taken into the image; nothing for lukskit
                header=/dev/* | header=*:*) ;;
                header=/*)
                    h=${o#header=}
                    if [[ -f "$dracutsysrootdir$h" ]]; then
                        mkdir -p "$out/headers"
                        cp "$dracutsysrootdir$h" "$out/headers/$name.hdr"
                        o=header=/etc/lukskit/headers/$name.hdr
                    else
                        dwarn "lukskit: $name: header $h not found"
                    fi
                    ;;
            esac
            newopts=${newopts:+$newopts,}$o
        done
        echo "$name $source ${key:--} ${newopts:-luks}" >> "$out/crypttab"
    done < "$tab"
    if [[ $found == 0 ]]; then
        rm -f "$out/crypttab"
    else
        chmod 0600 "$out/crypttab"
        dinfo "lukskit: $found crypttab entries in the image"
    fi
}

# called by dracut
install() {
    lukskit_conf
    local m
    for m in crypt systemd-cryptsetup; do
        if dracut_module_included "$m"; then
            dwarn "lukskit: dracut's $m module is in the image too: it would unlock the same volumes; add omit_dracutmodules+=\" $m \""
        fi
    done
    inst_binary "$LUKSKIT_BIN" /usr/sbin/lukskit || return 1
    inst_script "$moddir/lukskit-dracut.sh" /sbin/lukskit-dracut
    inst_multiple cat mkdir rm mv chmod tr readlink
    inst_multiple -o stty modprobe sleep
    inst_hook cmdline 30 "$moddir/parse-lukskit.sh"
    inst_hook emergency 30 "$moddir/lukskit-emergency.sh"
    lukskit_install_crypttab
    if [[ $LUKSKIT_TPM_WAIT =~ ^[0-9]+$ ]]; then
        mkdir -p "$initdir/etc/lukskit"
        echo "$LUKSKIT_TPM_WAIT" > "$initdir/etc/lukskit/tpm-wait"
    fi
    if [[ -n $LUKSKIT_OPEN_OPTIONS ]]; then
        mkdir -p "$initdir/etc/lukskit"
        echo "$LUKSKIT_OPEN_OPTIONS" > "$initdir/etc/lukskit/options"
    fi
    # A passphrase under systemd goes through systemd-ask-password and its console agent.
    if dracut_module_included systemd; then
        inst_multiple -o systemd-ask-password systemd-tty-ask-password-agent \
            "$systemdsystemunitdir"/systemd-ask-password-console.path \
            "$systemdsystemunitdir"/systemd-ask-password-console.service
    fi
    dracut_need_initqueue
}
