//! Errors of the on-disk layer.

/// An error reading, validating or writing a LUKS header.
#[derive(Debug, thiserror::Error)]
pub enum FormatError {
    /// No LUKS header at all (wrong magic).
    #[error("{0}")]
    NotLuks(String),
    /// A header that is present but malformed or violates the format's rules.
    #[error("{0}")]
    Invalid(String),
    /// A header feature this build does not implement.
    #[error("{0}")]
    Unsupported(String),
    /// An I/O error on the underlying storage.
    #[error("{context}: {source}")]
    Io {
        /// What was being done.
        context: String,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// An error from the crypto layer (unknown hash for a checksum, …).
    #[error(transparent)]
    Crypto(#[from] lukskit_crypto::CryptoError),
}

impl FormatError {
    /// Wrap an I/O error with a short description of the operation.
    pub fn io(context: impl Into<String>, source: std::io::Error) -> Self {
        FormatError::Io {
            context: context.into(),
            source,
        }
    }
}
