#!/usr/bin/env bash
# Build the Debian packages of lukskit with dpkg-deb:
#
#   scripts/build-deb.sh [--binary PATH] [--out DIR]
#
#   DIR/lukskit_<version>_<arch>.deb
#       /usr/sbin/lukskit (the stripped release build: `cargo build --release`, or PATH),
#       the man page, the bash, zsh and fish completions, lukskit's initramfs-tools hook and
#       boot scripts, inactive, under /usr/share/lukskit/initramfs-tools/ (their install.sh
#       activates them), the dracut module in /usr/lib/dracut/modules.d/90lukskit, inactive
#       until a dracut configuration adds it (/usr/share/lukskit/dracut/install.sh writes it),
#       the licence files and the documentation under /usr/share/doc/lukskit.
#   DIR/lukskit-cryptsetup-compat_<version>_all.deb
#       lukskit as /sbin/cryptsetup: diverts Debian's /sbin/cryptsetup (cryptsetup-bin) to
#       /sbin/cryptsetup.real with dpkg-divert and links /sbin/cryptsetup to lukskit; removing
#       the package puts Debian's back. Nothing uses it unless it is installed.
#
# DIR defaults to target/deb. Needs dpkg-deb (dpkg) and, for the Depends line, dpkg-shlibdeps
# (dpkg-dev). dpkg-deb rather than cargo-deb: no extra tool to install, and the package holds
# files (hook, boot scripts, compat package with maintainer scripts) that are not cargo's.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
out=$repo/target/deb
bin=
while [ $# -gt 0 ]; do
    case "$1" in
    --binary) bin=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    -h | --help) sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "build-deb.sh: unknown argument $1" >&2; exit 2 ;;
    esac
done
say() { echo "build-deb: $*" >&2; }
die() { say "error: $*"; exit 1; }
command -v dpkg-deb >/dev/null || die "dpkg-deb not found (apt-get install dpkg)"

version=$(sed -n '/^\[workspace.package\]/,/^\[/ s/^version *= *"\(.*\)"/\1/p' "$repo/Cargo.toml")
[ -n "$version" ] || die "no version in Cargo.toml's [workspace.package]"
arch=$(dpkg --print-architecture)

if [ -z "$bin" ]; then
    # What cargo sets for a test that runs this script (CARGO_MANIFEST_DIR, CARGO_PKG_*, ...)
    # would make this build differ from a shell's (ring's build script watches
    # CARGO_MANIFEST_DIR) and rebuild half of it each time: build as from a shell.
    for v in $(env | sed -n 's/^\(CARGO_MANIFEST_[A-Z_]*\|CARGO_PKG_[A-Z_]*\|CARGO_CRATE_NAME\|CARGO_BIN_[A-Za-z0-9_]*\|CARGO_PRIMARY_PACKAGE\|CARGO_TARGET_TMPDIR\)=.*/\1/p'); do
        unset "$v"
    done
    say "cargo build --release (a few minutes the first time)"
    (cd "$repo" && cargo build --release --locked -q -p lukskit-cli --bin lukskit)
    bin=${CARGO_TARGET_DIR:-$repo/target}/release/lukskit
fi
[ -x "$bin" ] || die "not an executable: $bin"

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
umask 022

# --- lukskit ---------------------------------------------------------------------------------
root=$stage/lukskit
install -D -m 0755 "$bin" "$root/usr/sbin/lukskit"
# The release profile strips; a binary given with --binary may not be.
# (readelf's whole output first: `grep -q` leaving early would fail the pipeline by SIGPIPE.)
sections=$(readelf -S "$root/usr/sbin/lukskit" 2>/dev/null || true)
if grep -q -e '\.debug_' -e '\.symtab' <<<"$sections"; then
    command -v strip >/dev/null || die "$bin has symbols or debug info and strip (binutils) is missing"
    # .debug_gdb_scripts (rustc's pretty-printer hint in builds with debug info) is a loaded
    # section, which --strip-all keeps.
    strip --strip-all --remove-section=.debug_gdb_scripts "$root/usr/sbin/lukskit"
fi
install -d "$root/usr/share/man/man8"
gzip -9n <"$repo/man/lukskit.8" >"$root/usr/share/man/man8/lukskit.8.gz"
install -D -m 0644 "$repo/completions/lukskit.bash" "$root/usr/share/bash-completion/completions/lukskit"
install -D -m 0644 "$repo/completions/_lukskit" "$root/usr/share/zsh/vendor-completions/_lukskit"
install -D -m 0644 "$repo/completions/lukskit.fish" "$root/usr/share/fish/vendor_completions.d/lukskit.fish"
it=$root/usr/share/lukskit/initramfs-tools
for f in install.sh hooks/lukskit scripts/local-top/lukskit scripts/local-block/lukskit; do
    install -D -m 0755 "$repo/scripts/initramfs-tools/$f" "$it/$f"
done
# The dracut module where dracut looks for modules: inert until a configuration adds it
# (its check() returns 255); dracut/install.sh writes that configuration.
for f in module-setup.sh lukskit-dracut.sh parse-lukskit.sh lukskit-emergency.sh; do
    install -D -m 0755 "$repo/scripts/dracut/90lukskit/$f" "$root/usr/lib/dracut/modules.d/90lukskit/$f"
done
install -D -m 0755 "$repo/scripts/dracut/install.sh" "$root/usr/share/lukskit/dracut/install.sh"
doc=$root/usr/share/doc/lukskit
install -D -m 0644 -t "$doc" "$repo/README.md" "$repo/SECURITY.md" "$repo/RELIABILITY.md" \
    "$repo/LICENSE-MIT" "$repo/LICENSE-APACHE"
install -D -m 0644 -t "$doc/docs" "$repo"/docs/*.md
cat >"$doc/copyright" <<EOF
Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: lukskit

Files: *
Copyright: the lukskit developers
License: MIT or Apache-2.0
 lukskit is dual-licensed under the MIT licence or the Apache Licence 2.0, at your option.
 The full texts are in /usr/share/doc/lukskit/LICENSE-MIT and
 /usr/share/doc/lukskit/LICENSE-APACHE (also /usr/share/common-licenses/Apache-2.0).

Files: vendor/fuser/*
Copyright: the fuser developers
License: MIT
 fuser 0.18.0 with one change (vendor/fuser/LUKSKIT-PATCH.md in the source), under its own
 MIT licence.
EOF

depends=
if command -v dpkg-shlibdeps >/dev/null; then
    mkdir -p "$stage/shlibs/debian"
    printf 'Source: lukskit\n\nPackage: lukskit\nArchitecture: any\n' >"$stage/shlibs/debian/control"
    depends=$(cd "$stage/shlibs" && dpkg-shlibdeps -O "$root/usr/sbin/lukskit" 2>/dev/null |
        sed -n 's/^shlibs:Depends=//p')
fi
if [ -z "$depends" ]; then
    say "dpkg-shlibdeps (dpkg-dev) not available: Depends from ldd"
    depends=libc6
    ldd "$root/usr/sbin/lukskit" 2>/dev/null | grep -q libgcc_s && depends="$depends, libgcc-s1"
fi
install -d "$root/DEBIAN"
cat >"$root/DEBIAN/control" <<EOF
Package: lukskit
Version: $version
Architecture: $arch
Maintainer: ${DEBFULLNAME:-The lukskit developers} <${DEBEMAIL:-lukskit@localhost}>
Installed-Size: $(du -sk --exclude=DEBIAN "$root" | cut -f1)
Depends: $depends
Recommends: fuse3
Suggests: bash-completion, initramfs-tools | dracut, lukskit-cryptsetup-compat
Section: admin
Priority: optional
Description: memory-safe reimplementation of cryptsetup and dm-crypt
 lukskit creates, opens and manages LUKS1 and LUKS2 volumes byte-compatibly with
 cryptsetup 2.6.1, with cryptsetup's command lines, output and exit codes. Where the
 kernel has device-mapper, open makes the dm-crypt mapping cryptsetup makes; where it
 has none (containers, WSL, small kernels), lukskit serves the volume itself through
 FUSE and a loop device, or as an NBD export.
 .
 The initramfs-tools hook is installed inactive under /usr/share/lukskit/initramfs-tools;
 its install.sh activates it. The dracut module (90lukskit) is used only when a dracut
 configuration adds it; /usr/share/lukskit/dracut/install.sh writes one.
 lukskit-cryptsetup-compat makes lukskit /sbin/cryptsetup.
EOF
(cd "$root" && find . -path ./DEBIAN -prune -o -type f -printf '%P\0' | sort -z | xargs -0 md5sum) >"$root/DEBIAN/md5sums"

# --- lukskit-cryptsetup-compat -----------------------------------------------------------------
compat=$stage/compat
install -d "$compat/DEBIAN" "$compat/sbin" "$compat/usr/share/doc/lukskit-cryptsetup-compat"
ln -s /usr/sbin/lukskit "$compat/sbin/cryptsetup"
cp "$doc/copyright" "$compat/usr/share/doc/lukskit-cryptsetup-compat/copyright"
cat >"$compat/DEBIAN/control" <<EOF
Package: lukskit-cryptsetup-compat
Version: $version
Architecture: all
Maintainer: ${DEBFULLNAME:-The lukskit developers} <${DEBEMAIL:-lukskit@localhost}>
Installed-Size: 8
Depends: lukskit (= $version)
Section: admin
Priority: optional
Description: lukskit as /sbin/cryptsetup
 Diverts Debian's /sbin/cryptsetup (package cryptsetup-bin) to /sbin/cryptsetup.real with
 dpkg-divert and puts a link to lukskit in its place, so that Debian's cryptdisks_start,
 its initramfs hook and every script that calls cryptsetup run lukskit. Removing this
 package puts Debian's cryptsetup back.
EOF
cat >"$compat/DEBIAN/preinst" <<'EOF'
#!/bin/sh
set -e
case "$1" in
install | upgrade)
    dpkg-divert --package lukskit-cryptsetup-compat --rename \
        --divert /sbin/cryptsetup.real --add /sbin/cryptsetup >/dev/null
    ;;
esac
EOF
cat >"$compat/DEBIAN/postrm" <<'EOF'
#!/bin/sh
set -e
case "$1" in
remove | abort-install | disappear)
    dpkg-divert --package lukskit-cryptsetup-compat --rename --remove /sbin/cryptsetup >/dev/null
    ;;
esac
EOF
chmod 0755 "$compat/DEBIAN/preinst" "$compat/DEBIAN/postrm"

mkdir -p "$out"
dpkg-deb --root-owner-group -Zxz --build "$root" "$out/lukskit_${version}_${arch}.deb" >&2
dpkg-deb --root-owner-group -Zxz --build "$compat" "$out/lukskit-cryptsetup-compat_${version}_all.deb" >&2
echo "$out/lukskit_${version}_${arch}.deb"
echo "$out/lukskit-cryptsetup-compat_${version}_all.deb"
