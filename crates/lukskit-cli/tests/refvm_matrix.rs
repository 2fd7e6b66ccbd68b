//! The kernel interop matrix: real dm-crypt (Debian's 6.1 kernel with cryptsetup 2.6.1 in the
//! reference VM, `tests/refvm/run.sh`) against `lukskit image encrypt|decrypt`, for every
//! cipher specification × sector size × mode (LUKS1, LUKS2, plain mode with `--offset` and
//! `--skip`, `--iv-large-sectors`, detached headers) of issue 4, in both directions:
//!
//! * **a** (kernel → lukskit): in the VM cryptsetup formats the volume (or opens it in plain
//!   mode) and the kernel writes the case's plaintext through `/dev/mapper` with `dd`; on the
//!   host `lukskit image decrypt` reads the image back and must return that plaintext.
//! * **b** (lukskit → kernel): on the host `lukskit image encrypt` writes the same plaintext
//!   into a new image; in the VM `cryptsetup open` maps it and the kernel's decryption of the
//!   whole mapping, copied back to the host, must be that plaintext.
//!
//! All cases run in one boot. Plaintexts and keys are pseudo-random from fixed seeds; every
//! case lives in its own regions of a single sparse work disk (see
//! `tests/refvm/matrix/matrix.sh`, which runs the kernel half). A table of all cases is
//! printed; the test fails with the list of cases where the kernel and lukskit disagree.
//!
//! One boot of ~1.5–2 minutes under TCG on two cores (the key slots use PBKDF2 with 1000
//! iterations; every program start in the VM costs ~0.1 s, so mappings are torn down in
//! batches); the VM gets a timeout of four times what the cases need on an idle host (see
//! [`vm_timeout`]), and the time it took is printed. Fails where the VM cannot be had (run.sh
//! exits 77) or with `LUKSKIT_REFVM=0`, unless `LUKSKIT_ALLOW_SKIP=1` lets it skip with a
//! `SKIP:` line; `LUKSKIT_REFVM_KEEP=1` keeps the work directory (plan, keys,
//! work disk, every image) for a look afterwards, e.g. to rerun the VM half by hand:
//! `tests/refvm/run.sh --copy plan:/refvm/files/plan --copy keys:/refvm/files/keys
//! tests/refvm/matrix/matrix.sh work.img` in that directory.

mod common;
mod refvm_common;
use refvm_common::{refvm_dir, run_vm, say, timeout_for, vm_ready};

use std::collections::HashMap;
use std::fmt::Write as _;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::time::Instant;

const MIB: u64 = 1 << 20;
/// Bytes of key material per case in the key file (plain keys up to 64 bytes, passphrases 32).
const KEY_SLOT: u64 = 512;
/// LUKS passphrase length (read with `--keyfile-size` in the VM).
const PASS_LEN: usize = 32;
/// The small LUKS2 header used by most LUKS2 cases (cryptsetup's default is 16 MiB).
const SMALL_LUKS2: [&str; 4] = [
    "--luks2-metadata-size",
    "16k",
    "--luks2-keyslots-size",
    "256k",
];
/// Fast key slots (TCG is slow).
const PBKDF: [&str; 4] = ["--pbkdf", "pbkdf2", "--pbkdf-force-iterations", "1000"];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Luks1,
    Luks2,
    Plain,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Luks1 => "luks1",
            Kind::Luks2 => "luks2",
            Kind::Plain => "plain",
        }
    }
}

/// One cell of the matrix (run in both directions).
#[derive(Debug, Clone)]
struct Case {
    id: usize,
    kind: Kind,
    cipher: &'static str,
    bits: u32,
    sector: u32,
    /// `--iv-large-sectors` (plain mode).
    large: bool,
    /// `--offset` in 512-byte sectors (`None`: cryptsetup's default data offset).
    offset: Option<u64>,
    /// `--skip` in 512-byte sectors (plain mode).
    skip: u64,
    /// LUKS header in a separate file / device.
    detached: bool,
    /// LUKS2: cryptsetup's default 16 MiB header instead of the small one.
    default_header: bool,
    /// Plaintext bytes (set by [`cases`]).
    len: u64,
}

impl Case {
    fn new(kind: Kind, cipher: &'static str, bits: u32, sector: u32) -> Case {
        Case {
            id: 0,
            kind,
            cipher,
            bits,
            sector,
            large: false,
            offset: match kind {
                Kind::Plain => Some(0),
                _ => None,
            },
            skip: 0,
            detached: false,
            default_header: false,
            len: 0,
        }
    }
    fn offset(mut self, o: u64) -> Case {
        self.offset = Some(o);
        self
    }
    fn skip(mut self, s: u64) -> Case {
        self.skip = s;
        self
    }
    fn large(mut self) -> Case {
        self.large = true;
        self
    }
    fn detached(mut self) -> Case {
        self.detached = true;
        self
    }
    fn default_header(mut self) -> Case {
        self.default_header = true;
        self
    }
    fn is_luks(&self) -> bool {
        self.kind != Kind::Plain
    }

    /// Plaintext rounded up to whole encryption sectors (what the mapping holds).
    fn data_len(&self) -> u64 {
        self.len.div_ceil(u64::from(self.sector)) * u64::from(self.sector)
    }

    /// Data offset cryptsetup 2.6.1 picks, in bytes (checked against real cryptsetup: LUKS1
    /// key slots of `key × 4000` stripes aligned to 4 KiB after the 4 KiB header, the payload
    /// aligned to 1 MiB; the small LUKS2 header fits in 1 MiB; detached headers put the data
    /// at 0).
    fn data_offset(&self) -> u64 {
        if let Some(o) = self.offset {
            return o * 512;
        }
        if self.detached {
            return 0;
        }
        match self.kind {
            Kind::Luks1 => {
                let stripes = (u64::from(self.bits) / 8 * 4000).div_ceil(512).div_ceil(8) * 8;
                (8 + 8 * stripes).div_ceil(2048) * 2048 * 512
            }
            Kind::Luks2 if self.default_header => 16 * MIB,
            Kind::Luks2 => MIB,
            Kind::Plain => 0,
        }
    }

    /// Size of a detached header region in the VM (the device cannot grow).
    fn header_region(&self) -> u64 {
        if self.default_header {
            16 * MIB
        } else {
            4 * MIB
        }
    }

    /// Options shared by cryptsetup (direction a) and lukskit (both directions), without the
    /// key source and the header.
    fn options(&self, formatting: bool) -> Vec<String> {
        let mut v: Vec<String> = vec!["--type".into(), self.kind.name().into()];
        let s = |v: &mut Vec<String>, a: &str, b: String| {
            v.push(a.into());
            v.push(b);
        };
        match self.kind {
            Kind::Plain => {
                s(&mut v, "--cipher", self.cipher.into());
                s(&mut v, "--key-size", self.bits.to_string());
                s(&mut v, "--sector-size", self.sector.to_string());
                s(&mut v, "--offset", self.offset.unwrap_or(0).to_string());
                s(&mut v, "--skip", self.skip.to_string());
                if self.large {
                    v.push("--iv-large-sectors".into());
                }
            }
            _ if formatting => {
                s(&mut v, "--cipher", self.cipher.into());
                s(&mut v, "--key-size", self.bits.to_string());
                if self.kind == Kind::Luks2 {
                    s(&mut v, "--sector-size", self.sector.to_string());
                }
                if let Some(o) = self.offset {
                    s(&mut v, "--offset", o.to_string());
                }
                v.extend(PBKDF.iter().map(|x| x.to_string()));
                v.extend(self.extra().iter().map(|x| x.to_string()));
            }
            _ => {}
        }
        v
    }

    /// More luksFormat options.
    fn extra(&self) -> &'static [&'static str] {
        if self.kind == Kind::Luks2 && !self.default_header {
            &SMALL_LUKS2
        } else {
            &[]
        }
    }

    fn mode(&self) -> String {
        let mut m = match self.kind {
            Kind::Luks1 => "LUKS1".to_string(),
            Kind::Luks2 => "LUKS2".to_string(),
            Kind::Plain => "plain".to_string(),
        };
        if self.detached {
            m.push_str(" detached");
        }
        m
    }

    fn notes(&self) -> String {
        let mut n = Vec::new();
        match self.kind {
            Kind::Plain => {
                if self.offset != Some(0) {
                    n.push(format!("offset {}", self.offset.unwrap_or(0)));
                }
                if self.skip != 0 {
                    n.push(format!("skip {}", self.skip));
                }
                if self.large {
                    n.push("iv-large".into());
                }
            }
            _ => {
                if let Some(o) = self.offset {
                    n.push(format!("offset {o}"));
                }
                if self.default_header {
                    n.push("16M header".into());
                }
            }
        }
        n.join(", ")
    }
}

/// The matrix. Plaintext sizes are kept small (TCG is slow; Twofish is slow in lukskit
/// for now) and vary so that chunk boundaries and partial sectors land in different places.
fn cases() -> Vec<Case> {
    use Kind::*;
    // Every spec of issue 4, with the key sizes to test.
    // Every spec of issue 4 with the key sizes to test; `true`: also LUKS2 with 4096-byte
    // sectors (one spec per IV generator and cipher: plain mode covers the others at 4096).
    let specs: [(&'static str, u32, bool); 18] = [
        ("aes-xts-plain64", 256, false),
        ("aes-xts-plain64", 512, true),
        ("aes-cbc-essiv:sha256", 128, false),
        ("aes-cbc-essiv:sha256", 256, true),
        ("aes-cbc-plain64", 256, true),
        ("aes-xts-plain", 512, true),
        ("aes-xts-plain64be", 512, true),
        ("aes-xts-essiv:sha256", 512, true),
        ("aes-ctr-plain64", 256, true),
        ("aes-lrw-benbi", 384, true),
        ("aes-lrw-benbi", 256, false),
        ("capi:xts(aes)-plain64", 512, true),
        ("serpent-xts-plain64", 512, true),
        ("twofish-xts-plain64", 512, false),
        ("serpent-cbc-essiv:sha256", 256, false),
        ("twofish-cbc-essiv:sha256", 256, true),
        // The kernel's adiantum(xchacha12,aes) / adiantum(xchacha20,aes) templates.
        ("xchacha12,aes-adiantum-plain64", 256, true),
        ("xchacha20,aes-adiantum-plain64", 256, true),
    ];
    let mut v: Vec<Case> = Vec::new();
    for (i, &(c, b, luks2_4k)) in specs.iter().enumerate() {
        // Each spec in LUKS1, LUKS2 and plain mode with an offset and an IV skip, with 512-
        // and 4096-byte sectors.
        v.push(Case::new(Luks1, c, b, 512));
        v.push(Case::new(Luks2, c, b, 512));
        if luks2_4k {
            v.push(Case::new(Luks2, c, b, 4096));
        }
        v.push(
            Case::new(Plain, c, b, 512)
                .offset(8 + i as u64)
                .skip(3 * i as u64 + 1),
        );
        v.push(Case::new(Plain, c, b, 4096).offset(16).skip(8 * i as u64));
    }
    // 1024- and 2048-byte sectors for a few specs.
    for &(c, b) in &[
        ("aes-xts-plain64", 512),
        ("aes-cbc-essiv:sha256", 256),
        ("aes-xts-plain64be", 512),
        ("aes-lrw-benbi", 384),
        ("serpent-xts-plain64", 512),
        ("twofish-cbc-essiv:sha256", 256),
    ] {
        for ss in [1024, 2048] {
            v.push(Case::new(Luks2, c, b, ss));
            let step = u64::from(ss) / 512;
            v.push(Case::new(Plain, c, b, ss).offset(step).skip(5 * step));
        }
    }
    // --iv-large-sectors: the IV counts encryption sectors.
    for &(c, b, ss, skip) in &[
        ("aes-xts-plain64", 512, 4096, 0),
        ("aes-xts-plain64", 256, 2048, 12),
        ("aes-cbc-essiv:sha256", 256, 4096, 8),
        ("aes-cbc-plain64", 256, 1024, 6),
        ("aes-xts-plain64be", 512, 4096, 16),
        ("aes-xts-essiv:sha256", 512, 2048, 4),
        ("aes-ctr-plain64", 256, 4096, 0),
        ("aes-lrw-benbi", 384, 4096, 8),
        ("serpent-xts-plain64", 512, 1024, 2),
        ("twofish-xts-plain64", 512, 4096, 8),
    ] {
        v.push(Case::new(Plain, c, b, ss).offset(8).skip(skip).large());
    }
    // IV sector numbers past 2^32: plain (32-bit, wraps) against plain64/plain64be/benbi/essiv.
    const NEAR_2_32: u64 = (1 << 32) - 8;
    for &(c, b) in &[
        ("aes-xts-plain", 512),
        ("aes-xts-plain64", 512),
        ("aes-cbc-plain64", 256),
        ("aes-xts-plain64be", 512),
        ("aes-lrw-benbi", 384),
        ("aes-cbc-essiv:sha256", 256),
    ] {
        v.push(Case::new(Plain, c, b, 512).skip(NEAR_2_32 + 2));
        v.push(Case::new(Plain, c, b, 4096).skip(NEAR_2_32));
    }
    v.push(
        Case::new(Plain, "aes-xts-plain", 512, 4096)
            .skip((1 << 35) - 16)
            .large(),
    );
    v.push(
        Case::new(Plain, "aes-xts-plain64", 512, 4096)
            .skip((1 << 35) - 16)
            .large(),
    );
    // TrueCrypt ≤ 4's tcw IV generator (IV seed and whitening after the cipher key; 512-byte
    // sectors only) with each cipher TrueCrypt used it with, in plain mode (cryptsetup maps
    // tcw there and for TCRYPT volumes); an IV skip past 2^32 (the sector is 64 bits in the
    // IV and the whitening).
    for (i, &(c, b)) in [
        ("aes-cbc-tcw", 512),
        ("aes-cbc-tcw", 384),
        ("serpent-cbc-tcw", 512),
        ("twofish-cbc-tcw", 512),
        ("cast5-cbc-tcw", 320),
        ("des3_ede-cbc-tcw", 384),
        ("blowfish-cbc-tcw", 448),
    ]
    .iter()
    .enumerate()
    {
        v.push(
            Case::new(Plain, c, b, 512)
                .offset(i as u64)
                .skip(7 * i as u64),
        );
    }
    v.push(Case::new(Plain, "aes-cbc-tcw", 512, 512).skip(NEAR_2_32 + 2));
    // The other legacy ciphers (64-bit blocks) and Camellia in the kernel's modes.
    for &(c, b) in &[
        ("blowfish-cbc-plain64", 256),
        ("blowfish-cbc-essiv:sha256", 448),
        ("des3_ede-cbc-plain64", 192),
        ("cast5-cbc-plain64", 128),
    ] {
        v.push(Case::new(Luks1, c, b, 512));
        v.push(Case::new(Plain, c, b, 512).offset(3).skip(11));
    }
    v.push(Case::new(Luks2, "blowfish-cbc-plain64", 256, 4096));
    v.push(Case::new(Plain, "des3_ede-cbc-plain", 192, 4096).skip(NEAR_2_32));
    v.push(Case::new(Plain, "camellia-xts-plain64", 512, 512).skip(9));
    v.push(Case::new(Luks2, "camellia-xts-plain64", 256, 4096));

    // Detached headers, explicit data offsets, cryptsetup's default LUKS2 header.
    v.push(Case::new(Luks1, "aes-xts-plain64", 512, 512).detached());
    // (cryptsetup wants a detached header's data offset to be 0 or past the header's end)
    v.push(
        Case::new(Luks1, "serpent-cbc-essiv:sha256", 256, 512)
            .detached()
            .offset(4096),
    );
    v.push(Case::new(Luks1, "aes-cbc-essiv:sha256", 128, 512).offset(4096));
    v.push(Case::new(Luks2, "aes-xts-plain64", 512, 4096).detached());
    v.push(Case::new(Luks2, "twofish-cbc-essiv:sha256", 256, 512).detached());
    v.push(
        Case::new(Luks2, "aes-lrw-benbi", 384, 2048)
            .detached()
            .offset(2048),
    );
    v.push(Case::new(Luks2, "aes-cbc-essiv:sha256", 256, 2048).offset(4096));
    v.push(Case::new(Luks2, "aes-xts-plain64", 512, 512).default_header());
    v.push(
        Case::new(Luks2, "serpent-xts-plain64", 512, 4096)
            .detached()
            .default_header(),
    );

    for (i, c) in v.iter_mut().enumerate() {
        c.id = i + 1;
        let base = [256, 512, 768, 1024][i % 4] * 1024;
        let base = if c.cipher.starts_with("twofish") {
            base / 4
        } else {
            base
        };
        // Lengths that end inside a 4 KiB page, and every third case inside an encryption
        // sector (lukskit pads the last sector with zeros, the kernel reads them back).
        let tail = match (c.sector, i % 3) {
            (512, 0) => 1536 + 100,
            (512, _) => 1536,
            (1024, 0) => 3072 + 100,
            (1024, _) => 3072,
            (_, 0) => 1000,
            _ => 0,
        };
        c.len = base + tail;
    }
    v
}

/// `benchmark -c CIPHER` (default 256-bit key) for the ciphers TrueCrypt and VeraCrypt
/// volumes need: lukskit's exit status, standard output and standard error against
/// cryptsetup's in the VM (numbers masked). Where the kernel has the cipher and the key fits,
/// both print the same two lines; where not (des3_ede takes 192 bits, cast5 at most 128,
/// xts(kuznyechik) 512 and the kernel has no kuznyechik at all) the same refusal. lukskit's
/// own note on its default 4096-byte sectors is left out of the comparison.
fn benchmark_answers_match(stdout: &str) {
    // Numbers become N, whitespace runs one space; the line's length stays (the columns are
    // fixed-width as long as the speeds fit them).
    let mask = |l: &str| -> String {
        let words: Vec<String> = l
            .split_whitespace()
            .map(|w| {
                if w.starts_with(|ch: char| ch.is_ascii_digit()) {
                    format!(
                        "N{}",
                        w.trim_start_matches(|ch: char| ch.is_ascii_digit() || ch == '.')
                    )
                } else {
                    w.to_string()
                }
            })
            .collect();
        format!("{} [{}]", words.join(" "), l.len())
    };
    for c in [
        "blowfish-cbc",
        "des3_ede-cbc",
        "camellia-xts",
        "kuznyechik-xts",
        "cast5-cbc",
    ] {
        let rc = stdout
            .lines()
            .find_map(|l| l.strip_prefix(&format!("bench {c}: rc=")))
            .unwrap_or_else(|| panic!("no cryptsetup benchmark of {c} in:\n{stdout}"));
        let theirs = |mark: &str| -> Vec<String> {
            stdout
                .lines()
                .filter_map(|l| l.strip_prefix(&format!("bench {c}{mark} ")))
                .map(mask)
                .collect()
        };
        let r = common::lukskit(&["benchmark", "-c", c], b"");
        let ours = |text: &str| -> Vec<String> {
            text.lines()
                .filter(|l| !l.starts_with("# Ciphers measured with "))
                .map(mask)
                .collect()
        };
        say(&format!(
            "refvm_matrix: benchmark -c {c}: cryptsetup rc={rc} {:?} {:?}, lukskit rc={} {:?} {:?}",
            theirs(">"),
            theirs("!"),
            r.code,
            ours(&r.stdout),
            ours(&r.stderr)
        ));
        assert_eq!(
            (r.code.to_string(), ours(&r.stdout), ours(&r.stderr)),
            (rc.to_string(), theirs(">"), theirs("!")),
            "benchmark -c {c}: lukskit against cryptsetup (numbers masked)"
        );
    }
}

/// splitmix64: deterministic pseudo-random bytes from a seed.
fn pseudo_random(seed: u64, len: usize) -> Vec<u8> {
    let mut s = seed;
    let mut out = Vec::with_capacity(len + 8);
    while out.len() < len {
        s = s.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = s;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        out.extend_from_slice(&(z ^ (z >> 31)).to_le_bytes());
    }
    out.truncate(len);
    out
}

/// The case's plaintext: pseudo-random, with a 64 KiB run of zeros (holes in lukskit's
/// decrypted output) in every other case.
fn plaintext(c: &Case) -> Vec<u8> {
    let mut v = pseudo_random(0x6d61_7472_6978_0000 + c.id as u64, c.len as usize);
    if c.id.is_multiple_of(2) && c.len >= 3 * 65536 {
        let z = (c.len as usize / 3) & !4095;
        v[z..z + 65536].fill(0);
    }
    v
}

/// The case's key material: a plain-mode key, or a binary LUKS passphrase.
fn key_material(c: &Case) -> Vec<u8> {
    pseudo_random(0x6b65_7973_0000_0000 + c.id as u64, KEY_SLOT as usize)
}

/// Output to the real stderr, visible without `--nocapture` (the table and the summary are
/// the point of this test).
/// The VM's timeout for `cases` cases. On the 2-core development machine (tests/refvm/README.md)
/// a boot takes ~10 s and the 132 cases ~2 minutes idle, up to ~6 minutes when other builds
/// load the host (~3 s a case); [`timeout_for`] allows four times the loaded figure (about 30
/// minutes for the full matrix; it was 20 minutes for every matrix size before).
fn vm_timeout(cases: usize) -> u64 {
    timeout_for(60 + 3 * cases as u64)
}

/// A byte range of the work disk.
#[derive(Debug, Clone, Copy, Default)]
struct Region {
    off: u64,
    len: u64,
}

/// Hands out MiB-aligned regions of the work disk.
struct Allocator(u64);

impl Allocator {
    fn take(&mut self, len: u64) -> Region {
        let r = Region { off: self.0, len };
        self.0 += len.div_ceil(MIB).max(1) * MIB;
        r
    }
}

/// Where one direction of a case lives on the work disk.
#[derive(Debug, Clone, Copy, Default)]
struct Placement {
    image: Region,
    header: Option<Region>,
    /// a: the plaintext the kernel writes; b: where the kernel's read-back goes.
    buf: Region,
}

fn path_str(p: &Path) -> &str {
    p.to_str().expect("UTF-8 temp path")
}

fn lukskit(args: &[String]) -> common::Run {
    let a: Vec<&str> = args.iter().map(String::as_str).collect();
    common::lukskit(&a, b"")
}

/// Write `data` at `off` of a file that reads as zeros there, skipping all-zero 4 KiB blocks
/// (LUKS headers are mostly zeros: the work disk stays sparse).
fn write_sparse(f: &File, data: &[u8], off: u64) {
    for (i, block) in data.chunks(4096).enumerate() {
        if block.iter().any(|&b| b != 0) {
            f.write_all_at(block, off + i as u64 * 4096)
                .expect("write work disk");
        }
    }
}

/// A new sparse file holding `data`.
fn create_sparse(path: &Path, data: &[u8]) {
    let f = File::create(path).unwrap();
    f.set_len(data.len() as u64).unwrap();
    write_sparse(&f, data, 0);
}

fn read_region(disk: &File, r: Region) -> Vec<u8> {
    let mut v = vec![0u8; r.len as usize];
    disk.read_exact_at(&mut v, r.off).expect("read work disk");
    v
}

/// Where `got` first differs from `want` (in encryption sectors), or None when equal.
fn compare(got: &[u8], want: &[u8], sector: u32) -> Option<String> {
    if got == want {
        return None;
    }
    if got.len() != want.len() {
        let n = got.len().min(want.len());
        if got[..n] == want[..n] {
            return Some(format!(
                "{} bytes instead of {} (common part equal)",
                got.len(),
                want.len()
            ));
        }
    }
    let ss = sector as usize;
    let first = got.iter().zip(want).position(|(a, b)| a != b).unwrap_or(0);
    let bad = got
        .chunks(ss)
        .zip(want.chunks(ss))
        .filter(|(a, b)| a != b)
        .count();
    Some(format!(
        "{} bytes (want {}); first difference at byte {first} (sector {}), {bad} of {} sectors differ",
        got.len(),
        want.len(),
        first / ss,
        want.len().div_ceil(ss)
    ))
}

/// Outcome of one direction of one case.
type Outcome = Result<(), String>;

/// An image lukskit wrote on the host (direction b): the image file and a detached header.
struct HostImage {
    image: Vec<u8>,
    header: Option<Vec<u8>>,
}

/// What the host prepared for one case.
struct Prepared {
    /// The key file lukskit uses (plain key or LUKS passphrase).
    key_file: PathBuf,
    /// Direction a: regions of the image cryptsetup formats and of the plaintext.
    a: Placement,
    /// Direction b: regions of lukskit's image and of the kernel's read-back, or why lukskit
    /// could not write the image.
    b: Result<(Placement, HostImage), String>,
}

/// What the VM reported, per (case id, direction).
#[derive(Default)]
struct VmReport {
    /// Size of the kernel's mapping, or why the case failed in the VM.
    results: HashMap<(usize, String), Result<u64, String>>,
    /// The dm table of the mapping (key hidden).
    tables: HashMap<(usize, String), String>,
}

impl VmReport {
    /// Parses "case ID DIR: ok SIZE TIME", "case ID DIR: FAIL ..." and "table ID DIR: ...".
    fn parse(stdout: &str) -> VmReport {
        let mut rep = VmReport::default();
        for l in stdout.lines() {
            let Some((head, rest)) = l.split_once(": ") else {
                continue;
            };
            let mut w = head.split(' ');
            let (Some(what), Some(Ok(id)), Some(d)) =
                (w.next(), w.next().map(str::parse::<usize>), w.next())
            else {
                continue;
            };
            let key = (id, d.to_string());
            match what {
                "case" => {
                    let v = match rest.strip_prefix("ok ") {
                        Some(n) => n
                            .split_whitespace()
                            .next()
                            .unwrap_or("")
                            .parse::<u64>()
                            .map_err(|e| format!("{rest}: {e}")),
                        None => Err(format!("in the VM: {rest}")),
                    };
                    rep.results.insert(key, v);
                }
                "table" => {
                    rep.tables.insert(key, rest.to_string());
                }
                _ => {}
            }
        }
        rep
    }

    /// The size of the kernel's mapping for a case direction, checked against the case.
    fn size(&self, c: &Case, dir: &str) -> Result<u64, String> {
        let want = c.data_len();
        match self.results.get(&(c.id, dir.to_string())) {
            None => Err("no result from the VM".into()),
            Some(Err(e)) => Err(e.clone()),
            Some(Ok(n)) if *n != want => Err(format!(
                "the kernel's mapping has {n} bytes, expected {want}"
            )),
            Some(Ok(n)) => Ok(*n),
        }
    }

    fn table(&self, c: &Case, dir: &str) -> &str {
        self.tables
            .get(&(c.id, dir.to_string()))
            .map_or("-", String::as_str)
    }
}

/// Remove scratch files (unless the work directory is kept for a look).
fn tidy(keep: bool, paths: &[&Path]) {
    if !keep {
        for p in paths {
            let _ = std::fs::remove_file(p);
        }
    }
}

/// `lukskit image encrypt` of the case's plaintext on the host (direction b).
fn encrypt_on_host(
    c: &Case,
    dir: &Path,
    key_file: &Path,
    plain: &Path,
    keep: bool,
) -> Result<HostImage, String> {
    let img = dir.join(format!("{}.b.img", c.id));
    let hdr = dir.join(format!("{}.b.hdr", c.id));
    let mut args: Vec<String> = vec!["image".into(), "encrypt".into(), "-q".into()];
    args.extend(c.options(true));
    args.extend(["-d".into(), path_str(key_file).into()]);
    if c.detached {
        args.extend(["--header".into(), path_str(&hdr).into()]);
    }
    args.extend([path_str(plain).into(), path_str(&img).into()]);
    let r = lukskit(&args);
    let result = if r.code != 0 {
        Err(format!(
            "lukskit image encrypt failed ({}): {}",
            r.code,
            r.stderr.trim()
        ))
    } else {
        Ok(HostImage {
            image: std::fs::read(&img).unwrap(),
            header: c.detached.then(|| std::fs::read(&hdr).unwrap()),
        })
    };
    tidy(keep, &[&img, &hdr, plain]);
    result
}

/// Direction a on the host: `lukskit image decrypt` of the image the kernel wrote must give
/// the case's plaintext (and as many bytes as the kernel's mapping has).
fn decrypt_on_host(
    c: &Case,
    dir: &Path,
    disk: &File,
    key_file: &Path,
    p: &Placement,
    keep: bool,
) -> Outcome {
    let img = dir.join(format!("{}.a.img", c.id));
    let hdr = dir.join(format!("{}.a.hdr", c.id));
    let out = dir.join(format!("{}.a.out", c.id));
    let result = decrypt_and_compare(c, disk, key_file, p, &img, &hdr, &out);
    tidy(keep, &[&img, &hdr, &out]);
    result
}

fn decrypt_and_compare(
    c: &Case,
    disk: &File,
    key_file: &Path,
    p: &Placement,
    img: &Path,
    hdr: &Path,
    out: &Path,
) -> Outcome {
    create_sparse(img, &read_region(disk, p.image));
    let mut args: Vec<String> = vec!["image".into(), "decrypt".into(), "-q".into()];
    args.extend(c.options(false));
    args.extend(["-d".into(), path_str(key_file).into()]);
    if let Some(h) = p.header {
        create_sparse(hdr, &read_region(disk, h));
        args.extend(["--header".into(), path_str(hdr).into()]);
    }
    args.extend([path_str(img).into(), path_str(out).into()]);
    let r = lukskit(&args);
    if r.code != 0 {
        return Err(format!(
            "lukskit image decrypt failed ({}): {}",
            r.code,
            r.stderr.trim()
        ));
    }
    let got = std::fs::read(out).unwrap();
    if got.len() as u64 != c.data_len() {
        return Err(format!(
            "lukskit decrypted {} bytes, the kernel's mapping has {}",
            got.len(),
            c.data_len()
        ));
    }
    // Past the plaintext (a partial last sector) is whatever the kernel's read-modify-write
    // left there: only the plaintext is known.
    let plain = plaintext(c);
    match compare(&got[..plain.len()], &plain, c.sector) {
        None => Ok(()),
        Some(d) => Err(format!(
            "lukskit reads other data than the kernel wrote: {d}"
        )),
    }
}

/// Direction b on the host: what the kernel read through its mapping must be the plaintext
/// lukskit encrypted, zero-padded to whole sectors.
fn check_readback(c: &Case, disk: &File, p: &Placement) -> Outcome {
    let got = read_region(disk, p.buf);
    let mut want = plaintext(c);
    want.resize(c.data_len() as usize, 0);
    match compare(&got, &want, c.sector) {
        None => Ok(()),
        Some(d) => Err(format!(
            "the kernel reads other data than lukskit wrote: {d}"
        )),
    }
}

/// One line of the VM's plan (see tests/refvm/matrix/matrix.sh).
fn plan_line(c: &Case, dir: &str, p: &Placement, len: u64, key_off: u64) -> String {
    let (ho, hl) = match p.header {
        Some(h) => (h.off.to_string(), h.len.to_string()),
        None => ("-".into(), "-".into()),
    };
    format!(
        "{} {dir} {} {} {} {} {} {} {} {len} {} {} {ho} {hl} {} {key_off} {}\n",
        c.id,
        c.kind.name(),
        c.cipher,
        c.bits,
        c.sector,
        u8::from(c.large),
        c.offset.map_or("-".into(), |o| o.to_string()),
        if c.is_luks() {
            "-".into()
        } else {
            c.skip.to_string()
        },
        p.image.off,
        p.image.len,
        p.buf.off,
        c.extra().join(" "),
    )
}

#[test]
fn kernel_and_lukskit_agree_on_every_spec() {
    const T: &str = "refvm_matrix";
    if !vm_ready(T) {
        return;
    }
    let t0 = Instant::now();
    let cases = cases();
    let mut tmpdir = tempfile::tempdir().unwrap();
    let mut keep = false;
    if std::env::var("LUKSKIT_REFVM_KEEP").as_deref() == Ok("1") {
        tmpdir.disable_cleanup(true);
        keep = true;
        say(&format!(
            "refvm_matrix: keeping {}",
            tmpdir.path().display()
        ));
    }
    let dir = tmpdir.path();

    // Host side: key files and plaintexts; lukskit writes the images of direction b; the
    // work disk is laid out region by region.
    let mut keys = vec![0u8; cases.len() * KEY_SLOT as usize];
    let mut alloc = Allocator(MIB);
    let mut prepared = Vec::new();
    for (i, c) in cases.iter().enumerate() {
        let km = key_material(c);
        keys[i * KEY_SLOT as usize..][..KEY_SLOT as usize].copy_from_slice(&km);
        // Plain mode: the whole slot (cryptsetup and lukskit read exactly the key size from
        // a key file); LUKS: exactly the passphrase.
        let key_file = dir.join(format!("{}.key", c.id));
        let key = if c.is_luks() {
            &km[..PASS_LEN]
        } else {
            &km[..]
        };
        std::fs::write(&key_file, key).unwrap();
        let plain = dir.join(format!("{}.plain", c.id));
        std::fs::write(&plain, plaintext(c)).unwrap();

        let a = Placement {
            header: c.detached.then(|| alloc.take(c.header_region())),
            image: alloc.take(c.data_offset() + c.data_len()),
            buf: alloc.take(c.len),
        };
        let b = encrypt_on_host(c, dir, &key_file, &plain, keep).map(|img| {
            let p = Placement {
                header: img.header.as_ref().map(|h| alloc.take(h.len() as u64)),
                image: alloc.take(img.image.len() as u64),
                buf: alloc.take(c.data_len()),
            };
            (p, img)
        });
        prepared.push(Prepared { key_file, a, b });
    }
    let disk_path = dir.join("work.img");
    let disk = File::options()
        .read(true)
        .write(true)
        .create_new(true)
        .open(&disk_path)
        .unwrap();
    disk.set_len(alloc.0 + MIB).unwrap();
    let mut plan = String::new();
    for (i, (c, p)) in cases.iter().zip(&prepared).enumerate() {
        let key_off = i as u64 * KEY_SLOT;
        write_sparse(&disk, &plaintext(c), p.a.buf.off);
        plan.push_str(&plan_line(c, "a", &p.a, c.len, key_off));
        if let Ok((pb, img)) = &p.b {
            write_sparse(&disk, &img.image, pb.image.off);
            if let (Some(h), Some(r)) = (&img.header, pb.header) {
                write_sparse(&disk, h, r.off);
            }
            plan.push_str(&plan_line(c, "b", pb, c.data_len(), key_off));
        }
    }
    drop(disk);
    let plan_file = dir.join("plan");
    std::fs::write(&plan_file, &plan).unwrap();
    let keys_file = dir.join("keys");
    std::fs::write(&keys_file, &keys).unwrap();
    let t_host_b = t0.elapsed();

    // The kernel half: one boot.
    let t1 = Instant::now();
    let script = refvm_dir().join("matrix/matrix.sh");
    let copy_plan = format!("{}:/refvm/files/plan", path_str(&plan_file));
    let copy_keys = format!("{}:/refvm/files/keys", path_str(&keys_file));
    let r = run_vm(
        T,
        vm_timeout(cases.len()),
        &[
            "--copy".as_ref(),
            copy_plan.as_ref(),
            "--copy".as_ref(),
            copy_keys.as_ref(),
            script.as_os_str(),
            disk_path.as_os_str(),
        ],
        false,
    );
    if !r.ran(T) {
        return;
    }
    assert_eq!(
        r.code, 0,
        "matrix.sh failed in the VM ({}): stdout={} stderr={}",
        r.code, r.stdout, r.stderr
    );
    let t_vm = t1.elapsed();
    let vm = VmReport::parse(&r.stdout);
    benchmark_answers_match(&r.stdout);

    // Host side: a — lukskit decrypts what the kernel wrote; b — the kernel's read-back.
    let t2 = Instant::now();
    let disk = File::open(&disk_path).unwrap();
    let results: Vec<(Outcome, Outcome)> = cases
        .iter()
        .zip(&prepared)
        .map(|(c, p)| {
            let a = vm
                .size(c, "a")
                .and_then(|_| decrypt_on_host(c, dir, &disk, &p.key_file, &p.a, keep));
            let b = match &p.b {
                Err(e) => Err(e.clone()),
                Ok((pb, _)) => vm.size(c, "b").and_then(|_| check_readback(c, &disk, pb)),
            };
            (a, b)
        })
        .collect();
    let t_host_a = t2.elapsed();

    // The table, the count, the disagreements.
    let mark = |o: &Outcome| if o.is_ok() { "ok" } else { "FAIL" };
    let row = |t: &mut String, cols: [&str; 9]| {
        writeln!(
            t,
            "{:>3}  {:<15} {:<25} {:>4} {:>6}  {:<30} {:>8}  {:<14} {:<14}",
            cols[0], cols[1], cols[2], cols[3], cols[4], cols[5], cols[6], cols[7], cols[8]
        )
        .unwrap()
    };
    let mut table = String::new();
    row(
        &mut table,
        [
            "#",
            "mode",
            "cipher",
            "bits",
            "sector",
            "options",
            "bytes",
            "kernel→lukskit",
            "lukskit→kernel",
        ],
    );
    let mut failures = Vec::new();
    let (mut agree, mut both) = (0, 0);
    for (c, (a, b)) in cases.iter().zip(&results) {
        row(
            &mut table,
            [
                &c.id.to_string(),
                &c.mode(),
                c.cipher,
                &c.bits.to_string(),
                &c.sector.to_string(),
                &c.notes(),
                &c.len.to_string(),
                mark(a),
                mark(b),
            ],
        );
        if a.is_ok() && b.is_ok() {
            both += 1;
        }
        for (d, o) in [("a", a), ("b", b)] {
            match o {
                Ok(()) => agree += 1,
                Err(e) => {
                    let notes = c.notes();
                    failures.push(format!(
                        "case {} {d} ({} {} {}-bit, {}-byte sectors{}{notes}): {e}\n      kernel table: {}",
                        c.id,
                        c.mode(),
                        c.cipher,
                        c.bits,
                        c.sector,
                        if notes.is_empty() { "" } else { ", " },
                        vm.table(c, d)
                    ))
                }
            }
        }
    }
    say(&format!(
        "refvm_matrix: {}\n  a = cryptsetup formats (or opens), the kernel writes, lukskit image decrypt reads\n  \
         b = lukskit image encrypt writes, cryptsetup opens, the kernel reads\n{table}",
        r.stdout.lines().next().unwrap_or(""),
    ));
    say(&format!(
        "refvm_matrix: {both} of {} cases agree in both directions ({agree} of {} checks); \
         host {:.1}s + VM {:.1}s + host {:.1}s",
        cases.len(),
        cases.len() * 2,
        t_host_b.as_secs_f64(),
        t_vm.as_secs_f64(),
        t_host_a.as_secs_f64()
    ));
    assert!(
        failures.is_empty(),
        "{} of {} checks disagree between the kernel and lukskit:\n  {}\nVM stderr:\n{}",
        failures.len(),
        cases.len() * 2,
        failures.join("\n  "),
        r.stderr
            .lines()
            .filter(|l| !(l.contains("keyslots area") && l.contains("is very small")))
            .collect::<Vec<_>>()
            .join("\n")
    );
}
