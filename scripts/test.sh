#!/usr/bin/env bash
# Run every lukskit test: installs what the tests need on a fresh Debian machine
# (cryptsetup-bin as the reference implementation, xz-utils for cryptsetup's test images),
# then formatting, lint and the whole cargo test suite.
set -euo pipefail
cd "$(dirname "$0")/.."

need_pkgs=()
command -v cryptsetup >/dev/null 2>&1 || [ -x /usr/sbin/cryptsetup ] || need_pkgs+=(cryptsetup-bin)
command -v xz >/dev/null 2>&1 || need_pkgs+=(xz-utils)
if [ ${#need_pkgs[@]} -gt 0 ]; then
    if [ "$(id -u)" = 0 ]; then
        echo "==> installing ${need_pkgs[*]}"
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_pkgs[@]}" >/dev/null
    else
        echo "WARNING: ${need_pkgs[*]} missing and not root: interop tests will be skipped" >&2
    fi
fi
if ! command -v cargo >/dev/null 2>&1; then
    echo "cargo not found: install Rust (https://rustup.rs) first" >&2
    exit 1
fi

echo "==> cargo fmt --check"
cargo fmt --all -- --check
echo "==> cargo clippy"
cargo clippy --workspace --all-targets --quiet -- -D warnings
echo "==> cargo test"
cargo test --workspace 2>&1 | tee /tmp/lukskit-test.log
