//! The facade against cryptsetup 2.6.1: images cryptsetup made read as the file system put
//! into them, and images the facade made open with cryptsetup.

#[path = "../examples/superblock.rs"]
mod superblock;

use lukskit::{FormatOptions, KeyslotOptions, Pbkdf, Secret, Volume};
use std::process::Command;

/// Fail (never pass) when a tool the comparison needs is missing, unless
/// LUKSKIT_ALLOW_SKIP=1 (as crates/lukskit-cli/tests/common's skip_or_fail).
fn need(tool: &str) -> bool {
    if Command::new(tool).arg("--version").output().is_ok() {
        return true;
    }
    if std::env::var("LUKSKIT_ALLOW_SKIP").as_deref() == Ok("1") {
        eprintln!("SKIP: {tool} is not installed");
        return false;
    }
    panic!("{tool} is not installed (LUKSKIT_ALLOW_SKIP=1 to skip)");
}

fn run(cmd: &mut Command) -> String {
    let out = cmd.output().expect("tool runs");
    assert!(
        out.status.success(),
        "{cmd:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// `dumpe2fs -h` field `name`.
fn e2field(text: &str, name: &str) -> String {
    text.lines()
        .find_map(|l| {
            l.strip_prefix(name)
                .map(|v| v.trim_start_matches(':').trim().to_string())
        })
        .unwrap_or_else(|| panic!("{name} in dumpe2fs output"))
}

/// An ext4 file system encrypted in place by `cryptsetup reencrypt --encrypt` (LUKS2) reads,
/// through the example of the crate docs, as dumpe2fs read it before encryption.
#[test]
fn superblock_of_cryptsetup_encrypted_ext4() {
    if !need("cryptsetup") || !need("mkfs.ext4") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let img = dir.path().join("fs.img");
    let kf = dir.path().join("key");
    std::fs::write(&kf, b"a key file\n\x00binary").unwrap();
    std::fs::File::create(&img)
        .unwrap()
        .set_len(32 << 20)
        .unwrap();
    let (img, kf) = (img.to_str().unwrap(), kf.to_str().unwrap());
    run(Command::new("mkfs.ext4").args(["-q", "-F", "-L", "facade-test", img, "16M"]));
    let before = run(Command::new("dumpe2fs").args(["-h", img]));
    run(Command::new("cryptsetup").args([
        "reencrypt",
        "-q",
        "--encrypt",
        "--type",
        "luks2",
        "--force-offline-reencrypt",
        "--reduce-device-size",
        "16M",
        "--pbkdf",
        "pbkdf2",
        "--pbkdf-force-iterations",
        "1000",
        "-d",
        kf,
        img,
    ]));
    // The plaintext file system is gone from the image.
    assert!(
        Command::new("dumpe2fs")
            .args(["-h", img])
            .output()
            .unwrap()
            .status
            .code()
            != Some(0)
    );

    let sb = superblock::read_superblock(img, kf).unwrap();
    assert_eq!(sb.label, e2field(&before, "Filesystem volume name"));
    assert_eq!(sb.uuid, e2field(&before, "Filesystem UUID"));
    assert_eq!(sb.blocks.to_string(), e2field(&before, "Block count"));
    assert_eq!(sb.block_size.to_string(), e2field(&before, "Block size"));

    let wrong = Secret::passphrase("not the key");
    let err = Volume::open(img).unwrap().unlock(wrong).unwrap_err();
    assert!(matches!(err, lukskit::Error::WrongPassphrase), "{err:?}");
}

/// A LUKS1 and a LUKS2 volume formatted by the facade open with cryptsetup, which reads
/// the data the facade wrote (cryptsetup's volume key through the facade's plaintext
/// offsets, compared with the facade's own); keys added and removed by the facade are
/// as cryptsetup's luksDump and --test-passphrase see them.
#[test]
fn facade_formatted_volumes_open_with_cryptsetup() {
    if !need("cryptsetup") {
        return;
    }
    for version in ["luks1", "luks2"] {
        let dir = tempfile::tempdir().unwrap();
        let img = dir.path().join("v.img");
        std::fs::File::create(&img)
            .unwrap()
            .set_len(20 << 20)
            .unwrap();
        let img = img.to_str().unwrap();
        let opts = if version == "luks1" {
            FormatOptions::luks1()
        } else {
            FormatOptions::luks2()
        }
        .cipher("aes-cbc-essiv:sha256")
        .unwrap()
        .key_bits(256)
        .pbkdf(Pbkdf::Pbkdf2 { iterations: 1000 });
        lukskit::format(img, &Secret::passphrase("first"), &opts).unwrap();

        let mut vol = Volume::open_rw(img)
            .unwrap()
            .unlock(Secret::passphrase("first"))
            .unwrap();
        let fast = KeyslotOptions::new().pbkdf(Pbkdf::Pbkdf2 { iterations: 1000 });
        let slot = vol.add_key(&Secret::passphrase("second"), &fast).unwrap();
        assert_eq!(slot, 1);
        let data: Vec<u8> = (0..5000u32).map(|i| (i * 7 + 3) as u8).collect();
        vol.write_at(&data, 777).unwrap();
        vol.flush().unwrap();
        let vk = hex::encode(vol.volume_key().as_bytes());
        let size = vol.size();
        drop(vol);

        let dump = run(Command::new("cryptsetup").args(["luksDump", img]));
        assert!(
            dump.contains(&format!("Version:       \t{}", &version[4..]))
                || dump.contains(&format!("Version:        {}", &version[4..])),
            "{dump}"
        );
        assert!(
            dump.contains("aes") && dump.contains("cbc-essiv:sha256"),
            "{dump}"
        );
        for pass in ["first", "second"] {
            let st = Command::new("cryptsetup")
                .args(["open", "--test-passphrase", "--key-file", "-", img])
                .stdin(std::process::Stdio::piped())
                .spawn()
                .and_then(|mut c| {
                    use std::io::Write;
                    c.stdin.take().unwrap().write_all(pass.as_bytes())?;
                    c.wait()
                })
                .unwrap();
            assert!(st.success(), "{version}: cryptsetup refuses {pass}");
        }
        // cryptsetup's volume key (from the passphrase) is the facade's.
        let out = Command::new("cryptsetup")
            .args([
                "luksDump",
                "--dump-volume-key",
                "-q",
                "--key-file",
                "-",
                img,
            ])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .and_then(|mut c| {
                use std::io::Write;
                c.stdin.take().unwrap().write_all(b"second")?;
                c.wait_with_output()
            })
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout).replace([' ', '\t', '\n'], "");
        assert!(
            text.contains(&vk),
            "{version}: volume key differs from cryptsetup's: {text}"
        );

        // (cryptsetup decrypts the data in facade_written_data_as_cryptsetup_decrypts it.)
        let mut vol = Volume::open_rw(img).unwrap();
        vol.remove_key(0).unwrap();
        assert_eq!(vol.keyslots().unwrap(), vec![1]);
        drop(vol); // its exclusive lock would make the next open wait
        let err = Volume::open(img)
            .unwrap()
            .unlock(Secret::passphrase("first"))
            .unwrap_err();
        assert!(matches!(err, lukskit::Error::WrongPassphrase), "{err:?}");
        let vol = Volume::open(img)
            .unwrap()
            .unlock(Secret::volume_key(hex::decode(&vk).unwrap()))
            .unwrap();
        let mut back = vec![0u8; data.len()];
        vol.read_at(&mut back, 777).unwrap();
        assert_eq!(back, data);
        assert_eq!(vol.size(), size);
        let err = vol.read_at(&mut back, size - 10).unwrap_err();
        assert!(matches!(err, lukskit::Error::OutOfRange { .. }), "{err:?}");
    }
}

/// Data the facade writes into a LUKS2 volume it formatted (detached header) is what
/// cryptsetup's offline decryption (`reencrypt --decrypt --header`, no dm-crypt needed)
/// leaves on the device.
#[test]
fn facade_written_data_as_cryptsetup_decrypts_it() {
    if !need("cryptsetup") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let img = dir.path().join("data.img");
    let hdr = dir.path().join("hdr.img");
    let kf = dir.path().join("kf");
    std::fs::write(&kf, b"passphrase in a file").unwrap();
    std::fs::File::create(&img)
        .unwrap()
        .set_len(4 << 20)
        .unwrap();
    let (img, hdr, kf) = (
        img.to_str().unwrap(),
        hdr.to_str().unwrap(),
        kf.to_str().unwrap(),
    );
    let opts = FormatOptions::luks2()
        .header(hdr)
        .sector_size(4096)
        .pbkdf(Pbkdf::Pbkdf2 { iterations: 1000 });
    lukskit::format(img, &Secret::key_file(kf).unwrap(), &opts).unwrap();
    let vol = lukskit::OpenOptions::new()
        .header(hdr)
        .writable(true)
        .open(img)
        .unwrap()
        .unlock(Secret::key_file(kf).unwrap())
        .unwrap();
    assert_eq!(vol.size(), 4 << 20);
    let mut expected = vec![0u8; 4 << 20];
    vol.read_at(&mut expected, 0).unwrap();
    for (i, at) in [0u64, 511, 4095, 100_000, (4 << 20) - 3000]
        .into_iter()
        .enumerate()
    {
        let chunk: Vec<u8> = (0..3000u32).map(|j| (j as u8) ^ (i as u8 * 37)).collect();
        vol.write_at(&chunk, at).unwrap();
        expected[at as usize..at as usize + chunk.len()].copy_from_slice(&chunk);
    }
    // The stream view writes and reads as the offsets do.
    {
        use std::io::{Read, Seek, SeekFrom, Write};
        let mut s = vol.stream();
        s.seek(SeekFrom::Start(2_000_000)).unwrap();
        s.write_all(b"through the stream").unwrap();
        expected[2_000_000..2_000_018].copy_from_slice(b"through the stream");
        s.seek(SeekFrom::End(-18)).unwrap();
        let mut tail = [0u8; 40];
        assert_eq!(s.read(&mut tail).unwrap(), 18);
        assert_eq!(&tail[..18], &expected[expected.len() - 18..]);
    }
    vol.flush().unwrap();
    drop(vol);
    run(Command::new("cryptsetup").args([
        "reencrypt",
        "-q",
        "--decrypt",
        "--force-offline-reencrypt",
        "--header",
        hdr,
        "-d",
        kf,
        img,
    ]));
    let plain = std::fs::read(img).unwrap();
    assert!(
        plain == expected,
        "cryptsetup's decryption differs from what the facade wrote"
    );
}

/// A build without the `nbd` and `tang` features refuses NBD URIs and tokens with
/// `FeatureDisabled`, before any connection or token is tried.
#[cfg(not(any(feature = "nbd", feature = "tang")))]
#[test]
fn disabled_features_are_typed_errors() {
    let err = Volume::open("nbd://127.0.0.1:1/export").unwrap_err();
    assert!(
        matches!(err, lukskit::Error::FeatureDisabled { feature: "nbd" }),
        "{err:?}"
    );
    let dir = tempfile::tempdir().unwrap();
    let img = dir.path().join("t.img");
    std::fs::File::create(&img)
        .unwrap()
        .set_len(20 << 20)
        .unwrap();
    let img = img.to_str().unwrap();
    let opts = FormatOptions::luks2().pbkdf(Pbkdf::Pbkdf2 { iterations: 1000 });
    lukskit::format(img, &Secret::passphrase("p"), &opts).unwrap();
    let err = Volume::open(img)
        .unwrap()
        .unlock(Secret::any_token())
        .unwrap_err();
    assert!(
        matches!(err, lukskit::Error::FeatureDisabled { feature: "tang" }),
        "{err:?}"
    );
    let err = Volume::open(img)
        .unwrap()
        .unlock(Secret::volume_key([0u8; 64]))
        .unwrap_err();
    assert!(matches!(err, lukskit::Error::WrongVolumeKey), "{err:?}");
}
