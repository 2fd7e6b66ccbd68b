//! `repair` of a header in re-encryption, as cryptsetup 2.6.1's: the hot zone an
//! interrupted run left is recovered (`LUKS2_reencrypt_locked_recovery_by_passphrase`; the
//! recovery of the last hot zone also finishes the re-encryption), unprotected metadata is
//! upgraded (`reencrypt_metadata_repair`), and the metadata of a clean re-encryption is
//! checked against its digest (`luks2_reencrypt_repair` in `CRYPT_REENCRYPT_CLEAN`). The
//! passphrases are the caller's to ask for.

use crate::{ReencryptError, Result};
use lukskit_format::io::Storage;
use lukskit_volume::device::{Access, Device};
use lukskit_volume::pbkdf::PbkdfRequest;
use lukskit_volume::reencrypt::{self, Status};
use lukskit_volume::{Header, Volume};

/// Whether the volume's header has a hot zone to recover (an interrupted run).
pub fn needs_recovery(vol: &Volume) -> bool {
    match vol.header() {
        Header::Luks2(h) => reencrypt::status(h).ok() == Some(Status::Crash),
        Header::Luks1(_) => false,
    }
}

/// Whether the volume's re-encryption metadata is unprotected (cryptsetup's
/// `CRYPT_REENCRYPT_REPAIR_NEEDED`: the old `online-reencrypt` requirement, or no metadata
/// digest); checked before the hot-zone recovery, as cryptsetup does.
pub fn needs_metadata_upgrade(vol: &Volume) -> bool {
    match vol.header() {
        Header::Luks2(h) => reencrypt::metadata_repair_needed(h).unwrap_or(false),
        Header::Luks1(_) => false,
    }
}

/// Whether the volume is in a clean (not interrupted) re-encryption, whose metadata digest
/// [`verify`] checks.
pub fn needs_verification(vol: &Volume) -> bool {
    vol.luks2()
        .is_some_and(|h| reencrypt::status(h).ok() == Some(Status::Clean))
}

/// The recovery of an interrupted hot zone, its data device opened (before the passphrase
/// is asked for, as cryptsetup opens it).
pub struct Recovery {
    /// The data device of a detached header.
    data_dev: Option<Device>,
}

impl Recovery {
    /// Open the data device of `vol` (when its header is detached).
    pub fn prepare(vol: &Volume) -> Result<Self> {
        let data_dev = if vol.detached {
            Some(Device::open(&vol.data_path, Access::Write)?)
        } else {
            None
        };
        Ok(Recovery { data_dev })
    }

    /// Unlock the keys with `passphrase` (of `key_slot`, else any keyslot), take the
    /// re-encryption lock (not with `locks_disabled`) and recover the hot zone.
    pub fn recover(
        self,
        vol: &mut Volume,
        passphrase: &[u8],
        key_slot: Option<u32>,
        locks_disabled: bool,
    ) -> Result<()> {
        let block = reencrypt::device_block_size(self.data_dev.as_ref().unwrap_or(&vol.dev).file());
        let hdr = vol.luks2().ok_or(ReencryptError::NotLuks2)?;
        let keys = reencrypt::unlock_keys(&vol.dev, hdr, passphrase, key_slot)?;
        let _lock = crate::lock(vol.uuid(), locks_disabled)?;
        let Some((vol_dev, hdr)) = vol.luks2_edit() else {
            return Err(ReencryptError::NotLuks2);
        };
        let data: &dyn Storage = match &self.data_dev {
            Some(d) => d,
            None => vol_dev,
        };
        reencrypt::recover(vol_dev, data, block, hdr, &keys)?;
        Ok(())
    }
}

/// Upgrade unprotected re-encryption metadata to `online-reencrypt-v2` with a new metadata
/// digest (made with `pbkdf`'s hash and iterations), the keys unlocked with `passphrase`,
/// and check it.
pub fn upgrade_metadata(
    vol: &mut Volume,
    passphrase: &[u8],
    key_slot: Option<u32>,
    pbkdf: &PbkdfRequest,
) -> Result<()> {
    let hdr = vol.luks2().ok_or(ReencryptError::NotLuks2)?;
    let keys = reencrypt::unlock_keys(&vol.dev, hdr, passphrase, key_slot)?;
    let key_len = keys
        .new
        .as_ref()
        .or(keys.old.as_ref())
        .map_or(32, |k| k.len());
    let (hash, iterations) = (pbkdf.hash()?, pbkdf.digest_iterations(key_len)?);
    let Some((vol_dev, hdr)) = vol.luks2_edit() else {
        return Err(ReencryptError::NotLuks2);
    };
    reencrypt::upgrade_metadata(vol_dev, hdr, &keys, hash, iterations)?;
    reencrypt::verify_metadata(hdr, &keys)?;
    Ok(())
}

/// Check the metadata digest of a re-encryption in progress with the keys `passphrase`
/// unlocks: [`ReencryptError::InvalidMetadata`] when it does not match.
pub fn verify(vol: &Volume, passphrase: &[u8], key_slot: Option<u32>) -> Result<()> {
    let hdr = vol.luks2().ok_or(ReencryptError::NotLuks2)?;
    let keys = reencrypt::unlock_keys(&vol.dev, hdr, passphrase, key_slot)?;
    reencrypt::verify_metadata(hdr, &keys).map_err(ReencryptError::InvalidMetadata)
}
