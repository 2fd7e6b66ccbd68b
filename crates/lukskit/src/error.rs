//! The facade's error type: what went wrong, typed, with the paths and numbers involved.

use lukskit_volume::VolumeError;
use std::io;

/// The result of every fallible facade call.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// An error of a facade operation. Never contains passphrases or key material.
///
/// The common cases a program handles have their own variants; everything else the volume
/// layer reports is kept whole in [`Error::Volume`].
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The passphrase (or key file) opened no keyslot.
    #[error("no keyslot opens with this passphrase")]
    WrongPassphrase,
    /// A volume key was given that is not this volume's.
    #[error("the volume key does not match the volume")]
    WrongVolumeKey,
    /// No keyslot could be tried: none is active, or the requested one is not usable.
    #[error("no usable keyslot")]
    NoUsableKeyslot,
    /// There is no LUKS header on the device.
    #[error("{path} is not a LUKS volume")]
    NotLuks {
        /// The header device or image.
        path: String,
    },
    /// The device, image or file does not exist or cannot be accessed.
    #[error("{path} does not exist or cannot be accessed")]
    NotFound {
        /// The path as given.
        path: String,
    },
    /// Another user holds the device exclusively (mapped, mounted, being formatted).
    #[error("{path} is in use")]
    InUse {
        /// The device.
        path: String,
    },
    /// A write to a volume opened read-only.
    #[error("{path} is opened read-only")]
    ReadOnly {
        /// The device.
        path: String,
    },
    /// A plaintext read or write beyond the end of the data area.
    #[error("{len} bytes at offset {offset} do not fit in the {size}-byte data area")]
    OutOfRange {
        /// The requested plaintext offset.
        offset: u64,
        /// The requested length.
        len: u64,
        /// The size of the data area.
        size: u64,
    },
    /// A key file could not be read, or is larger than [`crate::MAX_KEY_FILE_SIZE`].
    #[error("key file {path}: {reason}")]
    KeyFile {
        /// The key file.
        path: String,
        /// Why it could not be used.
        reason: KeyFileProblem,
    },
    /// An option that is not valid (a cipher spec that does not parse, a key size that is
    /// not whole bytes, a secret of the wrong kind for the call).
    #[error("invalid {option}: {reason}")]
    InvalidOption {
        /// Which option.
        option: &'static str,
        /// Why.
        reason: String,
    },
    /// The operation needs a cargo feature this build of the library was made without
    /// (`nbd` for `nbd://` URIs, `tls` for `nbds://`, `tang` for clevis tokens).
    #[error("this build of lukskit has no {feature} support (cargo feature `{feature}`)")]
    FeatureDisabled {
        /// The cargo feature.
        feature: &'static str,
    },
    /// No token of the volume gave a passphrase that opens a keyslot.
    #[error("no token unlocked the volume")]
    NoTokenUnlocked,
    /// Any other error of the volume layer (keyslot management, header validation, I/O, ...).
    #[error(transparent)]
    Volume(VolumeError),
    /// An I/O error outside the volume layer.
    #[error(transparent)]
    Io(#[from] io::Error),
}

/// Why a key file was refused.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum KeyFileProblem {
    /// It could not be read.
    #[error("{0}")]
    Read(io::Error),
    /// It is larger than [`crate::MAX_KEY_FILE_SIZE`] bytes (cryptsetup's default limit).
    #[error("larger than {} bytes", crate::MAX_KEY_FILE_SIZE)]
    TooLarge,
}

impl From<VolumeError> for Error {
    fn from(e: VolumeError) -> Self {
        match e {
            VolumeError::WrongPassphrase => Error::WrongPassphrase,
            VolumeError::VolumeKeyMismatch => Error::WrongVolumeKey,
            VolumeError::NoUsableKeyslot => Error::NoUsableKeyslot,
            VolumeError::NotLuks { path } => Error::NotLuks { path },
            VolumeError::NotFound { path } => Error::NotFound { path },
            VolumeError::InUse { path } => Error::InUse { path },
            VolumeError::ReadOnly { path } => Error::ReadOnly { path },
            other => Error::Volume(other),
        }
    }
}

impl From<lukskit_crypto::CryptoError> for Error {
    fn from(e: lukskit_crypto::CryptoError) -> Self {
        Error::Volume(VolumeError::Crypto(e))
    }
}

impl From<Error> for io::Error {
    fn from(e: Error) -> Self {
        match e {
            Error::Io(e) => e,
            Error::NotFound { .. } => io::Error::new(io::ErrorKind::NotFound, e),
            Error::ReadOnly { .. } => io::Error::new(io::ErrorKind::PermissionDenied, e),
            Error::OutOfRange { .. } => io::Error::new(io::ErrorKind::UnexpectedEof, e),
            other => io::Error::other(other),
        }
    }
}
