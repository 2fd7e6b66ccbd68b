//! Volumes lukskit formats pass real cryptsetup, and keyslot changes made by either tool
//! are seen by the other. Every check compares with what real cryptsetup prints.

mod common;
use common::*;

struct Case<'a> {
    kind: &'a str,
    cipher: &'a str,
    bits: &'a str,
    extra: &'a [&'a str],
}

fn format_and_check(dir: &std::path::Path, i: usize, c: &Case) {
    let img = sparse(dir, &format!("v{i}.img"), 24 << 20);
    let kf = write_file(dir, "pw", b"correct horse");
    let mut args = vec![
        "luksFormat",
        "-q",
        "--type",
        c.kind,
        "-c",
        c.cipher,
        "-s",
        c.bits,
        "-d",
        &kf,
    ];
    args.extend_from_slice(&FAST);
    args.extend_from_slice(c.extra);
    args.push(&img);
    let detached = c
        .extra
        .iter()
        .position(|a| *a == "--header")
        .map(|p| c.extra[p + 1]);
    lukskit(&args, b"").ok(&format!("lukskit luksFormat {args:?}"));
    let hdr_args: Vec<&str> = match detached {
        Some(h) => vec!["--header", h],
        None => vec![],
    };
    fn with<'a>(base: &[&'a str], hdr_args: &[&'a str]) -> Vec<&'a str> {
        let mut v = base.to_vec();
        v.extend_from_slice(hdr_args);
        v
    }
    let theirs = cryptsetup(&with(&["luksDump", &img], &hdr_args), b"")
        .unwrap()
        .ok("cryptsetup luksDump");
    let ours = lukskit(&with(&["luksDump", &img], &hdr_args), b"").ok("lukskit luksDump");
    assert_eq!(ours.stdout, theirs.stdout, "luksDump differs for {args:?}");
    cryptsetup(
        &with(&["open", "--test-passphrase", "-d", &kf, &img], &hdr_args),
        b"",
    )
    .unwrap()
    .ok(&format!("cryptsetup test-passphrase {args:?}"));
    let vk_ours = volume_key_with("lukskit", &img, &kf, &hdr_args);
    let vk_theirs = volume_key_with("cryptsetup", &img, &kf, &hdr_args);
    assert_eq!(vk_ours, vk_theirs, "volume key differs for {args:?}");
    assert_eq!(vk_ours.len(), c.bits.parse::<usize>().unwrap() / 4);
}

#[test]
fn lukskit_formats_cryptsetup_accepts() {
    if !have_cryptsetup("lukskit_formats_cryptsetup_accepts") {
        return;
    }
    let dir = tmp();
    let hdr = dir.path().join("detached.hdr");
    let hdr1 = dir.path().join("detached1.hdr");
    let hdr = hdr.to_str().unwrap();
    let hdr1 = hdr1.to_str().unwrap();
    let cases = [
        Case {
            kind: "luks1",
            cipher: "aes-xts-plain64",
            bits: "512",
            extra: &[],
        },
        Case {
            kind: "luks1",
            cipher: "aes-xts-plain64",
            bits: "256",
            extra: &["-h", "sha1"],
        },
        Case {
            kind: "luks1",
            cipher: "aes-cbc-essiv:sha256",
            bits: "128",
            extra: &[],
        },
        Case {
            kind: "luks1",
            cipher: "aes-cbc-essiv:sha256",
            bits: "256",
            extra: &["-h", "sha512"],
        },
        Case {
            kind: "luks1",
            cipher: "aes-cbc-plain64",
            bits: "256",
            extra: &["--header", hdr1],
        },
        Case {
            kind: "luks2",
            cipher: "aes-xts-plain64",
            bits: "512",
            extra: &[],
        },
        Case {
            kind: "luks2",
            cipher: "aes-xts-plain64",
            bits: "256",
            extra: &["--sector-size", "512"],
        },
        Case {
            kind: "luks2",
            cipher: "aes-cbc-essiv:sha256",
            bits: "128",
            extra: &["--sector-size", "4096"],
        },
        Case {
            kind: "luks2",
            cipher: "aes-cbc-essiv:sha256",
            bits: "256",
            extra: &["--luks2-metadata-size", "64k"],
        },
        Case {
            kind: "luks2",
            cipher: "aes-xts-plain64",
            bits: "512",
            extra: &["--luks2-metadata-size", "4m", "--luks2-keyslots-size", "1m"],
        },
        Case {
            kind: "luks2",
            cipher: "aes-xts-plain64",
            bits: "512",
            extra: &[
                "--label",
                "mylabel",
                "--subsystem",
                "sub",
                "--uuid",
                "12345678-1234-1234-1234-123456789abc",
            ],
        },
        Case {
            kind: "luks2",
            cipher: "aes-xts-plain64",
            bits: "512",
            extra: &["--offset", "8192"],
        },
        Case {
            kind: "luks2",
            cipher: "aes-xts-plain64",
            bits: "512",
            extra: &["--header", hdr],
        },
        Case {
            kind: "luks2",
            cipher: "aes-xts-plain64",
            bits: "512",
            extra: &["-h", "sha512", "--key-slot", "5"],
        },
    ];
    for (i, c) in cases.iter().enumerate() {
        format_and_check(dir.path(), i, c);
    }
}

#[test]
fn argon2id_keyslot_opens_in_cryptsetup() {
    if !have_cryptsetup("argon2id_keyslot") {
        return;
    }
    let dir = tmp();
    let img = sparse(dir.path(), "a.img", 20 << 20);
    let kf = write_file(dir.path(), "pw", b"argon secret");
    lukskit(
        &[
            "luksFormat",
            "-q",
            "--pbkdf",
            "argon2id",
            "--pbkdf-force-iterations",
            "4",
            "--pbkdf-memory",
            "65536",
            "--pbkdf-parallel",
            "2",
            "-d",
            &kf,
            &img,
        ],
        b"",
    )
    .ok("format argon2id");
    let d = cryptsetup(&["luksDump", &img], b"").unwrap().ok("dump");
    assert!(d.stdout.contains("PBKDF:      argon2id") && d.stdout.contains("Memory:     65536"));
    cryptsetup(&["open", "--test-passphrase", "-d", &kf, &img], b"")
        .unwrap()
        .ok("cryptsetup opens argon2id");
    assert_eq!(
        volume_key_with("lukskit", &img, &kf, &[]),
        volume_key_with("cryptsetup", &img, &kf, &[])
    );
}

/// Keyslots cryptsetup made with each KDF parameter set of the unlock matrix (Argon2i and
/// Argon2id with 1, 2 and 4 lanes — cryptsetup caps lanes at the online CPUs — and memory
/// that is and is not a multiple of 4 × lanes; PBKDF2 with SHA-1, SHA-256 and SHA-512 for
/// 256- and 512-bit keys, i.e. 1 to 4 PBKDF2 blocks): lukskit derives the same keyslot key
/// (it opens the keyslot and recovers the same volume key as cryptsetup).
#[test]
fn kdf_matrix_unlocks_cryptsetup_keyslots() {
    if !have_cryptsetup("kdf_matrix_unlocks_cryptsetup_keyslots") {
        return;
    }
    let dir = tmp();
    let kf = write_file(dir.path(), "pw", b"kdf matrix passphrase");
    let mut sets: Vec<Vec<String>> = Vec::new();
    for variant in ["argon2i", "argon2id"] {
        for (m, p) in [("32", "1"), ("1000", "2"), ("4099", "4")] {
            sets.push(
                [
                    "--pbkdf",
                    variant,
                    "--pbkdf-force-iterations",
                    "4",
                    "--pbkdf-memory",
                    m,
                    "--pbkdf-parallel",
                    p,
                ]
                .map(String::from)
                .to_vec(),
            );
        }
    }
    for hash in ["sha1", "sha256", "sha512"] {
        for bits in ["256", "512"] {
            sets.push(
                [
                    "--pbkdf",
                    "pbkdf2",
                    "--hash",
                    hash,
                    "--pbkdf-force-iterations",
                    "1000",
                    "-s",
                    bits,
                ]
                .map(String::from)
                .to_vec(),
            );
        }
    }
    for (i, set) in sets.iter().enumerate() {
        let img = sparse(dir.path(), &format!("m{i}.img"), 20 << 20);
        let mut args = vec!["luksFormat", "-q", "--type", "luks2", "-d", &kf];
        args.extend(set.iter().map(String::as_str));
        args.push(&img);
        cryptsetup(&args, b"")
            .unwrap()
            .ok(&format!("cryptsetup luksFormat {set:?}"));
        assert_eq!(
            volume_key_with("lukskit", &img, &kf, &[]),
            volume_key_with("cryptsetup", &img, &kf, &[]),
            "{set:?}"
        );
    }
}

/// Keyslot operations across the two tools, for LUKS1 and LUKS2.
#[test]
fn keyslot_changes_cross_both_ways() {
    if !have_cryptsetup("keyslot_changes_cross_both_ways") {
        return;
    }
    for kind in ["luks1", "luks2"] {
        let dir = tmp();
        let img = sparse(dir.path(), "x.img", 20 << 20);
        let k0 = write_file(dir.path(), "k0", b"first");
        let k1 = write_file(dir.path(), "k1", b"second");
        let k2 = write_file(dir.path(), "k2", b"third");
        let k3 = write_file(dir.path(), "k3", b"fourth");
        let mut fmt = vec!["luksFormat", "-q", "--type", kind, "-d", &k0];
        fmt.extend_from_slice(&FAST);
        fmt.push(&img);
        cryptsetup(&fmt, b"").unwrap().ok("cryptsetup format");
        // lukskit adds a key, cryptsetup uses it.
        let mut add = vec!["luksAddKey", "-q", "-d", &k0, &img, &k1];
        add.extend_from_slice(&FAST);
        lukskit(&add, b"").ok("lukskit addkey");
        cryptsetup(&["open", "--test-passphrase", "-d", &k1, &img], b"")
            .unwrap()
            .ok("cryptsetup opens lukskit key");
        // cryptsetup adds a key, lukskit uses it.
        let mut add2 = vec!["luksAddKey", "-q", "-d", &k1, &img, &k2];
        add2.extend_from_slice(&FAST);
        cryptsetup(&add2, b"").unwrap().ok("cryptsetup addkey");
        let r = lukskit(&["open", "--test-passphrase", "-v", "-d", &k2, &img], b"")
            .ok("lukskit opens cryptsetup key");
        assert!(r.stdout.contains("Key slot 2 unlocked."), "{}", r.stdout);
        // lukskit changes key 2 -> 3; cryptsetup rejects the old, accepts the new.
        let mut ch = vec!["luksChangeKey", "-q", "-d", &k2, &img, &k3];
        ch.extend_from_slice(&FAST);
        lukskit(&ch, b"").ok("lukskit changekey");
        assert_eq!(
            cryptsetup(&["open", "--test-passphrase", "-d", &k2, &img], b"")
                .unwrap()
                .code,
            2
        );
        cryptsetup(&["open", "--test-passphrase", "-d", &k3, &img], b"")
            .unwrap()
            .ok("new key");
        // lukskit kills slot 0; cryptsetup agrees it is gone.
        lukskit(&["luksKillSlot", "-q", &img, "0"], b"").ok("killslot");
        assert_eq!(
            cryptsetup(&["open", "--test-passphrase", "-d", &k0, &img], b"")
                .unwrap()
                .code,
            2
        );
        // cryptsetup removes key 1; lukskit agrees.
        cryptsetup(&["luksRemoveKey", "-q", &img, &k1], b"")
            .unwrap()
            .ok("cryptsetup removekey");
        assert_eq!(
            lukskit(&["open", "--test-passphrase", "-d", &k1, &img], b"").code,
            2
        );
        lukskit(&["open", "--test-passphrase", "-d", &k3, &img], b"").ok("k3 still opens");
        // Both tools print the same dump after all this.
        let a = lukskit(&["luksDump", &img], b"").ok("dump");
        let b = cryptsetup(&["luksDump", &img], b"").unwrap().ok("dump");
        assert_eq!(a.stdout, b.stdout, "{kind}");
        // lukskit removes a key given on stdin (-d -).
        lukskit(&["luksRemoveKey", "-q", "-d", "-", &img], b"fourth").ok("removekey stdin");
        let d = cryptsetup(&["luksDump", &img], b"").unwrap().ok("dump");
        assert!(
            !d.stdout.contains("ENABLED") && !d.stdout.contains(": luks2\n"),
            "{}",
            d.stdout
        );
    }
}

#[test]
fn passphrase_from_stdin_lines_and_verbose_status() {
    if !have_cryptsetup("stdin") {
        return;
    }
    let dir = tmp();
    let img = sparse(dir.path(), "s.img", 20 << 20);
    let mut fmt = vec!["luksFormat", "-q"];
    fmt.extend_from_slice(&FAST);
    fmt.push(&img);
    // Not a terminal: one line is the passphrase, the newline is not part of it.
    lukskit(&fmt, b"line-pass\nignored\n").ok("format from stdin");
    cryptsetup(&["open", "--test-passphrase", &img], b"line-pass\n")
        .unwrap()
        .ok("cryptsetup agrees");
    // luksAddKey reads the existing then the new passphrase, one line each.
    let mut add = vec!["luksAddKey", "-q", &img];
    add.extend_from_slice(&FAST);
    lukskit(&add, b"line-pass\nsecond-pass\n").ok("addkey two lines");
    cryptsetup(&["open", "--test-passphrase", &img], b"second-pass\n")
        .unwrap()
        .ok("second");
    let r = lukskit(&["-v", "open", "--test-passphrase", &img], b"wrong\n");
    assert_eq!(r.code, 2);
    // cryptsetup prints the status line on standard output.
    assert!(r
        .stdout
        .contains("Command failed with code -2 (no permission or bad passphrase)."));
    let r = lukskit(&["-v", "isLuks", &img], b"").ok("isLuks");
    assert!(r.stdout.contains("Command successful."));
    assert_eq!(lukskit(&["isLuks", "--type", "luks1", &img], b"").code, 1);
    let nl = sparse(dir.path(), "plain.img", 1 << 20);
    assert_eq!(lukskit(&["isLuks", &nl], b"").code, 1);
    assert_eq!(lukskit(&["luksDump", "/nonexistent/x"], b"").code, 4);
}

#[test]
fn uuid_get_and_set() {
    if !have_cryptsetup("uuid") {
        return;
    }
    for kind in ["luks1", "luks2"] {
        let dir = tmp();
        let img = sparse(dir.path(), "u.img", 20 << 20);
        let kf = write_file(dir.path(), "k", b"k");
        let mut fmt = vec!["luksFormat", "-q", "--type", kind, "-d", &kf];
        fmt.extend_from_slice(&FAST);
        fmt.push(&img);
        lukskit(&fmt, b"").ok("format");
        let a = lukskit(&["luksUUID", &img], b"").ok("uuid");
        let b = cryptsetup(&["luksUUID", &img], b"").unwrap().ok("uuid");
        assert_eq!(a.stdout, b.stdout);
        let u = "0f0e0d0c-0b0a-4908-8706-050403020100";
        lukskit(&["luksUUID", "-q", "--uuid", u, &img], b"").ok("set uuid");
        assert_eq!(
            cryptsetup(&["luksUUID", &img], b"")
                .unwrap()
                .ok("uuid")
                .stdout
                .trim(),
            u
        );
        cryptsetup(&["open", "--test-passphrase", "-d", &kf, &img], b"")
            .unwrap()
            .ok("still opens");
        assert_eq!(
            lukskit(&["luksUUID", "-q", "--uuid", "not-a-uuid", &img], b"").code,
            1
        );
    }
}

#[test]
fn header_backup_is_byte_identical_and_restores() {
    if !have_cryptsetup("header_backup") {
        return;
    }
    for kind in ["luks1", "luks2"] {
        let dir = tmp();
        let img = sparse(dir.path(), "b.img", 20 << 20);
        let kf = write_file(dir.path(), "k", b"k");
        let mut fmt = vec!["luksFormat", "-q", "--type", kind, "-d", &kf];
        fmt.extend_from_slice(&FAST);
        fmt.push(&img);
        cryptsetup(&fmt, b"").unwrap().ok("format");
        let ours = dir.path().join("ours.bak");
        let theirs = dir.path().join("theirs.bak");
        lukskit(
            &[
                "luksHeaderBackup",
                &img,
                "--header-backup-file",
                ours.to_str().unwrap(),
            ],
            b"",
        )
        .ok("backup");
        cryptsetup(
            &[
                "luksHeaderBackup",
                &img,
                "--header-backup-file",
                theirs.to_str().unwrap(),
            ],
            b"",
        )
        .unwrap()
        .ok("backup");
        assert_eq!(
            std::fs::read(&ours).unwrap(),
            std::fs::read(&theirs).unwrap(),
            "{kind} backup bytes"
        );
        // A second backup to the same file is refused (file exists).
        assert_ne!(
            lukskit(
                &[
                    "luksHeaderBackup",
                    &img,
                    "--header-backup-file",
                    ours.to_str().unwrap()
                ],
                b""
            )
            .code,
            0
        );
        // Destroy the header, restore it with lukskit, cryptsetup opens again.
        let f = std::fs::OpenOptions::new().write(true).open(&img).unwrap();
        // Both LUKS2 copies (2 x 16 KiB), or the LUKS1 phdr (keyslot material starts at 4 KiB).
        let wipe = if kind == "luks2" { 32768 } else { 1024 };
        std::os::unix::fs::FileExt::write_all_at(&f, &vec![0u8; wipe], 0).unwrap();
        assert_ne!(
            cryptsetup(&["open", "--test-passphrase", "-d", &kf, &img], b"")
                .unwrap()
                .code,
            0
        );
        lukskit(
            &[
                "luksHeaderRestore",
                "-q",
                &img,
                "--header-backup-file",
                ours.to_str().unwrap(),
            ],
            b"",
        )
        .ok("restore");
        cryptsetup(&["open", "--test-passphrase", "-d", &kf, &img], b"")
            .unwrap()
            .ok("opens after restore");
    }
}

#[test]
fn damaged_luks2_copy_still_opens() {
    if !have_cryptsetup("damaged copy") {
        return;
    }
    let dir = tmp();
    let img = sparse(dir.path(), "d.img", 20 << 20);
    let kf = write_file(dir.path(), "k", b"k");
    let mut fmt = vec!["luksFormat", "-q", "-d", &kf];
    fmt.extend_from_slice(&FAST);
    fmt.push(&img);
    lukskit(&fmt, b"").ok("format");
    let pristine = std::fs::read(&img).unwrap();
    // Flip a byte in the primary JSON, then in the secondary binary header.
    for off in [4096 + 20, 16384 + 200] {
        let mut bytes = pristine.clone();
        bytes[off] ^= 0x55;
        std::fs::write(&img, &bytes).unwrap();
        lukskit(&["open", "--test-passphrase", "-d", &kf, &img], b"")
            .ok(&format!("opens with byte {off} flipped"));
        cryptsetup(&["open", "--test-passphrase", "-d", &kf, &img], b"")
            .unwrap()
            .ok("cryptsetup too");
    }
}

#[test]
fn works_as_cryptsetup_through_a_symlink() {
    let dir = tmp();
    let link = dir.path().join("cryptsetup");
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_lukskit"), &link).unwrap();
    let img = sparse(dir.path(), "v.img", 20 << 20);
    let kf = write_file(dir.path(), "k", b"k");
    let run = |args: &[&str]| {
        std::process::Command::new(&link)
            .args(args)
            .output()
            .unwrap()
    };
    let mut fmt = vec!["luksFormat", "-q", "-d", &kf];
    fmt.extend_from_slice(&FAST);
    fmt.push(&img);
    assert!(run(&fmt).status.success());
    let v = run(&["--version"]);
    assert!(String::from_utf8_lossy(&v.stdout).starts_with("cryptsetup 2.6.1"));
    let via_link = run(&["luksDump", &img]);
    let direct = lukskit(&["luksDump", &img], b"").ok("dump");
    assert_eq!(String::from_utf8_lossy(&via_link.stdout), direct.stdout);
    assert_eq!(
        run(&["open", "--test-passphrase", "-d", &kf, &img])
            .status
            .code(),
        Some(0)
    );
}
