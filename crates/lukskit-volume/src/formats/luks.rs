//! LUKS1 and LUKS2 behind the seam: probe by magic and version, unlock by passphrase through
//! the keyslots of [`crate::volume`]. Everything else LUKS has (tokens, keyslot management,
//! re-encryption, header backups) stays in [`crate::volume`] and its neighbours.

use super::{Description, OnDiskFormat, Probe, UnlockRequest, Unlocked};
use crate::device::Access;
use crate::error::{Result, VolumeError};
use crate::segment::SegmentTable;
use crate::volume::Volume;
use lukskit_format::detect::detect;
use lukskit_format::VolumeType;
use std::fmt;

/// LUKS1.
pub struct Luks1;
/// LUKS2.
pub struct Luks2;

fn probe_version(head: &[u8], version: VolumeType) -> Probe {
    if detect(head) == Some(version) {
        Probe::Mine
    } else {
        Probe::NotMine
    }
}

/// What the seam's dump of a LUKS volume gives: the type, UUID and keyslots in use
/// (`luksDump` itself prints the whole header, from [`Volume`]).
#[derive(Debug)]
pub struct LuksSummary {
    /// LUKS1 or LUKS2.
    pub volume_type: VolumeType,
    /// The UUID.
    pub uuid: String,
    /// The active keyslots.
    pub keyslots: Vec<u32>,
}

impl fmt::Display for LuksSummary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "Type:\t{}", self.volume_type)?;
        writeln!(f, "UUID:\t{}", self.uuid)?;
        let slots: Vec<String> = self.keyslots.iter().map(u32::to_string).collect();
        writeln!(f, "Keyslots:\t{}", slots.join(" "))
    }
}

impl Description for LuksSummary {}

fn load(request: &UnlockRequest<'_>, t: VolumeType) -> Result<Volume> {
    let version = match t {
        VolumeType::Luks1 => VolumeType::Luks1,
        _ => VolumeType::Luks2,
    };
    let vol = Volume::load_requested(request.device, request.header, Access::Read, Some(version))?;
    if vol.volume_type() != t {
        return Err(VolumeError::NotLuks {
            path: request.header.unwrap_or(request.device).to_string(),
        });
    }
    Ok(vol)
}

fn dump(request: &UnlockRequest<'_>, t: VolumeType) -> Result<Box<dyn Description>> {
    let vol = load(request, t)?;
    Ok(Box::new(LuksSummary {
        volume_type: t,
        uuid: vol.uuid().to_string(),
        keyslots: vol.active_keyslots()?,
    }))
}

fn unlock(request: &UnlockRequest<'_>, t: VolumeType) -> Result<Unlocked> {
    let vol = load(request, t)?;
    let passphrase = match (request.passphrase, request.key_files.first()) {
        (Some(p), _) => p,
        (None, Some(k)) => k,
        (None, None) => {
            return Err(super::OtherFormatError::SecretMissing {
                what: "A passphrase or key file".into(),
            }
            .into())
        }
    };
    let (_slot, key) = vol.unlock(passphrase.as_bytes(), None, false)?;
    let size = super::device_size(request.device)?;
    let table = SegmentTable::from_volume(&vol, key.as_bytes(), size)?;
    Ok(Unlocked {
        volume_type: t,
        uuid: Some(vol.uuid().to_string()),
        layers: vec![table],
        read_only: false,
        volume_key: key,
    })
}

impl OnDiskFormat for Luks1 {
    fn volume_type(&self) -> VolumeType {
        VolumeType::Luks1
    }
    fn probe(&self, head: &[u8]) -> Probe {
        probe_version(head, VolumeType::Luks1)
    }
    fn dump(&self, request: &UnlockRequest<'_>) -> Result<Box<dyn Description>> {
        dump(request, VolumeType::Luks1)
    }
    fn unlock(&self, request: &UnlockRequest<'_>) -> Result<Unlocked> {
        unlock(request, VolumeType::Luks1)
    }
}

impl OnDiskFormat for Luks2 {
    fn volume_type(&self) -> VolumeType {
        VolumeType::Luks2
    }
    fn probe(&self, head: &[u8]) -> Probe {
        probe_version(head, VolumeType::Luks2)
    }
    fn dump(&self, request: &UnlockRequest<'_>) -> Result<Box<dyn Description>> {
        dump(request, VolumeType::Luks2)
    }
    fn unlock(&self, request: &UnlockRequest<'_>) -> Result<Unlocked> {
        unlock(request, VolumeType::Luks2)
    }
}
