//! Writing a new re-encryption's metadata: of an encryption on its new header
//! ([`encrypt`]), of a re-encryption keeping the volume key ([`keep_key`]), of any
//! re-encryption or decryption ([`commit`]).

use crate::{online, ReencryptError, Result};
use lukskit_crypto::engine::SectorCipher;
use lukskit_crypto::spec::CipherSpec;
use lukskit_crypto::SecretBuf;
use lukskit_format::luks2::Luks2Header;
use lukskit_volume::pbkdf::PbkdfRequest;
use lukskit_volume::reencrypt::{self, InitParams, Keys, Mode, ResilienceChoice};
use lukskit_volume::Volume;

/// Write the re-encryption metadata (`params`, `keys`) of a re-encryption or decryption of
/// `size` bytes of data on a device of logical block size `block`. When the run goes on
/// under kernel mapping `online`, that mapping must first match the metadata about to be
/// written, as cryptsetup 2.6.1's `reencrypt_init` checks it (`crypt_compare_dm_devices`).
/// On any failure nothing is written: [`ReencryptError::InitFailedBecause`] with the reason
/// (a metadata already in re-encryption is reported as it is).
pub fn commit(
    vol: &mut Volume,
    (size, block): (u64, u64),
    params: &InitParams,
    keys: &Keys,
    online: Option<&str>,
) -> Result<()> {
    let uuid = vol.uuid().to_string();
    let mut failed = None;
    let mut check = |h: &Luks2Header, k: &Keys| -> lukskit_volume::Result<()> {
        let Some(name) = online else {
            return Ok(());
        };
        online::check_before_init(name, &uuid, h, k, size).map_err(|e| {
            let m = e.to_string();
            failed = Some(e);
            lukskit_volume::ReencryptError::Online(m).into()
        })
    };
    let Some((vol_dev, h)) = vol.luks2_edit() else {
        return Err(ReencryptError::NotLuks2);
    };
    let r = reencrypt::init_checked(vol_dev, size, block, h, params, keys, &mut check);
    let e = match r {
        Ok(_) => return Ok(()),
        Err(
            e @ lukskit_volume::VolumeError::Reencrypt(
                lukskit_volume::ReencryptError::AlreadyInitialized,
            ),
        ) => return Err(e.into()),
        Err(e) => failed.unwrap_or_else(|| e.into()),
    };
    Err(ReencryptError::InitFailedBecause(Box::new(e)))
}

/// An encryption's initialization on the header just made for it (cryptsetup's
/// `encrypt_luks2_init`), whose one keyslot holds the new volume key.
pub struct EncryptInit<'a> {
    /// The passphrase of the new header's keyslot.
    pub passphrase: &'a [u8],
    /// The data shift in bytes (`--reduce-device-size` with a detached header): the data
    /// from the data offset on is encrypted in place, backward, with resilience `datashift`.
    pub shift: Option<u64>,
    /// The resilience of a run without a data shift.
    pub resilience: ResilienceChoice,
    /// The hash and iterations of the metadata digest.
    pub pbkdf: &'a PbkdfRequest,
}

/// Write the metadata of an encryption of `size` bytes of data (a device of logical block
/// size `block`) under the new header of `vol`; returns the new volume key.
pub fn encrypt(vol: &mut Volume, (size, block): (u64, u64), e: &EncryptInit) -> Result<Keys> {
    let (_, vk) = vol.unlock(e.passphrase, None, false)?;
    let digest = vol.segment_digest_id()?;
    let hdr = vol.luks2().ok_or(ReencryptError::NotLuks2)?;
    let seg = hdr.segments()?.into_iter().find(|s| s.id == 0);
    let params = InitParams {
        mode: Mode::Encrypt,
        resilience: e.resilience.clone(),
        cipher: seg
            .as_ref()
            .map_or_else(String::new, |s| s.encryption.clone()),
        sector_size: seg.map_or(512, |s| s.sector_size),
        new_digest: digest,
        digest_iterations: e.pbkdf.digest_iterations(vk.len())?,
        digest_hash: e.pbkdf.hash()?,
    };
    let keys = Keys {
        old: None,
        new: Some(vk),
    };
    let Some((vol_dev, h)) = vol.luks2_edit() else {
        return Err(ReencryptError::NotLuks2);
    };
    if let Some(shift) = e.shift {
        let p = reencrypt::datashift::EncryptShiftParams {
            shift,
            cipher: params.cipher,
            sector_size: params.sector_size,
            new_digest: params.new_digest.ok_or(ReencryptError::NoUsableKeyslot)?,
            digest_iterations: params.digest_iterations,
            digest_hash: params.digest_hash,
        };
        reencrypt::datashift::init_encrypt_detached(vol_dev, size, h, &p, &keys).map_err(|e| {
            match e {
                lukskit_volume::VolumeError::Reencrypt(
                    lukskit_volume::ReencryptError::DeviceAlignment { sector_size },
                ) => ReencryptError::DataDeviceAlignment(sector_size),
                _ => ReencryptError::InitFailed,
            }
        })?;
        return Ok(keys);
    }
    reencrypt::init(vol_dev, size, block, h, &params, &keys)?;
    Ok(keys)
}

/// A re-encryption that keeps the volume key (cryptsetup 2.6.1's `reencrypt_luks2_init`
/// with `--keep-key`, or a `--volume-key-file` holding the current key): a new cipher, key
/// size or sector size for the same key.
pub struct KeepKeyInit<'a> {
    /// The new cipher, as written (`aes-xts-plain64`).
    pub cipher: &'a str,
    /// The same, parsed.
    pub spec: &'a CipherSpec,
    /// The new encryption sector size.
    pub sector_size: u32,
    /// The resilience of the run.
    pub resilience: ResilienceChoice,
    /// The PBKDF asked for; the metadata digest takes its defaults (see [`keep_key`]).
    pub pbkdf: &'a PbkdfRequest,
}

/// Write the metadata of a re-encryption of `vol` keeping volume key `vk` (unlocked by the
/// caller): no keyslot is added, and the new segment is bound to the digest of the kept key,
/// the old segment's. The key keeps its size, so the new cipher must take a key of that
/// size. `online`: as for [`commit`].
pub fn keep_key(
    vol: &mut Volume,
    (size, block): (u64, u64),
    vk: SecretBuf,
    k: &KeepKeyInit,
    online: Option<&str>,
) -> Result<Keys> {
    SectorCipher::check(k.spec, vk.len(), k.sector_size)
        .map_err(|_| ReencryptError::UnusableCipher(k.cipher.to_string()))?;
    let digest = vol
        .segment_digest_id()?
        .ok_or(ReencryptError::NoUsableKeyslot)?;
    // No keyslot is made, so (as in cryptsetup, whose PBKDF options reach the context only
    // through the new keyslots' parameters) the metadata digest gets the default PBKDF:
    // iterations benchmarked, never the forced ones.
    let digest_pbkdf = PbkdfRequest {
        force_iterations: None,
        hash: None,
        ..k.pbkdf.clone()
    };
    let params = InitParams {
        mode: Mode::Reencrypt,
        resilience: k.resilience.clone(),
        cipher: k.cipher.to_string(),
        sector_size: k.sector_size,
        new_digest: Some(digest),
        digest_iterations: digest_pbkdf.digest_iterations(vk.len())?,
        digest_hash: digest_pbkdf.hash()?,
    };
    let keys = Keys {
        old: Some(vk.clone()),
        new: Some(vk),
    };
    commit(vol, (size, block), &params, &keys, online)?;
    Ok(keys)
}

/// A re-encryption to a new volume key, whose keyslots exist (see
/// [`crate::keyslots::add_for_new_key`]).
pub struct NewKeyInit<'a> {
    /// The new cipher, as written.
    pub cipher: String,
    /// The new encryption sector size.
    pub sector_size: u32,
    /// The new volume key's length in bytes.
    pub key_len: usize,
    /// The resilience of the run.
    pub resilience: ResilienceChoice,
    /// The new keyslots' digest.
    pub new_digest: Option<u32>,
    /// The first old keyslot unlocked, whose PBKDF the metadata digest takes (as the new
    /// keyslots do: see [`crate::keyslots::new_keyslot_pbkdf`], with `pbkdf`, `pbkdf_given`).
    pub first_slot: u32,
    /// The PBKDF asked for.
    pub pbkdf: &'a PbkdfRequest,
    /// Whether it was asked for explicitly.
    pub pbkdf_given: bool,
}

/// Write the metadata of a re-encryption of `vol` to a new volume key (`keys`: old and new),
/// `online` as for [`commit`].
pub fn new_key(
    vol: &mut Volume,
    (size, block): (u64, u64),
    n: NewKeyInit,
    keys: &Keys,
    online: Option<&str>,
) -> Result<()> {
    // cryptsetup makes the metadata digest with the PBKDF of the new keyslots.
    let digest_pbkdf =
        crate::keyslots::new_keyslot_pbkdf(n.pbkdf.clone(), n.pbkdf_given, vol, n.first_slot)?;
    let params = InitParams {
        mode: Mode::Reencrypt,
        resilience: n.resilience,
        cipher: n.cipher,
        sector_size: n.sector_size,
        new_digest: n.new_digest,
        digest_iterations: digest_pbkdf.digest_iterations(n.key_len)?,
        digest_hash: digest_pbkdf.hash()?,
    };
    commit(vol, (size, block), &params, keys, online)
}
