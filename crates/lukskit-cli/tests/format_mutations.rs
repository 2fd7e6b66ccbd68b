//! Mutation campaigns over the metadata of the other formats (issue 31, hostile input): a few
//! hundred mutated copies per format of the real images in
//! `../shared/testdata/other-formats`, each read by lukskit's format seam in-process (dump and
//! unlock, under a deadline and `catch_unwind`) and by cryptsetup 2.6.1 (`*Dump` and `open
//! --test-passphrase`). lukskit must never panic or hang, and must accept exactly what
//! cryptsetup accepts — except where cryptsetup itself crashes, where lukskit must refuse.
//!
//! The mutations aim at the structures: bytes, 16/32/64-bit fields set to boundary values,
//! in the BitLocker boot sector and FVE metadata, the Core Storage header and disk label
//! (their CRC-32C fixed up in half of the cases, so that the parser sees the change), and the
//! fields of a TrueCrypt header decrypted with the passphrase, changed, resealed (CRCs) and
//! encrypted again (the header a hostile volume's author writes). The seed is fixed; a
//! failure names the image, the seed and the patch, so the case can be replayed.

mod common;

use common::{cryptsetup_path, have_cryptsetup, tmp, unpack_other_formats};
use lukskit_crypto::engine::SectorCipher;
use lukskit_crypto::spec::CipherSpec;
use lukskit_crypto::SecretBuf;
use lukskit_format::VolumeType;
use lukskit_volume::formats::tcrypt::{ciphers, header, kdf, search, ENC_LEN, SALT_LEN};
use lukskit_volume::formats::{format_of, FormatOptions, TcryptOptions, UnlockRequest};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

/// How long one in-process read by lukskit may take before it counts as a hang.
const DEADLINE: Duration = Duration::from_secs(30);

/// xorshift64*: the campaign's reproducible randomness.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// One change: these bytes at this offset.
#[derive(Debug, Clone)]
struct Patch {
    offset: u64,
    bytes: Vec<u8>,
}

/// A random change of the `width`-byte field at `at` of `buf` (little- or big-endian): a bit
/// flipped, a boundary value (0, 1, all ones, the top bit), the value ± 1, or random bytes.
fn mutate_field(rng: &mut Rng, buf: &mut [u8], at: usize, width: usize, big_endian: bool) {
    let w = width.min(buf.len() - at);
    let field = &mut buf[at..at + w];
    let mut v = [0u8; 8];
    if big_endian {
        v[8 - w..].copy_from_slice(field);
    } else {
        v[..w].copy_from_slice(field);
    }
    let old = if big_endian {
        u64::from_be_bytes(v) & mask(w)
    } else {
        u64::from_le_bytes(v) & mask(w)
    };
    let new = match rng.below(7) {
        0 => old ^ (1 << rng.below(8 * w as u64)),
        1 => 0,
        2 => 1,
        3 => mask(w),
        4 => 1 << (8 * w as u64 - 1),
        5 => old.wrapping_add(if rng.below(2) == 0 { 1 } else { mask(w) }) & mask(w),
        _ => rng.next() & mask(w),
    };
    let bytes = if big_endian {
        new.to_be_bytes()[8 - w..].to_vec()
    } else {
        new.to_le_bytes()[..w].to_vec()
    };
    field.copy_from_slice(&bytes);
}

fn mask(width: usize) -> u64 {
    if width >= 8 {
        u64::MAX
    } else {
        (1u64 << (8 * width)) - 1
    }
}

/// A mutation of `buf`: 1–3 changes at random places of `regions` (byte ranges of `buf`),
/// each a field of 1, 2, 4 or 8 bytes, aligned to its width as the formats' fields are.
fn mutate(rng: &mut Rng, buf: &mut [u8], regions: &[(usize, usize)], big_endian: bool) {
    for _ in 0..=rng.below(3) {
        let (start, end) = regions[rng.below(regions.len() as u64) as usize];
        let width = [1usize, 2, 4, 8][rng.below(4) as usize];
        let at = start + (rng.below((end - start) as u64) as usize) / width * width;
        if at < end {
            mutate_field(rng, buf, at, width, big_endian);
        }
    }
}

/// The patches that turn `old` into `new` (runs of differing bytes), at `base`.
fn diff(base: u64, old: &[u8], new: &[u8]) -> Vec<Patch> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < old.len() {
        if old[i] == new[i] {
            i += 1;
            continue;
        }
        let start = i;
        while i < old.len() && old[i] != new[i] {
            i += 1;
        }
        out.push(Patch {
            offset: base + start as u64,
            bytes: new[start..i].to_vec(),
        });
    }
    out
}

/// What a tool made of one mutated image.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Verdict {
    Accepted,
    Refused,
}

/// cryptsetup's verdict, or None where it crashed (killed by a signal).
fn cryptsetup_verdict(args: &[&str], stdin: &[u8]) -> Option<Verdict> {
    use std::io::Write;
    let mut child = Command::new("timeout")
        .arg("60")
        .arg(cryptsetup_path().unwrap())
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("cryptsetup");
    let _ = child.stdin.take().unwrap().write_all(stdin);
    let st = child.wait().unwrap();
    match st.code() {
        Some(0) => Some(Verdict::Accepted),
        Some(124) => panic!("cryptsetup {args:?} ran over 60 s"),
        // timeout(1) reports a child killed by a signal as 128 + the signal.
        Some(c) if c > 128 => None,
        Some(_) => Some(Verdict::Refused),
        None => None,
    }
}

/// lukskit's verdict for one read through the format seam, in-process: a panic or a read
/// over [`DEADLINE`] fails the test with `what`.
fn lukskit_verdict<F>(what: &str, read: F) -> (Verdict, String)
where
    F: FnOnce() -> Result<(), String> + Send + 'static,
{
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(read));
        let _ = tx.send(r);
    });
    match rx.recv_timeout(DEADLINE) {
        Ok(Ok(Ok(()))) => (Verdict::Accepted, String::new()),
        Ok(Ok(Err(e))) => (Verdict::Refused, e),
        Ok(Err(_)) => panic!("lukskit panicked on {what}"),
        Err(_) => panic!("lukskit hung (over {DEADLINE:?}) on {what}"),
    }
}

/// One format's campaign: the image copy the patches go to, and how each tool reads it.
struct Campaign<'a> {
    name: String,
    image: PathBuf,
    volume_type: VolumeType,
    /// cryptsetup's dump action (`bitlkDump`, …), where a dump needs no secret.
    dump_action: Option<&'a str>,
    /// `open --test-passphrase --type T` arguments after the image.
    open_args: Vec<String>,
    secret: Vec<u8>,
    options: FormatOptions,
}

/// Counts of one campaign, for the failure message and the log.
#[derive(Debug, Default)]
struct Tally {
    cases: usize,
    accepted: usize,
    refused: usize,
    cryptsetup_crashed: usize,
}

impl Campaign<'_> {
    /// Apply `patches`, compare the tools, restore the original bytes.
    fn check(&self, seed: u64, patches: &[Patch], tally: &mut Tally) {
        let f = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(&self.image)
            .unwrap();
        let mut saved = Vec::new();
        for p in patches {
            let mut old = vec![0u8; p.bytes.len()];
            f.read_exact_at(&mut old, p.offset).unwrap();
            saved.push(Patch {
                offset: p.offset,
                bytes: old,
            });
            f.write_all_at(&p.bytes, p.offset).unwrap();
        }
        f.sync_all().unwrap();
        let what = format!(
            "{} (seed {seed:#x}, patches {:?})",
            self.name,
            patches
                .iter()
                .map(|p| format!("{:#x}:{}", p.offset, hex(&p.bytes)))
                .collect::<Vec<_>>()
        );
        let image = self.image.to_str().unwrap().to_string();
        tally.cases += 1;

        if let Some(action) = self.dump_action {
            let cs = cryptsetup_verdict(&[action, &image], b"");
            let lk = {
                let (image, t, o) = (image.clone(), self.volume_type, self.options.clone());
                lukskit_verdict(&format!("dump of {what}"), move || {
                    let req = UnlockRequest {
                        device: &image,
                        header: None,
                        passphrase: None,
                        key_files: &[],
                        options: &o,
                    };
                    format_of(t)
                        .unwrap()
                        .dump(&req)
                        .map(drop)
                        .map_err(|e| e.to_string())
                })
            };
            self.agree("dump", &what, cs, lk, tally);
        }

        let mut args = vec!["open", "--test-passphrase", &image];
        args.extend(self.open_args.iter().map(String::as_str));
        let cs = cryptsetup_verdict(&args, &self.secret);
        let lk = {
            let (image, t, o) = (image.clone(), self.volume_type, self.options.clone());
            let secret = SecretBuf::from_slice(&self.secret);
            lukskit_verdict(&format!("test-passphrase of {what}"), move || {
                let req = UnlockRequest {
                    device: &image,
                    header: None,
                    passphrase: Some(&secret),
                    key_files: &[],
                    options: &o,
                };
                format_of(t)
                    .unwrap()
                    .test_secret(&req)
                    .map_err(|e| e.to_string())
            })
        };
        let tested = lk.0;
        self.agree("test-passphrase", &what, cs, lk, tally);
        // The whole unlock (layout included) never panics or hangs either, and accepts
        // nothing the secret's test refused.
        // (Only where the test passed: a refused test is a refused load, which unlock repeats.)
        let full = if tested == Verdict::Refused {
            (Verdict::Refused, String::new())
        } else {
            let (image, t, o) = (image.clone(), self.volume_type, self.options.clone());
            let secret = SecretBuf::from_slice(&self.secret);
            lukskit_verdict(&format!("unlock of {what}"), move || {
                let req = UnlockRequest {
                    device: &image,
                    header: None,
                    passphrase: Some(&secret),
                    key_files: &[],
                    options: &o,
                };
                format_of(t)
                    .unwrap()
                    .unlock(&req)
                    .map(drop)
                    .map_err(|e| e.to_string())
            })
        };
        if full.0 == Verdict::Accepted {
            assert_eq!(
                tested,
                Verdict::Accepted,
                "unlock accepted what the test refused: {what}"
            );
        }

        for p in &saved {
            f.write_all_at(&p.bytes, p.offset).unwrap();
        }
        f.sync_all().unwrap();
    }

    fn agree(
        &self,
        step: &str,
        what: &str,
        cs: Option<Verdict>,
        lk: (Verdict, String),
        t: &mut Tally,
    ) {
        let (lk, why) = lk;
        match cs {
            None => {
                t.cryptsetup_crashed += 1;
                assert_eq!(
                    lk,
                    Verdict::Refused,
                    "{step}: cryptsetup crashed on {what}; lukskit must refuse it"
                );
            }
            Some(cs) => {
                assert_eq!(
                    lk, cs,
                    "{step}: lukskit vs cryptsetup 2.6.1 on {what}: lukskit: {why}"
                );
                match lk {
                    Verdict::Accepted => t.accepted += 1,
                    Verdict::Refused => t.refused += 1,
                }
            }
        }
    }
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// A sparse copy of `from` as `to`.
fn sparse_copy(from: &Path, to: &Path) {
    let st = Command::new("cp")
        .arg("--sparse=always")
        .arg(from)
        .arg(to)
        .status()
        .unwrap();
    assert!(st.success(), "cp {from:?}");
}

fn read_at(path: &Path, offset: u64, len: usize) -> Vec<u8> {
    let f = std::fs::File::open(path).unwrap();
    let mut b = vec![0u8; len];
    f.read_exact_at(&mut b, offset).unwrap();
    b
}

/// The cases a campaign's log line reports, and that enough of them were accepted by both
/// (a campaign whose every mutation is refused early would test only the first check).
fn report(name: &str, t: &Tally, min_accepted: usize) {
    eprintln!("{name}: {t:?}");
    assert!(
        t.accepted >= min_accepted,
        "{name}: only {} of {} reads accepted by both tools: the mutations do not reach deep",
        t.accepted,
        t.cases
    );
    assert!(
        t.refused >= t.cases / 10,
        "{name}: only {} refusals: the mutations do not hit the checks",
        t.refused
    );
}

#[test]
fn bitlk_mutations_agree_with_cryptsetup() {
    let test = "bitlk_mutations_agree_with_cryptsetup";
    let dir = tmp();
    if !unpack_other_formats(test, "bitlk-images.tar.xz", dir.path()) || !have_cryptsetup(test) {
        return;
    }
    let root = dir.path().join("bitlk");
    let images = [
        "bitlk-aes-xts-128",
        "bitlk-aes-cbc-128",
        "bitlk-aes-cbc-elephant-128",
        "bitlk-togo-aes-xts-128",
    ];
    let mut tally = Tally::default();
    let mut rng = Rng(0xb175_0001);
    for (n, name) in images.iter().enumerate() {
        let image = root.join(format!("mutated-{name}.img"));
        sparse_copy(&root.join(format!("{name}.img")), &image);
        let md = lukskit_volume::formats::bitlk::load(image.to_str().unwrap()).unwrap();
        let campaign = Campaign {
            name: (*name).to_string(),
            image: image.clone(),
            volume_type: VolumeType::Bitlk,
            dump_action: Some("bitlkDump"),
            open_args: vec!["--type".into(), "bitlk".into()],
            secret: b"anaconda".to_vec(),
            options: FormatOptions::default(),
        };
        // The boot sector and the first FVE metadata block: its block header (64 bytes),
        // metadata header (48) and the entries after them.
        let md0 = md.metadata_offsets[0];
        let boot = read_at(&image, 0, 512);
        let block = read_at(&image, md0, 4096);
        for i in 0..75 {
            let seed = rng.next();
            let mut r = Rng(seed | 1);
            let patches = if i % 4 == 0 {
                let mut b = boot.clone();
                mutate(&mut r, &mut b, &[(0, 512)], false);
                diff(0, &boot, &b)
            } else {
                let mut b = block.clone();
                let regions: &[(usize, usize)] = match i % 4 {
                    1 => &[(0, 64)],
                    2 => &[(64, 112)],
                    _ => &[(112, 4096)],
                };
                mutate(&mut r, &mut b, regions, false);
                diff(md0, &block, &b)
            };
            campaign.check(seed, &patches, &mut tally);
        }
        let _ = n;
        std::fs::remove_file(&image).unwrap();
    }
    report(test, &tally, 50);
}

/// CRC-32C (Castagnoli), seeded as Core Storage seeds it.
fn crc32c(seed: u32, data: &[u8]) -> u32 {
    let mut crc = seed;
    for &b in data {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = if crc & 1 != 0 {
                (crc >> 1) ^ 0x82f6_3b78
            } else {
                crc >> 1
            };
        }
    }
    crc
}

/// Core Storage's block checksum: CRC-32C of the bytes after the 8-byte checksum, seeded
/// with the value in bytes 4..8.
fn reseal_core_storage(block: &mut [u8]) {
    let seed = u32::from_le_bytes(block[4..8].try_into().unwrap());
    let crc = crc32c(seed, &block[8..]);
    block[..4].copy_from_slice(&crc.to_le_bytes());
}

#[test]
fn fvault2_mutations_agree_with_cryptsetup() {
    let test = "fvault2_mutations_agree_with_cryptsetup";
    let dir = tmp();
    if !unpack_other_formats(test, "fvault2-images.tar.xz", dir.path()) || !have_cryptsetup(test) {
        return;
    }
    let image = dir.path().join("fvault2").join("small");
    // Its seal is right before any change (the fix-up below reproduces the tool's checksum).
    let header = read_at(&image, 0, 512);
    let mut resealed = header.clone();
    reseal_core_storage(&mut resealed);
    assert_eq!(resealed, header, "the Core Storage checksum is understood");
    // Block size at 96 (u32), the disk label block at 104 (u64).
    let block_size = u64::from(u32::from_le_bytes(header[96..100].try_into().unwrap()));
    let label_block = u64::from_le_bytes(header[104..112].try_into().unwrap());
    let label_off = label_block * block_size;
    let label = read_at(&image, label_off, 8192);
    let mut resealed = label.clone();
    reseal_core_storage(&mut resealed);
    assert_eq!(resealed, label, "the disk label's checksum is understood");

    let campaign = Campaign {
        name: "fvault2 small".into(),
        image: image.clone(),
        volume_type: VolumeType::Fvault2,
        dump_action: Some("fvault2Dump"),
        open_args: vec!["--type".into(), "fvault2".into()],
        secret: b"heslo123".to_vec(),
        options: FormatOptions::default(),
    };
    let mut tally = Tally::default();
    let mut rng = Rng(0xf7a0_0002);
    for i in 0..250 {
        let seed = rng.next();
        let mut r = Rng(seed | 1);
        let reseal = i % 2 == 0;
        let patches = if i % 5 < 2 {
            let mut b = header.clone();
            mutate(
                &mut r,
                &mut b,
                &[(8, 16), (88, 112), (160, 192), (8, 512)],
                false,
            );
            if reseal {
                reseal_core_storage(&mut b);
            }
            diff(0, &header, &b)
        } else {
            let mut b = label.clone();
            // The label's own fields, and its volume groups descriptor (40 bytes).
            let desc = u32::from_le_bytes(label[220..224].try_into().unwrap()) as usize;
            let regions = if desc + 40 <= label.len() {
                vec![(8, 64), (64, 1024), (desc, desc + 40), (desc, desc + 40)]
            } else {
                vec![(8, 64), (64, 1024), (1024, 8192)]
            };
            mutate(&mut r, &mut b, &regions, false);
            if reseal {
                reseal_core_storage(&mut b);
            }
            diff(label_off, &label, &b)
        };
        campaign.check(seed, &patches, &mut tally);
    }
    report(test, &tally, 40);
}

/// A TrueCrypt volume's header, decrypted with its passphrase, to be changed and encrypted
/// again with the same header key (an XTS cascade of one cipher, as the image has).
struct OpenHeader {
    salt: [u8; SALT_LEN],
    plain: [u8; ENC_LEN],
    key: SecretBuf,
    cascade: &'static ciphers::Cascade,
}

impl OpenHeader {
    fn read(image: &Path, passphrase: &[u8], hash: &str) -> OpenHeader {
        let sector: [u8; 512] = read_at(image, 0, 512).try_into().unwrap();
        let raw = header::RawHeader::from_sector(&sector);
        let input = kdf::pbkdf_input(passphrase, &[], false).unwrap();
        let variants = kdf::variants(Some(hash), false, None);
        let limits = search::Limits {
            cipher: None,
            veracrypt: false,
            pim: None,
        };
        let found = search::find(&raw, &input, &variants, &limits, 1).expect("the header opens");
        let key = kdf::derive(&found.kdf.1, input.as_bytes(), &raw.salt, None).unwrap();
        assert_eq!(found.cascade.mode, ciphers::Mode::Xts);
        assert_eq!(found.cascade.algs.len(), 1);
        let mut plain = [0u8; ENC_LEN];
        plain.copy_from_slice(found.decrypted.as_bytes());
        OpenHeader {
            salt: raw.salt,
            plain,
            key,
            cascade: found.cascade,
        }
    }

    /// The 512-byte sector of `plain` encrypted with this header's key.
    fn seal(&self, plain: &[u8; ENC_LEN]) -> Vec<u8> {
        let alg = &self.cascade.algs[0];
        let key = ciphers::layer_key(alg, self.cascade.mode, self.key.as_bytes());
        let spec = CipherSpec::parse(&format!("{}-xts-plain64", alg.name)).unwrap();
        let cipher = SectorCipher::new(&spec, &key.as_bytes()[..alg.key_size], 512, false).unwrap();
        let mut unit = vec![0u8; 512];
        unit[..ENC_LEN].copy_from_slice(plain);
        cipher.encrypt(&mut unit, 0).unwrap();
        let mut sector = self.salt.to_vec();
        sector.extend_from_slice(&unit[..ENC_LEN]);
        sector
    }
}

/// A copy (named `prefix`-IMAGE) of the TrueCrypt image the TCRYPT cases change, and its
/// header opened with the passphrase; None after `skip_or_fail` (test data or cryptsetup
/// absent).
fn truecrypt_copy(test: &str, prefix: &str) -> Option<(tempfile::TempDir, PathBuf, OpenHeader)> {
    let dir = tmp();
    if !unpack_other_formats(test, "tcrypt-images.tar.xz", dir.path()) || !have_cryptsetup(test) {
        return None;
    }
    let root = dir.path().join("tcrypt");
    let image = root.join(format!("{prefix}-{TC_IMAGE}"));
    sparse_copy(&root.join(TC_IMAGE), &image);
    let open = OpenHeader::read(&image, TC_PASS, "sha512");
    Some((dir, image, open))
}

/// The TrueCrypt image of the TCRYPT cases (TrueCrypt 6+, sha512: 1000 iterations), and its
/// passphrase.
const TC_IMAGE: &str = "tc_4-sha512-xts-aes";
const TC_PASS: &[u8] = b"aaaaaaaaaaaa";

#[test]
fn tcrypt_mutations_agree_with_cryptsetup() {
    let test = "tcrypt_mutations_agree_with_cryptsetup";
    let Some((_dir, image, open)) = truecrypt_copy(test, "mutated") else {
        return;
    };
    let (name, pass) = (TC_IMAGE, TC_PASS);
    let original = read_at(&image, 0, 512);
    assert_eq!(
        open.seal(&open.plain),
        original,
        "re-encryption reproduces the header"
    );

    let options = FormatOptions {
        tcrypt: TcryptOptions {
            hash: Some("sha512".into()),
            cipher: Some("aes".into()),
            no_veracrypt: true,
            ..TcryptOptions::default()
        },
        ..FormatOptions::default()
    };
    let campaign = Campaign {
        name: name.into(),
        image: image.clone(),
        volume_type: VolumeType::Tcrypt,
        dump_action: None,
        open_args: [
            "--type",
            "tcrypt",
            "--disable-veracrypt",
            "-h",
            "sha512",
            "-c",
            "aes",
        ]
        .map(String::from)
        .to_vec(),
        secret: pass.to_vec(),
        options,
    };
    // The fields TrueCrypt's header has (version, required version, keys CRC, hidden and
    // volume sizes, key offset and size, flags, sector size), the rest of its first 188
    // bytes, and the key area; resealed (both CRCs right) in 3 of 4 cases.
    let fields: &[(usize, usize)] = &[
        (4, 8),
        (8, 12),
        (28, 44),
        (44, 60),
        (60, 68),
        (68, 188),
        (192, ENC_LEN),
    ];
    let mut tally = Tally::default();
    let mut rng = Rng(0x7c00_0003);
    for i in 0..300 {
        let seed = rng.next();
        let mut r = Rng(seed | 1);
        let mut plain = open.plain;
        mutate(&mut r, &mut plain, fields, true);
        if i % 4 != 0 {
            header::seal(&mut plain);
        }
        let sector = open.seal(&plain);
        campaign.check(seed, &diff(0, &original, &sector), &mut tally);
    }
    report(test, &tally, 100);
}

#[test]
fn tcrypt_test_passphrase_checks_the_key_as_cryptsetup_does() {
    let test = "tcrypt_test_passphrase_checks_the_key_as_cryptsetup_does";
    let Some((_dir, image, open)) = truecrypt_copy(test, "big") else {
        return;
    };
    let pass = TC_PASS;
    // A volume of 2^40 sectors on this 550-sector file, both CRCs right.
    let mut plain = open.plain;
    plain[36..44].copy_from_slice(&(1u64 << 49).to_be_bytes());
    header::seal(&mut plain);
    std::fs::OpenOptions::new()
        .write(true)
        .open(&image)
        .unwrap()
        .write_all_at(&open.seal(&plain), 0)
        .unwrap();
    let img = image.to_str().unwrap();
    let args = [
        "open",
        "--test-passphrase",
        "--type",
        "tcrypt",
        "-h",
        "sha512",
        img,
    ];
    let cs = common::cryptsetup(&args, pass).unwrap();
    let lk = common::lukskit(&args, pass);
    assert_eq!(
        (cs.code, &cs.stderr),
        (0, &String::new()),
        "cryptsetup: the key is right"
    );
    assert_eq!(
        (lk.code, &lk.stderr),
        (cs.code, &cs.stderr),
        "lukskit as cryptsetup"
    );
    // Its dump shows the header; an open refuses the layout with cryptsetup's words
    // (device_block_adjust; the reference VM has no image of this shape).
    let dump = ["tcryptDump", "-h", "sha512", img];
    let cs = common::cryptsetup(&dump, pass).unwrap();
    let lk = common::lukskit(&dump, pass);
    assert_eq!(
        (cs.code, &cs.stderr),
        (0, &String::new()),
        "cryptsetup dumps it"
    );
    assert_eq!(
        (lk.code, &lk.stdout, &lk.stderr),
        (cs.code, &cs.stdout, &cs.stderr)
    );
    let lk = common::lukskit(
        &["open", "--type", "tcrypt", "-h", "sha512", img, "mutbig"],
        pass,
    );
    assert_ne!(
        lk.code, 0,
        "an open of a data area beyond the device is refused"
    );
    assert_eq!(lk.stderr, format!("Device {img} is too small.\n"));
}
