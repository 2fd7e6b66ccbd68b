#!/usr/bin/env bash
# Two habits of the crate layout (issue 34), checked by scripts/test.sh in seconds:
# 1. The default build of the library crate `lukskit` pulls no server code: no NBD client,
#    no rustls, no io_uring, no FUSE, no tang client (they are cargo features); with `fuse`
#    alone, no rustls either.
# 2. Every crate whose sources use no `unsafe` says `#![forbid(unsafe_code)]`.
set -euo pipefail
cd "$(dirname "$0")/.."
status=0

# refuse FEATURES PATTERN WHAT: `cargo tree -p lukskit` with FEATURES ("" for the default
# build) must list no package matching PATTERN.
refuse() {
    local tree bad
    tree=$(cargo tree -p lukskit -e normal ${1:+--features "$1"} --prefix none)
    bad=$(grep -E "^($2) " <<<"$tree" | sort -u || true)
    if [ -n "$bad" ]; then
        echo "check-features: crate lukskit $3:" >&2
        echo "$bad" >&2
        status=1
    fi
}
refuse "" 'rustls|io-uring|fuser|lukskit-nbd|lukskit-tang|lukskit-expose' \
    "(default build) pulls server code"
# `fuse` (lukskit-expose's servers) without `tls` builds no TLS stack.
refuse fuse 'rustls|ring' "with feature fuse (no tls) pulls a TLS stack"

for dir in crates/* python; do
    src=$dir/src
    [ -d "$src" ] || continue
    root=$src/lib.rs
    [ -f "$root" ] || root=$src/main.rs
    # Code that uses unsafe: an unsafe block, fn, impl or trait (comments do not count).
    if grep -rEq '^[^/]*\bunsafe *(\{|fn|impl|trait|extern)' "$src"; then
        continue
    fi
    if ! grep -q '^#!\[forbid(unsafe_code)\]' "$root"; then
        echo "check-features: $dir uses no unsafe but $root lacks #![forbid(unsafe_code)]" >&2
        status=1
    fi
done
[ "$status" = 0 ] && echo "check-features: default lukskit build has no server code; crates without unsafe forbid it"
exit "$status"
