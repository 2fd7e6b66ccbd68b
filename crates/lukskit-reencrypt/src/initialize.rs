//! A new re-encryption's initialization from typed values, as cryptsetup 2.6.1's
//! `reencrypt_luks2_init`, `decrypt_luks2_init` and `encrypt_luks2_init` decide it: which
//! keyslots are unlocked, the new cipher, key and sector size, whether the volume key stays,
//! the keyslots added for a new key (removed again when the initialization fails), and the
//! metadata written (see [`crate::metadata`]).
//!
//! What cryptsetup reads or says on the way (passphrases, what it says of the device's use,
//! the cipher a `cipher_null` volume switches to, a volume key file, the sector size raise's
//! check) is its caller's: an [`InitHost`], asked in cryptsetup's order.

use crate::metadata::{self, EncryptInit, KeepKeyInit, NewKeyInit};
use crate::{choice, keyslots, ReencryptError, ReencryptRequest, SecretsError};
use lukskit_crypto::engine::SectorCipher;
use lukskit_crypto::spec::CipherSpec;
use lukskit_crypto::SecretBuf;
use lukskit_format::io::Storage;
use lukskit_format::luks2::Luks2Header;
use lukskit_volume::device::Device;
use lukskit_volume::format::default_cipher;
use lukskit_volume::pbkdf::PbkdfRequest;
use lukskit_volume::reencrypt::{InitParams, Keys, Mode, ResilienceChoice};
use lukskit_volume::{DeviceOp, Volume, VolumeError};

/// Which passphrase an initialization asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unlock {
    /// A decryption's one passphrase, of any keyslot (`Some`: of this keyslot only).
    Volume(Option<u32>),
    /// The passphrase of this keyslot (a re-encryption asks for each keyslot it keeps).
    Keyslot(u32),
}

/// What an initialization asks its caller for (a command line's prompts and messages).
pub trait InitHost {
    /// The caller's error.
    type Error;

    /// Read the passphrase `ask` says and unlock `vol` with it (the tries are the caller's);
    /// the volume key and the passphrase.
    fn unlock(&mut self, vol: &Volume, ask: Unlock) -> Result<(SecretBuf, SecretBuf), Self::Error>;

    /// The passphrases are read: what there is to say of the device's use (an error stops
    /// the initialization before anything is written).
    fn passphrases_read(&mut self) -> Result<(), Self::Error>;

    /// The volume has no encryption (`cipher_null`) and switches to `cipher`.
    fn cipher_switched(&mut self, cipher: &CipherSpec);

    /// The first `len` bytes of the volume key file given, if any.
    fn volume_key_file(&mut self, len: usize) -> Result<Option<SecretBuf>, Self::Error>;

    /// Whether a raise of the encryption sector size may go on (checked once the
    /// passphrases are read; `Ok` where the sector size does not grow).
    fn sector_increase_allowed(&mut self) -> Result<(), Self::Error>;
}

/// The header just made for an encryption (`reencrypt --encrypt --header`).
pub struct NewHeader {
    /// The passphrase of its keyslot.
    pub passphrase: SecretBuf,
    /// The data shift in bytes (`--reduce-device-size`), if any.
    pub shift: Option<u64>,
}

/// A new re-encryption's initialization, as typed values.
pub struct InitRequest<'a> {
    /// The re-encryption asked for.
    pub req: &'a ReencryptRequest,
    /// The data device when the header is detached.
    pub data_dev: Option<&'a Device>,
    /// The data device's logical block size.
    pub block: u64,
    /// The kernel mapping an online run goes on under (see [`metadata::commit`]).
    pub online: Option<&'a str>,
    /// The new cipher (`--cipher`; `None`: the old one, or the default cipher for a volume
    /// without encryption, as cryptsetup switches it:
    /// [`lukskit_volume::format::DEFAULT_CIPHER`]).
    pub cipher: Option<&'a CipherSpec>,
    /// The new key size in bits (`--key-size`).
    pub key_bits: Option<u32>,
    /// The passphrases come from a key file: only one keyslot can be unlocked.
    pub key_file: bool,
    /// The PBKDF asked for.
    pub pbkdf: &'a PbkdfRequest,
    /// The header an encryption made, if it is one.
    pub new_header: Option<NewHeader>,
}

/// The failure of an initialization.
pub type InitResult<T, E> = std::result::Result<T, SecretsError<E>>;

/// Initialize a new re-encryption of `vol` (see [`InitRequest`]); returns its keys.
pub fn initialize<H: InitHost>(
    vol: &mut Volume,
    mut r: InitRequest,
    host: &mut H,
) -> InitResult<Keys, H::Error> {
    let req = r.req;
    let storage: &dyn Storage = match r.data_dev {
        Some(d) => d,
        None => &vol.dev,
    };
    let size = storage
        .size()
        .map_err(|e| VolumeError::device_io(DeviceOp::GetSize, e))?;
    let block = r.block;
    // A resilience mode cryptsetup does not know fails its initialization, after the
    // passphrases are read (and the keyslots unlocked): checked there, below.
    let resilience = match choice::data_shift(req) {
        Some(shift) => Ok(ResilienceChoice::Datashift(shift)),
        None => choice::resilience(req),
    };
    if let Some(NewHeader { passphrase, shift }) = r.new_header.take() {
        host.passphrases_read().map_err(SecretsError::Caller)?;
        // --encrypt: the new header holds the new key in its keyslot.
        let e = EncryptInit {
            passphrase: passphrase.as_bytes(),
            shift,
            resilience: resilience?,
            pbkdf: r.pbkdf,
        };
        return Ok(metadata::encrypt(vol, (size, block), &e)?);
    }
    // A detached header whose data starts further on (a backup of a header that was in
    // front of the data): cryptsetup 2.6.1's `decrypt_luks2_init` refuses it before asking
    // for the passphrase (luks2-reencryption-test [5]).
    if req.decrypts() && luks2(vol)?.data_offset().map_err(ReencryptError::from)? > 0 {
        return Err(ReencryptError::DecryptNeedsDetachedHeader.into());
    }
    let slots = keyslots::to_unlock(vol, req.key_slot)?;
    if req.decrypts() {
        // cryptsetup's `decrypt_luks2_init`: one passphrase, of any keyslot (or --key-slot).
        let (old_vk, _pass) = host
            .unlock(vol, Unlock::Volume(req.key_slot))
            .map_err(SecretsError::Caller)?;
        host.passphrases_read().map_err(SecretsError::Caller)?;
        let params = InitParams {
            mode: Mode::Decrypt,
            resilience: resilience.map_err(init_failed)?,
            cipher: String::new(),
            sector_size: 512,
            new_digest: None,
            digest_iterations: r.pbkdf.digest_iterations(old_vk.len())?,
            digest_hash: r.pbkdf.hash()?,
        };
        let keys = Keys {
            old: Some(old_vk),
            new: None,
        };
        metadata::commit(vol, (size, block), &params, &keys, r.online)?;
        return Ok(keys);
    }
    if slots.len() > 1 && r.key_file {
        return Err(ReencryptError::KeyFileNeedsOneKeyslot.into());
    }
    let hdr = luks2(vol)?;
    let old_cipher = vol.cipher_spec()?;
    let old_key_len = vol.volume_key_size()?;
    let old_ss = data_sector_size(hdr)?;
    // A volume without encryption (cipher_null, e.g. converted from LUKS1) is not kept so by
    // default: cryptsetup switches it to its default cipher and key size, and says so.
    let switch_null = r.cipher.is_none() && old_cipher.starts_with("cipher_null");
    // The new segment's cipher as written: a given one as cryptsetup writes it (`aes` ->
    // `aes-cbc-plain`), the old one as it was.
    let (cipher, spec) = match r.cipher {
        Some(c) => (c.to_string(), c.clone()),
        None if switch_null => {
            let c = default_cipher();
            host.cipher_switched(&c);
            (c.to_string(), c)
        }
        None => {
            let spec = CipherSpec::parse(&old_cipher).map_err(ReencryptError::from)?;
            (old_cipher.clone(), spec)
        }
    };
    let key_len = match r.key_bits {
        Some(bits) => (bits / 8) as usize,
        None if r.cipher.is_none() && !switch_null => old_key_len,
        None => (lukskit_volume::format::default_key_bits(&spec) / 8) as usize,
    };
    let sector_size = req.sector_size.unwrap_or(old_ss);
    // A data shift must be whole sectors of both layouts; checked (as by the library)
    // before any keyslot is added, so that nothing is written when it is not.
    if let Ok(ResilienceChoice::Datashift(shift)) = resilience {
        let sector = old_ss.max(sector_size);
        if !shift.is_multiple_of(u64::from(sector)) {
            let e = VolumeError::from(lukskit_volume::ReencryptError::ShiftAlignment {
                sector_size: sector,
            });
            // cryptsetup's reason, then its failure of the initialization.
            return Err(init_failed(e.into()).into());
        }
    }
    if let (Ok(ResilienceChoice::Datashift(shift)), Some(name)) = (&resilience, r.online) {
        let seg0 = hdr
            .segments()
            .map_err(ReencryptError::from)?
            .into_iter()
            .find(|s| s.id == 0);
        let data = seg0.map_or(0, |s| s.size.unwrap_or(size.saturating_sub(s.offset)));
        choice::check_online_shift_size(name, data, *shift, old_ss.max(sector_size))?;
    }
    // `--keep-key` (cryptsetup 2.6.1 takes it for LUKS2 too): the volume key stays, so
    // something else of the data segment must change. As cryptsetup: a `--key-size` or a
    // new cipher's default key size that differs from the kept key's counts as a change,
    // but the key kept (and so its size) is the old one; no keyslot is added, the new
    // segment is bound to the old key's digest, and the new cipher must take that key.
    // `--volume-key-file` (cryptsetup 2.6.1's `reencrypt_luks2_init`, read before any
    // passphrase is asked): the new volume key is the file's first key-size bytes; a file
    // that holds the current volume key changes no key, as `--keep-key`.
    let mut keep_key = req.keep_key;
    let mut file_vk = None;
    if !req.keep_key {
        if let Some(vk) = host
            .volume_key_file(key_len)
            .map_err(SecretsError::Caller)?
        {
            if vol.verify_volume_key(vk.as_bytes()).is_ok() {
                keep_key = true;
            } else {
                file_vk = Some(vk);
            }
        }
    }
    let target = Target {
        cipher,
        spec,
        sector_size,
    };
    if keep_key {
        let same_cipher = target.cipher.eq_ignore_ascii_case(&old_cipher);
        if same_cipher && key_len == old_key_len && sector_size == old_ss {
            return Err(ReencryptError::NoSegmentChange.into());
        }
        return keep_key_init(vol, (size, &r), resilience, slots[0], &target, host);
    }
    let mut old_vk: Option<SecretBuf> = None;
    let mut passes = Vec::new();
    for &slot in &slots {
        let (vk, pass) = host
            .unlock(vol, Unlock::Keyslot(slot))
            .map_err(SecretsError::Caller)?;
        old_vk = Some(vk);
        passes.push(pass);
    }
    let old_vk = old_vk.ok_or(ReencryptError::Volume(VolumeError::WrongPassphrase))?;
    host.passphrases_read().map_err(SecretsError::Caller)?;
    let resilience = resilience.map_err(init_failed)?;
    let new_vk = match file_vk {
        Some(vk) => vk,
        None => SecretBuf::random(key_len).map_err(VolumeError::from)?,
    };
    SectorCipher::check(&target.spec, key_len, sector_size).map_err(ReencryptError::from)?;
    let mut new_slots = Vec::new();
    let added = keyslots::add_for_new_key(
        vol,
        &new_vk,
        (&passes, &slots),
        (r.pbkdf, req.pbkdf_given),
        &mut new_slots,
    );
    let done = added.map_err(SecretsError::from).and_then(|new_digest| {
        host.sector_increase_allowed()
            .map_err(SecretsError::Caller)?;
        let keys = Keys {
            old: Some(old_vk),
            new: Some(new_vk),
        };
        let n = NewKeyInit {
            cipher: target.cipher,
            sector_size,
            key_len,
            resilience,
            new_digest,
            first_slot: slots[0],
            pbkdf: r.pbkdf,
            pbkdf_given: req.pbkdf_given,
        };
        metadata::new_key(vol, (size, block), n, &keys, r.online)?;
        Ok(keys)
    });
    if done.is_err() {
        // As cryptsetup's `reencrypt_luks2_init` when the initialization fails (nothing of
        // it was written): the keyslots just added for the new volume key go again.
        for slot in new_slots.into_iter().rev() {
            let _ = vol.kill_keyslot(slot);
        }
    }
    done
}

/// The data segment a re-encryption goes to.
struct Target {
    cipher: String,
    spec: CipherSpec,
    sector_size: u32,
}

/// `reencrypt --keep-key` of a LUKS2 volume with a new cipher, key size or sector size
/// (cryptsetup 2.6.1's `reencrypt_luks2_init` with the volume key unchanged): keyslot `slot`
/// is unlocked, no keyslot is added (see [`metadata::keep_key`]).
fn keep_key_init<H: InitHost>(
    vol: &mut Volume,
    (size, r): (u64, &InitRequest),
    resilience: crate::Result<ResilienceChoice>,
    slot: u32,
    target: &Target,
    host: &mut H,
) -> InitResult<Keys, H::Error> {
    let (vk, _pass) = host
        .unlock(vol, Unlock::Keyslot(slot))
        .map_err(SecretsError::Caller)?;
    host.passphrases_read().map_err(SecretsError::Caller)?;
    host.sector_increase_allowed()
        .map_err(SecretsError::Caller)?;
    let k = KeepKeyInit {
        cipher: &target.cipher,
        spec: &target.spec,
        sector_size: target.sector_size,
        resilience: resilience.map_err(init_failed)?,
        pbkdf: r.pbkdf,
    };
    Ok(metadata::keep_key(vol, (size, r.block), vk, &k, r.online)?)
}

/// The failure of the initialization for reason `e` (reported once).
fn init_failed(e: ReencryptError) -> ReencryptError {
    match e {
        e @ ReencryptError::InitFailedBecause(_) => e,
        e => ReencryptError::InitFailedBecause(Box::new(e)),
    }
}

fn luks2(vol: &Volume) -> crate::Result<&Luks2Header> {
    vol.luks2().ok_or(ReencryptError::NotLuks2)
}

/// The encryption sector size of the volume's data segment (512 where it has none).
pub fn data_sector_size(hdr: &Luks2Header) -> crate::Result<u32> {
    Ok(hdr
        .segments()?
        .into_iter()
        .find(|s| s.id == 0)
        .map_or(512, |s| s.sector_size))
}
