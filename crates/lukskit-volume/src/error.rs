//! Errors of the volume layer, with cryptsetup's exit-code classes.

use lukskit_crypto::CryptoError;
use lukskit_format::FormatError;

/// The class of an error, which decides the process exit code exactly as cryptsetup's
/// `translate_errno` does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// Wrong or missing parameters, unusable header, inactive keyslot (exit 1).
    Invalid,
    /// No permission or bad passphrase (exit 2).
    Permission,
    /// Out of memory (exit 3).
    NoMemory,
    /// Wrong device or file specified (exit 4).
    Device,
    /// Device already exists or is busy (exit 5).
    Busy,
}

impl ErrorKind {
    /// The cryptsetup exit code of this class.
    pub fn exit_code(self) -> i32 {
        match self {
            ErrorKind::Invalid => 1,
            ErrorKind::Permission => 2,
            ErrorKind::NoMemory => 3,
            ErrorKind::Device => 4,
            ErrorKind::Busy => 5,
        }
    }
}

/// An error of a volume operation: a class and one clear line for the user.
/// Messages never contain passphrases or key material.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VolumeError {
    /// The class (exit code).
    pub kind: ErrorKind,
    /// The message, without a trailing newline.
    pub message: String,
}

impl VolumeError {
    /// A new error.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        VolumeError {
            kind,
            message: message.into(),
        }
    }
    /// Wrong or missing parameters / unusable header (exit 1).
    pub fn invalid(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Invalid, message)
    }
    /// Bad passphrase / no permission (exit 2).
    pub fn permission(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Permission, message)
    }
    /// Wrong device (exit 4).
    pub fn device(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Device, message)
    }
    /// Busy or existing (exit 5).
    pub fn busy(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Busy, message)
    }
    /// The standard "No key available with this passphrase." (exit 2).
    pub fn wrong_passphrase() -> Self {
        Self::permission("No key available with this passphrase.")
    }
    /// An I/O error on `path` while doing `what`.
    pub fn io(what: &str, path: &str, e: &std::io::Error) -> Self {
        let kind = match e.raw_os_error() {
            Some(libc::ENOMEM) => ErrorKind::NoMemory,
            Some(libc::EBUSY) | Some(libc::EEXIST) => ErrorKind::Busy,
            Some(libc::EACCES) | Some(libc::EPERM) => ErrorKind::Permission,
            _ => ErrorKind::Device,
        };
        Self::new(kind, format!("{what} {path} failed: {e}."))
    }
}

impl std::fmt::Display for VolumeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for VolumeError {}

impl From<CryptoError> for VolumeError {
    fn from(e: CryptoError) -> Self {
        let kind = match e {
            CryptoError::Limit(_) => ErrorKind::NoMemory,
            _ => ErrorKind::Invalid,
        };
        let msg = e.to_string();
        let mut chars = msg.chars();
        let msg = match chars.next() {
            Some(c) => c.to_uppercase().collect::<String>() + chars.as_str(),
            None => msg,
        };
        VolumeError::new(kind, ensure_period(msg))
    }
}

impl From<FormatError> for VolumeError {
    fn from(e: FormatError) -> Self {
        match e {
            FormatError::Io { context, source } => VolumeError::new(
                ErrorKind::Device,
                ensure_period(format!("{context}: {source}")),
            ),
            FormatError::Crypto(c) => c.into(),
            other => VolumeError::invalid(ensure_period(other.to_string())),
        }
    }
}

fn ensure_period(mut s: String) -> String {
    if !s.ends_with('.') {
        s.push('.');
    }
    s
}

/// Result type of the volume layer.
pub type Result<T> = std::result::Result<T, VolumeError>;
