#!/usr/bin/env bash
# The checks of the test command that build but run nothing (scripts/test.sh runs this before
# the tests): clippy, the API docs, the declared minimum Rust version, licences and banned
# crates, cargo features.
# Exit status: 0 when all passed; stops at the first failure.
set -euo pipefail
cd "$(dirname "$0")/.."
# Each step's line says how long the one before it took (where the time of a run goes).
last=$SECONDS
took() { [ -z "${prev:-}" ] || echo "    ($prev: $((SECONDS - last)) s)"; }
step() {
    took
    prev=$1 last=$SECONDS
    echo "==> $*"
}
trap took EXIT

step "cargo clippy"
cargo clippy --workspace --all-targets --quiet -- -D warnings
# The API docs build without a broken or ambiguous link, every feature on (the facade's
# feature-gated modules too). One pass: a second one for the facade alone rebuilt the
# dependencies whose features it sets differently.
step "cargo doc"
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --all-features --no-deps --quiet
# The declared minimum Rust version (workspace rust-version) still builds what users build:
# the libraries, the binaries and the examples (not the ~80 test crates: clippy checks them
# with the current toolchain).
msrv=$(sed -n 's/^rust-version = "\(.*\)"/\1/p' Cargo.toml)
step "MSRV: cargo +$msrv check --workspace --lib --bins --examples"
rustup toolchain list | grep -q "^$msrv" || rustup toolchain install "$msrv" --profile minimal
cargo +"$msrv" check --workspace --lib --bins --examples --quiet
# Licences and banned crates of the dependency tree (deny.toml), offline. cargo-deny is built
# once per machine, unoptimized: 117 s of CPU where the release build took about 5 minutes of
# a CI run; the check itself takes ~1.4 s instead of ~0.5 s.
step "cargo deny --offline check licenses bans"
command -v cargo-deny >/dev/null 2>&1 || cargo install --locked --debug --quiet cargo-deny@0.20.2
# Every package of Cargo.lock, for every platform (a build fetches only this one's; the check
# reads the manifests of all, such as Windows-only anstyle-wincon, and fails offline without).
cargo fetch --locked --quiet
cargo deny --offline --log-level error check licenses bans
# The default library build pulls no server code; crates without unsafe forbid it.
step "scripts/check-features.sh"
bash scripts/check-features.sh
