//! # lukskit — LUKS1 and LUKS2 volumes from Rust, without the kernel
//!
//! Open a LUKS volume (an image file, a block device, or with the `nbd` feature an NBD
//! URI), unlock it with a passphrase, a key file, a token or the volume key, and read and
//! write its plaintext at any byte offset; format new volumes, add and remove keyslots, and
//! read the header's metadata as typed data or as cryptsetup's JSON. Volumes are
//! byte-compatible with cryptsetup 2.6.1: what this crate writes, cryptsetup and dm-crypt
//! open, and the other way round.
//!
//! ```
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use lukskit::{FormatOptions, Pbkdf, Secret, Volume};
//!
//! # let dir = tempfile::tempdir()?;
//! # let image = dir.path().join("disk.img");
//! // A 32 MiB image file, formatted as LUKS2 (fast PBKDF for the example only).
//! std::fs::File::create(&image)?.set_len(32 << 20)?;
//! let image = image.to_str().unwrap();
//! let options = FormatOptions::luks2().pbkdf(Pbkdf::Pbkdf2 { iterations: 1000 });
//! lukskit::format(image, &Secret::passphrase("correct horse"), &options)?;
//!
//! // Write plaintext, then read it back through a fresh unlock.
//! let vol = Volume::open_rw(image)?.unlock(Secret::passphrase("correct horse"))?;
//! vol.write_at(b"hello, LUKS", 4000)?;
//! vol.flush()?;
//! drop(vol);
//!
//! let vol = Volume::open(image)?.unlock(Secret::passphrase("correct horse"))?;
//! let mut buf = [0u8; 11];
//! vol.read_at(&mut buf, 4000)?;
//! assert_eq!(&buf, b"hello, LUKS");
//! assert_eq!(vol.size(), (32 << 20) - 16 * 1024 * 1024); // LUKS2's default 16 MiB header
//!
//! // A wrong passphrase is a typed error.
//! let err = Volume::open(image)?.unlock(Secret::passphrase("wrong")).unwrap_err();
//! assert!(matches!(err, lukskit::Error::WrongPassphrase));
//! # Ok(())
//! # }
//! ```
//!
//! `examples/superblock.rs` opens an image made by cryptsetup and reads the ext4 superblock
//! of the file system in it (`cargo run -p lukskit --example superblock -- IMAGE`).
//!
//! ## What is where
//!
//! * [`Volume`] / [`OpenOptions`] — open and unlock ([`OpenOptions::open_storage`]: on a
//!   [`Storage`] of your own, such as an image in memory); [`Unlocked`] — the plaintext
//!   ([`Plaintext`], also as a `std::io` stream: [`PlaintextStream`]) and the volume key;
//! * [`Secret`] — passphrase, key file, volume key, token; held in [`SecretBuf`] (locked in
//!   memory and wiped when dropped) from the moment it is made;
//! * [`format()`] / [`FormatOptions`] / [`Pbkdf`] — new volumes; [`KeyslotOptions`] — new
//!   keyslots ([`Volume::add_key`], [`Volume::remove_key`]);
//! * [`Metadata`] — the header as typed data and as JSON;
//! * [`Error`] — every failure, typed (`#[non_exhaustive]`).
//!
//! The layers below stay reachable for what the facade does not cover (re-encryption,
//! conversion, the other on-disk formats, token management): [`volume_layer`]
//! (`lukskit-volume`), [`format_layer`] (`lukskit-format`), [`crypto`] (`lukskit-crypto`).
//!
//! ## Cargo features
//!
//! The default build has no server code and no network client.
//!
//! * `nbd` — accept `nbd://` and `nbd+unix://` URIs wherever a path is taken; `tls` —
//!   `nbds://` (NBD over TLS);
//! * `tang` — unlock with clevis tokens ([`Secret::Token`]: tang, tpm2, sss pins);
//! * `io_uring` — the volume layer's asynchronous sector I/O (`volume_layer::ring`);
//! * `fuse` — expose the plaintext through FUSE or an NBD server (`expose`);
//! * `crypttab` — crypttab(5) parsing and each entry's open plan (`crypttab`);
//! * `tokens` — cryptsetup's token step with every token kind and PIN prompts
//!   (`token_unlock`).
//! * `reencrypt` — re-encryption as cryptsetup's `reencrypt` orchestrates it, offline or
//!   online under a kernel or userspace mapping (`reencrypt`).
//!
//! Image conversion (plaintext file ↔ encrypted image, streamed on all cores) is
//! `volume_layer::image`.
//!
//! Without `nbd` the NBD client is not compiled (a URI is refused with
//! [`Error::FeatureDisabled`]); without `tls` neither is rustls.

#![forbid(unsafe_code)]

mod error;
mod format;
mod metadata;
mod pbkdf;
mod plaintext;
mod secret;
mod tokens;
mod volume;

pub use error::{Error, KeyFileProblem, Result};
pub use format::{format, FormatOptions};
pub use metadata::{KeyslotInfo, Metadata, TokenInfo};
pub use pbkdf::Pbkdf;
pub use plaintext::{Plaintext, PlaintextStream};
pub use secret::{Secret, MAX_KEY_FILE_SIZE};
pub use volume::{KeyslotOptions, OpenOptions, Unlocked, Volume};

pub use lukskit_crypto::spec::CipherSpec;
pub use lukskit_crypto::SecretBuf;
pub use lukskit_format::VolumeType;
pub use lukskit_volume::storage::{MemStorage, SharedStorage, Storage};

/// The crypto layer (`lukskit-crypto`): ciphers, hashes, KDFs, [`SecretBuf`].
pub use lukskit_crypto as crypto;
/// The on-disk layer (`lukskit-format`): LUKS1/LUKS2 header parsing and writing.
pub use lukskit_format as format_layer;
/// The volume layer (`lukskit-volume`): everything the command line does to a volume.
pub use lukskit_volume as volume_layer;

/// crypttab(5) (`lukskit-crypttab`): [`crypttab::read_table`], typed entries, and
/// [`crypttab::OpenPlan`] — what an entry's open needs (device found by UUID/LABEL, key file,
/// detached header, volume type); the open itself is the caller's.
#[cfg(feature = "crypttab")]
pub use lukskit_crypttab as crypttab;
/// Exposing plaintext through FUSE or as an NBD server (`lukskit-expose`).
#[cfg(feature = "fuse")]
pub use lukskit_expose as expose;
/// Re-encryption (`lukskit-reencrypt`): a typed [`reencrypt::ReencryptRequest`], the checks
/// and choices cryptsetup's `reencrypt` makes, and [`reencrypt::run()`], offline or online,
/// reporting through a [`reencrypt::Progress`] the caller implements.
#[cfg(feature = "reencrypt")]
pub use lukskit_reencrypt as reencrypt;
/// cryptsetup's token step (`lukskit-tokens`): [`token_unlock::try_tokens`] tries a
/// volume's tokens (luks2-keyring, clevis, systemd-tpm2, systemd-pkcs11) in keyslot-priority
/// order, asking PINs through a [`token_unlock::TokenPrompt`] the caller implements.
#[cfg(feature = "tokens")]
pub use lukskit_tokens as token_unlock;
