//! The keyslots a re-encryption unlocks, and the keyslots it adds for a new volume key.

use crate::{ReencryptError, Result};
use lukskit_crypto::SecretBuf;
use lukskit_format::luks2::{edit, KdfParams};
use lukskit_volume::pbkdf::{HashChoice, KeyslotCipherRequest, PbkdfKind, PbkdfRequest};
use lukskit_volume::Volume;

/// The keyslots of the volume key (bound to its segment's digest) a re-encryption unlocks:
/// all of them, or `key_slot` alone (which must be one of them).
pub fn to_unlock(vol: &Volume, key_slot: Option<u32>) -> Result<Vec<u32>> {
    let hdr = vol.luks2().ok_or(ReencryptError::NotLuks2)?;
    let seg_digest = vol
        .segment_digest_id()?
        .ok_or(ReencryptError::NoUsableKeyslot)?;
    let bound: Vec<u32> = hdr
        .digests()?
        .iter()
        .find(|d| d.id == seg_digest)
        .map(|d| d.keyslots.clone())
        .unwrap_or_default();
    let slots = match key_slot {
        Some(s) if !bound.contains(&s) => return Err(ReencryptError::KeyslotInactive(s)),
        Some(s) => vec![s],
        None => bound,
    };
    if slots.is_empty() {
        return Err(ReencryptError::NoUsableKeyslot);
    }
    Ok(slots)
}

/// The PBKDF and keyslot cipher of the keyslot that takes over from `old_slot` for the new
/// volume key, as cryptsetup 2.6 chooses them: the old keyslot's area cipher (unless
/// `cipher_null`: then `base`'s) and, unless the PBKDF was asked for (`pbkdf_given`), its
/// PBKDF with the same costs, without a benchmark; `base` otherwise.
pub fn new_keyslot_pbkdf(
    base: PbkdfRequest,
    pbkdf_given: bool,
    vol: &Volume,
    old_slot: u32,
) -> Result<PbkdfRequest> {
    let mut p = base;
    let Some(h) = vol.luks2() else {
        return Ok(p);
    };
    let Some(ks) = h.keyslot(old_slot)? else {
        return Ok(p);
    };
    if !ks.area_encryption.starts_with("cipher_null") {
        p.keyslot_cipher = Some(KeyslotCipherRequest {
            cipher: ks.area_encryption.clone(),
            key_bits: Some(ks.area_key_size * 8),
        });
    }
    if pbkdf_given {
        return Ok(p);
    }
    match &ks.kdf {
        KdfParams::Pbkdf2 {
            hash, iterations, ..
        } => {
            p.kind = Some(PbkdfKind::Pbkdf2);
            p.hash = Some(HashChoice::parse(hash));
            p.force_iterations = Some(*iterations);
        }
        KdfParams::Argon2 {
            variant,
            time,
            memory,
            cpus,
            ..
        } => {
            // The header's kdf type (argon2i or argon2id: checked when it was loaded).
            let kind = PbkdfKind::from_name(variant).ok_or_else(|| {
                lukskit_volume::VolumeError::from(lukskit_volume::ParamError::UnknownPbkdf {
                    name: variant.clone(),
                })
            })?;
            p.kind = Some(kind);
            p.force_iterations = Some(*time);
            p.max_memory_kib = Some(*memory);
            p.parallel = Some(*cpus);
        }
        _ => {}
    }
    Ok(p)
}

/// One unbound keyslot for the new volume key `new_vk` per unlocked old keyslot (`slots`,
/// with their `passes`), each with the PBKDF of the old one (see [`new_keyslot_pbkdf`]; `base`
/// and `pbkdf_given` as there), all under one digest, as cryptsetup's
/// `reencrypt_luks2_init` adds them; each keyslot made is pushed to `made` at once (the caller
/// removes them again if the initialization fails). Returns the new key's digest.
pub fn add_for_new_key(
    vol: &mut Volume,
    new_vk: &SecretBuf,
    (passes, slots): (&[SecretBuf], &[u32]),
    (base, pbkdf_given): (&PbkdfRequest, bool),
    made: &mut Vec<u32>,
) -> Result<Option<u32>> {
    let mut new_digest = None;
    for (pass, &old_slot) in passes.iter().zip(slots) {
        let like_old = new_keyslot_pbkdf(base.clone(), pbkdf_given, vol, old_slot)?;
        let slot = vol.add_keyslot(new_vk, pass.as_bytes(), None, &like_old, true)?;
        made.push(slot);
        let h = vol.luks2_mut().ok_or(ReencryptError::NotLuks2)?;
        let d = edit::digest_of_keyslot(h, slot)?;
        match new_digest {
            None => new_digest = d,
            Some(first) => {
                // One digest for the new key: move the keyslot to the first one.
                edit::move_keyslot_digest(h, slot, first)?;
            }
        }
    }
    Ok(new_digest)
}
