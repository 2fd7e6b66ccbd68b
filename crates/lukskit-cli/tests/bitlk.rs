//! BitLocker against cryptsetup 2.6.1 on the real Windows images of
//! `../shared/testdata/other-formats/bitlk-images.tar.xz` (see its README and images.conf):
//! `bitlkDump` byte for byte (also on damaged copies, where both must refuse with the same
//! words), `open --test-passphrase --type bitlk` with right and wrong passwords, recovery
//! passwords and the `.BEK` startup key (same exit codes and messages), and the SHA-256 of
//! each whole decrypted volume (through the library's segment table and data path) against
//! images.conf.

mod common;

use common::{cryptsetup_path, have_cryptsetup, lukskit, tmp, unpack_other_formats, Run};
use lukskit_crypto::SecretBuf;
use lukskit_volume::data::DataVolume;
use lukskit_volume::formats::{format_of, FormatOptions, UnlockRequest};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

/// One image's section of images.conf.
type Conf = common::BitlkConf;

/// Unpack the images into a fresh directory; None after [`skip_or_fail`] when the test data
/// is absent.
fn images(test: &str) -> Option<(tempfile::TempDir, PathBuf, BTreeMap<String, Conf>)> {
    let dir = tmp();
    if !unpack_other_formats(test, "bitlk-images.tar.xz", dir.path()) {
        return None;
    }
    let root = dir.path().join("bitlk");
    let confs = common::bitlk_images_conf(&root.join("images.conf"));
    assert!(confs.len() >= 6, "images.conf lists the images");
    Some((dir, root, confs))
}

/// Run cryptsetup with the time zone UTC (lukskit prints the creation time in UTC).
fn cs(args: &[&str], stdin: &[u8], dir: &Path) -> Run {
    let mut cmd = Command::new(cryptsetup_path().expect("cryptsetup"));
    cmd.args(args).current_dir(dir);
    common::run(cmd, stdin, &[("TZ", "UTC")])
}

/// lukskit run in `dir` (relative paths as cryptsetup gets them).
fn lk(args: &[&str], stdin: &[u8], dir: &Path) -> Run {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_lukskit"));
    cmd.args(args).current_dir(dir);
    common::run(cmd, stdin, &[])
}

/// Both tools give the same exit code, standard output and standard error. Where
/// cryptsetup 2.6.1 itself crashes (a metadata without an FVEK entry: it dereferences the
/// missing key), lukskit must refuse with exit code 1 and a message instead.
fn same(args: &[&str], stdin: &[u8], dir: &Path) -> Run {
    let a = cs(args, stdin, dir);
    let b = lk(args, stdin, dir);
    if a.code == -1 {
        assert_eq!(b.code, 1, "{args:?}: lukskit {} {}", b.stdout, b.stderr);
        assert!(b.stderr.contains("FVEK"), "{args:?}: {}", b.stderr);
        return b;
    }
    assert_eq!(
        (a.code, &a.stdout, &a.stderr),
        (b.code, &b.stdout, &b.stderr),
        "cryptsetup vs lukskit: {args:?}"
    );
    b
}

fn image(name: &str) -> String {
    format!("{name}.img")
}

#[test]
fn dump_is_cryptsetups_on_every_image() {
    let test = "dump_is_cryptsetups_on_every_image";
    let Some((_dir, root, confs)) = images(test) else {
        return;
    };
    if !have_cryptsetup(test) {
        return;
    }
    for (name, conf) in &confs {
        let r = same(&["bitlkDump", &image(name)], b"", &root);
        assert_eq!(r.code, 0, "{name}: {}", r.stderr);
        assert!(r.stdout.contains(&conf["GUID"]), "{name}: GUID in the dump");
        let mode = conf["CIPHER"].trim_start_matches("aes-");
        assert!(r.stdout.contains(&format!("Cipher mode:  \t{mode}\n")));
    }
    // Files that are no BitLocker volume.
    for f in [
        "images.conf",
        "4381F759-C4F8-4DE0-BB61-FC33A831BDA5.BEK",
        "missing",
    ] {
        let r = same(&["bitlkDump", f], b"", &root);
        assert_ne!(r.code, 0, "{f}");
    }
    // lukskit's own probe agrees.
    let head = std::fs::read(root.join("bitlk-aes-xts-128.img")).unwrap();
    let fmt = format_of(lukskit_format::VolumeType::Bitlk).unwrap();
    assert_eq!(
        fmt.probe(&head[..4096]),
        lukskit_volume::formats::Probe::Mine
    );
    let togo = std::fs::read(root.join("bitlk-togo-aes-xts-128.img")).unwrap();
    assert_eq!(
        fmt.probe(&togo[..4096]),
        lukskit_volume::formats::Probe::Mine
    );
    let mut fat = togo[..4096].to_vec();
    fat[424] ^= 0xff;
    assert_eq!(fmt.probe(&fat), lukskit_volume::formats::Probe::NotMine);
}

/// Write `bytes` at `offset` of `path`.
fn patch(path: &Path, offset: u64, bytes: &[u8]) {
    use std::os::unix::fs::FileExt;
    let f = std::fs::OpenOptions::new().write(true).open(path).unwrap();
    f.write_all_at(bytes, offset).unwrap();
}

/// A sparse copy of image `name` in `root` as `copy`.
fn copy(root: &Path, name: &str, copy: &str) -> PathBuf {
    let dst = root.join(copy);
    let st = Command::new("cp")
        .arg("--sparse=always")
        .arg(root.join(image(name)))
        .arg(&dst)
        .status()
        .unwrap();
    assert!(st.success());
    dst
}

fn le64(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().unwrap())
}

/// An entry as the tests locate it: file offset, size, type (top level) or value type
/// (VMK properties).
type Located = (u64, u16, u16);

/// The top-level metadata entries of `path`, and the nested properties of its VMK entries.
fn entries(path: &Path) -> (Vec<Located>, Vec<Located>) {
    let b = std::fs::read(path).unwrap();
    let off0 = le64(&b, 160 + 16) as usize;
    let size = u32::from_le_bytes(b[off0 + 64..off0 + 68].try_into().unwrap()) as usize;
    let base = off0 + 112;
    let e = &b[base..base + size - 48];
    let le16 = |at: usize| u16::from_le_bytes([e[at], e[at + 1]]);
    let (mut top, mut nested) = (vec![], vec![]);
    let mut s = 0;
    while s + 4 <= e.len() && le16(s) != 0 {
        let (sz, ty) = (le16(s), le16(s + 2));
        top.push(((base + s) as u64, sz, ty));
        if ty == 2 {
            let mut p = s + 36;
            while p + 6 <= s + sz as usize && le16(p) != 0 {
                nested.push(((base + p) as u64, le16(p), le16(p + 4)));
                p += le16(p) as usize;
            }
        }
        s += sz as usize;
    }
    (top, nested)
}

/// Damaged and hostile copies: both tools refuse (or accept) them with the same words, for
/// the dump and for a passphrase test.
#[test]
fn damaged_metadata_is_refused_as_cryptsetup_refuses_it() {
    let test = "damaged_metadata_is_refused_as_cryptsetup_refuses_it";
    let Some((_dir, root, _)) = images(test) else {
        return;
    };
    if !have_cryptsetup(test) {
        return;
    }
    let base = "bitlk-aes-xts-128";
    let orig = root.join(image(base));
    let head = std::fs::read(&orig).unwrap();
    let off0 = le64(&head, 160 + 16);
    let (top, nested) = entries(&orig);
    let vmk0 = top.iter().find(|e| e.2 == 2).unwrap().0;
    let prop0 = nested[0].0;
    let mut cases: Vec<(&str, u64, Vec<u8>)> = vec![
        ("v1-boot-code", 0, vec![0xeb, 0x52, 0x90]),
        ("unknown-boot-code", 0, vec![0xe9, 0x00, 0x00]),
        ("sector-size-1000", 11, 1000u16.to_le_bytes().to_vec()),
        ("sector-size-0", 11, vec![0, 0]),
        ("sector-size-4096", 11, 4096u16.to_le_bytes().to_vec()),
        (
            "fve-offset-beyond",
            160 + 16,
            u64::MAX.to_le_bytes().to_vec(),
        ),
        ("fve-signature", off0, b"-FVE-FX-".to_vec()),
        ("fve-version-1", off0 + 10, vec![1, 0]),
        ("state-in-progress", off0 + 12, vec![2, 0]),
        ("method-unknown", off0 + 64 + 36, vec![0x34, 0x12]),
        ("method-xts-256", off0 + 64 + 36, vec![0x05, 0x80]),
        (
            "metadata-size-huge",
            off0 + 64,
            70_000u32.to_le_bytes().to_vec(),
        ),
        (
            "metadata-size-tiny",
            off0 + 64,
            50u32.to_le_bytes().to_vec(),
        ),
        ("normal-guid-damaged", 160, vec![0]),
        (
            "first-entry-too-long",
            top[0].0,
            0xfff0u16.to_le_bytes().to_vec(),
        ),
        ("first-entry-empty", top[0].0, vec![0, 0]),
        ("vmk-too-short", vmk0, 20u16.to_le_bytes().to_vec()),
        ("vmk-protection-tpm", vmk0 + 8 + 26, vec![0x00, 0x01]),
        ("vmk-protection-clear", vmk0 + 8 + 26, vec![0x00, 0x00]),
        ("vmk-property-type", prop0 + 2, vec![0x08, 0x00]),
        ("vmk-property-value", prop0 + 4, vec![0x63, 0x00]),
        (
            "vmk-property-too-long",
            prop0,
            0xfff0u16.to_le_bytes().to_vec(),
        ),
    ];
    for (i, (off, _, value)) in nested.iter().enumerate() {
        if *value == 5 {
            // Flip a byte of the first VMK's encrypted key: its tag no longer matches.
            cases.push(("vmk-key-damaged", off + 40, vec![0x55]));
            cases.push(("vmk-key-short", *off, 30u16.to_le_bytes().to_vec()));
            let _ = i;
            break;
        }
    }
    for (label, offset, bytes) in cases {
        let name = format!("{label}.img");
        let p = copy(&root, base, &name);
        patch(&p, offset, &bytes);
        same(&["bitlkDump", &name], b"", &root);
        if label == "first-entry-empty" {
            // No entries at all: cryptsetup 2.6.1 finds no VMK to try, returns success
            // without a key (any passphrase "works"; an activation would crash). lukskit
            // refuses: there is no FVEK to unlock.
            let args = [
                "open",
                "--test-passphrase",
                "--type",
                "bitlk",
                name.as_str(),
            ];
            assert_eq!(cs(&args, b"x", &root).code, 0);
            let r = lk(&args, b"x", &root);
            assert_eq!(
                (r.code, r.stderr.as_str()),
                (1, "BITLK metadata has no FVEK entry.\n")
            );
            std::fs::remove_file(&p).unwrap();
            continue;
        }
        for secret in [&b"anaconda"[..], b"wrong"] {
            same(
                &["open", "--test-passphrase", "--type", "bitlk", &name],
                secret,
                &root,
            );
        }
        std::fs::remove_file(&p).unwrap();
    }
}

#[test]
fn test_passphrase_results_are_cryptsetups() {
    let test = "test_passphrase_results_are_cryptsetups";
    let Some((_dir, root, confs)) = images(test) else {
        return;
    };
    if !have_cryptsetup(test) {
        return;
    }
    let bek = "4381F759-C4F8-4DE0-BB61-FC33A831BDA5.BEK";
    // Not BitLocker, nothing on standard input: the metadata is read before a secret is
    // asked for, so both say it is not a BITLK device (not "Nothing to read on input.").
    for not_bitlk in ["images.conf", bek] {
        for kind in ["bitlk", "fvault2"] {
            let r = same(
                &["open", "--test-passphrase", "--type", kind, not_bitlk],
                b"",
                &root,
            );
            assert_eq!(r.code, 1, "{kind} {not_bitlk}: {}", r.stderr);
        }
    }
    for (name, conf) in &confs {
        let img = image(name);
        let open = ["open", "--test-passphrase", "--type", "bitlk", img.as_str()];
        let mut secrets: Vec<Vec<u8>> = vec![b"wrong".to_vec(), b"".to_vec()];
        for key in ["PW", "RP"] {
            if let Some(v) = conf.get(key).filter(|v| !v.is_empty()) {
                secrets.push(v.as_bytes().to_vec());
                // The recovery password with a newline (one line of standard input) and
                // with a wrong last group (not a multiple of 11; a multiple of 11).
                let mut w = v.as_bytes().to_vec();
                let last = w.len() - 1;
                w[last] = if w[last] == b'9' { b'0' } else { w[last] + 1 };
                secrets.push(w);
            }
        }
        if let Some(rp) = conf.get("RP") {
            let mut parts: Vec<u32> = rp.split('-').map(|p| p.parse().unwrap()).collect();
            parts[7] = (parts[7] + 11) % 720_896;
            let other: Vec<String> = parts.iter().map(|p| format!("{p:06}")).collect();
            secrets.push(other.join("-").into_bytes());
        }
        for s in &secrets {
            let r = same(&open, s, &root);
            let right = conf
                .get("PW")
                .is_some_and(|p| !p.is_empty() && p.as_bytes() == s)
                || conf.get("RP").is_some_and(|p| p.as_bytes() == s);
            if right && !name.contains("clearkey") {
                assert_eq!(r.code, 0, "{name} {}", String::from_utf8_lossy(s));
            } else {
                assert_ne!(r.code, 0, "{name} {}", String::from_utf8_lossy(s));
            }
        }
        // The startup key as a key file.
        let mut args = open.to_vec();
        args.extend(["--key-file", bek]);
        let r = same(&args, b"", &root);
        assert_eq!(
            r.code == 0,
            conf.contains_key("SK_VMK_GUID"),
            "{name} with the BEK"
        );
    }
    // The startup key with its GUID, volume GUID and size damaged.
    let bek_bytes = std::fs::read(root.join(bek)).unwrap();
    let img = image("bitlk-aes-xts-128-startup-key");
    for (label, at, v) in [
        ("version", 4usize, 2u8),
        ("size", 0, 0x99),
        ("vmk-guid", 16, 0x11),
        ("entry-type", 48 + 2, 0x07),
        ("volume-guid", 48 + 8 + 24 + 8 + 1, 0x33),
    ] {
        let mut b = bek_bytes.clone();
        b[at] ^= v;
        let f = format!("{label}.BEK");
        std::fs::write(root.join(&f), &b).unwrap();
        same(
            &[
                "open",
                "--test-passphrase",
                "--type",
                "bitlk",
                &img,
                "--key-file",
                &f,
            ],
            b"",
            &root,
        );
    }
}

/// The SHA-256 of the whole decrypted volume of each image is images.conf's.
#[test]
fn decrypted_volumes_have_the_checksums_of_images_conf() {
    let test = "decrypted_volumes_have_the_checksums_of_images_conf";
    let Some((_dir, root, confs)) = images(test) else {
        return;
    };
    let fmt = format_of(lukskit_format::VolumeType::Bitlk).unwrap();
    let options = FormatOptions::default();
    let bek = std::fs::read(root.join("4381F759-C4F8-4DE0-BB61-FC33A831BDA5.BEK")).unwrap();
    let mut checked = 0;
    for (name, conf) in &confs {
        let want = &conf["SHA256SUM"];
        if want.is_empty() {
            // The clear-key (encrypt-on-write) image cryptsetup does not open.
            continue;
        }
        let path = root.join(image(name)).to_string_lossy().into_owned();
        let pass = conf
            .get("PW")
            .filter(|p| !p.is_empty())
            .map(|p| SecretBuf::from_slice(p.as_bytes()));
        let keys = if pass.is_none() {
            vec![SecretBuf::from_slice(&bek)]
        } else {
            vec![]
        };
        let req = UnlockRequest {
            device: &path,
            header: None,
            passphrase: pass.as_ref(),
            key_files: &keys,
            options: &options,
        };
        let u = fmt.unlock(&req).unwrap_or_else(|e| panic!("{name}: {e}"));
        // No UUID for the DM UUID: cryptsetup's BITLK mapping is CRYPT-BITLK-NAME (refvm_kernel).
        assert_eq!(u.uuid, None, "{name}");
        let table = u.layers.into_iter().next().unwrap();
        let vol = DataVolume::open_table(&path, table, false).unwrap();
        let mut h = Sha256::new();
        let mut buf = vec![0u8; 4 << 20];
        let mut off = 0u64;
        while off < vol.size() {
            let n = (vol.size() - off).min(buf.len() as u64) as usize;
            vol.read_at(&mut buf[..n], off).unwrap();
            h.update(&buf[..n]);
            off += n as u64;
        }
        assert_eq!(hex(&h.finalize()), *want, "{name}");
        checked += 1;
    }
    assert_eq!(checked, 5);
    // `image decrypt` writes the same plaintext: a password (from a key file), and the
    // recovery password of an Elephant-diffuser image.
    for (name, secret) in [
        ("bitlk-aes-xts-128", "PW"),
        ("bitlk-aes-cbc-elephant-128", "RP"),
    ] {
        let conf = &confs[name];
        let pw = root.join("secret");
        std::fs::write(&pw, &conf[secret]).unwrap();
        let out = root.join("plain.img");
        let r = lukskit(
            &[
                "image",
                "decrypt",
                "--type",
                "bitlk",
                "--key-file",
                &pw.to_string_lossy(),
                &root.join(image(name)).to_string_lossy(),
                &out.to_string_lossy(),
            ],
            b"",
        );
        assert_eq!(r.code, 0, "{name}: {}", r.stderr);
        let data = std::fs::read(&out).unwrap();
        assert_eq!(
            hex(&Sha256::digest(&data)),
            conf["SHA256SUM"],
            "image decrypt {name}"
        );
        std::fs::remove_file(&out).unwrap();
    }
    // lukskit's own dump through the seam says the same as its binary.
    let r = lukskit(
        &[
            "bitlkDump",
            &root.join("bitlk-aes-xts-128.img").to_string_lossy(),
        ],
        b"",
    );
    assert_eq!(r.code, 0);
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// `open --type bitlk` / `bitlkOpen` end to end (userspace mapping through FUSE and a loop
/// device): the mapped device's SHA-256 and its file system UUID (blkid) are images.conf's,
/// with a password, a recovery password and the `.BEK` startup key; `bitlkClose` removes it.
#[test]
fn opened_mappings_have_the_checksums_and_uuids_of_images_conf() {
    let test = "opened_mappings_have_the_checksums_and_uuids_of_images_conf";
    let Some((_dir, root, confs)) = images(test) else {
        return;
    };
    if !common::mapping::capable(test) || !common::mapping::have_tool(test, "blkid") {
        return;
    }
    let bek = root.join("4381F759-C4F8-4DE0-BB61-FC33A831BDA5.BEK");
    let mut checked = 0;
    for (i, (name, conf)) in confs.iter().enumerate() {
        if conf["SHA256SUM"].is_empty() {
            continue;
        }
        let img = root.join(image(name)).to_string_lossy().into_owned();
        let m = common::mapping::Mapping::new(&format!("bitlk{i}"));
        // Alternate the secrets: password, recovery password; the BEK where there is no
        // password.
        let pw = conf.get("PW").filter(|p| !p.is_empty());
        let (action, stdin, extra): (&str, Vec<u8>, Vec<String>) = match pw {
            Some(p) if i % 2 == 0 => ("open", p.as_bytes().to_vec(), vec![]),
            Some(_) => ("bitlkOpen", conf["RP"].as_bytes().to_vec(), vec![]),
            None => (
                "bitlkOpen",
                vec![],
                vec!["--key-file".into(), bek.to_string_lossy().into_owned()],
            ),
        };
        let mut args: Vec<&str> = vec![action];
        if action == "open" {
            args.extend(["--type", "bitlk"]);
        }
        args.extend([img.as_str(), m.name.as_str()]);
        args.extend(extra.iter().map(String::as_str));
        lukskit(&args, &stdin).ok(&format!("{action} {name}"));
        let data = std::fs::read(m.dev()).unwrap();
        assert_eq!(hex(&Sha256::digest(&data)), conf["SHA256SUM"], "{name}");
        let uuid = Command::new("blkid")
            .args(["-p", "-s", "UUID", "-o", "value", &m.dev()])
            .output()
            .unwrap();
        assert_eq!(
            String::from_utf8_lossy(&uuid.stdout).trim(),
            conf["UUID"],
            "{name}"
        );
        lukskit(&["bitlkClose", &m.name], b"").ok("bitlkClose");
        assert!(!Path::new(&m.dev()).exists());
        checked += 1;
    }
    assert_eq!(checked, 5);
}

/// `bitlkDump --dump-volume-key` (batch mode) gives cryptsetup's text, key and messages,
/// with the right secret and a wrong one (no activation checks: the encrypt-on-write image
/// gives its key too).
#[test]
fn dump_volume_key_is_cryptsetups() {
    let test = "dump_volume_key_is_cryptsetups";
    let Some((_dir, root, confs)) = images(test) else {
        return;
    };
    if !have_cryptsetup(test) {
        return;
    }
    for (name, conf) in &confs {
        let img = image(name);
        let right = conf
            .get("PW")
            .filter(|p| !p.is_empty())
            .unwrap_or(&conf["RP"]);
        for secret in [right.as_bytes(), b"wrong"] {
            let r = same(
                &["bitlkDump", "--dump-volume-key", "-q", &img],
                secret,
                &root,
            );
            assert_eq!(r.code == 0, secret == right.as_bytes(), "{name}");
            if r.code == 0 {
                assert!(r.stdout.contains("MK dump:\t"), "{name}");
            }
        }
    }
}
