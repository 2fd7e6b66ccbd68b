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
    let windows: Vec<Window> = at
        .iter()
        .map(|&pos| Window {
            data_off: (data_off + pos) as u64,
            iv_off: (pos / 512) as u64,
            n: W / 512,
        })
        .collect();
    let got = python_decrypt_windows("xts", &vk, 512, img, &windows)?;
    Some(
        at.iter()
            .zip(&got)
            .all(|(&pos, piece)| piece[..] == want[pos..pos + W]),
    )
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

/// `reencrypt --reduce-device-size 2M` without `--encrypt` (luks2-reencryption-mangle-test
/// [7] initializes one, with a `--resilience none` that cryptsetup ignores there): cryptsetup
/// 2.6.1's `reencrypt_luks2_init` with a negative data shift, a re-encryption (new volume key)
/// backward with resilience `datashift` whose new data offset lies 2 MiB further, giving up
/// the last 2 MiB of the data. Against real cryptsetup on the same image: the initialization
/// writes the metadata cryptsetup writes; either tool finishes either tool's initialization,
/// and each runs the whole command; every result has its data at 18 MiB, the keyslots area
/// grown to it as cryptsetup's, the old 2 MiB in front of it untouched, and the old key's
/// first 14 MiB of plaintext there under the new key (Python's `cryptography`). A shift that
/// is not whole 4096-byte sectors is refused with cryptsetup's words and exit code, and
/// lukskit leaves the image as it was.
#[test]
fn reencrypt_with_reduce_device_size_as_cryptsetup() {
    if !have_cryptsetup("re-encryption with --reduce-device-size") {
        return;
    }
    let dir = tmp();
    let d = dir.path();
    let kf = write_file(d, "kf", &pattern(32, 11));
    let base = sparse(d, "base.img", 32 << 20);
    let mut fmt = vec![
        "luksFormat",
        "-q",
        "--disable-locks",
        "-d",
        &kf,
        "--luks2-metadata-size",
        "16384",
        &base,
    ];
    fmt.extend_from_slice(&FAST);
    cryptsetup(&fmt, b"").unwrap().ok("luksFormat");
    // Random bytes as the old key's ciphertext: its plaintext is whatever they decrypt to.
    std::fs::OpenOptions::new()
        .write(true)
        .open(&base)
        .and_then(|f| {
            use std::os::unix::fs::FileExt;
            f.write_all_at(&pattern(16 * M, 12), 16 * M as u64)
        })
        .unwrap();
    let before = std::fs::read(&base).unwrap();
    let old_vk = hex::decode(volume_key_with("cryptsetup", &base, &kf, &[])).unwrap();
    let old_ss = sector_size(&base);
    let Some(old_plain) = python_decrypt(
        "xts",
        &old_vk,
        old_ss,
        16 * M as u64,
        &base,
        0,
        16 * M / old_ss,
    ) else {
        return;
    };
    let args = |img: &'static str, extra: &[&'static str]| -> Vec<String> {
        let mut a: Vec<String> = ["reencrypt", img, "-q", "--disable-locks", "-d", "KF"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        a.extend(extra.iter().map(|s| s.to_string()));
        a
    };
    let run = |tool: &str, img: &str, a: Vec<String>| {
        let a: Vec<&str> = a
            .iter()
            .map(|s| match s.as_str() {
                "IMG" => img,
                "KF" => kf.as_str(),
                s => s,
            })
            .collect();
        run_tool(tool, &a, b"")
    };
    let init = args(
        "IMG",
        &[
            "--init-only",
            "--resilience",
            "none",
            "--reduce-device-size",
            "2M",
        ],
    );
    let resume = args("IMG", &["--force-offline-reencrypt"]);
    let whole = args(
        "IMG",
        &["--force-offline-reencrypt", "--reduce-device-size", "2M"],
    );

    // The initialization: cryptsetup's metadata.
    let mut shapes = Vec::new();
    for tool in ["cryptsetup", "lukskit"] {
        let img = write_file(d, &format!("{tool}.init.img"), &before);
        run(tool, &img, init.clone()).ok(&format!("{tool} --init-only"));
        shapes.push(shape(&img));
    }
    let ks = &shapes[0]["keyslots"]["2"];
    assert_eq!(
        (
            &ks["area"]["type"],
            &ks["area"]["shift_size"],
            &ks["direction"],
            &shapes[0]["segments"]["2"]["offset"]
        ),
        (
            &"datashift".into(),
            &"2097152".into(),
            &"backward".into(),
            &(18 * M).to_string().into()
        ),
        "cryptsetup's initialization is a backward data shift of 2 MiB"
    );
    assert_eq!(
        shapes[1], shapes[0],
        "initialization: lukskit vs cryptsetup"
    );

    // Every way to the end: each tool resumes each tool's initialization, and runs the
    // whole command.
    let mut cases = Vec::new();
    for init_tool in ["cryptsetup", "lukskit"] {
        for run_tool in ["cryptsetup", "lukskit"] {
            let img = d
                .join(format!("{init_tool}.init.img"))
                .display()
                .to_string();
            let copy = write_file(
                d,
                &format!("{init_tool}-{run_tool}.img"),
                &std::fs::read(&img).unwrap(),
            );
            run(run_tool, &copy, resume.clone())
                .ok(&format!("{run_tool} resumes {init_tool}'s initialization"));
            cases.push((format!("{init_tool} init, {run_tool} run"), copy));
        }
    }
    for tool in ["cryptsetup", "lukskit"] {
        let copy = write_file(d, &format!("{tool}.whole.img"), &before);
        run(tool, &copy, whole.clone()).ok(&format!("{tool} reencrypt --reduce-device-size"));
        cases.push((format!("{tool} alone"), copy));
    }
    let reference = json_dump(&cases[4].1)["config"].clone();
    for (what, img) in &cases {
        assert!(!in_reencryption(img), "{what}: not finished");
        let j = json_dump(img);
        assert_eq!(j["segments"]["0"]["offset"], (18 * M).to_string(), "{what}");
        assert_eq!(
            j["config"], reference,
            "{what}: config (keyslots area) as cryptsetup's"
        );
        let after = std::fs::read(img).unwrap();
        assert!(
            after[16 * M..18 * M] == before[16 * M..18 * M],
            "{what}: the 2 MiB given up changed"
        );
        let new_vk = hex::decode(volume_key_with("cryptsetup", img, &kf, &[])).unwrap();
        assert_ne!(new_vk, old_vk, "{what}: the volume key is new");
        let new_ss = sector_size(img);
        let Some(plain) = python_decrypt(
            "xts",
            &new_vk,
            new_ss,
            18 * M as u64,
            img,
            0,
            14 * M / new_ss,
        ) else {
            return;
        };
        assert!(
            plain == old_plain[..14 * M],
            "{what}: plaintext not moved by the shift (first difference at {:?})",
            plain.iter().zip(&old_plain).position(|(a, b)| a != b)
        );
    }

    // A shift that is not whole 4096-byte sectors.
    let mut seen = Vec::new();
    for tool in ["cryptsetup", "lukskit"] {
        let img = write_file(d, &format!("{tool}.odd.img"), &before);
        let r = run(
            tool,
            &img,
            args("IMG", &["--init-only", "--reduce-device-size", "2050k"]),
        );
        assert!(
            r.stderr.contains(
                "Data shift value is not aligned to encryption sector size (4096 bytes)."
            ),
            "{tool}: {}",
            r.stderr
        );
        assert_eq!(
            active_slots(&img),
            vec![0],
            "{tool}: keyslots after the refusal"
        );
        if tool == "lukskit" {
            assert!(
                std::fs::read(&img).unwrap() == before,
                "lukskit changed the image"
            );
        }
        seen.push(r.code);
    }
    assert_eq!(seen[1], seen[0], "exit code: lukskit vs cryptsetup");
}

/// The end of a re-encryption grows the keyslots area up to the data offset, as cryptsetup
/// 2.6.1's `reencrypt_teardown_ok` does (`LUKS2_set_keyslots_size`): a volume formatted with
/// a 1 MiB keyslots area in front of a 16 MiB data offset comes out of a plain re-encryption
/// (no data shift) with 16 MiB - 32 KiB of keyslots area; lukskit kept 1 MiB. The `config`
/// of both tools' results compared.
#[test]
fn reencrypt_end_grows_keyslots_area_as_cryptsetup() {
    if !have_cryptsetup("keyslots area after a re-encryption") {
        return;
    }
    let dir = tmp();
    let d = dir.path();
    let kf = write_file(d, "kf", b"pass1");
    let base = sparse(d, "base.img", 24 << 20);
    let mut fmt = vec![
        "luksFormat",
        "-q",
        "--disable-locks",
        "-d",
        &kf,
        "--luks2-keyslots-size",
        "1M",
        "--offset",
        "32768",
        &base,
    ];
    fmt.extend_from_slice(&FAST);
    cryptsetup(&fmt, b"").unwrap().ok("luksFormat");
    assert_eq!(json_dump(&base)["config"]["keyslots_size"], "1048576");
    let before = std::fs::read(&base).unwrap();
    let mut configs = Vec::new();
    for tool in ["cryptsetup", "lukskit"] {
        let img = write_file(d, &format!("{tool}.img"), &before);
        run_tool(
            tool,
            &[
                "reencrypt",
                &img,
                "-q",
                "--disable-locks",
                "--force-offline-reencrypt",
                "--resilience",
                "none",
                "-d",
                &kf,
            ],
            b"",
        )
        .ok(&format!("{tool} reencrypt"));
        assert!(!in_reencryption(&img), "{tool}: not finished");
        configs.push(json_dump(&img)["config"].clone());
    }
    assert_eq!(
        configs[0]["keyslots_size"],
        (16 * M - 32 * 1024).to_string(),
        "cryptsetup grew the keyslots area"
    );
    assert_eq!(configs[1], configs[0], "config: lukskit vs cryptsetup");
}
