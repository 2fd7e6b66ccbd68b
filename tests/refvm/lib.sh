# shellcheck shell=bash
# tests/refvm/lib.sh — what run.sh (x86_64) and run-arm64.sh (arm64) share; sourced by both.
#
# The sourcing script sets REFVM_TAG (the prefix of its messages), VERBOSE, and before
# refvm_boot: QEMU (the machine: qemu binary, cpu, memory, -kernel/-initrd), CONSOLE (ttyS0,
# ttyAMA0), APPEND, INITRD (empty: a SCRIPT run), ANSWERS, DISK_ARGS (the -drive/-device
# options of the disks), RUN, TIMEOUT, T0.

EXIT_SKIP=77
EXIT_TIMEOUT=124
EXIT_HARNESS=125

say() { echo "$REFVM_TAG: $*" >&2; }
verbose() { if [ "$VERBOSE" = 1 ]; then say "$@"; fi; }
skip() {
    say "SKIP: $*"
    exit "$EXIT_SKIP"
}
die() {
    say "error: $*"
    exit "$EXIT_HARNESS"
}
elapsed() { awk -v a="$T0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }'; }

# refvm_need_tools QEMU_COMMAND QEMU_PACKAGE: the host tools, installed with apt-get when
# missing and root (otherwise skip).
refvm_need_tools() {
    local missing=() pkgs=()
    command -v "$1" >/dev/null || { missing+=("$1"); pkgs+=("$2"); }
    command -v cpio >/dev/null || { missing+=(cpio); pkgs+=(cpio); }
    command -v depmod >/dev/null || [ -x /sbin/depmod ] || { missing+=(depmod); pkgs+=(kmod); }
    command -v flock >/dev/null || { missing+=(flock); pkgs+=(util-linux); }
    [ ${#missing[@]} -eq 0 ] && return 0
    command -v apt-get >/dev/null || skip "missing ${missing[*]} and no apt-get to install them"
    [ "$(id -u)" = 0 ] || skip "missing ${missing[*]}: install ${pkgs[*]} (or run as root)"
    say "installing ${pkgs[*]}"
    if ! DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${pkgs[@]}" >/dev/null 2>&1; then
        apt-get update -qq >/dev/null 2>&1 || true
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${pkgs[@]}" >/dev/null 2>&1 ||
            skip "could not install ${pkgs[*]}"
    fi
}

# The end of the guest's /init (printed on stdout, appended to each harness's own start): wait
# up to 120 s for the output ports and the disks (probing is slow under TCG on a loaded host),
# run /refvm/script with its stdout/stderr on the ports, report its status, power off.
refvm_init_tail() {
    cat <<'INIT'
OUT= ERR= STATUS= n=0
while [ $n -lt 2400 ]; do
    for p in /sys/class/virtio-ports/*; do
        [ -e "$p/name" ] || continue
        case "$(cat "$p/name")" in
        refvm.stdout) OUT=/dev/${p##*/} ;;
        refvm.stderr) ERR=/dev/${p##*/} ;;
        refvm.status) STATUS=/dev/${p##*/} ;;
        esac
    done
    disks=$(ls -d /sys/block/vd* 2>/dev/null | wc -l)
    [ -n "$OUT" ] && [ -n "$ERR" ] && [ -n "$STATUS" ] && [ -e "$STATUS" ] && [ "$disks" -ge "$REFVM_DISKS" ] && break
    n=$((n + 1))
    sleep 0.05
done
if [ -z "$STATUS" ] || [ ! -e "$STATUS" ]; then
    echo "refvm: the output ports did not appear in time (120 s or more)"
    poweroff -f
fi
[ "$disks" -ge "$REFVM_DISKS" ] || echo "refvm: only $disks of $REFVM_DISKS disks appeared"
echo "refvm: script starts $(cut -d' ' -f1 /proc/uptime)s"
cd /root
REFVM=1 sh /refvm/script >"$OUT" 2>"$ERR" </dev/null
rc=$?
# A sync that cannot finish (I/O stuck in a suspended device-mapper device the script left
# behind) must not hold the status back until the host's timeout: wait 120 s for it, then
# report the script's status (125 if it had passed) with the blocked tasks on the console.
sync & sp=$! n=0
while kill -0 $sp 2>/dev/null && [ $n -lt 1200 ]; do sleep 0.1; n=$((n + 1)); done
if kill -0 $sp 2>/dev/null; then
    echo "refvm: sync did not finish in 120 s (I/O stuck); blocked tasks follow"
    echo w >/proc/sysrq-trigger
    [ "$rc" != 0 ] || rc=125
fi
echo "refvm: script exited $rc $(cut -d' ' -f1 /proc/uptime)s"
echo "$rc" >"$STATUS"
poweroff -f
INIT
}

# Boot the VM and exit with the harness's status: a SCRIPT run (INITRD empty) passes the
# script's stdout/stderr on while it runs and exits with its status; an --initrd run passes the
# serial console on (typing ANSWERS at their prompts) and exits 0 once the guest powered off.
# 124 on timeout, 125 when the VM stopped without a status.
refvm_boot() {
    local script_append=$1 # kernel command line of a SCRIPT run (before APPEND)
    # norandmaps: every process at the same addresses. TCG finds code it translated before by
    # its virtual address too, so with address randomization each new process translated its
    # code afresh: a short command (cryptsetup isLuks, lukskit --version) took 0.19-0.25 s
    # instead of 0.06 (2026-12-01, x86_64). The tests run thousands of them.
    APPEND="norandmaps${APPEND:+ $APPEND}"
    # shellcheck disable=SC2054 # qemu options are comma-separated
    if [ -n "$INITRD" ] && [ ${#ANSWERS[@]} -gt 0 ]; then
        # The serial line both ways: qemu reads $RUN/serial.in and writes $RUN/serial.out (FIFOs).
        mkfifo "$RUN/serial.in" "$RUN/serial.out"
        QEMU+=(-append "console=$CONSOLE panic=-1 $APPEND" -serial "pipe:$RUN/serial")
    elif [ -n "$INITRD" ]; then
        QEMU+=(-append "console=$CONSOLE panic=-1 $APPEND" -serial "file:$RUN/console.log")
    else
        QEMU+=(-append "console=$CONSOLE panic=-1 $script_append $APPEND" -serial "file:$RUN/console.log"
            -device virtio-serial-pci,id=vser)
        local p
        for p in stdout stderr status; do
            : >"$RUN/$p"
            QEMU+=(-chardev "file,id=$p,path=$RUN/$p" -device "virtserialport,bus=vser.0,chardev=$p,name=refvm.$p")
        done
    fi
    QEMU+=("${DISK_ARGS[@]}")

    verbose "prepared in $(elapsed)s; booting"
    set +e
    local qpid apid='' tpid1 tpid2 qrc rc wpid='' attempt=1 left
    while :; do
        : >"$RUN/console.log"
        rm -f "$RUN/boot-hung"
        if [ -z "$INITRD" ]; then
            for p in stdout stderr status; do : >"$RUN/$p"; done
        fi
        # The run's time; a boot again after a hang gets what is left of it.
        left=$TIMEOUT
        if [ "$attempt" -gt 1 ]; then
            left=$(awk -v t="$TIMEOUT" -v e="$(elapsed)" 'BEGIN { l = int(t - e); print (l < 1 ? 1 : l) }')
        fi
        timeout -k 10 "$left" "${QEMU[@]}" </dev/null >"$RUN/qemu.log" 2>&1 &
        qpid=$!
        if [ -z "$INITRD" ] && [ -z "${TPM_STATE:-}" ]; then
            # A guest whose kernel hangs before the script starts (seen under TCG on a loaded host:
            # "BUG: soft lockup - CPU#0 stuck" in cryptomgr_test, for the whole 480 s of the run) is
            # stopped and booted again, at most twice: nothing of the script has run, so nothing
            # on the disks has changed. Once the script starts, a hang is the test's and is kept.
            # (Not with a software TPM: swtpm ends with the first QEMU.)
            (
                while kill -0 "$qpid" 2>/dev/null; do
                    grep -qF "refvm: script starts" "$RUN/console.log" && exit 0
                    if grep -qF "BUG: soft lockup" "$RUN/console.log"; then
                        : >"$RUN/boot-hung"
                        kill "$qpid" 2>/dev/null
                        exit 0
                    fi
                    sleep 1
                done
            ) &
            wpid=$!
        fi
        if [ -n "$INITRD" ] && [ ${#ANSWERS[@]} -gt 0 ]; then
            cat "$RUN/serial.out" >>"$RUN/console.log" &
            # Types each answer once its prompt is on the console (after what was already answered).
            (
                exec 8>"$RUN/serial.in"
                seen=0
                for a in "${ANSWERS[@]}"; do
                    prompt=${a%%=*} file=${a#*=}
                    while kill -0 "$qpid" 2>/dev/null; do
                        n=$(tail -c +$((seen + 1)) "$RUN/console.log" | grep -cF -- "$prompt" || true)
                        [ "$n" -gt 0 ] && break
                        sleep 0.2
                    done
                    seen=$(stat -c %s "$RUN/console.log")
                    sleep 0.5
                    cat "$file" >&8
                    printf '\r' >&8
                done
                exec 8>&-
            ) &
            apid=$!
        fi
        # The output is passed on while the VM runs (tail ends once qemu has, after a last read).
        if [ -n "$INITRD" ]; then
            tail -c +1 -s 0.2 -f --pid="$qpid" "$RUN/console.log" &
            tpid1=$!
            tpid2=
        else
            tail -c +1 -s 0.2 -f --pid="$qpid" "$RUN/stdout" &
            tpid1=$!
            tail -c +1 -s 0.2 -f --pid="$qpid" "$RUN/stderr" >&2 &
            tpid2=$!
        fi
        wait "$qpid"
        qrc=$?
        wait $tpid1 $tpid2
        if [ -n "$apid" ]; then kill "$apid" 2>/dev/null; wait "$apid" 2>/dev/null; fi
        if [ -n "$wpid" ]; then kill "$wpid" 2>/dev/null; wait "$wpid" 2>/dev/null; fi
        if [ -f "$RUN/boot-hung" ] && [ "$attempt" -lt 3 ]; then
            say "the guest kernel hung before the script started (attempt $attempt, $(elapsed)s in); booting it again; console:"
            grep -F "soft lockup" "$RUN/console.log" | head -n 3 | sed 's/^/  /' >&2
            attempt=$((attempt + 1))
            continue
        fi
        if [ -f "$RUN/boot-hung" ]; then
            say "the guest kernel hung before the script started, $attempt times in $(elapsed)s; last console lines:"
            tail -n 30 "$RUN/console.log" | sed 's/^/  /' >&2
            exit "$EXIT_HARNESS"
        fi
        break
    done
    set -e
    verbose "VM finished in $(elapsed)s (qemu status $qrc)"
    if [ "$VERBOSE" = 1 ] && [ -z "$INITRD" ]; then
        sed 's/^/console: /' "$RUN/console.log" >&2
        sed 's/^/qemu: /' "$RUN/qemu.log" >&2
    fi
    if [ "$qrc" = 124 ] || [ "$qrc" = 137 ]; then
        say "the VM timed out after ${TIMEOUT}s ($(basename "$0") ran $(elapsed)s in all; --timeout or LUKSKIT_REFVM_TIMEOUT allows more); last console lines:"
        tail -n 30 "$RUN/console.log" | sed 's/^/  /' >&2
        exit "$EXIT_TIMEOUT"
    fi
    if [ -n "$INITRD" ]; then
        [ "$qrc" = 0 ] || { tail -n 10 "$RUN/qemu.log" | sed 's/^/  qemu: /' >&2; exit "$EXIT_HARNESS"; }
        exit 0
    fi
    rc=$(tr -dc '0-9' <"$RUN/status")
    if [ -z "$rc" ]; then
        say "the VM stopped without reporting the script's status (qemu status $qrc); last console lines:"
        tail -n 30 "$RUN/console.log" | sed 's/^/  /' >&2
        tail -n 10 "$RUN/qemu.log" | sed 's/^/  qemu: /' >&2
        exit "$EXIT_HARNESS"
    fi
    exit "$rc"
}
