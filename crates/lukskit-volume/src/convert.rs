//! In-place conversion between LUKS1 and LUKS2 (`cryptsetup convert`).
//!
//! Follows cryptsetup's `LUKS2_luks1_to_luks2` / `LUKS2_luks2_to_luks1`
//! (`lib/luks2/luks2_luks1_convert.c`) so that the result is byte-for-byte what
//! cryptsetup 2.6 produces (apart from the random per-copy salts of a new LUKS2 header):
//!
//! * LUKS1 → LUKS2: the LUKS2 metadata is 16 KiB per copy (12 KiB JSON); the LUKS1 key
//!   material `[4096, end of the last keyslot)` is moved by `2·16384 − 4096 = 28672` bytes to
//!   start at 32 KiB; `keyslots_size` is the data offset (the header device size for a
//!   detached header) minus 32 KiB, rounded down to 4 KiB; the 20-byte LUKS1 digest, every
//!   salt and iteration count are kept, so the volume key and all passphrases are unchanged.
//! * LUKS2 → LUKS1: only when the header is LUKS1-expressible (one PBKDF2 digest, one data
//!   segment with 512-byte sectors, no tokens, no requirements, keyslots 0–7 only, each
//!   PBKDF2 with the digest's hash as KDF and AF hash, 4000 stripes, the segment cipher as
//!   keyslot cipher, a LUKS1-sized area); the keyslots area is moved back from 32 KiB to
//!   4 KiB, the first 4 KiB are zeroed and the phdr is written.
//!
//! Every check is made before the first write. The write order is cryptsetup's: key material
//! first (read back the target region, read the source, write, sync), then the new header.
//! Like cryptsetup's, the conversion is **not** crash-safe: the old and new headers overlap the
//! key material being moved, so an interruption between the move and the header write leaves
//! neither format usable. Take a `luksHeaderBackup` first.

use crate::claim::{Claim, ClaimError};
use crate::device::Device;
use crate::error::{ConvertError, IoOp, Luks1Incompatibility, Result, VolumeError};
use crate::volume::{CopyState, Header, Volume};
use crate::{luks1_keys, wipe};
use lukskit_crypto::engine::SectorCipher;
use lukskit_crypto::hash::HashAlg;
use lukskit_crypto::spec::CipherSpec;
use lukskit_format::io::Storage;
use lukskit_format::luks1::{self, Luks1Header, NUM_KEYSLOTS};
use lukskit_format::luks2::{
    self, Digest, KdfParams, Keyslot, Luks2Header, NewHeaderParams, Segment,
};
use lukskit_format::VolumeType;
use zeroize::Zeroizing;

/// Size of one LUKS2 metadata copy written by a conversion (`LUKS2_HDR_16K_LEN`).
pub const CONVERT_METADATA_SIZE: u64 = 0x4000;
/// Offset of the first LUKS1 keyslot (`LUKS_ALIGN_KEYSLOTS`).
const LUKS1_KEYSLOTS_OFFSET: u64 = 4096;
/// How far key material moves: `2 * 16 KiB - 4 KiB`.
pub const KEYSLOTS_SHIFT: u64 = 2 * CONVERT_METADATA_SIZE - LUKS1_KEYSLOTS_OFFSET;
const SECTOR: u64 = 512;

/// The cryptsetup name of a LUKS version ("LUKS1", "LUKS2").
pub fn type_name(t: VolumeType) -> &'static str {
    t.name()
}

/// Refuse a conversion to the type the volume already has ([`ConvertError::AlreadyType`]).
pub fn check_target(vol: &Volume, target: VolumeType) -> Result<()> {
    let same = matches!(
        (&vol.header, target),
        (Header::Luks1(_), VolumeType::Luks1) | (Header::Luks2(_), VolumeType::Luks2)
    );
    if same {
        return Err(ConvertError::AlreadyType {
            target: type_name(target),
        }
        .into());
    }
    Ok(())
}

/// Convert `vol` in place to `target`. All preconditions are checked before anything is
/// written; on success `vol.header` holds the new header. A refusal is a
/// [`ConvertError`] ([`ConvertError::InUse`] when the volume is active).
pub fn convert(vol: &mut Volume, target: VolumeType) -> Result<()> {
    check_target(vol, target)?;
    // As cryptsetup: never convert the header of a volume that is open (its mapping would go
    // on with metadata that no longer describes it).
    let _claim = Claim::acquire(&vol.data_path).map_err(|e| match e {
        ClaimError::InUse => ConvertError::InUse {
            path: vol.data_path.clone(),
        }
        .into(),
        ClaimError::Io(e) => VolumeError::io(IoOp::Open, &vol.data_path, e),
    })?;
    let new_header = match vol.header() {
        Header::Luks1(h1) => Header::Luks2(luks1_to_luks2(&vol.dev, h1)?),
        Header::Luks2(h2) => Header::Luks1(luks2_to_luks1(&vol.dev, h2, vol.detached)?),
    };
    vol.header = new_header;
    vol.copies = CopyState {
        primary_ok: true,
        secondary_ok: true,
        ..Default::default()
    };
    Ok(())
}

fn round_up(v: u64, align: u64) -> u64 {
    v.div_ceil(align) * align
}

/// Whether a dm device of this volume is active (`luks_header_in_use`: a dm UUID starting
/// with `CRYPT-<TYPE>-<uuid without dashes>-`). Looked up in sysfs; when sysfs cannot be
/// read the volume is taken as not in use.
fn in_use(kind: &str, uuid: &str) -> bool {
    let prefix = format!("CRYPT-{kind}-{}-", uuid.replace('-', ""));
    let Ok(entries) = std::fs::read_dir("/sys/block") else {
        return false;
    };
    entries.flatten().any(|e| {
        std::fs::read_to_string(e.path().join("dm/uuid"))
            .map(|u| u.trim_end().starts_with(&prefix))
            .unwrap_or(false)
    })
}

fn check_not_in_use(dev: &Device, kind: &str, uuid: &str) -> Result<()> {
    if in_use(kind, uuid) {
        return Err(ConvertError::InUse {
            path: dev.path().to_string(),
        }
        .into());
    }
    Ok(())
}

/// `move_keyslot_areas`: check that the target region can be read (a trimmed header backup
/// fails here), read the source region, write it to the target, sync.
fn move_keyslot_areas(dev: &Device, from: u64, to: u64, len: u64) -> Result<()> {
    let fail = || VolumeError::from(ConvertError::MoveArea);
    let n = usize::try_from(len).map_err(|_| fail())?;
    let mut buf = Zeroizing::new(vec![0u8; n]);
    dev.read_exact_at(&mut buf, to).map_err(|_| fail())?;
    dev.read_exact_at(&mut buf, from).map_err(|_| fail())?;
    let res = dev.write_all_at(&buf, to);
    let synced = dev.sync();
    res.and(synced).map_err(|_| fail())
}

/// Whether the device is a regular file that `posix_fallocate` may extend.
fn can_extend(dev: &Device) -> bool {
    dev.file()
        .and_then(|f| f.metadata().ok())
        .is_some_and(|m| m.is_file())
}

// ---------------------------------------------------------------------------------------
// LUKS1 -> LUKS2
// ---------------------------------------------------------------------------------------

/// A LUKS2 header shell (binary header with fresh random salts, seqid 1, 16 KiB copies)
/// whose JSON is then replaced. The placeholder parameters only have to pass validation.
fn luks2_shell() -> Result<Luks2Header> {
    let digest = Digest {
        id: 0,
        kind: lukskit_format::luks2::DigestType::Pbkdf2,
        keyslots: vec![],
        segments: vec![0],
        hash: "sha256".into(),
        iterations: 1000,
        salt: vec![0; luks2::SALT_SIZE],
        digest: vec![0; 32],
    };
    Ok(Luks2Header::new(&NewHeaderParams {
        metadata_size: CONVERT_METADATA_SIZE,
        keyslots_size: 4096,
        data_offset: 0,
        data_size: None,
        encryption: "aes-xts-plain64".into(),
        sector_size: 512,
        uuid: "00000000-0000-4000-8000-000000000000".into(),
        label: String::new(),
        subsystem: String::new(),
        digest,
    })?)
}

fn luks1_to_luks2(dev: &Device, h: &Luks1Header) -> Result<Luks2Header> {
    // Data offset, or for a detached header (payload offset 0) the header device size.
    let mut max_size = u64::from(h.payload_offset) * SECTOR;
    if max_size == 0 {
        max_size = dev
            .size()
            .map_err(|e| VolumeError::io(IoOp::ReadSize, dev.path(), e))?;
    }
    let luks1_size = round_up(h.keyslots_end_bytes(), LUKS1_KEYSLOTS_OFFSET);
    if luks1_size == 0 {
        return Err(ConvertError::Luks1HeaderSize.into());
    }
    let first = h
        .keyslots
        .iter()
        .map(|k| u64::from(k.key_material_offset))
        .min()
        .unwrap_or(0);
    if first * SECTOR != LUKS1_KEYSLOTS_OFFSET {
        // cryptsetup refuses this silently ("Unsupported keyslots material offset").
        return Err(ConvertError::MaterialOffset { offset: first }.into());
    }
    let spec = CipherSpec::from_luks1(&h.cipher_name, &h.cipher_mode);
    let usable = spec
        .as_ref()
        .map(|s| SectorCipher::check(s, h.key_bytes as usize, 512).is_ok())
        .unwrap_or(false);
    if !usable {
        return Err(ConvertError::CipherForLuks2 {
            cipher: h.cipher_name.clone(),
            mode: h.cipher_mode.clone(),
        }
        .into());
    }
    // Foreign metadata of the luksmeta package right after the LUKS1 keyslots.
    let mut magic = [0u8; 8];
    if dev.read_exact_at(&mut magic, luks1_size).is_ok() && &magic == b"LUKSMETA" {
        return Err(ConvertError::LuksMeta.into());
    }
    let required = luks1_size + KEYSLOTS_SHIFT;
    if max_size < required {
        // cryptsetup preallocates the missing space; only regular files can grow.
        if !can_extend(dev) {
            return Err(ConvertError::NoSpace.into());
        }
        max_size = required;
    }
    if max_size < 2 * CONVERT_METADATA_SIZE {
        return Err(ConvertError::Luks1HeaderSize.into());
    }
    let mut hdr = luks2_shell()?;
    hdr.binary.uuid = h.uuid.clone();
    hdr.set_json_from_luks1(h, KEYSLOTS_SHIFT, max_size - 2 * CONVERT_METADATA_SIZE)
        .map_err(|_| ConvertError::InvalidMetadata)?;
    if max_size < hdr.hdr_and_areas_size()? {
        return Err(ConvertError::NoSpace.into());
    }
    check_not_in_use(dev, "LUKS1", &h.uuid)?;
    let len = luks1_size - LUKS1_KEYSLOTS_OFFSET;
    if len > hdr.keyslots_size()? {
        return Err(ConvertError::AreaTooSmall.into());
    }
    // posix_fallocate of the new area: grows a regular file when needed.
    if can_extend(dev) {
        dev.ensure_len(2 * CONVERT_METADATA_SIZE + len)?;
    }
    move_keyslot_areas(dev, LUKS1_KEYSLOTS_OFFSET, 2 * CONVERT_METADATA_SIZE, len)?;
    luks2::write(dev, &mut hdr)?;
    Ok(hdr)
}

// ---------------------------------------------------------------------------------------
// LUKS2 -> LUKS1
// ---------------------------------------------------------------------------------------

/// `LUKS2_unmet_requirements(cd, hdr, 0, 0)`: any mandatory requirement blocks conversion.
fn check_requirements(h: &Luks2Header) -> Result<()> {
    let reqs = h.requirements();
    if reqs.is_empty() {
        return Ok(());
    }
    let legacy = reqs.iter().any(|r| r == "offline-reencrypt");
    let other = reqs
        .iter()
        .any(|r| r != "offline-reencrypt" && !r.starts_with("online-reencrypt"));
    let e = if !h.unknown_requirements().is_empty() || other {
        ConvertError::UnmetRequirements
    } else if legacy {
        ConvertError::LegacyReencryption
    } else {
        ConvertError::Reencryption
    };
    Err(e.into())
}

/// `crypt_parse_name_and_mode` for the cipher specs LUKS1 can hold: ("aes", "xts-plain64").
fn parse_name_and_mode(spec: &str) -> Option<(String, String)> {
    if spec.starts_with("capi:") {
        return None;
    }
    if let Some((name, mode)) = spec.split_once('-') {
        if name.is_empty() || mode.is_empty() || name.len() > 31 || mode.len() > 31 {
            return None;
        }
        let mode = if mode == "plain" { "cbc-plain" } else { mode };
        return Some((name.to_string(), mode.to_string()));
    }
    if spec == "null" || spec == "cipher_null" {
        return Some(("cipher_null".into(), "ecb".into()));
    }
    if spec.is_empty() || spec.len() > 31 {
        return None;
    }
    Some((spec.to_string(), "cbc-plain".into()))
}

/// `crypt_cipher_wrapped_key`: ciphers whose key is a hardware-wrapped token (s390 `paes`).
fn wrapped_key_cipher(name: &str, mode: &str) -> bool {
    name.starts_with("paes") || (name == "xts" && mode.starts_with("paes"))
}

/// `keyslot_LUKS1_compatible`: a LUKS1 keyslot can describe this LUKS2 keyslot.
fn keyslot_luks1_compatible(ks: &Keyslot, key_size: u32, hash: &str, data_cipher: &str) -> bool {
    if ks.kind != lukskit_format::luks2::KeyslotType::Luks2 {
        return false;
    }
    let KdfParams::Pbkdf2 { hash: kdf_hash, .. } = &ks.kdf else {
        return false;
    };
    if kdf_hash != hash || ks.af_stripes != luks1::STRIPES || ks.af_hash != hash {
        return false;
    }
    if HashAlg::from_name(&ks.af_hash).is_err() {
        return false;
    }
    if ks.area_encryption != data_cipher || ks.area_key_size != key_size {
        return false;
    }
    let material = u64::from(Luks1Header::keyslot_material_sectors(key_size)) * SECTOR;
    ks.area_size == round_up(material, 4096)
}

fn not_luks1(why: Luks1Incompatibility) -> VolumeError {
    ConvertError::NotLuks1(why).into()
}

/// The checks of `LUKS2_luks2_to_luks1` and the LUKS1 header they lead to (nothing written).
fn luks1_from_luks2(dev: &Device, h: &Luks2Header, detached: bool) -> Result<Luks1Header> {
    check_requirements(h)?;
    let digests = h.digests()?;
    let segments = h.segments()?;
    let digest = digests
        .iter()
        .find(|d| d.id == 0)
        .ok_or_else(|| not_luks1(Luks1Incompatibility::Digests))?;
    let segment: &Segment = segments
        .iter()
        .find(|s| s.id == 0)
        .ok_or_else(|| not_luks1(Luks1Incompatibility::Segments))?;
    if segment.sector_size != 512 {
        return Err(not_luks1(Luks1Incompatibility::SectorSize));
    }
    if digest.kind != lukskit_format::luks2::DigestType::Pbkdf2 || digests.len() != 1 {
        return Err(not_luks1(Luks1Incompatibility::Digests));
    }
    let hash = digest.hash.as_str();
    if HashAlg::from_name(hash).is_err() {
        return Err(VolumeError::HashUnsupported {
            hash: hash.to_string(),
        });
    }
    let (seg_name, seg_mode) = parse_name_and_mode(&segment.encryption).ok_or_else(|| {
        not_luks1(Luks1Incompatibility::CipherSpec {
            cipher: segment.encryption.clone(),
        })
    })?;
    if wrapped_key_cipher(&seg_name, &seg_mode) {
        return Err(not_luks1(Luks1Incompatibility::WrappedKey {
            cipher: seg_name.clone(),
        }));
    }
    if segments.len() != 1 {
        return Err(not_luks1(Luks1Incompatibility::Segments));
    }
    let tokens = h.tokens()?.len();
    if tokens > 0 {
        return Err(not_luks1(Luks1Incompatibility::Tokens { count: tokens }));
    }
    let keyslots = h.keyslots()?;
    // LUKS2_get_volume_key_size(hdr, 0): the key size of a keyslot of digest 0.
    let key_size = keyslots
        .iter()
        .find(|k| digest.segments.contains(&0) && digest.keyslots.contains(&k.id))
        .map(|k| k.key_size)
        .ok_or_else(|| not_luks1(Luks1Incompatibility::NoActiveKeyslots))?;
    for ks in &keyslots {
        let bound = digests
            .iter()
            .any(|d| d.keyslots.contains(&ks.id) && !d.segments.is_empty());
        if !bound {
            return Err(not_luks1(Luks1Incompatibility::Unbound { slot: ks.id }));
        }
        if ks.id as usize >= NUM_KEYSLOTS {
            return Err(not_luks1(Luks1Incompatibility::OverMaximum { slot: ks.id }));
        }
        if !keyslot_luks1_compatible(ks, key_size, hash, &segment.encryption) {
            return Err(not_luks1(Luks1Incompatibility::Keyslot { slot: ks.id }));
        }
    }

    // Keyslot offsets: active keyslots keep their areas; every inactive one gets the first
    // free gap, reserved by a placeholder so that the next one lands elsewhere.
    let mut scratch = h.clone();
    let area_size = Luks2Header::keyslot_area_size(key_size);
    let mut offsets = [0u32; NUM_KEYSLOTS];
    for (i, off) in offsets.iter_mut().enumerate() {
        let area_offset = match keyslots.iter().find(|k| k.id as usize == i) {
            Some(ks) => ks.area_offset,
            None => {
                let gap = scratch
                    .find_keyslot_area(area_size)?
                    .ok_or_else(|| not_luks1(Luks1Incompatibility::NoSpace { slot: i as u32 }))?;
                luks2::edit::insert_placeholder_keyslot(&mut scratch, i as u32, gap, area_size)?;
                gap
            }
        };
        let sectors = area_offset / SECTOR;
        *off = u32::try_from(sectors)
            .ok()
            .and_then(|s| s.checked_sub((KEYSLOTS_SHIFT / SECTOR) as u32))
            .ok_or_else(|| not_luks1(Luks1Incompatibility::AreaOffset { slot: i as u32 }))?;
    }

    let (name, mode) = (seg_name, seg_mode);
    let mut mk_digest = [0u8; luks1::DIGEST_SIZE];
    if digest.digest.len() < luks1::DIGEST_SIZE {
        return Err(not_luks1(Luks1Incompatibility::Digests));
    }
    mk_digest.copy_from_slice(&digest.digest[..luks1::DIGEST_SIZE]);
    let mk_salt: [u8; luks1::SALT_SIZE] = digest
        .salt
        .as_slice()
        .try_into()
        .map_err(|_| not_luks1(Luks1Incompatibility::Digests))?;
    let payload = u32::try_from(segment.offset / SECTOR)
        .map_err(|_| not_luks1(Luks1Incompatibility::DataOffset))?;
    let mut h1 = Luks1Header::new(
        &name,
        &mode,
        hash,
        key_size,
        payload,
        offsets,
        mk_digest,
        mk_salt,
        digest.iterations,
        "",
    );
    // Copied verbatim, as cryptsetup does (Luks1Header::new lower-cases them).
    h1.hash_spec = hash.to_string();
    h1.uuid = h.binary.uuid.clone();
    for ks in &keyslots {
        let slot = &mut h1.keyslots[ks.id as usize];
        slot.active = true;
        if let KdfParams::Pbkdf2 {
            iterations, salt, ..
        } = &ks.kdf
        {
            slot.iterations = *iterations;
            if let Ok(s) = <[u8; luks1::SALT_SIZE]>::try_from(salt.as_slice()) {
                slot.salt = s;
            }
        }
    }

    // cryptsetup finds a broken result only when it re-reads the phdr after overwriting the
    // LUKS2 metadata; check it first.
    let size = if detached { None } else { dev.size().ok() };
    h1.validate(size)
        .map_err(|e| not_luks1(Luks1Incompatibility::Header(e)))?;
    // Only `keyslots_size` bytes from 32 KiB are moved: every active keyslot must lie inside.
    let moved_end = LUKS1_KEYSLOTS_OFFSET + h.keyslots_size()?;
    for ks in &keyslots {
        let (off, len) = h1.keyslot_area(ks.id as usize);
        if off + len > moved_end {
            return Err(not_luks1(Luks1Incompatibility::OutsideArea { slot: ks.id }));
        }
    }
    Ok(h1)
}

fn luks2_to_luks1(dev: &Device, h: &Luks2Header, detached: bool) -> Result<Luks1Header> {
    let h1 = luks1_from_luks2(dev, h, detached)?;
    check_not_in_use(dev, "LUKS2", &h.binary.uuid)?;
    move_keyslot_areas(
        dev,
        2 * CONVERT_METADATA_SIZE,
        LUKS1_KEYSLOTS_OFFSET,
        h.keyslots_size()?,
    )?;
    wipe::zero(dev, 0, LUKS1_KEYSLOTS_OFFSET)?;
    luks1_keys::write_header(dev, &h1)?;
    Ok(h1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cipher_names_split_like_cryptsetup() {
        assert_eq!(
            parse_name_and_mode("aes-xts-plain64"),
            Some(("aes".into(), "xts-plain64".into()))
        );
        assert_eq!(
            parse_name_and_mode("aes-cbc-essiv:sha256"),
            Some(("aes".into(), "cbc-essiv:sha256".into()))
        );
        assert_eq!(
            parse_name_and_mode("aes-plain"),
            Some(("aes".into(), "cbc-plain".into()))
        );
        assert_eq!(parse_name_and_mode("capi:xts(aes)-plain64"), None);
    }

    #[test]
    fn shift_is_cryptsetups() {
        // 2 * LUKS2_HDR_16K_LEN - LUKS_ALIGN_KEYSLOTS (reference §1.18).
        assert_eq!(KEYSLOTS_SHIFT, 28672);
    }
}
