#!/usr/bin/env bash
# Runs every test of the workspace, as `cargo test --workspace --no-fail-fast` does, in two
# lanes at once instead of one binary after the other:
#   - the VM lane: the test binaries named refvm_* (the reference VM under QEMU's TCG, the
#     longest by far), taken one after the other from the front of a queue ordered longest
#     first, their output as it comes; refvm_upstream (two VMs at once) is not queued: it
#     runs last in this lane; then --then jobs, as the host lane takes them;
#   - the host lane: every other test binary, one after the other, then the doc tests; each
#     binary's output is printed whole when it ends (so the lanes' lines do not mix). Then the
#     --then jobs (in the order given, each taken by whichever lane is free first), then
#     reference-VM binaries from the back of the VM queue (the shortest) until it is empty, so
#     that neither lane ends long before the other.
# On 2 cores a single VM keeps about one core busy (its guest runs one command at a time), and
# the host tests mostly wait on their tools, so the two lanes share the machine well; one
# after the other, the test command no longer fitted CI's 90 minutes (2026-11-27). With one
# fixed VM lane, the host lane ended ~20 minutes before it and one core was idle meanwhile.
# (With the VMs twice as fast, 2026-12-01, the VM lane ended ~12 minutes before the host lane's
# --then scripts: hence jobs either lane takes.)
#
# Each binary runs as cargo runs it: from its package's directory, with the usual libtest
# output ("test result: ..." lines, which scripts/test.sh counts). `--then "SCRIPT [ARGS]"`
# (repeatable, first) is a job: `bash SCRIPT ARGS` (words split at spaces), its output printed
# whole when it ends; the other arguments go to every test binary (a test name filter,
# --nocapture, ...). Every "==> ... exit" line also says
# when it ended, in seconds from the start of the test build. Exit status: 0 when every binary
# and script passed.
#
# Tried 2026-11-30 and left: starting the VM lane once its own binaries were built, with the
# rest built and the static checks run beside it (niced, or in a third lane at nice 19). On 2
# cores it was slower, not faster (in a cold run refvm_kernel took 1130 s with one key
# derivation less than the 917 s of stop 42's CI run, deb_package 784 s against 323 s): the
# machine is saturated already, and more at once only preempts the VMs' vCPUs.
set -uo pipefail
cd "$(dirname "$0")/.."
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# The --then jobs: one file each in $work/thenq, named in the order given.
mkdir "$work/thenq"
nthen=0
while [ "${1:-}" = --then ]; do
    [ -n "${2:-}" ] || { echo "test-lanes.sh: --then needs a script" >&2; exit 2; }
    nthen=$((nthen + 1))
    printf '%s\n' "$2" >"$work/thenq/$(printf %03d "$nthen")"
    shift 2
done

t0=$(date +%s)
# One line per test binary of a cargo build's JSON messages: lane (vm or host), order (the
# VM lane's rank, longest first, or "last"), package directory, source path, executable.
binaries() { # BUILD.JSON
    python3 - "$1" <<'PY'
import json, os, sys
seen = set()
for line in open(sys.argv[1]):
    try:
        m = json.loads(line)
    except ValueError:
        continue
    if m.get("reason") != "compiler-artifact" or not m.get("profile", {}).get("test"):
        continue
    exe = m.get("executable")
    if not exe or exe in seen:
        continue
    seen.add(exe)
    t = m["target"]
    pkg = os.path.dirname(m["manifest_path"])
    lane = "vm" if t["name"].startswith("refvm_") else "host"
    src = os.path.relpath(t["src_path"], pkg)
    # The reference-VM binaries longest first (seconds in the test command's run of
    # 2026-12-01, the VMs booted with norandmaps: refvm_reencrypt 568, refvm_kernel 483,
    # refvm_reencrypt_open 281, refvm_boot 236, refvm_integrity 162, refvm_matrix 159,
    # refvm_dm 71, refvm_crypttab 53; the others under 40; one not named here goes after these).
    # refvm_boot needs the static x86_64 binary that static_binaries.rs builds in the host
    # lane: built by whichever comes first (cargo's lock, one build); it goes after
    # refvm_matrix so that static_binaries has usually built it by then (in a cold run with
    # refvm_boot third, refvm_boot built it while static_binaries waited for cargo's lock,
    # both lanes on one build whose LTO step is one thread).
    # refvm_upstream ("last"): not queued, the VM lane's last.
    rank = ["refvm_reencrypt", "refvm_kernel", "refvm_reencrypt_open", "refvm_matrix",
            "refvm_boot", "refvm_integrity", "refvm_dm", "refvm_crypttab", "refvm_udev",
            "refvm_exclusive", "refvm_smoke", "refvm_open", "refvm_segments"]
    if t["name"] == "refvm_upstream":
        order = "last"
    elif lane == "vm":
        order = "%03d" % (rank.index(t["name"]) if t["name"] in rank else len(rank))
    else:
        order = "000"
    print("\t".join([lane, order, pkg, src, exe]))
PY
}
echo "==> building the test binaries"
if ! cargo test --workspace --no-run --message-format=json-render-diagnostics >"$work/build.json"; then
    echo "lukskit: the test binaries did not build" >&2
    exit 101
fi
echo "==> the test binaries built in $(($(date +%s) - t0)) s"
binaries "$work/build.json" >"$work/all" || exit 101
awk -F'\t' '$1 == "host"' "$work/all" >"$work/binaries"
awk -F'\t' '$1 == "vm" && $2 == "last"' "$work/all" >"$work/binaries-vm-last"
[ -s "$work/binaries" ] || { echo "lukskit: no test binaries found" >&2; exit 101; }
# The queue of reference-VM binaries: one file per binary, named so that `sort` puts the
# longest first (rank, then cargo's order).
mkdir "$work/vmq"
n=0
while IFS= read -r line; do
    n=$((n + 1))
    printf '%s\n' "$line" >"$work/vmq/$(cut -f2 <<<"$line").$(printf %03d "$n")"
done < <(awk -F'\t' '$1 == "vm" && $2 != "last"' "$work/all")

# take front|back: prints the queue's first (longest) or last (shortest) binary and takes
# it out of the queue; exit status 1 when the queue is empty.
take() {
    (
        flock 9
        f=$(find "$work/vmq" -type f -printf '%f\n' | sort | if [ "$1" = front ]; then head -n1; else tail -n1; fi)
        [ -n "$f" ] || exit 1
        cat "$work/vmq/$f" && rm -f "$work/vmq/$f"
    ) 9>"$work/vmq.lock"
}

run_binary() { # pkg src exe [args...]
    local pkg=$1 src=$2 exe=$3 t rc
    shift 3
    t=$(date +%s)
    echo "     Running $src ($(realpath --relative-to=. "$exe")) in $(basename "$pkg")"
    (cd "$pkg" && "$exe" "$@")
    rc=$?
    echo "==> $(basename "$pkg") $src: exit $rc after $(($(date +%s) - t)) s (at $(($(date +%s) - t0)) s)"
    return $rc
}

# print_whole FILE: FILE's lines in one piece (a lane that prints whole outputs takes this
# lock; the VM lane's binaries write their lines as they come).
print_whole() {
    (
        flock 8
        cat "$1"
    ) 8>"$work/print.lock"
}

# take_then: prints the next --then job and takes it out of the queue; exit status 1 when
# the queue is empty.
take_then() {
    (
        flock 9
        f=$(find "$work/thenq" -type f -printf '%f\n' | sort | head -n1)
        [ -n "$f" ] || exit 1
        cat "$work/thenq/$f" && rm -f "$work/thenq/$f"
    ) 9>"$work/thenq.lock"
}

run_script() { # LANE "SCRIPT [ARGS]": its output whole when it ends
    local lane=$1 job=$2 t src out
    t=$(date +%s)
    out=$(mktemp "$work/script.XXXXXX")
    # shellcheck disable=SC2086 # the job's words
    bash $job >"$out" 2>&1 </dev/null
    src=$?
    echo "==> $job: exit $src after $(($(date +%s) - t)) s (at $(($(date +%s) - t0)) s, $lane lane)" >>"$out"
    print_whole "$out"
    rm -f "$out"
    return $src
}

# The VM lane: the queue from its front, then refvm_upstream; output as it comes.
vm_lane() {
    local rc=0 lane order pkg src exe job
    while job=$(take front); do
        IFS=$'\t' read -r lane order pkg src exe <<<"$job"
        run_binary "$pkg" "$src" "$exe" "$@" </dev/null 2>&1 || rc=1
    done
    while IFS=$'\t' read -r lane order pkg src exe; do
        run_binary "$pkg" "$src" "$exe" "$@" </dev/null 2>&1 || rc=1
    done <"$work/binaries-vm-last"
    while job=$(take_then); do
        run_script VM "$job" || rc=1
    done
    return $rc
}

# The host lane: each binary's output whole when it ends, under a lock shared with nothing
# else (the VM lane writes its lines as they come; a whole binary's output is one write
# stream after the other).
host_lane() {
    local rc=0 n=0 lane order pkg src exe s t job
    while IFS=$'\t' read -r lane order pkg src exe; do
        n=$((n + 1))
        run_binary "$pkg" "$src" "$exe" "$@" >"$work/host.$n" </dev/null 2>&1 || rc=1
        print_whole "$work/host.$n"
        rm -f "$work/host.$n"
    done <"$work/binaries"
    echo "   Doc-tests (cargo test --workspace --doc)"
    t=$(date +%s)
    cargo test --workspace --doc -q >"$work/doc" 2>&1
    s=$?
    cat "$work/doc"
    echo "==> doc tests: exit $s after $(($(date +%s) - t)) s (at $(($(date +%s) - t0)) s)"
    [ "$s" = 0 ] || rc=1
    while job=$(take_then); do
        run_script host "$job" || rc=1
    done
    # Then the VM lane's queue from its back (the shortest binaries), each binary's output
    # whole when it ends.
    while job=$(take back); do
        IFS=$'\t' read -r lane order pkg src exe <<<"$job"
        n=$((n + 1))
        echo "==> host lane: $src from the reference-VM queue"
        run_binary "$pkg" "$src" "$exe" "$@" >"$work/host.$n" </dev/null 2>&1 || rc=1
        print_whole "$work/host.$n"
        rm -f "$work/host.$n"
    done
    return $rc
}

vm_lane "$@" &
vm_pid=$!
host_lane "$@"
host_rc=$?
echo "==> host lane done after $(($(date +%s) - t0)) s; waiting for the VM lane"
wait "$vm_pid"
vm_rc=$?
echo "==> both lanes done after $(($(date +%s) - t0)) s (host lane exit $host_rc, VM lane exit $vm_rc)"
[ "$host_rc" = 0 ] && [ "$vm_rc" = 0 ]
