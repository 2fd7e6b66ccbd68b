//! `open` of a LUKS2 volume whose re-encryption is in progress, through lukskit's FUSE +
//! loop path on the host (the kernel path is checked against real cryptsetup in
//! `refvm_reencrypt_open.rs`):
//!
//! * a re-encryption initialized by real cryptsetup (`--init-only`) opens; the plaintext
//!   read through the mapping is what was written before, and `status` says
//!   "reencryption:  in-progress" as cryptsetup's does;
//! * a lukskit re-encryption stopped by crash injection at its Nth metadata write (some
//!   points leave a hot zone in flight, others a clean state with two segments under two
//!   keys) opens: a hot zone in flight is recovered by `open` first (the header says so no
//!   more), the plaintext is intact, and real cryptsetup then finishes the re-encryption;
//! * `open --test-passphrase` checks the keys of every digest and the metadata digest
//!   (a tampered header is refused with cryptsetup's "Reencryption metadata is invalid.").
//!
//! Needs root, /dev/fuse, loop devices and cryptsetup; fails without them unless
//! `LUKSKIT_ALLOW_SKIP=1`.

mod common;
use common::mapping::*;
use common::*;

const FAST: [&str; 4] = ["--pbkdf", "pbkdf2", "--pbkdf-force-iterations", "1000"];
const MIB: u64 = 1 << 20;
/// The plaintext written to the data area (the data area is 20 MiB).
const DATA: usize = 20 << 20;

fn open_userspace(img: &str, key: &str, m: &Mapping) -> Run {
    lukskit(
        &["open", "--backend", "userspace", "-d", key, img, &m.name],
        b"",
    )
}

/// A LUKS2 image of 36 MiB (16 MiB header) with key file "key", holding `plain`.
fn image(dir: &std::path::Path, tag: &str, plain: &[u8]) -> (String, String) {
    let img = sparse(dir, "img", 36 * MIB);
    let key = write_file(dir, "key", b"open during reencrypt");
    let mut args = vec!["luksFormat", "-q", "--type", "luks2"];
    args.extend_from_slice(&FAST);
    args.extend_from_slice(&[&img, &key]);
    lukskit(&args, b"").ok("luksFormat");
    let m = Mapping::new(&format!("roimg{tag}"));
    open_userspace(&img, &key, &m).ok("open");
    write_direct(&m.dev(), 0, plain).unwrap();
    lukskit(&["close", &m.name], b"").ok("close");
    (img, key)
}

fn hot_zone_in_flight(img: &str) -> bool {
    json_dump(img)["segments"]
        .as_object()
        .unwrap()
        .values()
        .any(|s| {
            s["flags"]
                .as_array()
                .is_some_and(|f| f.iter().any(|x| x == "in-reencryption"))
        })
}

fn live_segments(img: &str) -> usize {
    json_dump(img)["segments"]
        .as_object()
        .unwrap()
        .values()
        .filter(|s| {
            !s["flags"]
                .as_array()
                .is_some_and(|f| f.iter().any(|x| x.as_str().unwrap().starts_with("backup-")))
        })
        .count()
}

fn check_plain(img: &str, key: &str, plain: &[u8], what: &str) {
    let m = Mapping::new("rocrash");
    open_userspace(img, key, &m).ok(&format!("{what}: open"));
    assert!(
        read_direct(&m.dev(), 0, DATA) == plain,
        "{what}: plaintext through the mapping differs"
    );
    lukskit(&["close", &m.name], b"").ok(&format!("{what}: close"));
}

#[test]
fn userspace_open_of_cryptsetup_init_only() {
    let test = "userspace_open_of_cryptsetup_init_only";
    if !capable(test) || !have_cryptsetup(test) {
        return;
    }
    let t = tmp();
    let plain = pattern(DATA, 7);
    let (img, key) = image(t.path(), "i", &plain);
    let mut init = vec![
        "reencrypt",
        "-q",
        "--init-only",
        "--force-offline-reencrypt",
    ];
    init.extend_from_slice(&["-c", "aes-cbc-essiv:sha256", "-s", "256", "-d", &key]);
    init.extend_from_slice(&FAST);
    init.push(&img);
    cryptsetup(&init, b"")
        .unwrap()
        .ok("cryptsetup reencrypt --init-only");
    assert!(in_reencryption(&img));
    let m = Mapping::new("roinit");
    open_userspace(&img, &key, &m).ok("open in re-encryption");
    assert!(read_direct(&m.dev(), 0, DATA) == plain, "plaintext differs");
    let st = lukskit(&["status", &m.name], b"").ok("status").stdout;
    assert!(
        st.contains("  type:    LUKS2\n  reencryption:  in-progress\n  cipher:  aes-cbc-essiv:sha256\n  keysize: 256 bits\n"),
        "{st}"
    );
    lukskit(&["close", &m.name], b"").ok("close");
    // The passphrase test unlocks both keys and checks the digest; a wrong one fails.
    lukskit(&["open", "--test-passphrase", "-d", &key, &img], b"").ok("test-passphrase");
    let bad = write_file(t.path(), "bad", b"wrong");
    let r = lukskit(&["open", "--test-passphrase", "-d", &bad, &img], b"");
    assert_eq!(r.code, 2, "{}", r.stderr);
    // Metadata covered by the digest, tampered: refused as by cryptsetup.
    rewrite_luks2_json(&img, |v| {
        let ks = v["keyslots"]
            .as_object_mut()
            .unwrap()
            .values_mut()
            .find(|k| k["type"] == "reencrypt")
            .unwrap();
        ks["area"]["hash"] = "sha1".into();
    });
    for (tool, r) in [
        (
            "cryptsetup",
            cryptsetup(&["open", "--test-passphrase", "-d", &key, &img], b"").unwrap(),
        ),
        (
            "lukskit",
            lukskit(&["open", "--test-passphrase", "-d", &key, &img], b""),
        ),
        ("lukskit open", open_userspace(&img, &key, &m)),
    ] {
        assert_ne!(r.code, 0, "{tool} accepted tampered metadata");
        assert!(
            r.stderr.contains("Reencryption metadata is invalid."),
            "{tool}: {}",
            r.stderr
        );
    }
    assert!(!std::path::Path::new(&m.dev()).exists());
}

#[test]
fn userspace_open_after_crashes_recovers_then_cryptsetup_finishes() {
    let test = "userspace_open_after_crashes_recovers_then_cryptsetup_finishes";
    if !capable(test) || !have_cryptsetup(test) {
        return;
    }
    let t = tmp();
    let plain = pattern(DATA, 11);
    let (base, key) = image(t.path(), "c", &plain);
    let img = t.path().join("w.img").to_str().unwrap().to_string();
    let (mut crashed, mut clean_two) = (0, 0);
    for n in 2..40 {
        std::fs::copy(&base, &img).unwrap();
        let spec = format!("write:{n}");
        let mut args = vec!["reencrypt", "-q", "--force-offline-reencrypt"];
        args.extend_from_slice(&["--resilience", "checksum", "--hotzone-size", "4M"]);
        args.extend_from_slice(&["-c", "aes-xts-plain64", "-s", "256", "-d", &key]);
        args.extend_from_slice(&FAST);
        args.push(&img);
        let r = lukskit_env(&args, b"", &[("LUKSKIT_CRASH_AT", &spec)]);
        if r.code == 0 {
            break;
        }
        assert_eq!(r.code, 86, "{spec}: {}", r.stderr);
        if !in_reencryption(&img) {
            continue;
        }
        let what = format!("crash at {spec}");
        if hot_zone_in_flight(&img) {
            crashed += 1;
        } else if live_segments(&img) > 1 {
            clean_two += 1;
        }
        // `open` recovers a hot zone in flight (and says nothing of it).
        check_plain(&img, &key, &plain, &what);
        assert!(!hot_zone_in_flight(&img), "{what}: open did not recover");
        if in_reencryption(&img) {
            let mut resume = vec![
                "reencrypt",
                "-q",
                "--resume-only",
                "--force-offline-reencrypt",
            ];
            resume.extend_from_slice(&["-d", &key, &img]);
            cryptsetup(&resume, b"")
                .unwrap()
                .ok(&format!("{what}: cryptsetup finishes"));
        }
        assert!(!in_reencryption(&img), "{what}");
        check_plain(&img, &key, &plain, &format!("{what}, finished"));
    }
    println!("hot zones in flight: {crashed}, clean states with two segments: {clean_two}");
    assert!(crashed > 0 && clean_two > 0);
}
