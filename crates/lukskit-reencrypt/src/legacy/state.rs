//! What a device holds, as cryptsetup's `reencrypt` tells the cases apart before it chooses
//! between its LUKS2 code and its legacy LUKS1 code.

use lukskit_format::io::Storage;
use lukskit_format::VolumeType;
use lukskit_volume::device::{Access, Device};
use lukskit_volume::reencrypt::luks1 as engine;
use lukskit_volume::{Header, Volume, VolumeError};

/// What the header device holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DevState {
    /// A LUKS1 header.
    Luks1,
    /// LUKS1 with the magic of a legacy re-encryption in progress.
    Luks1Unusable,
    /// A LUKS2 header.
    Luks2,
    /// LUKS2 with an `online-reencrypt` requirement (re-encryption initialised).
    Luks2Reencrypt,
    /// Anything else (no LUKS header, or a device that cannot be read).
    NotLuks,
}

/// The first 4 KiB of `path` (less when it is smaller), if it can be read.
pub(super) fn first_bytes(path: &str) -> Option<Vec<u8>> {
    let dev = Device::open(path, Access::Read).ok()?;
    let mut b = vec![0u8; 4096];
    let n = dev.size().ok()?.min(4096) as usize;
    dev.read_exact_at(&mut b[..n], 0).ok()?;
    b.truncate(n);
    Some(b)
}

/// What `path` holds.
pub fn state_of(path: &str) -> DevState {
    let Some(b) = first_bytes(path) else {
        return DevState::NotLuks;
    };
    if engine::unusable_uuid(&b).is_some() {
        return DevState::Luks1Unusable;
    }
    match lukskit_format::detect::detect(&b) {
        Some(VolumeType::Luks1) => DevState::Luks1,
        Some(VolumeType::Luks2) => {
            let in_reencryption = Volume::load_as_is(path, None, Access::Read).is_ok_and(|v| {
                matches!(v.header(), Header::Luks2(h)
                    if h.requirements().iter().any(|r| r.starts_with("online-reencrypt")))
            });
            if in_reencryption {
                DevState::Luks2Reencrypt
            } else {
                DevState::Luks2
            }
        }
        _ => DevState::NotLuks,
    }
}

/// Why the LUKS header on `path` (found by its primary magic or a LUKS2 secondary copy)
/// does not load; `None` when there is no LUKS header or it loads.
pub(super) fn broken_luks(path: &str) -> Option<VolumeError> {
    match Volume::load(path, None, Access::Read) {
        Err(e @ VolumeError::InvalidHeader { .. }) => Some(e),
        _ => None,
    }
}

/// Whether `header` and `data` are different devices or files (cryptsetup's
/// `reencrypt_is_header_detached`): a header that does not exist yet is detached.
pub(super) fn header_detached(header: Option<&str>, data: &str) -> bool {
    use std::os::unix::fs::{FileTypeExt, MetadataExt};
    let Some(h) = header else { return false };
    let (Ok(hm), Ok(dm)) = (std::fs::metadata(h), std::fs::metadata(data)) else {
        return true;
    };
    if hm.file_type().is_block_device() && dm.file_type().is_block_device() {
        return hm.rdev() != dm.rdev();
    }
    !(hm.dev() == dm.dev() && hm.ino() == dm.ino())
}
