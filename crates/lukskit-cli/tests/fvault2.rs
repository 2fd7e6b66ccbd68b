//! FileVault 2 (`--type fvault2`) against cryptsetup 2.6.1 and libfvde: `fvault2Dump` (with
//! and without the volume key) byte for byte, `open --test-passphrase` exit codes and
//! messages, damaged metadata (same verdicts as cryptsetup), and the decrypted logical volume
//! (lukskit's data path) against libfvde's `fvdemount`.

mod common;

use common::*;
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::process::Command;

const PASSWORD: &[u8] = b"heslo123\n";

/// `../shared/testdata/other-formats/fvault2-images.tar.xz` unpacked into `dir` (the image
/// `fvault2/small`), or None after `skip_or_fail`.
fn small_image(test: &str, dir: &Path) -> Option<String> {
    if !unpack_other_formats(test, "fvault2-images.tar.xz", dir) {
        return None;
    }
    Some(dir.join("fvault2/small").to_str().unwrap().to_string())
}

/// Both tools' exit code, stdout and stderr for the same arguments.
fn both(args: &[&str], stdin: &[u8]) -> Option<(Run, Run)> {
    let c = cryptsetup(args, stdin)?;
    Some((lukskit(args, stdin), c))
}

fn assert_same(args: &[&str], stdin: &[u8]) {
    let Some((l, c)) = both(args, stdin) else {
        return;
    };
    assert_eq!(
        l.code, c.code,
        "{args:?}: exit code; lukskit stderr {}",
        l.stderr
    );
    assert_eq!(l.stdout, c.stdout, "{args:?}: stdout");
    assert_eq!(l.stderr, c.stderr, "{args:?}: stderr");
}

#[test]
fn dump_is_cryptsetups() {
    let t = tmp();
    let Some(img) = small_image("dump_is_cryptsetups", t.path()) else {
        return;
    };
    if !have_cryptsetup("dump_is_cryptsetups") {
        return;
    }
    assert_same(&["fvault2Dump", &img], b"");
    let Some((l, c)) = both(&["fvault2Dump", "--dump-volume-key", "-q", &img], PASSWORD) else {
        return;
    };
    assert_eq!(c.code, 0, "{}", c.stderr);
    assert!(c.stdout.contains("Volume key:"), "{}", c.stdout);
    assert_eq!((l.code, l.stdout), (0, c.stdout));
    // --volume-key-file: the same key in a new file (mode 0400), the same text; an existing
    // file is refused with cryptsetup's words.
    let (vk_l, vk_c) = (t.path().join("vk-l"), t.path().join("vk-c"));
    let mut outs = Vec::new();
    for (tool, vk) in [("lukskit", &vk_l), ("cryptsetup", &vk_c)] {
        let args = [
            "-v",
            "fvault2Dump",
            "--dump-volume-key",
            "-q",
            "--volume-key-file",
            vk.to_str().unwrap(),
            &img,
        ];
        let r = run_tool(tool, &args, PASSWORD);
        assert_eq!(r.code, 0, "{tool}: {}", r.stderr);
        let again = run_tool(tool, &args, PASSWORD);
        let vk_name = vk.to_str().unwrap();
        outs.push((r.stdout, again.code, again.stderr.replace(vk_name, "VK")));
    }
    assert_eq!(outs[0], outs[1]);
    assert_eq!(std::fs::read(&vk_l).unwrap(), std::fs::read(&vk_c).unwrap());
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&vk_l).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o400);
    // A wrong password: cryptsetup's message and exit code 2.
    assert_same(
        &["fvault2Dump", "--dump-volume-key", "-q", &img],
        b"wrong\n",
    );
    // Something else: "not a valid FVAULT2 device", exit 1.
    let other = write_file(t.path(), "other", &vec![0u8; 1 << 20]);
    assert_same(&["fvault2Dump", &other], b"");
}

#[test]
fn test_passphrase_right_and_wrong_as_cryptsetup() {
    let t = tmp();
    let Some(img) = small_image("test_passphrase_right_and_wrong_as_cryptsetup", t.path()) else {
        return;
    };
    if !have_cryptsetup("test_passphrase_right_and_wrong_as_cryptsetup") {
        return;
    }
    let args = [
        "open",
        "--test-passphrase",
        "--type",
        "fvault2",
        img.as_str(),
    ];
    assert_same(&args, PASSWORD);
    assert_same(&args, b"heslo12\n");
    let key = write_file(t.path(), "key", b"heslo123");
    let mut with_key = args.to_vec();
    with_key.extend(["--key-file", key.as_str()]);
    assert_same(&with_key, b"");
    let Some((l, _)) = both(&args, PASSWORD) else {
        return;
    };
    assert_eq!(l.code, 0);
    let Some((l, _)) = both(&args, b"x\n") else {
        return;
    };
    assert_eq!(l.code, 2);
}

/// Rewrite the CRC-32C (seed 0xffffffff, no final inversion) of the block at `off`.
fn fix_crc(img: &str, off: u64, len: usize) {
    use std::os::unix::fs::FileExt;
    let f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(img)
        .unwrap();
    let mut b = vec![0u8; len];
    f.read_exact_at(&mut b, off).unwrap();
    let mut crc = 0xffff_ffffu32;
    for &x in &b[8..] {
        crc ^= u32::from(x);
        for _ in 0..8 {
            crc = if crc & 1 != 0 {
                (crc >> 1) ^ 0x82F6_3B78
            } else {
                crc >> 1
            };
        }
    }
    f.write_all_at(&crc.to_le_bytes(), off).unwrap();
}

fn poke(img: &str, off: u64, bytes: &[u8]) {
    use std::os::unix::fs::FileExt;
    let f = std::fs::OpenOptions::new().write(true).open(img).unwrap();
    f.write_all_at(bytes, off).unwrap();
}

#[test]
fn damaged_metadata_gets_cryptsetups_verdict() {
    let t = tmp();
    let Some(img) = small_image("damaged_metadata_gets_cryptsetups_verdict", t.path()) else {
        return;
    };
    if !have_cryptsetup("damaged_metadata_gets_cryptsetups_verdict") {
        return;
    }
    let pristine = std::fs::read(&img).unwrap();
    // (what, byte offset, bytes, CRC of the block at (offset, len) rewritten)
    type Case = (&'static str, u64, Vec<u8>, Option<(u64, usize)>);
    let cases: Vec<Case> = vec![
        ("header byte, bad CRC", 200, vec![0x55], None),
        ("version 2", 8, vec![2, 0], Some((0, 512))),
        ("no magic", 88, b"XS".to_vec(), Some((0, 512))),
        ("key size 32", 168, vec![32, 0, 0, 0], Some((0, 512))),
        ("block size 0", 96, vec![0; 4], Some((0, 512))),
        ("block size huge", 96, vec![0xff; 4], Some((0, 512))),
        (
            "disk label past 1 GiB",
            104,
            0x10_0000u64.to_le_bytes().to_vec(),
            Some((0, 512)),
        ),
        (
            "disk label past the end",
            104,
            0x1_0000u64.to_le_bytes().to_vec(),
            Some((0, 512)),
        ),
        ("metadata key", 180, vec![0x11], Some((0, 512))),
        ("disk label damaged", 4096 + 300, vec![0x42], None),
        (
            "descriptor offset huge",
            4096 + 220,
            vec![0xff; 4],
            Some((4096, 8192)),
        ),
        ("no encrypted blocks", 4096 + 8192 + 8, vec![0; 8], None),
        (
            "one encrypted block",
            4096 + 8192 + 8,
            vec![1, 0, 0, 0, 0, 0, 0, 0],
            None,
        ),
        (
            "encrypted metadata elsewhere",
            4096 + 8192 + 32,
            vec![3, 0, 0, 0, 0, 0, 0, 0],
            None,
        ),
        (
            "encrypted metadata past 1 GiB",
            4096 + 8192 + 32,
            vec![0, 0, 8, 0, 0, 0, 0, 0],
            None,
        ),
        (
            "encrypted block damaged",
            2049 * 4096 + 100,
            vec![0x99],
            None,
        ),
    ];
    let logical = (&["fvault2Dump"][..], &b""[..]);
    let unlock = (
        &["open", "--test-passphrase", "--type", "fvault2"][..],
        PASSWORD,
    );
    for (what, off, bytes, crc) in cases {
        std::fs::write(&img, &pristine).unwrap();
        poke(&img, off, &bytes);
        if let Some((o, l)) = crc {
            fix_crc(&img, o, l);
        }
        for (action, stdin) in [logical, unlock] {
            let mut args = action.to_vec();
            args.push(&img);
            let Some((l, c)) = both(&args, stdin) else {
                return;
            };
            assert_eq!(
                (l.code, &l.stdout, &l.stderr),
                (c.code, &c.stdout, &c.stderr),
                "{what}: {args:?}"
            );
        }
    }
    // A truncated image, and one too small for the volume header.
    std::fs::write(&img, &pristine[..3 * 4096]).unwrap();
    assert_same(&["fvault2Dump", &img], b"");
    std::fs::write(&img, &pristine[..100]).unwrap();
    assert_same(&["fvault2Dump", &img], b"");
    assert_same(
        &["open", "--test-passphrase", "--type", "fvault2", &img],
        b"",
    );
}

/// libfvde 20190104 also reads the secondary copies of the metadata, which are wiped in the
/// test image: a copy of it whose header and volume groups descriptor name the primary copies
/// as secondary ones too (cryptsetup reads only the primary ones and dumps it as before).
fn libfvde_readable_copy(img: &str, dir: &Path) -> PathBuf {
    let copy = dir.join("for-libfvde");
    std::fs::copy(img, &copy).unwrap();
    let c = copy.to_str().unwrap();
    for i in 0..3 {
        poke(c, 112 + 8 * i, &1u64.to_le_bytes());
    }
    fix_crc(c, 0, 512);
    poke(c, 4096 + 8192 + 40, &2049u64.to_le_bytes());
    copy
}

/// `blkid -p -o export` of `dev` without its DEVNAME line.
fn blkid(dev: &str) -> String {
    let o = Command::new("blkid")
        .args(["-p", "-o", "export", dev])
        .output()
        .expect("blkid");
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .filter(|l| !l.starts_with("DEVNAME="))
        .map(|l| format!("{l}\n"))
        .collect()
}

/// The SHA-256 and blkid's view of the logical volume as libfvde decrypts it.
fn through_fvdemount(image: &Path, dir: &Path) -> Option<(String, String)> {
    let mnt = dir.join("mnt");
    std::fs::create_dir(&mnt).unwrap();
    let st = Command::new("fvdemount")
        .args(["-p", "heslo123"])
        .arg(image)
        .arg(&mnt)
        .stdout(std::process::Stdio::null())
        .status();
    let Ok(st) = st else {
        skip_or_fail(
            "decrypted_volume_equals_libfvdes",
            "fvdemount is not installed (apt-get install libfvde-utils)",
        );
        return None;
    };
    assert!(st.success(), "fvdemount failed");
    let fvde1 = mnt.join("fvde1");
    let data = std::fs::read(&fvde1);
    let probe = blkid(fvde1.to_str().unwrap());
    let _ = Command::new("fusermount").arg("-u").arg(&mnt).status();
    let data = data.expect("read fvde1");
    assert_eq!(data.len(), 167_772_160);
    assert!(
        probe.contains("TYPE=hfsplus"),
        "blkid of libfvde's volume: {probe}"
    );
    Some((hex::encode(Sha256::digest(&data)), probe))
}

#[test]
fn decrypted_volume_equals_libfvdes() {
    use lukskit_volume::data::DataVolume;
    use lukskit_volume::formats::{format_of, FormatOptions, UnlockRequest};
    let t = tmp();
    let Some(img) = small_image("decrypted_volume_equals_libfvdes", t.path()) else {
        return;
    };
    let copy = libfvde_readable_copy(&img, t.path());
    let Some((expected, probe)) = through_fvdemount(&copy, t.path()) else {
        return;
    };
    assert_eq!(
        lukskit_volume::formats::probe_device(&img).unwrap(),
        Some(lukskit_format::VolumeType::Fvault2)
    );
    let pass = lukskit_crypto::SecretBuf::from_slice(b"heslo123");
    let options = FormatOptions::default();
    let unlocked = format_of(lukskit_format::VolumeType::Fvault2)
        .unwrap()
        .unlock(&UnlockRequest {
            device: &img,
            header: None,
            passphrase: Some(&pass),
            key_files: &[],
            options: &options,
        })
        .unwrap();
    // No UUID for the DM UUID: cryptsetup's FVAULT2 mapping is CRYPT-FVAULT2-NAME.
    assert_eq!(unlocked.uuid, None);
    let table = unlocked.layers.into_iter().next().unwrap();
    let vol = DataVolume::open_table(&img, table, false).unwrap();
    assert_eq!(vol.size(), 167_772_160);
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    let mut off = 0;
    while off < vol.size() {
        vol.read_at(&mut buf, off).unwrap();
        h.update(&buf);
        off += buf.len() as u64;
    }
    assert_eq!(hex::encode(h.finalize()), expected);

    // `image decrypt --type fvault2` writes the same plaintext.
    let out = t.path().join("plain.img");
    let r = lukskit(
        &[
            "image",
            "decrypt",
            "--type",
            "fvault2",
            &img,
            &out.to_string_lossy(),
        ],
        b"heslo123\n",
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    let data = std::fs::read(&out).unwrap();
    assert_eq!(
        hex::encode(Sha256::digest(&data)),
        expected,
        "image decrypt"
    );
    std::fs::remove_file(&out).unwrap();

    // The same through a mapping (fvault2Open: FUSE + loop device here).
    let test = "decrypted_volume_equals_libfvdes";
    if !common::mapping::capable(test) || !common::mapping::have_tool(test, "blkid") {
        return;
    }
    let m = common::mapping::Mapping::new("fvault2");
    lukskit(&["fvault2Open", &img, &m.name], PASSWORD).ok("fvault2Open");
    assert_eq!(blkid(&m.dev()), probe);
    let data = std::fs::read(m.dev()).unwrap();
    assert_eq!(hex::encode(Sha256::digest(&data)), expected);
    let st = lukskit(&["status", &m.name], b"").ok("status");
    assert!(st.stdout.contains("type:    FVAULT2"), "{}", st.stdout);
    assert!(
        st.stdout.contains("offset:  131072 sectors"),
        "{}",
        st.stdout
    );
    lukskit(&["fvault2Close", &m.name], b"").ok("fvault2Close");
}
