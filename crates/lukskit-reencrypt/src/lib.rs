//! Re-encryption of LUKS2 volumes (and, by cryptsetup's legacy code, LUKS1 volumes) as
//! cryptsetup 2.6.1's `reencrypt` runs it, over the engine
//! of [`lukskit_volume::reencrypt`] (which writes the metadata and moves the data):
//!
//! * [`ReencryptRequest`] — what to do, as typed values (mode, phase, resilience, sizes);
//! * [`start::check`] — whether a re-encryption may start or go on with the header as it is;
//! * [`resume::check_resume_params`] — whether a request may go on with the re-encryption in
//!   progress, and [`resume::apply_resilience`] — the resilience a resume asks for;
//! * [`choice`] — the resilience and data shift of a new re-encryption;
//! * [`metadata`] — writing a new re-encryption's metadata, checked against an online run's
//!   mapping first;
//! * [`initialize()`] — a new re-encryption's initialization from typed values, asking an
//!   [`initialize::InitHost`] for its passphrases;
//! * [`sector_increase`] — a raise of the encryption sector size and where it is checked;
//! * [`encrypt_header`] — the layout of the detached header an encryption with a data
//!   shift formats;
//! * [`keyslots`] — the keyslots a re-encryption unlocks and the PBKDF of the new ones;
//! * [`online`] — the kernel mapping a run goes on under;
//! * [`userspace`] — a run through one of lukskit's userspace (FUSE or NBD) mappings;
//! * [`claim`] — the data device held for an offline run;
//! * [`run()`] — the run itself, offline or online, reporting through a [`Progress`];
//! * [`activation`] — opening a volume in re-encryption (unlock, recovery, its mapping's
//!   segments) and what `status` shows of it;
//! * [`Secrets`] — the passphrases an operation asks its caller for;
//! * [`segments`] — the segment table a mapping of a volume in re-encryption is made from;
//! * [`shift`] — the initializations that move data (an encryption making room for its
//!   header, a decryption exporting it);
//! * [`repair`] — recovery of an interrupted hot zone, upgrade and check of the metadata;
//! * [`legacy`] — offline re-encryption of LUKS1 devices, as cryptsetup's legacy code.
//!
//! The library prints nothing and reads no terminal: progress goes to the caller's
//! [`Progress`]; failures are [`ReencryptError`]s, which a command line maps to cryptsetup's
//! messages and exit codes.
//!
//! Resuming a re-encryption that `cryptsetup reencrypt --init-only` started, offline:
//!
//! ```no_run
//! use lukskit_reencrypt::{claim, resume, ClaimRefusal, Progress, ReencryptRequest};
//! use lukskit_reencrypt::{RunRequest, RunTarget};
//! use lukskit_volume::device::Access;
//! use lukskit_volume::reencrypt::{device_block_size, unlock_keys, Outcome};
//! use lukskit_volume::Volume;
//!
//! struct Percent;
//! impl Progress for Percent {
//!     fn update(&mut self, done: u64, total: u64) -> bool {
//!         eprintln!("{}%", done * 100 / total.max(1));
//!         true // false: stop at the next safe point (resumable)
//!     }
//! }
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let mut vol = Volume::load("disk.img", None, Access::Write)?;
//! let hdr = vol.luks2().ok_or("not LUKS2")?;
//! resume::check_resume_params(&ReencryptRequest::default(), hdr)?;
//! let keys = unlock_keys(&vol.dev, hdr, b"passphrase", None)?;
//! let _claim = claim::claim(&vol.data_path, ClaimRefusal::Run)?; // nothing else uses it
//! let _lock = lukskit_reencrypt::lock(vol.uuid(), false)?; // no other run either
//! let block = device_block_size(vol.dev.file());
//! let out = lukskit_reencrypt::run(
//!     &mut vol, None, block, &keys, RunTarget::Offline, RunRequest::default(), &mut Percent,
//! )?;
//! assert!(out == Outcome::Finished);
//! # Ok(())
//! # }
//! ```

#![forbid(unsafe_code)]

pub mod activation;
pub mod choice;
pub mod claim;
pub mod encrypt_header;
mod error;
pub mod initialize;
pub mod keyslots;
pub mod legacy;
pub mod metadata;
pub mod online;
mod progress;
pub mod repair;
mod request;
pub mod resume;
mod run;
mod secrets;
pub mod sector_increase;
pub mod segments;
pub mod shift;
pub mod start;
#[cfg(test)]
mod test_images;
pub mod userspace;

pub use error::{ClaimRefusal, ReencryptError, Result};
pub use initialize::initialize;
pub use progress::Progress;
pub use request::{Phase, ReencryptRequest, ResilienceName};
pub use run::{lock, run, RunRequest, RunTarget};
pub use secrets::{Secrets, SecretsError};
