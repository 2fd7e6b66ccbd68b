//! Block ciphers by their kernel names, with key schedules that are wiped on drop.

use crate::{CryptoError, Result};
use ::cipher::{Block, BlockCipherDecrypt, BlockCipherEncrypt, KeyInit};

/// A block cipher algorithm as named in dm-crypt specs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CipherAlg {
    Aes,
    Serpent,
    Twofish,
    Cast5,
    /// Blowfish (the kernel's big-endian `blowfish`; TrueCrypt's little-endian variant is
    /// not a kernel cipher and is left to the TCRYPT header code).
    Blowfish,
    /// Triple DES in EDE form with three keys (`des3_ede`, 24-byte keys).
    Des3Ede,
    Camellia,
    /// GOST R 34.12-2015 Kuznyechik (VeraCrypt's; a 256-bit key).
    Kuznyechik,
    /// `cipher_null`: the identity "cipher" (kernel `crypto/crypto_null.c`).
    Null,
}

impl CipherAlg {
    /// Look up a cipher by its kernel crypto API name (case-sensitive, as the kernel is).
    pub(crate) fn from_name(name: &str) -> Result<Self> {
        Ok(match name {
            "aes" => CipherAlg::Aes,
            "serpent" => CipherAlg::Serpent,
            "twofish" => CipherAlg::Twofish,
            "cast5" => CipherAlg::Cast5,
            "blowfish" => CipherAlg::Blowfish,
            "des3_ede" => CipherAlg::Des3Ede,
            "camellia" => CipherAlg::Camellia,
            "kuznyechik" => CipherAlg::Kuznyechik,
            "cipher_null" => CipherAlg::Null,
            _ => return Err(CryptoError::Unsupported(format!("cipher '{name}'"))),
        })
    }

    /// The kernel name.
    pub(crate) fn name(self) -> &'static str {
        match self {
            CipherAlg::Aes => "aes",
            CipherAlg::Serpent => "serpent",
            CipherAlg::Twofish => "twofish",
            CipherAlg::Cast5 => "cast5",
            CipherAlg::Blowfish => "blowfish",
            CipherAlg::Des3Ede => "des3_ede",
            CipherAlg::Camellia => "camellia",
            CipherAlg::Kuznyechik => "kuznyechik",
            CipherAlg::Null => "cipher_null",
        }
    }

    /// Block size in bytes (`cipher_null` has 1 in the kernel).
    pub(crate) fn block_size(self) -> usize {
        match self {
            CipherAlg::Cast5 | CipherAlg::Blowfish | CipherAlg::Des3Ede => 8,
            CipherAlg::Null => 1,
            _ => 16,
        }
    }

    /// Whether `len` is a key length this implementation accepts for the bare cipher.
    pub(crate) fn key_len_ok(self, len: usize) -> bool {
        match self {
            CipherAlg::Aes | CipherAlg::Twofish | CipherAlg::Camellia => {
                matches!(len, 16 | 24 | 32)
            }
            // The kernel also takes shorter Serpent keys; RustCrypto (and every real
            // cryptsetup configuration) uses 128..256 bits.
            CipherAlg::Serpent => (16..=32).contains(&len),
            CipherAlg::Cast5 => (5..=16).contains(&len),
            // crypto/blowfish_common.c: BF_MIN_KEY_SIZE 4 to BF_MAX_KEY_SIZE 56.
            CipherAlg::Blowfish => (4..=56).contains(&len),
            CipherAlg::Des3Ede => len == 24,
            CipherAlg::Kuznyechik => len == 32,
            CipherAlg::Null => true,
        }
    }

    /// Human-readable list of accepted key lengths, for error messages.
    pub(crate) fn key_lens_text(self) -> &'static str {
        match self {
            CipherAlg::Aes | CipherAlg::Twofish | CipherAlg::Camellia => "16, 24 or 32 bytes",
            CipherAlg::Serpent => "16 to 32 bytes",
            CipherAlg::Cast5 => "5 to 16 bytes",
            CipherAlg::Blowfish => "4 to 56 bytes",
            CipherAlg::Des3Ede => "24 bytes",
            CipherAlg::Kuznyechik => "32 bytes",
            CipherAlg::Null => "any length",
        }
    }
}

mod sealed {
    /// Types whose whole state is plain data (integer arrays, SIMD round-key arrays,
    /// zero-sized CPU-feature tokens): no pointers, no heap, and all-zero bytes are a valid
    /// value. Only such types may be wrapped in [`super::Wiped`].
    pub trait FlatKeySchedule {}
    impl FlatKeySchedule for aes::Aes128 {}
    impl FlatKeySchedule for aes::Aes192 {}
    impl FlatKeySchedule for aes::Aes256 {}
    impl FlatKeySchedule for cast5::Cast5 {}
    impl FlatKeySchedule for camellia::Camellia128 {}
    impl FlatKeySchedule for camellia::Camellia192 {}
    impl FlatKeySchedule for camellia::Camellia256 {}
}

/// A key schedule that is overwritten with zeros when dropped (the RustCrypto crates only do
/// this with a cargo feature this workspace does not enable).
pub(crate) struct Wiped<T: sealed::FlatKeySchedule>(pub(crate) T);

impl<T: sealed::FlatKeySchedule> Drop for Wiped<T> {
    fn drop(&mut self) {
        // SAFETY: `T` is restricted by the sealed `FlatKeySchedule` trait to RustCrypto key
        // schedules that consist only of plain integer / SIMD arrays and zero-sized tokens
        // (no references, pointers or heap memory), for which the all-zero bit pattern is a
        // valid value; their own `Drop` impls do not read the contents. The pointer comes from
        // a live `&mut`, so it is valid and aligned for `size_of::<T>()` bytes.
        unsafe { zeroize::zeroize_flat_type(&mut self.0 as *mut T) }
    }
}

/// A keyed block cipher, with the backend chosen at key setup.
///
/// * AES: the VAES kernels of [`super::aes_x86`] when the CPU has them (and fast backends are
///   allowed), else RustCrypto `aes` (AES-NI or its constant-time software code).
/// * Serpent: [`super::serpent`] (AVX2/SSE2 lanes, or portable lanes).
/// * Twofish: the table implementation of [`super::twofish`].
/// * CAST5, Camellia, Kuznyechik, Blowfish, Triple DES: RustCrypto, one block at a time (not
///   performance targets).
pub(crate) enum BlockCipher {
    #[cfg(target_arch = "x86_64")]
    AesVaes(Box<super::aes_x86::AesVaes>),
    Aes128(Wiped<aes::Aes128>),
    Aes192(Wiped<aes::Aes192>),
    Aes256(Wiped<aes::Aes256>),
    Serpent(Box<super::serpent::Serpent>),
    Twofish(Box<super::twofish::Twofish>),
    Cast5(Wiped<cast5::Cast5>),
    Camellia128(Wiped<camellia::Camellia128>),
    Camellia192(Wiped<camellia::Camellia192>),
    Camellia256(Wiped<camellia::Camellia256>),
    /// Wiped on drop by the crate itself (its `zeroize` feature).
    Kuznyechik(Box<kuznyechik::Kuznyechik>),
    /// Wiped on drop by the crate itself (its `zeroize` feature); boxed: 4 KiB of S-boxes.
    Blowfish(Box<blowfish::Blowfish>),
    /// Wiped on drop by the crate itself (its `zeroize` feature).
    Des3Ede(Box<des::TdesEde3>),
}

fn init<T: KeyInit>(key: &[u8]) -> Result<T> {
    T::new_from_slice(key).map_err(|_| CryptoError::InvalidKey("bad key length".into()))
}

/// ECB through a RustCrypto cipher's own multi-block API.
#[inline]
fn crate_ecb<C: BlockCipherEncrypt + BlockCipherDecrypt>(c: &C, data: &mut [u8], encrypt: bool) {
    let (blocks, rest) = ::cipher::Array::slice_as_chunks_mut(data);
    debug_assert!(rest.is_empty(), "buffer not a multiple of the block size");
    let blocks: &mut [Block<C>] = blocks;
    if encrypt {
        c.encrypt_blocks(blocks);
    } else {
        c.decrypt_blocks(blocks);
    }
}

impl BlockCipher {
    /// Expand `key` for `alg`. `cipher_null` has no key schedule and is handled by the modes.
    /// `fast` allows the assembly / run-time-selected SIMD backends; without it only portable
    /// Rust code is used (for comparison and testing).
    pub(crate) fn new(alg: CipherAlg, key: &[u8], fast: bool) -> Result<Self> {
        if !alg.key_len_ok(key.len()) {
            return Err(CryptoError::InvalidKey(format!(
                "{} needs a key of {}, got {} bytes",
                alg.name(),
                alg.key_lens_text(),
                key.len()
            )));
        }
        Ok(match alg {
            CipherAlg::Aes => {
                #[cfg(target_arch = "x86_64")]
                if fast {
                    if let Some(k) = super::aes_x86::AesVaes::new(key) {
                        return Ok(BlockCipher::AesVaes(k));
                    }
                }
                match key.len() {
                    16 => BlockCipher::Aes128(Wiped(init(key)?)),
                    24 => BlockCipher::Aes192(Wiped(init(key)?)),
                    _ => BlockCipher::Aes256(Wiped(init(key)?)),
                }
            }
            CipherAlg::Serpent => {
                BlockCipher::Serpent(Box::new(super::serpent::Serpent::new(key, fast)))
            }
            CipherAlg::Twofish => BlockCipher::Twofish(super::twofish::Twofish::new(key)),
            CipherAlg::Cast5 => BlockCipher::Cast5(Wiped(init(key)?)),
            CipherAlg::Camellia => match key.len() {
                16 => BlockCipher::Camellia128(Wiped(init(key)?)),
                24 => BlockCipher::Camellia192(Wiped(init(key)?)),
                _ => BlockCipher::Camellia256(Wiped(init(key)?)),
            },
            CipherAlg::Kuznyechik => BlockCipher::Kuznyechik(Box::new(init(key)?)),
            CipherAlg::Blowfish => BlockCipher::Blowfish(Box::new(init(key)?)),
            CipherAlg::Des3Ede => BlockCipher::Des3Ede(Box::new(init(key)?)),
            CipherAlg::Null => {
                return Err(CryptoError::Unsupported(
                    "cipher_null has no key schedule".into(),
                ))
            }
        })
    }

    /// Block size in bytes.
    pub(crate) fn block_size(&self) -> usize {
        match self {
            BlockCipher::Cast5(_) | BlockCipher::Blowfish(_) | BlockCipher::Des3Ede(_) => 8,
            _ => 16,
        }
    }

    /// ECB-encrypt (or decrypt) `data` in place; `data.len()` must be a multiple of the block
    /// size. Every backend processes several blocks at once here.
    pub(crate) fn ecb(&self, data: &mut [u8], encrypt: bool) {
        match self {
            #[cfg(target_arch = "x86_64")]
            BlockCipher::AesVaes(k) => k.ecb(data, encrypt),
            BlockCipher::Aes128(w) => crate_ecb(&w.0, data, encrypt),
            BlockCipher::Aes192(w) => crate_ecb(&w.0, data, encrypt),
            BlockCipher::Aes256(w) => crate_ecb(&w.0, data, encrypt),
            BlockCipher::Serpent(k) => k.ecb(data, encrypt),
            BlockCipher::Twofish(k) => k.ecb(data, encrypt),
            BlockCipher::Cast5(w) => crate_ecb(&w.0, data, encrypt),
            BlockCipher::Camellia128(w) => crate_ecb(&w.0, data, encrypt),
            BlockCipher::Camellia192(w) => crate_ecb(&w.0, data, encrypt),
            BlockCipher::Camellia256(w) => crate_ecb(&w.0, data, encrypt),
            BlockCipher::Kuznyechik(k) => crate_ecb(k.as_ref(), data, encrypt),
            BlockCipher::Blowfish(k) => crate_ecb(k.as_ref(), data, encrypt),
            BlockCipher::Des3Ede(k) => crate_ecb(k.as_ref(), data, encrypt),
        }
    }

    /// How many independent blocks the backend wants at once to reach full speed (the width
    /// of lockstep CBC encryption).
    pub(crate) fn lanes(&self) -> usize {
        match self {
            #[cfg(target_arch = "x86_64")]
            BlockCipher::AesVaes(_) => 16,
            BlockCipher::Aes128(_) | BlockCipher::Aes192(_) | BlockCipher::Aes256(_) => 8,
            BlockCipher::Serpent(k) => k.lanes(),
            BlockCipher::Twofish(k) => k.lanes(),
            _ => 1,
        }
    }

    /// Encrypt one block in place; `block.len()` must equal the block size.
    pub(crate) fn encrypt_block(&self, block: &mut [u8]) {
        debug_assert_eq!(block.len(), self.block_size());
        self.ecb(block, true)
    }

    /// Decrypt one block in place; `block.len()` must equal the block size.
    pub(crate) fn decrypt_block(&self, block: &mut [u8]) {
        debug_assert_eq!(block.len(), self.block_size());
        self.ecb(block, false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_lengths() {
        for fast in [false, true] {
            assert!(BlockCipher::new(CipherAlg::Aes, &[0; 16], fast).is_ok());
            assert!(BlockCipher::new(CipherAlg::Aes, &[0; 24], fast).is_ok());
            assert!(BlockCipher::new(CipherAlg::Aes, &[0; 32], fast).is_ok());
            assert!(BlockCipher::new(CipherAlg::Aes, &[0; 20], fast).is_err());
            assert!(BlockCipher::new(CipherAlg::Serpent, &[0; 20], fast).is_ok());
            assert!(BlockCipher::new(CipherAlg::Twofish, &[0; 20], fast).is_err());
            assert!(BlockCipher::new(CipherAlg::Cast5, &[0; 5], fast).is_ok());
            assert!(BlockCipher::new(CipherAlg::Cast5, &[0; 17], fast).is_err());
            assert!(BlockCipher::new(CipherAlg::Camellia, &[0; 24], fast).is_ok());
        }
        assert!(CipherAlg::from_name("AES").is_err());
    }

    #[test]
    fn kuznyechik_known_answer() {
        // GOST R 34.12-2015, appendix A.1.
        let key = hex::decode("8899aabbccddeeff0011223344556677fedcba98765432100123456789abcdef")
            .unwrap();
        let c = BlockCipher::new(CipherAlg::Kuznyechik, &key, true).unwrap();
        let mut b = hex::decode("1122334455667700ffeeddccbbaa9988").unwrap();
        c.encrypt_block(&mut b);
        assert_eq!(hex::encode(&b), "7f679d90bebc24305a468d42b9d4edcd");
        c.decrypt_block(&mut b);
        assert_eq!(hex::encode(&b), "1122334455667700ffeeddccbbaa9988");
        assert!(BlockCipher::new(CipherAlg::Kuznyechik, &key[..16], true).is_err());
    }

    #[test]
    fn blowfish_and_des3_ede_known_answers() {
        // Eric Young's Blowfish vectors (Schneier's set): all-zero and all-one key and block.
        for (key, pt, ct) in [
            ("0000000000000000", "0000000000000000", "4ef997456198dd78"),
            ("ffffffffffffffff", "ffffffffffffffff", "51866fd5b85ecb8a"),
        ] {
            let c =
                BlockCipher::new(CipherAlg::Blowfish, &hex::decode(key).unwrap(), true).unwrap();
            let mut b = hex::decode(pt).unwrap();
            c.encrypt_block(&mut b);
            assert_eq!(hex::encode(&b), ct);
            c.decrypt_block(&mut b);
            assert_eq!(hex::encode(&b), pt);
        }
        // NIST SP 800-67 Rev. 1, the TDEA example's first block ("The qufc").
        let key = hex::decode("0123456789abcdef23456789abcdef01456789abcdef0123").unwrap();
        let c = BlockCipher::new(CipherAlg::Des3Ede, &key, true).unwrap();
        let mut b = hex::decode("5468652071756663").unwrap();
        c.encrypt_block(&mut b);
        assert_eq!(hex::encode(&b), "a826fd8ce53b855f");
        assert!(BlockCipher::new(CipherAlg::Des3Ede, &key[..16], true).is_err());
        assert!(BlockCipher::new(CipherAlg::Blowfish, &[0; 3], true).is_err());
        assert!(BlockCipher::new(CipherAlg::Blowfish, &[0; 57], true).is_err());
        assert!(BlockCipher::new(CipherAlg::Blowfish, &[0; 4], true).is_ok());
    }

    #[test]
    fn fips197_known_answer() {
        // FIPS-197 Appendix C.1 (AES-128).
        let key: Vec<u8> = (0u8..16).collect();
        for fast in [false, true] {
            let c = BlockCipher::new(CipherAlg::Aes, &key, fast).unwrap();
            let mut b = hex::decode("00112233445566778899aabbccddeeff").unwrap();
            c.encrypt_block(&mut b);
            assert_eq!(hex::encode(&b), "69c4e0d86a7b0430d8cdb78070b4c55a");
            c.decrypt_block(&mut b);
            assert_eq!(hex::encode(&b), "00112233445566778899aabbccddeeff");
        }
    }
}
