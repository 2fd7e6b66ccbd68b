//! Reading and writing the two metadata copies (`luks2_disk_metadata.c`).

use super::binary::{checksum_hash, checksum_matches, compute_checksum, BinaryHeader, OFF_CSUM};
use super::json::parse_json_area;
use super::metadata::Luks2Header;
use super::validate::{repair_json, validate_json};
use super::{BINARY_HEADER_SIZE, MAGIC_PRIMARY, METADATA_SIZES};
use crate::error::CopyProblem;
use crate::io::Storage;
use crate::{FormatError, Luks2Error, NotLuks, Result};
use serde_json::{Map, Value};

/// What reading both copies found.
#[derive(Debug)]
pub struct ReadOutcome {
    /// The header of the valid copy with the higher seqid (the primary on a tie).
    pub header: Luks2Header,
    /// The primary copy is valid and current.
    pub primary_ok: bool,
    /// The secondary copy is valid and current.
    pub secondary_ok: bool,
    /// Why the primary copy is not usable (damaged, or obsolete = lower seqid).
    pub primary_error: Option<String>,
    /// Why the secondary copy is not usable.
    pub secondary_error: Option<String>,
}

/// State of one copy, as in `LUKS2_disk_hdr_read`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Sanity, checksum and JSON validation passed.
    Ok,
    /// Binary header and checksum are fine but the JSON is invalid, or a valid copy with a
    /// lower seqid than the other one.
    Obsolete,
    /// Sanity or checksum failed.
    Fail,
    /// The device could not be read.
    FailIo,
}

struct Copy {
    state: State,
    /// Binary header, present once sanity and checksum passed.
    bin: Option<BinaryHeader>,
    json: Option<Map<String, Value>>,
    error: Option<CopyProblem>,
    /// The magic matched (tells "not LUKS at all" from "damaged").
    magic_seen: bool,
}

impl Copy {
    fn failed(state: State, error: CopyProblem, magic_seen: bool) -> Self {
        Copy {
            state,
            bin: None,
            json: None,
            error: Some(error),
            magic_seen,
        }
    }
}

fn read_at(storage: &dyn Storage, len: usize, offset: u64) -> std::io::Result<Vec<u8>> {
    let mut buf = vec![0u8; len];
    storage.read_exact_at(&mut buf, offset)?;
    Ok(buf)
}

/// `hdr_read_disk` followed by `parse_and_validate_json` for one copy at `offset`.
fn read_copy(storage: &dyn Storage, offset: u64, secondary: bool) -> Copy {
    let bin_bytes = match read_at(storage, BINARY_HEADER_SIZE, offset) {
        Ok(b) => b,
        Err(e) => {
            return Copy::failed(
                State::FailIo,
                CopyProblem::Other(format!("read error at offset {offset}: {e}")),
                false,
            )
        }
    };
    let magic_seen = bin_bytes[..6]
        == if secondary {
            super::MAGIC_SECONDARY
        } else {
            MAGIC_PRIMARY
        };
    let bin = match BinaryHeader::parse(&bin_bytes, secondary) {
        Ok(b) => b,
        Err(e) => return Copy::failed(State::Fail, CopyProblem::Header(Box::new(e)), magic_seen),
    };
    if bin.hdr_offset != offset {
        return Copy::failed(
            State::Fail,
            CopyProblem::Other(format!(
                "LUKS2 offset 0x{:04x} in header does not match its position 0x{offset:04x}.",
                bin.hdr_offset
            )),
            magic_seen,
        );
    }
    let area_len = (bin.hdr_size - BINARY_HEADER_SIZE as u64) as usize;
    let area = match read_at(storage, area_len, offset + BINARY_HEADER_SIZE as u64) {
        Ok(a) => a,
        Err(e) => {
            return Copy::failed(
                State::FailIo,
                CopyProblem::Other(format!("read error in JSON area at offset {offset}: {e}")),
                magic_seen,
            )
        }
    };
    let alg = match checksum_hash(&bin.checksum_alg) {
        Ok(a) => a,
        Err(e) => return Copy::failed(State::Fail, CopyProblem::Header(Box::new(e)), magic_seen),
    };
    if !checksum_matches(alg, &bin_bytes, &area) {
        return Copy::failed(
            State::Fail,
            CopyProblem::Other(format!("LUKS2 header checksum error (offset {offset}).")),
            magic_seen,
        );
    }
    let mut copy = Copy {
        state: State::Ok,
        bin: Some(bin),
        json: None,
        error: None,
        magic_seen,
    };
    match parse_json_area(&area) {
        Err(e) => {
            copy.state = State::Obsolete;
            copy.error = Some(CopyProblem::Other(format!("invalid JSON area: {e}")));
        }
        Ok(mut json) => {
            // validate_luks2_json_object: validate, on failure repair known glitches and retry.
            let first = validate_json(&json, area_len as u64);
            let res = match first {
                Ok(()) => Ok(()),
                Err(e) => {
                    repair_json(&mut json);
                    validate_json(&json, area_len as u64).map_err(|_| e)
                }
            };
            match res {
                Ok(()) => copy.json = Some(json),
                Err(e) => {
                    copy.state = State::Obsolete;
                    copy.error = Some(CopyProblem::Other(format!(
                        "LUKS2 metadata validation failed: {e}"
                    )));
                }
            }
        }
    }
    copy
}

/// Read both copies (primary at 0; secondary at the primary's `hdr_size`, or — when the
/// primary's binary header or checksum is unusable — at the first of the nine possible
/// offsets where a secondary passes sanity and checksum), run sanity → checksum → JSON
/// parse → validation (with cryptsetup's in-memory repair of known glitches) on each, and
/// choose the valid copy with the higher seqid (the primary on a tie). Nothing is written;
/// the caller decides about recovery ([`write_copy`]). Fails if neither copy is valid, or if
/// the device is smaller than both copies plus the keyslots area.
pub fn read(storage: &dyn Storage) -> Result<ReadOutcome> {
    let mut p = read_copy(storage, 0, false);
    let mut s = if matches!(p.state, State::Ok | State::Obsolete) {
        let off = p.bin.as_ref().map_or(0, |b| b.hdr_size);
        read_copy(storage, off, true)
    } else {
        let mut last = Copy::failed(State::Fail, CopyProblem::NoSecondary, false);
        let mut magic_seen = false;
        for off in METADATA_SIZES {
            let c = read_copy(storage, off, true);
            magic_seen |= c.magic_seen;
            let passed = matches!(c.state, State::Ok | State::Obsolete);
            last = c;
            if passed {
                break;
            }
        }
        last.magic_seen |= magic_seen;
        if !matches!(last.state, State::Ok | State::Obsolete) && last.state != State::FailIo {
            last.error = Some(match last.error.take() {
                Some(e) if magic_seen => CopyProblem::NoUsableSecondary(Box::new(e)),
                _ => CopyProblem::NoSecondaryAnywhere,
            });
        }
        last
    };

    if p.state == State::Ok && s.state == State::Ok {
        let (ps, ss) = (
            p.bin.as_ref().map_or(0, |b| b.seqid),
            s.bin.as_ref().map_or(0, |b| b.seqid),
        );
        if ps > ss {
            s.state = State::Obsolete;
            s.error = Some(CopyProblem::Other(format!(
                "obsolete copy (seqid {ss} < {ps})"
            )));
        } else if ps < ss {
            p.state = State::Obsolete;
            p.error = Some(CopyProblem::Other(format!(
                "obsolete copy (seqid {ps} < {ss})"
            )));
        }
    }

    let chosen_secondary = if p.state == State::Ok {
        false
    } else if s.state == State::Ok {
        true
    } else {
        if p.state == State::FailIo && s.state == State::FailIo {
            return Err(FormatError::io(
                "Cannot read LUKS2 header",
                std::io::Error::other(p.error.map(|e| e.to_string()).unwrap_or_default()),
            ));
        }
        if !p.magic_seen && !s.magic_seen {
            return Err(NotLuks::NoLuks2Copy.into());
        }
        return Err(Luks2Error::NoValidCopy {
            primary: p.error.unwrap_or(CopyProblem::Unknown),
            secondary: s.error.unwrap_or(CopyProblem::Unknown),
        }
        .into());
    };

    // A valid, current copy keeps its salt; a damaged or obsolete one will be rewritten with a
    // fresh salt (cryptsetup: "Always regenerate salt for bad header").
    let salt_of = |c: &Copy| -> Result<[u8; 64]> {
        match (&c.bin, c.state) {
            (Some(b), State::Ok) => Ok(b.salt),
            _ => {
                let mut s = [0u8; 64];
                lukskit_crypto::random::fill(&mut s)?;
                Ok(s)
            }
        }
    };
    let primary_salt = salt_of(&p)?;
    let secondary_salt = salt_of(&s)?;
    let (chosen, json) = if chosen_secondary {
        (s.bin.clone(), s.json.take())
    } else {
        (p.bin.clone(), p.json.take())
    };
    let (Some(mut binary), Some(json)) = (chosen, json) else {
        return Err(Luks2Error::Internal.into());
    };
    binary.hdr_offset = 0;
    binary.salt = primary_salt;
    let header = Luks2Header::from_parts(binary, json, secondary_salt);

    let need = header.hdr_and_areas_size()?;
    let size = storage
        .size()
        .map_err(|e| FormatError::io("Cannot get device size", e))?;
    if size < need {
        return Err(Luks2Error::DeviceTooSmall { need }.into());
    }

    Ok(ReadOutcome {
        header,
        primary_ok: p.state == State::Ok,
        secondary_ok: s.state == State::Ok,
        primary_error: if p.state == State::Ok {
            None
        } else {
            p.error.map(|e| e.to_string())
        },
        secondary_error: if s.state == State::Ok {
            None
        } else {
            s.error.map(|e| e.to_string())
        },
    })
}

/// `hdr_write_disk`: write one copy — binary header with zeroed checksum, the whole JSON
/// area, then the binary header with its checksum — and sync.
fn write_one(
    storage: &dyn Storage,
    hdr: &Luks2Header,
    json_area: &[u8],
    secondary: bool,
    salt: &[u8; 64],
) -> Result<[u8; 64]> {
    let offset = if secondary { hdr.metadata_size() } else { 0 };
    let mut bin = hdr.binary.clone();
    bin.hdr_offset = offset;
    bin.salt = *salt;
    bin.csum = [0; 64];
    let alg = checksum_hash(&bin.checksum_alg)?;
    let mut bytes = bin.to_bytes(secondary);
    let which = if secondary { "secondary" } else { "primary" };
    let io =
        |what: &str, e| FormatError::io(format!("Cannot write {which} LUKS2 header ({what})"), e);
    storage
        .write_all_at(&bytes, offset)
        .map_err(|e| io("binary header", e))?;
    storage
        .write_all_at(json_area, offset + BINARY_HEADER_SIZE as u64)
        .map_err(|e| io("JSON area", e))?;
    let csum = compute_checksum(alg, &bytes, json_area);
    bytes[OFF_CSUM..OFF_CSUM + 64].copy_from_slice(&csum);
    storage
        .write_all_at(&bytes, offset)
        .map_err(|e| io("checksum", e))?;
    storage.sync().map_err(|e| io("sync", e))?;
    Ok(csum)
}

/// Serialise the JSON into a zero-filled JSON area; fails if it does not fit with its
/// trailing NUL (`LUKS2_disk_hdr_write`).
fn json_area(hdr: &Luks2Header) -> Result<Vec<u8>> {
    if hdr.binary.version != 2 {
        return Err(Luks2Error::WriteUnsupportedVersion {
            version: hdr.binary.version,
        }
        .into());
    }
    let area_len = hdr.json_area_size() as usize;
    let text = hdr.to_json_string();
    if text.is_empty() || text.len() > area_len.saturating_sub(1) {
        return Err(Luks2Error::JsonTooLarge {
            len: text.len(),
            max: area_len.saturating_sub(1),
        }
        .into());
    }
    let mut area = vec![0u8; area_len];
    area[..text.len()].copy_from_slice(text.as_bytes());
    Ok(area)
}

/// Make sure the storage holds both copies and the keyslots area (`device_check_size` with
/// allocation): a regular file or memory buffer is extended, a device that is too small is
/// an error.
fn ensure_size(storage: &dyn Storage, need: u64) -> Result<()> {
    let size = storage
        .size()
        .map_err(|e| FormatError::io("Cannot get device size", e))?;
    if size >= need {
        return Ok(());
    }
    let extended = storage.write_all_at(&[0], need - 1).is_ok()
        && storage.size().map(|s| s >= need).unwrap_or(false);
    if !extended {
        return Err(Luks2Error::DeviceTooSmall { need }.into());
    }
    Ok(())
}

/// cryptsetup's update protocol (`LUKS2_hdr_write` → `LUKS2_disk_hdr_write`): erase unused
/// digests, validate, serialise (failing if the JSON does not fit the area with its NUL),
/// increase `seqid` once (both copies get the same seqid), then write the primary copy and
/// the secondary copy — each as binary header with zeroed checksum, whole JSON area,
/// checksum (`checksum_alg` over binary-with-zero-csum ‖ JSON area), binary header with
/// checksum, sync. Each copy keeps its own salt (see the module docs). On success
/// `hdr.binary.csum` holds the primary's checksum.
pub fn write(storage: &dyn Storage, hdr: &mut Luks2Header) -> Result<()> {
    hdr.erase_unused_digests();
    hdr.validate()?;
    let area = json_area(hdr)?;
    ensure_size(storage, hdr.hdr_and_areas_size()?)?;
    hdr.binary.seqid += 1;
    hdr.binary.hdr_offset = 0;
    let salt1 = hdr.binary.salt;
    let salt2 = *hdr.secondary_salt();
    let csum = write_one(storage, hdr, &area, false, &salt1)?;
    write_one(storage, hdr, &area, true, &salt2)?;
    hdr.binary.csum = csum;
    Ok(())
}

/// Rewrite one damaged copy from `hdr` (recovery / `cryptsetup repair`): same seqid, correct
/// magic and `hdr_offset`, and a freshly generated salt for that copy (which `hdr` does not
/// record; a later [`write()`] uses the salt kept in `hdr`).
pub fn write_copy(storage: &dyn Storage, hdr: &Luks2Header, secondary: bool) -> Result<()> {
    hdr.validate()?;
    let area = json_area(hdr)?;
    ensure_size(storage, hdr.hdr_and_areas_size()?)?;
    let mut salt = [0u8; 64];
    lukskit_crypto::random::fill(&mut salt)?;
    write_one(storage, hdr, &area, secondary, &salt)?;
    Ok(())
}

/// `LUKS2_check_sequence_id`: before updating, make sure the primary copy on disk still has
/// the seqid of `hdr` (nobody else updated the metadata since it was read). A device whose
/// first bytes are not a LUKS2 primary header of the same UUID is not checked.
pub fn check_sequence_id(storage: &dyn Storage, hdr: &Luks2Header) -> Result<()> {
    let b = read_at(storage, 512, 0).map_err(|e| FormatError::io("Cannot read LUKS2 header", e))?;
    if b[..6] != MAGIC_PRIMARY || u16::from_be_bytes([b[6], b[7]]) != 2 {
        return Ok(());
    }
    let uuid_end = b[168..208].iter().position(|&c| c == 0).unwrap_or(40);
    if b[168..168 + uuid_end] != *hdr.binary.uuid.as_bytes() {
        return Ok(());
    }
    let seqid = u64::from_be_bytes(b[16..24].try_into().unwrap_or([0; 8]));
    if seqid != hdr.binary.seqid {
        return Err(Luks2Error::ConcurrentUpdate.into());
    }
    Ok(())
}
