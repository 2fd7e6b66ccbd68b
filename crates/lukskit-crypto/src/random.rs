//! Randomness from the kernel CSPRNG.

use crate::{CryptoError, Result};

/// Fill `buf` with cryptographically secure random bytes (`getrandom(2)`).
pub fn fill(buf: &mut [u8]) -> Result<()> {
    getrandom::fill(buf).map_err(|_| CryptoError::Random)
}

/// Return `n` cryptographically secure random bytes.
pub fn bytes(n: usize) -> Result<Vec<u8>> {
    let mut v = vec![0u8; n];
    fill(&mut v)?;
    Ok(v)
}
