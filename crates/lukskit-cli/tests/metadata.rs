//! config, token and repair: each edit is made by lukskit on one copy of a volume and by real
//! cryptsetup on an identical copy, and the two headers must then dump identically.

mod common;
use common::*;

/// A LUKS2 image with keyslots 0 and 1, and an identical copy.
fn two_copies(dir: &std::path::Path) -> (String, String, String) {
    let a = sparse(dir, "a.img", 20 << 20);
    let kf = write_file(dir, "k", b"k");
    let k2 = write_file(dir, "k2", b"k2");
    let mut fmt = vec!["luksFormat", "-q", "-d", &kf];
    fmt.extend_from_slice(&FAST);
    fmt.push(&a);
    cryptsetup(&fmt, b"").unwrap().ok("format");
    let mut add = vec!["luksAddKey", "-q", "-d", &kf, &a, &k2];
    add.extend_from_slice(&FAST);
    cryptsetup(&add, b"").unwrap().ok("add");
    let b = dir.join("b.img").to_str().unwrap().to_string();
    std::fs::copy(&a, &b).unwrap();
    (a, b, kf)
}

fn same_dump(a: &str, b: &str, what: &str) {
    let da = cryptsetup(&["luksDump", a], b"").unwrap().ok("dump a");
    let db = cryptsetup(&["luksDump", b], b"").unwrap().ok("dump b");
    assert_eq!(da.stdout, db.stdout, "{what}");
    let ja = lukskit(&["luksDump", "--dump-json-metadata", a], b"").ok("json a");
    let jb = cryptsetup(&["luksDump", "--dump-json-metadata", b], b"")
        .unwrap()
        .ok("json b");
    assert_eq!(ja.stdout, jb.stdout, "{what} (json)");
}

#[test]
fn config_edits_match_cryptsetup() {
    if !have_cryptsetup("config") {
        return;
    }
    let dir = tmp();
    let (a, b, _) = two_copies(dir.path());
    for args in [
        vec!["config", "--label", "data-label", "--subsystem", "backup"],
        vec!["config", "--priority", "prefer", "--key-slot", "1"],
        vec!["config", "--priority", "ignore", "--key-slot", "0"],
        vec!["config", "--priority", "normal", "--key-slot", "0"],
    ] {
        let mut la = args.clone();
        la.push(&a);
        let mut lb = args.clone();
        lb.push(&b);
        lukskit(&la, b"").ok(&format!("lukskit {args:?}"));
        cryptsetup(&lb, b"")
            .unwrap()
            .ok(&format!("cryptsetup {args:?}"));
        same_dump(&a, &b, &format!("{args:?}"));
    }
    assert_eq!(
        lukskit(
            &["config", "--priority", "bogus", "--key-slot", "0", &a],
            b""
        )
        .code,
        1
    );
}

#[test]
fn priority_changes_unlock_order() {
    if !have_cryptsetup("priority") {
        return;
    }
    let dir = tmp();
    let (a, _, kf) = two_copies(dir.path());
    lukskit(
        &["config", "--priority", "ignore", "--key-slot", "0", &a],
        b"",
    )
    .ok("ignore 0");
    // An "ignore" keyslot is skipped unless named explicitly — both tools agree.
    assert_eq!(
        lukskit(&["open", "--test-passphrase", "-d", &kf, &a], b"").code,
        2
    );
    assert_eq!(
        cryptsetup(&["open", "--test-passphrase", "-d", &kf, &a], b"")
            .unwrap()
            .code,
        2
    );
    lukskit(
        &["open", "--test-passphrase", "-S", "0", "-d", &kf, &a],
        b"",
    )
    .ok("explicit slot");
}

#[test]
fn tokens_match_cryptsetup() {
    if !have_cryptsetup("tokens") {
        return;
    }
    let dir = tmp();
    let (a, b, _) = two_copies(dir.path());
    let j = write_file(
        dir.path(),
        "t.json",
        br#"{"type":"example-token","keyslots":["1"],"x-data":{"nested":[1,2,"/path"]}}"#,
    );
    let steps: Vec<Vec<&str>> = vec![
        vec![
            "token",
            "add",
            "--key-description",
            "my:key",
            "--key-slot",
            "0",
        ],
        vec!["token", "import", "--json-file", &j, "--token-id", "5"],
        vec![
            "token",
            "add",
            "--key-description",
            "other",
            "--token-id",
            "3",
        ],
        vec!["token", "remove", "--token-id", "3"],
    ];
    for args in &steps {
        let mut la = args.clone();
        la.push(&a);
        let mut lb = args.clone();
        lb.push(&b);
        lukskit(&la, b"").ok(&format!("lukskit {args:?}"));
        cryptsetup(&lb, b"")
            .unwrap()
            .ok(&format!("cryptsetup {args:?}"));
        same_dump(&a, &b, &format!("{args:?}"));
    }
    for id in ["0", "5"] {
        let ours = lukskit(&["token", "export", "--token-id", id, &a], b"").ok("export");
        let theirs = cryptsetup(&["token", "export", "--token-id", id, &b], b"")
            .unwrap()
            .ok("export");
        assert_eq!(ours.stdout, theirs.stdout, "token {id}");
    }
    // To a file: the same bytes, and the file is made 0600 as by cryptsetup (a token may
    // hold key material), whatever the umask.
    use std::os::unix::fs::PermissionsExt;
    for (tool, img) in [("lukskit", &a), ("cryptsetup", &b)] {
        let out = dir.path().join(format!("{tool}.json"));
        let out_s = out.to_str().unwrap();
        run_tool(
            tool,
            &[
                "token",
                "export",
                "--token-id",
                "5",
                "--json-file",
                out_s,
                img,
            ],
            b"",
        )
        .ok("export to a file");
        let mode = std::fs::metadata(&out).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "{tool}: mode of the exported token file");
    }
    assert_eq!(
        std::fs::read(dir.path().join("lukskit.json")).unwrap(),
        std::fs::read(dir.path().join("cryptsetup.json")).unwrap(),
        "exported token files"
    );
    // Importing into a used id without --token-replace fails; removing an unused one too.
    let mut bad = vec!["token", "import", "--json-file", &j, "--token-id", "5"];
    bad.push(&a);
    assert_ne!(lukskit(&bad, b"").code, 0);
    assert_ne!(
        lukskit(&["token", "remove", "--token-id", "9", &a], b"").code,
        0
    );
    // Unknown members and types survive a lukskit keyslot change untouched.
    let k3 = write_file(dir.path(), "k3", b"k3");
    let kf = dir.path().join("k");
    let mut add = vec!["luksAddKey", "-q", "-d", kf.to_str().unwrap(), &a, &k3];
    add.extend_from_slice(&FAST);
    lukskit(&add, b"").ok("add after tokens");
    let t = cryptsetup(&["token", "export", "--token-id", "5", &a], b"")
        .unwrap()
        .ok("export");
    assert!(
        t.stdout.contains(r#""x-data":{"nested":[1,2,"/path"]}"#),
        "{}",
        t.stdout
    );
}

#[test]
fn repair_restores_both_copies() {
    if !have_cryptsetup("repair") {
        return;
    }
    let dir = tmp();
    let (a, _, kf) = two_copies(dir.path());
    // Damage the primary JSON: lukskit repair rewrites it from the secondary.
    let mut bytes = std::fs::read(&a).unwrap();
    bytes[4096 + 30] ^= 0x20;
    std::fs::write(&a, &bytes).unwrap();
    lukskit(&["repair", "-q", &a], b"").ok("repair");
    // Now damage the secondary: the repaired primary alone must carry the volume.
    let mut bytes = std::fs::read(&a).unwrap();
    bytes[16384 + 4096 + 30] ^= 0x20;
    std::fs::write(&a, &bytes).unwrap();
    lukskit(&["open", "--test-passphrase", "-d", &kf, &a], b"").ok("primary after repair");
    cryptsetup(&["open", "--test-passphrase", "-d", &kf, &a], b"")
        .unwrap()
        .ok("cryptsetup after repair");
    lukskit(&["repair", "-q", &a], b"").ok("repair secondary");
    let d = cryptsetup(&["luksDump", &a], b"").unwrap().ok("dump");
    assert!(d.stdout.contains("Keyslots:"));
    // LUKS1: nothing to repair on a healthy header.
    let l1 = sparse(dir.path(), "l1.img", 20 << 20);
    let mut fmt = vec!["luksFormat", "-q", "--type", "luks1", "-d", &kf];
    fmt.extend_from_slice(&FAST);
    fmt.push(&l1);
    lukskit(&fmt, b"").ok("format l1");
    let r = lukskit(&["repair", "-q", "-v", &l1], b"").ok("repair l1");
    assert!(r
        .stdout
        .contains("No known problems detected for LUKS header."));
}

/// luksDump lists data segments by number, as cryptsetup's `hdr_dump_segments` does, whatever
/// order the JSON stores them in (a re-encryption's segments, written in reverse).
#[test]
fn dump_lists_segments_by_number() {
    let dir = tmp();
    let (a, _b, kf) = two_copies(dir.path());
    let mut init = vec![
        "reencrypt",
        "-q",
        "--init-only",
        "-d",
        &kf,
        "--key-slot",
        "0",
    ];
    init.extend_from_slice(&FAST);
    init.push(&a);
    cryptsetup(&init, b"").unwrap().ok("reencrypt --init-only");
    rewrite_luks2_json(&a, |j| {
        let segs = j["segments"].as_object().unwrap().clone();
        assert!(segs.len() >= 2, "{segs:?}");
        let reversed: serde_json::Map<String, serde_json::Value> = segs.into_iter().rev().collect();
        j["segments"] = serde_json::Value::Object(reversed);
    });
    let theirs = cryptsetup(&["luksDump", &a], b"")
        .unwrap()
        .ok("cryptsetup luksDump");
    let ours = lukskit(&["luksDump", &a], b"").ok("lukskit luksDump");
    assert!(theirs.stdout.contains("  0: crypt"), "{}", theirs.stdout);
    assert_eq!(ours.stdout, theirs.stdout);
}
