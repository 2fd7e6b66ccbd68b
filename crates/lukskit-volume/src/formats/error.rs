//! Errors of the formats other than LUKS (LUKS keeps its own, richer ones in
//! [`crate::VolumeError`]).

use lukskit_format::VolumeType;

/// Why a volume of one of the other formats could not be described or unlocked.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OtherFormatError {
    /// The device carries no metadata of the requested type.
    #[error("{path} is not a valid {volume_type} device")]
    NotThisFormat {
        /// The type asked for.
        volume_type: VolumeType,
        /// The device.
        path: String,
    },
    /// The device carries metadata of the type that cannot be read (a version cryptsetup
    /// does not read): cryptsetup says `problem`, then that the device is not valid.
    #[error("{problem} {path} is not a valid {volume_type} device")]
    NotReadable {
        /// The type asked for.
        volume_type: VolumeType,
        /// The device.
        path: String,
        /// cryptsetup's message of the problem.
        problem: String,
    },
    /// No key could be derived from what was given (wrong passphrase, key file or PIM; for
    /// TCRYPT: no header decrypts with it).
    #[error("no key available with this passphrase")]
    NoKey,
    /// The passphrase is longer than the format allows (TCRYPT: 64 bytes, VeraCrypt 128).
    #[error("Maximum TCRYPT passphrase length ({max}) exceeded.")]
    PassphraseTooLong {
        /// The longest allowed, in bytes.
        max: usize,
    },
    /// A secret the format needs was not given (a passphrase, a key file).
    #[error("{what} is required")]
    SecretMissing {
        /// What is missing, in cryptsetup's words.
        what: String,
    },
    /// The metadata is damaged or hostile: the field, and why it cannot be used.
    #[error("invalid {volume_type} metadata: {why}")]
    Invalid {
        /// The type.
        volume_type: VolumeType,
        /// What is wrong (a field and its value).
        why: String,
    },
    /// The data area the metadata describes does not fit on the data device (cryptsetup's
    /// `device_block_adjust` at activation).
    #[error("Device {path} is too small.")]
    DeviceTooSmall {
        /// The data device.
        path: String,
    },
    /// Valid metadata lukskit (or cryptsetup 2.6.1) does not open: the message is
    /// cryptsetup's words for it.
    #[error("{0}")]
    Unsupported(String),
    /// The metadata cannot be loaded; cryptsetup prints `message` (its library's words, if
    /// it has any) and then "Device PATH is not a valid TYPE device." (exit code 1).
    #[error("{}Device {path} is not a valid {volume_type} device.", message.as_deref().map(|m| format!("{m}\n")).unwrap_or_default())]
    NotLoadable {
        /// The type asked for.
        volume_type: VolumeType,
        /// The device as given.
        path: String,
        /// cryptsetup's message before that line.
        message: Option<String>,
    },
    /// An unlock that failed the way cryptsetup fails it: the lines it prints on the way (in
    /// order) and its exit code (2, EPERM, is followed by "No key available with this
    /// passphrase.").
    #[error("{}", messages.join("\n"))]
    Refused {
        /// cryptsetup's messages.
        messages: Vec<String>,
        /// cryptsetup's exit code.
        exit_code: i32,
    },
}
