//! `open` (and `open --test-passphrase`) of a LUKS2 volume whose re-encryption is in
//! progress, as cryptsetup 2.6.1 does it (`_open_and_activate_reencrypt_device`): under the
//! re-encryption lock, a hot zone left in flight by a crash is recovered first, the keys of
//! every digest are unlocked with the one passphrase, the re-encryption metadata digest is
//! checked, and all the live segments of the header become one mapping.

use super::{existing_key_source, tries};
use crate::args::Opts;
use crate::errors::{self, CliError, Result};
use crate::input;
use lukskit_format::io::Storage;
use lukskit_format::luks2::Luks2Header;
use lukskit_volume::device::{Access, Device};
use lukskit_volume::reencrypt::{self, Keys, Status};
use lukskit_volume::segment::{SegmentKind, SegmentTable};
use lukskit_volume::volume::Header;
use lukskit_volume::{DeviceOp, ReencryptError, Volume, VolumeError};

/// Whether `vol` is a LUKS2 header in re-encryption that lukskit opens: only the known
/// `online-reencrypt-v2`/`-v3` requirements (unknown ones, and the unprotected metadata of
/// the old `online-reencrypt` flag, stay refused as before).
pub fn in_reencryption(vol: &Volume) -> bool {
    match vol.header() {
        Header::Luks2(h) => header_in_reencryption(h),
        Header::Luks1(_) => false,
    }
}

fn header_in_reencryption(h: &Luks2Header) -> bool {
    let reqs = h.requirements();
    !reqs.is_empty()
        && reqs.iter().all(|r| r.starts_with("online-reencrypt-v"))
        && h.unknown_requirements().is_empty()
        && lukskit_format::luks2::edit::requirement_version(h).is_some_and(|v| v >= 2)
}

fn luks2(vol: &Volume) -> Result<&Luks2Header> {
    match vol.header() {
        Header::Luks2(h) => Ok(h),
        Header::Luks1(_) => Err(CliError::invalid("Device is not a valid LUKS2 device.")),
    }
}

/// Ask for the passphrase (with `--tries`) until it unlocks the keys of the re-encryption.
pub(crate) fn unlock(o: &Opts, vol: &Volume, device: &str) -> Result<Keys> {
    let src = existing_key_source(o, None);
    let prompt = format!("Enter passphrase for {device}: ");
    let n = tries(o, &src);
    for attempt in 0..n {
        let pass = input::get_secret(&src, &prompt, false)?;
        match reencrypt::unlock_keys(&vol.dev, luks2(vol)?, pass.as_bytes(), o.key_slot) {
            Ok(k) => return Ok(k),
            Err(e) if errors::is_wrong_passphrase(&e) && attempt + 1 < n => {
                eprintln!("{}", errors::volume(&e).message);
            }
            Err(e) => return Err(e.into()),
        }
    }
    Err(CliError::wrong_passphrase())
}

/// The metadata digest check (`LUKS2_reencrypt_digest_verify`): mangled metadata is
/// refused before anything trusts it.
fn verify(hdr: &Luks2Header, keys: &Keys) -> Result<()> {
    if reencrypt::status(hdr)? == Status::None {
        return Ok(());
    }
    reencrypt::verify_metadata(hdr, keys).map_err(|e| {
        let e = errors::volume(&e);
        CliError::permission(e.message)
    })
}

/// `open --test-passphrase` of a device in re-encryption: the keys of every digest unlock
/// and the metadata digest holds (no lock, no recovery, as cryptsetup without a name).
pub fn test_passphrase(o: &Opts, device: &str) -> Result<()> {
    let vol = super::load_volume(o, device, Access::Read)?;
    let keys = unlock(o, &vol, o.header.as_deref().unwrap_or(device))?;
    verify(luks2(&vol)?, &keys)
}

/// A volume in re-encryption unlocked for activation: the header as it is after any
/// recovery, and the table of all its live segments over the data device.
pub struct Unlocked {
    /// The volume (header after recovery).
    pub vol: Volume,
    /// All live segments, each with its key.
    pub table: SegmentTable,
    /// The re-encryption lock, held until the mapping exists.
    pub _lock: Option<reencrypt::ReencryptLock>,
}

/// Unlock `device` (in re-encryption) for activation, as cryptsetup's
/// `_open_and_activate_reencrypt_device`.
pub fn unlock_for_activation(o: &Opts, device: &str) -> Result<Unlocked> {
    let probe = super::load_volume(o, device, Access::Read)?;
    let uuid = probe.uuid().to_string();
    drop(probe);
    let lock = if o.disable_locks {
        None
    } else {
        Some(
            reencrypt::ReencryptLock::acquire(&uuid).map_err(|e| match e {
                VolumeError::Reencrypt(ReencryptError::AlreadyRunning) => {
                    CliError::busy("Reencryption in-progress. Cannot activate device.")
                }
                _ => CliError::invalid("Failed to get reencryption lock."),
            })?,
        )
    };
    // The header again under the lock (a run that just ended changed it).
    let mut vol = super::load_volume(o, device, Access::Read)?;
    let crashed = reencrypt::status(luks2(&vol)?)? == Status::Crash;
    if crashed {
        // (The read-only handle goes first: its metadata lock would block the write one.)
        drop(vol);
        vol = super::load_volume(o, device, Access::Write)?;
    }
    let keys = unlock(o, &vol, o.header.as_deref().unwrap_or(device))?;
    let data_dev = if vol.detached {
        Some(Device::open(
            &vol.data_path,
            if crashed { Access::Write } else { Access::Read },
        )?)
    } else {
        None
    };
    if crashed {
        // As `reencrypt --resume-only` and `repair` recover it (the digest is checked by
        // the recovery's load of the metadata).
        let block = reencrypt::device_block_size(data_dev.as_ref().unwrap_or(&vol.dev).file());
        verify(luks2(&vol)?, &keys)?;
        let Some((vol_dev, hdr)) = vol.luks2_edit() else {
            unreachable!("checked above")
        };
        let data: &dyn Storage = match &data_dev {
            Some(d) => d,
            None => vol_dev,
        };
        reencrypt::recover(vol_dev, data, block, hdr, &keys).map_err(|e| {
            let m = errors::volume(&e).message;
            CliError::invalid(format!("Failed to recover from reencryption crash.\n{m}"))
        })?;
        // The recovery finished a decryption (its last hot zone was the one in flight): the
        // device is plain now and no keyslot is left, so there is nothing to open, as with
        // cryptsetup 2.6.1 (which then opens by the keyslot the recovery used, now gone).
        let plain = reencrypt::status(hdr)? == Status::None
            && hdr
                .segments()
                .map_err(VolumeError::from)?
                .iter()
                .all(|s| s.kind != lukskit_format::luks2::SegmentType::Crypt);
        if plain {
            return Err(CliError::invalid("No usable keyslot is available."));
        }
    }
    let hdr = luks2(&vol)?;
    verify(hdr, &keys)?;
    let data: &dyn Storage = match &data_dev {
        Some(d) => d,
        None => &vol.dev,
    };
    let size = data
        .size()
        .map_err(|e| VolumeError::device_io(DeviceOp::GetSize, e))?;
    let table = lukskit_reencrypt::segments::table(hdr, &keys, size)?;
    Ok(Unlocked {
        vol,
        table,
        _lock: lock,
    })
}

/// What `status` shows of a LUKS2 volume in re-encryption: cryptsetup reads cipher, key
/// size and sector size from the header's default segment (the layout after the
/// re-encryption, `backup-final`). `None` when it is not in re-encryption or that segment
/// is not encrypted.
pub fn status_layout(hdr: &Luks2Header) -> Option<(String, u32, u32)> {
    if !header_in_reencryption(hdr) {
        return None;
    }
    let segs = hdr.segments().ok()?;
    let fin = segs
        .iter()
        .find(|s| s.flags.iter().any(|f| f == "backup-final"))?;
    if fin.kind != lukskit_format::luks2::SegmentType::Crypt {
        return None;
    }
    let digest = hdr
        .digests()
        .ok()?
        .into_iter()
        .find(|d| d.segments.contains(&fin.id))?;
    let bits = hdr
        .keyslots()
        .ok()?
        .into_iter()
        .find(|k| digest.keyslots.contains(&k.id))
        .map(|k| k.key_size * 8)?;
    Some((fin.encryption.clone(), bits, fin.sector_size))
}

/// The layout `status` of a userspace mapping shows: the first segment under the new key
/// (else the first crypt segment) of `table`.
pub fn display_layout(
    table: &SegmentTable,
    new_digest: Option<u32>,
) -> Option<(String, u64, u32, u64, u32)> {
    let crypt = || {
        table.segments().iter().filter_map(|s| match &s.kind {
            SegmentKind::Crypt(c) => Some(c),
            _ => None,
        })
    };
    let c = crypt()
        .find(|c| new_digest.is_some() && c.digest == new_digest)
        .or_else(|| crypt().next())?;
    Some((
        c.cipher.to_string(),
        c.device_offset,
        c.sector_size,
        c.iv_offset,
        (c.key.len() * 8) as u32,
    ))
}
