//! The session cryptography of TPM 2.0 (TCG TPM 2.0 Part 1, "Key Derivation Functions",
//! "Session-based encryption", "Salted sessions"): KDFa, KDFe, AES-128-CFB parameter
//! encryption, HMAC-SHA256, and encrypting a session salt to the TPM's ECC (ECDH + KDFe) or
//! RSA (OAEP, label `SECRET`) key. Only SHA-256 sessions are used.

use crate::error::{Result, Tpm2Error};
use aes::cipher::{BlockCipherEncrypt, KeyInit};
use hmac::Mac;
use lukskit_crypto::SecretBuf;
use sha2::{Digest, Sha256};

/// SHA-256 of the concatenation of `parts`.
pub fn sha256(parts: &[&[u8]]) -> [u8; 32] {
    let mut h = Sha256::new();
    for p in parts {
        h.update(p);
    }
    h.finalize().into()
}

/// HMAC-SHA256 of the concatenation of `parts` under `key`.
pub fn hmac_sha256(key: &[u8], parts: &[&[u8]]) -> [u8; 32] {
    let mut m = <hmac::Hmac<Sha256>>::new_from_slice(key).expect("HMAC takes any key length");
    for p in parts {
        m.update(p);
    }
    m.finalize().into_bytes().into()
}

/// KDFa with SHA-256: `bits` bits from `key`, `label` (a NUL is appended), `u` and `v`.
pub fn kdfa(key: &[u8], label: &str, u: &[u8], v: &[u8], bits: u32) -> SecretBuf {
    let len = bits.div_ceil(8) as usize;
    let mut out = SecretBuf::zeroed(len);
    let mut done = 0;
    let mut i: u32 = 1;
    while done < len {
        let mut block = hmac_sha256(
            key,
            &[
                &i.to_be_bytes(),
                label.as_bytes(),
                &[0],
                u,
                v,
                &bits.to_be_bytes(),
            ],
        );
        let n = (len - done).min(32);
        out.as_mut_bytes()[done..done + n].copy_from_slice(&block[..n]);
        zeroize::Zeroize::zeroize(&mut block);
        done += n;
        i += 1;
    }
    out
}

/// KDFe with SHA-256: `bits` bits from the shared x coordinate `z`, `label` (a NUL is
/// appended), party U's and party V's x coordinates.
pub fn kdfe(z: &[u8], label: &str, u: &[u8], v: &[u8], bits: u32) -> SecretBuf {
    let len = bits.div_ceil(8) as usize;
    let mut out = SecretBuf::zeroed(len);
    let mut done = 0;
    let mut i: u32 = 1;
    while done < len {
        let mut block = sha256(&[&i.to_be_bytes(), z, label.as_bytes(), &[0], u, v]);
        let n = (len - done).min(32);
        out.as_mut_bytes()[done..done + n].copy_from_slice(&block[..n]);
        zeroize::Zeroize::zeroize(&mut block);
        done += n;
        i += 1;
    }
    out
}

/// AES-128 in CFB mode (full-block feedback), in place: `encrypt` or decrypt `data` with
/// `key` (16 bytes) and `iv` (16 bytes).
pub fn aes128_cfb(key: &[u8], iv: &[u8], data: &mut [u8], encrypt: bool) {
    let cipher = aes::Aes128::new_from_slice(key).expect("AES-128 key is 16 bytes");
    let mut feedback = [0u8; 16];
    feedback.copy_from_slice(&iv[..16]);
    for chunk in data.chunks_mut(16) {
        let mut ks = aes::Block::from(feedback);
        cipher.encrypt_block(&mut ks);
        for (i, b) in chunk.iter_mut().enumerate() {
            let c = if encrypt { *b ^ ks[i] } else { *b };
            *b ^= ks[i];
            // The next block's feedback is this block's ciphertext.
            feedback[i] = c;
        }
        zeroize::Zeroize::zeroize(ks.as_mut_slice());
    }
}

/// A session salt and how it travels to the TPM (`encryptedSalt` of
/// `TPM2_StartAuthSession`).
pub struct Salt {
    /// The salt (32 bytes: the digest size of SHA-256).
    pub salt: SecretBuf,
    /// The `TPM2B_ENCRYPTED_SECRET` contents.
    pub encrypted: Vec<u8>,
}

/// A salt for a session whose `tpmKey` is the ECC P-256 key with public point (`x`, `y`):
/// an ephemeral key's ECDH with it, through KDFe with label `SECRET`.
pub fn ecc_salt(x: &[u8], y: &[u8]) -> Result<Salt> {
    use elliptic_curve::sec1::{FromSec1Point, ToSec1Point};
    use elliptic_curve::Generate;
    use p256::{AffinePoint, FieldBytes, NistP256, ProjectivePoint};
    let fx = FieldBytes::try_from(x).map_err(|_| Tpm2Error::BadKey("ECC x"))?;
    let fy = FieldBytes::try_from(y).map_err(|_| Tpm2Error::BadKey("ECC y"))?;
    let enc = elliptic_curve::sec1::Sec1Point::<NistP256>::from_affine_coordinates(&fx, &fy, false);
    let peer: Option<AffinePoint> = AffinePoint::from_sec1_point(&enc).into_option();
    let peer = ProjectivePoint::from(peer.ok_or(Tpm2Error::BadKey("not a P-256 point"))?);
    let sk =
        elliptic_curve::SecretKey::<NistP256>::try_generate().map_err(|_| Tpm2Error::Random)?;
    let eph = sk
        .public_key()
        .to_projective()
        .to_affine()
        .to_sec1_point(false);
    let shared = (peer * *sk.to_nonzero_scalar())
        .to_affine()
        .to_sec1_point(false);
    let (Some(ex), Some(ey), Some(zx)) = (eph.x(), eph.y(), shared.x()) else {
        return Err(Tpm2Error::BadKey("point at infinity"));
    };
    let z = SecretBuf::from_slice(zx);
    let salt = kdfe(z.as_bytes(), "SECRET", ex, x, 256);
    let mut encrypted = Vec::with_capacity(68);
    encrypted.extend_from_slice(&(ex.len() as u16).to_be_bytes());
    encrypted.extend_from_slice(ex);
    encrypted.extend_from_slice(&(ey.len() as u16).to_be_bytes());
    encrypted.extend_from_slice(ey);
    Ok(Salt { salt, encrypted })
}

fn mgf1_xor(seed: &[u8], out: &mut [u8]) {
    for (counter, chunk) in (0u32..).zip(out.chunks_mut(32)) {
        let h = sha256(&[seed, &counter.to_be_bytes()]);
        for (b, m) in chunk.iter_mut().zip(h.iter()) {
            *b ^= m;
        }
    }
}

/// RSA-OAEP (SHA-256, MGF1-SHA-256) encryption of `msg` to modulus `n` (big-endian) and
/// exponent `e`, with `label` (its NUL included by the caller).
pub fn rsa_oaep_encrypt(n: &[u8], e: u32, label: &[u8], msg: &[u8]) -> Result<Vec<u8>> {
    use crypto_bigint::modular::{BoxedMontyForm, BoxedMontyParams};
    use crypto_bigint::{BoxedUint, Odd};
    let n = {
        let first = n.iter().position(|&b| b != 0).unwrap_or(n.len());
        &n[first..]
    };
    let k = n.len();
    if !(128..=512).contains(&k) || msg.len() + 2 * 32 + 2 > k {
        return Err(Tpm2Error::BadKey("RSA modulus size"));
    }
    let mut em = vec![0u8; k];
    let (seed, db) = em[1..].split_at_mut(32);
    getrandom::fill(seed).map_err(|_| Tpm2Error::Random)?;
    db[..32].copy_from_slice(&sha256(&[label]));
    let one = db.len() - msg.len() - 1;
    db[one] = 1;
    db[one + 1..].copy_from_slice(msg);
    mgf1_xor(seed, db);
    let masked_db = db.to_vec();
    mgf1_xor(&masked_db, seed);
    let bits = (k * 8) as u32;
    let modulus =
        BoxedUint::from_be_slice(n, bits).map_err(|_| Tpm2Error::BadKey("RSA modulus"))?;
    let modulus: Option<Odd<BoxedUint>> = Odd::new(modulus).into_option();
    let params = BoxedMontyParams::new(modulus.ok_or(Tpm2Error::BadKey("even RSA modulus"))?);
    let m = BoxedUint::from_be_slice(&em, bits).map_err(|_| Tpm2Error::BadKey("RSA message"))?;
    zeroize::Zeroize::zeroize(&mut em);
    let exp = BoxedUint::from_be_slice(&u64::from(e).to_be_bytes(), 64)
        .map_err(|_| Tpm2Error::BadKey("RSA exponent"))?;
    let c = BoxedMontyForm::new(m, &params).pow(&exp).retrieve();
    let out = c.to_be_bytes();
    let out = &out[out.len() - k..];
    Ok(out.to_vec())
}

/// A salt for a session whose `tpmKey` is the RSA key with modulus `n` and exponent `e`
/// (0: 65537): the salt encrypted with OAEP and label `SECRET`.
pub fn rsa_salt(n: &[u8], e: u32) -> Result<Salt> {
    let mut s = [0u8; 32];
    getrandom::fill(&mut s).map_err(|_| Tpm2Error::Random)?;
    let salt = SecretBuf::from_slice(&s);
    zeroize::Zeroize::zeroize(&mut s);
    let e = if e == 0 { 65537 } else { e };
    let encrypted = rsa_oaep_encrypt(n, e, b"SECRET\0", salt.as_bytes())?;
    Ok(Salt { salt, encrypted })
}

/// `v` without trailing zero bytes, as the TPM uses an authValue in HMAC keys.
pub fn trim_zeros(v: &[u8]) -> &[u8] {
    let end = v.iter().rposition(|&b| b != 0).map_or(0, |i| i + 1);
    &v[..end]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cfb_round_trip_and_known_answer() {
        // NIST SP 800-38A F.3.13, CFB128-AES128.Encrypt, first two blocks.
        let key = hex::decode("2b7e151628aed2a6abf7158809cf4f3c").unwrap();
        let iv = hex::decode("000102030405060708090a0b0c0d0e0f").unwrap();
        let pt = hex::decode("6bc1bee22e409f96e93d7e117393172aae2d8a571e03ac9c9eb76fac45af8e51")
            .unwrap();
        let ct = "3b3fd92eb72dad20333449f8e83cfb4ac8a64537a0b3a93fcde3cdad9f1ce58b";
        let mut d = pt.clone();
        aes128_cfb(&key, &iv, &mut d, true);
        assert_eq!(hex::encode(&d), ct);
        aes128_cfb(&key, &iv, &mut d, false);
        assert_eq!(d, pt);
        // A partial last block.
        let mut d = pt[..20].to_vec();
        aes128_cfb(&key, &iv, &mut d, true);
        assert_eq!(hex::encode(&d), &ct[..40]);
    }

    #[test]
    fn kdfa_matches_its_definition() {
        let k = kdfa(b"key", "ATH", b"u", b"v", 256);
        let want = hmac_sha256(
            b"key",
            &[
                &1u32.to_be_bytes(),
                b"ATH\0",
                b"u",
                b"v",
                &256u32.to_be_bytes(),
            ],
        );
        assert_eq!(k.as_bytes(), &want);
        let k = kdfa(b"key", "CFB", b"u", b"v", 256 + 128);
        assert_eq!(k.len(), 48);
        let second = hmac_sha256(
            b"key",
            &[
                &2u32.to_be_bytes(),
                b"CFB\0",
                b"u",
                b"v",
                &384u32.to_be_bytes(),
            ],
        );
        assert_eq!(&k.as_bytes()[32..], &second[..16]);
    }

    #[test]
    fn rsa_oaep_is_textbook_rsa_of_a_valid_encoding() {
        // A toy 1024-bit key would need a decryptor; check the shape instead: the result
        // has the modulus' length and differs each time (random seed).
        let n = [0xC5u8; 128];
        let a = rsa_oaep_encrypt(&n, 65537, b"SECRET\0", &[1; 32]).unwrap();
        let b = rsa_oaep_encrypt(&n, 65537, b"SECRET\0", &[1; 32]).unwrap();
        assert_eq!(a.len(), 128);
        assert_ne!(a, b);
        assert!(rsa_oaep_encrypt(&[0xC5u8; 16], 65537, b"", &[1; 32]).is_err());
    }

    #[test]
    fn trims_trailing_zeros() {
        assert_eq!(trim_zeros(&[1, 0, 2, 0, 0]), &[1, 0, 2]);
        assert_eq!(trim_zeros(&[0, 0]), &[] as &[u8]);
    }
}
