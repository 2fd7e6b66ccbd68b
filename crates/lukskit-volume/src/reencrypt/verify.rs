//! The re-encryption metadata digest (cryptsetup's fix for CVE-2021-4122): a `pbkdf2`
//! digest, assigned to the `reencrypt` keyslot, of a byte string that binds the volume keys
//! to the re-encryption keyslot and the backup segments. cryptsetup refuses to continue a
//! re-encryption whose digest does not verify ("Reencryption metadata is invalid."), so
//! lukskit reproduces the byte string exactly:
//!
//! `'v' '0'+version ‖ old key ‖ new key (if another digest) ‖ keyslot fields ‖ backup-previous
//! ‖ backup-final ‖ backup-moved-segment (if any)`, where strings are raw bytes (at most 64),
//! u64 fields stored as JSON strings are big-endian u64, a `"dynamic"` size is the literal
//! word and JSON integers are big-endian u32.

use super::ctx;
use crate::error::{ReencryptError, Result};
use crate::luks2_keys;
use lukskit_crypto::hash::HashAlg;
use lukskit_crypto::SecretBuf;
use lukskit_format::luks2::edit;
use lukskit_format::luks2::Luks2Header;
use serde_json::Value;

enum Field {
    Str,
    U64,
    Size,
    U32,
}

fn field(out: &mut Vec<u8>, obj: &Value, key: &str, kind: Field) -> Option<()> {
    let v = obj.get(key)?;
    match kind {
        Field::Str => {
            let s = v.as_str()?;
            if s.len() > 64 || s.is_empty() {
                return None;
            }
            out.extend_from_slice(s.as_bytes());
        }
        Field::U64 => out.extend_from_slice(&v.as_str()?.parse::<u64>().ok()?.to_be_bytes()),
        Field::Size => match v.as_str()? {
            "dynamic" => out.extend_from_slice(b"dynamic"),
            s => out.extend_from_slice(&s.parse::<u64>().ok()?.to_be_bytes()),
        },
        Field::U32 => out.extend_from_slice(&u32::try_from(v.as_u64()?).ok()?.to_be_bytes()),
    }
    Some(())
}

fn segment_bytes(out: &mut Vec<u8>, seg: &Value) -> Option<()> {
    match seg.get("type")?.as_str()? {
        "crypt" => {
            field(out, seg, "type", Field::Str)?;
            field(out, seg, "offset", Field::U64)?;
            field(out, seg, "size", Field::Size)?;
            field(out, seg, "iv_tweak", Field::U64)?;
            field(out, seg, "encryption", Field::Str)?;
            field(out, seg, "sector_size", Field::U32)
        }
        "linear" => {
            field(out, seg, "type", Field::Str)?;
            field(out, seg, "offset", Field::U64)?;
            field(out, seg, "size", Field::Size)
        }
        _ => None,
    }
}

fn keyslot_bytes(out: &mut Vec<u8>, ks: &Value) -> Option<()> {
    let area = ks.get("area")?;
    let kind = area.get("type")?.as_str()?;
    field(out, ks, "mode", Field::Str)?;
    field(out, ks, "direction", Field::Str)?;
    field(out, area, "type", Field::Str)?;
    field(out, area, "offset", Field::U64)?;
    field(out, area, "size", Field::U64)?;
    match kind {
        "checksum" => {
            field(out, area, "hash", Field::Str)?;
            field(out, area, "sector_size", Field::U32)
        }
        "datashift-checksum" => {
            field(out, area, "hash", Field::Str)?;
            field(out, area, "sector_size", Field::U32)?;
            field(out, area, "shift_size", Field::U64)
        }
        "datashift" | "datashift-journal" => field(out, area, "shift_size", Field::U64),
        _ => Some(()),
    }
}

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
    let ks = edit::keyslot_object(hdr, reenc_keyslot)
        .map(|k| Value::Object(k.clone()))
        .ok_or_else(invalid)?;
    keyslot_bytes(&mut out, &ks).ok_or_else(invalid)?;
    for (flag, required) in [
        ("backup-previous", true),
        ("backup-final", true),
        ("backup-moved-segment", false),
    ] {
        match edit::segment_by_flag(hdr, flag)? {
            // The stored members byte for byte, as cryptsetup serialises them.
            Some((_, seg)) => segment_bytes(&mut out, &seg.to_json()).ok_or_else(invalid)?,
            None if required => return Err(invalid()),
            None => {}
        }
    }
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
