//! The secrets an operation asks its caller for, and the failure of such an operation.
//!
//! The library reads no terminal and no key file: where cryptsetup asks for a passphrase in
//! the middle of an operation, the library asks its caller's [`Secrets`], which reads it
//! (and may fail with the caller's own error, returned as it was in
//! [`SecretsError::Caller`]).

use crate::ReencryptError;
use lukskit_crypto::SecretBuf;
use lukskit_volume::VolumeError;

/// Where an operation gets its passphrases from (a command line's prompt or key file).
pub trait Secrets {
    /// The caller's error (failing to read a passphrase, no tries left).
    type Error;

    /// The next passphrase to try, for `keyslot` (`None`: any keyslot).
    fn passphrase(&mut self, keyslot: Option<u32>) -> Result<SecretBuf, Self::Error>;

    /// The last passphrase was wrong (`error`): whether to ask for another one. A caller
    /// that says no gets `error` back from the operation.
    fn retry(&mut self, error: &VolumeError) -> bool;
}

/// The failure of an operation that asked for secrets.
#[derive(Debug)]
pub enum SecretsError<E> {
    /// The caller's [`Secrets`] failed, with this error.
    Caller(E),
    /// The operation failed.
    Reencrypt(ReencryptError),
}

impl<E> From<ReencryptError> for SecretsError<E> {
    fn from(e: ReencryptError) -> Self {
        SecretsError::Reencrypt(e)
    }
}

impl<E> From<VolumeError> for SecretsError<E> {
    fn from(e: VolumeError) -> Self {
        SecretsError::Reencrypt(e.into())
    }
}

impl<E> SecretsError<E> {
    /// The caller's error as it was, or the operation's made one by `f`.
    pub fn into_caller(self, f: impl FnOnce(ReencryptError) -> E) -> E {
        match self {
            SecretsError::Caller(e) => e,
            SecretsError::Reencrypt(e) => f(e),
        }
    }
}
