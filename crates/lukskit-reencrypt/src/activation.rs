//! Opening a LUKS2 volume whose re-encryption is in progress, as cryptsetup 2.6.1's
//! `_open_and_activate_reencrypt_device`: under the re-encryption lock, a hot zone left in
//! flight by a crash is recovered first, the keys of every digest are unlocked with the one
//! passphrase, the re-encryption metadata digest is checked, and all the live segments of
//! the header become one mapping ([`crate::segments::table`]). Also what `status` shows of
//! such a volume and of its mapping.

use crate::secrets::{Secrets, SecretsError};
use crate::{ReencryptError, Result};
use lukskit_format::io::Storage;
use lukskit_format::luks2::{Luks2Header, SegmentType};
use lukskit_volume::device::{Access, Device};
use lukskit_volume::reencrypt::{self, Keys, ReencryptLock, Status};
use lukskit_volume::segment::{SegmentKind, SegmentTable};
use lukskit_volume::{DeviceOp, Header, Volume, VolumeError};

/// Whether `vol` is a LUKS2 header in re-encryption that lukskit opens: only the known
/// `online-reencrypt-v2`/`-v3` requirements (unknown ones, and the unprotected metadata of
/// the old `online-reencrypt` flag, stay refused).
pub fn in_reencryption(vol: &Volume) -> bool {
    match vol.header() {
        Header::Luks2(h) => header_in_reencryption(h),
        Header::Luks1(_) => false,
    }
}

/// [`in_reencryption`] of a LUKS2 header.
pub fn header_in_reencryption(h: &Luks2Header) -> bool {
    let reqs = h.requirements();
    !reqs.is_empty()
        && reqs.iter().all(|r| r.starts_with("online-reencrypt-v"))
        && h.unknown_requirements().is_empty()
        && lukskit_format::luks2::edit::requirement_version(h).is_some_and(|v| v >= 2)
}

/// Unlock the keys of the re-encryption of `vol` with the passphrases of `secrets` (of
/// `key_slot`, else of any keyslot), asking again after a wrong one while `secrets` wants.
pub fn unlock<S: Secrets>(
    vol: &Volume,
    key_slot: Option<u32>,
    secrets: &mut S,
) -> std::result::Result<Keys, SecretsError<S::Error>> {
    let hdr = vol.luks2().ok_or(ReencryptError::NotLuks2)?;
    loop {
        let pass = secrets.passphrase(key_slot).map_err(SecretsError::Caller)?;
        match reencrypt::unlock_keys(&vol.dev, hdr, pass.as_bytes(), key_slot) {
            Ok(k) => return Ok(k),
            Err(e) if matches!(e, VolumeError::WrongPassphrase) && secrets.retry(&e) => {}
            Err(e) => return Err(e.into()),
        }
    }
}

/// The metadata digest check (`LUKS2_reencrypt_digest_verify`) of a header in
/// re-encryption: mangled metadata is refused ([`ReencryptError::InvalidMetadata`]) before
/// anything trusts it. A header not in re-encryption passes.
pub fn verify(hdr: &Luks2Header, keys: &Keys) -> Result<()> {
    if reencrypt::status(hdr)? == Status::None {
        return Ok(());
    }
    reencrypt::verify_metadata(hdr, keys).map_err(ReencryptError::InvalidMetadata)
}

/// `open --test-passphrase` of a volume in re-encryption: the keys of every digest unlock
/// and the metadata digest holds (no lock, no recovery, as cryptsetup without a name).
pub fn test_passphrase<S: Secrets>(
    vol: &Volume,
    key_slot: Option<u32>,
    secrets: &mut S,
) -> std::result::Result<(), SecretsError<S::Error>> {
    let keys = unlock(vol, key_slot, secrets)?;
    let hdr = vol.luks2().ok_or(ReencryptError::NotLuks2)?;
    Ok(verify(hdr, &keys)?)
}

/// A volume in re-encryption unlocked for activation: the header as it is after any
/// recovery, and the table of all its live segments over the data device.
pub struct Unlocked {
    /// The volume (header after recovery).
    pub vol: Volume,
    /// All live segments, each with its key.
    pub table: SegmentTable,
    /// The re-encryption lock, held until the mapping exists (`None` with locks disabled).
    pub lock: Option<ReencryptLock>,
}

/// What [`unlock_for_activation`] works with.
pub struct ActivationRequest<'a> {
    /// Loads the volume (header and data device as the caller names them) with this access.
    pub load: &'a mut dyn FnMut(Access) -> std::result::Result<Volume, VolumeError>,
    /// The keyslot whose passphrase unlocks (`None`: any).
    pub key_slot: Option<u32>,
    /// No re-encryption lock (cryptsetup's `--disable-locks`).
    pub locks_disabled: bool,
}

/// Unlock a volume in re-encryption for activation, as cryptsetup's
/// `_open_and_activate_reencrypt_device`: the re-encryption lock
/// ([`ReencryptError::ActivationLock`] when it cannot be had), the header loaded again under
/// it, the passphrase, the recovery of a hot zone a crash left
/// ([`ReencryptError::CrashRecovery`] when it fails; [`ReencryptError::NoUsableKeyslot`]
/// when it finished a decryption, leaving nothing to open), the metadata digest check, and
/// the table of the live segments.
pub fn unlock_for_activation<S: Secrets>(
    req: ActivationRequest<'_>,
    secrets: &mut S,
) -> std::result::Result<Unlocked, SecretsError<S::Error>> {
    let ActivationRequest {
        load,
        key_slot,
        locks_disabled,
    } = req;
    let uuid = load(Access::Read)?.uuid().to_string();
    let lock = if locks_disabled {
        None
    } else {
        Some(ReencryptLock::acquire(&uuid).map_err(ReencryptError::ActivationLock)?)
    };
    // The header again under the lock (a run that just ended changed it).
    let mut vol = load(Access::Read)?;
    let crashed = reencrypt::status(luks2(&vol)?)? == Status::Crash;
    if crashed {
        // (The read-only handle goes first: its metadata lock would block the write one.)
        drop(vol);
        vol = load(Access::Write)?;
    }
    let keys = unlock(&vol, key_slot, secrets)?;
    let data_dev = if vol.detached {
        Some(Device::open(
            &vol.data_path,
            if crashed { Access::Write } else { Access::Read },
        )?)
    } else {
        None
    };
    if crashed {
        recover(&mut vol, data_dev.as_ref(), &keys)?;
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
    let table = crate::segments::table(hdr, &keys, size)?;
    Ok(Unlocked { vol, table, lock })
}

/// The recovery of the hot zone a crash left, as `reencrypt --resume-only` and `repair`
/// recover it (the digest checked first).
fn recover(vol: &mut Volume, data_dev: Option<&Device>, keys: &Keys) -> Result<()> {
    let block = reencrypt::device_block_size(data_dev.unwrap_or(&vol.dev).file());
    verify(luks2(vol)?, keys)?;
    let Some((vol_dev, hdr)) = vol.luks2_edit() else {
        return Err(ReencryptError::NotLuks2);
    };
    let data: &dyn Storage = match data_dev {
        Some(d) => d,
        None => vol_dev,
    };
    reencrypt::recover(vol_dev, data, block, hdr, keys).map_err(ReencryptError::CrashRecovery)?;
    // The recovery finished a decryption (its last hot zone was the one in flight): the
    // device is plain now and no keyslot is left, so there is nothing to open, as with
    // cryptsetup 2.6.1 (which then opens by the keyslot the recovery used, now gone).
    let plain = reencrypt::status(hdr)? == Status::None
        && hdr
            .segments()
            .map_err(VolumeError::from)?
            .iter()
            .all(|s| s.kind != SegmentType::Crypt);
    if plain {
        return Err(ReencryptError::NoUsableKeyslot);
    }
    Ok(())
}

fn luks2(vol: &Volume) -> Result<&Luks2Header> {
    vol.luks2().ok_or(ReencryptError::NotLuks2)
}

/// What `status` shows of the header of a volume in re-encryption.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatusLayout {
    /// The cipher.
    pub cipher: String,
    /// The key size in bits.
    pub key_bits: u32,
    /// The encryption sector size in bytes.
    pub sector_size: u32,
}

/// What `status` shows of a LUKS2 volume in re-encryption: cryptsetup reads cipher, key
/// size and sector size from the header's default segment (the layout after the
/// re-encryption, `backup-final`). `None` when it is not in re-encryption or that segment
/// is not encrypted.
pub fn status_layout(hdr: &Luks2Header) -> Option<StatusLayout> {
    if !header_in_reencryption(hdr) {
        return None;
    }
    let segs = hdr.segments().ok()?;
    let fin = segs
        .iter()
        .find(|s| s.flags.iter().any(|f| f == "backup-final"))?;
    if fin.kind != SegmentType::Crypt {
        return None;
    }
    let digest = hdr
        .digests()
        .ok()?
        .into_iter()
        .find(|d| d.segments.contains(&fin.id))?;
    let key_bits = hdr
        .keyslots()
        .ok()?
        .into_iter()
        .find(|k| digest.keyslots.contains(&k.id))
        .map(|k| k.key_size * 8)?;
    Some(StatusLayout {
        cipher: fin.encryption.clone(),
        key_bits,
        sector_size: fin.sector_size,
    })
}

/// The layout `status` of a userspace mapping of a volume in re-encryption shows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DisplayLayout {
    /// The cipher.
    pub cipher: String,
    /// The segment's first byte on the data device.
    pub offset: u64,
    /// The encryption sector size in bytes.
    pub sector_size: u32,
    /// The IV offset in 512-byte sectors.
    pub iv_offset: u64,
    /// The key size in bits.
    pub key_bits: u32,
}

/// The layout `status` of a userspace mapping of `table` (a volume with header `hdr`)
/// shows: the first segment under the new key of the re-encryption (else the first crypt
/// segment). `None` for a table without a crypt segment.
pub fn display_layout(table: &SegmentTable, hdr: Option<&Luks2Header>) -> Option<DisplayLayout> {
    let new_digest = hdr
        .and_then(|h| reencrypt::Context::load(h).ok())
        .and_then(|c| c.digest_new);
    let crypt = || {
        table.segments().iter().filter_map(|s| match &s.kind {
            SegmentKind::Crypt(c) => Some(c),
            _ => None,
        })
    };
    let c = crypt()
        .find(|c| new_digest.is_some() && c.digest == new_digest)
        .or_else(|| crypt().next())?;
    Some(DisplayLayout {
        cipher: c.cipher.to_string(),
        offset: c.device_offset,
        sector_size: c.sector_size,
        iv_offset: c.iv_offset,
        key_bits: (c.key.len() * 8) as u32,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resume::{apply_resilience, ResilienceUpdate};
    use crate::test_images::{pbkdf, prepared, MIB, PASS};
    use crate::{ReencryptRequest, ResilienceName};
    use lukskit_crypto::SecretBuf;
    use lukskit_volume::reencrypt::Resilience;

    /// Passphrases from a list; counts the wrong ones it was told of.
    struct Listed {
        passes: Vec<&'static [u8]>,
        wrong: u32,
    }

    impl Secrets for Listed {
        type Error = &'static str;

        fn passphrase(
            &mut self,
            _keyslot: Option<u32>,
        ) -> std::result::Result<SecretBuf, &'static str> {
            if self.passes.is_empty() {
                return Err("no passphrase left");
            }
            Ok(SecretBuf::from_slice(self.passes.remove(0)))
        }

        fn retry(&mut self, error: &VolumeError) -> bool {
            assert!(matches!(error, VolumeError::WrongPassphrase));
            self.wrong += 1;
            !self.passes.is_empty()
        }
    }

    #[test]
    fn a_volume_in_reencryption_unlocks_after_a_wrong_passphrase_and_maps_both_keys() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("img");
        let path = path.to_str().unwrap();
        prepared(path);
        let vol = Volume::load(path, None, Access::Read).unwrap();
        assert!(in_reencryption(&vol));
        let hdr = vol.luks2().unwrap();
        let st = status_layout(hdr).expect("in re-encryption");
        assert_eq!(st.cipher, "aes-cbc-essiv:sha256");
        assert_eq!(st.key_bits, 256);

        // The caller's error comes back as it was; a wrong passphrase is retried.
        let mut none = Listed {
            passes: vec![],
            wrong: 0,
        };
        assert!(matches!(
            unlock(&vol, None, &mut none),
            Err(SecretsError::Caller("no passphrase left"))
        ));
        let mut secrets = Listed {
            passes: vec![b"wrong", PASS],
            wrong: 0,
        };
        let keys = unlock(&vol, None, &mut secrets).unwrap();
        assert_eq!(secrets.wrong, 1);
        assert!(keys.old.is_some() && keys.new.is_some());
        verify(hdr, &keys).unwrap();
        let mut last_wrong = Listed {
            passes: vec![b"wrong"],
            wrong: 0,
        };
        assert!(matches!(
            test_passphrase(&vol, None, &mut last_wrong),
            Err(SecretsError::Reencrypt(ReencryptError::Volume(
                VolumeError::WrongPassphrase
            )))
        ));

        // Not started yet: the whole data is under the old key, which `status` of a
        // userspace mapping then shows.
        let table = crate::segments::table(hdr, &keys, 20 * MIB).unwrap();
        let shown = display_layout(&table, Some(hdr)).unwrap();
        assert_eq!(shown.key_bits, 512);
        assert_eq!(shown.offset, 16 * MIB);
    }

    #[test]
    fn a_resume_switches_the_resilience_asked_for() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("img");
        let path = path.to_str().unwrap();
        prepared(path);
        let mut vol = Volume::load(path, None, Access::Write).unwrap();
        let keys = reencrypt::unlock_keys(&vol.dev, vol.luks2().unwrap(), PASS, None).unwrap();
        let req = ReencryptRequest {
            resilience: Some(ResilienceName::parse("journal")),
            ..ReencryptRequest::default()
        };
        let u = ResilienceUpdate {
            req: &req,
            pbkdf: &pbkdf(),
            block: 4096,
            online: false,
        };
        apply_resilience(&mut vol, None, &keys, &u).unwrap();
        let c = reencrypt::Context::load(vol.luks2().unwrap()).unwrap();
        assert!(matches!(c.resilience, Resilience::Journal));
        verify(vol.luks2().unwrap(), &keys).unwrap();
    }
}
