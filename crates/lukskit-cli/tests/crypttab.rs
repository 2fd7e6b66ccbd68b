//! `lukskit crypttab` on the host (no root, nothing is mapped): what `list` reports for
//! image-file entries, the exit status of `open` for missing devices with and without
//! `nofail`, refused and unknown options, names that are not in the table, and hostile
//! tables (too large, over-long lines, junk bytes). The mappings themselves are checked
//! against Debian's cryptdisks_start and cryptsetup in the reference VM (refvm_crypttab).

mod common;

use common::{lukskit, tmp, write_file};

fn luks_image(dir: &std::path::Path, key: &str) -> String {
    let img = dir.join("luks.img").display().to_string();
    std::fs::File::create(&img)
        .and_then(|f| f.set_len(32 << 20))
        .unwrap();
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
            &img,
            key,
        ],
        b"",
    )
    .ok("luksFormat");
    img
}

#[test]
fn list_reports_what_open_would_do() {
    let d = tmp();
    let key = write_file(d.path(), "key", &[7u8; 64]);
    let img = luks_image(d.path(), &key);
    let plain = write_file(d.path(), "plain.img", &vec![0u8; 1 << 20]);
    let table = format!(
        "# a comment\n\
         \n\
         vol  {img}  {key}  discard,keyslot=0,frobnicate\n\
         pl\t{plain}\t-\tplain,cipher=aes-xts-plain64,size=512,offset=8,skip=8,tries=5,noauto\n\
         gone UUID=0badc0de-0000-4000-8000-000000000000 none nofail\n\
         tc   {img}  none swap\n"
    );
    let t = write_file(d.path(), "crypttab", table.as_bytes());
    let r = lukskit(&["crypttab", "list", "--crypttab", &t], b"");
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let out = r.stdout;
    for want in [
        "vol (line 3): opened".to_string(),
        format!("  command: lukskit open --type luks --key-slot 0 --key-file {key} --tries 1 --allow-discards {img} vol"),
        "  type:    luks (detected)".into(),
        "  warning: option 'frobnicate' ignored: unknown option, ignored".into(),
        "pl (line 4): opened only when named (noauto)".into(),
        "  key:     passphrase asked on the console (5 tries)".into(),
        format!("  command: lukskit open --type plain --cipher aes-xts-plain64 --key-size 512 --offset 8 --skip 8 --tries 5 {plain} pl"),
        "gone (line 5): fails: device UUID=0badc0de-0000-4000-8000-000000000000 not found".into(),
        "  flags:   nofail".into(),
        "tc (line 6): not opened: option 'swap' is not supported".into(),
        "  error:   option 'swap': lukskit does not make swap areas (mkswap) on mappings".into(),
    ] {
        assert!(out.lines().any(|l| l == want), "missing {want:?} in:\n{out}");
    }
    // Only the named entry.
    let r = lukskit(&["crypttab", "list", "--crypttab", &t, "pl"], b"");
    assert_eq!(r.code, 0);
    assert!(r.stdout.starts_with("pl (line 4)") && !r.stdout.contains("vol ("));
}

#[test]
fn exit_status_follows_nofail() {
    let d = tmp();
    let key = write_file(d.path(), "key", &[7u8; 64]);
    let t = write_file(
        d.path(),
        "crypttab",
        format!(
            "a UUID=0badc0de-0000-4000-8000-000000000000 {key} luks,nofail\n\
             b /nonexistent/dev {key} luks\n\
             c /nonexistent/dev2 none swap,nofail\n\
             d /nonexistent/dev3 none noauto\n"
        )
        .as_bytes(),
    );
    // a and c have nofail: their failures are reported and not counted.
    let r = lukskit(&["crypttab", "open", "--crypttab", &t, "a", "c"], b"");
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stderr.contains(
        "a: Device UUID=0badc0de-0000-4000-8000-000000000000 not found. (nofail: not counted as a failure)"
    ));
    assert!(r.stderr.contains(
        "c: option 'swap' is not supported: lukskit does not make swap areas (mkswap) on mappings; not opened. (nofail"
    ));
    // b has no nofail: exit 4 (a missing device), and the entries after it are still tried.
    let r = lukskit(&["crypttab", "open", "--crypttab", &t], b"");
    assert_eq!(r.code, 4, "{}", r.stderr);
    assert!(r.stderr.contains("b: Device /nonexistent/dev not found."));
    assert!(r.stderr.contains("c: option 'swap'"));
    // noauto entries are only opened when named.
    assert!(
        !r.stderr.lines().any(|l| l.starts_with("d: ")),
        "{}",
        r.stderr
    );
    let r = lukskit(&["crypttab", "open", "--crypttab", &t, "d"], b"");
    assert_eq!(r.code, 4);
    assert!(r.stderr.contains("d: Device /nonexistent/dev3 not found."));
    // A name that is not in the table.
    let r = lukskit(&["crypttab", "open", "--crypttab", &t, "zz"], b"");
    assert_eq!(r.code, 4);
    assert!(r.stderr.contains(&format!("zz: not found in {t}.")));
    // Nothing active: close has nothing to do.
    let r = lukskit(&["crypttab", "close", "--crypttab", &t, "a"], b"");
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(r.stdout, "a: not active.\n");
    // Missing table, unknown sub-action, no sub-action.
    let r = lukskit(
        &["crypttab", "list", "--crypttab", "/nonexistent/crypttab"],
        b"",
    );
    assert_eq!(r.code, 4);
    let r = lukskit(&["crypttab", "frob", "--crypttab", &t], b"");
    assert_eq!(r.code, 1);
    assert!(r.stderr.contains("Unknown crypttab action frob"));
    let r = lukskit(&["crypttab"], b"");
    assert_eq!(r.code, 1);
}

#[test]
fn hostile_tables_are_bounded() {
    let d = tmp();
    // Larger than 1 MiB: refused whole.
    let big = write_file(d.path(), "big", &vec![b'#'; (1 << 20) + 1]);
    let r = lukskit(&["crypttab", "list", "--crypttab", &big], b"");
    assert_eq!(r.code, 1);
    assert!(
        r.stderr.contains("is larger than 1048576 bytes"),
        "{}",
        r.stderr
    );
    // An over-long line, junk bytes, a bad value, odd quoting: each reported, the good entry
    // still listed, exit 1.
    let data = write_file(d.path(), "data.img", &[0u8; 4096]);
    let mut t = vec![b'x'; 100_000];
    t.extend_from_slice(
        b"\n\xff\xfe\x00 /dev/x\nbad /dev/x none tries=many\n\"q /dev/x\" 'k' luks\n",
    );
    t.extend_from_slice(format!("ok {data}\n").as_bytes());
    let p = write_file(d.path(), "hostile", &t);
    let r = lukskit(&["crypttab", "list", "--crypttab", &p], b"");
    assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
    assert!(
        r.stderr
            .contains(":1: line longer than 4096 bytes, skipped."),
        "{}",
        r.stderr
    );
    assert!(r.stderr.contains(":2: line is not valid UTF-8, skipped."));
    assert!(r
        .stderr
        .contains(":3: bad: invalid value for option tries: \"many\"."));
    // Quotes are literal: the fields are "q, /dev/x", 'k' and luks.
    assert!(
        r.stdout
            .contains("\"q (line 4): fails: device /dev/x\" not found"),
        "{}",
        r.stdout
    );
    assert!(r.stdout.contains("ok (line 5): opened"), "{}", r.stdout);
    // Asking for one good entry does not fail for the others' lines.
    let r = lukskit(&["crypttab", "list", "--crypttab", &p, "ok"], b"");
    assert_eq!(r.code, 0, "{}", r.stderr);
}

#[test]
fn rename_needs_an_active_mapping() {
    let r = lukskit(&["rename", "lukskit-no-such-map", "other"], b"");
    assert_eq!(r.code, 4, "{}", r.stderr);
    assert!(r
        .stderr
        .contains("Device lukskit-no-such-map is not active."));
    let r = lukskit(&["rename", "only-one"], b"");
    assert_eq!(r.code, 1);
}

/// Opened and closed for real on the host (userspace backend: FUSE + loop): an entry with a
/// key file and one with a passphrase read from standard input. Needs root and /dev/fuse.
#[test]
fn open_and_close_userspace() {
    let t = "crypttab_userspace";
    if !common::mapping::capable(t) {
        return;
    }
    let d = tmp();
    let key = write_file(d.path(), "key", &[9u8; 64]);
    let img = luks_image(d.path(), &key);
    let pass = write_file(d.path(), "pass", b"typed passphrase");
    let img2 = d.path().join("luks2.img").display().to_string();
    std::fs::copy(&img, &img2).unwrap();
    lukskit(
        &[
            "luksChangeKey",
            "-q",
            "--pbkdf",
            "pbkdf2",
            "--pbkdf-force-iterations",
            "1000",
            &img2,
            "-d",
            &key,
            &pass,
        ],
        b"",
    )
    .ok("luksChangeKey");
    // Two mappings whose names are unique to this process; dropped (closed) on failure.
    let a = common::mapping::Mapping::new("ctk");
    let b = common::mapping::Mapping::new("ctp");
    let table = format!(
        "{} {img} {key} luks,discard\n{} {img2} none luks,tries=1\n",
        a.name, b.name
    );
    let tab = write_file(d.path(), "crypttab", table.as_bytes());
    let r = lukskit(
        &["crypttab", "open", "--crypttab", &tab],
        b"typed passphrase\n",
    );
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert_eq!(
        r.stdout,
        format!("{}: opened.\n{}: opened.\n", a.name, b.name)
    );
    // The key file is 0644 (umask 022): Debian's cryptdisks warns, and so does lukskit.
    let insecure = format!(
        "WARNING: {}: key file {key} has insecure ownership, see \
         /usr/share/doc/cryptsetup/README.Debian.gz.",
        a.name
    );
    assert!(r.stderr.contains(&insecure), "{}", r.stderr);
    for (m, dev) in [(&a, &img), (&b, &img2)] {
        let s = lukskit(&["status", &m.name], b"").ok("status");
        assert!(
            s.stdout.contains(&format!("  device:  {dev}\n")),
            "{}",
            s.stdout
        );
        assert!(std::path::Path::new(&m.dev()).exists());
    }
    assert!(lukskit(&["status", &a.name], b"")
        .stdout
        .contains("flags:   discards"));
    // Opening again: already active, success.
    let r = lukskit(&["crypttab", "open", "--crypttab", &tab, &a.name], b"");
    assert_eq!(
        (r.code, r.stdout.clone()),
        (0, format!("{}: already active.\n", a.name))
    );
    // rename is for kernel mappings.
    let r = lukskit(&["rename", &a.name, "lkt-renamed"], b"");
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(r.stderr.contains("rename of a userspace"), "{}", r.stderr);
    let r = lukskit(&["crypttab", "close", "--crypttab", &tab], b"");
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(
        r.stdout,
        format!("{}: closed.\n{}: closed.\n", b.name, a.name)
    );
    for m in [&a, &b] {
        assert_eq!(lukskit(&["status", &m.name], b"").code, 4);
    }
    // A wrong passphrase: exit 2, the key-file entry opened all the same; the key file is
    // 0600 and root's now: no warning.
    std::fs::set_permissions(&key, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
    let r = lukskit(&["crypttab", "open", "--crypttab", &tab], b"wrong\n");
    assert!(!r.stderr.contains("insecure ownership"), "{}", r.stderr);
    assert_eq!(r.code, 2, "{}{}", r.stdout, r.stderr);
    assert_eq!(r.stdout, format!("{}: opened.\n", a.name));
    assert!(
        r.stderr.contains(&format!(
            "{}: No key available with this passphrase.",
            b.name
        )),
        "{}",
        r.stderr
    );
    lukskit(&["crypttab", "close", "--crypttab", &tab], b"").ok("close");
}

/// TrueCrypt/VeraCrypt and BitLocker entries (systemd's `tcrypt`, `tcrypt-hidden`,
/// `tcrypt-keyfile=`, `veracrypt-pim=`, `bitlk`; Debian's `veracrypt`), opened through the
/// userspace backend on the shared images: the passphrase is the key file's first line, as
/// systemd-cryptsetup reads it for TCRYPT; BitLocker's key file is its password; the file
/// systems inside have the UUIDs the images' README gives.
#[test]
fn open_truecrypt_and_bitlocker_entries() {
    let t = "crypttab_other_formats";
    if !common::mapping::capable(t) {
        return;
    }
    let d = tmp();
    if !common::unpack_other_formats(t, "tcrypt-images.tar.xz", d.path())
        || !common::unpack_other_formats(t, "bitlk-images.tar.xz", d.path())
    {
        return;
    }
    let tc = d.path().join("tcrypt");
    let img = |n: &str| tc.join(n).display().to_string();
    let pass = write_file(d.path(), "pass", b"aaaaaaaaaaaa\nthe rest is not read\n");
    let hidden = write_file(d.path(), "hidden", b"bbbbbbbbbbbb\n");
    let bitlk_pw = write_file(d.path(), "bitlk.pw", b"anaconda");
    for f in [&pass, &hidden, &bitlk_pw] {
        std::fs::set_permissions(f, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
    }
    let m: Vec<common::mapping::Mapping> = ["ctc", "cth", "cvk", "cvp", "cbl"]
        .iter()
        .map(|n| common::mapping::Mapping::new(n))
        .collect();
    let table = format!(
        "{} {} {pass} tcrypt\n\
         {} {} {hidden} tcrypt-hidden\n\
         {} {} {pass} tcrypt-veracrypt,tcrypt-keyfile={},tcrypt-keyfile={}\n\
         {} {} {pass} veracrypt,veracrypt-pim=1234\n\
         {} {} {bitlk_pw} bitlk\n",
        m[0].name,
        img("tc_4-sha512-xts-aes"),
        m[1].name,
        img("tc_4-sha512-xts-aes-hidden"),
        m[2].name,
        img("vck_1-sha512-xts-aes"),
        img("keyfile1"),
        img("keyfile2"),
        m[3].name,
        img("vcpim_1-sha256-xts-aes"),
        m[4].name,
        d.path().join("bitlk/bitlk-aes-xts-128.img").display(),
    );
    let tab = write_file(d.path(), "crypttab", table.as_bytes());
    // What open would do: the TrueCrypt passphrase file on standard input, key files as -d.
    let l = lukskit(&["crypttab", "list", "--crypttab", &tab], b"").ok("list");
    assert!(
        l.stdout.contains(&format!(
            "  command: lukskit open --type tcrypt --key-file {} --key-file {} --tries 1 --veracrypt {} {} < {pass}\n",
            img("keyfile1"),
            img("keyfile2"),
            img("vck_1-sha512-xts-aes"),
            m[2].name
        )),
        "{}",
        l.stdout
    );
    assert!(l.stdout.contains("  type:    bitlk\n"), "{}", l.stdout);
    let r = lukskit(&["crypttab", "open", "--crypttab", &tab], b"");
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    for (i, uuid) in [
        "DEAD-BABE",
        "CAFE-BABE",
        "DEAD-BABE",
        "DEAD-BABE",
        "68844E71844E41B4",
    ]
    .iter()
    .enumerate()
    {
        assert_eq!(common::blkid_uuid(&m[i].dev()), *uuid, "{}", m[i].name);
    }
    let r = lukskit(&["crypttab", "close", "--crypttab", &tab], b"");
    assert_eq!(r.code, 0, "{}", r.stderr);
    // A wrong first line: cryptsetup's words for TCRYPT, exit 2 (EPERM), the others open.
    let wrong = write_file(d.path(), "wrong", b"aaaaaaaaaaab\naaaaaaaaaaaa\n");
    let table = format!(
        "{} {} {wrong} tcrypt\n",
        m[0].name,
        img("tc_4-sha512-xts-aes")
    );
    let tab = write_file(d.path(), "crypttab2", table.as_bytes());
    let r = lukskit(&["crypttab", "open", "--crypttab", &tab], b"");
    assert_eq!(r.code, 2, "{}{}", r.stdout, r.stderr);
    assert!(
        r.stderr
            .contains("No device header detected with this passphrase."),
        "{}",
        r.stderr
    );
}
