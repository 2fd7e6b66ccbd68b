//! Less common options of the key commands, each checked with real cryptsetup: key file
//! offsets and sizes, --new-keyfile, --volume-key-file, --unbound, detached headers,
//! luksConvertKey, erase, requirements, and concurrent updates serialised by flock.

mod common;
use common::*;

fn with_fast(mut v: Vec<&str>) -> Vec<&str> {
    v.extend_from_slice(&FAST);
    v
}

fn cs_opens(img: &str, kf: &str, extra: &[&str]) -> bool {
    let mut a = vec!["open", "--test-passphrase", "-d", kf, img];
    a.extend_from_slice(extra);
    cryptsetup(&a, b"").unwrap().code == 0
}

#[test]
fn keyfile_offset_size_and_new_keyfile() {
    if !have_cryptsetup("keyfile options") {
        return;
    }
    let dir = tmp();
    let img = sparse(dir.path(), "v.img", 20 << 20);
    let blob = write_file(dir.path(), "blob", b"XXXXsecret-partYYYY\nmore");
    lukskit(
        &with_fast(vec![
            "luksFormat",
            "-q",
            "--keyfile-offset",
            "4",
            "-l",
            "11",
            "-d",
            &blob,
            &img,
        ]),
        b"",
    )
    .ok("format with offset/size");
    let exact = write_file(dir.path(), "exact", b"secret-part");
    assert!(cs_opens(&img, &exact, &[]));
    // --new-keyfile with its own offset/size; the key file keeps its newline as data.
    lukskit(
        &with_fast(vec![
            "luksAddKey",
            "-q",
            "-d",
            &exact,
            "--new-keyfile",
            &blob,
            "--new-keyfile-offset",
            "15",
            &img,
        ]),
        b"",
    )
    .ok("add with new keyfile offset");
    let tail = write_file(dir.path(), "tail", b"YYYY\nmore");
    assert!(cs_opens(&img, &tail, &[]));
    // A key file shorter than --keyfile-size: cryptsetup's message, exit 1.
    let r = lukskit(
        &["open", "--test-passphrase", "-d", &exact, "-l", "100", &img],
        b"",
    );
    assert_eq!(r.code, 1);
    assert!(
        r.stderr.contains("Cannot read requested amount of data."),
        "{}",
        r.stderr
    );
}

#[test]
fn volume_key_file_and_unbound_keys() {
    if !have_cryptsetup("volume key file") {
        return;
    }
    let dir = tmp();
    let img = sparse(dir.path(), "v.img", 20 << 20);
    let vk: Vec<u8> = (0u8..64).collect();
    let vkf = write_file(dir.path(), "vk", &vk);
    let kf = write_file(dir.path(), "k", b"pass");
    lukskit(
        &with_fast(vec![
            "luksFormat",
            "-q",
            "--volume-key-file",
            &vkf,
            "-d",
            &kf,
            &img,
        ]),
        b"",
    )
    .ok("format with vk");
    assert_eq!(
        volume_key_with("cryptsetup", &img, &kf, &[]),
        hex::encode(&vk)
    );
    // Add a key knowing only the volume key.
    let k2 = write_file(dir.path(), "k2", b"pass2");
    lukskit(
        &with_fast(vec![
            "luksAddKey",
            "-q",
            "--volume-key-file",
            &vkf,
            &img,
            &k2,
        ]),
        b"",
    )
    .ok("add by vk");
    assert!(cs_opens(&img, &k2, &[]));
    // A wrong volume key is refused with exit 2.
    let bad = write_file(dir.path(), "badvk", &[7u8; 64]);
    assert_eq!(
        lukskit(
            &with_fast(vec![
                "luksAddKey",
                "-q",
                "--volume-key-file",
                &bad,
                &img,
                &k2
            ]),
            b""
        )
        .code,
        2
    );
    // An unbound key in slot 5: cryptsetup sees it as unbound and opens it with --unbound.
    let k3 = write_file(dir.path(), "k3", b"unbound");
    lukskit(
        &with_fast(vec![
            "luksAddKey",
            "-q",
            "--unbound",
            "-s",
            "256",
            "--new-key-slot",
            "5",
            &img,
            &k3,
        ]),
        b"",
    )
    .ok("unbound add");
    let d = cryptsetup(&["luksDump", &img], b"").unwrap().ok("dump");
    assert!(d.stdout.contains("  5: luks2 (unbound)"), "{}", d.stdout);
    assert!(cs_opens(&img, &k3, &["-S", "5", "--unbound"]));
    assert!(!cs_opens(&img, &k3, &[]));
    let ours = lukskit(&["luksDump", &img], b"").ok("dump");
    assert_eq!(ours.stdout, d.stdout);
}

#[test]
fn detached_header_operations() {
    if !have_cryptsetup("detached header") {
        return;
    }
    for kind in ["luks1", "luks2"] {
        let dir = tmp();
        let data = sparse(dir.path(), "data.img", 8 << 20);
        let hdr = dir.path().join("hdr").to_str().unwrap().to_string();
        let kf = write_file(dir.path(), "k", b"k");
        let k2 = write_file(dir.path(), "k2", b"k2");
        lukskit(
            &with_fast(vec![
                "luksFormat",
                "-q",
                "--type",
                kind,
                "--header",
                &hdr,
                "-d",
                &kf,
                &data,
            ]),
            b"",
        )
        .ok("format detached");
        // The data device holds no header at all.
        assert_eq!(cryptsetup(&["isLuks", &data], b"").unwrap().code, 1);
        lukskit(
            &with_fast(vec![
                "luksAddKey",
                "-q",
                "--header",
                &hdr,
                "-d",
                &kf,
                &data,
                &k2,
            ]),
            b"",
        )
        .ok("add");
        assert!(cs_opens(&data, &k2, &["--header", &hdr]));
        assert!(cs_opens(&hdr, &k2, &[]));
    }
}

#[test]
fn convert_key_matches_cryptsetup() {
    if !have_cryptsetup("luksConvertKey") {
        return;
    }
    let dir = tmp();
    let img = sparse(dir.path(), "v.img", 20 << 20);
    let kf = write_file(dir.path(), "k", b"k");
    lukskit(&with_fast(vec!["luksFormat", "-q", "-d", &kf, &img]), b"").ok("format");
    lukskit(
        &[
            "luksConvertKey",
            "-q",
            "-d",
            &kf,
            "--pbkdf",
            "argon2i",
            "--pbkdf-force-iterations",
            "4",
            "--pbkdf-memory",
            "32768",
            &img,
        ],
        b"",
    )
    .ok("convert key");
    let d = cryptsetup(&["luksDump", &img], b"").unwrap().ok("dump");
    assert!(
        d.stdout.contains("PBKDF:      argon2i") && d.stdout.contains("Memory:     32768"),
        "{}",
        d.stdout
    );
    assert!(cs_opens(&img, &kf, &[]));
    let l1 = sparse(dir.path(), "l1.img", 20 << 20);
    lukskit(
        &with_fast(vec!["luksFormat", "-q", "--type", "luks1", "-d", &kf, &l1]),
        b"",
    )
    .ok("format l1");
    let ours = lukskit(
        &with_fast(vec!["luksConvertKey", "-q", "-d", &kf, &l1]),
        b"",
    );
    let theirs = cryptsetup(
        &with_fast(vec!["luksConvertKey", "-q", "-d", &kf, &l1]),
        b"",
    )
    .unwrap();
    assert_eq!(
        ours.code, theirs.code,
        "LUKS1 luksConvertKey: {} / {}",
        ours.stderr, theirs.stderr
    );
}

#[test]
fn erase_matches_cryptsetup() {
    if !have_cryptsetup("erase") {
        return;
    }
    for kind in ["luks1", "luks2"] {
        let dir = tmp();
        let a = sparse(dir.path(), "a.img", 20 << 20);
        let kf = write_file(dir.path(), "k", b"k");
        let k2 = write_file(dir.path(), "k2", b"k2");
        cryptsetup(
            &with_fast(vec!["luksFormat", "-q", "--type", kind, "-d", &kf, &a]),
            b"",
        )
        .unwrap()
        .ok("fmt");
        cryptsetup(
            &with_fast(vec!["luksAddKey", "-q", "-d", &kf, &a, &k2]),
            b"",
        )
        .unwrap()
        .ok("add");
        let b = dir.path().join("b.img").to_str().unwrap().to_string();
        std::fs::copy(&a, &b).unwrap();
        lukskit(&["erase", "-q", &a], b"").ok("erase");
        cryptsetup(&["erase", "-q", &b], b"").unwrap().ok("erase");
        let da = cryptsetup(&["luksDump", &a], b"").unwrap().ok("dump");
        let db = cryptsetup(&["luksDump", &b], b"").unwrap().ok("dump");
        assert_eq!(
            da.stdout.replace(&a, "IMG"),
            db.stdout.replace(&b, "IMG"),
            "{kind}"
        );
        assert!(!cs_opens(&a, &kf, &[]) && !cs_opens(&a, &k2, &[]));
    }
}

#[test]
fn unknown_requirements_block_updates_like_cryptsetup() {
    let Some(td) = need_testdata("requirements updates") else {
        return;
    };
    if !have_cryptsetup("requirements updates") {
        return;
    }
    let dir = tmp();
    untar(&td, "luks2_header_requirements.tar.xz", dir.path());
    let img = dir.path().join("luks2_header_requirements");
    let img = img.to_str().unwrap();
    let before = std::fs::read(img).unwrap();
    let kf = write_file(dir.path(), "k", b"whatever");
    let k2 = write_file(dir.path(), "k2", b"new");
    for args in [
        with_fast(vec!["luksAddKey", "-q", "-d", &kf, img, &k2]),
        vec!["config", "--label", "x", img],
    ] {
        // Adding keys and changing metadata are refused by both tools.
        let ours = lukskit(&args, b"");
        assert_ne!(ours.code, 0, "{args:?} must be refused");
        assert!(!ours.stderr.trim().is_empty());
        let theirs = cryptsetup(&args, b"").unwrap();
        assert_ne!(theirs.code, 0, "cryptsetup refuses {args:?} too");
    }
    assert_eq!(
        std::fs::read(img).unwrap(),
        before,
        "refused commands must not write"
    );
    // Revoking a keyslot stays possible (cryptsetup allows it too): same verdict, same dump.
    let copy = dir.path().join("copy").to_str().unwrap().to_string();
    std::fs::copy(img, &copy).unwrap();
    let ours = lukskit(&["luksKillSlot", "-q", img, "0"], b"");
    let theirs = cryptsetup(&["luksKillSlot", "-q", &copy, "0"], b"").unwrap();
    assert_eq!(
        ours.code, theirs.code,
        "{} / {}",
        ours.stderr, theirs.stderr
    );
    let a = cryptsetup(&["luksDump", img], b"").unwrap().ok("dump");
    let b = cryptsetup(&["luksDump", &copy], b"").unwrap().ok("dump");
    assert_eq!(a.stdout, b.stdout);
}

#[test]
fn concurrent_updates_are_serialised() {
    if !have_cryptsetup("concurrency") {
        return;
    }
    let dir = tmp();
    let img = sparse(dir.path(), "v.img", 20 << 20);
    let kf = write_file(dir.path(), "k", b"k");
    lukskit(
        &with_fast(vec!["luksFormat", "-q", "--type", "luks2", "-d", &kf, &img]),
        b"",
    )
    .ok("format");
    let keys: Vec<String> = (1..=6)
        .map(|i| write_file(dir.path(), &format!("n{i}"), format!("new{i}").as_bytes()))
        .collect();
    let handles: Vec<_> = keys
        .iter()
        .map(|k| {
            let (img, kf, k) = (img.clone(), kf.clone(), k.clone());
            std::thread::spawn(move || {
                lukskit(
                    &with_fast(vec!["luksAddKey", "-q", "-d", &kf, &img, &k]),
                    b"",
                )
                .code
            })
        })
        .collect();
    for h in handles {
        assert_eq!(h.join().unwrap(), 0);
    }
    for k in &keys {
        assert!(cs_opens(&img, k, &[]), "a concurrent luksAddKey was lost");
    }
}

/// LUKS1 has only PBKDF2: luksFormat warns and uses it, luksAddKey refuses — both as real
/// cryptsetup does (same messages and exit codes).
#[test]
fn luks1_with_another_pbkdf_behaves_as_cryptsetup() {
    if !have_cryptsetup("luks1 pbkdf") {
        return;
    }
    let dir = tmp();
    let kf = write_file(dir.path(), "k", b"secret");
    let run = |tool: &str, args: &[&str]| -> (i32, String) {
        let r = if tool == "cryptsetup" {
            cryptsetup(args, b"").unwrap()
        } else {
            lukskit(args, b"")
        };
        (r.code, r.stderr)
    };
    for tool in ["cryptsetup", "lukskit"] {
        let img = sparse(dir.path(), &format!("{tool}.img"), 20 << 20);
        let fmt = run(
            tool,
            &[
                "luksFormat",
                "-q",
                "--type",
                "luks1",
                "--pbkdf",
                "argon2i",
                "--pbkdf-force-iterations",
                "1000",
                "-d",
                &kf,
                &img,
            ],
        );
        assert_eq!(
            fmt,
            (
                0,
                "Requested PBKDF type is not supported for LUKS1.\n".to_string()
            ),
            "{tool} luksFormat"
        );
        let add = run(
            tool,
            &[
                "luksAddKey",
                "-q",
                "--pbkdf",
                "argon2id",
                "-d",
                &kf,
                &img,
                &kf,
            ],
        );
        assert_eq!(
            add,
            (
                1,
                "Requested PBKDF type is not supported for LUKS1.\nFailed to set pbkdf parameters.\n"
                    .to_string()
            ),
            "{tool} luksAddKey"
        );
        assert!(cs_opens(&img, &kf, &[]), "{tool}'s image opens with PBKDF2");
    }
}

/// luksFormat reports a missing data device before it reads `--volume-key-file` or parses
/// `--cipher`, as cryptsetup does (same message on standard error, same exit code); with the
/// device present, a missing volume key file is reported as cryptsetup reports it.
#[test]
fn format_checks_the_device_before_key_file_and_cipher() {
    if !have_cryptsetup("luksFormat error order") {
        return;
    }
    let dir = tmp();
    let img = sparse(dir.path(), "v.img", 20 << 20);
    let kf = write_file(dir.path(), "kf", b"pass");
    let missing_dev = dir.path().join("no-such-device").display().to_string();
    let missing_vk = dir.path().join("no-such-vk").display().to_string();
    let cases: [Vec<&str>; 3] = [
        vec!["--volume-key-file", &missing_vk, &missing_dev],
        vec!["--cipher", "xts(aes)-plain64", &missing_dev],
        vec!["--volume-key-file", &missing_vk, &img],
    ];
    for extra in cases {
        let mut args = with_fast(vec!["luksFormat", "-q", "-d", &kf]);
        args.extend_from_slice(&extra);
        let cs = cryptsetup(&args, b"").unwrap();
        let lk = lukskit(&args, b"");
        assert_eq!(lk.code, cs.code, "exit code of {args:?}: {}", lk.stderr);
        assert_eq!(lk.stderr.trim(), cs.stderr.trim(), "stderr of {args:?}");
    }
}
