//! Test-only: OpenSSL as the oracle for the hash-based primitives.

use crate::hash::HashAlg;
use openssl::hash::MessageDigest;

/// OpenSSL's digest for `hash`; `None` where OpenSSL has none (the truncated Whirlpools) or
/// this OpenSSL build lacks it.
pub(crate) fn openssl_md(hash: HashAlg) -> Option<MessageDigest> {
    Some(match hash {
        HashAlg::Sha1 => MessageDigest::sha1(),
        HashAlg::Sha224 => MessageDigest::sha224(),
        HashAlg::Sha256 => MessageDigest::sha256(),
        HashAlg::Sha384 => MessageDigest::sha384(),
        HashAlg::Sha512 => MessageDigest::sha512(),
        HashAlg::Ripemd160 => MessageDigest::ripemd160(),
        HashAlg::Whirlpool => {
            // OpenSSL 3 keeps whirlpool in the legacy provider.
            static LEGACY: std::sync::OnceLock<Option<openssl::provider::Provider>> =
                std::sync::OnceLock::new();
            LEGACY.get_or_init(|| openssl::provider::Provider::try_load(None, "legacy", true).ok());
            MessageDigest::from_name("whirlpool")?
        }
        HashAlg::Sha3_224 => MessageDigest::sha3_224(),
        HashAlg::Sha3_256 => MessageDigest::sha3_256(),
        HashAlg::Sha3_384 => MessageDigest::sha3_384(),
        HashAlg::Sha3_512 => MessageDigest::sha3_512(),
        HashAlg::Sm3 => MessageDigest::from_name("sm3")?,
        HashAlg::Wp256 | HashAlg::Wp384 => return None,
    })
}
