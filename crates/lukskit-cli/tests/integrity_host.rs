//! LUKS2 authenticated encryption where there is no device-mapper (this host): header
//! commands work on integrity volumes (luksDump as cryptsetup 2.6.1's, luksAddKey, open
//! --test-passphrase), while `luksFormat --integrity` and `open` fail with a message that
//! says dm-integrity is needed (cryptsetup fails the format too, leaving no header). The
//! kernel path itself is tests/refvm_integrity.rs.

mod common;

use common::*;

fn has_device_mapper() -> bool {
    std::path::Path::new("/sys/module/dm_mod").exists()
}

/// A LUKS2 volume whose segment says `aes-xts-plain64` with `hmac(sha256)` (a 512-bit volume
/// key: 256 bits of XTS key, 256 of HMAC key), made by rewriting a lukskit header.
fn integrity_volume(dir: &std::path::Path) -> (String, String) {
    let img = sparse(dir, "i.img", 32 << 20);
    let kf = write_file(dir, "k", b"first");
    lukskit(
        &[
            "luksFormat",
            "-q",
            "--type",
            "luks2",
            "--pbkdf",
            "pbkdf2",
            "--pbkdf-force-iterations",
            "1000",
            "-s",
            "512",
            "--offset",
            "8192",
            "-d",
            &kf,
            &img,
        ],
        b"",
    )
    .ok("format");
    edit_luks2_header(&img, |hdr| {
        assert_eq!(hdr.segment_integrity(0), None);
        assert!(hdr.set_segment_integrity(0, "hmac(sha256)"));
        assert_eq!(hdr.segment_integrity(0).as_deref(), Some("hmac(sha256)"));
    });
    (img, kf)
}

#[test]
fn header_commands_work_on_integrity_volumes() {
    let dir = tmp();
    let (img, kf) = integrity_volume(dir.path());
    let ours = lukskit(&["luksDump", &img], b"").ok("luksDump");
    assert!(
        ours.stdout.contains("\tintegrity: hmac(sha256)\n"),
        "{}",
        ours.stdout
    );
    if have_cryptsetup("integrity_host") {
        let theirs = cryptsetup(&["luksDump", &img], b"").unwrap();
        assert_eq!(theirs.code, 0, "{}", theirs.stderr);
        assert_eq!(ours.stdout, theirs.stdout);
    }
    let kf2 = write_file(dir.path(), "k2", b"second");
    lukskit(
        &[
            "luksAddKey",
            "-q",
            "--pbkdf",
            "pbkdf2",
            "--pbkdf-force-iterations",
            "1000",
            "-d",
            &kf,
            &img,
            &kf2,
        ],
        b"",
    )
    .ok("luksAddKey");
    lukskit(&["open", "--test-passphrase", "-d", &kf2, &img], b"").ok("test-passphrase");
    if let Some(r) = cryptsetup(&["open", "--test-passphrase", "-d", &kf2, &img], b"") {
        assert_eq!(
            r.code, 0,
            "cryptsetup opens lukskit's new keyslot: {}",
            r.stderr
        );
        // The new keyslot's area cipher is cryptsetup's for integrity segments.
        let dump = cryptsetup(&["luksDump", &img], b"").unwrap().stdout;
        let slot1 = dump.split("  1: luks2").nth(1).unwrap_or_default();
        assert!(slot1.contains("Cipher:     aes-xts-plain64"), "{dump}");
        assert!(slot1.contains("Cipher key: 512 bits"), "{dump}");
    }
}

#[test]
fn without_device_mapper_integrity_fails_clearly() {
    if has_device_mapper() {
        // The kernel path is refvm_integrity's.
        return;
    }
    let dir = tmp();
    let (img, kf) = integrity_volume(dir.path());
    let r = lukskit(&["open", "-d", &kf, &img, "integ_host"], b"");
    assert_ne!(r.code, 0);
    assert!(
        r.stderr.contains("needs the kernel's dm-integrity"),
        "{}",
        r.stderr
    );
    let blank = sparse(dir.path(), "b.img", 32 << 20);
    let r = lukskit(
        &[
            "luksFormat",
            "-q",
            "--type",
            "luks2",
            "--integrity",
            "hmac-sha256",
            "--pbkdf",
            "pbkdf2",
            "--pbkdf-force-iterations",
            "1000",
            "-d",
            &kf,
            &blank,
        ],
        b"",
    );
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(
        r.stderr.contains("needs the kernel's dm-integrity"),
        "{}",
        r.stderr
    );
    assert!(!r.stderr.contains(".."), "{}", r.stderr);
    // As cryptsetup's failed format: no header is left.
    let dump = lukskit(&["luksDump", &blank], b"");
    assert_ne!(dump.code, 0);
    // An unknown mode is refused with cryptsetup's message.
    let r = lukskit(
        &[
            "luksFormat",
            "-q",
            "--integrity",
            "crc99",
            "-d",
            &kf,
            &blank,
        ],
        b"",
    );
    assert_eq!(r.code, 1);
    assert!(
        r.stderr
            .contains("No known integrity specification pattern detected."),
        "{}",
        r.stderr
    );
}
