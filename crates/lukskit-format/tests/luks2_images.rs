//! Reading cryptsetup's own LUKS2 test images: every typed field is compared with real
//! `cryptsetup luksDump` / `luksDump --dump-json-metadata` output, and the JSON we serialise
//! is compared byte for byte with the JSON text cryptsetup wrote.

mod luks2_support;

use luks2_support::*;
use lukskit_format::luks2::{self, KdfParams};

#[test]
fn compatimage2() {
    let Some(td) = testdata("compatimage2") else {
        return;
    };
    if !have_cryptsetup("compatimage2") {
        return;
    }
    let dir = TempDir::new("compat2");
    let p = unxz(&td, "compatimage2.img", &dir);
    let hdr = check_image(&p);
    // Facts about this image independent of cryptsetup's output format.
    assert_eq!(hdr.binary.seqid, 9);
    assert_eq!(hdr.data_offset().unwrap(), 4194304);
    assert_eq!(hdr.hdr_and_areas_size().unwrap(), 2 * 16384 + 4161536);
    let ks = hdr.keyslots().unwrap();
    assert!(
        matches!(&ks[1].kdf, KdfParams::Argon2 { variant, time: 4, memory: 65536, cpus: 2, .. } if variant == "argon2id")
    );
    assert!(hdr.unknown_requirements().is_empty());
    // First free area after slots 0 (32768+65536) and 1 (98304+65536).
    assert_eq!(hdr.find_keyslot_area(65536).unwrap(), Some(163840));
    assert_eq!(
        hdr.find_keyslot_area(hdr.keyslots_size().unwrap()).unwrap(),
        None
    );
}

#[test]
fn keyslot_unassigned() {
    let Some(td) = testdata("keyslot_unassigned") else {
        return;
    };
    if !have_cryptsetup("keyslot_unassigned") {
        return;
    }
    let dir = TempDir::new("unassigned");
    let p = unxz(&td, "luks2_keyslot_unassigned.img", &dir);
    let hdr = check_image(&p);
    // Keyslot "1" precedes "0" in the object; views are sorted by id.
    assert_eq!(hdr.keyslot_ids().unwrap(), vec![0, 1]);
    assert!(hdr.to_json_string().starts_with("{\"keyslots\":{\"1\":"));
    let d = hdr.digests().unwrap();
    assert!(d[1].segments.is_empty() && d[1].keyslots == vec![1]);
    // The gap between slot 1 (32768..163840) and slot 0 (163840..294912) is none; first fit
    // is after slot 0.
    assert_eq!(hdr.find_keyslot_area(131072).unwrap(), Some(294912));
}

#[test]
fn invalid_cipher_image() {
    let Some(td) = testdata("invalid_cipher") else {
        return;
    };
    if !have_cryptsetup("invalid_cipher") {
        return;
    }
    let dir = TempDir::new("invcipher");
    let p = unxz(&td, "luks2_invalid_cipher.img", &dir);
    let hdr = check_image(&p);
    assert_eq!(
        hdr.segments().unwrap()[0].encryption,
        "capi:xts(ecb(aes-generic))-plain64"
    );
    assert_eq!(hdr.keyslots().unwrap()[0].area_key_size, 64);
}

#[test]
fn header_requirements_images() {
    let Some(td) = testdata("header_requirements") else {
        return;
    };
    if !have_cryptsetup("header_requirements") {
        return;
    }
    let dir = TempDir::new("reqs");
    untar(&td, "luks2_header_requirements.tar.xz", &dir);
    let hdr = check_image(&dir.path("luks2_header_requirements"));
    assert_eq!(hdr.requirements(), vec!["req0", "req1"]);
    assert_eq!(hdr.unknown_requirements(), vec!["req0", "req1"]);
    let tokens = hdr.tokens().unwrap();
    assert_eq!(
        tokens
            .iter()
            .map(|t| (t.id, t.kind.as_str()))
            .collect::<Vec<_>>(),
        vec![
            (0, "user_type"),
            (1, "luks2-keyring"),
            (6, "luks2-reserved")
        ]
    );
    let free = check_image(&dir.path("luks2_header_requirements_free"));
    assert!(free.requirements().is_empty() && free.unknown_requirements().is_empty());
}

#[test]
fn mda_images_all_nine_sizes() {
    let Some(td) = testdata("mda_images") else {
        return;
    };
    if !have_cryptsetup("mda_images") {
        return;
    }
    let dir = TempDir::new("mda");
    untar(&td, "luks2_mda_images.tar.xz", &dir);
    let mut seen = Vec::new();
    for kib in [16u64, 32, 64, 128, 256, 512, 1024, 2048, 4096] {
        let hdr = check_image(&dir.path(&format!("test_image_{kib}")));
        assert_eq!(hdr.metadata_size(), kib * 1024);
        seen.push(hdr.metadata_size());
    }
    assert_eq!(seen, luks2::METADATA_SIZES.to_vec());
}
