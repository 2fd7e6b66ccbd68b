//! Shared helpers of the LUKS2 integration tests: test images, temp dirs, real cryptsetup.
#![allow(dead_code)]

use lukskit_format::luks2::{self, KdfParams, Luks2Header};
use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};

/// cryptsetup's test images, in `../shared` next to the repository.
pub const TESTDATA: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../../shared/testdata/cryptsetup"
);

pub use lukskit_testkit::skip_or_fail;

/// What to say when [`TESTDATA`] is absent.
pub const NO_TESTDATA: &str = "../shared/testdata/cryptsetup is absent (cryptsetup's test \
                               images, from tests/ of the cryptsetup 2.7.5 source)";
/// What to say when cryptsetup is missing.
pub const NO_CRYPTSETUP: &str = "cryptsetup is not installed (apt-get install cryptsetup-bin)";

/// The cryptsetup test-image directory, or `None` after [`skip_or_fail`] when absent.
pub fn testdata(test: &str) -> Option<PathBuf> {
    let p = PathBuf::from(TESTDATA);
    if p.is_dir() {
        Some(p)
    } else {
        skip_or_fail(test, NO_TESTDATA);
        None
    }
}

/// Whether a usable `cryptsetup` binary exists ([`skip_or_fail`] otherwise).
pub fn have_cryptsetup(test: &str) -> bool {
    let ok = Command::new("cryptsetup")
        .arg("--version")
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    if !ok {
        skip_or_fail(test, NO_CRYPTSETUP);
    }
    ok
}

/// A temporary directory removed on drop.
pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new(tag: &str) -> Self {
        static N: AtomicUsize = AtomicUsize::new(0);
        let p = std::env::temp_dir().join(format!(
            "lukskit-luks2-{tag}-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::SeqCst)
        ));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).unwrap();
        TempDir(p)
    }
    pub fn path(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Decompress `<testdata>/<name>.xz` to `<dir>/<name>`.
pub fn unxz(testdata: &Path, name: &str, dir: &TempDir) -> PathBuf {
    let out = dir.path(name);
    let f = std::fs::File::create(&out).unwrap();
    let st = Command::new("xz")
        .arg("-dc")
        .arg(testdata.join(format!("{name}.xz")))
        .stdout(f)
        .status()
        .expect("xz");
    assert!(st.success(), "xz -dc {name}.xz failed");
    out
}

/// Extract `<testdata>/<tarball>` into `dir`.
pub fn untar(testdata: &Path, tarball: &str, dir: &TempDir) {
    let st = Command::new("tar")
        .arg("xJf")
        .arg(testdata.join(tarball))
        .arg("-C")
        .arg(&dir.0)
        .status()
        .expect("tar");
    assert!(st.success(), "tar xJf {tarball} failed");
}

/// Run cryptsetup with `args`.
pub fn cs(args: &[&str]) -> Output {
    Command::new("cryptsetup")
        .args(args)
        .output()
        .expect("cryptsetup")
}

/// Run cryptsetup and require success; returns stdout.
pub fn cs_ok(args: &[&str]) -> String {
    let o = cs(args);
    assert!(
        o.status.success(),
        "cryptsetup {args:?} failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout).unwrap()
}

/// `cryptsetup luksDump --dump-json-metadata` parsed with member order preserved.
pub fn dump_json(path: &Path) -> serde_json::Map<String, serde_json::Value> {
    let out = cs_ok(&["luksDump", "--dump-json-metadata", path.to_str().unwrap()]);
    serde_json::from_str(&out).expect("luksDump JSON")
}

/// Create a file of `size` bytes (sparse) and luksFormat it as LUKS2 with a fast PBKDF2
/// keyslot (passphrase "pass" from a key file). Extra options are appended.
pub fn format(dir: &TempDir, name: &str, size: u64, extra: &[&str]) -> PathBuf {
    let p = dir.path(name);
    let f = std::fs::File::create(&p).unwrap();
    f.set_len(size).unwrap();
    let key = keyfile(dir);
    let mut args = vec![
        "luksFormat",
        "--type",
        "luks2",
        "-q",
        "--key-file",
        key.to_str().unwrap(),
        "--pbkdf",
        "pbkdf2",
        "--pbkdf-force-iterations",
        "1000",
    ];
    args.extend_from_slice(extra);
    args.push(p.to_str().unwrap());
    cs_ok(&args);
    p
}

/// The key file holding passphrase "pass".
pub fn keyfile(dir: &TempDir) -> PathBuf {
    let k = dir.path("keyfile");
    if !k.exists() {
        std::fs::write(&k, b"pass").unwrap();
    }
    k
}

/// One entry of a luksDump section ("  0: luks2") with its fields.
#[derive(Debug, Default, Clone)]
pub struct DumpEntry {
    pub id: u32,
    pub kind: String,
    pub fields: BTreeMap<String, String>,
    /// Repeated fields ("Keyslot:" under a token) in order.
    pub multi: Vec<(String, String)>,
}

/// `cryptsetup luksDump` text, parsed.
#[derive(Debug, Default)]
pub struct Dump {
    pub header: BTreeMap<String, String>,
    pub segments: Vec<DumpEntry>,
    pub keyslots: Vec<DumpEntry>,
    pub tokens: Vec<DumpEntry>,
    pub digests: Vec<DumpEntry>,
}

pub fn luks_dump(path: &Path) -> Dump {
    parse_dump(&cs_ok(&["luksDump", path.to_str().unwrap()]))
}

pub fn parse_dump(text: &str) -> Dump {
    let mut d = Dump::default();
    let mut section = "";
    let mut last_key = String::new();
    for line in text.lines() {
        match line.trim_end() {
            "Data segments:" => {
                section = "segments";
                continue;
            }
            "Keyslots:" => {
                section = "keyslots";
                continue;
            }
            "Tokens:" => {
                section = "tokens";
                continue;
            }
            "Digests:" => {
                section = "digests";
                continue;
            }
            "" => continue,
            _ => {}
        }
        let list = match section {
            "segments" => Some(&mut d.segments),
            "keyslots" => Some(&mut d.keyslots),
            "tokens" => Some(&mut d.tokens),
            "digests" => Some(&mut d.digests),
            _ => None,
        };
        let Some(list) = list else {
            if let Some((k, v)) = line.split_once(':') {
                d.header.insert(k.trim().to_string(), v.trim().to_string());
            }
            continue;
        };
        if line.starts_with("  ") && !line.starts_with('\t') {
            let (id, kind) = line.trim().split_once(':').unwrap();
            list.push(DumpEntry {
                id: id.parse().unwrap(),
                kind: kind.trim().to_string(),
                ..Default::default()
            });
            continue;
        }
        let e = list.last_mut().expect("field before entry");
        let t = line.trim();
        match t.split_once(':') {
            Some((k, v)) if !k.contains(' ') || k.len() < 20 => {
                let (k, v) = (k.trim().to_string(), v.trim().to_string());
                e.multi.push((k.clone(), v.clone()));
                e.fields.insert(k.clone(), v);
                last_key = k;
            }
            _ => {
                // Continuation of a hex dump (salt / digest).
                let cur = e.fields.get_mut(&last_key).unwrap();
                cur.push(' ');
                cur.push_str(t);
            }
        }
    }
    d
}

/// Hex bytes as luksDump prints them, normalised to contiguous lower-case hex.
pub fn dump_hex(s: &str) -> String {
    s.split_whitespace().collect()
}

/// The JSON text of the primary copy as stored on disk (up to the first NUL).
pub fn raw_json(path: &Path) -> String {
    let data = std::fs::read(path).unwrap();
    let hdr_size = u64::from_be_bytes(data[8..16].try_into().unwrap()) as usize;
    let area = &data[4096..hdr_size];
    let end = area.iter().position(|&b| b == 0).unwrap();
    String::from_utf8(area[..end].to_vec()).unwrap()
}

/// Compare a header read by lukskit with cryptsetup's view of the same device.
pub fn compare_with_cryptsetup(path: &Path, hdr: &Luks2Header) {
    let dump = luks_dump(path);
    let h = &dump.header;
    assert_eq!(h["Version"], "2");
    assert_eq!(h["Epoch"], hdr.binary.seqid.to_string());
    assert_eq!(
        h["Metadata area"],
        format!("{} [bytes]", hdr.metadata_size())
    );
    assert_eq!(
        h["Keyslots area"],
        format!("{} [bytes]", hdr.keyslots_size().unwrap())
    );
    assert_eq!(h["UUID"], hdr.binary.uuid);
    let or = |s: &str, none: &str| {
        if s.is_empty() {
            none.to_string()
        } else {
            s.to_string()
        }
    };
    assert_eq!(h["Label"], or(&hdr.binary.label, "(no label)"));
    assert_eq!(h["Subsystem"], or(&hdr.binary.subsystem, "(no subsystem)"));
    let flags = hdr.config_flags();
    let want_flags = if flags.is_empty() {
        "(no flags)".to_string()
    } else {
        flags
            .iter()
            .map(|f| f.as_str())
            .collect::<Vec<_>>()
            .join(" ")
    };
    assert_eq!(h["Flags"], want_flags);
    let reqs = hdr.requirements();
    if reqs.is_empty() {
        assert!(!h.contains_key("Requirements"));
    } else {
        assert_eq!(h["Requirements"], reqs.join(" "));
    }

    // Segments.
    let segs = hdr.segments().unwrap();
    assert_eq!(segs.len(), dump.segments.len());
    for (s, d) in segs.iter().zip(&dump.segments) {
        assert_eq!(s.id, d.id);
        assert_eq!(s.kind.as_str(), d.kind);
        assert_eq!(d.fields["offset"], format!("{} [bytes]", s.offset));
        match s.size {
            None => assert_eq!(d.fields["length"], "(whole device)"),
            Some(n) => assert_eq!(d.fields["length"], format!("{n} [bytes]")),
        }
        assert_eq!(d.fields["cipher"], s.encryption);
        assert_eq!(d.fields["sector"], format!("{} [bytes]", s.sector_size));
    }

    // Digests.
    let digests = hdr.digests().unwrap();
    assert_eq!(digests.len(), dump.digests.len());
    for (g, d) in digests.iter().zip(&dump.digests) {
        assert_eq!(g.id, d.id);
        assert_eq!(g.kind.as_str(), d.kind);
        assert_eq!(d.fields["Hash"], g.hash);
        assert_eq!(d.fields["Iterations"], g.iterations.to_string());
        assert_eq!(dump_hex(&d.fields["Salt"]), hex::encode(&g.salt));
        assert_eq!(dump_hex(&d.fields["Digest"]), hex::encode(&g.digest));
        g.check_usable().unwrap();
    }

    // Keyslots.
    let keyslots = hdr.keyslots().unwrap();
    assert_eq!(keyslots.len(), dump.keyslots.len());
    for (k, d) in keyslots.iter().zip(&dump.keyslots) {
        assert_eq!(k.id, d.id);
        let digest = digests.iter().find(|g| g.keyslots.contains(&k.id)).unwrap();
        let kind = if digest.segments.is_empty() {
            format!("{} (unbound)", k.kind)
        } else {
            k.kind.to_string()
        };
        assert_eq!(d.kind, kind);
        let f = &d.fields;
        assert_eq!(f["Key"], format!("{} bits", k.key_size * 8));
        let prio = match k.priority {
            None | Some(1) => "normal",
            Some(0) => "ignored",
            Some(2) => "preferred",
            Some(_) => "invalid",
        };
        assert_eq!(f["Priority"], prio);
        assert_eq!(f["Cipher"], k.area_encryption);
        assert_eq!(f["Cipher key"], format!("{} bits", k.area_key_size * 8));
        match &k.kdf {
            KdfParams::Pbkdf2 {
                hash,
                iterations,
                salt,
            } => {
                assert_eq!(f["PBKDF"], "pbkdf2");
                assert_eq!(&f["Hash"], hash);
                assert_eq!(f["Iterations"], iterations.to_string());
                assert_eq!(dump_hex(&f["Salt"]), hex::encode(salt));
            }
            KdfParams::Argon2 {
                variant,
                time,
                memory,
                cpus,
                salt,
            } => {
                assert_eq!(&f["PBKDF"], variant);
                assert_eq!(f["Time cost"], time.to_string());
                assert_eq!(f["Memory"], memory.to_string());
                assert_eq!(f["Threads"], cpus.to_string());
                assert_eq!(dump_hex(&f["Salt"]), hex::encode(salt));
            }
            KdfParams::Unknown { name, .. } => {
                panic!("cryptsetup-made keyslot {} has KDF type {name}", k.id)
            }
        }
        assert_eq!(f["AF stripes"], k.af_stripes.to_string());
        assert_eq!(f["AF hash"], k.af_hash);
        assert_eq!(f["Area offset"], format!("{} [bytes]", k.area_offset));
        assert_eq!(f["Area length"], format!("{} [bytes]", k.area_size));
        assert_eq!(f["Digest ID"], digest.id.to_string());
        k.check_usable().unwrap();
    }

    // Tokens.
    let tokens = hdr.tokens().unwrap();
    assert_eq!(tokens.len(), dump.tokens.len());
    for (t, d) in tokens.iter().zip(&dump.tokens) {
        assert_eq!(t.id, d.id);
        assert_eq!(t.kind.as_str(), d.kind);
        let dumped: Vec<u32> = d
            .multi
            .iter()
            .filter(|(k, _)| k == "Keyslot")
            .map(|(_, v)| v.parse().unwrap())
            .collect();
        assert_eq!(t.keyslots, dumped);
        if t.kind == lukskit_format::luks2::TokenType::Luks2Keyring {
            assert_eq!(
                d.fields["Key description"],
                t.json["key_description"].as_str().unwrap()
            );
        }
    }

    // The whole JSON, member order included, equals cryptsetup's in-memory JSON.
    let cs_json = dump_json(path);
    assert_eq!(
        serde_json::to_string(&cs_json).unwrap(),
        serde_json::to_string(hdr.json()).unwrap()
    );
}

/// Read, validate, compare with cryptsetup, and check the byte-exact JSON round trip.
pub fn check_image(path: &Path) -> Luks2Header {
    let out = luks2::read(&std::fs::File::open(path).unwrap()).unwrap();
    assert!(out.primary_ok && out.secondary_ok, "{path:?}: {out:?}");
    assert!(out.primary_error.is_none() && out.secondary_error.is_none());
    let hdr = out.header;
    hdr.validate().unwrap();
    assert_eq!(
        hdr.to_json_string(),
        raw_json(path),
        "{path:?}: JSON round trip"
    );
    compare_with_cryptsetup(path, &hdr);
    hdr
}

/// SHA-256 computed by the `sha256sum` tool (independent of lukskit's hash code).
pub fn sha256sum(data: &[u8]) -> String {
    let mut child = Command::new("sha256sum")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("sha256sum");
    child.stdin.take().unwrap().write_all(data).unwrap();
    let out = child.wait_with_output().unwrap();
    String::from_utf8(out.stdout).unwrap()[..64].to_string()
}

/// Verify one on-disk copy's checksum with `sha256sum`.
pub fn verify_copy_checksum(data: &[u8], offset: usize) {
    let hdr_size = u64::from_be_bytes(data[offset + 8..offset + 16].try_into().unwrap()) as usize;
    let mut block = data[offset..offset + hdr_size].to_vec();
    let stored = hex::encode(&block[0x1c0..0x1c0 + 32]);
    block[0x1c0..0x200].fill(0);
    assert_eq!(sha256sum(&block), stored, "checksum of copy at {offset}");
    assert!(data[offset + 0x1c0 + 32..offset + 0x200]
        .iter()
        .all(|&b| b == 0));
}
