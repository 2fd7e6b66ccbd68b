//! `reencrypt --encrypt --header FILE --reduce-device-size S [--offset N]` (luks2-reencryption-
//! test [2]: `--header $IMG_HDR --offset 43008 --reduce-device-size 21M`), against real
//! cryptsetup 2.6.1 on the host (offline, `--force-offline-reencrypt`):
//!
//! * both tools run the same command line on the same plaintext image: same exit code, the
//!   same header shape (16 KiB metadata, keyslots area filling the rest of `S`, one crypt
//!   segment at the data offset), the same bytes left in front of the data offset, and the
//!   data from the data offset on decrypts (Python's `cryptography`, with the volume key
//!   cryptsetup reads) to the same plaintext for both;
//! * the initialization (`--init-only`) writes the metadata cryptsetup writes (segments,
//!   backup segments, `reencrypt` keyslot with resilience `datashift`, requirement), and
//!   either tool finishes the other's initialization;
//! * the header restored over the head of the device (`luksHeaderRestore`, as the upstream
//!   script does next) gives a device whose plaintext is unchanged;
//! * a re-encryption (new key) backward with a data shift and no moved segment, as
//!   luks2-reencryption-mangle-test [6] leaves it, is finished by lukskit as by cryptsetup;
//! * `luksHeaderRestore` of a backup in re-encryption, and `--keep-key` with nothing to
//!   change, as cryptsetup 2.6.1.

mod common;
use common::*;

const FAST: [&str; 4] = ["--pbkdf", "pbkdf2", "--pbkdf-force-iterations", "1000"];
const M: usize = 1 << 20;

fn run_tool(tool: &str, args: &[&str], stdin: &[u8]) -> Run {
    if tool == "cryptsetup" {
        cryptsetup(args, stdin).expect("cryptsetup")
    } else {
        lukskit(args, stdin)
    }
}

/// The arguments of the encryption of `img` with header `hdr`.
fn encrypt_args<'a>(img: &'a str, hdr: &'a str, kf: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let mut a = vec![
        "reencrypt",
        "--encrypt",
        "-q",
        "--force-offline-reencrypt",
        "--header",
        hdr,
        "-d",
        kf,
        img,
    ];
    a.extend_from_slice(extra);
    a.extend_from_slice(&FAST);
    a
}

/// Whether the data of `img` from `data_off` on (aes-xts-plain64, 512-byte sectors, IV from
/// 0) decrypts to `want`, with the volume key cryptsetup reads from `hdr`: 64 KiB windows at
/// every MiB (each hot-zone boundary of these tests included) and at the end. None (after
/// `skip_or_fail`) without Python's `cryptography`.
fn decrypts_to(img: &str, hdr: &str, kf: &str, data_off: usize, want: &[u8]) -> Option<bool> {
    const W: usize = 64 << 10;
    let vk = hex::decode(volume_key_with("cryptsetup", hdr, kf, &[])).unwrap();
    let mut at: Vec<usize> = (0..want.len()).step_by(M).collect();
    at.push(want.len() - W);
    for pos in at {
        let got = python_decrypt(
            "xts",
            &vk,
            512,
            (data_off + pos) as u64,
            img,
            (pos / 512) as u64,
            W / 512,
        )?;
        if got != want[pos..pos + W] {
            return Some(false);
        }
    }
    Some(true)
}

/// The parts of the header JSON both tools must agree on (not salts or digests).
fn shape(hdr: &str) -> serde_json::Value {
    let j = json_dump(hdr);
    let mut ks = j["keyslots"].clone();
    for (_, k) in ks.as_object_mut().unwrap().iter_mut() {
        if let Some(o) = k.as_object_mut() {
            o.remove("kdf");
        }
    }
    serde_json::json!({
        "segments": j["segments"],
        "config": j["config"],
        "keyslots": ks,
        "digests": j["digests"].as_object().unwrap().values()
            .map(|d| (d["keyslots"].clone(), d["segments"].clone()))
            .collect::<Vec<_>>(),
    })
}

#[test]
fn encrypt_with_detached_header_and_data_shift_as_cryptsetup() {
    if !have_cryptsetup("encrypt with a detached header and a data shift") {
        return;
    }
    let dir = tmp();
    let d = dir.path();
    let kf = write_file(d, "kf", b"pass1");
    // (device MiB, --offset sectors, --reduce-device-size): the upstream case scaled down,
    // an uneven last hot zone, and a data offset larger than the reduction.
    for (size_mb, offset, reduce) in [
        (24, "16384", "8M"),
        (28, "16384", "8M"),
        (30, "20480", "4M"),
    ] {
        let plain = pattern(size_mb * M, size_mb as u64);
        let off: usize = offset.parse::<usize>().unwrap() * 512;
        let mut seen = Vec::new();
        let mut shapes = Vec::new();
        let mut results = Vec::new();
        for tool in ["cryptsetup", "lukskit"] {
            let img = write_file(d, &format!("{tool}.img"), &plain);
            let hdr = d.join(format!("{tool}.hdr")).display().to_string();
            let _ = std::fs::remove_file(&hdr);
            let r = run_tool(
                tool,
                &encrypt_args(
                    &img,
                    &hdr,
                    &kf,
                    &["--offset", offset, "--reduce-device-size", reduce],
                ),
                b"",
            );
            seen.push((r.code, r.stderr.clone()));
            if r.code != 0 {
                continue;
            }
            shapes.push(shape(&hdr));
            let after = std::fs::read(&img).unwrap();
            assert!(
                after[..off] == plain[..off],
                "{tool}: the bytes in front of the data offset changed"
            );
            let Some(same) = decrypts_to(&img, &hdr, &kf, off, &plain[off..]) else {
                return;
            };
            assert!(
                same,
                "{tool} {size_mb}M {offset} {reduce}: the data does not decrypt to the plaintext \
                 that was there"
            );
            // The upstream script then restores the header over the head of the device.
            run_tool(
                tool,
                &[
                    "luksHeaderRestore",
                    "-q",
                    "--header-backup-file",
                    &hdr,
                    &img,
                ],
                b"",
            )
            .ok("luksHeaderRestore");
            let dump = cryptsetup(&["luksDump", &img], b"").unwrap().ok("luksDump");
            assert!(
                dump.stdout.contains(&format!("offset: {off} [bytes]")),
                "{tool}: {}",
                dump.stdout
            );
            let same = decrypts_to(&img, &img, &kf, off, &plain[off..]).unwrap();
            assert!(same, "{tool}: plaintext after the restore");
            results.push(tool);
        }
        assert_eq!(
            seen[0].0, seen[1].0,
            "exit codes (cryptsetup, lukskit): {seen:?}"
        );
        assert_eq!(seen[0].0, 0, "{seen:?}");
        assert_eq!(shapes[0], shapes[1], "header shape, cryptsetup vs lukskit");
        assert_eq!(results.len(), 2);
    }
}

#[test]
fn encrypt_with_detached_header_and_data_shift_init_and_resume_cross_tool() {
    if !have_cryptsetup("detached-header data shift, cross-tool resume") {
        return;
    }
    let dir = tmp();
    let d = dir.path();
    let kf = write_file(d, "kf", b"pass1");
    let plain = pattern(28 * M, 11);
    let off = 8 * M;
    let mut init_shapes = Vec::new();
    for (init, run) in [("cryptsetup", "lukskit"), ("lukskit", "cryptsetup")] {
        let img = write_file(d, &format!("{init}-{run}.img"), &plain);
        let hdr = d.join(format!("{init}-{run}.hdr")).display().to_string();
        let _ = std::fs::remove_file(&hdr);
        run_tool(
            init,
            &encrypt_args(
                &img,
                &hdr,
                &kf,
                &[
                    "--offset",
                    "16384",
                    "--reduce-device-size",
                    "8M",
                    "--init-only",
                ],
            ),
            b"",
        )
        .ok(&format!("{init} --init-only"));
        assert!(
            in_reencryption(&hdr),
            "{init}: no re-encryption in progress"
        );
        let j = json_dump(&hdr);
        let rk = j["keyslots"]
            .as_object()
            .unwrap()
            .values()
            .find(|k| k["type"] == "reencrypt")
            .cloned()
            .expect("reencrypt keyslot");
        assert_eq!(rk["area"]["type"], "datashift", "{init}");
        assert_eq!(rk["direction"], "backward", "{init}");
        init_shapes.push(shape(&hdr));
        assert!(
            std::fs::read(&img).unwrap() == plain,
            "{init}: the initialization wrote to the data device"
        );
        let mut a = vec![
            "reencrypt",
            "-q",
            "--force-offline-reencrypt",
            "--header",
            &hdr,
            "-d",
            &kf,
            &img,
        ];
        if run == "cryptsetup" {
            a.push("--resume-only");
        }
        run_tool(run, &a, b"").ok(&format!("{run} resumes {init}'s initialization"));
        assert!(!in_reencryption(&hdr), "{init} -> {run}: not finished");
        let Some(same) = decrypts_to(&img, &hdr, &kf, off, &plain[off..]) else {
            return;
        };
        assert!(same, "{init} -> {run}: plaintext");
    }
    assert_eq!(
        init_shapes[0], init_shapes[1],
        "initialization metadata, cryptsetup vs lukskit"
    );
}

#[test]
fn encrypt_with_detached_header_metadata_larger_than_the_shift() {
    if !have_cryptsetup("detached-header data shift, metadata too large") {
        return;
    }
    let dir = tmp();
    let d = dir.path();
    let kf = write_file(d, "kf", b"pass1");
    let plain = pattern(16 * M, 3);
    let mut seen = Vec::new();
    for tool in ["cryptsetup", "lukskit"] {
        let img = write_file(d, &format!("{tool}.img"), &plain);
        let hdr = d.join(format!("{tool}.hdr")).display().to_string();
        let r = run_tool(
            tool,
            &encrypt_args(
                &img,
                &hdr,
                &kf,
                &[
                    "--offset",
                    "8192",
                    "--reduce-device-size",
                    "4M",
                    "--luks2-keyslots-size",
                    "4M",
                ],
            ),
            b"",
        );
        seen.push((r.code, r.stderr.trim().to_string()));
        assert!(
            std::fs::read(&img).unwrap() == plain,
            "{tool}: data changed"
        );
    }
    assert_eq!(seen[0], seen[1], "cryptsetup vs lukskit");
}

/// The encryption sector size of the first data segment cryptsetup's `luksDump` shows.
fn sector_size(img: &str) -> usize {
    let dump = cryptsetup(&["luksDump", img], b"").unwrap().ok("luksDump");
    dump.stdout
        .lines()
        .find_map(|l| l.trim().strip_prefix("sector: "))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap()
}

/// luks2-reencryption-mangle-test [6] "Old reencryption in-progress (datashift)": a
/// re-encryption (new volume key) backward with a data shift of 1 MiB and no moved segment,
/// interrupted after 13 MiB were left to do, with old (`online-reencrypt`) metadata that
/// cryptsetup's `repair` upgrades. Both tools then finish it from the same image: the data
/// area comes out byte for byte the same, and the old key's plaintext is found under the new
/// key 1 MiB further (Python's `cryptography`).
#[test]
fn reencrypt_with_data_shift_backward_as_cryptsetup() {
    if !have_cryptsetup("re-encryption with a data shift (mangle-test [6])") {
        return;
    }
    let dir = tmp();
    let d = dir.path();
    let kf = write_file(d, "kf", &pattern(32, 5));
    let img = sparse(d, "base.img", 32 << 20);
    let cs = |args: &[&str]| {
        cryptsetup(args, b"")
            .unwrap()
            .ok(&format!("cryptsetup {args:?}"))
    };
    let mut fmt = vec![
        "luksFormat",
        "-q",
        "--disable-locks",
        "-d",
        &kf,
        "--luks2-metadata-size",
        "16384",
        &img,
    ];
    fmt.extend_from_slice(&FAST);
    cs(&fmt);
    // Random data under the old key.
    std::fs::OpenOptions::new()
        .write(true)
        .open(&img)
        .and_then(|f| {
            use std::os::unix::fs::FileExt;
            f.write_all_at(&pattern(16 * M, 9), 16 * M as u64)
        })
        .unwrap();
    let old_vk = hex::decode(volume_key_with("cryptsetup", &img, &kf, &[])).unwrap();
    let old_ss = sector_size(&img);
    cs(&[
        "reencrypt",
        &img,
        "-q",
        "--disable-locks",
        "-d",
        &kf,
        "--init-only",
        "--resilience",
        "none",
    ]);
    // The jq program of the upstream script, on serde_json.
    rewrite_luks2_json(&img, |j| {
        j["digests"].as_object_mut().unwrap().remove("2");
        let ks = &mut j["keyslots"]["2"];
        ks["direction"] = "backward".into();
        ks["area"]["type"] = "datashift".into();
        ks["area"]["size"] = "4096".into();
        ks["area"]["shift_size"] = (1 << 20).to_string().into();
        let s = j["segments"].clone();
        let with = |seg: &serde_json::Value, k: &str, v: String| {
            let mut seg = seg.clone();
            seg[k] = v.into();
            seg
        };
        j["segments"] = serde_json::json!({
            "0": with(&s["0"], "size", (13 * M).to_string()),
            "1": with(&s["0"], "offset", (30 * M).to_string()),
            "2": s["1"],
            "3": with(&s["2"], "offset", (17 * M).to_string()),
        });
        j["digests"]["0"]["segments"] = serde_json::json!(["0", "2"]);
        j["digests"]["1"]["segments"] = serde_json::json!(["1", "3"]);
        j["config"]["requirements"]["mandatory"] = serde_json::json!(["online-reencrypt"]);
    });
    cs(&["repair", "-q", "--disable-locks", "-d", &kf, &img]);
    let before = std::fs::read(&img).unwrap();
    let mut data = Vec::new();
    for tool in ["cryptsetup", "lukskit"] {
        let copy = write_file(d, &format!("{tool}.img"), &before);
        run_tool(
            tool,
            &[
                "reencrypt",
                &copy,
                "-q",
                "--disable-locks",
                "--force-offline-reencrypt",
                "-d",
                &kf,
            ],
            b"",
        )
        .ok(&format!(
            "{tool} finishes the re-encryption with a data shift"
        ));
        assert!(!in_reencryption(&copy), "{tool}: not finished");
        let dump = cryptsetup(&["luksDump", &copy], b"")
            .unwrap()
            .ok("luksDump");
        assert!(
            dump.stdout.contains(&format!("offset: {} [bytes]", 17 * M)),
            "{tool}: {}",
            dump.stdout
        );
        let after = std::fs::read(&copy).unwrap();
        data.push(after[17 * M..].to_vec());
        // The old plaintext, 1 MiB further under the new key (windows at every MiB).
        let new_vk = hex::decode(volume_key_with("cryptsetup", &copy, &kf, &[])).unwrap();
        let new_ss = sector_size(&copy);
        for pos in (0..13 * M).step_by(M) {
            let (Some(was), Some(is)) = (
                python_decrypt(
                    "xts",
                    &old_vk,
                    old_ss,
                    (16 * M + pos) as u64,
                    &img,
                    (pos / 512) as u64,
                    (64 << 10) / old_ss,
                ),
                python_decrypt(
                    "xts",
                    &new_vk,
                    new_ss,
                    (17 * M + pos) as u64,
                    &copy,
                    (pos / 512) as u64,
                    (64 << 10) / new_ss,
                ),
            ) else {
                return;
            };
            assert!(
                was == is,
                "{tool}: plaintext at {pos} not moved by the shift (first difference at {}, sector sizes {:?})",
                was.iter().zip(&is).position(|(a, b)| a != b).unwrap_or(0),
                (old_ss, new_ss)
            );
        }
    }
    assert!(
        data[0] == data[1],
        "the data areas of cryptsetup's and lukskit's results differ"
    );
}

/// luksHeaderRestore of a header backup taken during a re-encryption (requirement
/// `online-reencrypt-v2`): cryptsetup 2.6.1 restores it (onto a LUKS2 device and onto a
/// blank one), and so does lukskit, with the same bytes.
#[test]
fn header_restore_of_a_backup_in_reencryption() {
    if !have_cryptsetup("luksHeaderRestore of a backup in re-encryption") {
        return;
    }
    let dir = tmp();
    let d = dir.path();
    let kf = write_file(d, "kf", b"pass1");
    let src = sparse(d, "src.img", 32 << 20);
    let mut fmt = vec!["luksFormat", "-q", "-d", &kf, &src];
    fmt.extend_from_slice(&FAST);
    cryptsetup(&fmt, b"").unwrap().ok("luksFormat");
    cryptsetup(
        &[
            "reencrypt",
            &src,
            "-q",
            "-d",
            &kf,
            "--init-only",
            "--resilience",
            "none",
        ],
        b"",
    )
    .unwrap()
    .ok("reencrypt --init-only");
    let bak = d.join("src.bak").display().to_string();
    cryptsetup(
        &["luksHeaderBackup", &src, "--header-backup-file", &bak],
        b"",
    )
    .unwrap()
    .ok("luksHeaderBackup");
    assert!(in_reencryption(&bak));
    let want = std::fs::read(&bak).unwrap();
    let mut seen = Vec::new();
    for tool in ["cryptsetup", "lukskit"] {
        for luks in [true, false] {
            let dst = sparse(d, &format!("{tool}-{luks}.img"), 32 << 20);
            if luks {
                let mut fmt = vec!["luksFormat", "-q", "-d", &kf, &dst];
                fmt.extend_from_slice(&FAST);
                cryptsetup(&fmt, b"").unwrap().ok("luksFormat");
            }
            let r = run_tool(
                tool,
                &[
                    "luksHeaderRestore",
                    "-q",
                    &dst,
                    "--header-backup-file",
                    &bak,
                ],
                b"",
            );
            seen.push((tool, luks, r.code));
            if r.code == 0 {
                let got = std::fs::read(&dst).unwrap();
                assert!(
                    got[..want.len()] == want[..],
                    "{tool}: the restored header differs from the backup"
                );
                assert!(in_reencryption(&dst), "{tool}: requirement lost");
            }
        }
    }
    assert_eq!(
        seen.iter().map(|s| s.2).collect::<Vec<_>>(),
        [0, 0, 0, 0],
        "(tool, LUKS2 target, exit code): {seen:?}"
    );
}

/// `reencrypt --keep-key` of a LUKS2 device with nothing else to change: cryptsetup 2.6.1
/// (which takes `--keep-key` for LUKS2 too) refuses it with "No data segment parameters
/// changed. Reencryption aborted." (exit 1) and leaves the header alone; so does lukskit
/// (it used to ignore `--keep-key` and change the volume key).
#[test]
fn keep_key_without_a_change_is_refused_as_by_cryptsetup() {
    if !have_cryptsetup("reencrypt --keep-key of LUKS2") {
        return;
    }
    let dir = tmp();
    let d = dir.path();
    let kf = write_file(d, "kf", b"pass1");
    let mut seen = Vec::new();
    for tool in ["cryptsetup", "lukskit"] {
        let img = sparse(d, &format!("{tool}.img"), 32 << 20);
        let mut fmt = vec!["luksFormat", "-q", "-d", &kf, &img];
        fmt.extend_from_slice(&FAST);
        cryptsetup(&fmt, b"").unwrap().ok("luksFormat");
        let before = std::fs::read(&img).unwrap();
        let mut a = vec![
            "reencrypt",
            &img,
            "--keep-key",
            "-q",
            "-d",
            &kf,
            "--force-offline-reencrypt",
        ];
        a.extend_from_slice(&FAST);
        let r = run_tool(tool, &a, b"");
        seen.push((r.code, r.stderr.trim().to_string()));
        assert!(
            std::fs::read(&img).unwrap() == before,
            "{tool}: the device changed"
        );
    }
    assert_eq!(seen[0], seen[1], "cryptsetup vs lukskit");
}
