//! The Debian packages of `scripts/build-deb.sh`, installed and used as a user would: the test
//! runs `scripts/test-deb.sh`, which builds both packages, makes a
//! minimal Debian system with mmdebstrap (cached under `target/deb-test/`), installs them there
//! with `apt install ./….deb` and checks `lukskit --version`, the man page (`man -w`), the
//! completion file, a stripped binary, the inactive initramfs-tools hook and dracut module, the
//! licence files, a
//! luksFormat + luksDump of an image file, and lukskit as `/sbin/cryptsetup` through the compat
//! package's diversion (and Debian's cryptsetup back after `apt remove`).
//!
//! The package holds the `lukskit` binary the other tests ran (this test build's, which
//! build-deb.sh strips), not a release build of its own: what this test checks is the package,
//! and a release build of the whole tree took 4-5 minutes of CI (2026-11-30).

use lukskit_testkit::skip_or_fail;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Instant;

/// `scripts/test-deb.sh`'s exit status when root, mmdebstrap or the mirror cannot be had.
const EXIT_UNAVAILABLE: i32 = 77;

#[test]
fn deb_installs_and_works_in_a_debian_chroot() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let t0 = Instant::now();
    let out = Command::new("bash")
        .arg(repo.join("scripts/test-deb.sh"))
        .args(["--binary", env!("CARGO_BIN_EXE_lukskit")])
        .stdin(Stdio::null())
        .output()
        .expect("run scripts/test-deb.sh");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    eprintln!(
        "deb: scripts/test-deb.sh took {:.0} s\n{text}",
        t0.elapsed().as_secs_f64()
    );
    if out.status.code() == Some(EXIT_UNAVAILABLE) {
        skip_or_fail("Debian package in a chroot", text.trim());
        return;
    }
    assert!(
        out.status.success(),
        "scripts/test-deb.sh failed ({}):\n{text}",
        out.status
    );
    for s in [
        "lukskit --version: lukskit ",
        "man -w lukskit: /usr/share/man/man8/lukskit.8.gz",
        ", stripped",
        "luksFormat, isLuks, luksDump, open --test-passphrase: ok",
        "initramfs-tools hook and dracut module: inactive until activated: ok",
        "(lukskit ",
        "ok: the packages install, work and remove cleanly",
    ] {
        assert!(
            text.contains(s),
            "scripts/test-deb.sh did not say {s:?}:\n{text}"
        );
    }
}
