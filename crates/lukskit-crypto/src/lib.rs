//! # lukskit-crypto — the crypto layer of lukskit
//!
//! Everything here is pure computation: no file or device I/O.
//!
//! * [`secret`] — zeroizing, memory-locked buffers for passphrases and keys.
//! * [`random`] — the kernel CSPRNG (`getrandom`).
//! * [`hash`] — hashes by their cryptsetup names (`sha256`, `ripemd160`, `whirlpool`, …).
//! * [`kdf`] — PBKDF2 and Argon2i/Argon2id with cryptsetup's limits and benchmarks.
//! * [`af`] — the LUKS anti-forensic information splitter.
//! * [`spec`] — dm-crypt cipher specifications (`aes-xts-plain64`, `capi:xts(aes)-plain64`).
//! * [`engine`] — the dm-crypt sector engine (ciphers, chaining modes, IV generators).

pub mod af;
pub mod bitlk;
pub mod engine;
mod error;
pub mod hash;
pub mod kdf;
#[cfg(test)]
mod openssl_oracle;
pub mod random;
pub mod secret;
pub mod spec;

pub use error::CryptoError;
pub use secret::SecretBuf;

/// Result type of this crate.
pub type Result<T> = std::result::Result<T, CryptoError>;
