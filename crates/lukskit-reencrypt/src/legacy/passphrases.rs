//! The passphrases of a legacy run (cryptsetup's `initialize_passphrase`): which keyslots'
//! passphrases are asked for, through the caller's [`LegacyHost`].

use super::{LegacyAsk, LegacyHost, LegacyRequest, LegacyResult};
use crate::ReencryptError;
use lukskit_crypto::SecretBuf;
use lukskit_volume::reencrypt::luks1::LegacyMode;
use lukskit_volume::{Volume, VolumeError};

/// The passphrases of the run by keyslot, and the keyslot whose passphrase opens the old
/// and new headers.
pub(super) struct Passphrases {
    pub by_slot: Vec<Option<SecretBuf>>,
    pub main: u32,
}

impl Passphrases {
    fn none() -> Self {
        Passphrases {
            by_slot: (0..8).map(|_| None).collect(),
            main: 0,
        }
    }

    /// Only `pass`, for keyslot `slot`, which is the main one.
    pub fn one(slot: u32, pass: SecretBuf) -> Self {
        let mut p = Passphrases::none();
        p.by_slot[slot as usize] = Some(pass);
        p.main = slot;
        p
    }

    /// The main keyslot's passphrase.
    pub fn main_passphrase(&self) -> Result<&SecretBuf, ReencryptError> {
        self.by_slot[self.main as usize]
            .as_ref()
            .ok_or(ReencryptError::Volume(VolumeError::WrongPassphrase))
    }
}

/// The question for the keyslot asked for, or any.
fn ask_for(slot: Option<u32>) -> LegacyAsk {
    match slot {
        Some(s) => LegacyAsk::Keyslot(s),
        None => LegacyAsk::Any,
    }
}

/// The passphrases of the keyslots to keep: of the new header's keyslot for an encryption
/// (`vol` is `None`), else of the old header's keyslots.
pub(super) fn passphrases<H: LegacyHost>(
    r: &LegacyRequest,
    vol: Option<&Volume>,
    host: &mut H,
) -> LegacyResult<Passphrases, H::Error> {
    let Some(vol) = vol else {
        // A new encryption: the passphrase of the new header.
        let slot = r.key_slot.unwrap_or(0);
        let pass = host.new_passphrase().map_err(crate::SecretsError::Caller)?;
        return Ok(Passphrases::one(slot, pass));
    };
    if r.key_file {
        let (s, pass) = host
            .unlock(vol, ask_for(r.key_slot))
            .map_err(crate::SecretsError::Caller)?;
        if r.key_slot.is_none() && vol.active_keyslots()?.len() != 1 {
            return Err(ReencryptError::KeyFileNeedsOneKeyslot.into());
        }
        return Ok(Passphrases::one(s, pass));
    }
    if r.key_slot.is_some() || r.target.mode == LegacyMode::Decrypt {
        if let Some(s) = r.key_slot {
            if !vol.keyslot_active(s)? {
                return Err(ReencryptError::Volume(VolumeError::WrongPassphrase).into());
            }
        }
        let (s, pass) = host
            .unlock(vol, ask_for(r.key_slot))
            .map_err(crate::SecretsError::Caller)?;
        return Ok(Passphrases::one(s, pass));
    }
    let mut p = Passphrases::none();
    let mut first = None;
    for s in 0..8u32 {
        if !vol.keyslot_active(s)? {
            continue;
        }
        let (got, pass) = host
            .unlock(vol, LegacyAsk::Keyslot(s))
            .map_err(crate::SecretsError::Caller)?;
        p.by_slot[got as usize] = Some(pass);
        first.get_or_insert(got);
    }
    p.main = first.ok_or(ReencryptError::Volume(VolumeError::WrongPassphrase))?;
    Ok(p)
}

/// The passphrase of a run being resumed: one that opens the header the run depends on.
pub(super) fn resume_passphrase<H: LegacyHost>(
    r: &LegacyRequest,
    vol: &Volume,
    host: &mut H,
) -> LegacyResult<Passphrases, H::Error> {
    let (s, pass) = host
        .unlock(vol, ask_for(r.key_slot))
        .map_err(crate::SecretsError::Caller)?;
    Ok(Passphrases::one(s, pass))
}
