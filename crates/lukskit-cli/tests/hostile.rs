//! Differential validation against real cryptsetup on hostile headers.
//!
//! A generator derives malformed and edge-case headers from valid images made by cryptsetup
//! itself: LUKS2 (fields deleted, wrong JSON types, overlapping areas, offsets beyond the
//! device, unknown requirements, huge or negative numbers, duplicated keyslots, bad digests,
//! unknown token types, bad binary-header fields; both copies rewritten with valid checksums,
//! computed here independently of lukskit, so that validation and not just the checksum is
//! exercised) and LUKS1 (key bytes, offsets, stripes, iterations, cipher and hash names).
//! For each mutant, lukskit's accept/reject verdict for `luksDump` and for
//! `open --test-passphrase` must equal cryptsetup's.
//!
//! `LUKSKIT_HOSTILE_SEED` reproduces a run (the seed is always printed), `LUKSKIT_HOSTILE_COUNT`
//! sets the number of random mutants per format (default 150). Every disagreement found is
//! kept as a named case in [`REGRESSIONS_LUKS2`] / [`REGRESSIONS_LUKS1`].

mod common;
use common::*;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use std::path::Path;
use std::process::Command;

/// Size of the test device (sparse).
const DEV_SIZE: u64 = 20 << 20;
/// Bytes of the base image copied into every mutant (headers and both keyslot areas).
const PREFIX: usize = 1 << 20;
/// Seconds a single command may run before it is counted as a hang.
const TIMEOUT: &str = "30";

/// One edit of a header.
#[derive(Clone, Debug)]
enum Op {
    /// Set the JSON value at a pointer (the parent must exist; object keys are created).
    Set(String, Value),
    /// Delete the JSON value at a pointer.
    Del(String),
    /// Replace the first occurrence of a substring in the serialised JSON text.
    Text(String, String),
    /// Overwrite bytes at an offset of each LUKS2 binary header copy (before re-checksumming)
    /// or of the LUKS1 header.
    Bin(usize, Vec<u8>),
    /// Overwrite bytes at an offset of the primary LUKS2 copy only.
    BinPrimary(usize, Vec<u8>),
    /// Write the JSON without a terminating NUL, filling the whole JSON area.
    FillArea,
}

/// Deterministic generator (SplitMix64): the seed is printed, so a run can be repeated.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn pick<T: Clone>(&mut self, v: &[T]) -> T {
        v[self.below(v.len())].clone()
    }
}

// ---------------------------------------------------------------------------------------
// LUKS2 image rewriting (written independently of lukskit-format).

fn be64(b: &[u8], off: usize) -> u64 {
    u64::from_be_bytes(b[off..off + 8].try_into().unwrap())
}

/// Apply `ops` to a cryptsetup-made LUKS2 image and write both copies with valid checksums.
fn mutate_luks2(base: &[u8], ops: &[Op]) -> Vec<u8> {
    let mut img = base.to_vec();
    let hdr_size = be64(&img, 8) as usize;
    let json_area = &img[4096..hdr_size];
    let end = json_area.iter().position(|&c| c == 0).unwrap();
    let mut json: Value = serde_json::from_slice(&json_area[..end]).unwrap();
    for op in ops {
        match op {
            Op::Set(p, v) => set_ptr(&mut json, p, v.clone()),
            Op::Del(p) => del_ptr(&mut json, p),
            _ => {}
        }
    }
    let mut text = serde_json::to_string(&json).unwrap();
    for op in ops {
        if let Op::Text(from, to) = op {
            text = text.replacen(from.as_str(), to, 1);
        }
    }
    let fill = ops.iter().any(|o| matches!(o, Op::FillArea));
    let area = hdr_size - 4096;
    let mut jbytes = text.into_bytes();
    if fill {
        jbytes.resize(area, b' ');
    }
    jbytes.truncate(area);
    for copy in 0..2 {
        let off = copy * hdr_size;
        img[off + 4096..off + hdr_size].fill(0);
        img[off + 4096..off + 4096 + jbytes.len()].copy_from_slice(&jbytes);
        for op in ops {
            match op {
                Op::Bin(o, b) => img[off + o..off + o + b.len()].copy_from_slice(b),
                Op::BinPrimary(o, b) if copy == 0 => img[*o..*o + b.len()].copy_from_slice(b),
                _ => {}
            }
        }
        // The checksum covers the whole copy (binary header + JSON area, with the size the
        // copy itself declares, bounded by what we have) with the csum field zeroed.
        let declared = be64(&img, off + 8) as usize;
        let len = if (4096..=hdr_size).contains(&declared) {
            declared
        } else {
            hdr_size
        };
        img[off + 448..off + 512].fill(0);
        let d = Sha256::digest(&img[off..off + len]);
        img[off + 448..off + 448 + 32].copy_from_slice(&d);
    }
    img
}

fn split_ptr(p: &str) -> (&str, &str) {
    let i = p.rfind('/').unwrap();
    (&p[..i], &p[i + 1..])
}

fn set_ptr(root: &mut Value, p: &str, v: Value) {
    let (parent, key) = split_ptr(p);
    match root.pointer_mut(parent) {
        Some(Value::Object(m)) => {
            m.insert(key.to_string(), v);
        }
        Some(Value::Array(a)) => {
            if let Ok(i) = key.parse::<usize>() {
                if i < a.len() {
                    a[i] = v;
                } else {
                    a.push(v);
                }
            }
        }
        _ => {}
    }
}

fn del_ptr(root: &mut Value, p: &str) {
    let (parent, key) = split_ptr(p);
    match root.pointer_mut(parent) {
        Some(Value::Object(m)) => {
            m.shift_remove(key);
        }
        Some(Value::Array(a)) => {
            if let Ok(i) = key.parse::<usize>() {
                if i < a.len() {
                    a.remove(i);
                }
            }
        }
        _ => {}
    }
}

/// Every pointer in `v` (depth first), without the root.
fn pointers(v: &Value, prefix: &str, out: &mut Vec<String>) {
    match v {
        Value::Object(m) => {
            for (k, c) in m {
                let p = format!("{prefix}/{k}");
                out.push(p.clone());
                pointers(c, &p, out);
            }
        }
        Value::Array(a) => {
            for (i, c) in a.iter().enumerate() {
                let p = format!("{prefix}/{i}");
                out.push(p.clone());
                pointers(c, &p, out);
            }
        }
        _ => {}
    }
}

/// Is this a KDF/digest cost field, where a huge value would only make both tools spin?
fn is_cost(p: &str) -> bool {
    ["iterations", "time", "memory", "cpus"]
        .iter()
        .any(|c| p.ends_with(&format!("/{c}")))
}

const CIPHERS: &[&str] = &[
    "aes-xts-plain64",
    "aes-cbc-essiv:sha256",
    "aes-xts-plain",
    "aes-ecb",
    "aes",
    "serpent-xts-plain64",
    "twofish-cbc-plain64",
    "cipher_null-ecb",
    "aes-xts-essiv:foo",
    "foo-bar-baz",
    "aes-xts-plain64:sha256",
    "capi:xts(aes)-plain64",
    "aes-xts-benbi",
    "",
    "AES-XTS-PLAIN64",
    "aes--plain64",
];

fn weird_values() -> Vec<Value> {
    vec![
        Value::Null,
        json!(true),
        json!(0),
        json!(-1),
        json!(1.5),
        json!("x"),
        json!(""),
        json!([]),
        json!({}),
        json!("0"),
        json!("-1"),
        json!(["0"]),
        json!(18446744073709551615u64),
    ]
}

fn number_values(cost: bool) -> Vec<Value> {
    if cost {
        return vec![
            json!(0),
            json!(1),
            json!(-1),
            json!(999),
            json!(1000),
            json!(1.5),
            json!("1000"),
            json!(4294967296u64),
        ];
    }
    vec![
        json!("-1"),
        json!("0"),
        json!("1"),
        json!("511"),
        json!("4096"),
        json!("32768"),
        json!("1073741824"),
        json!("9223372036854775807"),
        json!("9223372036854775808"),
        json!("18446744073709551615"),
        json!("18446744073709551616"),
        json!("99999999999999999999999"),
        json!("0x10"),
        json!(" 1"),
        json!("+4096"),
        json!("04096"),
        json!(""),
        json!(-1),
        json!(0),
        json!(1),
        json!(64),
        json!(4096),
        json!(4294967296u64),
        json!(1e20),
    ]
}

/// One random LUKS2 mutant (1–3 edits) derived from the base JSON.
fn gen_luks2(rng: &mut Rng, base_json: &Value) -> Vec<Op> {
    let mut ptrs = Vec::new();
    pointers(base_json, "", &mut ptrs);
    let n = 1 + rng.below(3);
    let mut ops = Vec::new();
    for _ in 0..n {
        let op = match rng.below(16) {
            0 | 1 => Op::Del(rng.pick(&ptrs)),
            2 | 3 => {
                let p = rng.pick(&ptrs);
                Op::Set(p, rng.pick(&weird_values()))
            }
            4..=6 => {
                let numeric: Vec<&String> = ptrs
                    .iter()
                    .filter(|p| {
                        let v = base_json.pointer(p).unwrap();
                        v.is_u64()
                            || v.as_str().is_some_and(|s| {
                                !s.is_empty() && s.bytes().all(|c| c.is_ascii_digit())
                            })
                    })
                    .collect();
                let p = rng.pick(&numeric).clone();
                let v = rng.pick(&number_values(is_cost(&p)));
                Op::Set(p, v)
            }
            7 => {
                // Duplicated or overlapping keyslots.
                let ks = base_json["keyslots"]["0"].clone();
                let id = rng.pick(&["1", "2", "31", "32", "-1", "a", "01"]);
                let mut k = ks.clone();
                if rng.below(2) == 0 {
                    k["area"]["offset"] = json!(rng.pick(&[
                        "0", "4096", "16384", "32768", "36864", "290816", "16777216", "20971520"
                    ]));
                }
                Op::Set(format!("/keyslots/{id}"), k)
            }
            8 => {
                // Offsets or sizes beyond the device / overlapping the data segment.
                let p = rng.pick(&[
                    "/segments/0/offset",
                    "/segments/0/size",
                    "/keyslots/0/area/offset",
                    "/keyslots/0/area/size",
                    "/keyslots/1/area/offset",
                    "/config/keyslots_size",
                    "/config/json_size",
                ]);
                let v = rng.pick(&[
                    "0",
                    "4096",
                    "12288",
                    "16384",
                    "16744448",
                    "16748544",
                    "16777216",
                    "20971520",
                    "33554432",
                    "1099511627776",
                    "dynamic",
                ]);
                Op::Set(p.into(), json!(v))
            }
            9 => {
                let r = rng.pick(&[
                    json!({"mandatory": ["foo"]}),
                    json!({"mandatory": ["online-reencrypt"]}),
                    json!({"mandatory": ["online-reencrypt-v2"]}),
                    json!({"mandatory": []}),
                    json!({"mandatory": [1]}),
                    json!({"mandatory": "foo"}),
                    json!({"optional": ["foo"]}),
                    json!(["foo"]),
                ]);
                if rng.below(4) == 0 {
                    Op::Set(
                        "/config/flags".into(),
                        rng.pick(&[
                            json!(["allow-discards"]),
                            json!(["foo"]),
                            json!([1]),
                            json!("x"),
                        ]),
                    )
                } else {
                    Op::Set("/config/requirements".into(), r)
                }
            }
            10 => {
                // Bad digests.
                match rng.below(6) {
                    0 => Op::Set(
                        "/digests/0/digest".into(),
                        json!("AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="),
                    ),
                    1 => Op::Set("/digests/0/salt".into(), json!("!!not base64!!")),
                    2 => Op::Set(
                        "/digests/0/keyslots".into(),
                        rng.pick(&[json!(["5"]), json!([]), json!(["0", "0"]), json!([0])]),
                    ),
                    3 => Op::Set(
                        "/digests/0/segments".into(),
                        rng.pick(&[json!(["5"]), json!([]), json!(["0", "0"])]),
                    ),
                    4 => Op::Set("/digests/1".into(), base_json["digests"]["0"].clone()),
                    _ => Op::Set(
                        "/digests/0/hash".into(),
                        json!(rng.pick(&["sha1", "sha512", "md5", "foo", "whirlpool"])),
                    ),
                }
            }
            11 => {
                let id = rng.pick(&["0", "1", "31", "32", "a"]);
                let t = rng.pick(&[
                    json!({"type": "foo", "keyslots": ["0"]}),
                    json!({"type": "luks2-keyring", "keyslots": ["0"]}),
                    json!({"type": "luks2-keyring", "keyslots": ["9"], "key_description": "x"}),
                    json!({"type": "luks2-keyring", "keyslots": [0], "key_description": "x"}),
                    json!({"type": 1, "keyslots": []}),
                    json!({"keyslots": []}),
                    json!({"type": "systemd-tpm2", "keyslots": ["0"]}),
                ]);
                Op::Set(format!("/tokens/{id}"), t)
            }
            12 => {
                let p = rng.pick(&[
                    "/segments/0/encryption",
                    "/keyslots/0/area/encryption",
                    "/keyslots/1/area/encryption",
                ]);
                Op::Set(p.into(), json!(rng.pick(CIPHERS)))
            }
            13 => {
                let p = rng.pick(&[
                    "/segments/0/sector_size",
                    "/keyslots/0/key_size",
                    "/keyslots/0/area/key_size",
                    "/keyslots/0/af/stripes",
                    "/keyslots/0/priority",
                ]);
                let v = rng.pick(&[
                    json!(0),
                    json!(1),
                    json!(3),
                    json!(32),
                    json!(63),
                    json!(511),
                    json!(512),
                    json!(1024),
                    json!(3999),
                    json!(4001),
                    json!(8192),
                    json!(-1),
                    json!(2),
                ]);
                Op::Set(p.into(), v)
            }
            14 => {
                // Binary header fields (both copies, valid checksums).
                match rng.below(7) {
                    0 => Op::Bin(
                        8,
                        rng.pick(&[0u64, 4096, 16383, 32768, 1 << 40])
                            .to_be_bytes()
                            .to_vec(),
                    ),
                    1 => Op::Bin(6, rng.pick(&[0u16, 1, 3, 0xffff]).to_be_bytes().to_vec()),
                    2 => Op::BinPrimary(16, 1000u64.to_be_bytes().to_vec()),
                    3 => Op::Bin(24, vec![b'L'; 48]),
                    4 => Op::Bin(168, rng.pick(&[vec![0u8; 40], vec![b'z'; 40]])),
                    5 => Op::Bin(256, rng.pick(&[4096u64, 1]).to_be_bytes().to_vec()),
                    _ => Op::BinPrimary(0, b"LUKS\xba\xbf".to_vec()),
                }
            }
            _ => match rng.below(5) {
                0 => Op::Text("}}".into(), "}}trailing".into()),
                1 => Op::Text(
                    "\"keyslots\":{".into(),
                    "\"keyslots\":{\"0\":{\"type\":\"foo\"},".into(),
                ),
                2 => Op::Text(
                    "\"config\":{".into(),
                    format!("\"config\":{{\"x\":{}1{},", "[".repeat(40), "]".repeat(40)),
                ),
                3 => Op::Text(
                    "\"tokens\":{".into(),
                    "\"tokens\":{\"\u{00e9}\\ud800\":{},".into(),
                ),
                _ => Op::FillArea,
            },
        };
        ops.push(op);
    }
    ops
}

// ---------------------------------------------------------------------------------------
// LUKS1 mutants (no checksum: the 592-byte phdr is edited in place).

const L1_KEYSLOT: usize = 208;
const L1_KS_LEN: usize = 48;

fn gen_luks1(rng: &mut Rng) -> Vec<Op> {
    let n = 1 + rng.below(2);
    let mut ops = Vec::new();
    let be32 = |v: u32| v.to_be_bytes().to_vec();
    for _ in 0..n {
        let slot = rng.below(2);
        let ks = L1_KEYSLOT + slot * L1_KS_LEN;
        let op = match rng.below(11) {
            0 => Op::Bin(
                108,
                be32(rng.pick(&[0, 1, 15, 16, 24, 31, 33, 48, 64, 65, 128, 0xffff_ffff])),
            ),
            1 => Op::Bin(
                104,
                be32(rng.pick(&[0, 1, 7, 8, 1032, 2048, 4095, 4096, 40960, 0xffff_ffff])),
            ),
            2 => Op::Bin(164, be32(rng.pick(&[0, 1, 999, 1000, 5000]))),
            3 => Op::Bin(ks + 4, be32(rng.pick(&[0, 1, 999, 1000, 5000]))),
            4 => Op::Bin(
                ks + 40,
                be32(rng.pick(&[0, 1, 2, 7, 8, 9, 520, 1000, 4095, 4096, 40960, 0xffff_ffff])),
            ),
            5 => Op::Bin(
                ks + 44,
                be32(rng.pick(&[0, 1, 3999, 4000, 4001, 64000, 0xffff_ffff])),
            ),
            6 => Op::Bin(
                ks,
                be32(rng.pick(&[0, 0x00AC_71F3, 0x0000_DEAD, 0xdead_beef])),
            ),
            7 => {
                let mut name = vec![0u8; 32];
                let s = rng.pick(&[
                    "aes",
                    "twofish",
                    "serpent",
                    "cipher_null",
                    "des",
                    "foo",
                    "",
                    "AES",
                    "aes-xts",
                    "capi:aes",
                ]);
                name[..s.len()].copy_from_slice(s.as_bytes());
                if rng.below(8) == 0 {
                    name = vec![b'a'; 32];
                }
                Op::Bin(8, name)
            }
            8 => {
                let mut name = vec![0u8; 32];
                let s = rng.pick(&[
                    "xts-plain64",
                    "cbc-essiv:sha256",
                    "cbc-plain",
                    "ecb",
                    "xts-essiv:foo",
                    "lrw-benbi",
                    "xts",
                    "",
                    "foo",
                    "cbc-essiv:",
                ]);
                name[..s.len()].copy_from_slice(s.as_bytes());
                Op::Bin(40, name)
            }
            9 => {
                let mut name = vec![0u8; 32];
                let s = rng.pick(&["sha1", "sha512", "ripemd160", "whirlpool", "md5", "foo", ""]);
                name[..s.len()].copy_from_slice(s.as_bytes());
                Op::Bin(72, name)
            }
            _ => match rng.below(4) {
                0 => Op::Bin(6, vec![0, rng.pick(&[0u8, 2, 3])]),
                1 => Op::Bin(168, rng.pick(&[vec![0u8; 40], vec![b'z'; 40]])),
                2 => Op::Bin(112, vec![0u8; 20]),
                _ => Op::Bin(ks + 8, vec![0u8; 32]),
            },
        };
        ops.push(op);
    }
    ops
}

fn mutate_luks1(base: &[u8], ops: &[Op]) -> Vec<u8> {
    let mut img = base.to_vec();
    for op in ops {
        if let Op::Bin(o, b) = op {
            img[*o..o + b.len()].copy_from_slice(b);
        }
    }
    img
}

// ---------------------------------------------------------------------------------------
// Running both tools.

/// Exit code of `prog args` with a time limit (None on a hang).
fn code_of(prog: &str, args: &[&str]) -> Option<i32> {
    // cryptsetup catches SIGTERM and only acts on it between steps (not inside a PBKDF),
    // so a hang is ended with SIGKILL 5 s after the SIGTERM.
    let o = Command::new("timeout")
        .args(["-k", "5", TIMEOUT])
        .arg(prog)
        .args(args)
        .output()
        .expect("spawn timeout");
    match o.status.code() {
        // 124: timed out (SIGTERM obeyed); 137: killed by the SIGKILL that followed.
        Some(124) | Some(137) | None => None,
        Some(c) => Some(c),
    }
}

/// Verdicts (luksDump, open --test-passphrase) of one tool on one image.
fn verdicts(prog: &str, img: &str, kf: &str) -> [Option<i32>; 2] {
    [
        code_of(prog, &["luksDump", img]),
        code_of(prog, &["open", "--test-passphrase", "-d", kf, img]),
    ]
}

/// Write `bytes` as a sparse device of [`DEV_SIZE`] at `img`.
fn write_device(img: &Path, bytes: &[u8]) {
    std::fs::write(img, bytes).unwrap();
    std::fs::OpenOptions::new()
        .write(true)
        .open(img)
        .unwrap()
        .set_len(DEV_SIZE)
        .unwrap();
}

/// [`verdicts`] with the mutant written afresh before each command: cryptsetup repairs a
/// damaged LUKS2 copy in place even for luksDump, which must not leak into the next run.
fn fresh_verdicts(prog: &str, img: &Path, bytes: &[u8], kf: &str) -> [Option<i32>; 2] {
    let path = img.to_str().unwrap();
    write_device(img, bytes);
    let dump = code_of(prog, &["luksDump", path]);
    write_device(img, bytes);
    let open = code_of(prog, &["open", "--test-passphrase", "-d", kf, path]);
    [dump, open]
}

/// Base images made by real cryptsetup: (LUKS2, LUKS1), each with slot 0 = `kf0` and
/// slot 1 = `kf1`, a LUKS2 token, low PBKDF2 costs.
fn make_bases(dir: &Path, kf0: &str, kf1: &str) -> Option<(Vec<u8>, Vec<u8>)> {
    let mut out = Vec::new();
    for kind in ["luks2", "luks1"] {
        let img = sparse(dir, &format!("base-{kind}.img"), DEV_SIZE);
        let fast = ["--pbkdf", "pbkdf2", "--pbkdf-force-iterations", "1000"];
        let mut a = vec!["luksFormat", "-q", "--type", kind, "-d", kf0];
        a.extend_from_slice(&fast);
        a.push(&img);
        cryptsetup(&a, b"")?.ok("cryptsetup luksFormat");
        let mut a = vec!["luksAddKey", "-q", "-d", kf0, &img, kf1];
        a.extend_from_slice(&fast);
        cryptsetup(&a, b"")?.ok("cryptsetup luksAddKey");
        if kind == "luks2" {
            cryptsetup(
                &["token", "add", "--key-description", "hostile:base", &img],
                b"",
            )?
            .ok("cryptsetup token add");
        }
        let mut b = std::fs::read(&img).unwrap();
        b.truncate(PREFIX);
        out.push(b);
    }
    let l1 = out.pop().unwrap();
    let l2 = out.pop().unwrap();
    Some((l2, l1))
}

struct Tally {
    tried: usize,
    agree: usize,
    code_equal: usize,
    skipped_hang: usize,
    /// Mutants on which cryptsetup accepts even a wrong passphrase (its digest-length bug).
    cryptsetup_accepts_any: usize,
    disagreements: Vec<String>,
}

/// Write the mutant, run both tools, compare.
fn compare(dir: &Path, kf: &str, cs: &str, name: &str, bytes: &[u8], t: &mut Tally) {
    let img = dir.join("mutant.img");
    write_device(&img, bytes);
    let img = img.to_str().unwrap();
    if let Ok(keep) = std::env::var("LUKSKIT_HOSTILE_KEEP") {
        // Debugging aid: keep a copy of every mutant whose name contains this text.
        if name.contains(&keep) {
            let _ = std::fs::copy(
                img,
                format!(
                    "/tmp/hostile-{}.img",
                    name.replace([' ', '/', '"', '(', ')', '[', ']', ','], "_")
                ),
            );
        }
    }
    let path = Path::new(img);
    let theirs = fresh_verdicts(cs, path, bytes, kf);
    let ours = fresh_verdicts(env!("CARGO_BIN_EXE_lukskit"), path, bytes, kf);
    t.tried += 1;
    if theirs.iter().any(|c| c.is_none()) {
        eprintln!("note: cryptsetup timed out on {name}; not compared");
        t.skipped_hang += 1;
        return;
    }
    let mut ok = true;
    compare_one(&theirs, &ours, 0, "luksDump", name, &mut ok, t);
    if theirs[1] == Some(0)
        && ours[1].is_some_and(|c| c != 0)
        && accepts_any_passphrase(dir, cs, img)
    {
        // cryptsetup 2.6.1 bug: PBKDF2_digest_verify returns success without comparing when
        // the stored digest length fits neither 20 bytes nor the digest hash (or the salt is
        // not 32 bytes), so every passphrase "unlocks". lukskit refuses such a digest rather
        // than report a wrong passphrase as right; the divergence is expected.
        eprintln!("note: cryptsetup accepts a wrong passphrase on {name}; lukskit refuses");
        t.cryptsetup_accepts_any += 1;
    } else {
        compare_one(
            &theirs,
            &ours,
            1,
            "open --test-passphrase",
            name,
            &mut ok,
            t,
        );
    }
    if ok {
        t.agree += 1;
    }
}

/// Does cryptsetup report a passphrase that is certainly wrong as right on `img`?
fn accepts_any_passphrase(dir: &Path, cs: &str, img: &str) -> bool {
    let wrong = write_file(dir, "wrong-key", b"certainly not the passphrase");
    code_of(cs, &["open", "--test-passphrase", "-d", &wrong, img]) == Some(0)
}

fn compare_one(
    theirs: &[Option<i32>; 2],
    ours: &[Option<i32>; 2],
    i: usize,
    what: &str,
    name: &str,
    ok: &mut bool,
    t: &mut Tally,
) {
    let (c, l) = (theirs[i].unwrap(), ours[i]);
    match l {
        None => {
            *ok = false;
            t.disagreements.push(format!(
                "{name}: lukskit {what} hangs (cryptsetup exit {c})"
            ));
        }
        Some(l) if (l == 0) != (c == 0) => {
            *ok = false;
            t.disagreements.push(format!(
                "{name}: {what}: cryptsetup exit {c}, lukskit exit {l}"
            ));
        }
        Some(l) if l == c => t.code_equal += 1,
        Some(_) => {}
    }
}

fn seed() -> u64 {
    match std::env::var("LUKSKIT_HOSTILE_SEED") {
        Ok(s) => s.parse().expect("LUKSKIT_HOSTILE_SEED must be a u64"),
        Err(_) => std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos() as u64,
    }
}

/// `n` arrays nested in one another.
fn nested_arrays(n: usize) -> Value {
    (1..n).fold(json!([]), |v, _| json!([v]))
}

fn report(what: &str, t: &Tally) {
    eprintln!(
        "{what}: headers tried {}, verdicts agree {}, exit codes equal {} of {}, cryptsetup hangs {}, \
         cryptsetup accepts any passphrase {}",
        t.tried,
        t.agree,
        t.code_equal,
        2 * (t.tried - t.skipped_hang),
        t.skipped_hang,
        t.cryptsetup_accepts_any
    );
    for d in &t.disagreements {
        eprintln!("DISAGREEMENT {d}");
    }
}

/// What every differential test starts from: a scratch directory, the cryptsetup binary,
/// the key file, and cryptsetup-made LUKS2 and LUKS1 base images.
struct Setup(tempfile::TempDir, String, String, Vec<u8>, Vec<u8>);

fn setup(test: &str) -> Option<Setup> {
    if !have_cryptsetup(test) {
        return None;
    }
    let cs = cryptsetup_path()?.to_str()?.to_string();
    let dir = tmp();
    let kf0 = write_file(dir.path(), "k0", b"hostile zero");
    let kf1 = write_file(dir.path(), "k1", b"hostile one");
    let (l2, l1) = make_bases(dir.path(), &kf0, &kf1)?;
    Some(Setup(dir, cs, kf0, l2, l1))
}

#[test]
fn random_hostile_headers_match_cryptsetup() {
    let Some(Setup(dir, cs, kf, l2, l1)) = setup("hostile headers") else {
        return;
    };
    let seed = seed();
    let count: usize = std::env::var("LUKSKIT_HOSTILE_COUNT")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(150);
    eprintln!(
        "hostile headers: seed {seed} (LUKSKIT_HOSTILE_SEED={seed} to repeat), {count} per format"
    );
    let mut rng = Rng(seed);
    let hdr_size = be64(&l2, 8) as usize;
    let end = l2[4096..hdr_size].iter().position(|&c| c == 0).unwrap();
    let base_json: Value = serde_json::from_slice(&l2[4096..4096 + end]).unwrap();
    let mut t2 = Tally {
        tried: 0,
        agree: 0,
        code_equal: 0,
        skipped_hang: 0,
        cryptsetup_accepts_any: 0,
        disagreements: vec![],
    };
    let mut t1 = Tally {
        tried: 0,
        agree: 0,
        code_equal: 0,
        skipped_hang: 0,
        cryptsetup_accepts_any: 0,
        disagreements: vec![],
    };
    for i in 0..count {
        let ops = gen_luks2(&mut rng, &base_json);
        let bytes = mutate_luks2(&l2, &ops);
        compare(
            dir.path(),
            &kf,
            &cs,
            &format!("luks2 #{i} {ops:?}"),
            &bytes,
            &mut t2,
        );
        let ops = gen_luks1(&mut rng);
        let bytes = mutate_luks1(&l1, &ops);
        compare(
            dir.path(),
            &kf,
            &cs,
            &format!("luks1 #{i} {ops:?}"),
            &bytes,
            &mut t1,
        );
    }
    report("LUKS2", &t2);
    report("LUKS1", &t1);
    assert!(
        t2.disagreements.is_empty() && t1.disagreements.is_empty(),
        "lukskit and cryptsetup disagree (seed {seed}); see DISAGREEMENT lines"
    );
}

/// Named LUKS2 cases: every disagreement ever found by the random generator, plus the
/// classic hostile shapes, run on every `cargo test`.
fn regressions_luks2() -> Vec<(&'static str, Vec<Op>)> {
    vec![
        // Issue 36 item 13: whitespace after the JSON object and a NUL inside a JSON string
        // get cryptsetup 2.6.1's verdicts; json-c's coercions of a digest's `hash` (an
        // object, a number) and `digest` (a number), where cryptsetup then accepts any
        // passphrase, are refused by lukskit on purpose (noted by `compare`, listed in
        // RELIABILITY.md).
        (
            "json-trailing-whitespace",
            vec![Op::Text(
                "\"tokens\":{}}".into(),
                "\"tokens\":{}}  \n\t".into(),
            )],
        ),
        (
            "nul-inside-a-string",
            vec![Op::Set(
                "/segments/0/encryption".into(),
                json!("aes-xts-plain64\u{0}junk"),
            )],
        ),
        (
            "digest-hash-object",
            vec![Op::Set("/digests/0/hash".into(), json!({"x": 1}))],
        ),
        (
            "digest-hash-number",
            vec![Op::Set("/digests/0/hash".into(), json!(5))],
        ),
        (
            "digest-number",
            vec![Op::Set("/digests/0/digest".into(), json!(5))],
        ),
        (
            "unknown-mandatory-requirement",
            vec![Op::Set(
                "/config/requirements".into(),
                json!({"mandatory": ["foo"]}),
            )],
        ),
        (
            "segment-beyond-device",
            vec![Op::Set("/segments/0/offset".into(), json!("1099511627776"))],
        ),
        (
            "keyslot-area-overlaps-segment",
            vec![Op::Set("/keyslots/1/area/offset".into(), json!("16777216"))],
        ),
        (
            "duplicated-keyslot",
            vec![Op::Set(
                "/keyslots/2".into(),
                json!({"type":"luks2","key_size":64,"af":{"type":"luks1","stripes":4000,"hash":"sha256"},
                       "area":{"type":"raw","offset":"32768","size":"258048","encryption":"aes-xts-plain64","key_size":64},
                       "kdf":{"type":"pbkdf2","hash":"sha256","iterations":1000,"salt":"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="}}),
            )],
        ),
        (
            "negative-offset",
            vec![Op::Set("/segments/0/offset".into(), json!("-1"))],
        ),
        (
            "bad-digest",
            vec![Op::Set(
                "/digests/0/digest".into(),
                json!("AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="),
            )],
        ),
        (
            "unknown-token-type",
            vec![Op::Set(
                "/tokens/1".into(),
                json!({"type": "foo", "keyslots": ["0"]}),
            )],
        ),
        (
            "json-size-mismatch",
            vec![Op::Set("/config/json_size".into(), json!("4096"))],
        ),
        (
            "hdr-size-zero",
            vec![Op::Bin(8, 0u64.to_be_bytes().to_vec())],
        ),
        ("json-without-nul", vec![Op::FillArea]),
        (
            "t-area-keysize-neg",
            vec![Op::Set("/keyslots/1/area/key_size".into(), json!(-1))],
        ),
        (
            "t-seg-null",
            vec![Op::Set(
                "/segments/0/encryption".into(),
                json!("cipher_null-ecb"),
            )],
        ),
        (
            "t-digest-salt",
            vec![Op::Set("/digests/0/salt".into(), json!("!!not base64!!"))],
        ),
        (
            "t-capi-area",
            vec![Op::Set(
                "/keyslots/0/area/encryption".into(),
                json!("capi:xts(aes)-plain64"),
            )],
        ),
        (
            "t-digest-sha512",
            vec![Op::Set("/digests/0/hash".into(), json!("sha512"))],
        ),
        (
            "t-stripes2",
            vec![Op::Set("/keyslots/0/af/stripes".into(), json!(2))],
        ),
        (
            "t-area-size-small",
            vec![Op::Set("/keyslots/0/area/size".into(), json!("12288"))],
        ),
        (
            "t-kdf-iterations-neg",
            vec![Op::Set("/keyslots/1/kdf/iterations".into(), json!(-1))],
        ),
        (
            "t-digest-no-digest",
            vec![Op::Del("/digests/0/digest".into())],
        ),
        (
            "t-digest-iterations-string",
            vec![Op::Set("/digests/0/iterations".into(), json!(""))],
        ),
        // cryptsetup's keyslot crypto takes IV options only for essiv.
        (
            "t-area-plain64-ivopts",
            vec![Op::Set(
                "/keyslots/0/area/encryption".into(),
                json!("aes-xts-plain64:sha256"),
            )],
        ),
        // A digest hash that is not a string loads (json-c prints it as JSON text).
        (
            "t-digest-hash-number",
            vec![Op::Set("/digests/0/hash".into(), json!(u64::MAX))],
        ),
        // A digest without its salt still dumps (an empty salt), and opens nothing.
        ("t-digest-no-salt", vec![Op::Del("/digests/0/salt".into())]),
        // Digest iterations are read with json_object_get_int64 into an unsigned int: a
        // string's leading number counts, 64-bit values wrap, `true` is 1.
        (
            "t-digest-iterations-string",
            vec![Op::Set("/digests/0/iterations".into(), json!(" 1000x"))],
        ),
        (
            "t-digest-iterations-wrap",
            vec![Op::Set(
                "/digests/0/iterations".into(),
                json!(4_294_968_296u64),
            )],
        ),
        (
            "t-digest-iterations-negative-wrap",
            vec![Op::Set(
                "/digests/0/iterations".into(),
                json!(-4_294_966_296i64),
            )],
        ),
        (
            "t-digest-iterations-true",
            vec![Op::Set("/digests/0/iterations".into(), json!(true))],
        ),
        // -1 iterations reads as 2^32 - 1: cryptsetup refuses a salt that is not base64
        // before it runs PBKDF2 (found by the random test, seed 1795445909995276565).
        (
            "t-digest-bad-salt-huge-iterations",
            vec![
                Op::Set("/digests/0/salt".into(), json!("!!not base64!!")),
                Op::Set("/digests/0/iterations".into(), json!(-1)),
            ],
        ),
        // json-c's nesting limit (32 levels): 30 arrays under config load, 31 do not.
        (
            "t-nested-30",
            vec![Op::Set("/config/x".into(), nested_arrays(30))],
        ),
        (
            "t-nested-31",
            vec![Op::Set("/config/x".into(), nested_arrays(31))],
        ),
        (
            "t-priority-511",
            vec![
                Op::Set("/keyslots/0/kdf/iterations".into(), json!(1000)),
                Op::Set("/keyslots/0/priority".into(), json!(511)),
            ],
        ),
        // An unknown KDF type (cryptsetup 2.0's pre-release "argon2", or garbage) passes
        // validation: the header loads and dumps, only that keyslot fails to open.
        (
            "kdf-type-argon2-prerelease",
            vec![Op::Set("/keyslots/0/kdf/type".into(), json!("argon2"))],
        ),
        (
            "kdf-type-garbage",
            vec![Op::Set("/keyslots/0/kdf/type".into(), json!("%garbage%"))],
        ),
        // A primary binary header announcing a version other than 0, 1 and 2 makes
        // cryptsetup refuse the device ("Unsupported LUKS version N.") although the
        // secondary copy is intact.
        (
            "primary-version-3",
            vec![Op::BinPrimary(6, 3u16.to_be_bytes().to_vec())],
        ),
        (
            "primary-version-65535",
            vec![Op::BinPrimary(6, 0xffffu16.to_be_bytes().to_vec())],
        ),
        // Version 0 reads as a damaged LUKS2 primary: the secondary copy is used.
        (
            "primary-version-0",
            vec![Op::BinPrimary(6, 0u16.to_be_bytes().to_vec())],
        ),
        // A keyslot salt that is not Base64 dumps as nothing (not even a line end).
        (
            "keyslot-salt-not-base64",
            vec![Op::Set(
                "/keyslots/0/kdf/salt".into(),
                json!("!!not base64!!"),
            )],
        ),
    ]
}

/// Named LUKS1 cases.
fn regressions_luks1() -> Vec<(&'static str, Vec<Op>)> {
    vec![
        (
            "key-bytes-zero",
            vec![Op::Bin(108, 0u32.to_be_bytes().to_vec())],
        ),
        (
            "payload-beyond-device",
            vec![Op::Bin(104, 0xffff_ffffu32.to_be_bytes().to_vec())],
        ),
        (
            "stripes-huge",
            vec![Op::Bin(
                L1_KEYSLOT + 44,
                0xffff_ffffu32.to_be_bytes().to_vec(),
            )],
        ),
        (
            "slot0-state-zero",
            vec![Op::Bin(L1_KEYSLOT, vec![0, 0, 0, 0])],
        ),
        (
            "slot0-state-garbage",
            vec![Op::Bin(L1_KEYSLOT, vec![0xde, 0xad, 0xbe, 0xef])],
        ),
        (
            "slot1-state-garbage",
            vec![
                Op::Bin(L1_KEYSLOT + L1_KS_LEN, vec![0xde, 0xad, 0xbe, 0xef]),
                Op::Bin(L1_KEYSLOT + L1_KS_LEN + 4, vec![0xde, 0xad, 0xbe, 0xef]),
            ],
        ),
        ("cipher-name-upper", vec![Op::Bin(8, b"AES\0".to_vec())]),
        (
            "hash-sha1-slot1-state-zero",
            vec![
                Op::Bin(72, b"sha1\0\0\0\0".to_vec()),
                Op::Bin(L1_KEYSLOT + L1_KS_LEN, vec![0, 0, 0, 0]),
            ],
        ),
        (
            "keyslots-overlap",
            vec![Op::Bin(
                L1_KEYSLOT + L1_KS_LEN + 40,
                8u32.to_be_bytes().to_vec(),
            )],
        ),
    ]
}

#[test]
fn named_hostile_headers_match_cryptsetup() {
    let Some(Setup(dir, cs, kf, l2, l1)) = setup("named hostile headers") else {
        return;
    };
    let mut t = Tally {
        tried: 0,
        agree: 0,
        code_equal: 0,
        skipped_hang: 0,
        cryptsetup_accepts_any: 0,
        disagreements: vec![],
    };
    for (name, ops) in regressions_luks2() {
        let b = mutate_luks2(&l2, &ops);
        compare(dir.path(), &kf, &cs, &format!("luks2 {name}"), &b, &mut t);
    }
    for (name, ops) in regressions_luks1() {
        let b = mutate_luks1(&l1, &ops);
        compare(dir.path(), &kf, &cs, &format!("luks1 {name}"), &b, &mut t);
    }
    report("named cases", &t);
    assert!(t.disagreements.is_empty(), "see DISAGREEMENT lines");
}

/// The checksum written here is the one cryptsetup computes: an unmodified rewrite of the
/// base header must still be accepted by cryptsetup (guards the generator itself).
#[test]
fn rewritten_base_is_accepted_by_cryptsetup() {
    let Some(Setup(dir, cs, kf, l2, _)) = setup("hostile generator self-check") else {
        return;
    };
    let b = mutate_luks2(&l2, &[Op::Bin(24, b"relabel\0".to_vec())]);
    let img = write_file(dir.path(), "self.img", &b);
    std::fs::OpenOptions::new()
        .write(true)
        .open(&img)
        .unwrap()
        .set_len(DEV_SIZE)
        .unwrap();
    assert_eq!(verdicts(&cs, &img, &kf), [Some(0), Some(0)]);
}

// ---------------------------------------------------------------------------------------
// Detailed comparison: exit codes and output, not only the accept/reject verdict.

/// Which cryptsetup-made base image a detailed case starts from.
#[derive(Clone, Copy, Debug)]
enum Base {
    /// Two PBKDF2 keyslots (the base of the random test).
    Pbkdf2,
    /// Two Argon2id keyslots (minimal costs).
    Argon2,
}

/// Whether a detailed case also compares the first line of stderr. Where a tool refuses the
/// whole header, lukskit prints its own diagnosis where cryptsetup says only "Device ... is
/// not a valid LUKS device.", so only exit codes and stdout are compared there.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Stderr {
    FirstLine,
    Ignored,
}

/// Named cases compared in detail. The three classes of odd headers found by differential
/// runs (unknown KDF type, unsupported primary version, odd `hash` in an Argon2 KDF) and
/// their near variants.
fn detailed_cases() -> Vec<(&'static str, Base, Stderr, Vec<Op>)> {
    use Base::*;
    use Stderr::*;
    let kdf1 = |k: &str| format!("/keyslots/1/kdf/{k}");
    vec![
        // 1. Unknown KDF type: the header loads and dumps (the Argon2 lines, whatever the
        //    type), that keyslot fails with "Keyslot open failed." (exit 1), and as
        //    cryptsetup stops at the first keyslot that fails that way, a failing slot 0
        //    also hides slot 1.
        (
            "kdf-argon2-prerelease-slot1",
            Argon2,
            FirstLine,
            vec![Op::Set(kdf1("type"), json!("argon2"))],
        ),
        (
            "kdf-argon2-prerelease-slot0",
            Argon2,
            FirstLine,
            vec![Op::Set("/keyslots/0/kdf/type".into(), json!("argon2"))],
        ),
        (
            "kdf-type-garbage-pbkdf2-members",
            Pbkdf2,
            FirstLine,
            vec![Op::Set(kdf1("type"), json!("PBKDF2"))],
        ),
        (
            "kdf-unknown-odd-members",
            Pbkdf2,
            FirstLine,
            vec![Op::Set(
                "/keyslots/1/kdf".into(),
                json!({"type": "scrypt", "time": "12x", "memory": -5, "cpus": [1], "salt": 1234}),
            )],
        ),
        (
            "kdf-unknown-type-only",
            Pbkdf2,
            FirstLine,
            vec![Op::Set("/keyslots/1/kdf".into(), json!({"type": "argon2"}))],
        ),
        // 2. Primary binary header with an unsupported version: refused without --type
        //    ("Unsupported LUKS version N.", exit 1), read from the secondary copy with
        //    --type luks2; version 0 reads as a damaged primary.
        (
            "primary-version-3",
            Pbkdf2,
            FirstLine,
            vec![Op::BinPrimary(6, 3u16.to_be_bytes().to_vec())],
        ),
        (
            "primary-version-65535",
            Argon2,
            FirstLine,
            vec![Op::BinPrimary(6, 0xffffu16.to_be_bytes().to_vec())],
        ),
        (
            "primary-version-0",
            Pbkdf2,
            FirstLine,
            vec![Op::BinPrimary(6, 0u16.to_be_bytes().to_vec())],
        ),
        // Version 1: both read the LUKS2 header as LUKS1 and refuse it (exit 1), with
        // different wording.
        (
            "primary-version-1",
            Pbkdf2,
            Ignored,
            vec![Op::BinPrimary(6, 1u16.to_be_bytes().to_vec())],
        ),
        // 3. An Argon2 KDF with a `hash` member (unknown name, not a string, or left over
        //    with PBKDF2 iterations): the repair drops members the type does not use, the
        //    keyslot opens.
        (
            "argon2-kdf-hash-unknown",
            Argon2,
            FirstLine,
            vec![Op::Set(kdf1("hash"), json!("no-such-hash"))],
        ),
        (
            "argon2-kdf-hash-number",
            Argon2,
            FirstLine,
            vec![Op::Set(kdf1("hash"), json!(0))],
        ),
        (
            "argon2-kdf-hash-string-0",
            Argon2,
            FirstLine,
            vec![Op::Set(kdf1("hash"), json!("0"))],
        ),
        (
            "argon2-kdf-pbkdf2-leftovers",
            Argon2,
            FirstLine,
            vec![
                Op::Set(kdf1("hash"), json!("sha256")),
                Op::Set(kdf1("iterations"), json!(1000)),
            ],
        ),
        // Near variants: KDF members missing (the header is refused for a known type) ...
        (
            "pbkdf2-kdf-missing-hash",
            Pbkdf2,
            Ignored,
            vec![Op::Del(kdf1("hash"))],
        ),
        (
            "argon2-kdf-missing-cpus",
            Argon2,
            Ignored,
            vec![Op::Del(kdf1("cpus"))],
        ),
        (
            "argon2-kdf-hash-instead-of-cpus",
            Argon2,
            Ignored,
            vec![
                Op::Del(kdf1("cpus")),
                Op::Set(kdf1("hash"), json!("sha256")),
            ],
        ),
        // ... Base64 members that do not decode (printed as nothing at all; a digest salt
        // that is not 32 bytes makes cryptsetup fail too, unlike a digest of the wrong
        // length, with which it accepts any passphrase, see `accepts_any_passphrase`), an
        // unknown AF hash.
        (
            "keyslot-salt-not-base64",
            Pbkdf2,
            FirstLine,
            vec![Op::Set(kdf1("salt"), json!("!!not base64!!"))],
        ),
        (
            "digest-salt-not-base64",
            Pbkdf2,
            FirstLine,
            vec![Op::Set("/digests/0/salt".into(), json!("!!not base64!!"))],
        ),
        (
            "af-hash-unknown",
            Pbkdf2,
            FirstLine,
            vec![Op::Set("/keyslots/1/af/hash".into(), json!("0"))],
        ),
    ]
}

/// Exit code, stdout and the first line of stderr of `prog args`; None on a hang.
fn run_full(prog: &str, args: &[&str]) -> Option<(i32, String, String)> {
    let o = Command::new("timeout")
        .args(["-k", "5", TIMEOUT])
        .arg(prog)
        .args(args)
        .output()
        .expect("spawn timeout");
    match o.status.code() {
        Some(124) | Some(137) | None => None,
        Some(c) => Some((
            c,
            String::from_utf8_lossy(&o.stdout).into_owned(),
            String::from_utf8_lossy(&o.stderr)
                .lines()
                .next()
                .unwrap_or("")
                .to_string(),
        )),
    }
}

/// A LUKS2 base image with two Argon2id keyslots (`kf0`, `kf1`), made by cryptsetup.
fn make_argon2_base(dir: &Path, kf0: &str, kf1: &str) -> Option<Vec<u8>> {
    let img = sparse(dir, "base-argon2.img", DEV_SIZE);
    let cheap = [
        "--pbkdf",
        "argon2id",
        "--pbkdf-force-iterations",
        "4",
        "--pbkdf-memory",
        "32",
        "--pbkdf-parallel",
        "1",
    ];
    let mut a = vec!["luksFormat", "-q", "--type", "luks2", "-d", kf0];
    a.extend_from_slice(&cheap);
    a.push(&img);
    cryptsetup(&a, b"")?.ok("cryptsetup luksFormat (argon2id)");
    let mut a = vec!["luksAddKey", "-q", "-d", kf0, &img, kf1];
    a.extend_from_slice(&cheap);
    cryptsetup(&a, b"")?.ok("cryptsetup luksAddKey (argon2id)");
    let mut b = std::fs::read(&img).unwrap();
    b.truncate(PREFIX);
    Some(b)
}

#[test]
fn odd_headers_match_cryptsetup_in_detail() {
    let Some(Setup(dir, cs, kf0, l2, _)) = setup("odd headers in detail") else {
        return;
    };
    let kf1 = dir.path().join("k1").to_str().unwrap().to_string();
    let a2 = make_argon2_base(dir.path(), &kf0, &kf1).expect("argon2 base image");
    let img = dir.path().join("detail.img");
    let path = img.to_str().unwrap();
    let lk = env!("CARGO_BIN_EXE_lukskit");
    let commands: [Vec<&str>; 5] = [
        vec!["luksDump", path],
        vec!["open", "--test-passphrase", "-d", &kf0, path],
        vec!["open", "--test-passphrase", "-d", &kf1, path],
        vec!["luksDump", "--type", "luks2", path],
        vec![
            "open",
            "--test-passphrase",
            "--type",
            "luks2",
            "-d",
            &kf1,
            path,
        ],
    ];
    let (mut tried, mut agree, mut failures) = (0, 0, Vec::new());
    for (name, base, stderr, ops) in detailed_cases() {
        let bytes = mutate_luks2(
            match base {
                Base::Pbkdf2 => &l2,
                Base::Argon2 => &a2,
            },
            &ops,
        );
        tried += 1;
        let mut ok = true;
        for cmd in &commands {
            // Fresh copy for every run: cryptsetup repairs a damaged copy in place.
            write_device(&img, &bytes);
            let theirs = run_full(&cs, cmd).expect("cryptsetup hangs");
            write_device(&img, &bytes);
            let ours = run_full(lk, cmd).expect("lukskit hangs");
            let same = theirs.0 == ours.0
                && theirs.1 == ours.1
                && (stderr == Stderr::Ignored || theirs.2 == ours.2);
            if !same {
                ok = false;
                failures.push(format!(
                    "{name} ({base:?}) {:?}: cryptsetup {theirs:?}, lukskit {ours:?}",
                    &cmd[..cmd.len() - 1]
                ));
            }
        }
        if ok {
            agree += 1;
        }
    }
    eprintln!("detailed named cases: {tried} tried, {agree} agree in exit codes and output");
    for f in &failures {
        eprintln!("DIFFERENCE {f}");
    }
    assert!(failures.is_empty(), "see DIFFERENCE lines");
}

/// `bytes` (a LUKS2 image prefix) with both header copies' `checksum_alg` set to `alg` and
/// their checksums computed with Python's hashlib (an implementation independent of lukskit).
fn with_checksum_alg(bytes: &[u8], alg: &str) -> Vec<u8> {
    let mut img = bytes.to_vec();
    let hdr_size = be64(&img, 8) as usize;
    for copy in 0..2 {
        let off = copy * hdr_size;
        img[off + 72..off + 104].fill(0);
        img[off + 72..off + 72 + alg.len()].copy_from_slice(alg.as_bytes());
        img[off + 448..off + 512].fill(0);
        let mut py = std::process::Command::new("python3")
            .args([
                "-c",
                "import hashlib,sys; sys.stdout.buffer.write(hashlib.new(sys.argv[1], sys.stdin.buffer.read()).digest())",
                alg,
            ])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("python3");
        {
            use std::io::Write;
            py.stdin
                .take()
                .unwrap()
                .write_all(&img[off..off + hdr_size])
                .unwrap();
        }
        let d = py.wait_with_output().unwrap().stdout;
        assert!(!d.is_empty() && d.len() <= 64, "hashlib {alg}");
        img[off + 448..off + 448 + d.len()].copy_from_slice(&d);
    }
    img
}

/// Issue 36 item 13: a LUKS2 header whose checksum algorithm is `md5` or `blake2b512` (hashes
/// cryptsetup 2.6.1 takes from OpenSSL for this field) is read and opened by both tools; a
/// wrong checksum under those algorithms is refused by both, and an unknown algorithm too.
#[test]
fn md5_and_blake2b512_header_checksums_as_cryptsetup() {
    let Some(Setup(dir, cs, kf, l2, _)) = setup("md5 and blake2b512 header checksums") else {
        return;
    };
    let img = dir.path().join("csum.img");
    let img_s = img.to_str().unwrap().to_string();
    for (alg, valid) in [
        ("md5", true),
        ("blake2b512", true),
        ("sha256", true),
        ("md5", false),
        ("blake2b512", false),
    ] {
        let mut b = with_checksum_alg(&l2, alg);
        if !valid {
            // Break both copies' checksums.
            let hdr_size = be64(&b, 8) as usize;
            b[448] ^= 0xff;
            b[hdr_size + 448] ^= 0xff;
        }
        write_device(&img, &b);
        let theirs = verdicts(&cs, &img_s, &kf);
        let ours = verdicts(env!("CARGO_BIN_EXE_lukskit"), &img_s, &kf);
        assert_eq!(ours, theirs, "checksum {alg} (valid: {valid})");
        if valid {
            assert_eq!(theirs, [Some(0), Some(0)], "cryptsetup should take {alg}");
        } else {
            assert_ne!(theirs[1], Some(0), "cryptsetup opened a bad {alg} checksum");
        }
    }
}
