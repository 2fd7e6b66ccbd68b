//! An opened LUKS volume: header loaded from its device (or detached header file), with
//! the operations cryptsetup's key-management commands need.

use crate::device::{Access, Device};
use crate::error::{KeyslotError, ParamError, RequirementsError, Result, VolumeError};
use crate::pbkdf::PbkdfRequest;
use crate::storage::SharedStorage;
use crate::{luks1_keys, luks2_keys};
use lukskit_crypto::SecretBuf;
use lukskit_format::detect::{detect, unsupported_version};
use lukskit_format::io::Storage;
use lukskit_format::luks1::{Luks1Header, NUM_KEYSLOTS};
use lukskit_format::luks2::{self, Luks2Header};
use lukskit_format::FormatError;
use lukskit_format::VolumeType;

/// A loaded LUKS header of either version.
#[derive(Debug, Clone)]
// One per loaded volume: boxing the larger LUKS1 variant would save nothing that matters.
#[allow(clippy::large_enum_variant)]
pub enum Header {
    /// LUKS1 phdr.
    Luks1(Luks1Header),
    /// LUKS2 header (the valid copy with the highest seqid).
    Luks2(Luks2Header),
}

/// Health of the two LUKS2 header copies as found when loading.
#[derive(Debug, Clone, Default)]
pub struct CopyState {
    /// Primary copy valid.
    pub primary_ok: bool,
    /// Secondary copy valid.
    pub secondary_ok: bool,
    /// Why the primary was rejected.
    pub primary_error: Option<String>,
    /// Why the secondary was rejected.
    pub secondary_error: Option<String>,
}

/// An open LUKS volume.
#[derive(Debug)]
pub struct Volume {
    /// The device holding the header (the data device unless the header is detached).
    pub dev: Device,
    /// The data device path.
    pub data_path: String,
    /// True when the header lives in a separate file (`--header`).
    pub detached: bool,
    /// The header: read through [`Volume::header`] and the typed accessors; changed only by
    /// this crate's operations and LUKS2's own editing ([`Volume::luks2_mut`]).
    pub(crate) header: Header,
    /// LUKS2 copy health (both true for LUKS1).
    pub copies: CopyState,
    /// The data's storage when the volume was loaded from storages of the caller's
    /// ([`Volume::load_storage`]); `None`: the data path opens [`Volume::data_path`].
    pub(crate) data_storage: Option<SharedStorage>,
}

impl Volume {
    /// Load the header of `device` (or of `header` when detached). `Access::Write` takes the
    /// exclusive lock needed for updates.
    ///
    /// With `Access::Write`, a LUKS2 header with one damaged copy is first restored from the
    /// good copy (as cryptsetup does), and a concurrent update since the read is detected.
    pub fn load(device: &str, header: Option<&str>, access: Access) -> Result<Self> {
        Self::load_requested(device, header, access, None)
    }

    /// [`Self::load`] from storages of the caller's (see [`crate::storage`]): the header
    /// and data on `data`, or the header on `header` when it is detached; `name` names the
    /// volume in errors. The data path ([`crate::data::DataVolume::from_volume`]) then uses
    /// `data` too. Nothing is locked: the storages' owner alone can exclude other users.
    pub fn load_storage(
        data: SharedStorage,
        name: &str,
        header: Option<SharedStorage>,
        access: Access,
    ) -> Result<Self> {
        let detached = header.is_some();
        let dev = Device::from_storage(header.unwrap_or_else(|| data.clone()), name);
        let mut vol = Self::load_on(dev, name, detached, None, true)?;
        vol.data_storage = Some(data);
        if access == Access::Write {
            vol.recover_copies()?;
        }
        Ok(vol)
    }

    /// The data's storage when the volume was loaded with [`Self::load_storage`].
    pub fn data_storage(&self) -> Option<&SharedStorage> {
        self.data_storage.as_ref()
    }

    /// [`Self::load`] of a requested format (`--type luks1`/`luks2`). As in cryptsetup, a
    /// primary header announcing an unsupported version is refused unless LUKS2 is
    /// requested, which reads the secondary copy.
    pub fn load_requested(
        device: &str,
        header: Option<&str>,
        access: Access,
        requested: Option<VolumeType>,
    ) -> Result<Self> {
        let mut vol = Self::load_inner(device, header, access, requested, true)?;
        if access == Access::Write {
            vol.recover_copies()?;
        }
        Ok(vol)
    }

    /// Load without any automatic recovery and without validating a LUKS1 header's
    /// keyslots and size (for `repair`, which reports what it finds and fixes: call
    /// [`Self::validate`] after it, as cryptsetup re-reads the repaired header).
    pub fn load_as_is(device: &str, header: Option<&str>, access: Access) -> Result<Self> {
        Self::load_inner(device, header, access, None, false)
    }

    /// The checks a LUKS1 header gets on every load (keyslot layout, device size), for a
    /// header loaded with [`Self::load_as_is`]. LUKS2 headers were validated when read.
    pub fn validate(&self) -> Result<()> {
        match &self.header {
            Header::Luks1(h) => {
                h.validate(self.dev.size().ok())
                    .map_err(|source| VolumeError::InvalidHeader {
                        path: self.dev.path().to_string(),
                        source,
                    })
            }
            Header::Luks2(_) => Ok(()),
        }
    }

    fn load_inner(
        device: &str,
        header: Option<&str>,
        access: Access,
        requested: Option<VolumeType>,
        validate_luks1: bool,
    ) -> Result<Self> {
        let dev = Device::open(header.unwrap_or(device), access)?;
        Self::load_on(dev, device, header.is_some(), requested, validate_luks1)
    }

    /// Load the header on `dev` (the device `device`, or its detached header).
    fn load_on(
        dev: Device,
        device: &str,
        detached: bool,
        requested: Option<VolumeType>,
        validate_luks1: bool,
    ) -> Result<Self> {
        let hdr_path = dev.path().to_string();
        let hdr_path = hdr_path.as_str();
        let not_luks = || VolumeError::NotLuks {
            path: hdr_path.to_string(),
        };
        let mut first = [0u8; 8];
        dev.read_exact_at(&mut first, 0).map_err(|_| not_luks())?;
        if requested != Some(VolumeType::Luks2) {
            if let Some(v) = unsupported_version(&first) {
                return Err(VolumeError::UnsupportedVersion { version: v });
            }
        }
        // A header whose on-disk problems make it unusable names the device (I/O errors
        // and unsupported crypto stay what they are).
        let invalid = |e: FormatError| match e {
            FormatError::Io { .. } | FormatError::Crypto(_) => VolumeError::from(e),
            source => VolumeError::InvalidHeader {
                path: hdr_path.to_string(),
                source,
            },
        };
        let found = detect(&first);
        // As cryptsetup's crypt_load of a requested type: a header of the other version is
        // not a valid device of the requested one (and is not validated).
        match (requested, found) {
            (Some(VolumeType::Luks2), Some(VolumeType::Luks1))
            | (Some(VolumeType::Luks1), Some(VolumeType::Luks2)) => return Err(not_luks()),
            _ => {}
        }
        let (loaded, copies) = match found {
            Some(VolumeType::Luks1) => {
                let h = Luks1Header::read(&dev).map_err(invalid)?;
                // cryptsetup checks that the header device holds all keyslot material
                // (data device or detached header file alike).
                if validate_luks1 {
                    h.validate(dev.size().ok()).map_err(invalid)?;
                }
                (
                    Header::Luks1(h),
                    CopyState {
                        primary_ok: true,
                        secondary_ok: true,
                        ..Default::default()
                    },
                )
            }
            // LUKS2, or no LUKS magic (`detect` names only LUKS versions).
            _ => {
                // A damaged primary may still leave a valid secondary copy: let the LUKS2
                // reader scan for it before giving up.
                let out = luks2::read(&dev).map_err(|e| {
                    if found.is_none() {
                        not_luks()
                    } else {
                        invalid(e)
                    }
                })?;
                // A primary lost where something else now starts (an LVM label written
                // over it): the secondary is not taken, as cryptsetup does not auto-recover
                // it then; `repair` (which loads the header as it is) may.
                if validate_luks1 && !out.primary_ok {
                    if let Some(signature) = crate::signature::detect_on(&dev) {
                        return Err(invalid(FormatError::Luks2(
                            lukskit_format::Luks2Error::AmbiguousSignatures { signature },
                        )));
                    }
                }
                (
                    Header::Luks2(out.header),
                    CopyState {
                        primary_ok: out.primary_ok,
                        secondary_ok: out.secondary_ok,
                        primary_error: out.primary_error,
                        secondary_error: out.secondary_error,
                    },
                )
            }
        };
        Ok(Volume {
            dev,
            data_path: device.to_string(),
            detached,
            header: loaded,
            copies,
            data_storage: None,
        })
    }

    /// "LUKS1" or "LUKS2".
    /// The loaded header.
    pub fn header(&self) -> &Header {
        &self.header
    }

    /// The LUKS1 header, if the volume is LUKS1.
    pub fn luks1(&self) -> Option<&Luks1Header> {
        match &self.header {
            Header::Luks1(h) => Some(h),
            Header::Luks2(_) => None,
        }
    }

    /// The LUKS2 header, if the volume is LUKS2.
    pub fn luks2(&self) -> Option<&Luks2Header> {
        match &self.header {
            Header::Luks2(h) => Some(h),
            Header::Luks1(_) => None,
        }
    }

    /// The LUKS2 header to edit (tokens, re-encryption metadata), if the volume is LUKS2;
    /// [`Volume::write_header`] writes it back.
    pub fn luks2_mut(&mut self) -> Option<&mut Luks2Header> {
        match &mut self.header {
            Header::Luks2(h) => Some(h),
            Header::Luks1(_) => None,
        }
    }

    /// [`Volume::luks2_mut`] with the header device beside it (re-encryption writes its
    /// metadata and journal there while editing the header).
    pub fn luks2_edit(&mut self) -> Option<(&Device, &mut Luks2Header)> {
        match &mut self.header {
            Header::Luks2(h) => Some((&self.dev, h)),
            Header::Luks1(_) => None,
        }
    }

    /// cryptsetup's name of the volume's type ("LUKS1", "LUKS2").
    pub fn type_name(&self) -> &'static str {
        self.volume_type().name()
    }

    /// The volume's type (LUKS1 or LUKS2).
    pub fn volume_type(&self) -> lukskit_format::VolumeType {
        match self.header {
            Header::Luks1(_) => lukskit_format::VolumeType::Luks1,
            Header::Luks2(_) => lukskit_format::VolumeType::Luks2,
        }
    }

    /// The volume UUID.
    pub fn uuid(&self) -> &str {
        match &self.header {
            Header::Luks1(h) => &h.uuid,
            Header::Luks2(h) => &h.binary.uuid,
        }
    }

    /// Volume key length in bytes.
    pub fn volume_key_size(&self) -> Result<usize> {
        Ok(match &self.header {
            Header::Luks1(h) => h.key_bytes as usize,
            Header::Luks2(h) => {
                let d = luks2_keys::segment_digest(h)?;
                let ks = h.keyslots()?;
                let from_slot = d.and_then(|d| {
                    ks.iter()
                        .find(|k| d.keyslots.contains(&k.id))
                        .map(|k| k.key_size as usize)
                });
                match from_slot {
                    Some(n) => n,
                    None => return Err(KeyslotError::NoBoundKeyslot.into()),
                }
            }
        })
    }

    /// Highest number of keyslots of this format (8 or 32).
    pub fn max_keyslots(&self) -> u32 {
        match self.header {
            Header::Luks1(_) => NUM_KEYSLOTS as u32,
            Header::Luks2(_) => luks2::MAX_KEYSLOTS,
        }
    }

    /// Ids of keyslots in use.
    pub fn active_keyslots(&self) -> Result<Vec<u32>> {
        Ok(match &self.header {
            Header::Luks1(h) => (0..NUM_KEYSLOTS as u32)
                .filter(|&i| h.keyslots[i as usize].active)
                .collect(),
            Header::Luks2(h) => h.keyslots()?.iter().map(|k| k.id).collect(),
        })
    }

    /// Whether keyslot `slot` is in use.
    pub fn keyslot_active(&self, slot: u32) -> Result<bool> {
        Ok(self.active_keyslots()?.contains(&slot))
    }

    /// Reject use of a header that carries mandatory requirements this build does not know
    /// (cryptsetup: such a header is read-only and must not be activated).
    pub fn check_requirements_for_write(&self) -> Result<()> {
        if let Header::Luks2(h) = &self.header {
            let unknown = h.unknown_requirements();
            if !unknown.is_empty() {
                return Err(RequirementsError::Unknown(unknown).into());
            }
            if !h.requirements().is_empty() {
                return Err(RequirementsError::Unsupported(h.requirements()).into());
            }
        }
        Ok(())
    }

    /// LUKS2: whether keyslot `slot` is active and holds an unbound key (no digest of the
    /// data segment covers it). Always false for LUKS1.
    pub fn keyslot_unbound(&self, slot: u32) -> Result<bool> {
        match &self.header {
            Header::Luks1(_) => Ok(false),
            Header::Luks2(h) => {
                if h.keyslot(slot)?.is_none() {
                    return Ok(false);
                }
                let seg = luks2_keys::segment_digest(h)?.map(|d| d.id);
                Ok(!h
                    .digests()?
                    .iter()
                    .any(|d| Some(d.id) == seg && d.keyslots.contains(&slot)))
            }
        }
    }

    /// Unlock with a passphrase: returns the keyslot used and the volume key (or unbound key).
    pub fn unlock(
        &self,
        passphrase: &[u8],
        slot: Option<u32>,
        unbound: bool,
    ) -> Result<(u32, SecretBuf)> {
        match &self.header {
            Header::Luks1(h) => {
                if unbound {
                    return Err(KeyslotError::NoUnboundInLuks1.into());
                }
                luks1_keys::unlock(&self.dev, h, passphrase, slot)
            }
            Header::Luks2(h) => luks2_keys::unlock(&self.dev, h, passphrase, slot, unbound),
        }
    }

    /// LUKS2: whether keyslot `slot` is the keyslot of a re-encryption (type `reencrypt`),
    /// which holds no key.
    pub fn is_reencrypt_keyslot(&self, slot: u32) -> Result<bool> {
        Ok(match &self.header {
            Header::Luks1(_) => false,
            Header::Luks2(h) => h
                .keyslots()?
                .iter()
                .any(|k| k.id == slot && k.kind == lukskit_format::luks2::KeyslotType::Reencrypt),
        })
    }

    /// LUKS2 during a re-encryption (requirement `online-reencrypt*`): the id of a digest of
    /// the data segments (old or new volume key) that keyslot `slot` does not open, that is
    /// the key an update of the keyslot would lack; `None` otherwise.
    pub fn reencryption_other_digest(&self, slot: u32) -> Result<Option<u32>> {
        let Header::Luks2(h) = &self.header else {
            return Ok(None);
        };
        if !h
            .requirements()
            .iter()
            .any(|r| r.starts_with("online-reencrypt"))
        {
            return Ok(None);
        }
        Ok(h.digests()?
            .into_iter()
            .find(|d| !d.segments.is_empty() && !d.keyslots.contains(&slot))
            .map(|d| d.id))
    }

    /// LUKS2: the id of the digest that covers the data segment (cryptsetup names the
    /// volume key in the kernel keyring after it); `None` for LUKS1.
    pub fn segment_digest_id(&self) -> Result<Option<u32>> {
        match &self.header {
            Header::Luks1(_) => Ok(None),
            Header::Luks2(h) => Ok(luks2_keys::segment_digest(h)?.map(|d| d.id)),
        }
    }

    /// Verify a volume key (from `--volume-key-file`) against the header digest.
    pub fn verify_volume_key(&self, vk: &[u8]) -> Result<()> {
        let ok = match &self.header {
            Header::Luks1(h) => luks1_keys::verify_volume_key(h, vk)?,
            Header::Luks2(h) => match luks2_keys::segment_digest(h)? {
                Some(d) => luks2_keys::digest_matches(&d, vk)?,
                None => false,
            },
        };
        if ok {
            Ok(())
        } else {
            Err(VolumeError::VolumeKeyMismatch)
        }
    }

    /// The lowest free keyslot id, or an error when all are used.
    pub fn free_keyslot(&self) -> Result<u32> {
        let mut used = self.active_keyslots()?;
        if let Header::Luks1(h) = &self.header {
            // A LUKS1 slot with an unknown state word is not free (`LUKS_keyslot_find_empty`
            // wants exactly KEY_DISABLED).
            used.extend(
                (0..NUM_KEYSLOTS as u32)
                    .filter(|&i| h.keyslots[i as usize].invalid_state.is_some()),
            );
        }
        (0..self.max_keyslots())
            .find(|i| !used.contains(i))
            .ok_or(KeyslotError::AllFull.into())
    }

    /// Check a requested new keyslot id.
    pub fn check_new_keyslot(&self, slot: u32) -> Result<()> {
        if slot >= self.max_keyslots() {
            return Err(KeyslotError::OutOfRange {
                slot,
                count: self.max_keyslots(),
            }
            .into());
        }
        if self.keyslot_active(slot)? {
            return Err(KeyslotError::Full { slot }.into());
        }
        Ok(())
    }

    /// Add a keyslot protecting `key` with `passphrase`. For LUKS2 `unbound` stores a key
    /// that is not the volume key (it gets a digest of its own, bound to no segment).
    pub fn add_keyslot(
        &mut self,
        key: &SecretBuf,
        passphrase: &[u8],
        slot: Option<u32>,
        pbkdf: &PbkdfRequest,
        unbound: bool,
    ) -> Result<u32> {
        self.check_requirements_for_write()?;
        let slot = match slot {
            Some(s) => {
                self.check_new_keyslot(s)?;
                s
            }
            None => self.free_keyslot()?,
        };
        match &mut self.header {
            Header::Luks1(h) => {
                if unbound {
                    return Err(KeyslotError::NoUnboundInLuks1.into());
                }
                // LUKS1 keyslots always use the header's hash: benchmark with that one.
                let with_header_hash = PbkdfRequest {
                    hash: Some(crate::pbkdf::HashChoice::parse(&h.hash_spec)),
                    ..pbkdf.clone()
                };
                let iterations =
                    match with_header_hash.resolve(VolumeType::Luks1, h.key_bytes as usize)? {
                        lukskit_crypto::kdf::Pbkdf::Pbkdf2 { iterations, .. } => iterations,
                        _ => unreachable!("LUKS1 resolves only PBKDF2"),
                    };
                luks1_keys::store(&self.dev, h, slot, key, passphrase, iterations)?;
            }
            Header::Luks2(h) => {
                let digest = if unbound {
                    let used: Vec<u32> = h.digests()?.iter().map(|d| d.id).collect();
                    let id = (0..8)
                        .find(|i| !used.contains(i))
                        .ok_or(KeyslotError::NoFreeDigest)?;
                    let iters = pbkdf.digest_iterations(key.len())?;
                    let d =
                        luks2_keys::make_digest(id, pbkdf.hash()?, key.as_bytes(), iters, vec![])?;
                    h.add_digest(&d)?;
                    id
                } else {
                    luks2_keys::segment_digest(h)?
                        .ok_or(KeyslotError::NoSegmentDigest)?
                        .id
                };
                let kdf = pbkdf.resolve(VolumeType::Luks2, key.len())?;
                let af_hash = pbkdf.hash()?;
                luks2_keys::store(
                    &self.dev,
                    h,
                    luks2_keys::NewKeyslot {
                        id: slot,
                        key,
                        passphrase,
                        pbkdf: kdf,
                        af_hash,
                        cipher: pbkdf.keyslot_cipher()?,
                        digest,
                    },
                )?;
            }
        }
        Ok(slot)
    }

    /// Re-protect the key of keyslot `slot` with `passphrase` and new PBKDF parameters
    /// (`luksChangeKey`, `luksConvertKey`), as cryptsetup 2.6.1 does: LUKS2 keeps the keyslot
    /// id (new area, header switch, old area wiped). LUKS1 with `in_place` (luksChangeKey with
    /// `--key-slot`) rewrites the keyslot; otherwise it writes the first free keyslot and then
    /// destroys the old one (a crash in between leaves both working), or replaces it in place
    /// when all are taken. Returns the keyslot that now holds the key.
    pub fn change_keyslot(
        &mut self,
        slot: u32,
        key: &SecretBuf,
        passphrase: &[u8],
        pbkdf: &PbkdfRequest,
        in_place: bool,
    ) -> Result<u32> {
        self.check_requirements_for_write()?;
        if !self.keyslot_active(slot)? {
            return Err(KeyslotError::NotActive { slot }.into());
        }
        if let Header::Luks2(h) = &mut self.header {
            let digest = luks2_keys::digest_of_keyslot(h, slot)?
                .ok_or(KeyslotError::NoDigest { slot })?
                .id;
            let kdf = pbkdf.resolve(VolumeType::Luks2, key.len())?;
            luks2_keys::replace(
                &self.dev,
                h,
                luks2_keys::NewKeyslot {
                    id: slot,
                    key,
                    passphrase,
                    pbkdf: kdf,
                    af_hash: pbkdf.hash()?,
                    cipher: pbkdf.keyslot_cipher()?,
                    digest,
                },
            )?;
            return Ok(slot);
        }
        let free = if in_place {
            None
        } else {
            self.free_keyslot().ok()
        };
        match free {
            Some(new_slot) => {
                self.add_keyslot(key, passphrase, Some(new_slot), pbkdf, false)?;
                self.kill_keyslot(slot)?;
                Ok(new_slot)
            }
            None => {
                self.kill_keyslot(slot)?;
                self.add_keyslot(key, passphrase, Some(slot), pbkdf, false)
            }
        }
    }

    /// Destroy keyslot `slot` (wipe its key material, remove it from the header).
    pub fn kill_keyslot(&mut self, slot: u32) -> Result<()> {
        if slot >= self.max_keyslots() {
            return Err(KeyslotError::OutOfRange {
                slot,
                count: self.max_keyslots(),
            }
            .into());
        }
        if !self.keyslot_active(slot)? {
            return Err(KeyslotError::NotActive { slot }.into());
        }
        // Revoking a keyslot is allowed even with unknown requirements, as in cryptsetup:
        // a compromised passphrase must always be removable.
        match &mut self.header {
            Header::Luks1(h) => luks1_keys::kill(&self.dev, h, slot),
            Header::Luks2(h) => luks2_keys::kill(&self.dev, h, slot),
        }
    }

    /// Write the current in-memory header (after an edit such as a new UUID or label).
    pub fn write_header(&mut self) -> Result<()> {
        match &mut self.header {
            Header::Luks1(h) => luks1_keys::write_header(&self.dev, h),
            Header::Luks2(h) => luks2_keys::write_header(&self.dev, h),
        }
    }

    /// Set the UUID (`luksUUID --uuid`); refused, as every header update, when the header's
    /// requirements forbid it.
    pub fn set_uuid(&mut self, uuid: &str) -> Result<()> {
        let parsed = uuid::Uuid::parse_str(uuid).map_err(|_| ParamError::Uuid)?;
        self.check_requirements_for_write()?;
        let text = parsed.hyphenated().to_string();
        match &mut self.header {
            Header::Luks1(h) => h.uuid = text,
            Header::Luks2(h) => h.binary.uuid = text,
        }
        self.write_header()
    }

    /// Byte offset of the encrypted data on the data device.
    pub fn data_offset(&self) -> Result<u64> {
        Ok(match &self.header {
            Header::Luks1(h) => u64::from(h.payload_offset) * 512,
            Header::Luks2(h) => h.data_offset()?,
        })
    }

    /// The data cipher specification (`aes-xts-plain64`).
    pub fn cipher_spec(&self) -> Result<String> {
        Ok(match &self.header {
            Header::Luks1(h) => format!("{}-{}", h.cipher_name, h.cipher_mode),
            Header::Luks2(h) => h
                .segments()?
                .into_iter()
                .find(|s| s.kind == lukskit_format::luks2::SegmentType::Crypt)
                .map(|s| s.encryption)
                .unwrap_or_default(),
        })
    }
}
