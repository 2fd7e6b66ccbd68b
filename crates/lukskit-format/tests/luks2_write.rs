//! Writing LUKS2 headers: the two-copy update protocol checked against real cryptsetup,
//! damaged-copy handling, crash safety, headers made by `cryptsetup luksFormat`, and new
//! headers built by lukskit accepted by cryptsetup.

mod luks2_support;

use luks2_support::*;
use lukskit_format::io::{MemStorage, Storage};
use lukskit_format::luks2::{self, Digest, Luks2Header, NewHeaderParams};
use std::path::Path;

fn copy_image(td: &Path, dir: &TempDir) -> std::path::PathBuf {
    unxz(td, "compatimage2.img", dir)
}

fn open_rw(p: &Path) -> std::fs::File {
    std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(p)
        .unwrap()
}

#[test]
fn write_bumps_epoch_keeps_salts_and_cryptsetup_agrees() {
    let Some(td) = testdata("write_epoch") else {
        return;
    };
    if !have_cryptsetup("write_epoch") {
        return;
    }
    let dir = TempDir::new("write");
    let p = copy_image(&td, &dir);
    let before = std::fs::read(&p).unwrap();
    let f = open_rw(&p);
    let mut hdr = luks2::read(&f).unwrap().header;
    assert_eq!(hdr.binary.seqid, 9);
    luks2::write(&f, &mut hdr).unwrap();
    assert_eq!(hdr.binary.seqid, 10);
    drop(f);

    let after = std::fs::read(&p).unwrap();
    verify_copy_checksum(&after, 0);
    verify_copy_checksum(&after, 16384);
    for off in [0usize, 16384] {
        // Same seqid in both copies, salts unchanged, JSON area byte-identical.
        assert_eq!(&after[off + 16..off + 24], &10u64.to_be_bytes());
        assert_eq!(
            &after[off + 0x68..off + 0xa8],
            &before[off + 0x68..off + 0xa8]
        );
        assert_eq!(
            &after[off + 4096..off + 16384],
            &before[off + 4096..off + 16384]
        );
        assert_eq!(&after[off..off + 16], &before[off..off + 16]);
    }
    // Keyslot areas and data untouched.
    assert_eq!(&after[32768..], &before[32768..]);
    let dump = luks_dump(&p);
    assert_eq!(dump.header["Epoch"], "10");
    let again = check_image(&p);
    assert_eq!(again.binary.seqid, 10);
}

#[test]
fn damaged_copies_are_reported_and_cryptsetup_agrees() {
    let Some(td) = testdata("damaged") else {
        return;
    };
    if !have_cryptsetup("damaged") {
        return;
    }
    let dir = TempDir::new("damaged");
    let orig = copy_image(&td, &dir);
    let pristine = std::fs::read(&orig).unwrap();
    // (byte to flip, which copy is damaged, expected error fragment)
    let cases: [(usize, bool, &str); 5] = [
        (4096 + 20, false, "checksum"),        // primary JSON
        (0x18, false, "checksum"),             // primary label (binary)
        (0, false, "magic"),                   // primary magic: secondary found by scanning
        (16384 + 4096 + 20, true, "checksum"), // secondary JSON
        (16384 + 0x48, true, "checksum"),      // secondary checksum_alg byte ('s' -> 'r')
    ];
    for (i, (byte, secondary, frag)) in cases.iter().enumerate() {
        let p = dir.path(&format!("case{i}.img"));
        let mut data = pristine.clone();
        data[*byte] ^= 0x01;
        std::fs::write(&p, &data).unwrap();
        let out = luks2::read(&std::fs::File::open(&p).unwrap()).unwrap();
        assert_eq!(out.primary_ok, *secondary, "case {i}");
        assert_eq!(out.secondary_ok, !*secondary, "case {i}");
        let err = if *secondary {
            out.secondary_error.clone().unwrap()
        } else {
            out.primary_error.clone().unwrap()
        };
        let err_l = err.to_lowercase();
        assert!(
            err_l.contains(frag) || (*frag == "checksum" && err_l.contains("unsupported")),
            "case {i}: {err}"
        );
        assert_eq!(out.header.binary.seqid, 9);
        assert_eq!(out.header.to_json_string(), raw_json(&orig));
        // cryptsetup reads the damaged device too (and may repair it in place).
        let dump = luks_dump(&p);
        assert_eq!(dump.header["Epoch"], "9");
    }

    // Both copies damaged: neither lukskit nor cryptsetup accepts the device.
    let p = dir.path("both.img");
    let mut data = pristine.clone();
    data[4096 + 20] ^= 1;
    data[16384 + 4096 + 20] ^= 1;
    std::fs::write(&p, &data).unwrap();
    let e = luks2::read(&std::fs::File::open(&p).unwrap()).unwrap_err();
    assert!(
        matches!(
            e,
            lukskit_format::FormatError::Luks2(lukskit_format::Luks2Error::NoValidCopy { .. })
        ),
        "{e}"
    );
    assert!(!cs(&["luksDump", p.to_str().unwrap()]).status.success());
    assert!(
        !cs(&["isLuks", "--type", "luks2", p.to_str().unwrap()])
            .status
            .success()
            || {
                // isLuks only checks the primary magic; luksDump above is the real reader check.
                true
            }
    );

    // Not LUKS at all.
    let z = MemStorage::new(1 << 20);
    let e = luks2::read(&z).unwrap_err();
    assert!(matches!(e, lukskit_format::FormatError::NotLuks(_)), "{e}");
}

#[test]
fn repair_copy_with_write_copy() {
    let Some(td) = testdata("write_copy") else {
        return;
    };
    if !have_cryptsetup("write_copy") {
        return;
    }
    let dir = TempDir::new("wcopy");
    let p = copy_image(&td, &dir);
    let mut data = std::fs::read(&p).unwrap();
    let old_salt2 = data[16384 + 0x68..16384 + 0xa8].to_vec();
    data[16384 + 4096 + 5] ^= 0x40;
    std::fs::write(&p, &data).unwrap();
    let f = open_rw(&p);
    let out = luks2::read(&f).unwrap();
    assert!(!out.secondary_ok);
    luks2::write_copy(&f, &out.header, true).unwrap();
    let out2 = luks2::read(&f).unwrap();
    assert!(out2.primary_ok && out2.secondary_ok);
    drop(f);
    let fixed = std::fs::read(&p).unwrap();
    verify_copy_checksum(&fixed, 16384);
    assert_eq!(&fixed[16384 + 16..16384 + 24], &9u64.to_be_bytes());
    assert_ne!(
        &fixed[16384 + 0x68..16384 + 0xa8],
        &old_salt2[..],
        "fresh salt"
    );
    assert_eq!(luks_dump(&p).header["Epoch"], "9");
}

/// A storage whose `fail_at`-th write fails (simulated crash: nothing after it happens).
struct CrashStorage {
    inner: MemStorage,
    writes: std::sync::atomic::AtomicUsize,
    fail_at: usize,
}

impl Storage for CrashStorage {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
        self.inner.read_exact_at(buf, offset)
    }
    fn write_all_at(&self, buf: &[u8], offset: u64) -> std::io::Result<()> {
        let n = self
            .writes
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst)
            + 1;
        if n >= self.fail_at {
            return Err(std::io::Error::other("simulated crash"));
        }
        self.inner.write_all_at(buf, offset)
    }
    fn sync(&self) -> std::io::Result<()> {
        Ok(())
    }
    fn size(&self) -> std::io::Result<u64> {
        self.inner.size()
    }
}

#[test]
fn crash_at_every_write_leaves_a_consistent_header() {
    let Some(td) = testdata("crash") else { return };
    let cs_ok_here = have_cryptsetup("crash (cryptsetup part)");
    let dir = TempDir::new("crash");
    let p = copy_image(&td, &dir);
    let image = std::fs::read(&p).unwrap();
    let base = luks2::read(&MemStorage::from_vec(image.clone()))
        .unwrap()
        .header;
    let old_json = base.to_json_string();
    // The update adds a token, so old and new metadata differ.
    let mut updated = base.clone();
    updated
        .add_token(
            None,
            serde_json::json!({"type": "x-test", "keyslots": ["0"], "v": "a/b"}),
        )
        .unwrap();
    let new_json = updated.to_json_string();
    // Writes: primary bin, primary JSON, primary csum, secondary bin, secondary JSON,
    // secondary csum. Crash before write k (k = 7: no crash).
    for k in 1..=7usize {
        let st = CrashStorage {
            inner: MemStorage::from_vec(image.clone()),
            writes: Default::default(),
            fail_at: k,
        };
        let mut h = updated.clone();
        let r = luks2::write(&st, &mut h);
        assert_eq!(r.is_ok(), k == 7, "k={k}");
        let out = luks2::read(&st.inner).unwrap();
        let (want_seq, want_json) = if k <= 3 {
            (9, &old_json)
        } else {
            (10, &new_json)
        };
        assert_eq!(out.header.binary.seqid, want_seq, "k={k}");
        assert_eq!(&out.header.to_json_string(), want_json, "k={k}");
        assert_eq!(out.primary_ok, k >= 4 || k == 1, "k={k}");
        assert_eq!(out.secondary_ok, k <= 3 || k == 7, "k={k}");
        if k == 4 {
            assert!(out.secondary_error.as_deref().unwrap().contains("obsolete"));
        }
        if cs_ok_here {
            // cryptsetup picks the same copy.
            let f = dir.path(&format!("crash{k}.img"));
            std::fs::write(&f, st.inner.to_vec()).unwrap();
            assert_eq!(luks_dump(&f).header["Epoch"], want_seq.to_string(), "k={k}");
        }
    }
}

#[test]
fn cryptsetup_formatted_headers_all_metadata_sizes() {
    if !have_cryptsetup("formats") {
        return;
    }
    let dir = TempDir::new("formats");
    for (i, md) in [
        "16k", "32k", "64k", "128k", "256k", "512k", "1024k", "2048k", "4096k",
    ]
    .iter()
    .enumerate()
    {
        let sector = ["512", "4096", "1024", "2048"][i % 4];
        let p = format(
            &dir,
            &format!("f{md}.img"),
            12 << 20,
            &[
                "--luks2-metadata-size",
                md,
                "--luks2-keyslots-size",
                "1m",
                "--label",
                &format!("label-{md}"),
                "--subsystem",
                "sub/system",
                "--sector-size",
                sector,
            ],
        );
        let hdr = check_image(&p);
        let kib: u64 = md.trim_end_matches('k').parse().unwrap();
        assert_eq!(hdr.metadata_size(), kib * 1024);
        assert_eq!(hdr.keyslots_size().unwrap(), 1 << 20);
        assert_eq!(hdr.binary.label, format!("label-{md}"));
        assert_eq!(hdr.binary.subsystem, "sub/system");
        assert_eq!(
            hdr.segments().unwrap()[0].sector_size,
            sector.parse::<u32>().unwrap()
        );
        // cryptsetup's data offset: keyslots end rounded up to 1 MiB.
        let end = 2 * kib * 1024 + (1 << 20);
        assert_eq!(hdr.data_offset().unwrap(), end.div_ceil(1 << 20) << 20);
        let ks = hdr.keyslot(0).unwrap().unwrap();
        assert_eq!(ks.area_offset, 2 * kib * 1024);
    }
}

/// A header made by `new()` + `add_keyslot()` reproduces, byte for byte, the JSON of a header
/// made by `cryptsetup luksFormat` with the same parameters.
#[test]
fn new_header_matches_cryptsetup_format_json() {
    if !have_cryptsetup("new_matches_format") {
        return;
    }
    let dir = TempDir::new("newfmt");
    for (md, extra) in [
        ("16k", vec!["--sector-size", "512"]),
        (
            "64k",
            vec!["--sector-size", "4096", "--label", "L", "--subsystem", "S"],
        ),
        (
            "4096k",
            vec![
                "--cipher",
                "aes-cbc-essiv:sha256",
                "--key-size",
                "256",
                "--offset",
                "32768",
            ],
        ),
    ] {
        let mut args = vec!["--luks2-metadata-size", md, "--luks2-keyslots-size", "2m"];
        args.extend(extra.iter());
        let p = format(&dir, &format!("n{md}.img"), 24 << 20, &args);
        let cs_hdr = check_image(&p);
        let seg = &cs_hdr.segments().unwrap()[0];
        let mut digest: Digest = cs_hdr.digests().unwrap().remove(0);
        digest.keyslots.clear();
        let mut ours = Luks2Header::new(&NewHeaderParams {
            metadata_size: cs_hdr.metadata_size(),
            keyslots_size: cs_hdr.keyslots_size().unwrap(),
            data_offset: seg.offset,
            data_size: seg.size,
            encryption: seg.encryption.clone(),
            sector_size: seg.sector_size,
            uuid: cs_hdr.binary.uuid.clone(),
            label: cs_hdr.binary.label.clone(),
            subsystem: cs_hdr.binary.subsystem.clone(),
            digest,
        })
        .unwrap();
        assert_eq!(ours.binary.seqid, 1);
        let ks = cs_hdr.keyslot(0).unwrap().unwrap();
        let area = Luks2Header::keyslot_area_size(ks.key_size);
        assert_eq!(area, ks.area_size);
        assert_eq!(ours.find_keyslot_area(area).unwrap(), Some(ks.area_offset));
        ours.add_keyslot(&ks).unwrap();
        ours.assign_keyslot_to_digest(0, 0).unwrap();
        assert_eq!(ours.to_json_string(), cs_hdr.to_json_string(), "{md}");
    }
}

/// `Luks2Header::new()` written with `write()` is a LUKS2 device for cryptsetup: isLuks,
/// luksDump, and — given the volume key matching the digest — luksAddKey and unlock.
#[test]
fn new_header_written_is_accepted_by_cryptsetup() {
    if !have_cryptsetup("new_written") {
        return;
    }
    let dir = TempDir::new("newwr");
    // A reference device gives us a volume key and its digest.
    let refdev = format(&dir, "ref.img", 20 << 20, &["--luks2-keyslots-size", "1m"]);
    let key = keyfile(&dir);
    let vk = dir.path("vk.bin");
    cs_ok(&[
        "luksDump",
        "-q",
        "--dump-volume-key",
        "--volume-key-file",
        vk.to_str().unwrap(),
        "--key-file",
        key.to_str().unwrap(),
        refdev.to_str().unwrap(),
    ]);
    let refhdr = check_image(&refdev);
    let mut digest = refhdr.digests().unwrap().remove(0);
    digest.keyslots.clear();

    let p = dir.path("ours.img");
    let f = std::fs::OpenOptions::new()
        .create(true)
        .truncate(true)
        .read(true)
        .write(true)
        .open(&p)
        .unwrap();
    f.set_len(8 << 20).unwrap();
    let uuid = "0b2cd8f3-6d87-4a47-93c5-5f9a21f0a0c1";
    let mut hdr = Luks2Header::new(&NewHeaderParams {
        metadata_size: 0x8000,
        keyslots_size: 0x20_0000,
        data_offset: 4 << 20,
        data_size: None,
        encryption: "aes-xts-plain64".into(),
        sector_size: 4096,
        uuid: uuid.into(),
        label: "lukskit".into(),
        subsystem: "test/sub".into(),
        digest,
    })
    .unwrap();
    luks2::write(&f, &mut hdr).unwrap();
    drop(f);
    assert_eq!(hdr.binary.seqid, 2);
    let data = std::fs::read(&p).unwrap();
    verify_copy_checksum(&data, 0);
    verify_copy_checksum(&data, 0x8000);
    assert_ne!(
        &data[0x68..0xa8],
        &data[0x8000 + 0x68..0x8000 + 0xa8],
        "per-copy salts"
    );

    let ps = p.to_str().unwrap();
    assert!(cs(&["isLuks", ps]).status.success());
    assert!(cs(&["isLuks", "--type", "luks2", ps]).status.success());
    let dump = luks_dump(&p);
    assert_eq!(dump.header["Epoch"], "2");
    assert_eq!(dump.header["UUID"], uuid);
    assert_eq!(dump.header["Label"], "lukskit");
    assert_eq!(dump.header["Subsystem"], "test/sub");
    assert!(dump.keyslots.is_empty());
    assert_eq!(dump.segments[0].fields["sector"], "4096 [bytes]");
    assert_eq!(dump.segments[0].fields["offset"], "4194304 [bytes]");
    let read_back = luks2::read(&std::fs::File::open(&p).unwrap()).unwrap();
    assert!(read_back.primary_ok && read_back.secondary_ok);
    assert_eq!(read_back.header.to_json_string(), hdr.to_json_string());

    // cryptsetup can add a keyslot with the volume key and unlock it.
    let key2 = dir.path("key2");
    std::fs::write(&key2, b"second").unwrap();
    cs_ok(&[
        "luksAddKey",
        "-q",
        "--pbkdf",
        "pbkdf2",
        "--pbkdf-force-iterations",
        "1000",
        "--key-size",
        "512",
        "--volume-key-file",
        vk.to_str().unwrap(),
        ps,
        key2.to_str().unwrap(),
    ]);
    cs_ok(&[
        "open",
        "--test-passphrase",
        "--key-file",
        key2.to_str().unwrap(),
        ps,
    ]);
    let after = check_image(&p);
    assert_eq!(after.binary.seqid, 3);
    assert_eq!(after.keyslot_ids().unwrap(), vec![0]);
}

/// Mutators produce exactly the JSON cryptsetup produces for the same operation.
#[test]
fn mutators_match_cryptsetup_operations() {
    if !have_cryptsetup("mutators") {
        return;
    }
    let dir = TempDir::new("mut");
    let p = format(&dir, "m.img", 20 << 20, &["--luks2-keyslots-size", "2m"]);
    let ps = p.to_str().unwrap();
    let key = keyfile(&dir);
    let a = check_image(&p);

    // luksAddKey → add_keyslot + assign_keyslot_to_digest.
    let key2 = dir.path("key2");
    std::fs::write(&key2, b"two").unwrap();
    cs_ok(&[
        "luksAddKey",
        "-q",
        "--key-file",
        key.to_str().unwrap(),
        "--pbkdf",
        "pbkdf2",
        "--pbkdf-force-iterations",
        "1000",
        ps,
        key2.to_str().unwrap(),
    ]);
    let b = check_image(&p);
    let ks1 = b.keyslot(1).unwrap().unwrap();
    let mut ours = a.clone();
    assert_eq!(
        ours.find_keyslot_area(Luks2Header::keyslot_area_size(ks1.key_size))
            .unwrap(),
        Some(ks1.area_offset)
    );
    ours.add_keyslot(&ks1).unwrap();
    ours.assign_keyslot_to_digest(1, 0).unwrap();
    assert_eq!(ours.to_json_string(), b.to_json_string());

    // config --priority → set_keyslot_priority.
    cs_ok(&["config", "--priority", "prefer", "--key-slot", "1", ps]);
    let c = check_image(&p);
    ours.set_keyslot_priority(1, 2).unwrap();
    assert_eq!(ours.to_json_string(), c.to_json_string());
    cs_ok(&["config", "--priority", "normal", "--key-slot", "1", ps]);
    let c2 = check_image(&p);
    ours.set_keyslot_priority(1, 1).unwrap();
    assert_eq!(ours.to_json_string(), c2.to_json_string());

    // token add (luks2-keyring) → add_token; token import (custom type) → add_token.
    cs_ok(&[
        "token",
        "add",
        "--key-description",
        "my:key",
        "--key-slot",
        "1",
        ps,
    ]);
    let d = check_image(&p);
    let t0 = d.tokens().unwrap().remove(0);
    assert_eq!(ours.add_token(None, t0.json.clone()).unwrap(), 0);
    assert_eq!(ours.to_json_string(), d.to_json_string());
    let tj = dir.path("token.json");
    std::fs::write(
        &tj,
        br#"{"type":"x-custom","keyslots":["0","1"],"blob":{"z":1,"a":[true,null]},"s":"a/b"}"#,
    )
    .unwrap();
    cs_ok(&[
        "token",
        "import",
        "--json-file",
        tj.to_str().unwrap(),
        "--token-id",
        "5",
        ps,
    ]);
    let e = check_image(&p);
    let t5 = e.tokens().unwrap().into_iter().find(|t| t.id == 5).unwrap();
    assert_eq!(ours.add_token(Some(5), t5.json.clone()).unwrap(), 5);
    assert_eq!(ours.to_json_string(), e.to_json_string());

    // luksKillSlot → remove_keyslot (also drops the id from digests and tokens).
    cs_ok(&["luksKillSlot", "-q", ps, "1"]);
    let f = check_image(&p);
    ours.remove_keyslot(1).unwrap();
    assert_eq!(ours.to_json_string(), f.to_json_string());

    // token remove → remove_token.
    cs_ok(&["token", "remove", "--token-id", "5", ps]);
    let g = check_image(&p);
    ours.remove_token(5).unwrap();
    assert_eq!(ours.to_json_string(), g.to_json_string());
    assert!(ours.remove_token(5).is_err());

    // Our write of the same metadata yields the next epoch and a header cryptsetup reads.
    let fh = open_rw(&p);
    let mut cur = luks2::read(&fh).unwrap().header;
    let seq = cur.binary.seqid;
    luks2::check_sequence_id(&fh, &cur).unwrap();
    luks2::write(&fh, &mut cur).unwrap();
    drop(fh);
    assert_eq!(luks_dump(&p).header["Epoch"], (seq + 1).to_string());
    cs_ok(&[
        "open",
        "--test-passphrase",
        "--key-file",
        key.to_str().unwrap(),
        ps,
    ]);
}

/// Removing the last keyslot of an unbound digest erases that digest, as cryptsetup does.
#[test]
fn remove_unbound_keyslot_erases_its_digest() {
    let Some(td) = testdata("unbound_kill") else {
        return;
    };
    if !have_cryptsetup("unbound_kill") {
        return;
    }
    let dir = TempDir::new("unbkill");
    let p = unxz(&td, "luks2_keyslot_unassigned.img", &dir);
    let mut ours = check_image(&p);
    cs_ok(&["luksKillSlot", "-q", p.to_str().unwrap(), "1"]);
    let after = check_image(&p);
    ours.remove_keyslot(1).unwrap();
    assert_eq!(ours.to_json_string(), after.to_json_string());
    assert_eq!(after.digests().unwrap().len(), 1);
}

#[test]
fn json_too_large_is_refused() {
    let d = Digest {
        id: 0,
        kind: lukskit_format::luks2::DigestType::Pbkdf2,
        keyslots: vec![],
        segments: vec![0],
        hash: "sha256".into(),
        iterations: 1000,
        salt: vec![7; 32],
        digest: vec![9; 32],
    };
    let mut h = Luks2Header::new(&NewHeaderParams {
        metadata_size: 0x4000,
        keyslots_size: 0x10_0000,
        data_offset: 2 << 20,
        data_size: None,
        encryption: "aes-xts-plain64".into(),
        sector_size: 512,
        uuid: "0b2cd8f3-6d87-4a47-93c5-5f9a21f0a0c1".into(),
        label: String::new(),
        subsystem: String::new(),
        digest: d,
    })
    .unwrap();
    let big = "x".repeat(12000);
    let e = h
        .add_token(
            None,
            serde_json::json!({"type": "big", "keyslots": [], "data": big}),
        )
        .unwrap_err();
    assert!(
        matches!(
            e,
            lukskit_format::FormatError::Luks2(lukskit_format::Luks2Error::JsonAreaFull {
                max: 12288,
                ..
            })
        ),
        "{e}"
    );
    assert!(h.tokens().unwrap().is_empty(), "rolled back");
    // Exactly filling the area is allowed by validation but not by the writer (needs a NUL).
    let base = h.to_json_string().len();
    let overhead =
        r#","tokens":{"0":{"type":"f","keyslots":[],"d":""}}"#.len() - r#","tokens":{}"#.len();
    let fill = 12288 - base - overhead;
    h.add_token(
        None,
        serde_json::json!({"type": "f", "keyslots": [], "d": "y".repeat(fill)}),
    )
    .unwrap();
    assert_eq!(h.to_json_string().len(), 12288);
    let st = MemStorage::new(4 << 20);
    let e = luks2::write(&st, &mut h).unwrap_err();
    assert!(
        matches!(
            e,
            lukskit_format::FormatError::Luks2(lukskit_format::Luks2Error::JsonTooLarge {
                len: 12288,
                max: 12287
            })
        ),
        "{e}"
    );
    h.remove_token(0).unwrap();
    h.add_token(
        None,
        serde_json::json!({"type": "f", "keyslots": [], "d": "y".repeat(fill - 1)}),
    )
    .unwrap();
    luks2::write(&st, &mut h).unwrap();
    let back = luks2::read(&st).unwrap();
    assert_eq!(back.header.to_json_string(), h.to_json_string());
}
