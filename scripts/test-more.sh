#!/usr/bin/env bash
# The parts of the test command beyond `cargo test`: lukskit-crypto's tests compiled for
# aarch64 under qemu-user (`aarch64`), the Python bindings' tests (`python`) and a short
# fuzzing run (`fuzz`).
#
#   scripts/test-more.sh [aarch64|python|fuzz ...]     (default: all three)
#
# scripts/test.sh gives each part to scripts/test-lanes.sh as a job of its own, which
# whichever lane is free first runs. Exit status 0 when all passed.
set -uo pipefail
cd "$(dirname "$0")/.."
status=0
parts=" ${*:-aarch64 python fuzz} "
for p in $parts; do
    case $p in
    aarch64 | python | fuzz) ;;
    *) echo "test-more.sh: unknown part $p (aarch64, python, fuzz)" >&2; exit 2 ;;
    esac
done
want() { [[ $parts == *" $1 "* ]]; }
# LUKSKIT_AARCH64_CRYPTO=0 leaves them out; exit 77 = the tools could not be had here.
if want aarch64 && [ "${LUKSKIT_AARCH64_CRYPTO:-1}" != 0 ]; then
    echo "==> crypto tests on aarch64 (scripts/test-aarch64-crypto.sh)"
    t=$SECONDS
    bash scripts/test-aarch64-crypto.sh 2>&1
    arc=$?
    echo "    (crypto tests on aarch64: $((SECONDS - t)) s)"
    if [ "$arc" = 77 ] && [ "${LUKSKIT_ALLOW_SKIP:-}" = 1 ]; then
        echo "SKIP: crypto tests on aarch64 (LUKSKIT_ALLOW_SKIP=1)"
    elif [ "$arc" != 0 ]; then
        echo "lukskit: the crypto tests on aarch64 failed (exit $arc)"
        status=1
    fi
fi
# The Python bindings: pip install ./python into a venv, pytest against cryptsetup (about 20 s
# of tests after the extension's release build); LUKSKIT_PYTHON_TESTS=0 leaves them out.
if want python && [ "${LUKSKIT_PYTHON_TESTS:-1}" != 0 ]; then
    echo "==> Python bindings (scripts/test-python.sh)"
    t=$SECONDS
    if ! bash scripts/test-python.sh 2>&1; then
        echo "lukskit: the Python binding tests failed"
        status=1
    fi
    echo "    (Python bindings: $((SECONDS - t)) s)"
fi
# 15 s per cargo-fuzz target; installs nightly + cargo-fuzz the first time; LUKSKIT_FUZZ=0
# leaves it out.
if want fuzz && [ "${LUKSKIT_FUZZ:-1}" != 0 ]; then
    echo "==> fuzz (scripts/ci-fuzz.sh)"
    t=$SECONDS
    if ! bash scripts/ci-fuzz.sh 15 2>&1; then
        echo "lukskit: fuzzing found a failure (see above; inputs in fuzz/artifacts/)"
        status=1
    fi
    echo "    (fuzz: $((SECONDS - t)) s)"
fi
exit "$status"
