//! Offline re-encryption of LUKS1 devices as cryptsetup 2.6.1's legacy LUKS1 code does it
//! (its `utils_reencrypt_luks1.c`): a new volume key, cipher, key size or hash
//! (`keep_key`: only the keyslots), a data shift towards the end (`reduce`, backward),
//! encryption of a plaintext device and decryption, with the same `LUKS-<uuid>.log` / `.org`
//! / `.new` files in the current directory, so that an interrupted run is resumed by either
//! tool. The data copy and the files are the engine's ([`lukskit_volume::reencrypt::luks1`]);
//! this module decides what cryptsetup decides around it.
//!
//! * [`applies`] — whether a `reencrypt` request is the legacy code's (a LUKS1 device, a
//!   `--encrypt --type luks1`, a decryption by UUID), and what cryptsetup refuses before it
//!   chooses;
//! * [`run()`] — the run, asking a [`LegacyHost`] for passphrases and telling it what
//!   cryptsetup says on the way.

mod headers;
mod passphrases;
mod state;

pub use state::{state_of, DevState};

use crate::{ReencryptError, SecretsError};
use headers::{fake_header, luks1_cipher, make_header, offset_of, restore, restored, side};
use lukskit_crypto::spec::CipherSpec;
use lukskit_crypto::SecretBuf;
use lukskit_format::io::Storage;
use lukskit_format::VolumeType;
use lukskit_volume::device::{Access, Device};
use lukskit_volume::pbkdf::PbkdfRequest;
pub use lukskit_volume::reencrypt::luks1::LegacyMode;
use lukskit_volume::reencrypt::luks1::{
    self as engine, CopyOutcome, CopyParams, LegacyDirection, LegacyLog, LogFile, NO_UUID,
};
use lukskit_volume::Volume;
use passphrases::{passphrases, resume_passphrase, Passphrases};

/// The result of a legacy run: the caller's error as it was, or the run's.
pub type LegacyResult<T, E> = std::result::Result<T, SecretsError<E>>;

/// cryptsetup's default LUKS1 key size for the headers of this code (bits).
pub const DEFAULT_KEY_BITS: u32 = 256;

/// What [`applies`] looks at: the devices and the kind of run.
#[derive(Debug, Clone)]
pub struct LegacyTarget {
    /// The data device (or image file).
    pub device: String,
    /// The detached header (`--header`), if any.
    pub header: Option<String>,
    /// The format asked for (`--type luks1` / `luks2`), if any.
    pub requested: Option<VolumeType>,
    /// A re-encryption, an encryption (`--encrypt`) or a decryption (`--decrypt`).
    pub mode: LegacyMode,
    /// The UUID of a decryption to resume (`--decrypt --uuid`).
    pub uuid: Option<String>,
    /// Only resume a run in progress (`--resume-only`).
    pub resume_only: bool,
    /// Look for broken LUKS headers before an encryption (not with `--disable-blkid`).
    pub probe: bool,
    /// The data shift asked for (`--reduce-device-size`), in bytes; rounded up to whole
    /// sectors by the run.
    pub reduce: Option<u64>,
}

/// A legacy run, as typed values.
pub struct LegacyRequest {
    /// The devices and the kind of run.
    pub target: LegacyTarget,
    /// The new cipher (`--cipher`; `None`: the old header's, or the default cipher for an
    /// encryption).
    pub cipher: Option<CipherSpec>,
    /// The new key size in bits (`--key-size`).
    pub key_bits: Option<u32>,
    /// Keep the volume key: only the keyslots are made again (`--keep-key`).
    pub keep_key: bool,
    /// The keyslot whose passphrase is asked for (`--key-slot`).
    pub key_slot: Option<u32>,
    /// The passphrase comes from a key file (one passphrase, for one keyslot).
    pub key_file: bool,
    /// The block size of the copy in MiB (`--block-size`, cryptsetup's default 4).
    pub block_mib: u32,
    /// The PBKDF of the new keyslots.
    pub pbkdf: PbkdfRequest,
    /// Read and write the data with `O_DIRECT` where the device takes it (`--use-directio`).
    pub direct_io: bool,
    /// `--device-size` was given (not supported by this code yet: refused).
    pub device_size: bool,
}

/// Which passphrase a run asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LegacyAsk {
    /// The passphrase of this keyslot.
    Keyslot(u32),
    /// The passphrase of any keyslot.
    Any,
}

/// What cryptsetup says on the way (with `--verbose`, but for [`LegacyEvent::Resuming`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LegacyEvent<'a> {
    /// The run's log file exists: the run resumes (always said).
    Resuming(&'a str),
    /// The old header was saved to its `.org` file (of this device).
    HeaderBackupCreated(&'a str),
    /// The PBKDF asked for is not LUKS1's: PBKDF2 instead (always said).
    PbkdfUnsupported,
    /// A keyslot of a new header was made.
    KeyslotCreated(u32),
    /// The device's header was marked unusable (this header device).
    MarkedUnusable(&'a str),
    /// The data copy begins (a caller that stops on a signal catches it from here).
    CopyStarting,
    /// The new header was written over this device's.
    HeaderRestored(&'a str),
}

/// What a legacy run asks its caller for (a command line's prompts and messages).
pub trait LegacyHost {
    /// The caller's error.
    type Error;

    /// Read the passphrase `ask` says (from the key file, if the request said so) and unlock
    /// `vol` with it; the tries are the caller's. The keyslot it opened and the passphrase.
    fn unlock(&mut self, vol: &Volume, ask: LegacyAsk) -> Result<(u32, SecretBuf), Self::Error>;

    /// The passphrase of an encryption's new header.
    fn new_passphrase(&mut self) -> Result<SecretBuf, Self::Error>;

    /// The first `len` bytes of the volume key file given, if any.
    fn volume_key_file(&mut self, len: usize) -> Result<Option<SecretBuf>, Self::Error>;

    /// Something cryptsetup says.
    fn event(&mut self, event: LegacyEvent<'_>);

    /// `done` of `total` bytes are copied: whether to go on (false: stop between blocks;
    /// the run is resumable).
    fn progress(&mut self, done: u64, total: u64) -> bool;
}

/// Whether cryptsetup runs its legacy LUKS1 code for `t` (a LUKS1 header, one in legacy
/// re-encryption, `--encrypt --type luks1`, a decryption by UUID); `Ok(false)`: its LUKS2
/// code. Refuses what cryptsetup refuses before it chooses (conflicting `--type`, encryption
/// of a LUKS device, `--resume-only` with nothing to resume).
pub fn applies(t: &LegacyTarget) -> crate::Result<bool> {
    let shown = t.header.as_deref().unwrap_or(&t.device);
    let st = state_of(shown);
    let conflict = |found: DevState| {
        Err(ReencryptError::ConflictingVersions {
            device: shown.to_string(),
            found,
        })
    };
    match (st, t.requested) {
        (DevState::Luks1 | DevState::Luks1Unusable, Some(VolumeType::Luks2))
        | (DevState::Luks2 | DevState::Luks2Reencrypt, Some(VolumeType::Luks1)) => {
            return conflict(st)
        }
        _ => {}
    }
    let encrypt = t.mode == LegacyMode::Encrypt;
    if t.resume_only && matches!(st, DevState::Luks1 | DevState::NotLuks) && encrypt {
        return Err(ReencryptError::NotInProgress);
    }
    if encrypt {
        // A LUKS header that does not load (a damaged one, one beside another signature) is
        // no device to encrypt: cryptsetup refuses it with the reason, the header first
        // (not with --disable-blkid, as cryptsetup 2.7).
        let probed = if t.probe {
            [t.header.as_deref(), Some(t.device.as_str())]
        } else {
            [None, None]
        };
        for path in probed.into_iter().flatten() {
            if let Some(source) = state::broken_luks(path) {
                return Err(ReencryptError::BrokenLuks {
                    path: path.to_string(),
                    source,
                });
            }
        }
        if matches!(st, DevState::Luks1 | DevState::Luks2) {
            return Err(ReencryptError::AlreadyLuks(shown.to_string()));
        }
        if t.header.is_some() {
            let data = state_of(&t.device);
            if matches!(data, DevState::Luks1 | DevState::Luks2) {
                return Err(ReencryptError::AlreadyLuks(t.device.clone()));
            }
            if matches!(data, DevState::Luks1Unusable | DevState::Luks2Reencrypt) {
                return Err(ReencryptError::AlreadyInReencryption(t.device.clone()));
            }
        }
        if st == DevState::Luks1Unusable || t.requested == Some(VolumeType::Luks1) {
            if !state::header_detached(t.header.as_deref(), &t.device) && t.reduce.is_none() {
                return Err(ReencryptError::EncryptWithoutHeader);
            }
            return Ok(true);
        }
        return Ok(false);
    }
    let decrypt_by_uuid = t.mode == LegacyMode::Decrypt
        && st == DevState::NotLuks
        && t.uuid.is_some()
        && t.header.is_none();
    if matches!(st, DevState::Luks1 | DevState::Luks1Unusable) || decrypt_by_uuid {
        if t.resume_only && st == DevState::Luks1 {
            return Err(ReencryptError::NotInProgress);
        }
        return Ok(true);
    }
    Ok(false)
}

/// The run's files (cryptsetup's names, in the current directory) and its log.
struct Files {
    log: String,
    org: String,
    new: String,
    journal: String,
}

impl Files {
    fn of(uuid: &str) -> Self {
        let (log, org, new) = engine::file_names(uuid);
        Files {
            log,
            org,
            new,
            journal: engine::journal_name(uuid),
        }
    }

    /// Remove the headers and the journal (a run starting again).
    fn remove_headers(&self) {
        for f in [&self.org, &self.new] {
            let _ = std::fs::remove_file(f);
        }
        engine::remove_journal(&self.journal);
    }

    /// Remove all of them (a run that ended, or left nothing the device depends on).
    fn remove_all(&self) {
        let _ = std::fs::remove_file(&self.log);
        self.remove_headers();
    }
}

/// cryptsetup's `reencrypt_luks1`: the run [`applies`] chose, asking `host` for its
/// passphrases. The devices are claimed as cryptsetup opens them (exclusively: nothing may
/// use the data device); an interrupted run (by [`LegacyHost::progress`] or a crash) is
/// resumed by the same request, or by cryptsetup.
pub fn run<H: LegacyHost>(r: &LegacyRequest, host: &mut H) -> LegacyResult<(), H::Error> {
    let device = r.target.device.as_str();
    // cryptsetup's legacy code re-encrypts only the first SIZE bytes; lukskit's has not been
    // checked against it for that, and must not re-encrypt the whole device instead.
    if r.device_size {
        return Err(ReencryptError::LegacyDeviceSizeUnsupported.into());
    }
    let hdr_dev = r.target.header.as_deref().unwrap_or(device).to_string();
    if !(1..=64).contains(&r.block_mib) {
        return Err(ReencryptError::LegacyBlockSize.into());
    }
    // As cryptsetup: the device must open exclusively now (closed again: the headers are
    // formatted with their own claim); it is claimed again for the data copy. An image file
    // is claimed too (cryptsetup only opens it): a lukskit mapping may serve it.
    let claim_device = || -> crate::Result<lukskit_volume::claim::Claim> {
        Device::open(device, Access::Write)
            .map_err(|_| ReencryptError::CannotOpenDevice(device.to_string()))?;
        crate::claim::claim(device, crate::ClaimRefusal::Legacy)
    };
    drop(claim_device()?);
    let mode = r.target.mode;
    let uuid = match (mode, &r.target.uuid) {
        (LegacyMode::Encrypt, _) => NO_UUID.to_string(),
        (LegacyMode::Decrypt, Some(u)) => {
            if uuid::Uuid::parse_str(u).is_err() {
                return Err(ReencryptError::InvalidUuid.into());
            }
            u.clone()
        }
        _ => match Volume::load_requested(
            device,
            r.target.header.as_deref(),
            Access::Read,
            Some(VolumeType::Luks1),
        ) {
            Ok(v) => v.uuid().to_string(),
            Err(_) => state::first_bytes(&hdr_dev)
                .and_then(|b| engine::unusable_uuid(&b))
                .ok_or_else(|| ReencryptError::NotValidLuks(device.to_string()))?,
        },
    };
    if r.key_slot.is_some_and(|s| s >= 8) {
        return Err(ReencryptError::InvalidKeyslot.into());
    }
    let files = Files::of(&uuid);
    let reduce = r.target.reduce.map_or(0, |b| b.div_ceil(512) * 512);
    let fresh = LegacyLog {
        uuid: uuid.clone(),
        direction: if r.target.reduce.is_some() {
            LegacyDirection::Backward
        } else {
            LegacyDirection::Forward
        },
        mode,
        offset: if r.target.reduce.is_some() {
            u64::MAX
        } else {
            0
        },
        shift: 0,
    };
    let (logf, mut log, in_progress) = match LogFile::create(&files.log, &fresh)? {
        Some(f) => (f, fresh, false),
        None => {
            host.event(LegacyEvent::Resuming(&files.log));
            let (f, parsed) = LogFile::open(&files.log, &uuid)
                .map_err(|e| ReencryptError::LegacyLogOpen(Some(e)))?;
            let l = match parsed {
                Err(engine::LogError::Unwritten) => {
                    // A run that stopped at its very first write: start again.
                    files.remove_headers();
                    f.write(&fresh).map(|_| fresh.clone())?
                }
                other => other.map_err(|_| ReencryptError::LegacyLogOpen(None))?,
            };
            if l.mode != LegacyMode::Decrypt && restored(&hdr_dev, &files.new) {
                // Stopped after the new header was written back: only the files are left.
                drop(f);
                files.remove_all();
                return Ok(());
            }
            if nothing_done(&l, &hdr_dev, &files.journal) {
                // Stopped before the data or the device's header was touched (a crash
                // while the headers were made): start again.
                files.remove_headers();
                f.write(&fresh)?;
                (f, fresh, false)
            } else {
                (f, l, true)
            }
        }
    };
    // The files are removed at the end unless the device depends on them.
    let mut stained = in_progress;
    let result = (|| -> LegacyResult<(), H::Error> {
        if !in_progress && r.target.uuid.is_some() {
            return Err(ReencryptError::UuidOnlyResumes.into());
        }
        let mode = log.mode;
        let p = if in_progress {
            let from = if mode == LegacyMode::Decrypt {
                &files.org
            } else {
                &files.new
            };
            let v = Volume::load(device, Some(from), Access::Read)?;
            resume_passphrase(r, &v, host)?
        } else if mode == LegacyMode::Encrypt {
            passphrases(r, None, host)?
        } else {
            let v = Volume::load_requested(
                device,
                r.target.header.as_deref(),
                Access::Read,
                Some(VolumeType::Luks1),
            )?;
            passphrases(r, Some(&v), host)?
        };
        let main_pass = p.main_passphrase()?;
        if !in_progress {
            make_headers(r, mode, &files, &uuid, reduce, &p, host)?;
            if mode != LegacyMode::Encrypt {
                if !engine::mark_unusable(&hdr_dev)? {
                    return Err(ReencryptError::NotValidLuks(device.to_string()).into());
                }
                host.event(LegacyEvent::MarkedUnusable(&hdr_dev));
                stained = true;
            }
        }
        if !r.keep_key {
            let _claim = claim_device()?;
            let mut old = side(device, &files.org, main_pass.as_bytes(), p.main, false)?;
            let mut new = side(device, &files.new, main_pass.as_bytes(), p.main, true)?;
            if r.direct_io {
                // As cryptsetup's O_DIRECT (where the device takes it).
                old.data.use_direct_io();
                new.data.use_direct_io();
            }
            let dev_size = Device::open(device, Access::Read)?
                .size()
                .map_err(|source| ReencryptError::DeviceSize {
                    path: device.to_string(),
                    source,
                })?;
            let org_size = dev_size.saturating_sub(offset_of(device, &files.org)?);
            let new_size = dev_size.saturating_sub(offset_of(device, &files.new)?);
            let size = if mode == LegacyMode::Decrypt {
                org_size
            } else {
                new_size
            };
            if log.direction == LegacyDirection::Backward {
                stained = true;
            }
            host.event(LegacyEvent::CopyStarting);
            let mut cb = |done: u64, total: u64| host.progress(done, total);
            let params = CopyParams {
                old: &old,
                new: &new,
                size,
                block: r.block_mib as usize * 1024 * 1024,
                log: &logf,
                journal: &files.journal,
                run: engine::run_id(&files.new)?,
            };
            let out =
                engine::copy(&params, &mut log, &mut cb).map_err(ReencryptError::LegacyCopy)?;
            if out == CopyOutcome::Interrupted {
                return Err(ReencryptError::LegacyInterrupted.into());
            }
            if mode == LegacyMode::Decrypt && new_size > org_size {
                let zero = vec![0u8; 1 << 20];
                let mut at = org_size;
                while at < new_size {
                    let n = (new_size - at).min(zero.len() as u64) as usize;
                    new.data.pwrite(&zero[..n], at)?;
                    at += n as u64;
                }
                new.data.flush()?;
            }
        }
        if mode != LegacyMode::Decrypt {
            restore(r, &files.new, mode, host)?;
        }
        stained = false;
        Ok(())
    })();
    if !stained {
        files.remove_all();
    }
    result
}

/// Make the `.org` and `.new` headers of a new run: for an encryption a `cipher_null` old
/// header and the new one; else a backup of the device's header and a new header (a
/// `cipher_null` one for a decryption).
fn make_headers<H: LegacyHost>(
    r: &LegacyRequest,
    mode: LegacyMode,
    files: &Files,
    uuid: &str,
    reduce: u64,
    p: &Passphrases,
    host: &mut H,
) -> LegacyResult<(), H::Error> {
    let device = r.target.device.as_str();
    let main_pass = p.main_passphrase()?;
    let fake_bits = r.key_bits.unwrap_or(DEFAULT_KEY_BITS);
    let fake_p = Passphrases::one(p.main, main_pass.clone());
    if mode == LegacyMode::Encrypt {
        make_header(r, fake_header(&files.org, device, fake_bits), &fake_p, host)?;
        let new = headers::NewHeader {
            path: &files.new,
            cipher: r
                .cipher
                .clone()
                .unwrap_or_else(lukskit_volume::format::default_cipher),
            key_bits: r.key_bits.unwrap_or(DEFAULT_KEY_BITS),
            offset_sectors: reduce / 512,
            uuid: None,
            volume_key: None,
            data: device,
        };
        make_header(r, new, p, host)?;
        return Ok(());
    }
    lukskit_volume::backup::header_backup(device, r.target.header.as_deref(), &files.org)?;
    host.event(LegacyEvent::HeaderBackupCreated(device));
    if mode == LegacyMode::Decrypt {
        make_header(r, fake_header(&files.new, device, fake_bits), &fake_p, host)?;
        return Ok(());
    }
    let old = Volume::load(device, r.target.header.as_deref(), Access::Read)?;
    let (cipher, bits, offset) = luks1_cipher(&old)?;
    let key_bits = if r.keep_key {
        bits
    } else {
        r.key_bits.unwrap_or(bits)
    };
    let volume_key = if r.keep_key {
        Some(old.unlock(main_pass.as_bytes(), Some(p.main), false)?.1)
    } else {
        host.volume_key_file((key_bits / 8) as usize)
            .map_err(SecretsError::Caller)?
    };
    // Its lock must not be held while the new header is formatted.
    drop(old);
    let cipher = match &r.cipher {
        Some(c) => c.clone(),
        None => CipherSpec::parse(&cipher).map_err(|e| ReencryptError::Volume(e.into()))?,
    };
    let new = headers::NewHeader {
        path: &files.new,
        cipher,
        key_bits,
        offset_sectors: offset + reduce / 512,
        uuid: Some(uuid.to_string()),
        volume_key,
        data: device,
    };
    make_header(r, new, p, host)?;
    Ok(())
}

/// Whether a run whose log exists has not touched anything yet: the device's header is
/// still a usable LUKS1 one (a re-encryption or decryption marks it before the first data
/// write), or an encryption has not written its first block (no redo record either).
fn nothing_done(log: &LegacyLog, hdr_dev: &str, journal: &str) -> bool {
    let initial = match log.direction {
        LegacyDirection::Forward => log.offset == 0,
        LegacyDirection::Backward => log.offset == u64::MAX,
    };
    match log.mode {
        LegacyMode::Encrypt => initial && std::fs::metadata(journal).is_err(),
        _ => state_of(hdr_dev) == DevState::Luks1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_images::{fresh, luks1, prepared};

    fn target(device: &str, mode: LegacyMode) -> LegacyTarget {
        LegacyTarget {
            device: device.to_string(),
            header: None,
            requested: None,
            mode,
            uuid: None,
            resume_only: false,
            probe: true,
            reduce: None,
        }
    }

    #[test]
    fn luks1_goes_to_the_legacy_code_and_luks2_does_not() {
        let dir = tempfile::tempdir().unwrap();
        let (l1, l2, l2r) = (
            dir.path().join("l1").display().to_string(),
            dir.path().join("l2").display().to_string(),
            dir.path().join("l2r").display().to_string(),
        );
        luks1(&l1);
        fresh(&l2);
        prepared(&l2r);
        assert_eq!(state_of(&l1), DevState::Luks1);
        assert_eq!(state_of(&l2), DevState::Luks2);
        assert_eq!(state_of(&l2r), DevState::Luks2Reencrypt);
        assert!(applies(&target(&l1, LegacyMode::Reencrypt)).unwrap());
        assert!(applies(&target(&l1, LegacyMode::Decrypt)).unwrap());
        assert!(!applies(&target(&l2, LegacyMode::Reencrypt)).unwrap());
        assert!(!applies(&target(&l2r, LegacyMode::Reencrypt)).unwrap());
        // --type naming the other version: cryptsetup's "Conflicting versions".
        for (path, requested, found) in [
            (&l1, VolumeType::Luks2, DevState::Luks1),
            (&l2, VolumeType::Luks1, DevState::Luks2),
            (&l2r, VolumeType::Luks1, DevState::Luks2Reencrypt),
        ] {
            let t = LegacyTarget {
                requested: Some(requested),
                ..target(path, LegacyMode::Reencrypt)
            };
            match applies(&t) {
                Err(ReencryptError::ConflictingVersions { device, found: f }) => {
                    assert_eq!((device.as_str(), f), (path.as_str(), found));
                }
                other => panic!("{path}: {other:?}"),
            }
        }
        // Nothing to resume on a LUKS1 device that is not in re-encryption.
        let t = LegacyTarget {
            resume_only: true,
            ..target(&l1, LegacyMode::Reencrypt)
        };
        assert!(matches!(applies(&t), Err(ReencryptError::NotInProgress)));
    }

    #[test]
    fn an_encryption_refuses_luks_devices_and_needs_room_for_its_header() {
        let dir = tempfile::tempdir().unwrap();
        let (l1, plain) = (
            dir.path().join("l1").display().to_string(),
            dir.path().join("plain").display().to_string(),
        );
        luks1(&l1);
        std::fs::File::create(&plain)
            .unwrap()
            .set_len(4 << 20)
            .unwrap();
        let enc = |device: &str| LegacyTarget {
            requested: Some(VolumeType::Luks1),
            ..target(device, LegacyMode::Encrypt)
        };
        assert!(matches!(
            applies(&enc(&l1)),
            Err(ReencryptError::AlreadyLuks(d)) if d == l1
        ));
        // In place without a data shift there is no room for the header.
        assert!(matches!(
            applies(&enc(&plain)),
            Err(ReencryptError::EncryptWithoutHeader)
        ));
        let shifted = LegacyTarget {
            reduce: Some(4096),
            ..enc(&plain)
        };
        assert!(applies(&shifted).unwrap());
        // A detached header that does not exist yet is room enough.
        let detached = LegacyTarget {
            header: Some(dir.path().join("hdr").display().to_string()),
            ..enc(&plain)
        };
        assert!(applies(&detached).unwrap());
        // Without --type luks1 an encryption is the LUKS2 code's.
        let luks2 = LegacyTarget {
            requested: None,
            ..shifted
        };
        assert!(!applies(&luks2).unwrap());
    }
}
