//! # lukskit-format — the on-disk layer of lukskit
//!
//! Parsing, validation and serialisation of LUKS1 and LUKS2 headers, byte-compatible
//! with cryptsetup. This layer knows the formats but holds no keys and decides no policy;
//! it reads and writes through the small [`io::Storage`] trait so that it can be tested on
//! memory buffers and so that the volume layer can add locking and fault injection.
//!
//! * [`luks1`] — the LUKS1 phdr, its eight keyslots and layout rules.
//! * [`luks2`] — the LUKS2 binary headers, the JSON metadata, validation, and the
//!   crash-safe two-copy read/write protocol.
//! * [`VolumeType`] — the one name of every kind of volume (LUKS1, LUKS2, plain, TCRYPT,
//!   BITLK, FVAULT2, loop-AES).
//!
//! The only `unsafe` is in [`io`] (allowed there alone): the size ioctl of a block device and
//! the hole punching of a file.

#![deny(unsafe_code)]

pub mod detect;
mod error;
pub mod io;
pub mod luks1;
pub mod luks2;
mod volume_type;

pub use error::{
    CopyProblem, DigestProblem, FormatError, JsonKind, JsonObject, JsonProblem, JsonType,
    KeyslotProblem, Luks1Error, Luks1Field, Luks1KeyslotProblem, Luks1RepairNote, Luks2Error,
    NotLuks,
};

pub use volume_type::{TypeRequest, VolumeType};

/// Result type of this crate.
pub type Result<T> = std::result::Result<T, FormatError>;

/// Size of a disk sector as LUKS counts it (offsets in headers are in these units).
pub const SECTOR_SIZE: u64 = 512;
