//! The LUKS anti-forensic information splitter (LUKS1 spec §2.4, cryptsetup
//! `lib/luks1/af.c`), used unchanged by LUKS1 and LUKS2 keyslots.
//!
//! `split(D, n)`: stripes `s1..s(n-1)` are random; `d0 = 0…0`;
//! `d_k = H1(d_(k-1) XOR s_k)`; the last stripe is `s_n = d_(n-1) XOR D`.
//! `merge` recomputes `d_(n-1)` from the first `n-1` stripes and returns `s_n XOR d_(n-1)`.
//!
//! The diffuser H1 cuts its buffer into digest-sized blocks plus a final partial
//! block and replaces block `i` by `hash(BE32(i) || block_i)`, truncated to the
//! block's length.

use crate::{hash::HashAlg, random, CryptoError, Result, SecretBuf};
use digest::Digest;
use zeroize::Zeroize;

/// Sector size the split material is padded to on disk.
pub const SECTOR_SIZE: usize = 512;
/// The stripe count every LUKS1/LUKS2 keyslot uses (and cryptsetup requires).
pub const LUKS_STRIPES: u32 = 4000;
/// Largest stripe count accepted (LUKS only ever uses [`LUKS_STRIPES`]).
pub const MAX_STRIPES: u32 = LUKS_STRIPES;
/// Largest key accepted, in bytes (4096 bits; real volume keys are at most a few
/// hundred bytes). With [`MAX_STRIPES`] this bounds split material to 2 048 000 bytes,
/// whatever a hostile header claims.
pub const MAX_KEY_LEN: usize = 512;

/// Validate a key length and stripe count; returns the material length `key_len * stripes`.
fn material_len(key_len: usize, stripes: u32) -> Result<usize> {
    if key_len == 0 {
        return Err(CryptoError::InvalidInput(
            "AF key length must not be zero".into(),
        ));
    }
    if key_len > MAX_KEY_LEN {
        return Err(CryptoError::Limit(format!(
            "AF key length {key_len} exceeds the maximum of {MAX_KEY_LEN} bytes"
        )));
    }
    if stripes == 0 {
        return Err(CryptoError::InvalidInput(
            "AF stripe count must not be zero".into(),
        ));
    }
    if stripes > MAX_STRIPES {
        return Err(CryptoError::Limit(format!(
            "AF stripe count {stripes} exceeds the maximum of {MAX_STRIPES}"
        )));
    }
    // Both factors are bounded above, so this cannot overflow.
    Ok(key_len * stripes as usize)
}

/// Split `key` into `key.len() * stripes` bytes of anti-forensic material: stripes
/// 1..n-1 are random ([`random::fill`]), the last one is `key XOR d_(n-1)` with the H1
/// diffuser over `hash`.
///
/// `key` must be 1..=[`MAX_KEY_LEN`] bytes and `stripes` 1..=[`MAX_STRIPES`]. The
/// result is not padded; on disk it occupies [`split_size_bytes`] bytes.
pub fn split(key: &[u8], stripes: u32, hash: HashAlg) -> Result<SecretBuf> {
    let total = material_len(key.len(), stripes)?;
    let diffuse = diffuser(hash)?;
    let n = key.len();
    let random_len = total - n;
    let mut material = SecretBuf::zeroed(total);
    let mut d = SecretBuf::zeroed(n);
    {
        let buf = material.as_mut_bytes();
        random::fill(&mut buf[..random_len])?;
        for stripe in buf[..random_len].chunks_exact(n) {
            xor_into(d.as_mut_bytes(), stripe);
            diffuse(d.as_mut_bytes());
        }
        for ((out, k), dk) in buf[random_len..].iter_mut().zip(key).zip(d.as_bytes()) {
            *out = k ^ dk;
        }
    }
    Ok(material)
}

/// Recover a `key_len`-byte key from anti-forensic `material` made of `stripes`
/// stripes (at least `key_len * stripes` bytes; extra bytes, e.g. sector padding,
/// are ignored).
///
/// `key_len` must be 1..=[`MAX_KEY_LEN`] and `stripes` 1..=[`MAX_STRIPES`]
/// ([`CryptoError::Limit`] otherwise, before any work).
pub fn merge(material: &[u8], key_len: usize, stripes: u32, hash: HashAlg) -> Result<SecretBuf> {
    let total = material_len(key_len, stripes)?;
    let diffuse = diffuser(hash)?;
    if material.len() < total {
        return Err(CryptoError::InvalidInput(format!(
            "AF material of {} bytes is shorter than {key_len} * {stripes}",
            material.len()
        )));
    }
    let random_len = total - key_len;
    let mut d = SecretBuf::zeroed(key_len);
    for stripe in material[..random_len].chunks_exact(key_len) {
        xor_into(d.as_mut_bytes(), stripe);
        diffuse(d.as_mut_bytes());
    }
    // d_(n-1) XOR s_n = key, computed in place.
    xor_into(d.as_mut_bytes(), &material[random_len..total]);
    Ok(d)
}

/// Size in bytes of split material for a `key_len`-byte key and `stripes` stripes,
/// rounded up to whole 512-byte sectors (cryptsetup `AF_split_sectors(...) * 512`).
/// Saturates (at the largest sector multiple) instead of overflowing for absurd inputs.
pub fn split_size_bytes(key_len: usize, stripes: u32) -> usize {
    key_len
        .saturating_mul(stripes as usize)
        .checked_next_multiple_of(SECTOR_SIZE)
        .unwrap_or(usize::MAX / SECTOR_SIZE * SECTOR_SIZE)
}

fn xor_into(dst: &mut [u8], src: &[u8]) {
    for (d, s) in dst.iter_mut().zip(src) {
        *d ^= s;
    }
}

/// The H1 diffuser for `hash`, working in place. The kernel-only truncated whirlpool
/// names `wp256`/`wp384` are refused, as by cryptsetup's userspace crypto backends.
fn diffuser(hash: HashAlg) -> Result<fn(&mut [u8])> {
    Ok(match hash {
        HashAlg::Sha1 => diffuse_with::<sha1::Sha1>,
        HashAlg::Sha224 => diffuse_with::<sha2::Sha224>,
        HashAlg::Sha256 => diffuse_with::<sha2::Sha256>,
        HashAlg::Sha384 => diffuse_with::<sha2::Sha384>,
        HashAlg::Sha512 => diffuse_with::<sha2::Sha512>,
        HashAlg::Ripemd160 => diffuse_with::<ripemd::Ripemd160>,
        HashAlg::Whirlpool => diffuse_with::<whirlpool::Whirlpool>,
        HashAlg::Sha3_224 => diffuse_with::<sha3::Sha3_224>,
        HashAlg::Sha3_256 => diffuse_with::<sha3::Sha3_256>,
        HashAlg::Sha3_384 => diffuse_with::<sha3::Sha3_384>,
        HashAlg::Sha3_512 => diffuse_with::<sha3::Sha3_512>,
        HashAlg::Sm3 => diffuse_with::<sm3::Sm3>,
        HashAlg::Wp256 | HashAlg::Wp384 => {
            return Err(CryptoError::Unsupported(format!(
                "AF splitter with hash {hash}"
            )))
        }
    })
}

fn diffuse_with<D: Digest>(buf: &mut [u8]) {
    let digest_size = <D as Digest>::output_size();
    for (i, block) in buf.chunks_mut(digest_size).enumerate() {
        let mut h = D::new();
        // At most MAX_KEY_LEN bytes, so the block index always fits in 32 bits.
        h.update((i as u32).to_be_bytes());
        h.update(&*block);
        let mut out = h.finalize();
        let len = block.len();
        block.copy_from_slice(&out[..len]);
        out[..].zeroize();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::openssl_oracle::openssl_md;
    use openssl::hash::{hash as ossl_hash, MessageDigest};

    /// Independent H1 from the spec text, with OpenSSL's hash: block i ->
    /// H(BE32(i) || block), the last partial block truncated.
    fn reference_h1(md: MessageDigest, buf: &[u8]) -> Vec<u8> {
        let ds = md.size();
        let mut out = Vec::with_capacity(buf.len());
        let mut i: u32 = 0;
        let mut pos = 0;
        while pos < buf.len() {
            let end = (pos + ds).min(buf.len());
            let mut input = i.to_be_bytes().to_vec();
            input.extend_from_slice(&buf[pos..end]);
            let digest = ossl_hash(md, &input).unwrap();
            out.extend_from_slice(&digest[..end - pos]);
            pos = end;
            i += 1;
        }
        out
    }

    /// Independent AF_merge from the spec text.
    fn reference_merge(md: MessageDigest, material: &[u8], n: usize, stripes: usize) -> Vec<u8> {
        let mut d = vec![0u8; n];
        for k in 0..stripes - 1 {
            let s = &material[k * n..(k + 1) * n];
            let x: Vec<u8> = d.iter().zip(s).map(|(a, b)| a ^ b).collect();
            d = reference_h1(md, &x);
        }
        let last = &material[(stripes - 1) * n..stripes * n];
        d.iter().zip(last).map(|(a, b)| a ^ b).collect()
    }

    /// Deterministic, non-random "stripes".
    fn fixed_material(len: usize, seed: u8) -> Vec<u8> {
        (0..len)
            .map(|i| (i as u32).wrapping_mul(2654435761).to_le_bytes()[1] ^ seed)
            .collect()
    }

    #[test]
    fn merge_matches_independent_reference() {
        let mut checked = 0;
        for hash in HashAlg::ALL {
            let Some(md) = openssl_md(hash) else {
                lukskit_testkit::skip_or_fail(
                    "merge_matches_independent_reference",
                    &format!(
                        "OpenSSL has no {hash} here (whirlpool is in OpenSSL 3's legacy \
                         provider: apt-get install openssl libssl3)"
                    ),
                );
                continue;
            };
            // Key sizes below, equal to and above the digest size, with partial blocks.
            for (n, stripes) in [
                (16usize, 4000u32),
                (32, 4000),
                (64, 4000),
                (20, 7),
                (65, 3),
                (1, 2),
            ] {
                let material = fixed_material(n * stripes as usize + 100, n as u8);
                let got = merge(&material, n, stripes, hash).unwrap();
                let want = reference_merge(md, &material, n, stripes as usize);
                assert_eq!(got.as_bytes(), &want[..], "{hash} n={n} stripes={stripes}");
                checked += 1;
            }
        }
        assert!(checked >= 6 * 6, "too few hashes available in OpenSSL");
    }

    #[test]
    fn h1_matches_reference() {
        for hash in [HashAlg::Sha1, HashAlg::Sha256, HashAlg::Sha512] {
            let md = openssl_md(hash).unwrap();
            for len in [1usize, 19, 20, 21, 32, 63, 64, 65, 130] {
                let mut buf = fixed_material(len, 7);
                let want = reference_h1(md, &buf);
                diffuser(hash).unwrap()(&mut buf);
                assert_eq!(buf, want, "{hash} len={len}");
            }
        }
    }

    #[test]
    fn split_then_merge_roundtrip() {
        for hash in HashAlg::ALL {
            for n in [16usize, 32, 64, 20, 48, 1, MAX_KEY_LEN] {
                let key = fixed_material(n, 0x5a);
                let material = split(&key, LUKS_STRIPES, hash).unwrap();
                assert_eq!(material.len(), n * LUKS_STRIPES as usize);
                // Padding to sectors, as on disk, is ignored by merge.
                let mut padded = material.as_bytes().to_vec();
                padded.resize(split_size_bytes(n, LUKS_STRIPES), 0xee);
                let back = merge(&padded, n, LUKS_STRIPES, hash).unwrap();
                assert_eq!(back.as_bytes(), &key[..], "{hash} n={n}");
                // The random stripes (all but the last) really are random: not all zero.
                // Checked over all of them, so a 1-byte key cannot hit a 1-in-256 zero stripe.
                let random_part = n * (LUKS_STRIPES as usize - 1);
                assert!(material.as_bytes()[..random_part].iter().any(|&b| b != 0));
            }
        }
    }

    /// split() output merged by the independent reference yields the key too.
    #[test]
    fn split_is_mergeable_by_reference() {
        let md = openssl_md(HashAlg::Sha256).unwrap();
        let key = fixed_material(64, 1);
        let material = split(&key, LUKS_STRIPES, HashAlg::Sha256).unwrap();
        assert_eq!(reference_merge(md, material.as_bytes(), 64, 4000), key);
        // Two splits of the same key differ (fresh randomness).
        let again = split(&key, LUKS_STRIPES, HashAlg::Sha256).unwrap();
        assert_ne!(material.as_bytes(), again.as_bytes());
    }

    #[test]
    fn single_stripe_is_the_key() {
        let key = fixed_material(32, 3);
        let m = split(&key, 1, HashAlg::Sha256).unwrap();
        assert_eq!(m.as_bytes(), &key[..]);
        assert_eq!(
            merge(&key, 32, 1, HashAlg::Sha256).unwrap().as_bytes(),
            &key[..]
        );
    }

    #[test]
    fn sizes() {
        // LUKS2 spec / cryptsetup geometry: 16 B key -> 125 sectors, 32 B -> 250, 64 B -> 500.
        assert_eq!(split_size_bytes(16, 4000), 64000);
        assert_eq!(split_size_bytes(32, 4000), 128000);
        assert_eq!(split_size_bytes(64, 4000), 256000);
        assert_eq!(split_size_bytes(20, 7), 512);
        assert_eq!(split_size_bytes(0, 4000), 0);
        assert_eq!(
            split_size_bytes(usize::MAX, u32::MAX),
            usize::MAX / 512 * 512
        );
    }

    #[test]
    fn refuses_bad_sizes() {
        let limit = |r: Result<SecretBuf>| matches!(r, Err(CryptoError::Limit(_)));
        let m = vec![0u8; 1 << 20];
        assert!(limit(merge(&m, MAX_KEY_LEN + 1, 4000, HashAlg::Sha256)));
        assert!(limit(merge(&m, 32, MAX_STRIPES + 1, HashAlg::Sha256)));
        assert!(limit(merge(&m, usize::MAX, u32::MAX, HashAlg::Sha256)));
        assert!(limit(split(&[0u8; MAX_KEY_LEN + 1], 4000, HashAlg::Sha256)));
        assert!(limit(split(&[0u8; 32], 4001, HashAlg::Sha256)));
        assert!(merge(&m, 0, 4000, HashAlg::Sha256).is_err());
        assert!(merge(&m, 32, 0, HashAlg::Sha256).is_err());
        assert!(split(&[], 4000, HashAlg::Sha256).is_err());
        assert!(split(&[0u8; 32], 0, HashAlg::Sha256).is_err());
        for hash in [HashAlg::Wp256, HashAlg::Wp384] {
            assert!(matches!(
                split(&[1u8; 32], 4000, hash),
                Err(CryptoError::Unsupported(_))
            ));
            assert!(matches!(
                merge(&m, 32, 4000, hash),
                Err(CryptoError::Unsupported(_))
            ));
        }
        // Material shorter than key_len * stripes.
        assert!(matches!(
            merge(&m[..32 * 4000 - 1], 32, 4000, HashAlg::Sha256),
            Err(CryptoError::InvalidInput(_))
        ));
    }
}
