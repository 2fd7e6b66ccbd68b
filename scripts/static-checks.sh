#!/usr/bin/env bash
# The checks of the test command that build but run nothing (scripts/test.sh runs this before
# the tests): clippy with the declared minimum Rust version's toolchain, the API docs,
# licences and banned crates, cargo features.
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

# clippy with the declared minimum Rust version's toolchain (workspace rust-version): it
# checks that every target (libraries, binaries, examples, tests; every feature on) builds
# with it and lints them, in one pass. A separate MSRV check beside stable's clippy took another 4-5 minutes of
# CI's 2 cores (242-268 s in cold runs, 2026-11-30). Lints newer than that toolchain's: run
# `cargo clippy --workspace --all-targets -- -D warnings` with your stable one as well.
msrv=$(sed -n 's/^rust-version = "\(.*\)"/\1/p' Cargo.toml)
step "cargo +$msrv clippy (the MSRV toolchain)"
rustup toolchain list | grep -q "^$msrv" || rustup toolchain install "$msrv" --profile minimal
rustup component list --toolchain "$msrv" --installed | grep -q '^clippy' ||
    rustup component add --toolchain "$msrv" clippy
cargo +"$msrv" clippy --workspace --all-targets --all-features --quiet -- -D warnings
# The API docs build without a broken or ambiguous link, every feature on (the facade's
# feature-gated modules too), with the same toolchain (the dependencies' metadata clippy
# made serves). One pass: a second one for the facade alone rebuilt the dependencies whose
# features it sets differently.
step "cargo +$msrv doc"
RUSTDOCFLAGS="-D warnings" cargo +"$msrv" doc --workspace --all-features --no-deps --quiet
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
