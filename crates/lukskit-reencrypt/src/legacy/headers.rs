//! The detached LUKS1 headers of a legacy run (the `.org` and `.new` files) and the restore
//! of the new one over the device's (cryptsetup's `create_empty_header`,
//! `backup_fake_header` and `restore_luks_header`).

use super::passphrases::Passphrases;
use super::{LegacyEvent, LegacyHost, LegacyRequest};
use crate::{ReencryptError, Result};
use lukskit_crypto::hash::HashAlg;
use lukskit_crypto::spec::CipherSpec;
use lukskit_crypto::SecretBuf;
use lukskit_format::io::Storage;
use lukskit_format::VolumeType;
use lukskit_volume::data::{DataLayout, DataVolume};
use lukskit_volume::device::{Access, Device};
use lukskit_volume::format::{DataCipher, FormatRequest};
use lukskit_volume::reencrypt::luks1::{LegacyMode, Side, NO_UUID};
use lukskit_volume::{Header, Volume};

/// A detached LUKS1 header to make.
pub(super) struct NewHeader<'a> {
    pub path: &'a str,
    pub cipher: CipherSpec,
    pub key_bits: u32,
    pub offset_sectors: u64,
    pub uuid: Option<String>,
    pub volume_key: Option<SecretBuf>,
    pub data: &'a str,
}

/// A `cipher_null` header (cryptsetup's "fake" header of the plaintext side).
pub(super) fn fake_header<'a>(path: &'a str, device: &'a str, key_bits: u32) -> NewHeader<'a> {
    NewHeader {
        path,
        cipher: CipherSpec::parse("cipher_null-ecb").expect("cipher_null-ecb parses"),
        key_bits,
        offset_sectors: 0,
        uuid: Some(NO_UUID.into()),
        volume_key: None,
        data: device,
    }
}

/// Format a detached LUKS1 header at `h.path` with a keyslot per passphrase. The file is
/// made new (cryptsetup's `create_empty_header`: `O_EXCL`, and lukskit adds `O_NOFOLLOW`):
/// the name is predictable and the directory may be anyone's.
pub(super) fn make_header<H: LegacyHost>(
    r: &LegacyRequest,
    h: NewHeader<'_>,
    p: &Passphrases,
    host: &mut H,
) -> Result<()> {
    lukskit_volume::private_file::create_new(h.path, 0o600).map_err(|source| {
        ReencryptError::LegacyHeaderCreate {
            path: h.path.to_string(),
            source,
        }
    })?;
    let mut pbkdf = r.pbkdf.clone();
    if pbkdf.hash.is_none() {
        pbkdf.hash = Some(HashAlg::Sha256.into());
    }
    if let Some(fallback) = pbkdf.luks1_fallback() {
        host.event(LegacyEvent::PbkdfUnsupported);
        pbkdf = fallback;
    }
    let params = FormatRequest {
        header: Some(h.path.to_string()),
        cipher: DataCipher::Sector(h.cipher),
        key_size_bits: Some(h.key_bits),
        offset_sectors: Some(h.offset_sectors),
        uuid: h.uuid,
        key_slot: Some(p.main),
        pbkdf,
        volume_key: h.volume_key,
        ..FormatRequest::new(VolumeType::Luks1, h.data)
    };
    let main = p.main_passphrase()?;
    lukskit_volume::format::format(&params, main.as_bytes())?;
    host.event(LegacyEvent::KeyslotCreated(p.main));
    let mut vol = Volume::load(h.data, Some(h.path), Access::Write)?;
    let (_, vk) = vol.unlock(main.as_bytes(), Some(p.main), false)?;
    for (s, pass) in p.by_slot.iter().enumerate() {
        let Some(pass) = pass else { continue };
        if s as u32 == p.main {
            continue;
        }
        vol.add_keyslot(&vk, pass.as_bytes(), Some(s as u32), &params.pbkdf, false)?;
        host.event(LegacyEvent::KeyslotCreated(s as u32));
    }
    Ok(())
}

/// The cipher (`name-mode`), key size in bits and payload offset in sectors of a LUKS1
/// header.
pub(super) fn luks1_cipher(vol: &Volume) -> Result<(String, u32, u64)> {
    match vol.header() {
        Header::Luks1(h) => Ok((
            format!("{}-{}", h.cipher_name, h.cipher_mode),
            h.key_bytes * 8,
            u64::from(h.payload_offset),
        )),
        Header::Luks2(_) => Err(ReencryptError::NotLuks1),
    }
}

/// Open one side of the copy: the header at `path` for the data device `data`.
pub(super) fn side(data: &str, path: &str, pass: &[u8], slot: u32, writable: bool) -> Result<Side> {
    let vol = Volume::load(data, Some(path), Access::Read)?;
    let (_, vk) = vol
        .unlock(pass, Some(slot), false)
        .or_else(|_| vol.unlock(pass, None, false))?;
    let (cipher, _, _) = luks1_cipher(&vol)?;
    let plain = cipher.starts_with("cipher_null");
    let layout = DataLayout::from_volume(&vol)?;
    let dv = DataVolume::open(data, layout, vk.as_bytes(), writable)?;
    Ok(Side { data: dv, plain })
}

/// Whether the device's header is the run's new header already (the run stopped between
/// writing it back and removing its files).
pub(super) fn restored(hdr_dev: &str, new: &str) -> bool {
    // All of what a restore writes, not just the header: a restore cut short must not
    // count.
    let Ok(img) = lukskit_volume::backup::read_backup(new) else {
        return false;
    };
    let Ok(dev) = Device::open(hdr_dev, Access::Read) else {
        return false;
    };
    let mut cur = vec![0u8; img.bytes.len()];
    dev.read_exact_at(&mut cur, 0).is_ok() && cur == img.bytes
}

/// The data offset in bytes of the detached header `header` of `device`.
pub(super) fn offset_of(device: &str, header: &str) -> Result<u64> {
    let v = Volume::load(device, Some(header), Access::Read)?;
    Ok(luks1_cipher(&v)?.2 * 512)
}

/// Write the new header over the device's (cryptsetup's `restore_luks_header`).
pub(super) fn restore<H: LegacyHost>(
    r: &LegacyRequest,
    new: &str,
    mode: LegacyMode,
    host: &mut H,
) -> Result<()> {
    let device = r.target.device.as_str();
    let header = r.target.header.as_deref();
    if mode == LegacyMode::Encrypt {
        if let Some(h) = header {
            if std::fs::metadata(h).is_err() {
                return std::fs::rename(new, h).map_err(|source| {
                    ReencryptError::LegacyRestoreRename {
                        header: h.to_string(),
                        source,
                    }
                });
            }
        }
    }
    let shown = header.unwrap_or(device).to_string();
    let img = lukskit_volume::backup::read_backup(new)?;
    lukskit_volume::backup::header_restore(device, header, &img).map_err(|source| {
        ReencryptError::LegacyRestore {
            device: shown.clone(),
            source,
        }
    })?;
    host.event(LegacyEvent::HeaderRestored(&shown));
    Ok(())
}
