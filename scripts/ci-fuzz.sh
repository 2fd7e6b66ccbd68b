#!/usr/bin/env bash
# The short CI fuzz run: every cargo-fuzz target for 15 s (scripts/fuzz.sh 15).
#
#   scripts/ci-fuzz.sh [SECONDS_PER_TARGET]
#
# On a fresh machine with only stable Rust and rustup it installs what it needs first: a
# minimal nightly toolchain and cargo-fuzz. Without rustup it fails, unless LUKSKIT_ALLOW_SKIP=1
# (for people whose machine lacks it; never set in CI) lets it print a SKIP line and exit 0.
# Exits non-zero when any target finds a crash, an out-of-memory or a timeout (the input is
# left in fuzz/artifacts/<target>/) or when the tools cannot be installed.
set -euo pipefail

here="$(cd "$(dirname "$0")/.." && pwd)"
secs="${1:-15}"
export PATH="${CARGO_HOME:-$HOME/.cargo}/bin:$PATH"

if ! command -v rustup >/dev/null 2>&1; then
    why="rustup is not installed (cargo-fuzz needs a nightly toolchain: https://rustup.rs)"
    if [ "${LUKSKIT_ALLOW_SKIP:-}" = 1 ]; then
        echo "SKIP: fuzz: $why (LUKSKIT_ALLOW_SKIP=1)" >&2
        exit 0
    fi
    echo "ci-fuzz: cannot run: $why. Install it, or set LUKSKIT_ALLOW_SKIP=1 to skip (a skipped run is not a pass)" >&2
    exit 1
fi
if ! rustup run nightly rustc --version >/dev/null 2>&1; then
    echo "ci-fuzz: installing the nightly toolchain" >&2
    rustup toolchain install nightly --profile minimal >&2
fi
if ! cargo fuzz --version >/dev/null 2>&1; then
    echo "ci-fuzz: installing cargo-fuzz" >&2
    # Unoptimized: it only drives cargo, and it is built on every fresh CI machine.
    cargo install cargo-fuzz --locked --debug >&2
fi

exec "$here/scripts/fuzz.sh" "$secs"
