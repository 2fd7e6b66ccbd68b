//! `open` (and `open --test-passphrase`) of a LUKS2 volume whose re-encryption is in
//! progress: what to do is [`lukskit_reencrypt::activation`]'s (cryptsetup 2.6.1's
//! `_open_and_activate_reencrypt_device`); here the passphrase is read ([`Prompted`]) and the
//! library's failures get cryptsetup's words.

use super::{existing_key_source, tries};
use crate::args::Opts;
use crate::errors::{self, CliError, Result};
use crate::input::{self, KeySource};
use lukskit_crypto::SecretBuf;
use lukskit_reencrypt::activation::{self, ActivationRequest};
use lukskit_reencrypt::{Secrets, SecretsError};
use lukskit_volume::reencrypt::Keys;
use lukskit_volume::{Volume, VolumeError};

pub use lukskit_reencrypt::activation::Unlocked;

/// The passphrases of a re-encryption, read from the terminal or key file as cryptsetup
/// reads them: one prompt, up to `--tries` times, "No key available with this passphrase."
/// after each wrong one but the last.
pub(crate) struct Prompted {
    src: KeySource,
    prompt: String,
    tries: u32,
    asked: u32,
}

impl Prompted {
    /// The passphrase of `device` (as named in the prompt).
    pub(crate) fn new(o: &Opts, device: &str) -> Self {
        let src = existing_key_source(o, None);
        let tries = tries(o, &src);
        Prompted {
            src,
            prompt: format!("Enter passphrase for {device}: "),
            tries,
            asked: 0,
        }
    }
}

impl Secrets for Prompted {
    type Error = CliError;

    fn passphrase(&mut self, _keyslot: Option<u32>) -> Result<SecretBuf> {
        if self.asked >= self.tries {
            return Err(CliError::wrong_passphrase());
        }
        self.asked += 1;
        input::get_secret(&self.src, &self.prompt, false)
    }

    fn retry(&mut self, error: &VolumeError) -> bool {
        let again = self.asked < self.tries;
        if again {
            eprintln!("{}", errors::volume(error).message);
        }
        again
    }
}

/// cryptsetup's words for a failure of an operation that read passphrases: the prompt's own
/// error as it was, the library's worded by `reencrypt_messages`.
pub(crate) fn cli_error(e: SecretsError<CliError>) -> CliError {
    e.into_caller(CliError::from)
}

/// Ask for the passphrase of `device` (with `--tries`) until it unlocks the keys of the
/// re-encryption of `vol`.
pub(crate) fn unlock(o: &Opts, vol: &Volume, device: &str) -> Result<Keys> {
    activation::unlock(vol, o.key_slot, &mut Prompted::new(o, device)).map_err(cli_error)
}

/// `open --test-passphrase` of a device in re-encryption (see
/// [`activation::test_passphrase`]).
pub fn test_passphrase(o: &Opts, device: &str) -> Result<()> {
    let vol = super::load_volume(o, device, lukskit_volume::device::Access::Read)?;
    let mut secrets = Prompted::new(o, o.header.as_deref().unwrap_or(device));
    activation::test_passphrase(&vol, o.key_slot, &mut secrets).map_err(cli_error)
}

/// Unlock `device` (in re-encryption) for activation (see
/// [`activation::unlock_for_activation`]).
pub fn unlock_for_activation(o: &Opts, device: &str) -> Result<Unlocked> {
    let mut load = |access| super::load_volume_typed(o, device, access, super::requested_luks(o));
    let req = ActivationRequest {
        load: &mut load,
        key_slot: o.key_slot,
        locks_disabled: o.disable_locks,
    };
    let mut secrets = Prompted::new(o, o.header.as_deref().unwrap_or(device));
    activation::unlock_for_activation(req, &mut secrets).map_err(cli_error)
}
