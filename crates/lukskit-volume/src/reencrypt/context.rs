//! The re-encryption context read back from a header: the `reencrypt` keyslot (mode,
//! direction, resilience and its area), the backup segments with their digests, the state
//! (clean or crashed) and the current position.

use super::ctx;
use crate::error::{ReencryptError, Result};
use lukskit_crypto::hash::HashAlg;
use lukskit_format::luks2::edit::{self, AreaProtection, SegmentObject};
use lukskit_format::luks2::reencrypt_keyslot::ReencryptKeyslot;
use lukskit_format::luks2::{Luks2Header, ReencryptDirection, ReencryptMode};
use lukskit_format::{FormatError, Luks2Error};

/// What a re-encryption does (the keyslot's `mode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Old key/cipher → new key/cipher.
    Reencrypt,
    /// Plaintext → encrypted.
    Encrypt,
    /// Encrypted → plaintext.
    Decrypt,
}

impl Mode {
    /// The keyslot's `mode` for it.
    pub fn stored(self) -> ReencryptMode {
        match self {
            Mode::Reencrypt => ReencryptMode::Reencrypt,
            Mode::Encrypt => ReencryptMode::Encrypt,
            Mode::Decrypt => ReencryptMode::Decrypt,
        }
    }
}

/// The order in which hot zones move over the device.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// From the start of the data area to its end.
    Forward,
    /// From the end to the start.
    Backward,
}

impl Direction {
    /// The keyslot's `direction` for it.
    pub fn stored(self) -> ReencryptDirection {
        match self {
            Direction::Forward => ReencryptDirection::Forward,
            Direction::Backward => ReencryptDirection::Backward,
        }
    }
}

/// How an interrupted hot zone is recovered (the keyslot area's `type`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Resilience {
    /// Nothing is recorded: an interruption loses the hot zone.
    None,
    /// A hash of every `block_size` bytes of the old ciphertext of the hot zone.
    Checksum {
        /// The hash.
        hash: HashAlg,
        /// Bytes per hashed block.
        block_size: u32,
    },
    /// The whole old ciphertext of the hot zone is copied to the area first.
    Journal,
    /// The data moves by `shift` bytes; the source stays intact.
    Datashift {
        /// Shift in bytes.
        shift: u64,
    },
}

/// The state of a header with respect to re-encryption (`crypt_reencrypt_info`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    /// No re-encryption.
    None,
    /// Re-encryption initialized or stopped at a safe point.
    Clean,
    /// Interrupted inside a hot zone: needs recovery before anything else.
    Crash,
}

/// The re-encryption state of `hdr` (`LUKS2_reencrypt_status`).
pub fn status(hdr: &Luks2Header) -> Result<Status> {
    if edit::requirement_version(hdr).is_none() {
        return Ok(Status::None);
    }
    let hot = edit::data_segments(hdr)?
        .iter()
        .any(|s| s.has_flag("in-reencryption"));
    Ok(if hot { Status::Crash } else { Status::Clean })
}

/// The parsed re-encryption metadata.
#[derive(Debug, Clone)]
pub struct Context {
    /// The `reencrypt` keyslot id.
    pub keyslot: u32,
    /// Mode.
    pub mode: Mode,
    /// Direction.
    pub direction: Direction,
    /// Resilience.
    pub resilience: Resilience,
    /// Keyslot area offset (bytes, on the header device).
    pub area_offset: u64,
    /// Keyslot area size.
    pub area_size: u64,
    /// The `backup-previous` segment (the old layout).
    pub old: SegmentObject,
    /// The `backup-final` segment (the new layout).
    pub new: SegmentObject,
    /// The `backup-moved-segment`, if any.
    pub moved: Option<SegmentObject>,
    /// How the moved segment's hot zone is protected (`datashift-checksum` /
    /// `datashift-journal`: checksums or a journal), if the area type says so.
    pub moved_protection: Option<Resilience>,
    /// Digest of the old key (`None` when encrypting).
    pub digest_old: Option<u32>,
    /// Digest of the new key (`None` when decrypting).
    pub digest_new: Option<u32>,
    /// The requirement's metadata version (2 for `online-reencrypt-v2`).
    pub version: u8,
}

/// The id of the `reencrypt` keyslot.
pub fn reencrypt_keyslot(hdr: &Luks2Header) -> Result<Option<u32>> {
    Ok(hdr
        .keyslots()?
        .into_iter()
        .find(|k| k.kind == lukskit_format::luks2::KeyslotType::Reencrypt)
        .map(|k| k.id))
}

/// The checksum parameters of a keyslot area: a hash lukskit has and a block of at least 512
/// bytes, a power of two.
fn checksum(hash: &str, sector_size: u64) -> Result<Resilience> {
    let hash = HashAlg::from_name(hash)?;
    let block_size = u32::try_from(sector_size)
        .ok()
        .filter(|v| *v >= 512 && v.is_power_of_two())
        .ok_or_else(|| ctx("checksum sector size"))?;
    Ok(Resilience::Checksum { hash, block_size })
}

impl Context {
    /// Read the context from a header in re-encryption.
    pub fn load(hdr: &Luks2Header) -> Result<Self> {
        let version = edit::requirement_version(hdr).ok_or(ReencryptError::NotInReencryption)?;
        let keyslot = reencrypt_keyslot(hdr)?.ok_or_else(|| ctx("no reencrypt keyslot"))?;
        // What the format crate found wrong (a missing or invalid mode, direction or area).
        let ks = ReencryptKeyslot::of(hdr, keyslot).map_err(|e| match e {
            FormatError::Luks2(Luks2Error::ReencryptMetadata { what }) => ctx(what),
            other => ctx(&other.to_string()),
        })?;
        let mode = match ks.mode {
            ReencryptMode::Reencrypt => Mode::Reencrypt,
            ReencryptMode::Encrypt => Mode::Encrypt,
            ReencryptMode::Decrypt => Mode::Decrypt,
            ReencryptMode::Other(_) => return Err(ctx("invalid mode")),
        };
        let direction = match ks.direction {
            ReencryptDirection::Forward => Direction::Forward,
            ReencryptDirection::Backward => Direction::Backward,
            ReencryptDirection::Other(_) => return Err(ctx("invalid direction")),
        };
        let area = ks.area;
        let shift = || area.shift_size.ok_or_else(|| ctx("shift size"));
        let resilience = match &area.protection {
            AreaProtection::None => Resilience::None,
            AreaProtection::Journal => Resilience::Journal,
            AreaProtection::Checksum { hash, sector_size } => checksum(hash, *sector_size)?,
            AreaProtection::Datashift
            | AreaProtection::DatashiftChecksum { .. }
            | AreaProtection::DatashiftJournal => Resilience::Datashift { shift: shift()? },
            other => {
                return Err(ReencryptError::Unsupported(format!(
                    "resilience {}",
                    other.type_name()
                ))
                .into())
            }
        };
        // A decryption with a moved segment protects that segment's hot zone with
        // checksums or a journal (`datashift-checksum` / `datashift-journal`).
        let moved_protection = match &area.protection {
            AreaProtection::DatashiftChecksum { hash, sector_size } => {
                Some(checksum(hash, *sector_size)?)
            }
            AreaProtection::DatashiftJournal => Some(Resilience::Journal),
            _ => None,
        };
        let (area_offset, area_size) = (area.offset, area.size);
        let (old_id, old) = edit::segment_by_flag(hdr, "backup-previous")?
            .ok_or_else(|| ctx("no backup-previous"))?;
        let (new_id, new) =
            edit::segment_by_flag(hdr, "backup-final")?.ok_or_else(|| ctx("no backup-final"))?;
        let moved = edit::segment_by_flag(hdr, "backup-moved-segment")?.map(|(_, v)| v);
        let digest_old = edit::digest_of_segment(hdr, old_id)?;
        let digest_new = edit::digest_of_segment(hdr, new_id)?;
        if mode != Mode::Encrypt && digest_old.is_none() {
            return Err(ctx("no digest for the old key"));
        }
        if mode != Mode::Decrypt && digest_new.is_none() {
            return Err(ctx("no digest for the new key"));
        }
        Ok(Context {
            keyslot,
            mode,
            direction,
            resilience,
            area_offset,
            area_size,
            old,
            new,
            moved,
            moved_protection,
            digest_old,
            digest_new,
            version,
        })
    }

    /// Byte offset of the new layout's data (backup-final's offset).
    pub fn data_offset_new(&self) -> u64 {
        self.new.offset
    }

    /// Byte offset of the old layout's data.
    pub fn data_offset_old(&self) -> u64 {
        self.old.offset
    }

    /// The data shift (0 unless datashift resilience).
    pub fn shift(&self) -> u64 {
        match self.resilience {
            Resilience::Datashift { shift } => shift,
            _ => 0,
        }
    }

    /// Encryption sector size of a backup segment (512 for a linear one).
    pub fn sector_size(seg: &SegmentObject) -> u32 {
        match seg.sector_size {
            0 => 512,
            n => n,
        }
    }
}
