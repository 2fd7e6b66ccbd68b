//! The initializations that move data, after their passphrases are read:
//!
//! * [`init_encrypt`] — an encryption in place with the header in space taken from the
//!   device, as cryptsetup 2.6.1's `encrypt_luks2_init` (the caller has formatted the
//!   temporary header file; this initializes the re-encryption in it, with resilience
//!   `datashift`, and restores it over the head of the device);
//! * [`init_decrypt`] — a decryption that exports the header to a new file and moves the
//!   data down over the old header area, as cryptsetup 2.6.1's
//!   `decrypt_luks2_datashift_init`.

use crate::online::kernel_hook;
use crate::{claim, ClaimRefusal, ReencryptError, Result};
use lukskit_crypto::hash::HashAlg;
use lukskit_crypto::SecretBuf;
use lukskit_format::io::Storage;
use lukskit_volume::claim::Claim;
use lukskit_volume::device::{Access, Device};
use lukskit_volume::pbkdf::PbkdfRequest;
use lukskit_volume::reencrypt::{self, datashift, decrypt_shift, Keys};
use lukskit_volume::{DeviceOp, Volume, VolumeError};
use std::os::unix::fs::OpenOptionsExt;

/// What [`init_encrypt`] works with.
pub struct EncryptShift<'a> {
    /// The device to encrypt.
    pub device: &'a str,
    /// The temporary header file, formatted with data offset `shift` (or less).
    pub temp: &'a str,
    /// The data shift in bytes (half of `--reduce-device-size`).
    pub shift: u64,
    /// The PBKDF the metadata digest is made with (its hash and iterations).
    pub pbkdf: &'a PbkdfRequest,
}

/// Initialize the encryption with a data shift of `s.device`: the volume key of the
/// temporary header is unlocked with `passphrase`, the re-encryption metadata written into
/// it (the first `shift` bytes of plaintext copied to the free tail of the device), and the
/// header restored over the head of the device. Fails with
/// [`ReencryptError::DeviceTooSmall`] where no plaintext would be left,
/// [`ReencryptError::DataDeviceAlignment`] or [`ReencryptError::InitFailed`] where the
/// metadata cannot be written (nothing of the device changed then), and
/// [`ReencryptError::HeaderRestore`] once the restore began (the temporary header is then
/// the only complete copy: keep it).
pub fn init_encrypt(s: &EncryptShift<'_>, passphrase: &[u8]) -> Result<Keys> {
    let mut vol = Volume::load(s.device, Some(s.temp), Access::Write)?;
    let (_, vk) = vol.unlock(passphrase, None, false)?;
    let digest = vol
        .segment_digest_id()?
        .ok_or(ReencryptError::NoUsableKeyslot)?;
    let data = Device::open(s.device, Access::Write)?;
    let size = data
        .size()
        .map_err(|e| VolumeError::device_io(DeviceOp::GetSize, e))?;
    let Some((vol_dev, hdr)) = vol.luks2_edit() else {
        return Err(ReencryptError::NotLuks2);
    };
    let data_offset = hdr.data_offset()?;
    if datashift::plaintext_size(size, data_offset, s.shift).is_none_or(|s| s == 0) {
        return Err(ReencryptError::DeviceTooSmall(s.device.to_string()));
    }
    let seg = hdr
        .segments()?
        .into_iter()
        .find(|s| s.id == 0)
        .ok_or(ReencryptError::NotLuks2)?;
    let p = datashift::EncryptShiftParams {
        shift: s.shift,
        cipher: seg.encryption.clone(),
        sector_size: seg.sector_size,
        new_digest: digest,
        digest_iterations: s.pbkdf.digest_iterations(vk.len())?,
        digest_hash: s.pbkdf.hash()?,
    };
    let keys = Keys {
        old: None,
        new: Some(vk),
    };
    datashift::init_encrypt(vol_dev, &data, size, hdr, &p, &keys).map_err(|e| match e {
        VolumeError::Reencrypt(lukskit_volume::ReencryptError::DeviceAlignment { sector_size }) => {
            ReencryptError::DataDeviceAlignment(sector_size)
        }
        _ => ReencryptError::InitFailed,
    })?;
    let len = 2 * hdr.metadata_size() + hdr.keyslots_size()?;
    datashift::restore_header(vol_dev, &data, hdr.metadata_size(), len)
        .map_err(ReencryptError::HeaderRestore)?;
    Ok(keys)
}

/// What [`init_decrypt`] works with.
pub struct DecryptShift<'a> {
    /// The device to decrypt (its header at its start).
    pub device: &'a str,
    /// The header file to export to (must not exist).
    pub file: &'a str,
    /// The kernel mapping of the device the run goes on under (online: the mapping follows
    /// the moved layout); `None`: offline, the device is claimed.
    pub active: Option<&'a str>,
    /// The moved segment's checksum hash (`None`: journal).
    pub checksum: Option<HashAlg>,
    /// The moved segment's length in bytes (0: cryptsetup's default).
    pub moved_length: u64,
    /// The PBKDF the metadata digest is made with (its hash and iterations).
    pub pbkdf: &'a PbkdfRequest,
}

/// Initialize the decryption of `vol` (loaded from `d.device`, its volume key `vk`),
/// exporting its header to `d.file` (new, readable and writable by its owner only). Returns
/// the keys and, offline, the device's claim (taken before anything is written, to be held
/// through the run). Fails with [`ReencryptError::HeaderFileCreate`] when the file cannot be
/// made, and with [`ReencryptError::InitFailedWithBackup`] when the initialization failed
/// after the export began (the file is the header backup then; before, it is removed).
pub fn init_decrypt(
    vol: &mut Volume,
    vk: SecretBuf,
    d: &DecryptShift<'_>,
) -> Result<(Keys, Option<Claim>)> {
    // Offline, the device must be nobody else's (cryptsetup's words of its LUKS1 days).
    let held = match d.active {
        Some(_) => None,
        None => Some(claim::claim(d.device, ClaimRefusal::Legacy)?),
    };
    let mut hook = match d.active {
        Some(name) => Some(kernel_hook(name, vol.uuid(), true, 0)?),
        None => None,
    };
    let block = reencrypt::device_block_size(vol.dev.file());
    let params = decrypt_shift::DecryptShiftParams {
        checksum: d.checksum,
        moved_length: d.moved_length,
        digest_iterations: d.pbkdf.digest_iterations(vk.len())?,
        digest_hash: d.pbkdf.hash()?,
    };
    let keys = Keys {
        old: Some(vk),
        new: None,
    };
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(d.file)
        .map_err(|_| ReencryptError::HeaderFileCreate(d.file.to_string()))?;
    let out = (|| -> Result<u32> {
        let hdr_dev = Device::open(d.file, Access::Write)?;
        let Some((vol_dev, hdr)) = vol.luks2_edit() else {
            return Err(ReencryptError::NotLuks2);
        };
        let online = hook.as_mut().map(|h| h as &mut dyn decrypt_shift::MoveHook);
        Ok(decrypt_shift::init(
            vol_dev, &hdr_dev, block, hdr, &params, &keys, online,
        )?)
    })();
    if let Err(e) = out {
        // Before the export started nothing changed: the file goes. Afterwards it is the
        // header backup.
        let exported = std::fs::metadata(d.file).is_ok_and(|m| m.len() > 0);
        if exported {
            return Err(ReencryptError::InitFailedWithBackup {
                file: d.file.to_string(),
                source: Box::new(e),
            });
        }
        let _ = std::fs::remove_file(d.file);
        return Err(e);
    }
    Ok((keys, held))
}
