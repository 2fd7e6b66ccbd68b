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
#                                    name:secs gives a script its own (the same for every tool);
#                                    or SUITE_QUEUE=/host: take the jobs one at a time from the
#                                    host's queue in that shared directory (see the end)
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
#   suite: left SCRIPT TOOL | LINE          (what the run left behind, before the reset)
#   suite: reset SCRIPT TOOL secs=S         (how long the reset after the run took)
#   suite: job N SCRIPT[:SECS] TOOL uptime=U  (queue mode: this VM took the job)
#   suite: dirty SCRIPT[:SECS] TOOL | LINE  (queue mode: what the reset could not remove; exit 3)
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
: "${SUITE_SCRIPTS:=}" "${SUITE_TOOLS:=cryptsetup lukskit}" "${SUITE_TIMEOUT:=600}"
OUT_TAIL=${SUITE_OUT_TAIL:-12}
CMD_TAIL=${SUITE_CMD_TAIL:-4}

say() { echo "suite: $*"; }
# A job's "result" record: printed, and kept in $W/last-result for the host's queue (queue mode
# hands it back as $SUITE_QUEUE/result.N: real cryptsetup's run of a script is queued only
# where lukskit's result needs it).
result() { say "result $*"; echo "suite: result $*" >"$W/last-result"; }
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
# What a run can leave behind: mounts under the run directory, device-mapper mappings, loop
# devices, the scsi_debug module (align-test, discards-test, the sector-size cases), keys in the
# user keyring (keyring-compat-test, compat-test2), lock files in /run/cryptsetup, state in
# /run/lukskit, processes of the script's process group. leftovers prints one line per kind that
# is not clean; reset_state removes all of it.
leftovers() {
    m=$(awk '$2 ~ "^'"$W"'/run" { print $2 }' /proc/mounts | paste -sd' ')
    [ -n "$m" ] && echo "mounts $m"
    m=$(dmsetup ls 2>/dev/null | grep -v '^No devices found' | awk '{ print $1 }' | paste -sd' ')
    [ -n "$m" ] && echo "mappings $m"
    m=$(losetup -a 2>/dev/null | cut -d: -f1 | paste -sd' ')
    [ -n "$m" ] && echo "loops $m"
    grep -q '^scsi_debug ' /proc/modules && echo "module scsi_debug"
    m=$(keyctl rlist @u 2>/dev/null | wc -w)
    [ "${m:-0}" != 0 ] && echo "keys $m in the user keyring"
    m=$(ls -A /run/cryptsetup /run/lukskit 2>/dev/null | grep -v '^/\|^$' | paste -sd' ')
    [ -n "$m" ] && echo "run-files $m"
    [ -n "${1:-}" ] && kill -0 -"$1" 2>/dev/null && echo "processes of the script's group"
    return 0
}
reset_state() {
    [ -n "${1:-}" ] && kill -KILL -"$1" 2>/dev/null
    for m in $(awk '$2 ~ "^'"$W"'/run" { print $2 }' /proc/mounts | sort -r); do umount -l "$m" 2>/dev/null; done
    dmsetup remove_all --force >/dev/null 2>&1
    losetup -D 2>/dev/null
    rmmod scsi_debug >/dev/null 2>&1
    keyctl clear @u >/dev/null 2>&1
    rm -rf /run/cryptsetup/* /run/lukskit/* 2>/dev/null
    rm -f /tmp/suite-err.*
    dmesg -c >/dev/null 2>&1
}

# --- one script with one tool -------------------------------------------------------------------
run_one() { # script tool limit
    s=$1 tool=$2 limit=$3 dir=$W/run out=$W/out.txt mark=$W/timed-out
    rm -rf "$dir" "$mark"
    cp -a "$W/tests" "$dir"
    : >"$CMDLOG"
    : >"$out"
    if [ ! -x "$W/bin-$tool/cryptsetup" ]; then
        result "$s $tool rc=125 secs=0 lines=0 skips=0 timeout=0 limit=$limit"
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
    result "$s $tool rc=$rc secs=$secs lines=$lines skips=$skips timeout=$to limit=$limit"
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
    # What the run left behind (reported; the next run must not see it), then the reset, timed
    # (what a job costs besides the script; the alternative is a reboot of the VM).
    leftovers "$pid" | cut -c1-300 | sed "s|^|suite: left $s $tool \| |"
    cd /
    rm -rf "$dir"
    r0=$(now)
    reset_state "$pid"
    say "reset $s $tool secs=$(awk -v a="$r0" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }')"
}

run_entry() { # name[:secs] tool...
    entry=$1
    shift
    s=${entry%%:*} limit=$SUITE_TIMEOUT
    case "$entry" in *:*) limit=${entry#*:} ;; esac
    if [ ! -f "$W/tests/$s" ]; then
        for tool in "$@"; do result "$s $tool rc=126 secs=0 lines=0 skips=0 timeout=0 limit=$limit"; done
        return
    fi
    for tool in "$@"; do run_one "$s" "$tool" "$limit"; done
}

reset_state
if [ -n "${SUITE_QUEUE:-}" ]; then
    # The job queue is on the host (refvm_upstream.rs): this VM asks for its next job by creating
    # $SUITE_QUEUE/want.N and runs what the host writes into $SUITE_QUEUE/job.N ("SCRIPT:SECS
    # TOOL", or "stop" once the queue is empty), so that two VMs share the (script, tool) jobs,
    # each taking the next one when it is free. After each job the state is reset; if it cannot
    # be (a mapping or loop device still busy), this VM stops with exit status 3 and the host
    # boots a fresh one for the rest of the queue.
    say "env queue-ready uptime=$(now)"
    n=0
    while :; do
        n=$((n + 1))
        : >"$SUITE_QUEUE/want.$n"
        while [ ! -f "$SUITE_QUEUE/job.$n" ]; do sleep 1; done
        read -r entry tool <"$SUITE_QUEUE/job.$n"
        [ "$entry" = stop ] && break
        say "job $n $entry $tool uptime=$(now)"
        rm -f "$W/last-result"
        run_entry "$entry" "$tool"
        # The job's result for the host, which reads it when this VM asks for its next job
        # (want.N+1); written under a temporary name and renamed, never read half written.
        if [ -f "$W/last-result" ]; then
            cp "$W/last-result" "$SUITE_QUEUE/.result.$n"
            mv "$SUITE_QUEUE/.result.$n" "$SUITE_QUEUE/result.$n"
        fi
        dirty=$(leftovers)
        if [ -n "$dirty" ]; then
            echo "$dirty" | cut -c1-300 | sed "s|^|suite: dirty $entry $tool \| |"
            say "done"
            exit 3
        fi
    done
else
    for entry in $SUITE_SCRIPTS; do run_entry "$entry" $SUITE_TOOLS; done
fi
reset_state
say "done"
