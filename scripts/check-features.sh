#!/usr/bin/env bash
# Two habits of the crate layout (issue 34), checked by scripts/test.sh in seconds:
# 1. The default build of the library crate `lukskit` pulls no server code: no NBD client,
#    no rustls, no io_uring, no FUSE, no tang client (they are cargo features); with `fuse`
#    alone, no rustls either.
# 2. Every crate whose sources use no `unsafe` says `#![forbid(unsafe_code)]`.
set -euo pipefail
cd "$(dirname "$0")/.."
status=0

tree=$(cargo tree -p lukskit -e normal --prefix none)
bad=$(grep -E '^(rustls|io-uring|fuser|lukskit-nbd|lukskit-tang|lukskit-expose) ' <<<"$tree" | sort -u || true)
if [ -n "$bad" ]; then
    echo "check-features: the default build of crate lukskit pulls server code:" >&2
    echo "$bad" >&2
    status=1
fi

# 1b. `fuse` (lukskit-expose's servers) without `tls` builds no TLS stack.
tree=$(cargo tree -p lukskit -e normal --features fuse --prefix none)
bad=$(grep -E '^(rustls|ring) ' <<<"$tree" | sort -u || true)
if [ -n "$bad" ]; then
    echo "check-features: crate lukskit with feature fuse (no tls) pulls a TLS stack:" >&2
    echo "$bad" >&2
    status=1
fi

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
