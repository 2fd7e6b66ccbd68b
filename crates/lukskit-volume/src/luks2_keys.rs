//! LUKS2 keyslots and digests: unlocking, storing, wiping.

use crate::error::{DeviceOp, KeyslotError, ParamError, Result, VolumeError};
use crate::wipe;
use lukskit_crypto::engine::SectorCipher;
use lukskit_crypto::hash::HashAlg;
use lukskit_crypto::kdf::{self, Argon2Variant, Pbkdf};
use lukskit_crypto::spec::CipherSpec;
use lukskit_crypto::CryptoError;
use lukskit_crypto::{af, SecretBuf};
use lukskit_format::io::Storage;
use lukskit_format::luks2::{self, Digest, KdfParams, Keyslot, Luks2Header};

/// Fallback keyslot cipher when the segment cipher cannot protect keyslots (cryptsetup's
/// `--with-luks2-keyslot-cipher` default).
pub const FALLBACK_KEYSLOT_CIPHER: &str = "aes-xts-plain64";
/// Key size in bytes of the fallback keyslot cipher.
pub const FALLBACK_KEYSLOT_KEY_SIZE: u32 = 64;
/// AF stripes of every LUKS2 keyslot.
pub const STRIPES: u32 = 4000;

fn hash(name: &str) -> Result<HashAlg> {
    HashAlg::from_name(name).map_err(|_| VolumeError::HashUnsupported {
        hash: name.to_string(),
    })
}

/// Convert keyslot KDF parameters from the header to the crypto layer's form.
pub fn pbkdf_of(kdf: &KdfParams) -> Result<Pbkdf> {
    Ok(match kdf {
        KdfParams::Pbkdf2 {
            hash: h,
            iterations,
            ..
        } => Pbkdf::Pbkdf2 {
            hash: hash(h)?,
            iterations: *iterations,
        },
        KdfParams::Argon2 {
            variant,
            time,
            memory,
            cpus,
            ..
        } => Pbkdf::Argon2 {
            variant: Argon2Variant::from_name(variant)?,
            time: *time,
            memory_kib: *memory,
            parallel: *cpus,
        },
        KdfParams::Unknown { name, .. } => {
            return Err(ParamError::UnknownPbkdf { name: name.clone() }.into())
        }
    })
}

/// Whether `vk` matches digest `d` (constant-time).
pub fn digest_matches(d: &Digest, vk: &[u8]) -> Result<bool> {
    let h = hash(&d.hash)?;
    if d.iterations == 0 {
        return Err(KeyslotError::DigestIterations { digest: d.id }.into());
    }
    // Every check comes before the PBKDF2 run, as in cryptsetup's `PBKDF2_digest_verify`: a
    // hostile header must not make us compute (up to 2^32 - 1 iterations) for a digest that
    // cannot match (a salt that is not 32 bytes of base64, a digest of the wrong length).
    d.check_usable()?;
    let mut out = SecretBuf::zeroed(d.digest.len());
    kdf::pbkdf2(h, vk, &d.salt, d.iterations, out.as_mut_bytes())?;
    Ok(out.ct_eq(&d.digest))
}

/// A new PBKDF2 digest of `vk` with id `id`, bound to `segments`.
pub fn make_digest(
    id: u32,
    hash_alg: HashAlg,
    vk: &[u8],
    iterations: u32,
    segments: Vec<u32>,
) -> Result<Digest> {
    let salt = lukskit_crypto::random::bytes(32)?;
    let mut out = vec![0u8; hash_alg.digest_size()];
    kdf::pbkdf2(hash_alg, vk, &salt, iterations, &mut out)?;
    Ok(Digest {
        id,
        kind: lukskit_format::luks2::DigestType::Pbkdf2,
        keyslots: vec![],
        segments,
        hash: hash_alg.name().into(),
        iterations,
        salt,
        digest: out,
    })
}

/// The digest a keyslot is assigned to.
pub fn digest_of_keyslot(hdr: &Luks2Header, keyslot: u32) -> Result<Option<Digest>> {
    Ok(hdr
        .digests()?
        .into_iter()
        .find(|d| d.keyslots.contains(&keyslot)))
}

/// The digest that protects data segment 0 (the volume key digest).
pub fn segment_digest(hdr: &Luks2Header) -> Result<Option<Digest>> {
    Ok(hdr.digests()?.into_iter().find(|d| d.segments.contains(&0)))
}

/// Decrypt keyslot `ks` with `passphrase` and return the key if it matches the keyslot's digest.
pub fn open_keyslot(
    dev: &dyn Storage,
    hdr: &Luks2Header,
    ks: &Keyslot,
    passphrase: &[u8],
) -> Result<Option<SecretBuf>> {
    if ks.kind != lukskit_format::luks2::KeyslotType::Luks2 {
        return Ok(None);
    }
    let Some(digest) = digest_of_keyslot(hdr, ks.id)? else {
        return Ok(None);
    };
    // A keyslot cryptsetup cannot use (unknown KDF type, salt not 32 bytes, ...) fails
    // with -EINVAL there: "Keyslot open failed.", and no further keyslot is tried.
    ks.check_usable()
        .map_err(|_| VolumeError::from(KeyslotError::OpenFailed))?;
    let pbkdf = pbkdf_of(&ks.kdf)?;
    let turn = crate::memory_hard::wait_turn(&pbkdf)?;
    let dk = kdf::derive(&pbkdf, passphrase, ks.kdf.salt(), ks.area_key_size as usize)?;
    drop(turn);
    let key_len = ks.key_size as usize;
    // cryptsetup reads and merges 4000 stripes whatever "stripes" says (`LUKS_STRIPES` in
    // `luks2_keyslot_get_key`); so does lukskit.
    // cryptsetup reads that many bytes from the area offset whatever the area "size" says
    // (`luks2_keyslot_get_key`); the read must still lie inside the device.
    let size = af::split_size_bytes(key_len, STRIPES);
    let dev_size = dev
        .size()
        .map_err(|e| VolumeError::device_io(DeviceOp::GetSize, e))?;
    if ks
        .area_offset
        .checked_add(size as u64)
        .is_none_or(|end| end > dev_size)
    {
        return Err(KeyslotError::AreaOutsideDevice { slot: ks.id }.into());
    }
    let mut material = SecretBuf::zeroed(size);
    dev.read_exact_at(material.as_mut_bytes(), ks.area_offset)
        .map_err(|e| VolumeError::device_io(DeviceOp::ReadKeyslotArea { slot: ks.id }, e))?;
    // cryptsetup splits the area cipher with `crypt_parse_name_and_mode`, which has no
    // kernel-API form: a "capi:" area cipher is unusable there, and so here.
    if ks.area_encryption.starts_with("capi:") {
        return Err(KeyslotError::AreaCipherUnsupported {
            slot: ks.id,
            cipher: ks.area_encryption.clone(),
        }
        .into());
    }
    let spec = CipherSpec::parse(&ks.area_encryption)?;
    crate::keyslot_cipher::check(&spec, Some(ks.id))?;
    let cipher = SectorCipher::new(&spec, dk.as_bytes(), 512, false)?;
    cipher.decrypt(material.as_mut_bytes(), 0)?;
    let af_hash = HashAlg::from_name(&ks.af_hash).map_err(|_| {
        VolumeError::from(KeyslotError::AfHashUnavailable {
            hash: ks.af_hash.clone(),
        })
    })?;
    let vk = af::merge(material.as_bytes(), key_len, STRIPES, af_hash)?;
    // A digest cryptsetup cannot use (salt or digest of the wrong size, ...) fails with
    // -EINVAL there as well: "Keyslot open failed.".
    let matches = digest_matches(&digest, vk.as_bytes()).map_err(|e| match e {
        // Out of memory stays what it is; anything else is "keyslot open failed".
        VolumeError::Crypto(CryptoError::Limit(_)) => e,
        _ => KeyslotError::OpenFailed.into(),
    })?;
    if matches {
        Ok(Some(vk))
    } else {
        Ok(None)
    }
}

/// Priority of a keyslot (0 ignore, 1 normal, 2 prefer).
fn priority(ks: &Keyslot) -> u32 {
    ks.priority.unwrap_or(1)
}

/// Unlock with a passphrase. `slot` restricts to one keyslot (used even when its priority is
/// "ignore"); `unbound` selects keyslots whose digest is bound to no segment. Otherwise
/// keyslots bound to the data segment are tried, "prefer" ones first, "ignore" ones never;
/// during a re-encryption that is cryptsetup's default segment, the new volume key's
/// ([`default_segment_digest`]), so that `luksDump --dump-volume-key`, `luksRemoveKey` and
/// `luksKillSlot` find the keyslot cryptsetup finds.
pub fn unlock(
    dev: &dyn Storage,
    hdr: &Luks2Header,
    passphrase: &[u8],
    slot: Option<u32>,
    unbound: bool,
) -> Result<(u32, SecretBuf)> {
    let seg_digest = default_segment_digest(hdr)?.map(|d| d.id);
    unlock_digest(dev, hdr, passphrase, slot, unbound, seg_digest)
}

/// The digest of cryptsetup's default segment (`LUKS2_get_default_segment`): during a
/// re-encryption the `backup-final` segment's (the new volume key), otherwise segment 0's.
pub fn default_segment_digest(hdr: &Luks2Header) -> Result<Option<Digest>> {
    let last = hdr
        .segments()?
        .into_iter()
        .find(|s| s.flags.iter().any(|f| f == "backup-final"));
    match last {
        Some(s) => Ok(hdr
            .digests()?
            .into_iter()
            .find(|d| d.segments.contains(&s.id))),
        None => segment_digest(hdr),
    }
}

/// As [`unlock`], with the keyslots of digest `seg_digest` as the bound ones.
fn unlock_digest(
    dev: &dyn Storage,
    hdr: &Luks2Header,
    passphrase: &[u8],
    slot: Option<u32>,
    unbound: bool,
    seg_digest: Option<u32>,
) -> Result<(u32, SecretBuf)> {
    let digests = hdr.digests()?;
    let is_bound = |id: u32| {
        digests
            .iter()
            .find(|d| d.keyslots.contains(&id))
            .map(|d| Some(d.id) == seg_digest && seg_digest.is_some())
            .unwrap_or(false)
    };
    let is_unbound = |id: u32| {
        digests
            .iter()
            .find(|d| d.keyslots.contains(&id))
            .map(|d| d.segments.is_empty())
            .unwrap_or(false)
    };
    let keyslots = hdr.keyslots()?;
    if let Some(s) = slot {
        if s >= luks2::MAX_KEYSLOTS {
            return Err(VolumeError::NoUsableKeyslot);
        }
        let Some(ks) = keyslots.iter().find(|k| k.id == s) else {
            return Err(VolumeError::NoUsableKeyslot);
        };
        if unbound && !is_unbound(s) {
            return Err(KeyslotError::NotUnbound { slot: s }.into());
        }
        if !unbound && !is_bound(s) {
            return Err(KeyslotError::NotBound { slot: s }.into());
        }
        return open_keyslot(dev, hdr, ks, passphrase)?
            .map(|vk| (s, vk))
            .ok_or(VolumeError::WrongPassphrase);
    }
    // cryptsetup (`LUKS2_keyslot_open`): the "prefer" (2) keyslots, then the "normal" (1)
    // ones, each pass in the JSON object's order; "ignore" (0) or an invalid priority only
    // when named. With `unbound` every keyslot qualifies (any segment), otherwise only those
    // bound to the data segment. The last keyslot a pass tried decides its error: one not
    // usable for the segment means "no usable keyslot", one that did not open "wrong
    // passphrase"; a wrong passphrase in the "prefer" pass wins over "no usable keyslot".
    let order = hdr.keyslot_ids_in_json_order()?;
    let pass = |prio: u32| -> Result<std::result::Result<(u32, SecretBuf), VolumeError>> {
        let mut last = VolumeError::NoUsableKeyslot;
        for id in &order {
            let Some(ks) = keyslots.iter().find(|k| k.id == *id) else {
                continue;
            };
            if priority(ks) != prio {
                continue;
            }
            if !unbound && !is_bound(ks.id) {
                last = VolumeError::NoUsableKeyslot;
                continue;
            }
            match open_keyslot(dev, hdr, ks, passphrase)? {
                Some(vk) => return Ok(Ok((ks.id, vk))),
                None => last = VolumeError::WrongPassphrase,
            }
        }
        Ok(Err(last))
    };
    let preferred = match pass(2)? {
        Ok(found) => return Ok(found),
        Err(e) => e,
    };
    match pass(1)? {
        Ok(found) => Ok(found),
        Err(VolumeError::NoUsableKeyslot) if matches!(preferred, VolumeError::WrongPassphrase) => {
            Err(preferred)
        }
        Err(e) => Err(e),
    }
}

/// The cipher (spec, key bytes) used to encrypt a new keyslot's area: the data segment's
/// cipher when it is usable for keyslots, else aes-xts-plain64 with a 512-bit key.
pub fn keyslot_cipher(hdr: &Luks2Header, vk_len: usize) -> Result<(String, u32)> {
    if let Some(seg) = hdr
        .segments()?
        .into_iter()
        .find(|s| s.kind == lukskit_format::luks2::SegmentType::Crypt)
    {
        if let Ok(spec) = CipherSpec::parse(&seg.encryption) {
            let usable = !spec.capi
                && spec.cipher != "cipher_null"
                && !seg.has_integrity
                && SectorCipher::check(&spec, vk_len, 512).is_ok();
            if usable {
                return Ok((seg.encryption.clone(), vk_len as u32));
            }
        }
    }
    Ok((FALLBACK_KEYSLOT_CIPHER.into(), FALLBACK_KEYSLOT_KEY_SIZE))
}

/// Parameters of a keyslot to create.
pub struct NewKeyslot<'a> {
    /// Keyslot id.
    pub id: u32,
    /// The key to protect (volume key or unbound key).
    pub key: &'a SecretBuf,
    /// The passphrase.
    pub passphrase: &'a [u8],
    /// KDF parameters.
    pub pbkdf: Pbkdf,
    /// AF hash (cryptsetup uses the PBKDF hash setting, also for Argon2).
    pub af_hash: HashAlg,
    /// Keyslot area cipher and its key size, or None for [`keyslot_cipher`].
    pub cipher: Option<(String, u32)>,
    /// Digest to assign the keyslot to.
    pub digest: u32,
}

/// Write a new keyslot's encrypted key material into a free area (synced) and return the
/// keyslot object that describes it; the header is not touched.
/// Write a new keyslot's key material to a free area of the keyslots area, or, when none is
/// free and `in_place` names an area (offset, size) that is large enough — the area of the
/// keyslot being replaced — over that one.
fn write_material(
    dev: &dyn Storage,
    hdr: &Luks2Header,
    p: NewKeyslot<'_>,
    in_place: Option<(u64, u64)>,
) -> Result<Keyslot> {
    let key_len = p.key.len();
    let (encryption, area_key_size) = match p.cipher {
        Some(c) => c,
        None => keyslot_cipher(hdr, key_len)?,
    };
    let area_size = Luks2Header::keyslot_area_size(key_len as u32);
    let area_offset = match (hdr.find_keyslot_area(area_size)?, in_place) {
        (Some(off), _) => off,
        (None, Some((off, size))) if area_size <= size => off,
        (None, _) => return Err(KeyslotError::NoSpace.into()),
    };
    let salt = lukskit_crypto::random::bytes(32)?;
    let kdf_params = match &p.pbkdf {
        Pbkdf::Pbkdf2 { hash, iterations } => KdfParams::Pbkdf2 {
            hash: hash.name().into(),
            iterations: *iterations,
            salt: salt.clone(),
        },
        Pbkdf::Argon2 {
            variant,
            time,
            memory_kib,
            parallel,
        } => KdfParams::Argon2 {
            variant: variant.name().into(),
            time: *time,
            memory: *memory_kib,
            cpus: *parallel,
            salt: salt.clone(),
        },
    };
    let dk = kdf::derive(&p.pbkdf, p.passphrase, &salt, area_key_size as usize)?;
    let split = af::split(p.key.as_bytes(), STRIPES, p.af_hash)?;
    let mut material = SecretBuf::zeroed(af::split_size_bytes(key_len, STRIPES));
    material.as_mut_bytes()[..split.len()].copy_from_slice(split.as_bytes());
    let spec = CipherSpec::parse(&encryption)?;
    let cipher = SectorCipher::new(&spec, dk.as_bytes(), 512, false)?;
    cipher.encrypt(material.as_mut_bytes(), 0)?;
    dev.write_all_at(material.as_bytes(), area_offset)
        .and_then(|_| dev.sync())
        .map_err(|e| VolumeError::device_io(DeviceOp::WriteKeyslotArea, e))?;
    let ks = Keyslot {
        id: p.id,
        kind: lukskit_format::luks2::KeyslotType::Luks2,
        key_size: key_len as u32,
        af_stripes: STRIPES,
        af_hash: p.af_hash.name().into(),
        area_offset,
        area_size,
        area_encryption: encryption,
        area_key_size,
        kdf: kdf_params,
        priority: None,
    };
    Ok(ks)
}

/// Create a keyslot: key material is written to a free area first, then the header (both
/// copies, in cryptsetup's order) — a crash at any point leaves the old header valid.
pub fn store(dev: &dyn Storage, hdr: &mut Luks2Header, p: NewKeyslot<'_>) -> Result<()> {
    let (id, digest) = (p.id, p.digest);
    let ks = write_material(dev, hdr, p, None)?;
    hdr.add_keyslot(&ks)?;
    hdr.assign_keyslot_to_digest(id, digest)?;
    write_header(dev, hdr)
}

/// Re-protect existing keyslot `p.id` (new passphrase or new PBKDF) keeping its id, as
/// cryptsetup does for LUKS2: new material goes to a free area, the header switches the
/// keyslot to it, and only then is the old area wiped. A crash leaves either the old or the
/// new keyslot valid.
pub fn replace(dev: &dyn Storage, hdr: &mut Luks2Header, p: NewKeyslot<'_>) -> Result<()> {
    let old = hdr
        .keyslot(p.id)?
        .ok_or(KeyslotError::NotActive { slot: p.id })?;
    // A free area first, so that the old key material stays valid until the new header is
    // written; with none free, the old keyslot's own area is overwritten (as cryptsetup's
    // luksChangeKey does when the keyslots area is full).
    let mut ks = write_material(dev, hdr, p, Some((old.area_offset, old.area_size)))?;
    ks.priority = old.priority;
    let reused = ks.area_offset == old.area_offset;
    if reused {
        // The area keeps its size in the JSON (the material may be smaller).
        ks.area_size = old.area_size;
    }
    hdr.replace_keyslot(&ks)?;
    write_header(dev, hdr)?;
    if reused {
        return Ok(());
    }
    wipe::random(dev, old.area_offset, old.area_size)
}

/// Remove keyslot `id`: wipe its area, then drop it from the JSON and write the header.
pub fn kill(dev: &dyn Storage, hdr: &mut Luks2Header, id: u32) -> Result<()> {
    let ks = hdr
        .keyslot(id)?
        .ok_or(KeyslotError::NotActive { slot: id })?;
    wipe::random(dev, ks.area_offset, ks.area_size)?;
    hdr.remove_keyslot(id)?;
    write_header(dev, hdr)
}

/// Validate and write both header copies (cryptsetup's order and syncs).
pub fn write_header(dev: &dyn Storage, hdr: &mut Luks2Header) -> Result<()> {
    hdr.validate()?;
    luks2::write(dev, hdr)?;
    Ok(())
}
