//! LUKS1 re-encryption (cryptsetup 2.6's legacy algorithm with its `LUKS-<uuid>.log/.org/.new`
//! files in the current directory), on image files:
//!
//! * every mode keeps the plaintext (new key, cipher and key size, `--reduce-device-size`,
//!   `--keep-key` with a new hash and iteration count, `--encrypt --type luks1` in place and
//!   with a detached header, `--decrypt`), and real cryptsetup opens and dumps the results;
//! * a crash at every write and every sync of a run is recovered by the next run;
//! * a run started by real cryptsetup is finished by lukskit: on this host cryptsetup writes
//!   its log and headers, marks the device and then stops where it needs device-mapper for
//!   its temporary mappings; lukskit resumes from its files;
//! * a run lukskit stopped is taken up by real cryptsetup: it accepts lukskit's log and
//!   headers (and, where it has device-mapper, finishes the run).
//!
//! Resuming each other's runs with real data in flight, and cryptsetup's own script, run in
//! the reference VM (`refvm_upstream`, reencryption-compat-test).

mod common;
use common::*;
use std::path::Path;
use std::process::{Command, Stdio};

const PW: &[u8] = b"93R4P4pIqAH8\n";

/// Run a tool in `dir` (the legacy files go into the current directory).
fn run_in(tool: &Path, dir: &Path, args: &[&str], stdin: &[u8], env: &[(&str, &str)]) -> Run {
    use std::io::Write;
    let mut cmd = Command::new(tool);
    cmd.args(args)
        .current_dir(dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in env {
        cmd.env(k, v);
    }
    let mut child = cmd.spawn().expect("spawn");
    let _ = child.stdin.take().unwrap().write_all(stdin);
    let out = child.wait_with_output().unwrap();
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

fn lk(dir: &Path, args: &[&str], stdin: &[u8]) -> Run {
    run_in(
        Path::new(env!("CARGO_BIN_EXE_lukskit")),
        dir,
        args,
        stdin,
        &[],
    )
}

fn plaintext(dir: &Path, img: &str, header: Option<&str>) -> Vec<u8> {
    let out = dir.join("plain.out");
    let _ = std::fs::remove_file(&out);
    let mut a = vec!["image", "decrypt", img, out.to_str().unwrap()];
    if let Some(h) = header {
        a.extend(["--header", h]);
    }
    lk(dir, &a, PW).ok("image decrypt");
    std::fs::read(&out).unwrap()
}

fn legacy_files(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("LUKS-"))
        .collect();
    v.sort();
    v
}

fn format_luks1(dir: &Path, img: &str, extra: &[&str]) {
    let mut a = vec!["luksFormat", "-q", "--type", "luks1", img];
    a.extend_from_slice(&FAST);
    a.extend_from_slice(extra);
    lk(dir, &a, PW).ok("luksFormat");
}

fn reenc(dir: &Path, img: &str, extra: &[&str]) -> Run {
    let mut a = vec!["reencrypt", "-q", img];
    a.extend_from_slice(&FAST);
    a.extend_from_slice(extra);
    lk(dir, &a, PW)
}

fn cryptsetup_opens(img: &str, header: Option<&str>) -> bool {
    let mut a = vec!["open", "--test-passphrase", img];
    if let Some(h) = header {
        a.extend(["--header", h]);
    }
    cryptsetup(&a, PW).is_some_and(|r| r.code == 0)
}

#[test]
fn luks1_reencrypt_modes_keep_the_plaintext() {
    if !have_cryptsetup("luks1_reencrypt_modes_keep_the_plaintext") {
        return;
    }
    let d = tmp();
    let dir = d.path();
    let img = write_file(dir, "img", &pattern(8 << 20, 1));
    format_luks1(
        dir,
        &img,
        &[
            "-s",
            "128",
            "-c",
            "aes-cbc-plain",
            "--align-payload",
            "4096",
        ],
    );
    let p0 = plaintext(dir, &img, None);
    let dump = |f: &str| {
        cryptsetup(&["luksDump", &img], b"")
            .unwrap()
            .stdout
            .lines()
            .find(|l| l.starts_with(f))
            .map(|l| l.split_whitespace().last().unwrap_or("").to_string())
            .unwrap_or_default()
    };
    let digest0 = cryptsetup(&["luksDump", &img], b"").unwrap().stdout;
    reenc(dir, &img, &[]).ok("reencrypt");
    assert_eq!(plaintext(dir, &img, None), p0);
    assert_ne!(
        cryptsetup(&["luksDump", &img], b"").unwrap().stdout,
        digest0,
        "a new volume key (new digest)"
    );
    reenc(
        dir,
        &img,
        &["-s", "256", "-c", "aes-xts-plain64", "-h", "sha256"],
    )
    .ok("cipher");
    assert_eq!(plaintext(dir, &img, None), p0);
    assert_eq!(dump("Cipher mode:"), "xts-plain64");
    assert_eq!(dump("MK bits:"), "256");
    assert!(cryptsetup_opens(&img, None));
    assert!(legacy_files(dir).is_empty(), "{:?}", legacy_files(dir));

    // A data shift: the data offset grows by 1024 sectors, the data keeps its place in the
    // mapping (the tail that no longer fits is gone).
    reenc(dir, &img, &["--reduce-device-size", "1024S"]).ok("reduce");
    assert_eq!(dump("Payload offset:"), "5120");
    let p1 = plaintext(dir, &img, None);
    assert_eq!(p1[..], p0[..p1.len()]);
    assert_eq!(p1.len(), p0.len() - (512 << 10));

    // --keep-key: the keyslots only (hash, iterations); cryptsetup's LUKS1 minimum is 1000.
    let mk = dump("MK digest:");
    let r = lk(
        dir,
        &[
            "reencrypt",
            "-q",
            &img,
            "--keep-key",
            "--pbkdf-force-iterations",
            "999",
        ],
        PW,
    );
    assert_ne!(r.code, 0);
    assert!(legacy_files(dir).is_empty());
    lk(
        dir,
        &[
            "reencrypt",
            "-q",
            &img,
            "--keep-key",
            "--hash",
            "sha512",
            "--pbkdf-force-iterations",
            "1001",
        ],
        PW,
    )
    .ok("keep-key");
    assert_eq!(dump("Hash spec:"), "sha512");
    let dumped = cryptsetup(&["luksDump", &img], b"").unwrap().stdout;
    assert!(dumped.contains("Iterations:         \t1001"), "{dumped}");
    assert_eq!(plaintext(dir, &img, None), p1);
    let _ = mk;
    assert!(cryptsetup_opens(&img, None));

    // Decryption in place: the plaintext moves to the start, the rest is zeroed.
    reenc(dir, &img, &["--decrypt"]).ok("decrypt");
    let raw = std::fs::read(&img).unwrap();
    assert_eq!(raw[..p1.len()], p1[..]);
    assert!(raw[p1.len()..].iter().all(|&b| b == 0));
    assert!(legacy_files(dir).is_empty());

    // Encryption in place with a data shift, then with a detached header.
    let img2 = write_file(dir, "img2", &pattern(8 << 20, 2));
    let keep = (8 << 20) - (2 << 20);
    reenc(
        dir,
        &img2,
        &[
            "--new",
            "--type",
            "luks1",
            "--reduce-device-size",
            "4096S",
            "-c",
            "aes-cbc-essiv:sha256",
            "-s",
            "128",
        ],
    )
    .ok("encrypt");
    assert_eq!(plaintext(dir, &img2, None), pattern(8 << 20, 2)[..keep]);
    assert!(cryptsetup_opens(&img2, None));
    let img3 = write_file(dir, "img3", &pattern(4 << 20, 3));
    let hdr = dir.join("hdr").to_str().unwrap().to_string();
    reenc(
        dir,
        &img3,
        &["--encrypt", "--type", "luks1", "--header", &hdr],
    )
    .ok("encrypt hdr");
    assert_eq!(plaintext(dir, &img3, Some(&hdr)), pattern(4 << 20, 3));
    assert!(cryptsetup_opens(&img3, Some(&hdr)));
    // Without a detached header and without --reduce-device-size: refused, nothing written.
    let img4 = write_file(dir, "img4", &pattern(4 << 20, 4));
    let r = reenc(dir, &img4, &["--new", "--type", "luks1", "--header", &img4]);
    assert_eq!(r.code, 1);
    assert!(r.stderr.contains(
        "Encryption without detached header (--header) is not possible without data device \
         size reduction (--reduce-device-size)."
    ));
    assert_eq!(std::fs::read(&img4).unwrap(), pattern(4 << 20, 4));
    // Not over a LUKS device.
    let r = reenc(
        dir,
        &img2,
        &["--new", "--type", "luks1", "--reduce-device-size", "1024S"],
    );
    assert_ne!(r.code, 0);
    assert!(legacy_files(dir).is_empty(), "{:?}", legacy_files(dir));
}

#[test]
fn luks1_reencrypt_keyslots_as_cryptsetup() {
    let d = tmp();
    let dir = d.path();
    let img = sparse(dir, "img", 8 << 20);
    let key = write_file(dir, "key", b"keyfile-secret");
    format_luks1(dir, &img, &[]);
    let mut a = vec!["luksAddKey", "-q", &img, "-S", "3", key.as_str()];
    a.extend_from_slice(&FAST);
    lk(dir, &a, PW).ok("luksAddKey");
    // A key file opens one of two keyslots: cryptsetup wants -S.
    let r = reenc(dir, &img, &["-d", &key]);
    assert_eq!(r.code, 1);
    assert!(r.stderr.contains(
        "Key file can be used only with --key-slot or with exactly one key slot active."
    ));
    assert!(legacy_files(dir).is_empty());
    // -S keeps only that keyslot.
    reenc(dir, &img, &["-d", &key, "-S", "3"]).ok("-S 3");
    let dump = lk(dir, &["luksDump", &img], b"").ok("dump").stdout;
    assert!(dump.contains("Key Slot 3: ENABLED"), "{dump}");
    assert!(dump.contains("Key Slot 0: DISABLED"), "{dump}");
    // Without -S every active keyslot is asked for, in order, and kept.
    let mut a = vec!["luksAddKey", "-q", &img, "-S", "5", "-d", key.as_str()];
    a.extend_from_slice(&FAST);
    lk(dir, &a, PW).ok("luksAddKey 5");
    let mut input = b"keyfile-secret\n".to_vec();
    input.extend_from_slice(PW);
    let mut a = vec!["reencrypt", "-q", img.as_str()];
    a.extend_from_slice(&FAST);
    lk(dir, &a, &input).ok("all keyslots");
    let dump = lk(dir, &["luksDump", &img], b"").ok("dump").stdout;
    assert!(dump.contains("Key Slot 3: ENABLED") && dump.contains("Key Slot 5: ENABLED"));
    let r = reenc(dir, &img, &["-S", "8"]);
    assert_ne!(r.code, 0);
}

/// A crash (the process ends, no cleanup) before every write and every sync of a
/// re-encryption with a data shift (backward, 1 MiB blocks, the blocks overlap their
/// source): the next run finishes it and the plaintext is intact.
#[test]
fn luks1_reencrypt_crash_at_every_write_and_sync_is_recovered() {
    let d = tmp();
    let dir = d.path();
    let base = write_file(dir, "base", &pattern(6 << 20, 7));
    format_luks1(
        dir,
        &base,
        &[
            "-s",
            "256",
            "-c",
            "aes-xts-plain64",
            "--align-payload",
            "2048",
        ],
    );
    let p0 = plaintext(dir, &base, None);
    let pristine = std::fs::read(&base).unwrap();
    let img = dir.join("img").to_str().unwrap().to_string();
    let mut points = 0;
    for what in ["write", "sync"] {
        for n in 1.. {
            for f in legacy_files(dir) {
                std::fs::remove_file(dir.join(f)).unwrap();
            }
            std::fs::write(&img, &pristine).unwrap();
            let mut a = vec![
                "reencrypt",
                "-q",
                img.as_str(),
                "-B",
                "1",
                "--reduce-device-size",
                "512K",
            ];
            a.extend_from_slice(&FAST);
            let spec = format!("{what}:{n}");
            let r = run_in(
                Path::new(env!("CARGO_BIN_EXE_lukskit")),
                dir,
                &a,
                PW,
                &[("LUKSKIT_CRASH_AT", &spec)],
            );
            if r.code == 0 {
                break;
            }
            assert_eq!(r.code, 86, "{spec}: {}", r.stderr);
            points += 1;
            let r = reenc(dir, &img, &["-B", "1", "--reduce-device-size", "512K"]);
            assert_eq!(r.code, 0, "resume after {spec}: {}", r.stderr);
            let p = plaintext(dir, &img, None);
            assert_eq!(p.len(), p0.len() - (512 << 10), "after {spec}");
            assert!(
                p[..] == p0[..p.len()],
                "plaintext differs after a crash at {spec}"
            );
            assert!(
                legacy_files(dir).is_empty(),
                "{spec}: {:?}",
                legacy_files(dir)
            );
            assert!(n < 400, "runaway");
        }
    }
    eprintln!("crash points tried: {points}");
    assert!(points > 20, "only {points} crash points");
}

/// cryptsetup 2.6.1 starts a LUKS1 re-encryption (log, headers, the device marked); where
/// it has no device-mapper it stops before the data; lukskit finishes the run from its files.
#[test]
fn run_started_by_cryptsetup_is_finished_by_lukskit() {
    let Some(cs) = cryptsetup_path() else {
        have_cryptsetup("run_started_by_cryptsetup_is_finished_by_lukskit");
        return;
    };
    let d = tmp();
    let dir = d.path();
    let img = write_file(dir, "img", &pattern(8 << 20, 5));
    format_luks1(
        dir,
        &img,
        &[
            "-s",
            "128",
            "-c",
            "aes-cbc-plain",
            "--align-payload",
            "4096",
        ],
    );
    let p0 = plaintext(dir, &img, None);
    let mut a = vec![
        "reencrypt",
        "-q",
        img.as_str(),
        "-s",
        "256",
        "-c",
        "aes-xts-plain64",
    ];
    a.extend_from_slice(&FAST);
    let r = run_in(&cs, dir, &a, PW, &[]);
    if r.code == 0 {
        // cryptsetup could finish it here (device-mapper): nothing left to resume.
        assert_eq!(plaintext(dir, &img, None), p0);
        return;
    }
    assert!(
        r.stderr.contains("Activation of temporary devices failed."),
        "{}",
        r.stderr
    );
    let files = legacy_files(dir);
    assert_eq!(files.len(), 3, "{files:?}");
    let r = reenc(dir, &img, &[]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stdout.contains("exists, resuming reencryption."),
        "{}",
        r.stdout
    );
    assert_eq!(plaintext(dir, &img, None), p0);
    let dump = cryptsetup(&["luksDump", &img], b"").unwrap().stdout;
    assert!(dump.contains("xts-plain64"), "{dump}");
    assert!(cryptsetup_opens(&img, None));
    assert!(legacy_files(dir).is_empty());
}

/// A run lukskit stopped after marking the device is taken up by cryptsetup 2.6.1: it reads
/// lukskit's log ("resuming") and unlocks lukskit's new header, then either finishes (with
/// device-mapper) or stops where it needs it; lukskit's log is byte for byte cryptsetup's.
#[test]
fn run_stopped_by_lukskit_is_taken_up_by_cryptsetup() {
    let Some(cs) = cryptsetup_path() else {
        have_cryptsetup("run_stopped_by_lukskit_is_taken_up_by_cryptsetup");
        return;
    };
    let d = tmp();
    let dir = d.path();
    let img = write_file(dir, "img", &pattern(4 << 20, 6));
    format_luks1(dir, &img, &["--align-payload", "4096"]);
    let p0 = plaintext(dir, &img, None);
    let pristine = std::fs::read(&img).unwrap();
    // The first crash point after the device is marked (before any data is written).
    let mut stopped = false;
    for n in 1..200 {
        for f in legacy_files(dir) {
            std::fs::remove_file(dir.join(f)).unwrap();
        }
        std::fs::write(&img, &pristine).unwrap();
        let mut a = vec!["reencrypt", "-q", img.as_str()];
        a.extend_from_slice(&FAST);
        let spec = format!("write:{n}");
        let r = run_in(
            Path::new(env!("CARGO_BIN_EXE_lukskit")),
            dir,
            &a,
            PW,
            &[("LUKSKIT_CRASH_AT", &spec)],
        );
        assert_eq!(r.code, 86, "{spec}: {}", r.stderr);
        if std::fs::read(&img).unwrap()[4..6] == [0xde, 0xad] {
            stopped = true;
            break;
        }
    }
    assert!(stopped);
    let files = legacy_files(dir);
    let log = files.iter().find(|f| f.ends_with(".log")).unwrap();
    let uuid = &log["LUKS-".len()..log.len() - 4];
    let text = std::fs::read(dir.join(log)).unwrap();
    let want = format!(
        "# LUKS reencryption log, DO NOT EDIT OR DELETE.\nversion = 2\nUUID = {uuid}\n\
         direction = 0\nmode = 0\noffset = 0\nshift = 0\n# EOF\n"
    );
    assert_eq!(text.len(), 512);
    assert_eq!(&text[..want.len()], want.as_bytes());
    assert!(text[want.len()..].iter().all(|&b| b == 0));
    let mut a = vec!["reencrypt", "-q", img.as_str()];
    a.extend_from_slice(&FAST);
    let r = run_in(&cs, dir, &a, PW, &[]);
    assert!(
        r.stdout.contains("exists, resuming reencryption."),
        "{}",
        r.stdout
    );
    if r.code == 0 {
        assert_eq!(plaintext(dir, &img, None), p0);
    } else {
        assert!(!r.stderr.contains("Wrong log format"), "{}", r.stderr);
        assert!(!r.stderr.contains("No key available"), "{}", r.stderr);
        assert!(
            r.stderr.contains("Activation of temporary devices failed."),
            "{}",
            r.stderr
        );
        // lukskit finishes what neither could do here otherwise.
        let r = reenc(dir, &img, &[]);
        assert_eq!(r.code, 0, "{}", r.stderr);
        assert_eq!(plaintext(dir, &img, None), p0);
    }
}

/// The legacy run's files have predictable names in the current directory, which may be one
/// others can write to (issue 36, item 5): a symbolic link planted as `LUKS-<uuid>.new`,
/// `.org` or `.lukskit-journal`, or a log left there by another user, is never written
/// through. Each planted run fails, the file the link points to is unchanged, the volume
/// keeps its plaintext, and once the plant is gone a run (resumed where the device was
/// already marked) finishes.
#[test]
fn planted_links_and_other_users_files_are_never_written_through() {
    let d = tmp();
    let dir = d.path();
    let img = write_file(dir, "img", &pattern(4 << 20, 5));
    format_luks1(dir, &img, &[]);
    let p0 = plaintext(dir, &img, None);
    let uuid = lk(dir, &["luksUUID", &img], b"").ok("luksUUID").stdout;
    let uuid = uuid.trim();
    let victim = dir.join("victim");
    std::fs::write(&victim, b"root's file").unwrap();
    let unchanged = |what: &str| {
        assert_eq!(
            std::fs::read(&victim).unwrap(),
            b"root's file",
            "{what}: written through"
        );
    };
    for ext in ["new", "org", "lukskit-journal"] {
        let plant = dir.join(format!("LUKS-{uuid}.{ext}"));
        std::os::unix::fs::symlink(&victim, &plant).unwrap();
        let r = reenc(dir, &img, &[]);
        assert_ne!(
            r.code, 0,
            "{ext}: the run went through a planted link: {}",
            r.stdout
        );
        unchanged(ext);
        let _ = std::fs::remove_file(&plant);
        // Where the device was marked before the plant was met, the run resumes now.
        if !legacy_files(dir).is_empty() {
            reenc(dir, &img, &[]).ok(&format!("{ext}: resumed once the link is gone"));
        }
        assert!(
            legacy_files(dir).is_empty(),
            "{ext}: files left: {:?}",
            legacy_files(dir)
        );
        assert_eq!(plaintext(dir, &img, None), p0, "{ext}: plaintext");
    }
    // A log of another user (a short one: lukskit would start its run in it).
    let log = dir.join(format!("LUKS-{uuid}.log"));
    std::fs::write(&log, b"x").unwrap();
    std::os::unix::fs::chown(&log, Some(65534), Some(65534)).unwrap();
    let r = reenc(dir, &img, &[]);
    assert_eq!(
        (r.code, r.stderr.lines().last().unwrap_or("")),
        (1, "Cannot open reencryption log file."),
        "another user's log: {}",
        r.stderr
    );
    assert_eq!(
        std::fs::read(&log).unwrap(),
        b"x",
        "another user's log was written"
    );
    std::fs::remove_file(&log).unwrap();
    // A link as the log: refused the same way.
    std::os::unix::fs::symlink(&victim, &log).unwrap();
    let r = reenc(dir, &img, &[]);
    assert_eq!(r.code, 1, "a linked log: {}", r.stderr);
    unchanged("log");
    std::fs::remove_file(&log).unwrap();
    assert_eq!(plaintext(dir, &img, None), p0, "plaintext at the end");
}
