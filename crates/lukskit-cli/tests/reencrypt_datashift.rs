//! Encryption in place with a data shift (`reencrypt --encrypt --reduce-device-size`),
//! against real cryptsetup 2.6.1 on the host (offline, `--force-offline-reencrypt`):
//!
//! * an ext4 image is encrypted in place by lukskit, its files read back intact (e2fsck,
//!   debugfs), then decrypted in place by cryptsetup (its data-shift decryption) and is the
//!   same file system again;
//! * lukskit's initialization writes the metadata cryptsetup writes (segments, backup
//!   segments, `reencrypt` keyslot, requirement), and either tool resumes the other's work,
//!   with even and uneven hot zones;
//! * the refusals and messages of cryptsetup for the data-shift options;
//! * crash injection at every write and every sync of a lukskit encryption with a data shift,
//!   then recovery by lukskit (and in a sample by cryptsetup's `repair`): plaintext intact.

mod common;
use common::*;
use sha2::{Digest, Sha256};
use std::path::Path;
use std::process::Command;

const FAST: [&str; 4] = ["--pbkdf", "pbkdf2", "--pbkdf-force-iterations", "1000"];
const CRASH_STATUS: i32 = 86;
const M: usize = 1 << 20;

fn pattern(len: usize, seed: u64) -> Vec<u8> {
    let mut v = Vec::with_capacity(len);
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15 ^ seed;
    while v.len() < len {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        v.extend_from_slice(&x.to_le_bytes());
    }
    v.truncate(len);
    v
}

fn sha(data: &[u8]) -> String {
    hex::encode(Sha256::digest(data))
}

/// lukskit with `dir` as the working directory (where the temporary header goes).
fn lk_in(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Run {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_lukskit"));
    cmd.current_dir(dir).args(args).envs(env.iter().copied());
    let o = cmd.output().expect("spawn lukskit");
    Run {
        code: o.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
    }
}

fn cs_in(dir: &Path, args: &[&str]) -> Run {
    let path = cryptsetup_path().expect("cryptsetup");
    let o = Command::new(path)
        .current_dir(dir)
        .args(args)
        .output()
        .expect("spawn cryptsetup");
    Run {
        code: o.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
    }
}

/// `tool` ("lukskit" or "cryptsetup") run in `dir`.
fn tool_in(tool: &str, dir: &Path, args: &[&str]) -> Run {
    if tool == "lukskit" {
        lk_in(dir, args, &[])
    } else {
        cs_in(dir, args)
    }
}

fn encrypt_args<'a>(kf: &'a str, reduce: &'a str, extra: &[&'a str], img: &'a str) -> Vec<&'a str> {
    let mut a = vec![
        "reencrypt",
        "-q",
        "--encrypt",
        "--force-offline-reencrypt",
        "--reduce-device-size",
        reduce,
        "-d",
        kf,
    ];
    a.extend_from_slice(&FAST);
    a.extend_from_slice(extra);
    a.push(img);
    a
}

fn resume_args<'a>(kf: &'a str, img: &'a str) -> Vec<&'a str> {
    vec![
        "reencrypt",
        "-q",
        "--resume-only",
        "--force-offline-reencrypt",
        "-d",
        kf,
        img,
    ]
}

fn is_luks(img: &str) -> bool {
    cryptsetup(&["isLuks", img], b"").expect("cryptsetup").code == 0
}

/// The plaintext lukskit reads from `img` (`image decrypt`).
fn read_plain(dir: &Path, img: &str, kf: &str) -> Vec<u8> {
    let out = dir.join("out.plain");
    let _ = std::fs::remove_file(&out);
    lukskit(
        &["image", "decrypt", "-d", kf, img, out.to_str().unwrap()],
        b"",
    )
    .ok("image decrypt");
    std::fs::read(out).unwrap()
}

/// The image is done: no re-encryption state, cryptsetup opens it, the data offset is the
/// shift and the first `plain.len()` bytes of plaintext are `plain`.
fn check_done(dir: &Path, img: &str, kf: &str, shift: usize, plain: &[u8], what: &str) {
    let v = json_dump(img);
    assert!(v["config"].get("requirements").is_none(), "{what}: {v}");
    let segs = v["segments"].as_object().unwrap();
    assert_eq!(segs.len(), 1, "{what}: {v}");
    assert_eq!(v["segments"]["0"]["offset"], shift.to_string(), "{what}");
    assert_eq!(v["segments"]["0"]["size"], "dynamic", "{what}");
    cryptsetup(&["open", "--test-passphrase", "-d", kf, img], b"")
        .expect("cryptsetup")
        .ok(&format!("{what}: cryptsetup open --test-passphrase"));
    let got = read_plain(dir, img, kf);
    assert!(got.len() >= plain.len(), "{what}: data area too small");
    assert_eq!(sha(&got[..plain.len()]), sha(plain), "{what}: plaintext");
}

/// An unencrypted ext4 device is encrypted in place by lukskit (header in the 16 MiB taken
/// from its end), its files are intact through lukskit's and cryptsetup's view, and
/// cryptsetup 2.6.1 decrypts it back in place (its data-shift decryption, header exported
/// to a file): the device is the same file system with the same files.
#[test]
fn ext4_encrypted_in_place_and_decrypted_back() {
    if !have_cryptsetup("ext4_encrypted_in_place_and_decrypted_back")
        || !have_e2fs("ext4_encrypted_in_place_and_decrypted_back")
    {
        return;
    }
    let t = tmp();
    let dir = t.path();
    let kf = write_file(dir, "kf", b"secret passphrase");
    let src = dir.join("src");
    std::fs::create_dir_all(src.join("sub")).unwrap();
    let files = [
        ("big.bin", pattern(5 * M + 123, 1)),
        (
            "sub/small.txt",
            b"hello from an ext4 file system\n".to_vec(),
        ),
        ("sub/mid.bin", pattern(700_000, 2)),
    ];
    for (name, data) in &files {
        std::fs::write(src.join(name), data).unwrap();
    }
    let img = dir.join("fs.img").to_str().unwrap().to_string();
    std::fs::write(&img, vec![0u8; 64 * M]).unwrap();
    // The file system takes the first 48 MiB: the last 16 MiB are the reduction.
    mkfs_ext4_from(&img, &src, "48M");
    let before = std::fs::read(&img).unwrap()[..48 * M].to_vec();

    lk_in(dir, &encrypt_args(&kf, "16M", &[], &img), &[]).ok("lukskit encrypt in place");
    assert!(
        !std::fs::read_dir(dir).unwrap().any(|e| e
            .unwrap()
            .file_name()
            .to_string_lossy()
            .starts_with("LUKS2-temp-")),
        "temporary header left behind"
    );
    assert_ne!(
        sha(&std::fs::read(&img).unwrap()[8 * M..56 * M]),
        sha(&before),
        "not encrypted"
    );
    check_done(dir, &img, &kf, 8 * M, &before, "lukskit encrypt");
    // The file system through the encryption (lukskit's view of the plaintext).
    let plain = dir.join("plain.img");
    std::fs::write(&plain, &read_plain(dir, &img, &kf)[..48 * M]).unwrap();
    fsck(plain.to_str().unwrap(), "encrypted");
    for (name, data) in &files {
        let got = ext4_file(plain.to_str().unwrap(), name, &dir.join("f.out"));
        assert_eq!(sha(&got), sha(data), "{name} through the encryption");
    }

    // cryptsetup decrypts it back in place (moving the data over the header).
    let hdr = dir.join("exported.hdr").to_str().unwrap().to_string();
    let mut dec = vec![
        "reencrypt",
        "-q",
        "--decrypt",
        "--force-offline-reencrypt",
        "--header",
        &hdr,
        "-d",
        &kf,
    ];
    dec.push(&img);
    cs_in(dir, &dec).ok("cryptsetup --decrypt of lukskit's encryption");
    fsck(&img, "decrypted back");
    assert_eq!(
        sha(&std::fs::read(&img).unwrap()[..48 * M]),
        sha(&before),
        "file system bytes after the round trip"
    );
    for (name, data) in &files {
        let got = ext4_file(&img, name, &dir.join("f.out"));
        assert_eq!(sha(&got), sha(data), "{name} after decryption");
    }
}

/// What lukskit's `--init-only` writes is what cryptsetup's writes, member for member
/// (salts, digests and UUIDs aside); then each tool finishes the other's initialization.
#[test]
fn init_matches_cryptsetup_and_resumes_both_ways() {
    if !have_cryptsetup("init_matches_cryptsetup_and_resumes_both_ways") {
        return;
    }
    let t = tmp();
    let dir = t.path();
    let kf = write_file(dir, "kf", b"secret passphrase");
    let orig = pattern(64 * M, 7);
    // 16M: shift 8M, 48M of data in 6 hot zones; 40M: shift 20M, 24M of data (a short
    // middle zone); 8M with 4096-byte sectors.
    for (reduce, shift, extra) in [
        ("16M", 8 * M, &[][..]),
        ("40M", 20 * M, &[][..]),
        ("8M", 4 * M, &["--sector-size", "4096"][..]),
    ] {
        let data_len = 64 * M - 2 * shift;
        let mut layouts = Vec::new();
        for (first, second) in [("lukskit", "cryptsetup"), ("cryptsetup", "lukskit")] {
            let what = format!("{reduce}: {first} init, {second} resumes");
            let img = dir
                .join(format!("{first}.img"))
                .to_str()
                .unwrap()
                .to_string();
            std::fs::write(&img, &orig).unwrap();
            let mut extra2 = vec!["--init-only"];
            extra2.extend_from_slice(extra);
            let args = encrypt_args(&kf, reduce, &extra2, &img);
            tool_in(first, dir, &args).ok(&what);
            assert!(in_reencryption(&img), "{what}");
            let mut v = json_dump(&img);
            for k in ["keyslots", "digests"] {
                for (_, o) in v[k].as_object_mut().unwrap().iter_mut() {
                    let o = o.as_object_mut().unwrap();
                    for f in ["salt", "digest", "kdf", "af", "iterations"] {
                        o.remove(f);
                    }
                }
            }
            layouts.push(v);
            let r = resume_args(&kf, &img);
            tool_in(second, dir, &r).ok(&what);
            check_done(dir, &img, &kf, shift, &orig[..data_len], &what);
            // The moved copy of the first segment is gone from the tail.
            let tail = &std::fs::read(&img).unwrap()[64 * M - shift..];
            assert_ne!(sha(tail), sha(&orig[..shift]), "{what}: moved copy left");
        }
        assert_eq!(layouts[0], layouts[1], "{reduce}: metadata differs");
    }
}

/// `--progress-json` of an encryption with a data shift counts as cryptsetup's: over the data
/// device less the new data offset (the moved first segment counted as done from the start),
/// in one run and in a run resumed after `--init-only`. lukskit counted only the segments it
/// steps over (32 MiB where cryptsetup says 36 MiB of a 40 MiB device with 8M).
#[test]
fn progress_of_a_data_shift_as_cryptsetup() {
    if !have_cryptsetup("progress_of_a_data_shift_as_cryptsetup") {
        return;
    }
    let t = tmp();
    let dir = t.path();
    let kf = write_file(dir, "kf", b"secret passphrase");
    let orig = pattern(40 * M, 11);
    let last_counts = |out: &str, what: &str| -> (String, String) {
        let last = out
            .lines()
            .last()
            .unwrap_or_else(|| panic!("{what}: no progress"));
        let v: serde_json::Value =
            serde_json::from_str(last).unwrap_or_else(|e| panic!("{what}: {e}: {last}"));
        (
            v["device_bytes"].as_str().unwrap().to_string(),
            v["device_size"].as_str().unwrap().to_string(),
        )
    };
    for (reduce, extra) in [
        ("8M", &["--hotzone-size", "2M"][..]),
        ("16M", &["--sector-size", "4096"][..]),
    ] {
        for resumed in [false, true] {
            let mut counts = Vec::new();
            for tool in ["cryptsetup", "lukskit"] {
                let what = format!("{reduce} {extra:?} resumed={resumed}: {tool}");
                let img = dir
                    .join(format!("{tool}.img"))
                    .to_str()
                    .unwrap()
                    .to_string();
                std::fs::write(&img, &orig).unwrap();
                let run = |args: &[&str]| tool_in(tool, dir, args);
                let mut more = extra.to_vec();
                more.push("--progress-json");
                if resumed {
                    more.push("--init-only");
                }
                let r = run(&encrypt_args(&kf, reduce, &more, &img)).ok(&what);
                let out = if resumed {
                    let mut a = resume_args(&kf, &img);
                    a.insert(1, "--progress-json");
                    run(&a).ok(&what).stdout
                } else {
                    r.stdout
                };
                let (done, size) = last_counts(&out, &what);
                assert_eq!(done, size, "{what}: {out}");
                counts.push(size);
            }
            assert_eq!(
                counts[0], counts[1],
                "{reduce} resumed={resumed}: cryptsetup, lukskit"
            );
        }
    }
}

/// cryptsetup's refusals and messages for the data-shift options, by both tools.
#[test]
fn datashift_refusals_as_cryptsetup() {
    if !have_cryptsetup("datashift_refusals_as_cryptsetup") {
        return;
    }
    let t = tmp();
    let dir = t.path();
    let kf = write_file(dir, "kf", b"secret passphrase");
    let orig = pattern(32 * M, 3);
    let img = dir.join("p.img").to_str().unwrap().to_string();
    let luks = dir.join("l.img").to_str().unwrap().to_string();
    let hdr = dir.join("h.img").to_str().unwrap().to_string();
    let mut fmt = vec!["luksFormat", "-q", "--type", "luks2", "-d", &kf];
    fmt.extend_from_slice(&FAST);
    fmt.push(&luks);
    let base = |a: &[&'static str]| -> Vec<String> { a.iter().map(|s| s.to_string()).collect() };
    let cases: Vec<(&str, Vec<String>)> = vec![
        (
            "encrypt without --header or --reduce-device-size",
            base(&["reencrypt", "-q", "--encrypt", "--force-offline-reencrypt"]),
        ),
        (
            "--offset above half the reduction",
            base(&[
                "reencrypt",
                "-q",
                "--encrypt",
                "--force-offline-reencrypt",
                "--reduce-device-size",
                "8M",
                "--offset",
                "16384",
            ]),
        ),
        (
            "reduction above 1 GiB",
            base(&[
                "reencrypt",
                "-q",
                "--encrypt",
                "--force-offline-reencrypt",
                "--reduce-device-size",
                "2G",
            ]),
        ),
        (
            "--resilience datashift with a detached header",
            vec![
                "reencrypt".into(),
                "-q".into(),
                "--encrypt".into(),
                "--force-offline-reencrypt".into(),
                "--resilience".into(),
                "datashift".into(),
                "--header".into(),
                hdr.clone(),
            ],
        ),
    ];
    for (what, args) in cases {
        let mut outs = Vec::new();
        for tool in ["lukskit", "cryptsetup"] {
            std::fs::write(&img, &orig).unwrap();
            let _ = std::fs::remove_file(&hdr);
            let mut a: Vec<&str> = args.iter().map(String::as_str).collect();
            a.extend_from_slice(&["-d", &kf]);
            a.extend_from_slice(&FAST);
            a.push(&img);
            let r = tool_in(tool, dir, &a);
            // Refused before the device was touched.
            assert_eq!(
                sha(&std::fs::read(&img).unwrap()),
                sha(&orig),
                "{what}: {tool} changed the device"
            );
            outs.push(r);
        }
        let (l, c) = (&outs[0], &outs[1]);
        assert_ne!(c.code, 0, "{what}: cryptsetup accepted it");
        assert_eq!(
            l.code, c.code,
            "{what}: lukskit {} / cryptsetup {}",
            l.stderr, c.stderr
        );
        // (The last line: usage errors start with the program's name.)
        let last = c.stderr.lines().last().unwrap_or("");
        let last = match last.split_once(": ") {
            Some((prog, msg)) if prog.ends_with("cryptsetup") => msg,
            _ => last,
        };
        assert!(
            l.stderr.contains(last),
            "{what}: lukskit said {:?}, cryptsetup {:?}",
            l.stderr,
            c.stderr
        );
    }
    // Re-encryption of a LUKS2 volume with `--resilience datashift` (no shift).
    let mut outs = Vec::new();
    for tool in ["lukskit", "cryptsetup"] {
        std::fs::write(&luks, &orig).unwrap();
        cryptsetup(&fmt, b"").unwrap().ok("luksFormat");
        let mut a = vec![
            "reencrypt",
            "-q",
            "--force-offline-reencrypt",
            "--resilience",
            "datashift",
            "-d",
            &kf,
        ];
        a.extend_from_slice(&FAST);
        a.push(&luks);
        outs.push(tool_in(tool, dir, &a));
        assert!(
            !in_reencryption(&luks),
            "{tool} initialized a datashift re-encryption"
        );
    }
    assert_eq!(
        outs[0].code, outs[1].code,
        "{} / {}",
        outs[0].stderr, outs[1].stderr
    );
    assert!(
        outs[0]
            .stderr
            .contains("Failed to initialize LUKS2 reencryption in metadata."),
        "{}",
        outs[0].stderr
    );
    // Resuming a data shift with another resilience.
    std::fs::write(&img, &orig).unwrap();
    lk_in(dir, &encrypt_args(&kf, "8M", &["--init-only"], &img), &[]).ok("init");
    for tool in ["lukskit", "cryptsetup"] {
        let mut a = resume_args(&kf, &img);
        a.extend_from_slice(&["--resilience", "checksum"]);
        let r = tool_in(tool, dir, &a);
        assert_eq!(r.code, 1, "{tool}: {}", r.stderr);
        assert!(
            r.stderr.contains(
                "Device is in reencryption using datashift resilience. Requested --resilience \
                 option cannot be applied."
            ),
            "{tool}: {}",
            r.stderr
        );
    }
}

/// Crash at every write and every sync of a lukskit encryption with a data shift (the
/// temporary header, the move of the first segment, the restore over the head of the
/// device, every hot zone, the final cleanup), then recover: a header left only in the
/// temporary file is restored first (as a cryptsetup user would, with `luksHeaderRestore`);
/// a hot zone is recovered by lukskit, or in a sample by cryptsetup's `repair`; the rest is
/// resumed by lukskit. The plaintext is intact at every point.
#[test]
fn crash_at_every_write_and_sync_of_a_data_shift() {
    if !have_cryptsetup("crash_at_every_write_and_sync_of_a_data_shift") {
        return;
    }
    let t = tmp();
    let dir = t.path();
    let kf = write_file(dir, "kf", b"secret passphrase");
    // 32 MiB, reduction 8M: shift 4M, 24M of data in 6 hot zones.
    let (shift, data_len) = (4 * M, 24 * M);
    let orig = pattern(32 * M, 11);
    let img = dir.join("w.img").to_str().unwrap().to_string();
    let (mut points, mut by_cryptsetup, mut restored) = (0, 0, 0);
    for kind in ["write", "sync"] {
        let mut n = 1;
        loop {
            std::fs::write(&img, &orig).unwrap();
            for e in std::fs::read_dir(dir).unwrap() {
                let e = e.unwrap();
                if e.file_name().to_string_lossy().starts_with("LUKS2-temp-") {
                    std::fs::remove_file(e.path()).unwrap();
                }
            }
            let spec = format!("{kind}:{n}");
            let what = format!("crash at {spec}");
            let r = lk_in(
                dir,
                &encrypt_args(&kf, "8M", &[], &img),
                &[("LUKSKIT_CRASH_AT", &spec)],
            );
            if r.code == 0 {
                check_done(dir, &img, &kf, shift, &orig[..data_len], &what);
                break;
            }
            assert_eq!(r.code, CRASH_STATUS, "{what}: {}", r.stderr);
            points += 1;
            let temp = std::fs::read_dir(dir)
                .unwrap()
                .map(|e| e.unwrap().path())
                .find(|p| {
                    p.file_name()
                        .unwrap()
                        .to_string_lossy()
                        .starts_with("LUKS2-temp-")
                });
            // The restore writes the keyslots area first and the metadata last: a header on
            // the device is a complete one.
            let device_ok = is_luks(&img);
            if !device_ok {
                match temp
                    .as_ref()
                    .filter(|p| in_reencryption(p.to_str().unwrap()))
                {
                    Some(p) => {
                        // Crashed while the header was being restored over the head.
                        restored += 1;
                        cryptsetup(
                            &[
                                "luksHeaderRestore",
                                "-q",
                                &img,
                                "--header-backup-file",
                                p.to_str().unwrap(),
                            ],
                            b"",
                        )
                        .unwrap()
                        .ok(&format!("{what}: luksHeaderRestore"));
                    }
                    None => {
                        // Before the initialization was committed: the plaintext at the
                        // head is untouched.
                        assert!(!is_luks(&img), "{what}: a header without its metadata");
                        assert_eq!(
                            sha(&std::fs::read(&img).unwrap()[..data_len]),
                            sha(&orig[..data_len]),
                            "{what}: plaintext before the initialization"
                        );
                        n += 1;
                        continue;
                    }
                }
            }
            if in_reencryption(&img) {
                let d = cryptsetup(&["luksDump", &img], b"").unwrap().stdout;
                assert_eq!(
                    lukskit(&["luksDump", &img], b"").ok("luksDump").stdout,
                    d,
                    "{what}: luksDump differs"
                );
                if d.contains("in-reencryption") && n % 2 == 1 {
                    by_cryptsetup += 1;
                    cryptsetup(&["repair", "-q", "-d", &kf, &img], b"")
                        .unwrap()
                        .ok(&format!("{what}: cryptsetup repair"));
                    assert!(
                        !cryptsetup(&["luksDump", &img], b"")
                            .unwrap()
                            .stdout
                            .contains("in-reencryption"),
                        "{what}"
                    );
                }
                if in_reencryption(&img) {
                    lk_in(dir, &resume_args(&kf, &img), &[]).ok(&format!("{what}: lukskit resume"));
                }
            }
            check_done(dir, &img, &kf, shift, &orig[..data_len], &what);
            n += 1;
            assert!(n < 800, "{kind}: no end");
        }
    }
    println!(
        "crash points tried: {points} (hot zones recovered by cryptsetup: {by_cryptsetup}, \
         headers restored from the temporary file: {restored})"
    );
    assert!(points > 30 && by_cryptsetup > 0 && restored > 0);
}
