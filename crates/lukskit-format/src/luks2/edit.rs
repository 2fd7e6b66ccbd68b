//! Edits of the LUKS2 metadata that re-encryption makes, in cryptsetup's member order:
//! segment objects (`json_segment_create_crypt`, `json_segment_create_linear`, flags),
//! digest ↔ segment and keyslot assignments, the `online-reencrypt-v2` requirement,
//! `config.keyslots_size` and the `reencrypt` keyslot (`reencrypt_keyslot_update`).
//!
//! Segments travel as [`SegmentObject`]s: the typed [`super::Segment`] view, parsed once, with
//! the JSON object kept whole (re-encryption moves segments around and must keep every member
//! cryptsetup wrote); they are made by [`crypt_segment`] and [`linear_segment`] or taken from a
//! header. This module and [`super::Luks2Header`]'s own mutators are the only writers of the
//! metadata.

pub use super::segment_object::SegmentObject;
use super::types::{ReencryptDirection, ReencryptMode};
use super::Luks2Header;
use crate::error::{FormatError, Luks2Error};
use crate::Result;
use serde_json::{Map, Value};

/// The requirement flag lukskit writes (cryptsetup 2.6's metadata version 2).
pub const REQUIREMENT_V2: &str = "online-reencrypt-v2";

/// A re-encryption metadata member that is missing or malformed.
pub(super) fn ctx(what: &'static str) -> FormatError {
    Luks2Error::ReencryptMetadata { what }.into()
}

/// A u64 as LUKS2 writes it (a decimal string).
pub fn u64_str(x: u64) -> Value {
    Value::String(x.to_string())
}

/// A u64 stored as a string; `None` when absent or not a number.
pub fn get_u64(o: &Value, key: &str) -> Option<u64> {
    o.get(key)?.as_str()?.parse().ok()
}

/// A `crypt` segment (`json_segment_create_crypt`'s member order).
pub fn crypt_segment(
    offset: u64,
    iv_tweak: u64,
    size: Option<u64>,
    cipher: &str,
    sector_size: u32,
    in_reencryption: bool,
) -> SegmentObject {
    SegmentObject::crypt(offset, iv_tweak, size, cipher, sector_size, in_reencryption)
}

/// A `linear` segment (`json_segment_create_linear`'s member order).
pub fn linear_segment(offset: u64, size: Option<u64>, in_reencryption: bool) -> SegmentObject {
    SegmentObject::linear(offset, size, in_reencryption)
}

/// The `segments` object.
pub fn segments(hdr: &Luks2Header) -> Result<&Map<String, Value>> {
    hdr.json
        .get("segments")
        .and_then(Value::as_object)
        .ok_or_else(|| ctx("no segments object"))
}

fn segments_mut(hdr: &mut Luks2Header) -> Result<&mut Map<String, Value>> {
    hdr.json
        .get_mut("segments")
        .and_then(Value::as_object_mut)
        .ok_or_else(|| ctx("no segments object"))
}

/// All segments sorted by id (members whose names are not ids are not segments and are
/// skipped, as before; a segment object that does not parse is an error).
pub fn segments_sorted(hdr: &Luks2Header) -> Result<Vec<(u32, SegmentObject)>> {
    let mut v = Vec::new();
    for (k, o) in segments(hdr)? {
        let Ok(id) = k.parse::<u32>() else {
            continue;
        };
        let o = o
            .as_object()
            .ok_or_else(|| ctx("segment is not an object"))?;
        v.push((id, SegmentObject::parse(id, o)?));
    }
    v.sort_by_key(|(id, _)| *id);
    Ok(v)
}

/// The non-backup segments (the data layout), in id order.
pub fn data_segments(hdr: &Luks2Header) -> Result<Vec<SegmentObject>> {
    Ok(segments_sorted(hdr)?
        .into_iter()
        .filter(|(_, v)| !v.is_backup())
        .map(|(_, v)| v)
        .collect())
}

/// The id and object of the segment carrying `flag`.
pub fn segment_by_flag(hdr: &Luks2Header, flag: &str) -> Result<Option<(u32, SegmentObject)>> {
    Ok(segments_sorted(hdr)?
        .into_iter()
        .find(|(_, v)| v.has_flag(flag)))
}

/// The digest a segment is assigned to.
pub fn digest_of_segment(hdr: &Luks2Header, segment: u32) -> Result<Option<u32>> {
    Ok(hdr
        .digests()?
        .into_iter()
        .find(|d| d.segments.contains(&segment))
        .map(|d| d.id))
}

fn digests_mut(hdr: &mut Luks2Header) -> Result<&mut Map<String, Value>> {
    hdr.json
        .get_mut("digests")
        .and_then(Value::as_object_mut)
        .ok_or_else(|| ctx("no digests object"))
}

/// Unassign every segment from every digest (`LUKS2_digest_segment_assign(ANY, ANY, 0)`).
pub fn unassign_all_segments(hdr: &mut Luks2Header) -> Result<()> {
    for (_, d) in digests_mut(hdr)?.iter_mut() {
        if let Some(a) = d.get_mut("segments").and_then(Value::as_array_mut) {
            a.clear();
        }
    }
    Ok(())
}

/// Append `segment` to the segments of `digest` (no-op when already there).
pub fn assign_segment(hdr: &mut Luks2Header, segment: u32, digest: u32) -> Result<()> {
    let d = digests_mut(hdr)?
        .get_mut(&digest.to_string())
        .ok_or_else(|| ctx("missing digest"))?;
    let a = d
        .get_mut("segments")
        .and_then(Value::as_array_mut)
        .ok_or_else(|| ctx("digest without segments array"))?;
    let id = Value::String(segment.to_string());
    if !a.contains(&id) {
        a.push(id);
    }
    Ok(())
}

/// Remove `segment` from every digest.
pub fn unassign_segment(hdr: &mut Luks2Header, segment: u32) -> Result<()> {
    let id = Value::String(segment.to_string());
    for (_, d) in digests_mut(hdr)?.iter_mut() {
        if let Some(a) = d.get_mut("segments").and_then(Value::as_array_mut) {
            a.retain(|s| *s != id);
        }
    }
    Ok(())
}

/// Replace the segments object with `segs` (ids 0..n in order).
pub fn set_segments(hdr: &mut Luks2Header, segs: Vec<SegmentObject>) -> Result<()> {
    let m = segments_mut(hdr)?;
    m.clear();
    for (i, s) in segs.into_iter().enumerate() {
        m.insert(i.to_string(), s.into_json());
    }
    Ok(())
}

/// Add a segment at the first unused id; returns the id.
pub fn push_segment(hdr: &mut Luks2Header, seg: SegmentObject) -> Result<u32> {
    let m = segments_mut(hdr)?;
    let mut id = 0u32;
    while m.contains_key(&id.to_string()) {
        id += 1;
    }
    m.insert(id.to_string(), seg.into_json());
    Ok(id)
}

/// Delete segment `id` (and its digest assignments).
pub fn delete_segment(hdr: &mut Luks2Header, id: u32) -> Result<()> {
    unassign_segment(hdr, id)?;
    segments_mut(hdr)?.shift_remove(&id.to_string());
    Ok(())
}

/// Set or clear the `online-reencrypt-v2` requirement, keeping other requirements
/// (`LUKS2_config_set_requirements`; an empty `requirements` object is removed).
pub fn set_requirement(hdr: &mut Luks2Header, enable: bool) -> Result<()> {
    set_requirement_version(hdr, enable.then_some(2))
}

/// `config.keyslots_size` from a data offset (`LUKS2_set_keyslots_size`): the space between
/// the two metadata copies and `data_offset`, at most 128 MiB, in whole 4 KiB blocks.
/// Nothing changes when the data offset lies within the metadata.
pub fn set_keyslots_size(hdr: &mut Luks2Header, data_offset: u64) -> Result<()> {
    let Some(size) = data_offset.checked_sub(2 * hdr.metadata_size()) else {
        return Ok(());
    };
    let size = size.min(super::MAX_KEYSLOTS_SIZE);
    let size = size - size % 4096;
    let config = hdr
        .json
        .get_mut("config")
        .and_then(Value::as_object_mut)
        .ok_or_else(|| ctx("no config object"))?;
    config.insert("keyslots_size".into(), u64_str(size));
    Ok(())
}

/// Set `online-reencrypt-v<version>` (or clear it with `None`), keeping other
/// requirements.
pub fn set_requirement_version(hdr: &mut Luks2Header, version: Option<u8>) -> Result<()> {
    let config = hdr
        .json
        .get_mut("config")
        .and_then(Value::as_object_mut)
        .ok_or_else(|| ctx("no config object"))?;
    let mut mandatory: Vec<Value> = config
        .get("requirements")
        .and_then(|r| r.get("mandatory"))
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    mandatory.retain(|v| {
        !v.as_str()
            .is_some_and(|s| s == "online-reencrypt" || s.starts_with("online-reencrypt-v"))
    });
    match version {
        Some(2) => mandatory.push(REQUIREMENT_V2.into()),
        Some(v) => mandatory.push(format!("online-reencrypt-v{v}").into()),
        None => {}
    }
    if mandatory.is_empty() {
        config.shift_remove("requirements");
    } else {
        let mut r = Map::new();
        r.insert("mandatory".into(), Value::Array(mandatory));
        config.insert("requirements".into(), Value::Object(r));
    }
    Ok(())
}

/// The metadata version of the re-encryption requirement: 1 for `online-reencrypt`, N for
/// `online-reencrypt-vN`; `None` without one.
pub fn requirement_version(hdr: &Luks2Header) -> Option<u8> {
    hdr.requirements().iter().find_map(|r| {
        if r == "online-reencrypt" {
            Some(1)
        } else {
            r.strip_prefix("online-reencrypt-v")?.parse().ok()
        }
    })
}

/// The digest a keyslot is assigned to.
pub fn digest_of_keyslot(hdr: &Luks2Header, keyslot: u32) -> Result<Option<u32>> {
    Ok(hdr
        .digests()?
        .into_iter()
        .find(|d| d.keyslots.contains(&keyslot))
        .map(|d| d.id))
}

/// Unassign `keyslot` from every digest, then drop the digests left without keyslots and
/// segments.
pub fn unassign_keyslot(hdr: &mut Luks2Header, keyslot: u32) -> Result<()> {
    let ks = Value::String(keyslot.to_string());
    for (_, d) in digests_mut(hdr)?.iter_mut() {
        if let Some(a) = d.get_mut("keyslots").and_then(Value::as_array_mut) {
            a.retain(|k| *k != ks);
        }
    }
    hdr.erase_unused_digests();
    Ok(())
}

/// Reassign `keyslot` to `digest` (dropping digests left without keyslots and segments).
pub fn move_keyslot_digest(hdr: &mut Luks2Header, keyslot: u32, digest: u32) -> Result<()> {
    unassign_keyslot(hdr, keyslot)?;
    hdr.assign_keyslot_to_digest(keyslot, digest)?;
    Ok(())
}

/// Keyslot `id` as stored (read-only), for the typed views of this crate.
pub(crate) fn keyslot_object(hdr: &Luks2Header, id: u32) -> Option<&Map<String, Value>> {
    hdr.json.get("keyslots")?.get(id.to_string())?.as_object()
}

/// The resilience area of the `reencrypt` keyslot (its `area` object), typed: where the hot
/// zone's protection lives and what it is. Written in cryptsetup's member order (`offset`,
/// `size`, `type`, then `hash` and `sector_size` or `shift_size`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReencryptArea {
    /// Byte offset of the area on the header device.
    pub offset: u64,
    /// Length of the area in bytes.
    pub size: u64,
    /// How an interrupted hot zone is recovered (`type` and its members).
    pub protection: AreaProtection,
    /// `shift_size`: the data shift in bytes (the `datashift*` types).
    pub shift_size: Option<u64>,
}

/// The `type` of a `reencrypt` keyslot area, with the members that go with it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum AreaProtection {
    /// `none`: nothing kept.
    None,
    /// `journal`: the hot zone's old ciphertext is copied to the area first.
    Journal,
    /// `checksum`: a checksum (`hash`) of every `sector_size` block of the hot zone.
    Checksum {
        /// Hash name as stored (`sha256`).
        hash: String,
        /// Bytes covered by one checksum.
        sector_size: u64,
    },
    /// `datashift`: the data moves by `shift_size`; nothing is kept.
    Datashift,
    /// `datashift-checksum`: a data shift whose moved segment is protected by checksums.
    DatashiftChecksum {
        /// Hash name as stored.
        hash: String,
        /// Bytes covered by one checksum.
        sector_size: u64,
    },
    /// `datashift-journal`: a data shift whose moved segment is protected by a journal.
    DatashiftJournal,
    /// A type this implementation does not know.
    Other(String),
}

impl AreaProtection {
    /// The `type` member.
    pub fn type_name(&self) -> &str {
        match self {
            AreaProtection::None => "none",
            AreaProtection::Journal => "journal",
            AreaProtection::Checksum { .. } => "checksum",
            AreaProtection::Datashift => "datashift",
            AreaProtection::DatashiftChecksum { .. } => "datashift-checksum",
            AreaProtection::DatashiftJournal => "datashift-journal",
            AreaProtection::Other(t) => t,
        }
    }
}

impl ReencryptArea {
    /// Parse an `area` object; `offset`, `size` and `type` must be there, and the members
    /// its type needs (`hash` and a numeric `sector_size` for checksums).
    pub fn parse(area: &Map<String, Value>) -> Result<Self> {
        let obj = Value::Object(area.clone());
        let offset = get_u64(&obj, "offset").ok_or_else(|| ctx("area offset"))?;
        let size = get_u64(&obj, "size").ok_or_else(|| ctx("area size"))?;
        let checksum = || -> Result<(String, u64)> {
            let hash = area
                .get("hash")
                .and_then(Value::as_str)
                .ok_or_else(|| ctx("checksum hash"))?;
            let sector_size = area
                .get("sector_size")
                .and_then(Value::as_u64)
                .ok_or_else(|| ctx("checksum sector size"))?;
            Ok((hash.to_string(), sector_size))
        };
        let protection = match area.get("type").and_then(Value::as_str) {
            Some("none") => AreaProtection::None,
            Some("journal") => AreaProtection::Journal,
            Some("checksum") => {
                let (hash, sector_size) = checksum()?;
                AreaProtection::Checksum { hash, sector_size }
            }
            Some("datashift") => AreaProtection::Datashift,
            Some("datashift-checksum") => {
                let (hash, sector_size) = checksum()?;
                AreaProtection::DatashiftChecksum { hash, sector_size }
            }
            Some("datashift-journal") => AreaProtection::DatashiftJournal,
            Some(other) => AreaProtection::Other(other.to_string()),
            None => return Err(ctx("area type")),
        };
        let shift_size = match area.get("shift_size") {
            None => None,
            Some(_) => Some(get_u64(&obj, "shift_size").ok_or_else(|| ctx("shift size"))?),
        };
        Ok(ReencryptArea {
            offset,
            size,
            protection,
            shift_size,
        })
    }

    /// The `area` of the `reencrypt` keyslot `id` of `hdr`.
    pub fn of(hdr: &Luks2Header, id: u32) -> Result<Self> {
        let area = keyslot_object(hdr, id)
            .and_then(|k| k.get("area"))
            .and_then(Value::as_object)
            .ok_or_else(|| ctx("no reencrypt keyslot area"))?;
        Self::parse(area)
    }

    /// The `area` object, in cryptsetup's member order.
    fn to_json(&self) -> Map<String, Value> {
        let mut m = Map::new();
        m.insert("offset".into(), u64_str(self.offset));
        m.insert("size".into(), u64_str(self.size));
        m.insert("type".into(), self.protection.type_name().into());
        match &self.protection {
            AreaProtection::Checksum { hash, sector_size }
            | AreaProtection::DatashiftChecksum { hash, sector_size } => {
                m.insert("hash".into(), hash.as_str().into());
                m.insert("sector_size".into(), (*sector_size).into());
            }
            _ => {}
        }
        if let Some(shift) = self.shift_size {
            m.insert("shift_size".into(), u64_str(shift));
        }
        m
    }
}

/// Replace the resilience `area` of the `reencrypt` keyslot `id` (a resilience switch).
pub fn set_reencrypt_area(hdr: &mut Luks2Header, id: u32, area: &ReencryptArea) -> Result<()> {
    let ks = hdr
        .json
        .get_mut("keyslots")
        .and_then(|k| k.get_mut(id.to_string()))
        .and_then(Value::as_object_mut)
        .filter(|k| k.get("type").and_then(Value::as_str) == Some("reencrypt"))
        .ok_or_else(|| ctx("no reencrypt keyslot"))?;
    ks.insert("area".into(), Value::Object(area.to_json()));
    Ok(())
}

/// Add the `reencrypt` keyslot `slot` with resilience `area`, `mode` and `direction`
/// (cryptsetup's `reencrypt_keyslot_update`), and mark the header as in re-encryption.
pub fn insert_reencrypt_keyslot(
    hdr: &mut Luks2Header,
    slot: u32,
    area: &ReencryptArea,
    mode: &ReencryptMode,
    direction: &ReencryptDirection,
) -> Result<()> {
    let mut ks = Map::new();
    ks.insert("area".into(), Value::Object(area.to_json()));
    ks.insert("type".into(), "reencrypt".into());
    ks.insert("key_size".into(), 1.into());
    ks.insert("mode".into(), mode.as_str().into());
    ks.insert("direction".into(), direction.as_str().into());
    ks.insert("priority".into(), 0.into());
    hdr.json
        .get_mut("keyslots")
        .and_then(Value::as_object_mut)
        .ok_or_else(|| ctx("no keyslots object"))?
        .insert(slot.to_string(), Value::Object(ks));
    set_requirement(hdr, true)
}

/// Reserve keyslot `id`'s area `[offset, offset + size)` with a `placeholder` keyslot, so
/// that the next [`Luks2Header::find_keyslot_area`] looks past it (planning a LUKS1 layout in
/// a scratch copy of a header, as `convert` does).
pub fn insert_placeholder_keyslot(
    hdr: &mut Luks2Header,
    id: u32,
    offset: u64,
    size: u64,
) -> Result<()> {
    let mut area = Map::new();
    area.insert("offset".into(), u64_str(offset));
    area.insert("size".into(), u64_str(size));
    let mut ks = Map::new();
    ks.insert("type".into(), "placeholder".into());
    ks.insert("area".into(), Value::Object(area));
    hdr.json
        .get_mut("keyslots")
        .and_then(Value::as_object_mut)
        .ok_or_else(|| ctx("no keyslots object"))?
        .insert(id.to_string(), Value::Object(ks));
    Ok(())
}
