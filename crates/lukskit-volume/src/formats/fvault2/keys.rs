//! The volume key from a passphrase (cryptsetup's `FVAULT2_get_volume_key`): PBKDF2-SHA256 of
//! the passphrase (the salt and iterations of block 0x0019) gives a 128-bit key that unwraps
//! the KEK (RFC 3394 AES key wrap), which unwraps the volume key's first half; the second half
//! is the first 16 bytes of SHA-256(first half ‖ family UUID).

use super::{Params, VOLUME_KEY_SIZE};
use crate::error::Result;
use crate::formats::OtherFormatError;
use aes_kw::KwAes128;
use lukskit_crypto::hash::HashAlg;
use lukskit_crypto::SecretBuf;

/// Unwrap a 24-byte wrapped 128-bit key with a 128-bit KEK; `None` when the integrity check
/// fails (a wrong key).
fn unwrap(kek: &[u8], wrapped: &[u8; 24]) -> Option<SecretBuf> {
    use aes_kw::KeyInit;
    let kw = KwAes128::new_from_slice(kek).ok()?;
    let mut out = SecretBuf::zeroed(16);
    let n = kw.unwrap_key(wrapped, out.as_mut_bytes()).ok()?.len();
    (n == 16).then_some(out)
}

/// The 32-byte AES-XTS volume key, or [`OtherFormatError::NoKey`] for a wrong passphrase.
pub fn volume_key(params: &Params, passphrase: &[u8]) -> Result<SecretBuf> {
    let k = &params.metadata.keys;
    let mut pass_key = SecretBuf::zeroed(16);
    lukskit_crypto::kdf::pbkdf2(
        HashAlg::Sha256,
        passphrase,
        &k.pbkdf2_salt,
        k.pbkdf2_iterations,
        pass_key.as_mut_bytes(),
    )?;
    let kek = unwrap(pass_key.as_bytes(), &k.wrapped_kek).ok_or(OtherFormatError::NoKey)?;
    let half = unwrap(kek.as_bytes(), &k.wrapped_vk).ok_or(OtherFormatError::NoKey)?;
    Ok(from_first_half(
        half.as_bytes(),
        &params.metadata.volume.family_uuid,
    ))
}

/// The whole volume key from its first half and the family UUID.
pub fn from_first_half(half: &[u8], family_uuid: &[u8; 16]) -> SecretBuf {
    let mut vk = SecretBuf::zeroed(VOLUME_KEY_SIZE);
    let mut tail = HashAlg::Sha256.digest(&[half, family_uuid]);
    vk.as_mut_bytes()[..16].copy_from_slice(half);
    vk.as_mut_bytes()[16..].copy_from_slice(&tail[..16]);
    zeroize::Zeroize::zeroize(&mut tail);
    vk
}

#[cfg(test)]
mod tests {
    #[test]
    fn rfc3394_unwrap_vector() {
        // RFC 3394 section 4.1: 128-bit KEK, 128-bit key data.
        let kek = hex::decode("000102030405060708090A0B0C0D0E0F").unwrap();
        let w: [u8; 24] = hex::decode("1FA68B0A8112B447AEF34BD8FB5A7B829D3E862371D2CFE5")
            .unwrap()
            .try_into()
            .unwrap();
        let k = super::unwrap(&kek, &w).unwrap();
        assert_eq!(
            hex::encode(k.as_bytes()),
            "00112233445566778899aabbccddeeff"
        );
        let mut bad = w;
        bad[0] ^= 1;
        assert!(super::unwrap(&kek, &bad).is_none());
    }
}
