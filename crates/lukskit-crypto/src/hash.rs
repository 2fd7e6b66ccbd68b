//! Hash functions by the names cryptsetup and the kernel use.

use crate::{CryptoError, Result};
use digest::Digest;

/// A hash algorithm usable for PBKDF2, the AF splitter, digests and ESSIV.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum HashAlg {
    /// SHA-1 (20 bytes).
    Sha1,
    /// SHA-224 (28 bytes).
    Sha224,
    /// SHA-256 (32 bytes).
    Sha256,
    /// SHA-384 (48 bytes).
    Sha384,
    /// SHA-512 (64 bytes).
    Sha512,
    /// RIPEMD-160 (20 bytes).
    Ripemd160,
    /// Whirlpool (64 bytes).
    Whirlpool,
    /// Whirlpool truncated to 32 bytes (the kernel's `wp256`, seen in ESSIV specs).
    Wp256,
    /// Whirlpool truncated to 48 bytes (the kernel's `wp384`).
    Wp384,
    /// SHA3-224 (28 bytes).
    Sha3_224,
    /// SHA3-256 (32 bytes).
    Sha3_256,
    /// SHA3-384 (48 bytes).
    Sha3_384,
    /// SHA3-512 (64 bytes).
    Sha3_512,
    /// SM3 (32 bytes).
    Sm3,
}

/// The digest of the concatenation of `parts` with hash `D`.
fn digest_of<D: Digest>(parts: &[&[u8]]) -> Vec<u8> {
    let mut h = D::new();
    for p in parts {
        h.update(p);
    }
    h.finalize().to_vec()
}

/// Hashes that cryptsetup's crypto backend (OpenSSL) offers and that lukskit takes only where
/// a LUKS2 header names one for its own checksum (`checksum_alg`), as cryptsetup 2.6.1 does:
/// never for keys, key slots or digests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ChecksumOnlyHash {
    /// MD5 (16 bytes).
    Md5,
    /// BLAKE2b-512 (64 bytes), OpenSSL's `blake2b512`.
    Blake2b512,
}

impl ChecksumOnlyHash {
    /// Look one up by its OpenSSL name (`md5`, `blake2b512`), case-insensitively.
    pub fn from_name(name: &str) -> Option<Self> {
        match name.to_ascii_lowercase().as_str() {
            "md5" => Some(ChecksumOnlyHash::Md5),
            "blake2b512" => Some(ChecksumOnlyHash::Blake2b512),
            _ => None,
        }
    }

    /// Digest size in bytes.
    pub fn digest_size(self) -> usize {
        match self {
            ChecksumOnlyHash::Md5 => 16,
            ChecksumOnlyHash::Blake2b512 => 64,
        }
    }

    /// The digest of the concatenation of `parts`.
    pub fn digest(self, parts: &[&[u8]]) -> Vec<u8> {
        match self {
            ChecksumOnlyHash::Md5 => digest_of::<md5::Md5>(parts),
            ChecksumOnlyHash::Blake2b512 => digest_of::<blake2::Blake2b512>(parts),
        }
    }
}

impl HashAlg {
    /// All supported hashes, in the order `benchmark` prints PBKDF2 lines for the common ones.
    pub const ALL: [HashAlg; 7] = [
        HashAlg::Sha1,
        HashAlg::Sha256,
        HashAlg::Sha512,
        HashAlg::Ripemd160,
        HashAlg::Whirlpool,
        HashAlg::Sha224,
        HashAlg::Sha384,
    ];

    /// Look a hash up by name, case-insensitively, as cryptsetup does (`sha256`, `SHA256`,
    /// `rmd160`/`ripemd160`, `wp512`/`whirlpool`).
    pub fn from_name(name: &str) -> Result<Self> {
        let n = name.to_ascii_lowercase();
        Ok(match n.as_str() {
            "sha1" => HashAlg::Sha1,
            "sha224" => HashAlg::Sha224,
            "sha256" => HashAlg::Sha256,
            "sha384" => HashAlg::Sha384,
            "sha512" => HashAlg::Sha512,
            "ripemd160" | "rmd160" => HashAlg::Ripemd160,
            "whirlpool" | "wp512" => HashAlg::Whirlpool,
            "wp256" => HashAlg::Wp256,
            "wp384" => HashAlg::Wp384,
            "sha3-224" => HashAlg::Sha3_224,
            "sha3-256" => HashAlg::Sha3_256,
            "sha3-384" => HashAlg::Sha3_384,
            "sha3-512" => HashAlg::Sha3_512,
            "sm3" => HashAlg::Sm3,
            _ => return Err(CryptoError::Unsupported(format!("hash {name}"))),
        })
    }

    /// The canonical name written into headers (`sha256`, `ripemd160`, `whirlpool`).
    pub fn name(self) -> &'static str {
        match self {
            HashAlg::Sha1 => "sha1",
            HashAlg::Sha224 => "sha224",
            HashAlg::Sha256 => "sha256",
            HashAlg::Sha384 => "sha384",
            HashAlg::Sha512 => "sha512",
            HashAlg::Ripemd160 => "ripemd160",
            HashAlg::Whirlpool => "whirlpool",
            HashAlg::Wp256 => "wp256",
            HashAlg::Wp384 => "wp384",
            HashAlg::Sha3_224 => "sha3-224",
            HashAlg::Sha3_256 => "sha3-256",
            HashAlg::Sha3_384 => "sha3-384",
            HashAlg::Sha3_512 => "sha3-512",
            HashAlg::Sm3 => "sm3",
        }
    }

    /// Digest length in bytes.
    pub fn digest_size(self) -> usize {
        match self {
            HashAlg::Sha1 | HashAlg::Ripemd160 => 20,
            HashAlg::Sha224 | HashAlg::Sha3_224 => 28,
            HashAlg::Sha256 | HashAlg::Wp256 | HashAlg::Sha3_256 | HashAlg::Sm3 => 32,
            HashAlg::Sha384 | HashAlg::Wp384 | HashAlg::Sha3_384 => 48,
            HashAlg::Sha512 | HashAlg::Whirlpool | HashAlg::Sha3_512 => 64,
        }
    }

    /// Hash the concatenation of `parts`.
    pub fn digest(self, parts: &[&[u8]]) -> Vec<u8> {
        match self {
            HashAlg::Sha1 => digest_of::<sha1::Sha1>(parts),
            HashAlg::Sha224 => digest_of::<sha2::Sha224>(parts),
            HashAlg::Sha256 => digest_of::<sha2::Sha256>(parts),
            HashAlg::Sha384 => digest_of::<sha2::Sha384>(parts),
            HashAlg::Sha512 => digest_of::<sha2::Sha512>(parts),
            HashAlg::Ripemd160 => digest_of::<ripemd::Ripemd160>(parts),
            HashAlg::Whirlpool => digest_of::<whirlpool::Whirlpool>(parts),
            HashAlg::Sha3_224 => digest_of::<sha3::Sha3_224>(parts),
            HashAlg::Sha3_256 => digest_of::<sha3::Sha3_256>(parts),
            HashAlg::Sha3_384 => digest_of::<sha3::Sha3_384>(parts),
            HashAlg::Sha3_512 => digest_of::<sha3::Sha3_512>(parts),
            HashAlg::Sm3 => digest_of::<sm3::Sm3>(parts),
            HashAlg::Wp256 | HashAlg::Wp384 => {
                let mut d = digest_of::<whirlpool::Whirlpool>(parts);
                d.truncate(self.digest_size());
                d
            }
        }
    }
}

impl std::fmt::Display for HashAlg {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_answers() {
        let cases = [
            (HashAlg::Sha1, "a9993e364706816aba3e25717850c26c9cd0d89d"),
            (
                HashAlg::Sha256,
                "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
            ),
            (
                HashAlg::Ripemd160,
                "8eb208f7e05d987a9b044a8e98c6b087f15a0bfc",
            ),
        ];
        for (h, want) in cases {
            assert_eq!(hex::encode(h.digest(&[b"a", b"bc"])), want, "{h}");
            assert_eq!(h.digest(&[b"abc"]).len(), h.digest_size());
        }
        assert_eq!(HashAlg::from_name("SHA256").unwrap(), HashAlg::Sha256);
        assert_eq!(HashAlg::from_name("wp512").unwrap(), HashAlg::Whirlpool);
        assert!(HashAlg::from_name("md4").is_err());
    }

    /// The plain-mode keys of upstream's password-hash-test (a 256-bit key is the hash of the
    /// passphrase, cut to 32 bytes) for the SHA-3 family and SM3.
    #[test]
    fn sha3_and_sm3_known_answers() {
        let cases = [
            (
                "sha3-224",
                "bbb7d56cc80a8c80e907f7d9240edc0be264aa173266b30918bc1065",
            ),
            (
                "sha3-256",
                "a5df4caae9fdb5dbacf667075b709a2f30a115c43168af332062b42d4b0da01f",
            ),
            (
                "sha3-384",
                "56f351f754c418892eab4009e5f85c8d5436a591014503563e9395b895526413",
            ),
            (
                "sha3-512",
                "59d06155d25dffdb982729de8dce9d7855ca094d8bab8124b347c40668477056",
            ),
            (
                "SM3",
                "a34fdd8e843802b31a262dce5b1f501bed68ef81520de14b39657aecffaf8a86",
            ),
        ];
        for (name, want) in cases {
            let h = HashAlg::from_name(name).unwrap();
            let d = h.digest(&[b"0123456789abcdef"]);
            assert_eq!(d.len(), h.digest_size());
            assert_eq!(hex::encode(&d[..want.len() / 2]), want, "{name}");
        }
    }
}
