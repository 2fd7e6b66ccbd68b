//! End-to-end check of the sector engine against cryptsetup's own LUKS1 test images
//! (`tests/luks1-images.tar.xz`: aes/serpent/twofish-xts-plain64, aes-cbc-essiv:sha256,
//! aes-lrw-plain64, aes-xts-essiv:wp256; keyslots and payloads written by the Linux kernel's
//! crypto API).
//!
//! For every image: PBKDF2 the key file into the slot key, decrypt the keyslot material with
//! the engine (512-byte sectors, sector 0 at the area start), AF-merge it and compare the
//! master-key digest from the header — a wrong keyslot decryption cannot pass this. Then the
//! first payload sectors are decrypted with the recovered volume key and the FAT boot sector
//! with volume ID DEAD-BABE (what luks1-compat-test checks) must appear.
//!
//! The PBKDF2 and AF-merge code here is independent of the crate's kdf/af modules.

use lukskit_crypto::engine::SectorCipher;
use lukskit_crypto::spec::CipherSpec;
use std::path::{Path, PathBuf};
use std::process::Command;

/// cryptsetup's test images, in `../shared` next to the repository.
const TESTDATA: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../../shared/testdata/cryptsetup"
);

fn be32(b: &[u8], off: usize) -> u32 {
    u32::from_be_bytes(b[off..off + 4].try_into().unwrap())
}

fn cstr(b: &[u8]) -> String {
    let end = b.iter().position(|&c| c == 0).unwrap_or(b.len());
    String::from_utf8(b[..end].to_vec()).unwrap()
}

fn pbkdf2(hash: &str, pass: &[u8], salt: &[u8], iter: u32, out: &mut [u8]) {
    match hash {
        "sha1" => pbkdf2::pbkdf2_hmac::<sha1::Sha1>(pass, salt, iter, out),
        "sha256" => pbkdf2::pbkdf2_hmac::<sha2::Sha256>(pass, salt, iter, out),
        "whirlpool" => pbkdf2::pbkdf2_hmac::<whirlpool::Whirlpool>(pass, salt, iter, out),
        other => panic!("hash {other} not used by the test images"),
    }
}

fn digest(hash: &str, parts: &[&[u8]]) -> Vec<u8> {
    use digest::Digest;
    fn run<D: Digest>(parts: &[&[u8]]) -> Vec<u8> {
        let mut h = D::new();
        for p in parts {
            h.update(p);
        }
        h.finalize().to_vec()
    }
    match hash {
        "sha1" => run::<sha1::Sha1>(parts),
        "sha256" => run::<sha2::Sha256>(parts),
        "whirlpool" => run::<whirlpool::Whirlpool>(parts),
        other => panic!("hash {other} not used by the test images"),
    }
}

/// LUKS1 diffuser H1: block i of the digest size → hash(BE32(i) ‖ block), last block truncated.
fn diffuse(hash: &str, buf: &mut [u8]) {
    let ds = digest(hash, &[]).len();
    for (i, chunk) in buf.chunks_mut(ds).enumerate() {
        let d = digest(hash, &[&(i as u32).to_be_bytes(), chunk]);
        chunk.copy_from_slice(&d[..chunk.len()]);
    }
}

fn af_merge(hash: &str, material: &[u8], key_len: usize, stripes: usize) -> Vec<u8> {
    let mut d = vec![0u8; key_len];
    for s in material[..key_len * (stripes - 1)].chunks(key_len) {
        for (a, b) in d.iter_mut().zip(s) {
            *a ^= b;
        }
        diffuse(hash, &mut d);
    }
    let last = &material[key_len * (stripes - 1)..key_len * stripes];
    d.iter().zip(last).map(|(a, b)| a ^ b).collect()
}

fn unpack() -> Option<PathBuf> {
    let tarball = Path::new(TESTDATA).join("luks1-images.tar.xz");
    if !tarball.exists() {
        lukskit_testkit::skip_or_fail(
            "engine_luks1_images",
            &format!(
                "{} is absent (cryptsetup's test images: tests/luks1-images.tar.xz of the \
                 cryptsetup 2.7.5 source)",
                tarball.display()
            ),
        );
        return None;
    }
    let dir = std::env::temp_dir().join(format!("lukskit-engine-luks1-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let ok = Command::new("tar")
        .arg("xJf")
        .arg(&tarball)
        .arg("-C")
        .arg(&dir)
        .status()
        .map(|s| s.success())
        .unwrap_or(false);
    if !ok {
        let _ = std::fs::remove_dir_all(&dir);
        lukskit_testkit::skip_or_fail(
            "engine_luks1_images",
            &format!(
                "could not unpack {}: tar or xz is missing (apt-get install tar xz-utils)",
                tarball.display()
            ),
        );
        return None;
    }
    Some(dir)
}

/// Unlock slot 0 and return (spec, volume key).
fn unlock(img: &[u8], pass: &[u8]) -> (CipherSpec, Vec<u8>) {
    assert_eq!(&img[..6], b"LUKS\xba\xbe");
    let spec = CipherSpec::from_luks1(&cstr(&img[8..40]), &cstr(&img[40..72])).unwrap();
    let hash = cstr(&img[72..104]);
    let key_bytes = be32(img, 108) as usize;
    let mk_digest = &img[112..132];
    let mk_salt = &img[132..164];
    let mk_iter = be32(img, 164);
    let slot = 208;
    assert_eq!(be32(img, slot), 0x00AC_71F3, "slot 0 active");
    let iter = be32(img, slot + 4);
    let salt = &img[slot + 8..slot + 40];
    let km_offset = be32(img, slot + 40) as usize * 512;
    let stripes = be32(img, slot + 44) as usize;

    let mut dk = vec![0u8; key_bytes];
    pbkdf2(&hash, pass, salt, iter, &mut dk);
    let len = (key_bytes * stripes).div_ceil(512) * 512;
    let mut material = img[km_offset..km_offset + len].to_vec();
    let c = SectorCipher::new(&spec, &dk, 512, false).unwrap();
    c.decrypt(&mut material, 0).unwrap();
    // The portable build must read the key material the same way.
    let mut portable = img[km_offset..km_offset + len].to_vec();
    SectorCipher::new_portable(&spec, &dk, 512, false)
        .unwrap()
        .decrypt(&mut portable, 0)
        .unwrap();
    assert_eq!(portable, material, "{spec}: portable build differs");
    let mk = af_merge(&hash, &material, key_bytes, stripes);

    let mut check = [0u8; 20];
    pbkdf2(&hash, &mk, mk_salt, mk_iter, &mut check);
    assert_eq!(&check, mk_digest, "{spec}: master key digest mismatch");

    // Re-encrypting the decrypted material must reproduce the on-disk bytes.
    c.encrypt(&mut material, 0).unwrap();
    assert_eq!(material, &img[km_offset..km_offset + len]);
    (spec, mk)
}

#[test]
fn cryptsetup_luks1_images_unlock_and_decrypt() {
    let Some(dir) = unpack() else { return };
    let imgdir = dir.join("luks1-images");
    let keyfile = std::fs::read(imgdir.join("keyfile1")).unwrap();
    let mut names: Vec<String> = std::fs::read_dir(&imgdir)
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.ends_with(".img"))
        .collect();
    names.sort();
    assert_eq!(names.len(), 12, "expected the 12 cryptsetup LUKS1 images");
    let mut seen = Vec::new();
    for name in &names {
        let img = std::fs::read(imgdir.join(name)).unwrap();
        let (spec, mk) = unlock(&img, &keyfile);
        seen.push(spec.to_string());

        // Payload: dm-crypt with iv_offset 0, data offset = payload-offset sectors.
        let payload = be32(&img, 104) as usize * 512;
        let c = SectorCipher::new(&spec, &mk, 512, false).unwrap();
        let mut boot = img[payload..payload + 4096].to_vec();
        c.decrypt(&mut boot, 0).unwrap();
        assert_eq!(
            &boot[510..512],
            &[0x55, 0xaa],
            "{name}: no boot sector signature"
        );
        let fat16_id = &boot[0x27..0x2b];
        let fat32_id = &boot[0x43..0x47];
        let want = 0xDEAD_BABEu32.to_le_bytes();
        assert!(
            fat16_id == want || fat32_id == want,
            "{name}: volume ID DEAD-BABE not found"
        );
        let mut par = img[payload..payload + 256 * 1024].to_vec();
        c.decrypt_parallel(&mut par, 0).unwrap();
        assert_eq!(&par[..4096], &boot[..]);
        let mut portable = img[payload..payload + 256 * 1024].to_vec();
        SectorCipher::new_portable(&spec, &mk, 512, false)
            .unwrap()
            .decrypt(&mut portable, 0)
            .unwrap();
        assert_eq!(portable, par, "{name}: portable build differs");
    }
    for want in [
        "aes-cbc-essiv:sha256",
        "aes-lrw-plain64",
        "aes-xts-essiv:wp256",
        "aes-xts-plain64",
        "serpent-xts-plain64",
        "twofish-xts-plain64",
    ] {
        assert!(seen.iter().any(|s| s == want), "{want} not covered");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
