#!/bin/sh
# tests/refvm/upstream/run-suite.sh — runs inside the reference VM (tests/refvm/run.sh): runs
# cryptsetup 2.6.1's own test scripts (../shared/cryptsetup-2.6.1-tests, shipped in as a tarball)
# with the reference cryptsetup and then with lukskit, each from a fresh copy of the test
# directory and under the same time limit, and reports how far each got.
#
# Inputs (put in by crates/lukskit-cli/tests/refvm_upstream.rs with run.sh --copy):
#   /refvm/files/upstream-tests.tar  the test directory (as tests/) and a compiled tests/differ
#   /refvm/files/suite.conf          SUITE_SCRIPTS="name[:secs] ...", SUITE_TOOLS="cryptsetup lukskit",
#                                    SUITE_TIMEOUT=default time limit (seconds) of one script run;
#                                    name:secs gives a script its own (the same for every tool)
#   /dev/vda (optional)              a scratch disk, formatted ext4 and used as the work directory
#                                    (otherwise /tmp, which is RAM)
#
# How each tool is run: the scripts take their binary from $CRYPTSETUP_PATH/cryptsetup. For each
# tool that directory holds a small bash wrapper `cryptsetup` that runs the real binary
# (/usr/sbin/cryptsetup, or /usr/bin/lukskit) and appends the command line, its standard error
# and its exit status to a command log, so that a failure can be traced to the command and the
# message behind it (the scripts send most of it to /dev/null). Both tools get the same wrapper.
#
# Output on stdout, one record per line (parsed by the host test):
#   suite: env KEY VALUE
#   suite: result SCRIPT TOOL rc=N secs=S lines=L skips=K timeout=0|1
#   suite: out SCRIPT TOOL | LINE           (the last lines of the script's output)
#   suite: fail SCRIPT TOOL | LINE          (lines of the output that report a failed check)
#   suite: cmd SCRIPT TOOL | LINE           (the last commands of the command log)
#   suite: kmsg SCRIPT TOOL | LINE          (after a failure: the last kernel messages of the run,
#                                            then memory and key counts)
#   suite: done
# rc is the script's exit status (0 pass, 77 skipped, 124 stopped by the time limit); lines the
# number of lines it printed; skips the number of lines that say a part was skipped or is not
# available (a skipped part is not a pass: the host test compares it with real cryptsetup's).
set -u
# GNU coreutils, grep, sed, findutils, diffutils, util-linux, xz, uuencode before busybox's applets
# (run.sh installs them in /opt/gnu/bin): the scripts are written for a GNU userland.
export PATH=/opt/gnu/bin:$PATH
export DM_DISABLE_UDEV=1
export LC_ALL=C
FILES=/refvm/files
. "$FILES/suite.conf"
: "${SUITE_SCRIPTS:?}" "${SUITE_TOOLS:=cryptsetup lukskit}" "${SUITE_TIMEOUT:=600}"
OUT_TAIL=${SUITE_OUT_TAIL:-12}
CMD_TAIL=${SUITE_CMD_TAIL:-4}

say() { echo "suite: $*"; }
now() { cut -d' ' -f1 /proc/uptime; }

# scsi_debug disks (the sector-size cases): without udev nothing loads sd_mod when a disk appears,
# and with synchronous scanning `modprobe scsi_debug` returns only when its disk exists, as the
# scripts expect.
modprobe scsi_mod scan=sync >/dev/null 2>&1
modprobe sd_mod >/dev/null 2>&1 || say "env note cannot load sd_mod (no scsi_debug disks)"

# --- the work directory -------------------------------------------------------------------------
W=/tmp/suite
if [ -b /dev/vda ]; then
    mkfs.ext4 -q -F -E lazy_itable_init=1,lazy_journal_init=1 /dev/vda >/dev/null 2>&1 &&
        mkdir -p /work && mount -t ext4 /dev/vda /work && W=/work/suite
fi
mkdir -p "$W"
say "env workdir $W"
say "env kernel $(uname -r)"
say "env dm-crypt $(dmsetup targets | awk '$1 == "crypt" { print $2 }')"
tar -x -f "$FILES/upstream-tests.tar" -C "$W" || { say "env error cannot unpack the tests"; exit 1; }
[ -x "$W/tests/differ" ] || say "env note no compiled differ (compat-test skips its part)"

# jq: Debian's jq 1.6-2.1+deb12u3 (the security update for CVE-2025-48060) no longer accepts the
# NUL padding that follows the JSON area the LUKS2 header generators of luks2-validation-test cut
# out of an image with dd; the jq 1.6 upstream ran them with ignored it. A wrapper first in PATH
# hands jq its input files without the NUL bytes (the same for both tools).
mkdir -p "$W/shims"
cat >"$W/shims/jq" <<'JQ'
#!/bin/bash
args=() tmps=()
for a in "$@"; do
    if [ -f "$a" ] && [ "$(tr -d '\000' <"$a" | wc -c)" != "$(wc -c <"$a")" ]; then
        t=$(mktemp /tmp/suite-jq.XXXXXX)
        tr -d '\000' <"$a" >"$t"
        args+=("$t") tmps+=("$t")
    else
        args+=("$a")
    fi
done
/usr/bin/jq "${args[@]}"
rc=$?
rm -f "${tmps[@]}"
exit $rc
JQ
chmod 755 "$W/shims/jq"
export PATH=$W/shims:$PATH

# --- the tools ----------------------------------------------------------------------------------
CMDLOG=$W/cmds.log
make_wrapper() { # dir real-binary
    mkdir -p "$1"
    cat >"$1/cryptsetup" <<EOF
#!/bin/bash
# Runs $2 and logs the call (command line, standard error, exit status) to $CMDLOG.
err=\$(mktemp /tmp/suite-err.XXXXXX)
"$2" "\$@" 2> >(tee "\$err" >&2)
rc=\$?
wait \$! 2>/dev/null
{ printf '\$ cryptsetup'; printf ' %q' "\$@"; printf '\n'; sed 's/^/  /' "\$err"; echo "=> exit \$rc"; } >>"$CMDLOG"
rm -f "\$err"
exit \$rc
EOF
    chmod 755 "$1/cryptsetup"
}
for tool in $SUITE_TOOLS; do
    case "$tool" in
    cryptsetup) real=/usr/sbin/cryptsetup ;;
    lukskit) real=/usr/bin/lukskit ;;
    *) say "env error unknown tool $tool"; exit 1 ;;
    esac
    if [ -x "$real" ]; then
        make_wrapper "$W/bin-$tool" "$real"
        say "env $tool $("$real" --version 2>&1 | head -n 1)"
    else
        say "env $tool missing ($real)"
    fi
done

# --- between runs: nothing of the previous run may remain ---------------------------------------
reset_state() {
    for m in $(awk '$2 ~ "^'"$W"'/run" { print $2 }' /proc/mounts | sort -r); do umount -l "$m" 2>/dev/null; done
    dmsetup remove_all --force >/dev/null 2>&1
    losetup -D 2>/dev/null
    rmmod scsi_debug >/dev/null 2>&1
    keyctl clear @u >/dev/null 2>&1
    rm -f /tmp/suite-err.*
    dmesg -c >/dev/null 2>&1
}

# --- one script with one tool -------------------------------------------------------------------
run_one() { # script tool limit
    s=$1 tool=$2 limit=$3 dir=$W/run out=$W/out.txt mark=$W/timed-out
    reset_state
    rm -rf "$dir" "$mark"
    cp -a "$W/tests" "$dir"
    : >"$CMDLOG"
    : >"$out"
    if [ ! -x "$W/bin-$tool/cryptsetup" ]; then
        say "result $s $tool rc=125 secs=0 lines=0 skips=0 timeout=0 limit=$limit"
        say "out $s $tool | the tool is not installed in the VM"
        return
    fi
    t0=$(now)
    (cd "$dir" && CRYPTSETUP_PATH=$W/bin-$tool exec setsid bash "./$s" >"$out" 2>&1 </dev/null) &
    pid=$!
    # The time limit: TERM to the script's whole process group, KILL 5 s later.
    (
        end=$(awk -v a="$t0" -v l="$limit" 'BEGIN { printf "%d", a + l }')
        while kill -0 "$pid" 2>/dev/null; do
            if [ "$(cut -d. -f1 /proc/uptime)" -ge "$end" ]; then
                : >"$mark"
                kill -TERM -"$pid" 2>/dev/null
                sleep 5
                kill -KILL -"$pid" 2>/dev/null
                break
            fi
            sleep 1
        done
    ) &
    wd=$!
    wait "$pid"
    rc=$?
    wait "$wd"
    to=0
    if [ -e "$mark" ]; then to=1 rc=124; fi
    secs=$(awk -v a="$t0" -v b="$(now)" 'BEGIN { printf "%.0f", b - a }')
    lines=$(wc -l <"$out")
    # Parts a script left out: "test skipped", "[N/A]" (luks2-integrity-test reads a failed
    # luksFormat as "mode not available"), "not supported".
    skips=$(grep -ciE 'skip|N/A|not supported|unsupported|not available' "$out")
    say "result $s $tool rc=$rc secs=$secs lines=$lines skips=$skips timeout=$to limit=$limit"
    grep -v '^[[:space:]]*$' "$out" | tail -n "$OUT_TAIL" | sed "s|^|suite: out $s $tool \| |"
    # Every line that reports a failed check (some scripts go on after one and fail at the end).
    grep -iE 'fail|wrong|mismatch' "$out" | grep -vE '^FAILED backtrace|\.\.\.(done|OK|PASSED)$' | head -n 40 | cut -c1-300 |
        sed "s|^|suite: fail $s $tool \| |"
    # The last commands: each starts with "$ cryptsetup", then its stderr, then "=> exit N".
    awk -v n="$CMD_TAIL" '/^\$ cryptsetup/ { c++ } { line[NR] = $0; cmd[NR] = c }
        END { for (i = 1; i <= NR; i++) if (cmd[i] > c - n) print line[i] }' "$CMDLOG" |
        cut -c1-400 | tail -n 40 | sed "s|^|suite: cmd $s $tool \| |"
    # After a failure, what the kernel said during the run and the state of the VM (memory,
    # keys, mappings, loop devices), to tell a fault of the tool from one of the environment.
    if [ "$rc" != 0 ] && [ "$rc" != 77 ]; then
        {
            dmesg | tail -n 20
            grep -E '^(MemFree|MemAvailable|Shmem):' /proc/meminfo | tr -s ' ' | paste -sd' '
            echo "keys $(wc -l </proc/keys) key-users $(paste -sd' ' /proc/key-users)"
            echo "mappings $(dmsetup ls 2>/dev/null | paste -sd' ')"
            echo "loops $(losetup -a 2>/dev/null | paste -sd' ')"
        } | cut -c1-300 | sed "s|^|suite: kmsg $s $tool \| |"
    fi
    cd /
    rm -rf "$dir"
}

for entry in $SUITE_SCRIPTS; do
    s=${entry%%:*} limit=$SUITE_TIMEOUT
    case "$entry" in *:*) limit=${entry#*:} ;; esac
    if [ ! -f "$W/tests/$s" ]; then
        for tool in $SUITE_TOOLS; do say "result $s $tool rc=126 secs=0 lines=0 skips=0 timeout=0 limit=$limit"; done
        continue
    fi
    for tool in $SUITE_TOOLS; do run_one "$s" "$tool" "$limit"; done
done
reset_state
say "done"
