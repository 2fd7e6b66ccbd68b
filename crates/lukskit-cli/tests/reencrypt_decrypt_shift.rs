//! Decryption of a device whose LUKS2 header is at its start (`reencrypt --decrypt --header
//! FILE`, the header moves out to FILE and the data down over the old header area),
//! against real cryptsetup 2.6.1 on the host (offline, `--force-offline-reencrypt`):
//!
//! * lukskit's `--init-only` writes what cryptsetup's writes (segments, backup segments,
//!   the `datashift-checksum`/`-journal` keyslot, `online-reencrypt-v3`, the same device
//!   bytes) and each tool finishes the other's; `luksDump` prints the same;
//! * cryptsetup killed (SIGKILL injected by strace at its writes and syncs) is finished by
//!   lukskit;
//! * the case: an ext4 image encrypted in place by lukskit and decrypted back in
//!   place by lukskit, its files intact, and by cryptsetup on a copy to the same bytes;
//! * crash injection at every write and sync of a lukskit decryption, recovered by lukskit
//!   (and in a sample by cryptsetup): plaintext intact.

mod common;
use common::*;
use sha2::{Digest, Sha256};
use std::path::Path;
use std::process::Command;

const FAST: [&str; 4] = ["--pbkdf", "pbkdf2", "--pbkdf-force-iterations", "1000"];
const CRASH_STATUS: i32 = 86;
const M: usize = 1 << 20;

fn sha(data: &[u8]) -> String {
    hex::encode(Sha256::digest(data))
}

fn cs(args: &[&str]) -> Run {
    cryptsetup(args, b"").expect("cryptsetup")
}

/// A LUKS2 image of `size` bytes of random-looking content formatted by cryptsetup.
fn format(dir: &Path, name: &str, size: usize, kf: &str, extra: &[&str]) -> String {
    let img = dir.join(name).to_str().unwrap().to_string();
    std::fs::write(&img, pattern(size, size as u64 ^ 5)).unwrap();
    let mut a = vec!["luksFormat", "-q", "--type", "luks2", "-d", kf];
    a.extend_from_slice(&FAST);
    a.extend_from_slice(extra);
    a.push(&img);
    cs(&a).ok("luksFormat");
    img
}

/// The plaintext of a volume as lukskit reads it (`image decrypt`).
fn read_plain(dir: &Path, img: &str, hdr: Option<&str>, kf: &str) -> Vec<u8> {
    let out = dir.join("out.plain");
    let _ = std::fs::remove_file(&out);
    let mut a = vec!["image", "decrypt", "-d", kf];
    if let Some(h) = hdr {
        a.extend_from_slice(&["--header", h]);
    }
    a.extend_from_slice(&[img, out.to_str().unwrap()]);
    lukskit(&a, b"").ok("image decrypt");
    std::fs::read(out).unwrap()
}

fn decrypt_args<'a>(kf: &'a str, hdr: &'a str, extra: &[&'a str], img: &'a str) -> Vec<&'a str> {
    let mut a = vec![
        "reencrypt",
        "-q",
        "--decrypt",
        "--force-offline-reencrypt",
        "--header",
        hdr,
        "-d",
        kf,
    ];
    a.extend_from_slice(extra);
    a.push(img);
    a
}

fn resume_args<'a>(kf: &'a str, hdr: &'a str, img: &'a str) -> Vec<&'a str> {
    vec![
        "reencrypt",
        "-q",
        "--resume-only",
        "--force-offline-reencrypt",
        "--header",
        hdr,
        "-d",
        kf,
        img,
    ]
}

/// JSON metadata without salts, digests and iterations.
fn layout(hdr: &str) -> serde_json::Value {
    let mut v = json_dump(hdr);
    for k in ["keyslots", "digests"] {
        for (_, o) in v[k].as_object_mut().unwrap().iter_mut() {
            let o = o.as_object_mut().unwrap();
            for f in ["salt", "digest", "kdf", "af", "iterations"] {
                o.remove(f);
            }
        }
    }
    v
}

/// Done: the header holds one linear segment at 0 and nothing else, the device holds the
/// plaintext from byte 0, the old ciphertext beyond it is gone.
fn check_done(img: &str, hdr: &str, plain: &[u8], before: &[u8], what: &str) {
    let v = json_dump(hdr);
    assert!(v["config"].get("requirements").is_none(), "{what}: {v}");
    assert_eq!(v["segments"].as_object().unwrap().len(), 1, "{what}: {v}");
    assert_eq!(v["segments"]["0"]["type"], "linear", "{what}");
    assert_eq!(v["segments"]["0"]["offset"], "0", "{what}");
    assert!(v["keyslots"].as_object().unwrap().is_empty(), "{what}: {v}");
    let got = std::fs::read(img).unwrap();
    assert_eq!(
        sha(&got[..plain.len()]),
        sha(plain),
        "{what}: plaintext at the start of the device"
    );
    let tail = plain.len()..got.len();
    assert_ne!(
        sha(&got[tail.clone()]),
        sha(&before[tail]),
        "{what}: the old ciphertext beyond the plaintext was left"
    );
}

/// lukskit's and cryptsetup's `--init-only` write the same metadata and the same device
/// bytes; each tool finishes the other's initialization; the results are byte-identical.
/// Cases: the default (16 MiB offset, moved segment 16 MiB, 3 hot zones), a 4 MiB offset
/// with an uneven last hot zone, and `--resilience journal` with a 1 MiB moved segment.
#[test]
fn init_matches_cryptsetup_and_resumes_both_ways() {
    if !have_cryptsetup("init_matches_cryptsetup_and_resumes_both_ways") {
        return;
    }
    let t = tmp();
    let dir = t.path();
    let kf = write_file(dir, "kf", b"secret passphrase");
    for (size, fmt_extra, extra) in [
        (64 * M, &[][..], &[][..]),
        (
            31 * M,
            &["--offset", "8192", "--sector-size", "512"][..],
            &[][..],
        ),
        (
            40 * M,
            &["--offset", "8192"][..],
            &["--resilience", "journal", "--hotzone-size", "1M"][..],
        ),
    ] {
        let base = format(dir, "base.img", size, &kf, fmt_extra);
        let before = std::fs::read(&base).unwrap();
        let plain = read_plain(dir, &base, None, &kf);
        let mut layouts = Vec::new();
        let mut results = Vec::new();
        for (first, second) in [("lukskit", "cryptsetup"), ("cryptsetup", "lukskit")] {
            let what = format!("{size} {extra:?}: {first} init, {second} resumes");
            let img = dir
                .join(format!("{first}.img"))
                .to_str()
                .unwrap()
                .to_string();
            let hdr = dir
                .join(format!("{first}.hdr"))
                .to_str()
                .unwrap()
                .to_string();
            let _ = std::fs::remove_file(&hdr);
            std::fs::copy(&base, &img).unwrap();
            let mut e = vec!["--init-only"];
            e.extend_from_slice(extra);
            let args = decrypt_args(&kf, &hdr, &e, &img);
            if first == "lukskit" {
                lukskit(&args, b"").ok(&what);
            } else {
                cs(&args).ok(&what);
            }
            assert!(in_reencryption(&hdr), "{what}");
            assert!(json_dump(&hdr)["config"]["requirements"]["mandatory"]
                .as_array()
                .unwrap()
                .contains(&"online-reencrypt-v3".into()));
            assert_eq!(
                lukskit(&["luksDump", &hdr], b"").ok("luksDump").stdout,
                cs(&["luksDump", &hdr]).stdout,
                "{what}: luksDump"
            );
            assert!(
                cs(&["isLuks", &img]).code != 0,
                "{what}: signature left on the device"
            );
            layouts.push((layout(&hdr), std::fs::read(&img).unwrap()));
            let r = resume_args(&kf, &hdr, &img);
            if second == "lukskit" {
                lukskit(&r, b"").ok(&what);
            } else {
                cs(&r).ok(&what);
            }
            check_done(&img, &hdr, &plain, &before, &what);
            results.push(std::fs::read(&img).unwrap()[..plain.len()].to_vec());
        }
        assert_eq!(layouts[0].0, layouts[1].0, "{size}: metadata differs");
        assert!(layouts[0].1 == layouts[1].1, "{size}: device bytes differ");
        assert!(results[0] == results[1], "{size}: results differ");
    }
}

/// cryptsetup killed by SIGKILL (injected by strace) at one of its writes or data syncs of
/// the run, then finished by lukskit: the plaintext is intact.
#[test]
fn cryptsetup_killed_then_lukskit_finishes() {
    if !have_cryptsetup("cryptsetup_killed_then_lukskit_finishes") {
        return;
    }
    if Command::new("strace").arg("-V").output().is_err() {
        skip_or_fail(
            "cryptsetup_killed_then_lukskit_finishes",
            "strace is not installed (apt-get install strace)",
        );
        return;
    }
    let t = tmp();
    let dir = t.path();
    let kf = write_file(dir, "kf", b"secret passphrase");
    let base = format(dir, "base.img", 40 * M, &kf, &["--offset", "8192"]);
    let before = std::fs::read(&base).unwrap();
    let plain = read_plain(dir, &base, None, &kf);
    let cs_bin = cryptsetup_path().unwrap();
    let (mut crashed, mut hot) = (0, 0);
    for (call, when) in [
        ("fdatasync", 1),
        ("fdatasync", 4),
        ("fdatasync", 9),
        ("write", 9),
        ("write", 40),
        ("write", 71),
        ("write", 100),
    ] {
        let what = format!("cryptsetup killed at {call} #{when}");
        let img = dir.join("k.img").to_str().unwrap().to_string();
        let hdr = dir.join("k.hdr").to_str().unwrap().to_string();
        let _ = std::fs::remove_file(&hdr);
        std::fs::copy(&base, &img).unwrap();
        // Initialized by cryptsetup, then its run is killed.
        cs(&decrypt_args(&kf, &hdr, &["--init-only"], &img)).ok(&what);
        let inject = format!("inject={call}:signal=SIGKILL:when={when}");
        let mut a: Vec<String> = vec![
            "-f".into(),
            "-o".into(),
            "/dev/null".into(),
            "-e".into(),
            format!("trace={call}"),
            "-e".into(),
            inject,
            cs_bin.to_str().unwrap().into(),
        ];
        a.extend(resume_args(&kf, &hdr, &img).iter().map(|s| s.to_string()));
        let o = Command::new("strace").args(&a).output().unwrap();
        if o.status.success() {
            check_done(&img, &hdr, &plain, &before, &what);
            continue;
        }
        crashed += 1;
        if cs(&["luksDump", &hdr]).stdout.contains("in-reencryption") {
            hot += 1;
        }
        lukskit(&resume_args(&kf, &hdr, &img), b"").ok(&format!("{what}: lukskit resume"));
        check_done(&img, &hdr, &plain, &before, &what);
    }
    println!("cryptsetup runs killed: {crashed} (inside a hot zone: {hot})");
    assert!(crashed >= 5 && hot >= 2, "{crashed} {hot}");
}

/// The "done when": an unencrypted ext4 image with files is encrypted in place by
/// lukskit (`--encrypt --reduce-device-size`), then decrypted back in place by lukskit
/// (`--decrypt --header FILE`): the same file system with the same files; cryptsetup's
/// decryption of a copy of lukskit's encryption gives the same bytes.
#[test]
fn ext4_encrypted_and_decrypted_back_in_place_by_lukskit() {
    let test = "ext4_encrypted_and_decrypted_back_in_place_by_lukskit";
    if !have_cryptsetup(test) || !have_e2fs(test) {
        return;
    }
    let t = tmp();
    let dir = t.path();
    let kf = write_file(dir, "kf", b"secret passphrase");
    let src = dir.join("src");
    std::fs::create_dir_all(src.join("sub")).unwrap();
    let files = [
        ("big.bin", pattern(5 * M + 123, 1)),
        ("sub/small.txt", b"hello from ext4\n".to_vec()),
        ("sub/mid.bin", pattern(700_000, 2)),
    ];
    for (name, data) in &files {
        std::fs::write(src.join(name), data).unwrap();
    }
    let img = dir.join("fs.img").to_str().unwrap().to_string();
    std::fs::write(&img, vec![0u8; 64 * M]).unwrap();
    mkfs_ext4_from(&img, &src, "48M");
    let fs_before = std::fs::read(&img).unwrap()[..48 * M].to_vec();

    let mut enc = vec![
        "reencrypt",
        "-q",
        "--encrypt",
        "--force-offline-reencrypt",
        "--reduce-device-size",
        "16M",
        "-d",
        &kf,
    ];
    enc.extend_from_slice(&FAST);
    enc.push(&img);
    let r = Command::new(env!("CARGO_BIN_EXE_lukskit"))
        .current_dir(dir)
        .args(&enc)
        .output()
        .unwrap();
    assert!(r.status.success(), "lukskit encrypt: {r:?}");
    assert!(cs(&["isLuks", &img]).code == 0, "not encrypted");
    let copy = dir.join("copy.img").to_str().unwrap().to_string();
    std::fs::copy(&img, &copy).unwrap();
    let encrypted = std::fs::read(&img).unwrap();
    let plain = read_plain(dir, &img, None, &kf);
    assert_eq!(sha(&plain[..48 * M]), sha(&fs_before), "encryption");

    // lukskit decrypts it back in place.
    let hdr = dir.join("lk.hdr").to_str().unwrap().to_string();
    lukskit(&decrypt_args(&kf, &hdr, &[], &img), b"").ok("lukskit decrypt");
    check_done(&img, &hdr, &plain, &encrypted, "lukskit decrypt");
    fsck(&img, "decrypted by lukskit");
    for (name, data) in &files {
        let got = ext4_file(&img, name, &dir.join("f.out"));
        assert_eq!(sha(&got), sha(data), "{name} after lukskit's decryption");
    }
    // cryptsetup decrypts the copy: the same bytes.
    let hdr2 = dir.join("cs.hdr").to_str().unwrap().to_string();
    cs(&decrypt_args(&kf, &hdr2, &[], &copy)).ok("cryptsetup decrypt");
    let a = std::fs::read(&img).unwrap();
    let b = std::fs::read(&copy).unwrap();
    assert!(
        a[..plain.len()] == b[..plain.len()],
        "lukskit's and cryptsetup's decryptions differ"
    );
}

/// Crash injection at every write and every sync of a lukskit decryption with a data shift
/// (export of the header, signature wipe, move of the first segment, the initialization
/// commit, every hot zone, the moved segment, the final cleanup), then recovery: before the
/// commit the plaintext is intact through whichever header is valid; after it lukskit
/// resumes (in a sample cryptsetup does): plaintext intact.
#[test]
fn crash_at_every_write_and_sync_of_a_decryption() {
    if !have_cryptsetup("crash_at_every_write_and_sync_of_a_decryption") {
        return;
    }
    let t = tmp();
    let dir = t.path();
    let kf = write_file(dir, "kf", b"secret passphrase");
    // 4 MiB data offset: 20 MiB of data, the moved segment and 4 hot zones of 4 MiB.
    let base = format(dir, "base.img", 24 * M, &kf, &["--offset", "8192"]);
    let before = std::fs::read(&base).unwrap();
    let plain = read_plain(dir, &base, None, &kf);
    let img = dir.join("w.img").to_str().unwrap().to_string();
    let hdr = dir.join("w.hdr").to_str().unwrap().to_string();
    let (mut points, mut by_cryptsetup, mut before_commit) = (0, 0, 0);
    for kind in ["write", "sync"] {
        let mut n = 1;
        loop {
            std::fs::copy(&base, &img).unwrap();
            let _ = std::fs::remove_file(&hdr);
            let spec = format!("{kind}:{n}");
            let what = format!("crash at {spec}");
            n += 1;
            assert!(n < 400, "{kind}: no end");
            // Forced iterations: no PBKDF2 benchmark for the exported header's digest, which
            // took most of each run's second (what a crash leaves does not depend on it).
            let r = lukskit_env(
                &decrypt_args(&kf, &hdr, &FAST, &img),
                b"",
                &[("LUKSKIT_CRASH_AT", &spec)],
            );
            if r.code == 0 {
                check_done(&img, &hdr, &plain, &before, &what);
                break;
            }
            assert_eq!(r.code, CRASH_STATUS, "{what}: {}", r.stderr);
            points += 1;
            let committed = std::fs::metadata(&hdr).is_ok()
                && cs(&["isLuks", &hdr]).code == 0
                && in_reencryption(&hdr);
            let finished = !committed
                && std::fs::metadata(&hdr).is_ok()
                && cs(&["isLuks", &hdr]).code == 0
                && json_dump(&hdr)["segments"]["0"]["type"] == "linear";
            if finished {
                // Crashed in the final cleanup, after the last metadata write.
                check_done(&img, &hdr, &plain, &before, &what);
                continue;
            }
            if !committed {
                before_commit += 1;
                // The old layout is intact through the device's header, or (once it was
                // wiped) through the exported one.
                let got = if cs(&["isLuks", &img]).code == 0 {
                    read_plain(dir, &img, None, &kf)
                } else {
                    read_plain(dir, &img, Some(&hdr), &kf)
                };
                assert_eq!(sha(&got), sha(&plain), "{what}: before the commit");
                continue;
            }
            let d = cs(&["luksDump", &hdr]).stdout;
            assert_eq!(
                lukskit(&["luksDump", &hdr], b"").ok("luksDump").stdout,
                d,
                "{what}: luksDump differs"
            );
            if d.contains("in-reencryption") && n % 3 == 0 {
                by_cryptsetup += 1;
                // cryptsetup recovers the hot zone with `repair`, then finishes.
                cs(&["repair", "-q", "--header", &hdr, "-d", &kf, &img])
                    .ok(&format!("{what}: cryptsetup repair"));
                assert!(
                    !cs(&["luksDump", &hdr]).stdout.contains("in-reencryption"),
                    "{what}: not recovered by cryptsetup"
                );
                if in_reencryption(&hdr) {
                    cs(&resume_args(&kf, &hdr, &img)).ok(&format!("{what}: cryptsetup resume"));
                }
            } else {
                lukskit(&resume_args(&kf, &hdr, &img), b"").ok(&format!("{what}: lukskit resume"));
            }
            check_done(&img, &hdr, &plain, &before, &what);
        }
    }
    println!(
        "crash points tried: {points} (before the commit: {before_commit}, hot zones \
         recovered by cryptsetup: {by_cryptsetup})"
    );
    assert!(points > 30 && by_cryptsetup > 0 && before_commit > 0);
}

/// `--resilience` at the resume of a decryption with a moved segment switches the moved
/// segment's protection, as cryptsetup 2.6.1 (its reencrypt keyslot update):
/// `datashift-checksum` → `datashift-journal` by lukskit, interrupted right after the switch
/// (crash injection), is what cryptsetup accepts (metadata digest made again) and finishes;
/// each tool also runs a whole resume with the switch; `--resilience datashift` is refused
/// by both with the same message (luks2-reencryption-test [34] resumes with
/// `--resilience datashift-journal`).
#[test]
fn resilience_switched_at_resume_as_cryptsetup() {
    if !have_cryptsetup("resilience_switched_at_resume_as_cryptsetup") {
        return;
    }
    let t = tmp();
    let dir = t.path();
    let kf = write_file(dir, "kf", b"secret passphrase");
    let base = format(dir, "base.img", 12 * M, &kf, &["--offset", "8192"]);
    let before = std::fs::read(&base).unwrap();
    let plain = read_plain(dir, &base, None, &kf);
    let img = dir.join("s.img").to_str().unwrap().to_string();
    let hdr = dir.join("s.hdr").to_str().unwrap().to_string();
    let init = |img: &str, hdr: &str| {
        let _ = std::fs::remove_file(hdr);
        std::fs::copy(&base, img).unwrap();
        lukskit(
            &decrypt_args(&kf, hdr, &["--init-only", "--hotzone-size", "1M"], img),
            b"",
        )
        .ok("init");
        assert_eq!(
            json_dump(hdr)["keyslots"]["1"]["area"]["type"],
            "datashift-checksum"
        );
    };
    // Refused alike.
    init(&img, &hdr);
    let mut r = resume_args(&kf, &hdr, &img);
    r.extend_from_slice(&["--resilience", "datashift"]);
    let (l, c) = (lukskit(&r, b""), cs(&r));
    assert_eq!((l.code, l.stderr.trim()), (c.code, c.stderr.trim()));
    assert!(c.code != 0);
    // A whole resume with the switch, by each tool.
    for tool in ["lukskit", "cryptsetup"] {
        init(&img, &hdr);
        let mut r = resume_args(&kf, &hdr, &img);
        r.extend_from_slice(&["--resilience", "datashift-journal"]);
        if tool == "lukskit" {
            lukskit(&r, b"").ok(tool);
        } else {
            cs(&r).ok(tool);
        }
        check_done(&img, &hdr, &plain, &before, tool);
    }
    // lukskit interrupted after the switch: cryptsetup reads and finishes it.
    let mut caught = false;
    for n in 1..40 {
        init(&img, &hdr);
        let mut r = resume_args(&kf, &hdr, &img);
        r.extend_from_slice(&["--resilience", "journal"]);
        let spec = format!("sync:{n}");
        let out = lukskit_env(&r, b"", &[("LUKSKIT_CRASH_AT", &spec)]);
        if out.code == 0 {
            break;
        }
        assert_eq!(out.code, CRASH_STATUS, "{spec}: {}", out.stderr);
        let v = json_dump(&hdr);
        if !in_reencryption(&hdr) || v["keyslots"]["1"]["area"]["type"] != "datashift-journal" {
            continue;
        }
        let d = cs(&["luksDump", &hdr]).stdout;
        assert_eq!(lukskit(&["luksDump", &hdr], b"").ok("luksDump").stdout, d);
        if cs(&["luksDump", &hdr]).stdout.contains("in-reencryption") {
            cs(&["repair", "-q", "--header", &hdr, "-d", &kf, &img]).ok("cryptsetup repair");
        }
        cs(&resume_args(&kf, &hdr, &img)).ok(&format!("{spec}: cryptsetup resumes"));
        check_done(&img, &hdr, &plain, &before, &spec);
        caught = true;
        break;
    }
    assert!(caught, "no crash point after the switch was found");
}

/// A decryption of a device with its header at the start, asked without `--header`: refused
/// with cryptsetup's words and exit code, before any check of an active mapping (without
/// `--force-offline-reencrypt` on an image file), the device left as it was. (The device as
/// its own `--header`: tests/reencrypt.rs.)
#[test]
fn decryption_without_a_header_file_refused_as_by_cryptsetup() {
    if !have_cryptsetup("decryption_without_a_header_file_refused_as_by_cryptsetup") {
        return;
    }
    let t = tmp();
    let dir = t.path();
    let kf = write_file(dir, "kf", b"secret passphrase");
    let img = format(dir, "base.img", 32 * M, &kf, &[]);
    let before = std::fs::read(&img).unwrap();
    let args = ["reencrypt", "--decrypt", "-q", "-d", &kf, &img];
    let words = "LUKS2 decryption requires --header option.\n";
    let c = cs(&args);
    let l = lukskit(&args, b"");
    assert_eq!((c.code, c.stderr.as_str()), (1, words), "cryptsetup");
    assert_eq!((l.code, l.stderr.as_str()), (1, words), "lukskit");
    assert!(std::fs::read(&img).unwrap() == before, "the device changed");
}

/// `--reduce-device-size` with `--decrypt`, as cryptsetup 2.6.1: where the header moves out
/// to a new FILE it is ignored (both tools leave the same plaintext and the same header as
/// without it); on a detached header (data offset 0) it fails with cryptsetup's words and
/// exit code, and lukskit leaves the header and the device as they were (cryptsetup leaves
/// the start of a re-encryption in the header).
#[test]
fn reduce_device_size_with_decrypt_as_cryptsetup() {
    if !have_cryptsetup("reduce_device_size_with_decrypt_as_cryptsetup") {
        return;
    }
    let t = tmp();
    let dir = t.path();
    let kf = write_file(dir, "kf", b"secret passphrase");
    let base = format(dir, "base.img", 40 * M, &kf, &[]);
    let plain = read_plain(dir, &base, None, &kf);
    let before = std::fs::read(&base).unwrap();
    let mut headers = Vec::new();
    for (tool, extra) in [
        ("cryptsetup", &["--reduce-device-size", "8M"][..]),
        ("lukskit", &["--reduce-device-size", "8M"][..]),
        ("lukskit", &[][..]),
    ] {
        let img = dir.join("w.img").to_str().unwrap().to_string();
        let hdr = dir.join(format!("h{}.img", headers.len()));
        let hdr = hdr.to_str().unwrap().to_string();
        std::fs::copy(&base, &img).unwrap();
        let args = decrypt_args(&kf, &hdr, extra, &img);
        if tool == "cryptsetup" {
            cs(&args).ok("cryptsetup decrypt");
        } else {
            lukskit(&args, b"").ok(&format!("lukskit decrypt {extra:?}"));
        }
        check_done(&img, &hdr, &plain, &before, &format!("{tool} {extra:?}"));
        headers.push(layout(&hdr));
    }
    assert_eq!(
        headers[1], headers[0],
        "lukskit's header differs from cryptsetup's"
    );
    assert_eq!(headers[2], headers[0], "the option changed the header");

    // A detached header with data offset 0.
    let img = dir.join("d.img").to_str().unwrap().to_string();
    let hdr = dir.join("dh.img").to_str().unwrap().to_string();
    std::fs::write(&img, pattern(32 * M, 9)).unwrap();
    let mut a = vec!["luksFormat", "-q", "--type", "luks2", "-d", &kf];
    a.extend_from_slice(&FAST);
    a.extend_from_slice(&["--header", &hdr, "--offset", "0", &img]);
    cs(&a).ok("luksFormat --header");
    let (img0, hdr0) = (std::fs::read(&img).unwrap(), std::fs::read(&hdr).unwrap());
    let args = decrypt_args(&kf, &hdr, &["--reduce-device-size", "8M"], &img);
    let l = lukskit(&args, b"");
    assert_eq!(
        (l.code, l.stderr.as_str()),
        (1, "Failed to write reencryption resilience metadata.\n"),
        "lukskit"
    );
    assert!(
        std::fs::read(&img).unwrap() == img0,
        "lukskit wrote the device"
    );
    assert!(
        std::fs::read(&hdr).unwrap() == hdr0,
        "lukskit wrote the header"
    );
    let c = cs(&args);
    assert_eq!(
        (c.code, c.stderr.as_str()),
        (l.code, l.stderr.as_str()),
        "cryptsetup"
    );
}
