//! Hostile KDF costs: a header that asks for more Argon2 memory than the format allows (or
//! than this machine has), or absurd PBKDF2 work, is refused before any work is done.

mod common;
use common::*;
use std::time::{Duration, Instant};

/// Format a LUKS2 volume, then rewrite keyslot 0's KDF object with `edit` (valid checksums).
fn hostile(
    dir: &std::path::Path,
    edit: &dyn Fn(&mut serde_json::Map<String, serde_json::Value>),
) -> (String, String) {
    let img = sparse(dir, "h.img", 20 << 20);
    let kf = write_file(dir, "k", b"k");
    lukskit(
        &[
            "luksFormat",
            "-q",
            "--pbkdf",
            "argon2id",
            "--pbkdf-force-iterations",
            "4",
            "--pbkdf-memory",
            "32768",
            "-d",
            &kf,
            &img,
        ],
        b"",
    )
    .ok("format");
    edit_luks2_header(&img, |hdr| {
        let kdf = hdr.json_mut_unchecked()["keyslots"]["0"]["kdf"]
            .as_object_mut()
            .unwrap();
        edit(kdf);
    });
    (img, kf)
}

fn refused_quickly(img: &str, kf: &str, what: &str) {
    let t = Instant::now();
    let r = lukskit(&["open", "--test-passphrase", "-d", kf, img], b"");
    assert!(
        r.code != 0 && r.code != 101,
        "{what}: accepted? {} {}",
        r.code,
        r.stderr
    );
    assert!(
        t.elapsed() < Duration::from_secs(5),
        "{what}: took {:?}",
        t.elapsed()
    );
    let msg = r.stderr.trim();
    assert!(!msg.is_empty() && msg.lines().count() <= 2, "{what}: {msg}");
}

#[test]
fn argon2_memory_beyond_format_limit() {
    let dir = tmp();
    let (img, kf) = hostile(dir.path(), &|k| {
        k.insert("memory".into(), (8u64 * 1024 * 1024).into());
    });
    refused_quickly(&img, &kf, "8 GiB argon2");
}

#[test]
fn argon2_absurd_parallelism_and_time() {
    let dir = tmp();
    let (img, kf) = hostile(dir.path(), &|k| {
        k.insert("cpus".into(), 0u32.into());
    });
    refused_quickly(&img, &kf, "0 lanes");
    let dir = tmp();
    let (img, kf) = hostile(dir.path(), &|k| {
        k.insert("time".into(), 0u32.into());
    });
    refused_quickly(&img, &kf, "time 0");
}

#[test]
fn pbkdf2_zero_iterations() {
    let dir = tmp();
    let (img, kf) = hostile(dir.path(), &|k| {
        k.clear();
        k.insert("type".into(), "pbkdf2".into());
        k.insert("hash".into(), "sha256".into());
        k.insert("iterations".into(), 0u32.into());
        k.insert(
            "salt".into(),
            "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=".into(),
        );
    });
    refused_quickly(&img, &kf, "0 iterations");
}
