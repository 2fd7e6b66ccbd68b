//! BitLocker's key primitives, as cryptsetup 2.6.1 computes them (lib/bitlk/bitlk.c
//! `bitlk_kdf`, lib/crypto_backend `crypt_bitlk_decrypt_key`, `crypt_utf8_to_utf16`):
//!
//! * the key stretching of a password or recovery password: an initial SHA-256 value, then
//!   2²⁰ rounds of SHA-256 over `last ‖ initial ‖ salt ‖ LE64(round)`;
//! * the password's initial value: SHA-256(SHA-256(UTF-16LE(password))), with cryptsetup's own
//!   UTF-8 → UTF-16 conversion (bytes that are no valid UTF-8 are copied as they are, as C
//!   `char`s) and its length rule (2 × the UTF-8 length bytes are hashed, zero padded);
//! * AES-256-CCM decryption (12-byte nonce, 16-byte tag, no associated data) of the VMK and
//!   FVEK.

use crate::secret::SecretBuf;
use ccm::aead::AeadInOut;
use ccm::consts::{U12, U16};
use ccm::{Ccm, KeyInit};
use sha2::{Digest, Sha256};
use zeroize::{Zeroize, Zeroizing};

/// Rounds of SHA-256 of the stretch (`BITLK_KDF_ITERATION_COUNT`).
pub const STRETCH_ROUNDS: u64 = 0x10_0000;

/// Size of a stretch salt.
pub const SALT_LEN: usize = 16;

/// AES-256-CCM with BitLocker's 16-byte tag and 12-byte nonce.
type Aes256Ccm = Ccm<aes::Aes256, U16, U12>;

/// The initial SHA-256 value of a password: SHA-256(SHA-256(UTF-16LE(password))), the
/// UTF-16 converted as cryptsetup does (module documentation).
pub fn password_initial(password: &[u8]) -> Zeroizing<[u8; 32]> {
    let mut utf16 = Zeroizing::new(utf8_to_utf16le(password));
    // cryptsetup hashes `passwordLen * 2` bytes of a zeroed buffer of `passwordLen + 1`
    // UTF-16 units: the conversion, then zeros (it is never longer than that).
    utf16.resize(password.len() * 2, 0);
    let first = Zeroizing::new(<[u8; 32]>::from(Sha256::digest(&utf16[..])));
    Zeroizing::new(<[u8; 32]>::from(Sha256::digest(&first[..])))
}

/// The initial SHA-256 value of a recovery password already turned into its 16-byte key.
pub fn recovery_initial(recovery_key: &[u8]) -> Zeroizing<[u8; 32]> {
    Zeroizing::new(<[u8; 32]>::from(Sha256::digest(recovery_key)))
}

/// BitLocker's stretch of `initial` with `salt`: the 32-byte key that decrypts a VMK.
pub fn stretch(initial: &[u8; 32], salt: &[u8; SALT_LEN]) -> SecretBuf {
    // struct bitlk_kdf_data: last_sha256[32], initial_sha256[32], salt[16], count (LE64).
    let mut data = Zeroizing::new([0u8; 88]);
    data[32..64].copy_from_slice(initial);
    data[64..80].copy_from_slice(salt);
    for round in 0..STRETCH_ROUNDS {
        data[80..88].copy_from_slice(&round.to_le_bytes());
        let mut d = Sha256::digest(&data[..]);
        data[..32].copy_from_slice(&d);
        d.zeroize();
    }
    SecretBuf::from_slice(&data[..32])
}

/// Why [`aes256_ccm_decrypt`] failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CcmError {
    /// The key is not 32 bytes long.
    KeyLength,
    /// The tag does not authenticate the data under this key (wrong key, damaged data).
    Tag,
}

/// Decrypt `data` (AES-256-CCM, no associated data) with `key`, `nonce` and `tag`.
pub fn aes256_ccm_decrypt(
    key: &[u8],
    nonce: &[u8; 12],
    tag: &[u8; 16],
    data: &[u8],
) -> Result<SecretBuf, CcmError> {
    let cipher = Aes256Ccm::new_from_slice(key).map_err(|_| CcmError::KeyLength)?;
    let mut out = SecretBuf::from_slice(data);
    cipher
        .decrypt_inout_detached(nonce.into(), &[], out.as_mut_bytes().into(), tag.into())
        .map_err(|_| CcmError::Tag)?;
    Ok(out)
}

/// cryptsetup's `crypt_utf8_to_utf16` (lib/crypto_backend/utf8.c) as UTF-16LE bytes: valid
/// UTF-8 sequences (overlong ones too) become their UTF-16 units (code points that are
/// surrogates or beyond U+10FFFF vanish), every other byte is copied as a C `char` widened to
/// 16 bits (sign-extended where `char` is signed, as on x86).
fn utf8_to_utf16le(s: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(s.len() * 2);
    let mut i = 0;
    while i < s.len() {
        let e = expected_len(s[i]);
        let decoded = if e <= 1 || i + e > s.len() {
            None
        } else {
            decode(&s[i..i + e])
        };
        match decoded {
            Some(c) => {
                match c {
                    0..=0xd7ff | 0xe000..=0xffff => {
                        out.extend_from_slice(&(c as u16).to_le_bytes())
                    }
                    0x1_0000..=0x10_ffff => {
                        let c = c - 0x1_0000;
                        out.extend_from_slice(&((c >> 10) as u16 + 0xd800).to_le_bytes());
                        out.extend_from_slice(&((c & 0x3ff) as u16 + 0xdc00).to_le_bytes());
                    }
                    _ => {}
                }
                i += e;
            }
            None => {
                // `*(p++) = htole16(s[i++])` with `s` a `const char *`.
                let unit = s[i] as std::ffi::c_char as u16;
                out.extend_from_slice(&unit.to_le_bytes());
                i += 1;
            }
        }
    }
    out
}

/// `utf8_encoded_expected_len`.
fn expected_len(c: u8) -> usize {
    match c {
        0..=0x7f => 1,
        _ if c & 0xe0 == 0xc0 => 2,
        _ if c & 0xf0 == 0xe0 => 3,
        _ if c & 0xf8 == 0xf0 => 4,
        _ if c & 0xfc == 0xf8 => 5,
        _ if c & 0xfe == 0xfc => 6,
        _ => 0,
    }
}

/// `utf8_encoded_to_unichar` of a sequence of its expected length (at least 2).
fn decode(seq: &[u8]) -> Option<u32> {
    let mask = match seq.len() {
        2 => 0x1f,
        3 => 0x0f,
        4 => 0x07,
        5 => 0x03,
        _ => 0x01,
    };
    let mut c = u32::from(seq[0]) & mask;
    for &b in &seq[1..] {
        if b & 0xc0 != 0x80 {
            return None;
        }
        c = (c << 6) | u32::from(b & 0x3f);
    }
    Some(c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utf16_conversion_as_cryptsetup() {
        assert_eq!(utf8_to_utf16le(b"ab"), b"a\0b\0");
        assert_eq!(utf8_to_utf16le("é".as_bytes()), [0xe9, 0]);
        assert_eq!(utf8_to_utf16le("😀".as_bytes()), [0x3d, 0xd8, 0x00, 0xde]);
        // An invalid byte is copied as a C char (signed on x86: 0xff80).
        let unit = 0x80u8 as std::ffi::c_char as u16;
        assert_eq!(utf8_to_utf16le(&[0x80]), unit.to_le_bytes());
        // A truncated sequence: each byte copied.
        assert_eq!(utf8_to_utf16le(&[0xc3]).len(), 2);
        // A surrogate encoded in UTF-8 vanishes.
        assert!(utf8_to_utf16le(&[0xed, 0xa0, 0x80]).is_empty());
    }

    #[test]
    fn password_padding_is_twice_the_utf8_length() {
        // "é" is 2 UTF-8 bytes: 4 bytes hashed, the unit and a zero unit.
        let want = Sha256::digest(Sha256::digest([0xe9, 0, 0, 0]));
        assert_eq!(&password_initial("é".as_bytes())[..], &want[..]);
    }

    #[test]
    fn ccm_rejects_bad_keys_and_tags() {
        let key = [7u8; 32];
        let nonce = [1u8; 12];
        let c = Aes256Ccm::new_from_slice(&key).unwrap();
        let mut data = *b"0123456789abcdef0123";
        let tag = c
            .encrypt_inout_detached((&nonce).into(), &[], (&mut data[..]).into())
            .unwrap();
        let tag: [u8; 16] = tag.into();
        let plain = aes256_ccm_decrypt(&key, &nonce, &tag, &data).unwrap();
        assert_eq!(plain.as_bytes(), b"0123456789abcdef0123");
        let mut bad = tag;
        bad[0] ^= 1;
        assert_eq!(
            aes256_ccm_decrypt(&key, &nonce, &bad, &data).unwrap_err(),
            CcmError::Tag
        );
        assert_eq!(
            aes256_ccm_decrypt(&key[..16], &nonce, &tag, &data).unwrap_err(),
            CcmError::KeyLength
        );
    }
}
