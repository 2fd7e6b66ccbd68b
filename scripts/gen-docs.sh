#!/bin/sh
# Regenerate the man page (man/lukskit.8) and the shell completions (completions/) from the
# command definition in crates/lukskit-cli (args.rs + definition.rs). Run after changing an
# option or an action; tests/docs.rs fails while the committed files are out of date.
set -eu
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
cargo build -q -p lukskit-cli
./target/debug/lukskit __generate-docs "$repo"
echo "wrote man/lukskit.8, completions/lukskit.bash, completions/_lukskit, completions/lukskit.fish"
