//! Cross-check of every supported (cipher, mode, IV generator) of the sector engine against
//! independent references, on pseudo-random data, several sector sizes, `iv_large_sectors` on
//! and off, start sectors on both sides of 2³², multi-unit buffers and key counts > 1:
//!
//! * OpenSSL's own mode implementations where it has them (aes-xts/cbc/ecb/ctr,
//!   camellia-cbc/ecb, des3_ede-cbc/ecb, cast5-cbc/ecb and blowfish-cbc/ecb — the latter two
//!   from OpenSSL's legacy provider);
//! * otherwise textbook mode implementations written here on top of a single-block cipher
//!   (OpenSSL's ECB for AES/Camellia/CAST5, the RustCrypto crate used block by block for
//!   Serpent/Twofish, which OpenSSL lacks). LRW follows its definition `T_j = K2 ⊗ (I + j)`
//!   with a bit-by-bit GF(2¹²⁸) multiplication.
//!
//! The dm-crypt IV generators are recomputed here from their definitions (ESSIV salts with
//! OpenSSL SHA-256, ESSIV/EBOIV encryptions through the reference ciphers, `tcw`'s seed and
//! CRC-32 whitening from drivers/md/dm-crypt.c with a bit-by-bit CRC written here; the
//! kernel's own bytes for tcw are checked in the reference VM, tests/refvm_matrix.rs).

use cipher::{BlockCipherDecrypt, BlockCipherEncrypt, KeyInit};
use lukskit_crypto::engine::SectorCipher;
use lukskit_crypto::spec::CipherSpec;
use openssl::symm::{Cipher, Crypter, Mode};
use std::cell::RefCell;

// ---------------------------------------------------------------- deterministic test data

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        // splitmix64
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next() as u8).collect()
    }
}

// ---------------------------------------------------------------- single-block references

trait RefBlock {
    fn bs(&self) -> usize;
    fn enc(&self, b: &mut [u8]);
    fn dec(&self, b: &mut [u8]);
}

/// OpenSSL ECB used one block at a time.
struct OsslBlock {
    bs: usize,
    e: RefCell<Crypter>,
    d: RefCell<Crypter>,
}

impl OsslBlock {
    fn new(c: Cipher, key: &[u8]) -> Self {
        let mk = |m| {
            let mut cr = crypter(c, m, key, None);
            cr.pad(false);
            RefCell::new(cr)
        };
        OsslBlock {
            bs: c.block_size(),
            e: mk(Mode::Encrypt),
            d: mk(Mode::Decrypt),
        }
    }
    fn run(c: &RefCell<Crypter>, bs: usize, b: &mut [u8]) {
        let mut out = vec![0u8; 2 * bs];
        let n = c.borrow_mut().update(b, &mut out).unwrap();
        assert_eq!(n, bs);
        b.copy_from_slice(&out[..bs]);
    }
}

impl RefBlock for OsslBlock {
    fn bs(&self) -> usize {
        self.bs
    }
    fn enc(&self, b: &mut [u8]) {
        Self::run(&self.e, self.bs, b)
    }
    fn dec(&self, b: &mut [u8]) {
        Self::run(&self.d, self.bs, b)
    }
}

/// A RustCrypto block cipher used one block at a time (for ciphers OpenSSL lacks).
struct RcBlock<C>(C);

impl<C: BlockCipherEncrypt + BlockCipherDecrypt> RefBlock for RcBlock<C> {
    fn bs(&self) -> usize {
        16
    }
    fn enc(&self, b: &mut [u8]) {
        self.0.encrypt_block(b.try_into().unwrap());
    }
    fn dec(&self, b: &mut [u8]) {
        self.0.decrypt_block(b.try_into().unwrap());
    }
}

fn ossl_ecb(alg: &str, klen: usize) -> Option<Cipher> {
    Some(match (alg, klen) {
        ("aes", 16) => Cipher::aes_128_ecb(),
        ("aes", 24) => Cipher::aes_192_ecb(),
        ("aes", 32) => Cipher::aes_256_ecb(),
        ("camellia", 16) => Cipher::camellia_128_ecb(),
        ("camellia", 24) => Cipher::camellia_192_ecb(),
        ("camellia", 32) => Cipher::camellia_256_ecb(),
        ("cast5", 16) => Cipher::cast5_ecb(),
        ("des3_ede", 24) => Cipher::des_ede3(),
        ("blowfish", _) => Cipher::bf_ecb(),
        _ => return None,
    })
}

fn block(alg: &str, key: &[u8]) -> Box<dyn RefBlock> {
    match alg {
        "serpent" => Box::new(RcBlock(serpent::Serpent::new_from_slice(key).unwrap())),
        "twofish" => Box::new(RcBlock(twofish::Twofish::new_from_slice(key).unwrap())),
        _ => Box::new(OsslBlock::new(ossl_ecb(alg, key.len()).unwrap(), key)),
    }
}

/// An OpenSSL context for `c` keyed with `key` (of any length the cipher takes: Blowfish's
/// is variable, and `Crypter::new` sets it).
fn crypter(c: Cipher, m: Mode, key: &[u8], iv: Option<&[u8]>) -> Crypter {
    Crypter::new(c, m, key, iv).unwrap()
}

// ---------------------------------------------------------------- reference modes

fn xor(a: &mut [u8], b: &[u8]) {
    for (x, y) in a.iter_mut().zip(b) {
        *x ^= y;
    }
}

/// GF(2¹²⁸) multiply, kernel "bbe" convention (big-endian integer, bit i = coeff. of xⁱ,
/// reduction polynomial x¹²⁸ + x⁷ + x² + x + 1).
fn gf_mul_bbe(a: u128, b: u128) -> u128 {
    let mut r = 0u128;
    for i in (0..128).rev() {
        r = (r << 1) ^ if r >> 127 == 1 { 0x87 } else { 0 };
        if (b >> i) & 1 == 1 {
            r ^= a;
        }
    }
    r
}

/// α-multiplication for XTS (IEEE 1619 little-endian convention).
fn xts_double(t: &mut [u8; 16]) {
    let v = u128::from_le_bytes(*t);
    let v = (v << 1) ^ if v >> 127 == 1 { 0x87 } else { 0 };
    *t = v.to_le_bytes();
}

enum RefMode {
    /// OpenSSL's complete mode (cipher, key).
    Ossl(Cipher, Vec<u8>),
    Ecb(Box<dyn RefBlock>),
    Cbc(Box<dyn RefBlock>),
    Ctr(Box<dyn RefBlock>),
    Xts(Box<dyn RefBlock>, Box<dyn RefBlock>),
    Lrw(Box<dyn RefBlock>, u128),
}

impl RefMode {
    fn new(alg: &str, mode: &str, key: &[u8], prefer_openssl: bool) -> Self {
        if prefer_openssl {
            let c = match (alg, mode, key.len()) {
                ("aes", "xts", 32) => Some(Cipher::aes_128_xts()),
                ("aes", "xts", 64) => Some(Cipher::aes_256_xts()),
                ("aes", "cbc", 16) => Some(Cipher::aes_128_cbc()),
                ("aes", "cbc", 24) => Some(Cipher::aes_192_cbc()),
                ("aes", "cbc", 32) => Some(Cipher::aes_256_cbc()),
                ("aes", "ctr", 16) => Some(Cipher::aes_128_ctr()),
                ("aes", "ctr", 24) => Some(Cipher::aes_192_ctr()),
                ("aes", "ctr", 32) => Some(Cipher::aes_256_ctr()),
                ("camellia", "cbc", 16) => Some(Cipher::camellia_128_cbc()),
                ("camellia", "cbc", 24) => Some(Cipher::camellia_192_cbc()),
                ("camellia", "cbc", 32) => Some(Cipher::camellia_256_cbc()),
                ("cast5", "cbc", 16) => Some(Cipher::cast5_cbc()),
                ("des3_ede", "cbc", 24) => Some(Cipher::des_ede3_cbc()),
                ("blowfish", "cbc", _) => Some(Cipher::bf_cbc()),
                ("aes" | "camellia" | "cast5" | "des3_ede" | "blowfish", "ecb", n) => {
                    ossl_ecb(alg, n)
                }
                _ => None,
            };
            if let Some(c) = c {
                return RefMode::Ossl(c, key.to_vec());
            }
        }
        match mode {
            "ecb" => RefMode::Ecb(block(alg, key)),
            "cbc" => RefMode::Cbc(block(alg, key)),
            "ctr" => RefMode::Ctr(block(alg, key)),
            "xts" => {
                let (k1, k2) = key.split_at(key.len() / 2);
                RefMode::Xts(block(alg, k1), block(alg, k2))
            }
            "lrw" => {
                let (k1, k2) = key.split_at(key.len() - 16);
                RefMode::Lrw(block(alg, k1), u128::from_be_bytes(k2.try_into().unwrap()))
            }
            m => panic!("mode {m}"),
        }
    }

    fn crypt(&self, iv: &[u8], data: &mut [u8], enc: bool) {
        match self {
            RefMode::Ossl(c, key) => {
                let ivo = if c.iv_len().unwrap_or(0) > 0 {
                    Some(iv)
                } else {
                    None
                };
                let m = if enc { Mode::Encrypt } else { Mode::Decrypt };
                let mut cr = crypter(*c, m, key, ivo);
                cr.pad(false);
                let mut out = vec![0u8; data.len() + 32];
                let n = cr.update(data, &mut out).unwrap();
                let f = cr.finalize(&mut out[n..]).unwrap();
                assert_eq!(n + f, data.len());
                data.copy_from_slice(&out[..data.len()]);
            }
            RefMode::Ecb(b) => {
                for blk in data.chunks_mut(b.bs()) {
                    if enc {
                        b.enc(blk)
                    } else {
                        b.dec(blk)
                    }
                }
            }
            RefMode::Cbc(b) => {
                let mut prev = iv.to_vec();
                for blk in data.chunks_mut(b.bs()) {
                    if enc {
                        xor(blk, &prev);
                        b.enc(blk);
                        prev.copy_from_slice(blk);
                    } else {
                        let c = blk.to_vec();
                        b.dec(blk);
                        xor(blk, &prev);
                        prev = c;
                    }
                }
            }
            RefMode::Ctr(b) => {
                let bs = b.bs();
                let mut ctr = iv.to_vec();
                for blk in data.chunks_mut(bs) {
                    let mut ks = ctr.clone();
                    b.enc(&mut ks);
                    xor(blk, &ks);
                    // big-endian increment of the whole counter block
                    for byte in ctr.iter_mut().rev() {
                        *byte = byte.wrapping_add(1);
                        if *byte != 0 {
                            break;
                        }
                    }
                }
            }
            RefMode::Xts(k1, k2) => {
                let mut t: [u8; 16] = iv.try_into().unwrap();
                k2.enc(&mut t);
                for blk in data.chunks_mut(16) {
                    xor(blk, &t);
                    if enc {
                        k1.enc(blk)
                    } else {
                        k1.dec(blk)
                    }
                    xor(blk, &t);
                    xts_double(&mut t);
                }
            }
            RefMode::Lrw(k1, k2) => {
                let i = u128::from_be_bytes(iv.try_into().unwrap());
                for (j, blk) in data.chunks_mut(16).enumerate() {
                    let t = gf_mul_bbe(*k2, i.wrapping_add(j as u128)).to_be_bytes();
                    xor(blk, &t);
                    if enc {
                        k1.enc(blk)
                    } else {
                        k1.dec(blk)
                    }
                    xor(blk, &t);
                }
            }
        }
    }
}

// ---------------------------------------------------------------- reference dm-crypt

struct RefTfm {
    mode: RefMode,
    essiv: Option<Box<dyn RefBlock>>,
}

struct RefCrypt {
    ivmode: Option<String>,
    iv_size: usize,
    mode_block: usize,
    sector_size: u64,
    large: bool,
    tfms: Vec<RefTfm>,
    /// `tcw`: the IV seed and the 16 whitening bytes (the last bytes of the key).
    tcw: Option<(Vec<u8>, Vec<u8>)>,
}

/// The kernel's `crc32` shash over one 4-byte word: crc32_le from 0, bit by bit, no
/// inversions.
fn crc32_le0(data: &[u8]) -> u32 {
    let mut c = 0u32;
    for &b in data {
        c ^= u32::from(b);
        for _ in 0..8 {
            c = if c & 1 == 1 {
                (c >> 1) ^ 0xEDB8_8320
            } else {
                c >> 1
            };
        }
    }
    c
}

/// dm-crypt's crypt_iv_tcw_whitening, written out as drivers/md/dm-crypt.c does it.
fn tcw_whitening(whitening: &[u8], sector: u64, data: &mut [u8]) {
    let s = sector.to_le_bytes();
    let mut buf = [0u8; 16];
    buf.copy_from_slice(&whitening[..16]);
    xor(&mut buf[..8], &s);
    xor(&mut buf[8..], &s);
    for word in buf.chunks_mut(4) {
        let crc = crc32_le0(word);
        word.copy_from_slice(&crc.to_le_bytes());
    }
    let (lo, hi) = buf.split_at_mut(8);
    // buf[0..4] ^= buf[12..16]; buf[4..8] ^= buf[8..12]
    xor(&mut lo[..4], &hi[4..]);
    xor(&mut lo[4..], &hi[..4]);
    for chunk in data[..512].chunks_mut(8) {
        xor(chunk, lo);
    }
}

impl RefCrypt {
    fn new(spec: &str, key: &[u8], sector_size: u32, large: bool, prefer_openssl: bool) -> Self {
        let s = CipherSpec::parse(spec).unwrap();
        let bs = if ["cast5", "blowfish", "des3_ede"].contains(&s.cipher.as_str()) {
            8
        } else {
            16
        };
        let iv_size = if s.chainmode == "ecb" { 0 } else { bs };
        let mode_block = if s.chainmode == "ctr" { 1 } else { bs };
        // tcw: the key ends with the IV seed (the IV size, at least 8) and 16 whitening bytes.
        let (key, tcw) = if s.ivmode.as_deref() == Some("tcw") {
            let seed = iv_size.max(8);
            let (k, extra) = key.split_at(key.len() - seed - 16);
            (k, Some((extra[..seed].to_vec(), extra[seed..].to_vec())))
        } else {
            (key, None)
        };
        let sub = key.len() / s.keycount as usize;
        let tfms = key
            .chunks(sub)
            .map(|k| RefTfm {
                mode: RefMode::new(&s.cipher, &s.chainmode, k, prefer_openssl),
                essiv: match (s.ivmode.as_deref(), s.ivopts.as_deref()) {
                    (Some("essiv"), Some("sha256")) => {
                        let salt = openssl::sha::sha256(k);
                        Some(block(&s.cipher, &salt))
                    }
                    (Some("essiv"), o) => panic!("essiv {o:?} not in this test"),
                    _ => None,
                },
            })
            .collect();
        RefCrypt {
            ivmode: s.ivmode,
            iv_size,
            mode_block,
            sector_size: sector_size.into(),
            large,
            tfms,
            tcw,
        }
    }

    fn iv(&self, tfm: &RefTfm, s: u64) -> Vec<u8> {
        let n = self.iv_size;
        let mut iv = vec![0u8; n];
        if n == 0 {
            return iv;
        }
        match self.ivmode.as_deref().unwrap() {
            "null" => {}
            "plain" => iv[..4].copy_from_slice(&(s as u32).to_le_bytes()),
            "tcw" => {
                // crypt_iv_tcw_gen: the seed, each 8-byte half XORed with LE64(sector).
                let seed = &self.tcw.as_ref().unwrap().0;
                for (i, b) in iv.iter_mut().enumerate() {
                    *b = seed[i] ^ s.to_le_bytes()[i % 8];
                }
            }
            "plain64" => iv[..8].copy_from_slice(&s.to_le_bytes()),
            "plain64be" => iv[n - 8..].copy_from_slice(&s.to_be_bytes()),
            "essiv" => {
                iv[..8].copy_from_slice(&s.to_le_bytes());
                tfm.essiv.as_ref().unwrap().enc(&mut iv);
            }
            "benbi" => {
                // narrow-block count from 1: (sector << (9 - log2(blocksize))) + 1, with the
                // kernel's skcipher block size (1 for ctr, a stream mode).
                let shift = 9 - (self.mode_block as u32).trailing_zeros();
                iv[n - 8..].copy_from_slice(&(s << shift).wrapping_add(1).to_be_bytes());
            }
            "eboiv" => {
                let mut buf = vec![0u8; n];
                buf[..8].copy_from_slice(&s.wrapping_mul(self.sector_size).to_le_bytes());
                // one zero block through the bulk mode of tfm 0, IV = byte offset
                self.tfms[0].mode.crypt(&buf, &mut iv, true);
            }
            m => panic!("ivmode {m}"),
        }
        iv
    }

    fn crypt(&self, data: &mut [u8], sector: u64, enc: bool) {
        let ss = self.sector_size as usize;
        let step = self.sector_size / 512;
        let shift = (self.sector_size / 512).trailing_zeros();
        for (k, unit) in data.chunks_mut(ss).enumerate() {
            let cc = sector.wrapping_add(k as u64 * step);
            let tfm = &self.tfms[(cc % self.tfms.len() as u64) as usize];
            let ivs = if self.large { cc >> shift } else { cc };
            let iv = self.iv(tfm, ivs);
            match &self.tcw {
                // The whitening is on the ciphertext: after encrypting, before decrypting.
                Some((_, w)) if enc => {
                    tfm.mode.crypt(&iv, unit, enc);
                    tcw_whitening(w, ivs, unit);
                }
                Some((_, w)) => {
                    tcw_whitening(w, ivs, unit);
                    tfm.mode.crypt(&iv, unit, enc);
                }
                None => tfm.mode.crypt(&iv, unit, enc),
            }
        }
    }
}

// ---------------------------------------------------------------- the comparisons

const ALL_GEOMETRIES: &[(u32, bool)] = &[
    (512, false),
    (1024, false),
    (1024, true),
    (4096, false),
    (4096, true),
];

fn compare(rng: &mut Rng, spec: &str, key_len: usize, prefer_openssl: bool) {
    compare_with(rng, spec, key_len, prefer_openssl, ALL_GEOMETRIES, 3);
}

fn compare_with(
    rng: &mut Rng,
    spec: &str,
    key_len: usize,
    prefer_openssl: bool,
    geometries: &[(u32, bool)],
    units: usize,
) {
    let parsed = CipherSpec::parse(spec).unwrap();
    let key = rng.bytes(key_len);
    for &(ss, large) in geometries {
        let engine = SectorCipher::new(&parsed, &key, ss, large).unwrap();
        let portable = SectorCipher::new_portable(&parsed, &key, ss, large).unwrap();
        let reference = RefCrypt::new(spec, &key, ss, large, prefer_openssl);
        let step = u64::from(ss / 512);
        for start in [
            0u64,
            5 * step,
            (1u64 << 32) - 2 * step, // crosses 2^32: plain truncates, plain64 does not
            0x0123_4567_89ab_cdef & !(step - 1),
        ] {
            let pt = rng.bytes(ss as usize * units);
            let mut a = pt.clone();
            let mut b = pt.clone();
            engine.encrypt(&mut a, start).unwrap();
            reference.crypt(&mut b, start, true);
            assert!(
                a == b,
                "{spec} key {key_len} sector_size {ss} large {large} start {start:#x}: ciphertext differs"
            );
            assert_ne!(a, pt, "{spec}: encryption left the data unchanged");
            let mut p = pt.clone();
            portable.encrypt(&mut p, start).unwrap();
            assert!(
                p == a,
                "{spec} ss {ss} start {start:#x}: portable build differs"
            );
            portable.decrypt(&mut p, start).unwrap();
            assert_eq!(p, pt, "{spec}: portable decrypt");
            engine.decrypt(&mut a, start).unwrap();
            assert_eq!(a, pt, "{spec}: decrypt(encrypt(x)) != x");
            // And the reference can decrypt what the engine wrote (independent decrypt path).
            reference.crypt(&mut b, start, false);
            assert_eq!(b, pt, "{spec}: reference decrypt failed");
        }
    }
}

const IVS: [&str; 7] = [
    "plain",
    "plain64",
    "plain64be",
    "essiv:sha256",
    "benbi",
    "null",
    "eboiv",
];

#[test]
fn aes_all_modes_and_ivs_vs_openssl() {
    let mut rng = Rng(1);
    for iv in IVS {
        for key_len in [32, 64] {
            compare(&mut rng, &format!("aes-xts-{iv}"), key_len, true);
        }
        // AES-192-XTS: OpenSSL has no such cipher; generic XTS over OpenSSL AES-192 blocks.
        compare(&mut rng, &format!("aes-xts-{iv}"), 48, true);
        for key_len in [16, 24, 32] {
            compare(&mut rng, &format!("aes-cbc-{iv}"), key_len, true);
            if iv != "eboiv" {
                compare(&mut rng, &format!("aes-ctr-{iv}"), key_len, true);
            }
        }
        for key_len in [32, 40, 48] {
            compare(&mut rng, &format!("aes-lrw-{iv}"), key_len, true);
        }
    }
    for key_len in [16, 24, 32] {
        compare(&mut rng, "aes-ecb", key_len, true);
    }
}

#[test]
fn generic_modes_match_openssl_modes() {
    // The hand-written reference modes (used below for ciphers OpenSSL lacks) must agree with
    // OpenSSL's own implementations, so that they can be trusted as references.
    let mut rng = Rng(2);
    for (mode, klen) in [
        ("xts", 32),
        ("xts", 64),
        ("cbc", 16),
        ("ctr", 32),
        ("ecb", 24),
    ] {
        let key = rng.bytes(klen);
        let iv = rng.bytes(16);
        let pt = rng.bytes(4096);
        let mut a = pt.clone();
        let mut b = pt.clone();
        RefMode::new("aes", mode, &key, true).crypt(&iv, &mut a, true);
        RefMode::new("aes", mode, &key, false).crypt(&iv, &mut b, true);
        assert_eq!(a, b, "{mode}");
    }
}

#[test]
fn camellia_vs_openssl() {
    let mut rng = Rng(3);
    for key_len in [16, 24, 32] {
        compare(&mut rng, "camellia-cbc-plain64", key_len, true);
        compare(&mut rng, "camellia-cbc-essiv:sha256", key_len, true);
        compare(&mut rng, "camellia-ecb", key_len, true);
        compare(&mut rng, "camellia-ctr-plain64", key_len, true);
    }
    for key_len in [32, 48, 64] {
        compare(&mut rng, "camellia-xts-plain64", key_len, true);
    }
    compare(&mut rng, "camellia-lrw-benbi", 32, true);
}

#[test]
fn cast5_vs_openssl_legacy() {
    const HOW: &str = "CAST5 is in OpenSSL 3's legacy provider (apt-get install libssl3, \
                       which ships ossl-modules/legacy.so)";
    let Ok(_legacy) = openssl::provider::Provider::try_load(None, "legacy", true) else {
        lukskit_testkit::skip_or_fail(
            "cast5_vs_openssl_legacy",
            &format!("the OpenSSL legacy provider cannot be loaded; {HOW}"),
        );
        return;
    };
    if Crypter::new(Cipher::cast5_ecb(), Mode::Encrypt, &[0u8; 16], None).is_err() {
        lukskit_testkit::skip_or_fail(
            "cast5_vs_openssl_legacy",
            &format!("OpenSSL has no CAST5; {HOW}"),
        );
        return;
    }
    let mut rng = Rng(4);
    for iv in ["plain", "plain64", "plain64be", "benbi", "null", "eboiv"] {
        compare(&mut rng, &format!("cast5-cbc-{iv}"), 16, true);
    }
    compare(&mut rng, "cast5-ecb", 16, true);
    compare(&mut rng, "cast5-ctr-plain64", 16, true);
}

/// The legacy ciphers of TrueCrypt ≤ 4: Triple DES (OpenSSL's default provider) and
/// Blowfish (its legacy provider), in the modes dm-crypt maps them in, with every key length
/// Blowfish takes at its ends.
#[test]
fn des3_ede_and_blowfish_vs_openssl() {
    let mut rng = Rng(11);
    for iv in ["plain", "plain64", "plain64be", "benbi", "null", "eboiv"] {
        compare(&mut rng, &format!("des3_ede-cbc-{iv}"), 24, true);
    }
    compare(&mut rng, "des3_ede-ecb", 24, true);
    compare(&mut rng, "des3_ede-ctr-plain64", 24, true);
    const HOW: &str = "Blowfish is in OpenSSL 3's legacy provider (apt-get install libssl3, \
                       which ships ossl-modules/legacy.so)";
    let Ok(_legacy) = openssl::provider::Provider::try_load(None, "legacy", true) else {
        lukskit_testkit::skip_or_fail(
            "des3_ede_and_blowfish_vs_openssl",
            &format!("the OpenSSL legacy provider cannot be loaded; {HOW}"),
        );
        return;
    };
    for key_len in [4, 16, 32, 56] {
        compare(&mut rng, "blowfish-cbc-plain64", key_len, true);
        compare(&mut rng, "blowfish-ecb", key_len, true);
    }
    for iv in ["plain", "plain64be", "benbi", "null", "eboiv"] {
        compare(&mut rng, &format!("blowfish-cbc-{iv}"), 32, true);
    }
}

/// `tcw` (TrueCrypt ≤ 4's CBC) with each cipher TrueCrypt used it with, against the
/// definition above over OpenSSL's (or the reference block cipher's) CBC; 512-byte sectors
/// only, as dm-crypt.
#[test]
fn tcw_vs_definition() {
    let mut rng = Rng(12);
    let geo = &[(512, false)];
    // (spec, cipher key + IV seed + whitening)
    for (spec, len) in [
        ("aes-cbc-tcw", 32 + 16 + 16),
        ("aes-cbc-tcw", 16 + 16 + 16),
        ("serpent-cbc-tcw", 32 + 16 + 16),
        ("twofish-cbc-tcw", 32 + 16 + 16),
        ("des3_ede-cbc-tcw", 24 + 8 + 16),
    ] {
        compare_with(&mut rng, spec, len, true, geo, 5);
    }
    // An XTS mode takes the same IV and whitening (the kernel does not forbid it).
    compare_with(&mut rng, "aes-xts-tcw", 32 + 16 + 16, true, geo, 3);
    // (CAST5 and Blowfish: OpenSSL's legacy provider, loaded while the binding lives.)
    if let Ok(_legacy) = openssl::provider::Provider::try_load(None, "legacy", true) {
        compare_with(&mut rng, "cast5-cbc-tcw", 16 + 8 + 16, true, geo, 5);
        compare_with(&mut rng, "blowfish-cbc-tcw", 56 + 8 + 16, true, geo, 5);
    }
    // Many sectors in one call, serial and parallel, equal the sectors one by one.
    let spec = CipherSpec::parse("aes-cbc-tcw").unwrap();
    let key = rng.bytes(64);
    let c = SectorCipher::new(&spec, &key, 512, false).unwrap();
    let pt = rng.bytes(512 * 300);
    let mut whole = pt.clone();
    c.encrypt_with_threads(&mut whole, 1000, 2).unwrap();
    for (k, unit) in pt.chunks(512).enumerate() {
        let mut one = unit.to_vec();
        c.encrypt(&mut one, 1000 + k as u64).unwrap();
        assert_eq!(one, whole[k * 512..(k + 1) * 512], "sector {k}");
    }
    c.decrypt_with_threads(&mut whole, 1000, 2).unwrap();
    assert_eq!(whole, pt);
}

#[test]
fn serpent_vs_rustcrypto_blocks() {
    let mut rng = Rng(5);
    for iv in IVS {
        for key_len in [32, 48, 64] {
            compare(&mut rng, &format!("serpent-xts-{iv}"), key_len, false);
        }
        for key_len in [16, 32] {
            compare(&mut rng, &format!("serpent-cbc-{iv}"), key_len, false);
        }
        compare(&mut rng, &format!("serpent-lrw-{iv}"), 48, false);
    }
    compare(&mut rng, "serpent-ecb", 24, false);
    compare(&mut rng, "serpent-ctr-plain64", 32, false);
}

#[test]
fn twofish_vs_rustcrypto_blocks() {
    // The RustCrypto Twofish is very slow (no key-dependent tables), so fewer geometries.
    let mut rng = Rng(9);
    let geo = &[(512, false), (1024, true)];
    for iv in IVS {
        for key_len in [32, 48, 64] {
            compare_with(
                &mut rng,
                &format!("twofish-xts-{iv}"),
                key_len,
                false,
                geo,
                1,
            );
        }
        compare_with(&mut rng, &format!("twofish-cbc-{iv}"), 24, false, geo, 1);
        compare_with(&mut rng, &format!("twofish-lrw-{iv}"), 48, false, geo, 1);
    }
    compare_with(&mut rng, "twofish-ecb", 16, false, geo, 1);
    compare_with(&mut rng, "twofish-ctr-plain64", 32, false, geo, 1);
}

#[test]
fn multiple_keys() {
    let mut rng = Rng(6);
    compare(&mut rng, "aes:2-xts-plain64", 128, true);
    compare(&mut rng, "aes:4-cbc-essiv:sha256", 64, true);
    compare(&mut rng, "aes:4-cbc-eboiv", 64, true);
    compare(&mut rng, "aes:8-cbc-plain", 8 * 24, true);
    compare(&mut rng, "serpent:2-xts-plain64", 128, false);
}

#[test]
fn capi_form_is_the_same_cipher() {
    let mut rng = Rng(7);
    let key = rng.bytes(64);
    let pt = rng.bytes(8192);
    for (legacy, capi) in [
        ("aes-xts-plain64", "capi:xts(aes)-plain64"),
        ("aes-cbc-essiv:sha256", "capi:cbc(aes)-essiv:sha256"),
    ] {
        let klen = if legacy.contains("xts") { 64 } else { 16 };
        let a_c = SectorCipher::new(
            &CipherSpec::parse(legacy).unwrap(),
            &key[..klen],
            512,
            false,
        )
        .unwrap();
        let b_c =
            SectorCipher::new(&CipherSpec::parse(capi).unwrap(), &key[..klen], 512, false).unwrap();
        let mut a = pt.clone();
        let mut b = pt.clone();
        a_c.encrypt(&mut a, 77).unwrap();
        b_c.encrypt(&mut b, 77).unwrap();
        assert_eq!(a, b, "{capi}");
    }
}

/// The multi-sector fast paths (batched IVs and XTS tweaks, lockstep CBC chains, 8-block
/// groups) with sector counts around every batch and lane width (1, 2, 4, 8, 16, 32), start
/// sectors just below 2³² (plain wraps there), against the reference, the portable build,
/// and the same sectors processed one call per sector.
#[test]
fn many_sectors_batches_and_lanes() {
    let mut rng = Rng(10);
    let cases: &[(&str, usize, bool)] = &[
        ("aes-xts-plain64", 32, true),
        ("aes-xts-plain64", 48, true),
        ("aes-xts-plain64", 64, true),
        ("aes-xts-essiv:sha256", 64, true),
        ("aes-xts-eboiv", 32, true),
        ("aes-cbc-essiv:sha256", 16, true),
        ("aes-cbc-essiv:sha256", 24, true),
        ("aes-cbc-essiv:sha256", 32, true),
        ("aes-cbc-plain", 32, true),
        ("aes-cbc-benbi", 16, true),
        ("aes-cbc-null", 16, true),
        ("aes-ecb", 32, true),
        ("aes-ctr-plain64", 32, true),
        ("aes-lrw-plain64", 48, true),
        ("serpent-xts-plain64", 64, false),
        ("serpent-cbc-essiv:sha256", 32, false),
        ("serpent-cbc-plain64", 16, false),
        ("twofish-xts-plain64", 32, false),
        ("twofish-cbc-essiv:sha256", 32, false),
        ("camellia-cbc-plain64", 32, true),
        ("aes:2-cbc-plain64", 64, true),
    ];
    for &(spec, klen, prefer_openssl) in cases {
        let parsed = CipherSpec::parse(spec).unwrap();
        let key = rng.bytes(klen);
        let slow_ref = spec.starts_with("twofish");
        for (ss, large) in [(512u32, false), (4096, true), (1024, false)] {
            let engine = SectorCipher::new(&parsed, &key, ss, large).unwrap();
            let portable = SectorCipher::new_portable(&parsed, &key, ss, large).unwrap();
            let reference = RefCrypt::new(spec, &key, ss, large, prefer_openssl);
            let step = u64::from(ss / 512);
            let counts: &[usize] = if slow_ref && ss == 4096 {
                &[1, 5, 17]
            } else {
                &[1, 2, 3, 4, 7, 8, 9, 15, 16, 17, 31, 32, 33, 40, 64, 70]
            };
            for &units in counts {
                let start = (1u64 << 32) - 5 * step;
                let pt = rng.bytes(ss as usize * units);
                let mut a = pt.clone();
                engine.encrypt(&mut a, start).unwrap();
                let mut b = pt.clone();
                reference.crypt(&mut b, start, true);
                let what = format!("{spec} key {klen} ss {ss} large {large} units {units}");
                assert!(a == b, "{what}: differs from the reference");
                let mut p = pt.clone();
                portable.encrypt(&mut p, start).unwrap();
                assert!(p == a, "{what}: portable build differs");
                // One call per sector (no batching, one CBC chain at a time).
                let mut one = pt.clone();
                for (k, unit) in one.chunks_mut(ss as usize).enumerate() {
                    engine.encrypt(unit, start + k as u64 * step).unwrap();
                }
                assert!(one == a, "{what}: per-sector calls differ");
                let mut d = a.clone();
                engine.decrypt(&mut d, start).unwrap();
                assert!(d == pt, "{what}: decrypt");
                portable.decrypt(&mut a, start).unwrap();
                assert!(a == pt, "{what}: portable decrypt");
            }
        }
    }
}

#[test]
fn buffer_lengths_are_checked() {
    let c = SectorCipher::new(
        &CipherSpec::parse("aes-xts-plain64").unwrap(),
        &[7u8; 64],
        4096,
        false,
    )
    .unwrap();
    for bad in [1usize, 16, 512, 4095, 4097, 4096 + 16, 3 * 4096 - 512] {
        let mut buf = vec![0u8; bad];
        assert!(c.encrypt(&mut buf, 0).is_err(), "{bad}");
        assert!(c.decrypt_parallel(&mut buf, 0).is_err(), "{bad}");
        assert!(c.encrypt_with_threads(&mut buf, 0, 2).is_err(), "{bad}");
        assert_eq!(buf, vec![0u8; bad], "{bad}: buffer modified on error");
    }
    let mut empty = [];
    assert!(c.encrypt(&mut empty, 0).is_ok());
    assert!(c.encrypt_parallel(&mut empty, 0).is_ok());
    let mut buf = vec![0u8; 8192];
    assert!(c.encrypt(&mut buf, 4).is_err(), "unaligned start sector");
}

#[test]
fn parallel_matches_serial() {
    let mut rng = Rng(8);
    for (spec, klen, ss) in [
        ("aes-xts-plain64", 64, 512u32),
        ("aes-xts-plain64", 32, 4096),
        ("aes-cbc-essiv:sha256", 16, 512),
        ("serpent-cbc-plain64", 32, 1024),
        ("aes:4-lrw-benbi", 4 * 48, 512),
    ] {
        let c = SectorCipher::new(
            &CipherSpec::parse(spec).unwrap(),
            &rng.bytes(klen),
            ss,
            true,
        )
        .unwrap();
        let pt = rng.bytes(1024 * 1024 + 3 * 4096);
        let start = 0xffff_f000u64;
        let mut a = pt.clone();
        let mut b = pt.clone();
        c.encrypt(&mut a, start).unwrap();
        c.encrypt_parallel(&mut b, start).unwrap();
        assert_eq!(a, b, "{spec}");
        c.decrypt_parallel(&mut b, start).unwrap();
        assert_eq!(b, pt, "{spec}");
        for threads in [0, 1, 2, 3] {
            let mut t = pt.clone();
            c.encrypt_with_threads(&mut t, start, threads).unwrap();
            assert!(t == a, "{spec}: {threads} threads");
            c.decrypt_with_threads(&mut t, start, threads).unwrap();
            assert!(t == pt, "{spec}: {threads} threads decrypt");
        }
        // Splitting a request must not change the result either (dm-crypt splits bios).
        let mut c2 = pt.clone();
        let (x, y) = c2.split_at_mut(5 * ss as usize);
        c.encrypt(x, start).unwrap();
        c.encrypt(y, start + 5 * u64::from(ss / 512)).unwrap();
        assert_eq!(c2, a, "{spec} split");
    }
}
