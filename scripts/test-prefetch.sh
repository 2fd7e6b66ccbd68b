#!/usr/bin/env bash
# What the tests download and build outside cargo, made ahead of them: scripts/test.sh runs
# this in the background while the test binaries build (mostly network and disk, where the
# build is CPU), so that the first reference-VM test does not wait for it on the critical path:
#   - the reference VM's kernel, initramfs and static fio (tests/refvm/run.sh --prepare --fio);
#   - the arm64 VM's (tests/refvm/run-arm64.sh --prepare), for static_binaries.rs;
#   - the boot tests' three Debian systems (tests/refvm/boot/build.sh --chroots: mmdebstrap).
# Each script takes its cache's lock, so a test that needs one of them meanwhile waits for it.
# A step that fails here is not a test result: the test that needs it builds it again and
# fails (or skips) with its own message. Exit status: 0, or the first failing step's.
set -uo pipefail
cd "$(dirname "$0")/.."
rc=0
step() {
    local t=$SECONDS r
    echo "==> prefetch: $*"
    "$@"
    r=$?
    echo "    (prefetch: $1 ${2:-}: exit $r after $((SECONDS - t)) s)"
    [ "$r" = 0 ] || [ "$rc" != 0 ] || rc=$r
    return 0
}
step bash tests/refvm/run.sh --prepare --fio
step bash tests/refvm/run-arm64.sh --prepare
step bash tests/refvm/boot/build.sh --chroots
exit "$rc"
