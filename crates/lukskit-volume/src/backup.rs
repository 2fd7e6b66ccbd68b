//! `luksHeaderBackup` and `luksHeaderRestore`.

use crate::device::{Access, Device};
use crate::error::{BackupError, DeviceOp, IoOp, Result, VolumeError};
use crate::volume::{Header, Volume};
use lukskit_format::detect::detect;
use lukskit_format::io::{MemStorage, Storage};
use lukskit_format::luks1::Luks1Header;
use lukskit_format::luks2;
use lukskit_format::VolumeType;
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;

const PAGE: u64 = 4096;

/// Bytes of the device that make up the header and keyslot areas.
fn header_len(vol: &Volume) -> Result<u64> {
    Ok(match vol.header() {
        Header::Luks1(h) => h.keyslots_end_bytes(),
        Header::Luks2(h) => h.hdr_and_areas_size()?,
    })
}

/// Copy the header and keyslot areas of `device` (or detached `header`) into a new file
/// `backup` (created exclusively, mode 0400), zero-padded to a 4 KiB multiple.
pub fn header_backup(device: &str, header: Option<&str>, backup: &str) -> Result<()> {
    let vol = Volume::load(device, header, Access::Read)?;
    let len = header_len(&vol)?;
    let mut buf = vec![0u8; len.div_ceil(PAGE) as usize * PAGE as usize];
    let avail = vol.dev.size().unwrap_or(0).min(len);
    vol.dev
        .read_exact_at(&mut buf[..avail as usize], 0)
        .map_err(|e| {
            VolumeError::device_io(
                DeviceOp::ReadHeader {
                    path: vol.dev.path().to_string(),
                },
                e,
            )
        })?;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o400)
        .open(backup)
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::AlreadyExists => BackupError::Exists {
                path: backup.to_string(),
            }
            .into(),
            _ => VolumeError::io(IoOp::CreateBackup, backup, e),
        })?;
    f.write_all(&buf)
        .and_then(|_| f.sync_all())
        .map_err(|e| VolumeError::io(IoOp::WriteBackup, backup, e))?;
    Ok(())
}

/// What a backup file holds, checked before anything is written.
pub struct BackupImage {
    /// The bytes to write at offset 0 of the device.
    pub bytes: Vec<u8>,
    /// LUKS version of the backup.
    pub version: VolumeType,
    /// Data offset recorded in the backup, bytes.
    pub data_offset: u64,
    /// The backup's UUID.
    pub uuid: String,
    /// LUKS1: the volume key size in bytes recorded in the backup (0 for LUKS2).
    pub key_bytes: u32,
}

/// Read and validate a header backup file.
pub fn read_backup(backup: &str) -> Result<BackupImage> {
    let bytes = std::fs::read(backup).map_err(|_| {
        VolumeError::from(BackupError::NoHeader {
            path: backup.to_string(),
        })
    })?;
    let invalid = || {
        VolumeError::from(BackupError::Invalid {
            path: backup.to_string(),
        })
    };
    let path = || backup.to_string();
    let version = detect(&bytes)
        .ok_or_else(|| VolumeError::from(BackupError::Incompatible { path: path() }))?;
    let mem = MemStorage::from_vec(bytes.clone());
    let (len, data_offset, uuid, key_bytes) = match version {
        VolumeType::Luks1 => {
            let invalid = || VolumeError::from(BackupError::InvalidLuks1 { path: path() });
            let h = Luks1Header::read(&mem).map_err(|_| invalid())?;
            h.validate(None).map_err(|_| invalid())?;
            (
                h.keyslots_end_bytes(),
                u64::from(h.payload_offset) * 512,
                h.uuid.clone(),
                h.key_bytes,
            )
        }
        // `detect` names only LUKS versions.
        _ => {
            let out = luks2::read(&mem).map_err(|_| invalid())?;
            // A backup taken during a re-encryption (requirement `online-reencrypt-v2`)
            // is restored as any other, as cryptsetup 2.6.1 does: the re-encryption then
            // continues from the state the backup recorded.
            let h = out.header;
            (
                h.hdr_and_areas_size()?,
                h.data_offset()?,
                h.binary.uuid.clone(),
                0,
            )
        }
    };
    if (bytes.len() as u64) < len {
        return Err(BackupError::Truncated { path: path() }.into());
    }
    Ok(BackupImage {
        bytes: bytes[..len as usize].to_vec(),
        version,
        data_offset,
        uuid,
        key_bytes,
    })
}

/// What a header backup is about to be restored over, as cryptsetup 2.6.1 reports it in
/// its question (`LUKS2_hdr_restore`, `LUKS_hdr_restore`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RestoreTarget {
    /// The device holds a header of the backup's LUKS version ("already contains ... header.
    /// Replacing header will destroy existing keyslots.").
    pub has_header: bool,
    /// That header's UUID is not the backup's ("WARNING: real device header has different
    /// UUID than backup!").
    pub uuid_differs: bool,
    /// LUKS2: that header has mandatory requirements cryptsetup 2.6.1 does not know.
    pub unknown_requirements: bool,
    /// LUKS2: that header is in an unfinished offline re-encryption (requirement
    /// `offline-reencrypt`).
    pub offline_reencryption: bool,
}

/// cryptsetup's checks of the device before it asks whether to restore `img` over `device`
/// (or detached `header`): where a header of the backup's version is there, the data offset
/// must be the backup's, and the size of the header with its keyslot areas too (LUKS2, not
/// during an offline re-encryption), or the volume key size (LUKS1). A header of the other
/// version, or none, is no header to cryptsetup.
pub fn check_restore_target(
    device: &str,
    header: Option<&str>,
    img: &BackupImage,
) -> Result<RestoreTarget> {
    let Ok(cur) = Volume::load(device, header, Access::Read) else {
        return Ok(RestoreTarget::default());
    };
    let mut t = RestoreTarget {
        has_header: true,
        uuid_differs: cur.uuid() != img.uuid,
        ..RestoreTarget::default()
    };
    match (&cur.header, img.version) {
        (Header::Luks1(h), VolumeType::Luks1) => {
            if cur.data_offset()? != img.data_offset || h.key_bytes != img.key_bytes {
                return Err(BackupError::Luks1Layout.into());
            }
        }
        (Header::Luks2(h), VolumeType::Luks2) => {
            t.unknown_requirements = !h.unknown_requirements().is_empty();
            t.offline_reencryption = h.requirements().iter().any(|r| r == "offline-reencrypt");
            if !t.offline_reencryption {
                if cur.data_offset()? != img.data_offset {
                    return Err(BackupError::DataOffset.into());
                }
                if header_len(&cur)? != img.bytes.len() as u64 {
                    return Err(BackupError::KeyslotsSize.into());
                }
            }
        }
        _ => return Ok(RestoreTarget::default()),
    }
    Ok(t)
}

/// Write a validated backup over the header of `device` (or detached `header`), after
/// [`check_restore_target`]'s checks.
pub fn header_restore(device: &str, header: Option<&str>, img: &BackupImage) -> Result<()> {
    let target = header.unwrap_or(device);
    check_restore_target(device, header, img)?;
    let dev = Device::open(target, Access::Write)?;
    dev.write_all_at(&img.bytes, 0)
        .and_then(|_| dev.sync())
        .map_err(|e| {
            VolumeError::device_io(
                DeviceOp::WriteHeaderTo {
                    path: target.to_string(),
                },
                e,
            )
        })?;
    Ok(())
}
