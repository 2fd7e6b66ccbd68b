//! Damaged and mismatched headers, action by action, against real cryptsetup 2.6.1: the same
//! standard output, standard error (device paths aside), exit code and resulting bytes.
//!
//! Inputs: cryptsetup's five `evil_hdr-*` LUKS1 images (from its test suite), a LUKS2 image
//! with both copies' checksums broken, one with only the primary's broken, and valid LUKS1 and
//! LUKS2 images read with the other `--type`. Actions: the header readers and writers
//! (`luksDump`, `isLuks` with and without `-v`, `luksUUID`, `luksHeaderBackup`, `config`,
//! `token export`, `luksConvertKey`, `luksAddKey`, `luksKillSlot`, `erase`, `convert`,
//! `open --test-passphrase`) and `repair` quiet, plain and verbose. Each tool runs on its own
//! copy of the image, in a directory of the same name, so that paths in messages match.

mod common;

use common::*;
use std::path::Path;

/// Everything a run shows: exit code, standard output and standard error.
fn outcome(r: &Run) -> String {
    format!(
        "rc={}\n--stdout--\n{}--stderr--\n{}",
        r.code, r.stdout, r.stderr
    )
}

/// Run `args` (with `IMG` standing for the image) through both tools, each on a fresh copy
/// of `src` at the same relative path, from their own working directories; compare what they
/// show and, when `bytes` is set, the images afterwards.
fn compare(src: &Path, case: &str, args: &[&str], stdin: &[u8], bytes: bool) {
    let root = tmp();
    let mut seen = Vec::new();
    for tool in ["cryptsetup", "lukskit"] {
        let dir = root.path().join(tool);
        std::fs::create_dir_all(dir.join("d")).unwrap();
        std::fs::copy(src, dir.join("d/img")).unwrap();
        let argv: Vec<String> = args
            .iter()
            .map(|a| a.replace("IMG", "d/img").replace("OUT", "d/out"))
            .collect();
        let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
        let prog = if tool == "cryptsetup" {
            cryptsetup_path().expect("checked by the caller")
        } else {
            env!("CARGO_BIN_EXE_lukskit").into()
        };
        let out = std::process::Command::new(prog)
            .args(&argv)
            .current_dir(&dir)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .and_then(|mut c| {
                use std::io::Write;
                // A tool that exits without reading its input closes the pipe early.
                let _ = c.stdin.take().unwrap().write_all(stdin);
                c.wait_with_output()
            })
            .expect("run");
        let run = Run {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        };
        let image = std::fs::read(dir.join("d/img")).unwrap();
        seen.push((outcome(&run), image));
    }
    assert_eq!(
        seen[1].0,
        seen[0].0,
        "{case}: `{}`: lukskit (left) differs from cryptsetup (right)",
        args.join(" ")
    );
    if bytes {
        assert!(
            seen[0].1 == seen[1].1,
            "{case}: `{}`: the images differ afterwards",
            args.join(" ")
        );
    }
}

/// Actions that read or update a header, none of which may succeed on these images.
const READERS: &[&[&str]] = &[
    &["luksDump", "IMG"],
    &["luksDump", "--dump-json-metadata", "IMG"],
    &["isLuks", "IMG"],
    &["isLuks", "-v", "IMG"],
    &["luksUUID", "IMG"],
    &["luksHeaderBackup", "IMG", "--header-backup-file", "OUT"],
    &["config", "--label", "x", "IMG"],
    &["token", "export", "--token-id", "0", "IMG"],
    &["luksConvertKey", "-q", "IMG", "-d", "-"],
    &["luksAddKey", "-q", "IMG", "-d", "-"],
    &["luksKillSlot", "-q", "IMG", "1", "-d", "-"],
    &["erase", "-q", "IMG"],
    &["convert", "-q", "--type", "luks2", "IMG"],
    &["open", "--test-passphrase", "IMG", "-d", "-"],
    &["-v", "open", "--test-passphrase", "IMG", "-d", "-"],
];

/// `repair` as scripts run it.
const REPAIRS: &[&[&str]] = &[
    &["repair", "-q", "IMG"],
    &["repair", "IMG"],
    &["repair", "-v", "IMG"],
];

#[test]
fn evil_luks1_headers_like_cryptsetup() {
    if !have_cryptsetup("evil_luks1_headers_like_cryptsetup") {
        return;
    }
    let Some(td) = need_testdata("evil_luks1_headers_like_cryptsetup") else {
        return;
    };
    let dir = tmp();
    for stem in [
        "keyslot_overlap",
        "luks_hdr_damage",
        "payload_overwrite",
        "small_luks_device",
        "stripes_payload_dmg",
    ] {
        let img = unxz(&td, &format!("evil_hdr-{stem}.xz"), dir.path(), stem);
        for args in READERS {
            compare(&img, stem, args, b"x", true);
        }
        // The LUKS1 repairs are deterministic (wiped salts): byte-identical results.
        for args in REPAIRS {
            compare(&img, stem, args, b"", true);
        }
    }
}

/// Break the checksum of the LUKS2 copy at `offset` (its first stored checksum byte).
fn break_checksum(path: &Path, offset: u64) {
    use std::os::unix::fs::FileExt;
    let f = std::fs::OpenOptions::new().write(true).open(path).unwrap();
    f.write_all_at(b"XX", offset + 0x1c0).unwrap();
}

#[test]
fn damaged_and_mismatched_luks2_like_cryptsetup() {
    if !have_cryptsetup("damaged_and_mismatched_luks2_like_cryptsetup") {
        return;
    }
    let dir = tmp();
    let pw = write_file(dir.path(), "pw", b"x");
    let luks2 = sparse(dir.path(), "luks2.img", 20 << 20);
    let fast = ["--pbkdf", "pbkdf2", "--pbkdf-force-iterations", "1000"];
    let mut fmt = vec!["luksFormat", "-q", "--type", "luks2", &luks2, "-d", &pw];
    fmt.extend_from_slice(&fast);
    cryptsetup(&fmt, b"").unwrap().ok("luksFormat luks2");
    let luks1 = sparse(dir.path(), "luks1.img", 4 << 20);
    let mut fmt = vec!["luksFormat", "-q", "--type", "luks1", &luks1, "-d", &pw];
    fmt.extend_from_slice(&fast[2..]);
    cryptsetup(&fmt, b"").unwrap().ok("luksFormat luks1");

    // Both copies broken: no valid LUKS2 header.
    let both = dir.path().join("both.img");
    std::fs::copy(&luks2, &both).unwrap();
    break_checksum(&both, 0);
    break_checksum(&both, 16384);
    for args in READERS.iter().chain(REPAIRS) {
        compare(&both, "both copies broken", args, b"x", true);
    }

    // Only the primary broken: every action works from the secondary; repair restores the
    // primary silently (the rewritten copy gets a fresh salt, so the bytes are not compared;
    // that it is restored is checked below).
    let primary = dir.path().join("primary.img");
    std::fs::copy(&luks2, &primary).unwrap();
    break_checksum(&primary, 0);
    for args in [
        &["luksDump", "--dump-json-metadata", "IMG"][..],
        &["isLuks", "-v", "IMG"],
        &["luksUUID", "IMG"],
    ]
    .iter()
    .chain(REPAIRS)
    {
        compare(&primary, "primary broken", args, b"x", false);
    }
    let fixed = dir.path().join("fixed.img");
    std::fs::copy(&primary, &fixed).unwrap();
    lukskit(&["repair", "-q", fixed.to_str().unwrap()], b"").ok("repair");
    let after = std::fs::read(&fixed).unwrap();
    let before = std::fs::read(&primary).unwrap();
    assert_ne!(
        after[..4096],
        before[..4096],
        "the primary was not rewritten"
    );
    // cryptsetup finds nothing wrong with the repaired primary alone (secondary broken).
    break_checksum(&fixed, 16384);
    cryptsetup(&["luksDump", fixed.to_str().unwrap()], b"")
        .unwrap()
        .ok("cryptsetup reads the restored primary");

    // Valid headers read as the other version.
    for (img, other) in [(&luks1, "luks2"), (&luks2, "luks1")] {
        for action in [
            &["luksDump", "IMG"][..],
            &["isLuks", "-v", "IMG"],
            &["open", "--test-passphrase", "IMG", "-d", "-"],
        ] {
            let mut args = vec!["--type", other];
            args.extend_from_slice(action);
            compare(
                Path::new(img),
                &format!("--type {other}"),
                &args,
                b"x",
                true,
            );
        }
    }
    // LUKS2-only actions on a valid LUKS1 header.
    for args in [
        &["config", "--label", "x", "IMG"][..],
        &["token", "export", "--token-id", "0", "IMG"],
        &["luksConvertKey", "-q", "IMG", "-d", "-"],
    ] {
        compare(Path::new(&luks1), "valid LUKS1", args, b"x", true);
    }
}
