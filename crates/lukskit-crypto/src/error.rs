//! Errors of the crypto layer.

/// An error from the crypto layer. Messages never contain secret material.
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
pub enum CryptoError {
    /// A hash, cipher, mode or IV generator this build does not implement.
    #[error("{0} is not supported")]
    Unsupported(String),
    /// A key of the wrong length or shape for the chosen cipher.
    #[error("invalid key: {0}")]
    InvalidKey(String),
    /// Malformed input (bad spec string, buffer not a multiple of the sector size, …).
    #[error("invalid input: {0}")]
    InvalidInput(String),
    /// A cost or size outside the limits lukskit (and cryptsetup) accept.
    #[error("limit exceeded: {0}")]
    Limit(String),
    /// The operating system's random generator failed.
    #[error("random number generator failed")]
    Random,
}
