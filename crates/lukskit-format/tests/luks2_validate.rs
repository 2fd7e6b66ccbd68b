//! Differential validation: hand-made bad (and odd-but-legal) LUKS2 metadata is written with a
//! correct checksum into both copies of a real cryptsetup-formatted device; lukskit's
//! `validate()`/`read()` and real `cryptsetup luksDump` must agree on accepting or rejecting it.

mod luks2_support;

use base64::Engine;
use luks2_support::*;
use lukskit_format::luks2::{self, KdfParams, Luks2Header};
use serde_json::{json, Map, Value};
use std::path::{Path, PathBuf};

type Json = Map<String, Value>;

/// Write `json_text` into both metadata copies of `path` with correct checksums (computed
/// with `sha256sum`, independently of lukskit).
fn write_raw(path: &Path, json_text: &[u8], corrupt_csum: bool) {
    let mut data = std::fs::read(path).unwrap();
    let hdr_size = u64::from_be_bytes(data[8..16].try_into().unwrap()) as usize;
    for off in [0, hdr_size] {
        let area = &mut data[off + 4096..off + hdr_size];
        area.fill(0);
        area[..json_text.len()].copy_from_slice(json_text);
        data[off + 0x1c0..off + 0x200].fill(0);
        let c = hex::decode(sha256sum(&data[off..off + hdr_size])).unwrap();
        data[off + 0x1c0..off + 0x1c0 + 32].copy_from_slice(&c);
        if corrupt_csum {
            data[off + 0x1c0] ^= 0xff;
        }
    }
    std::fs::write(path, &data).unwrap();
}

fn compact(m: &Json) -> String {
    serde_json::to_string(m).unwrap()
}

struct Base {
    dir: TempDir,
    image: PathBuf,
    hdr: Luks2Header,
}

fn base(tag: &str) -> Base {
    let dir = TempDir::new(tag);
    let image = format(&dir, "base.img", 4 << 20, &["--luks2-keyslots-size", "1m"]);
    let hdr = check_image(&image);
    Base { dir, image, hdr }
}

fn ks0(j: &mut Json) -> &mut Json {
    j["keyslots"]["0"].as_object_mut().unwrap()
}

/// Make a device whose metadata is `j`; returns its path.
fn device_with(b: &Base, name: &str, j: &Json) -> PathBuf {
    let p = b.dir.path(name);
    std::fs::copy(&b.image, &p).unwrap();
    write_raw(&p, compact(j).as_bytes(), false);
    p
}

fn cs_accepts(p: &Path) -> bool {
    cs(&["luksDump", p.to_str().unwrap()]).status.success()
}

#[test]
fn rejected_by_both() {
    if !have_cryptsetup("rejected_by_both") {
        return;
    }
    let b = base("vrej");
    let orig = b.hdr.json().clone();
    let ks_size = b.hdr.keyslots_size().unwrap();
    let md = b.hdr.metadata_size();
    type Mutate = Box<dyn Fn(&mut Json)>;
    let cases: Vec<(&str, Mutate, &str)> = vec![
        (
            "overlapping keyslot areas",
            Box::new(|j| {
                let mut k1 = j["keyslots"]["0"].clone();
                let off: u64 = k1["area"]["offset"].as_str().unwrap().parse().unwrap();
                k1["area"]["offset"] = json!((off + 4096).to_string());
                j["keyslots"]
                    .as_object_mut()
                    .unwrap()
                    .insert("1".into(), k1);
                j["digests"]["0"]["keyslots"]
                    .as_array_mut()
                    .unwrap()
                    .push(json!("1"));
            }),
            "Overlapping keyslot areas",
        ),
        (
            "area beyond keyslots_size",
            Box::new(move |j| {
                ks0(j)["area"]["offset"] = json!((2 * md + ks_size - 4096).to_string());
            }),
            "overflows binary keyslots area",
        ),
        (
            "area inside the metadata",
            Box::new(move |j| {
                ks0(j)["area"]["offset"] = json!((md).to_string());
            }),
            "inside the metadata",
        ),
        (
            "segment offset not 512-aligned",
            Box::new(|j| {
                let off: u64 = j["segments"]["0"]["offset"]
                    .as_str()
                    .unwrap()
                    .parse()
                    .unwrap();
                j["segments"]["0"]["offset"] = json!((off + 100).to_string());
            }),
            "aligned to sector size 512",
        ),
        (
            "digest pointing to missing keyslot",
            Box::new(|j| {
                j["digests"]["0"]["keyslots"]
                    .as_array_mut()
                    .unwrap()
                    .push(json!("5"));
            }),
            "missing keyslot \"5\"",
        ),
        (
            "requirements as array",
            Box::new(|j| {
                j["config"]["requirements"] = json!(["offline-reencrypt"]);
            }),
            "\"requirements\" must be an object",
        ),
        (
            "json_size mismatch",
            Box::new(|j| {
                // A legal 32 KiB metadata size (keyslot area moved past both copies so that the
                // earlier area check passes) that contradicts the 16 KiB binary header.
                j["config"]["json_size"] = json!("28672");
                ks0(j)["area"]["offset"] = json!("65536");
            }),
            "does not match value in binary header",
        ),
        (
            "keyslot in no digest",
            Box::new(|j| {
                j["digests"]["0"]["keyslots"] = json!([]);
            }),
            "not assigned to exactly 1 digest",
        ),
        (
            "crypt segment without digest",
            Box::new(|j| {
                j["digests"]["0"]["segments"] = json!([]);
            }),
            "not assigned to a key digest",
        ),
        (
            "negative key_size",
            Box::new(|j| {
                ks0(j)["key_size"] = json!(-1);
            }),
            "key_size",
        ),
        (
            "keyslots_size not 4 KiB aligned",
            Box::new(move |j| {
                j["config"]["keyslots_size"] = json!((ks_size - 512).to_string());
            }),
            "Unsupported LUKS2 keyslots size",
        ),
        (
            "segment size not multiple of sector size",
            Box::new(|j| {
                j["segments"]["0"]["size"] = json!("1536");
                j["segments"]["0"]["sector_size"] = json!(1024);
            }),
            "aligned to sector size 1024",
        ),
        (
            "af type not luks1",
            Box::new(|j| {
                ks0(j)["af"]["type"] = json!("luks2");
            }),
            "type must be luks1",
        ),
        (
            "missing tokens section",
            Box::new(|j| {
                j.shift_remove("tokens");
            }),
            "missing \"tokens\"",
        ),
        (
            "non-numbered keyslot name",
            Box::new(|j| {
                let k = j["keyslots"]["0"].clone();
                let ks = j["keyslots"].as_object_mut().unwrap();
                ks.shift_remove("0");
                ks.insert("zero".into(), k);
                j["digests"]["0"]["keyslots"] = json!(["zero"]);
            }),
            "not in numbered form",
        ),
        (
            "two online-reencrypt requirements",
            Box::new(|j| {
                j["config"]["requirements"] =
                    json!({"mandatory": ["online-reencrypt-v2", "online-reencrypt-v3"]});
            }),
            "Multiple online reencryption",
        ),
    ];
    for (i, (name, mutate, frag)) in cases.iter().enumerate() {
        let mut j = orig.clone();
        mutate(&mut j);
        // validate() on the in-memory header.
        let mut h = b.hdr.clone();
        *h.json_mut_unchecked() = j.clone();
        let e = h.validate().expect_err(name).to_string();
        assert!(e.contains(frag), "{name}: {e}");
        assert!(!e.contains('\n'), "{name}: one-line message");
        // read() of a device carrying it in both copies.
        let p = device_with(&b, &format!("rej{i}.img"), &j);
        let e = luks2::read(&std::fs::File::open(&p).unwrap())
            .expect_err(name)
            .to_string();
        assert!(e.contains(frag), "{name}: {e}");
        // Real cryptsetup rejects it too.
        assert!(!cs_accepts(&p), "{name}: cryptsetup accepted it");
    }

    // Bad checksum in both copies.
    let p = b.dir.path("badcsum.img");
    std::fs::copy(&b.image, &p).unwrap();
    write_raw(&p, compact(&orig).as_bytes(), true);
    let e = luks2::read(&std::fs::File::open(&p).unwrap())
        .unwrap_err()
        .to_string();
    assert!(e.contains("checksum"), "{e}");
    assert!(!cs_accepts(&p));
    // ... and the same JSON with a good checksum is fine for both.
    let p = b.dir.path("goodcsum.img");
    std::fs::copy(&b.image, &p).unwrap();
    write_raw(&p, compact(&orig).as_bytes(), false);
    assert!(luks2::read(&std::fs::File::open(&p).unwrap()).is_ok());
    assert!(cs_accepts(&p));
}

#[test]
fn accepted_by_both() {
    if !have_cryptsetup("accepted_by_both") {
        return;
    }
    let b = base("vacc");
    let orig = b.hdr.json().clone();
    let key = keyfile(&b.dir);

    // 1. A pbkdf2 kdf with an extra member: LUKS2_hdr_validate rejects it, but the reader
    //    repairs this known glitch in memory (LUKS2_hdr_repair) and then accepts it — as
    //    cryptsetup does. The repaired kdf has its four members in the original order.
    let mut j = orig.clone();
    ks0(&mut j)["kdf"]["time"] = json!(4);
    let mut h = b.hdr.clone();
    *h.json_mut_unchecked() = j.clone();
    let e = h.validate().unwrap_err().to_string();
    assert!(e.contains("exactly type, hash, iterations and salt"), "{e}");
    let p = device_with(&b, "extra.img", &j);
    let out = luks2::read(&std::fs::File::open(&p).unwrap()).unwrap();
    assert!(out.primary_ok && out.secondary_ok);
    assert_eq!(compact(out.header.json()), compact(&orig));
    assert!(cs_accepts(&p));
    assert_eq!(compact(&dump_json(&p)), compact(out.header.json()));

    // 2. A keyslot salt of the wrong length: header validation does not decode Base64, so
    //    both load the header; the keyslot itself is unusable for both.
    let mut j = orig.clone();
    ks0(&mut j)["kdf"]["salt"] = json!(base64::engine::general_purpose::STANDARD.encode([1u8; 16]));
    let mut h = b.hdr.clone();
    *h.json_mut_unchecked() = j.clone();
    h.validate().unwrap();
    let p = device_with(&b, "salt16.img", &j);
    let out = luks2::read(&std::fs::File::open(&p).unwrap()).unwrap();
    let ks = out.header.keyslot(0).unwrap().unwrap();
    assert_eq!(ks.kdf.salt().len(), 16);
    assert!(matches!(
        ks.check_usable(),
        Err(lukskit_format::FormatError::Luks2(
            lukskit_format::Luks2Error::KeyslotUnusable {
                id: 0,
                problem: lukskit_format::KeyslotProblem::KdfSaltSize { len: 16 },
            }
        ))
    ));
    assert!(cs_accepts(&p));
    let o = cs(&[
        "open",
        "--test-passphrase",
        "--key-file",
        key.to_str().unwrap(),
        p.to_str().unwrap(),
    ]);
    assert!(
        !o.status.success(),
        "cryptsetup unlocked a keyslot with a 16-byte salt"
    );
    // The unmodified device unlocks (the failure above is the salt's fault).
    cs_ok(&[
        "open",
        "--test-passphrase",
        "--key-file",
        key.to_str().unwrap(),
        b.image.to_str().unwrap(),
    ]);

    // 3. A digest salt of the wrong length: same story for the digest.
    let mut j = orig.clone();
    j["digests"]["0"]["salt"] = json!(base64::engine::general_purpose::STANDARD.encode([1u8; 20]));
    let p = device_with(&b, "dsalt.img", &j);
    let out = luks2::read(&std::fs::File::open(&p).unwrap()).unwrap();
    assert!(out.header.digests().unwrap()[0].check_usable().is_err());
    assert!(cs_accepts(&p));

    // 4. "\/" escapes (written by old json-c) are accepted; lukskit rewrites them unescaped,
    //    exactly as cryptsetup does.
    let mut j = orig.clone();
    j["tokens"].as_object_mut().unwrap().insert(
        "2".into(),
        json!({"type": "x/y", "keyslots": ["0"], "path": "/a/b"}),
    );
    let text = compact(&j).replace('/', "\\/");
    assert!(text.contains("\\/"));
    let p = b.dir.path("slash.img");
    std::fs::copy(&b.image, &p).unwrap();
    write_raw(&p, text.as_bytes(), false);
    let f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(&p)
        .unwrap();
    let mut hdr = luks2::read(&f).unwrap().header;
    assert_eq!(hdr.to_json_string(), compact(&j));
    assert!(cs_accepts(&p));
    assert_eq!(compact(&dump_json(&p)), compact(hdr.json()));

    // 5. Unknown members everywhere survive a lukskit rewrite untouched (cryptsetup keeps
    //    them too).
    hdr.json_mut_unchecked().insert(
        "x-future".into(),
        json!({"b": [1, 2, {"c": null}], "a": "é\t"}),
    );
    hdr.json_mut_unchecked()["config"]
        .as_object_mut()
        .unwrap()
        .insert("x-conf".into(), json!(true));
    ks0(hdr.json_mut_unchecked()).insert("x-ks".into(), json!("v"));
    luks2::write(&f, &mut hdr).unwrap();
    drop(f);
    let want = hdr.to_json_string();
    assert_eq!(raw_json(&p), want);
    assert!(cs_accepts(&p));
    assert_eq!(compact(&dump_json(&p)), compact(hdr.json()));
    // A cryptsetup metadata update keeps them as well, in place.
    cs_ok(&["config", "--label", "relabel", p.to_str().unwrap()]);
    assert_eq!(raw_json(&p), want);
    let back = check_image(&p);
    assert_eq!(back.binary.label, "relabel");

    // 6. An unknown KDF type passes header validation (cryptsetup only checks pbkdf2/argon2
    //    member sets); the typed view parses it as Unknown, which only makes this keyslot
    //    unusable. cryptsetup loads the header too.
    let mut j = orig.clone();
    ks0(&mut j)["kdf"]["type"] = json!("scrypt");
    let p = device_with(&b, "scrypt.img", &j);
    let out = luks2::read(&std::fs::File::open(&p).unwrap()).unwrap();
    let ks = out.header.keyslot(0).unwrap().unwrap();
    assert!(matches!(&ks.kdf, KdfParams::Unknown { name, .. } if name == "scrypt"));
    assert_eq!(ks.kdf.salt().len(), 32);
    assert!(ks.check_usable().is_err());
    assert!(cs_accepts(&p));
}
