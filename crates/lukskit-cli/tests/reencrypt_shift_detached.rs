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
//!   script does next) gives a device whose plaintext is unchanged.

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
