//! The re-encryption metadata digest (cryptsetup's fix for CVE-2021-4122): a `pbkdf2`
//! digest, assigned to the `reencrypt` keyslot, of a byte string that binds the volume keys
//! to the re-encryption keyslot and the backup segments. cryptsetup refuses to continue a
//! re-encryption whose digest does not verify ("Reencryption metadata is invalid."), so
//! lukskit reproduces the byte string exactly:
//!
//! `'v' '0'+version ‖ old key ‖ new key (if another digest) ‖ keyslot fields ‖ backup-previous
//! ‖ backup-final ‖ backup-moved-segment (if any)`; the metadata's part is the format
//! crate's ([`digest_binding`]).

use super::ctx;
use crate::error::{ReencryptError, Result};
use crate::luks2_keys;
use lukskit_crypto::hash::HashAlg;
use lukskit_crypto::SecretBuf;
use lukskit_format::luks2::edit;
use lukskit_format::luks2::reencrypt_keyslot::digest_binding;
use lukskit_format::luks2::Luks2Header;

/// The byte string the digest covers, for the keys `old` (digest of backup-previous) and
/// `new` (digest of backup-final).
pub fn verification_data(
    hdr: &Luks2Header,
    reenc_keyslot: u32,
    version: u8,
    old: Option<&[u8]>,
    new: Option<&[u8]>,
) -> Result<SecretBuf> {
    let invalid = || ctx("re-encryption metadata cannot be serialized");
    let mut out = vec![b'v', b'0' + version];
    let mut any_key = false;
    if let Some(k) = old {
        out.extend_from_slice(k);
        any_key = true;
    }
    if let Some(k) = new {
        out.extend_from_slice(k);
        any_key = true;
    }
    if !any_key {
        return Err(invalid());
    }
    // The keyslot's and the backup segments' stored members, byte for byte.
    let binding = digest_binding(hdr, reenc_keyslot)?.ok_or_else(invalid)?;
    out.extend_from_slice(&binding);
    let mut buf = SecretBuf::zeroed(out.len());
    buf.as_mut_bytes().copy_from_slice(&out);
    zeroize::Zeroize::zeroize(&mut out);
    Ok(buf)
}

/// Create the digest of the verification data and assign it (alone) to the re-encryption
/// keyslot (`LUKS2_keyslot_reencrypt_digest_create`). Returns the digest id.
pub fn create(
    hdr: &mut Luks2Header,
    reenc_keyslot: u32,
    data: &SecretBuf,
    hash: HashAlg,
    iterations: u32,
) -> Result<u32> {
    let used: Vec<u32> = hdr.digests()?.iter().map(|d| d.id).collect();
    let id = (0..lukskit_format::luks2::MAX_DIGESTS)
        .find(|i| !used.contains(i))
        .ok_or(crate::error::KeyslotError::NoFreeDigest)?;
    // Unassign the keyslot from any digest it had (a repair re-creates the digest).
    edit::unassign_keyslot(hdr, reenc_keyslot)?;
    let d = luks2_keys::make_digest(id, hash, data.as_bytes(), iterations, vec![])?;
    hdr.add_digest(&d)?;
    hdr.assign_keyslot_to_digest(reenc_keyslot, id)?;
    Ok(id)
}

/// Check the digest of the verification data (`LUKS2_reencrypt_digest_verify`).
pub fn check(hdr: &Luks2Header, reenc_keyslot: u32, data: &SecretBuf) -> Result<()> {
    let Some(d) = luks2_keys::digest_of_keyslot(hdr, reenc_keyslot)? else {
        return Err(ReencryptError::MetadataInvalid.into());
    };
    if luks2_keys::digest_matches(&d, data.as_bytes())? {
        Ok(())
    } else {
        Err(ReencryptError::MetadataInvalid.into())
    }
}
