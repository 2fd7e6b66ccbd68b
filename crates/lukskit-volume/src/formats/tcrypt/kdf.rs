//! The header-key derivation of TrueCrypt and VeraCrypt: which PBKDF2 variants are tried (in
//! cryptsetup's order, `tcrypt_kdf` of lib/tcrypt/tcrypt.c), their iteration counts (fixed
//! for TrueCrypt; for VeraCrypt fixed, or from the PIM), and the PBKDF2 input: the
//! passphrase added byte by byte to the key-file pool.

use super::{HDR_KEY_LEN, SALT_LEN};
use crate::formats::OtherFormatError;
use crate::Result;
use lukskit_crypto::hash::HashAlg;
use lukskit_crypto::kdf::Pbkdf2Prf;
use lukskit_crypto::SecretBuf;

/// TrueCrypt's key-file pool (and longest passphrase).
pub const TCRYPT_POOL_LEN: usize = 64;
/// VeraCrypt's key-file pool and longest passphrase, used when the passphrase is longer than
/// TrueCrypt's 64 bytes.
pub const VCRYPT_POOL_LEN: usize = 128;
/// Only the first MiB of each key file counts.
pub const KEYFILE_MAX: usize = 1024 * 1024;

/// One PBKDF2 variant of the table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KdfVariant {
    /// Only with legacy modes (cryptsetup's command line always allows them).
    pub legacy: bool,
    /// VeraCrypt's (tried only when VeraCrypt is not disabled).
    pub veracrypt: bool,
    /// The hash, by cryptsetup's name.
    pub hash: &'static str,
    /// Iterations without a PIM.
    pub iterations: u32,
    /// With a PIM: `pim_const + pim_mult * pim`.
    pub pim_const: u32,
    /// See `pim_const`.
    pub pim_mult: u32,
}

const fn kdf(
    legacy: bool,
    veracrypt: bool,
    hash: &'static str,
    iterations: u32,
    c: u32,
    m: u32,
) -> KdfVariant {
    KdfVariant {
        legacy,
        veracrypt,
        hash,
        iterations,
        pim_const: c,
        pim_mult: m,
    }
}

/// The variants in the order cryptsetup 2.6.1 tries them.
pub static KDFS: &[KdfVariant] = &[
    kdf(false, false, "ripemd160", 2000, 0, 0),
    kdf(false, false, "ripemd160", 1000, 0, 0),
    kdf(false, false, "sha512", 1000, 0, 0),
    kdf(false, false, "whirlpool", 1000, 0, 0),
    kdf(true, false, "sha1", 2000, 0, 0),
    kdf(false, true, "sha512", 500_000, 15000, 1000),
    kdf(false, true, "whirlpool", 500_000, 15000, 1000),
    kdf(false, true, "sha256", 500_000, 15000, 1000), // VeraCrypt 1.0f
    kdf(false, true, "sha256", 200_000, 0, 2048),     // boot only
    kdf(false, true, "ripemd160", 655_331, 15000, 1000),
    kdf(false, true, "ripemd160", 327_661, 0, 2048), // boot only
    kdf(false, true, "stribog512", 500_000, 15000, 1000),
];

impl KdfVariant {
    /// The iteration count with `pim` (a VeraCrypt PIM given on the command line): computed in
    /// 32-bit unsigned arithmetic as cryptsetup does (a huge PIM wraps around).
    pub fn iterations_with(&self, pim: Option<u32>) -> u32 {
        match pim {
            Some(p) if self.veracrypt => self.pim_const.wrapping_add(self.pim_mult.wrapping_mul(p)),
            _ => self.iterations,
        }
    }

    /// The hash as a [`HashAlg`] (`stribog512` is none: see [`derive()`]).
    pub fn hash_alg(&self) -> Option<HashAlg> {
        HashAlg::from_name(self.hash).ok()
    }
}

/// Which variants a request tries: `hash` limits to that hash (`-h`), TrueCrypt-only skips
/// VeraCrypt's, and a PIM (with VeraCrypt) skips TrueCrypt's.
pub fn variants(hash: Option<&str>, veracrypt: bool, pim: Option<u32>) -> Vec<(usize, KdfVariant)> {
    KDFS.iter()
        .copied()
        .enumerate()
        .filter(|(_, k)| hash.is_none_or(|h| h == k.hash))
        .filter(|(_, k)| veracrypt || !k.veracrypt)
        .filter(|(_, k)| !(veracrypt && pim.is_some() && !k.veracrypt))
        .collect()
}

/// The PBKDF2 input: key files mixed into a pool by their running CRC-32, the passphrase
/// added byte by byte. With key files the whole pool is the input; without, only the
/// passphrase's length. A passphrase longer than 64 bytes makes VeraCrypt's pool 128 bytes
/// (and is refused by TrueCrypt).
pub fn pbkdf_input(
    passphrase: &[u8],
    key_files: &[SecretBuf],
    veracrypt: bool,
) -> Result<SecretBuf> {
    let max = if veracrypt && passphrase.len() > TCRYPT_POOL_LEN {
        VCRYPT_POOL_LEN
    } else {
        TCRYPT_POOL_LEN
    };
    if passphrase.len() > max {
        return Err(OtherFormatError::PassphraseTooLong { max }.into());
    }
    let mut pool = SecretBuf::zeroed(VCRYPT_POOL_LEN);
    let p = pool.as_mut_bytes();
    for file in key_files {
        let data = &file.as_bytes()[..file.len().min(KEYFILE_MAX)];
        let mut crc = !0u32;
        let mut j = 0usize;
        for b in data {
            crc = super::crc::update(crc, std::slice::from_ref(b));
            for byte in crc.to_be_bytes() {
                p[j] = p[j].wrapping_add(byte);
                j += 1;
            }
            j %= max;
        }
    }
    for (dst, &b) in p.iter_mut().zip(passphrase) {
        *dst = dst.wrapping_add(b);
    }
    let len = if key_files.is_empty() {
        passphrase.len()
    } else {
        max
    };
    Ok(SecretBuf::from_slice(&p[..len]))
}

/// The PBKDF2 pseudo-random function of `variant`; `None` for a hash lukskit lacks.
pub fn prf(variant: &KdfVariant) -> Option<Pbkdf2Prf> {
    if variant.hash == "stribog512" {
        return Some(Pbkdf2Prf::HmacStribog512);
    }
    variant.hash_alg().map(Pbkdf2Prf::Hmac)
}

/// PBKDF2 of `input` and the header's salt with one variant: the 192-byte header key, `None`
/// where the count is 0 (cryptsetup skips such a variant). `stribog512` is PBKDF2 with
/// HMAC-Streebog-512 (VeraCrypt's; cryptsetup has it where its crypto backend does, e.g.
/// libgcrypt's `stribog512`, not Debian's OpenSSL build).
pub fn derive(
    variant: &KdfVariant,
    input: &[u8],
    salt: &[u8; SALT_LEN],
    pim: Option<u32>,
) -> Option<SecretBuf> {
    let mut key = SecretBuf::zeroed(HDR_KEY_LEN);
    let iterations = variant.iterations_with(pim);
    if variant.hash == "stribog512" {
        lukskit_crypto::kdf::pbkdf2_stribog512(input, salt, iterations, key.as_mut_bytes()).ok()?;
        return Some(key);
    }
    let hash = variant.hash_alg()?;
    lukskit_crypto::kdf::pbkdf2(hash, input, salt, iterations, key.as_mut_bytes()).ok()?;
    Some(key)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iterations_follow_the_pim_rules() {
        let sha512 = KDFS[5];
        assert_eq!(sha512.iterations_with(None), 500_000);
        assert_eq!(sha512.iterations_with(Some(1234)), 15000 + 1234 * 1000);
        let boot = KDFS[8];
        assert_eq!(boot.iterations_with(Some(98)), 98 * 2048);
        // TrueCrypt's counts are fixed.
        assert_eq!(KDFS[2].iterations_with(Some(1234)), 1000);
        // 32-bit arithmetic, as cryptsetup.
        assert_eq!(
            sha512.iterations_with(Some(u32::MAX)),
            15000u32.wrapping_sub(1000)
        );
    }

    #[test]
    fn variants_respect_hash_veracrypt_and_pim() {
        let all = variants(None, true, None);
        assert_eq!(all.len(), KDFS.len());
        let tc = variants(None, false, None);
        assert!(tc.iter().all(|(_, k)| !k.veracrypt));
        assert_eq!(tc.len(), 5);
        let pim = variants(None, true, Some(5));
        assert!(pim.iter().all(|(_, k)| k.veracrypt));
        let sha = variants(Some("sha256"), true, None);
        assert_eq!(sha.iter().map(|(i, _)| *i).collect::<Vec<_>>(), vec![7, 8]);
    }

    /// PBKDF2-HMAC-Streebog-512 against libgcrypt (cryptsetup's gcrypt backend, whose
    /// `stribog512` opens VeraCrypt volumes): `scripts/stribog-oracle.py`. The first vector is
    /// also R 50.1.111-2016's (P = "password", S = "salt", c = 1).
    #[test]
    fn stribog512_matches_libgcrypt() {
        let cases: [(&[u8], &[u8], u32, &str); 3] = [
            (b"password", b"salt", 1, "64770af7f748c3b1c9ac831dbcfd85c26111b30a8a657ddc3056b80ca73e040d2854fd36811f6d825cc4ab66ec0a68a490a9e5cf5156b3a2b7eecddbf9a16b47"),
            (b"password", b"salt", 2, "5a585bafdfbb6e8830d6d68aa3b43ac00d2e4aebce01c9b31c2caed56f0236d4d34b2b8fbd2c4e89d54d46f50e47d45bbac301571743119e8d3c42ba66d348de"),
            (b"password", b"salt", 4096, "e52deb9a2d2aaff4e2ac9d47a41f34c20376591c67807f0477e32549dc341bc7867c09841b6d58e29d0347c996301d55df0d34e47cf68f4e3c2cdaf1d9ab86c3"),
        ];
        for (pw, salt, it, want) in cases {
            let mut out = [0u8; 64];
            lukskit_crypto::kdf::pbkdf2_stribog512(pw, salt, it, &mut out).unwrap();
            assert_eq!(hex::encode(out), want, "{it} iterations");
        }
        // A whole 192-byte header key, through the variant table's path.
        let salt: [u8; SALT_LEN] = std::array::from_fn(|i| i as u8);
        let variant = KdfVariant {
            iterations: 1000,
            ..KDFS[11]
        };
        assert_eq!(variant.hash, "stribog512");
        let key = derive(&variant, b"aaaaaaaaaaaa", &salt, None).unwrap();
        assert_eq!(
            hex::encode(key.as_bytes()),
            "08519836a210487fb5f24ff01b5a91f3232e353907ad37727930fa44496df661\
             fe1c99b44309222416dfc535163a0441501d94a1639f866ceea8b258f461bec0\
             ef81e74a0a4bd974e7a3d806f65455a844362b44d5e2af7c428ba2adf1dab023\
             82ee4e2496d6901a698402381190dab3300324567f5ade10e0e7e24d555efb0a\
             e7aa01364731aab629c18447dcc9b20e8136ecb65abb029e32106d87d5d2775f\
             206e9389a0301359ab840f6ff26ab973e419c8932decb82aafa20bbe3aa37460"
        );
    }

    #[test]
    fn passphrase_limits() {
        assert!(pbkdf_input(&[b'a'; 64], &[], false).is_ok());
        assert!(pbkdf_input(&[b'a'; 65], &[], false).is_err());
        assert_eq!(pbkdf_input(&[b'a'; 100], &[], true).unwrap().len(), 100);
        assert!(pbkdf_input(&[b'a'; 129], &[], true).is_err());
        // With key files the whole pool is the input.
        let kf = [SecretBuf::from_slice(b"x")];
        assert_eq!(pbkdf_input(b"ab", &kf, true).unwrap().len(), 64);
        assert_eq!(pbkdf_input(&[b'a'; 65], &kf, true).unwrap().len(), 128);
    }

    #[test]
    fn pool_of_one_byte_key_file() {
        // One byte 'x': the CRC register after it, big-endian, added to the pool's start.
        let crc = crate::formats::crc::update(!0, b"x");
        let kf = [SecretBuf::from_slice(b"x")];
        let pool = pbkdf_input(b"", &kf, false).unwrap();
        assert_eq!(&pool.as_bytes()[..4], &crc.to_be_bytes());
        assert!(pool.as_bytes()[4..].iter().all(|&b| b == 0));
    }
}
