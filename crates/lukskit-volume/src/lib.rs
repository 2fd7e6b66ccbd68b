//! # lukskit-volume — the volume layer of lukskit
//!
//! Opens devices and image files (with cryptsetup-compatible locking), loads LUKS headers
//! through the on-disk layer, unlocks keyslots with the crypto layer, and performs every
//! header update in a crash-safe order.
//!
//! * [`storage`] — where the bytes live: the [`storage::Storage`] trait (local files and block
//!   devices, NBD exports, memory, a caller's own) and [`storage::CrashingStorage`] for crash
//!   tests.
//! * [`device`] — device access and `flock` locking.
//! * [`claim`] — exclusive use of a device or image while it is open or being formatted.
//! * [`volume`] — an opened volume: unlock, add/kill keyslots, UUID, digest checks.
//! * [`mod@format`] — `luksFormat` for LUKS1 and LUKS2.
//! * [`formats`] — the format seam: every on-disk format (LUKS1, LUKS2, plain, TrueCrypt,
//!   BitLocker, FileVault 2, loop-AES) behind one trait, and their registry.
//! * [`data`] — the data path: plaintext reads/writes of an unlocked volume.
//! * [`ring`] — asynchronous sector I/O on io_uring (for the FUSE exposure).
//! * [`segment`] — the segment table of the data area (crypt / linear / zero segments).
//! * [`plain`] — cryptsetup plain mode (no header): key derivation and layout.
//! * [`image`] — offline conversion between plaintext files and encrypted images.
//! * [`backup`] — header backup and restore.
//! * [`convert`] — in-place LUKS1 ↔ LUKS2 conversion (`cryptsetup convert`).
//! * [`edit`] — label, subsystem, priority, tokens, repair.
//! * [`reencrypt`] — LUKS2 re-encryption (cryptsetup 2.6's metadata and algorithm), offline.
//! * [`pbkdf`] — choosing PBKDF parameters from command-line options.
//!
//! Errors are typed ([`VolumeError`] and its per-concern enums): they say what went wrong
//! with the slots, paths, sizes and OS errors involved. The library prints nothing and does
//! not decide exit codes or wording; the command line does.

pub mod backup;
pub mod claim;
pub mod convert;
pub mod data;
mod data_layout;
pub mod device;
pub mod edit;
mod error;
pub mod format;
pub mod formats;
pub mod image;
mod keyslot_cipher;
mod lock_file;
mod luks1_keys;
mod luks2_keys;
pub mod memory_hard;
pub mod partition;
pub mod pbkdf;
pub mod plain;
pub mod private_file;
pub mod reencrypt;
#[cfg(feature = "io-uring")]
pub mod ring;
pub mod segment;
pub mod signature;
pub mod storage;
pub mod volume;
mod wipe;

pub use error::{
    BackupError, ConvertError, DataError, DeviceOp, IoOp, KeyslotError, Luks1Incompatibility,
    ParamError, PlainValue, ReencryptError, RequirementsError, Result, SegmentError, TokenError,
    VolumeError,
};
pub use volume::{Header, Volume};
