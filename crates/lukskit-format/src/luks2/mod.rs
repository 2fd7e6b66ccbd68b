//! LUKS2: the two binary headers, the JSON metadata, validation, and the crash-safe
//! two-copy read/write protocol — byte-compatible with cryptsetup (`lib/luks2/`).
//!
//! # Design
//!
//! The JSON metadata is the source of truth. It is kept as a
//! `serde_json::Map<String, Value>` whose member order is the insertion order (the
//! `preserve_order` feature), exactly like json-c objects in cryptsetup, so members this
//! crate does not know — unknown token types, unknown config members, future keyslot
//! fields — survive a rewrite untouched, and a header read from disk serialises back to
//! the very bytes cryptsetup wrote.
//!
//! * Typed *views* ([`Keyslot`], [`Segment`], [`Digest`], [`Token`]) are parsed from the JSON
//!   on demand; they are snapshots, editing them changes nothing.
//! * *Mutators* on [`Luks2Header`] edit the JSON directly and build new objects with
//!   cryptsetup's member order (`luks2_keyslot_alloc`, `PBKDF2_digest_store`,
//!   `json_segment_create_crypt`, `LUKS2_generate_hdr`).
//! * Serialisation ([`Luks2Header::to_json_string`]) is json-c's
//!   `JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE`: no whitespace, `/` not
//!   escaped (`\/` is accepted on read).
//! * 64-bit quantities are decimal strings, 32-bit ones JSON integers.
//!
//! # Per-copy salts
//!
//! Each on-disk copy has its own 64-byte salt that never changes on an ordinary update.
//! [`Luks2Header::binary`]`.salt` holds the salt the *primary* copy is written with; the
//! secondary copy's salt is kept in a private field of [`Luks2Header`]. [`Luks2Header::new`]
//! draws both at random; [`read`] keeps the salt of each valid, current copy and draws a fresh
//! one for a damaged or obsolete copy (cryptsetup: "Always regenerate salt for bad header").
//! [`write_copy`] always writes a fresh salt.

mod binary;
mod disk;
mod dump_view;
pub mod edit;
mod from_luks1;
mod json;
mod metadata;
pub mod reencrypt_keyslot;
mod segment_object;
mod types;
mod validate;

pub use binary::BinaryHeader;
pub use disk::{check_sequence_id, read, write, write_copy, ReadOutcome};
pub use dump_view::{DigestDump, DumpLength, KdfDump, ReencryptKeyslotDump, SegmentDump};
pub use metadata::{
    keyring_token, token_with_keyslot, Digest, KdfParams, Keyslot, Luks2Header, NewHeaderParams,
    Segment, Token, UnknownKdfCosts, KNOWN_REQUIREMENTS,
};
pub use types::{
    ConfigFlag, DigestType, KeyslotType, ReencryptDirection, ReencryptMode, SegmentType, TokenType,
};

/// The nine allowed sizes of one metadata copy (binary header + JSON area), which are
/// also the possible offsets of the secondary copy (`LUKS2_HDR2_OFFSETS`).
pub const METADATA_SIZES: [u64; 9] = [
    0x4000, 0x8000, 0x10000, 0x20000, 0x40000, 0x80000, 0x100000, 0x200000, 0x400000,
];
/// Size of the binary part of each header copy.
pub const BINARY_HEADER_SIZE: usize = 4096;
/// Maximum number of keyslots (`LUKS2_KEYSLOTS_MAX`).
pub const MAX_KEYSLOTS: u32 = 32;
/// Maximum number of tokens (`LUKS2_TOKENS_MAX`).
pub const MAX_TOKENS: u32 = 32;
/// Maximum number of digests (`LUKS2_DIGEST_MAX`).
pub const MAX_DIGESTS: u32 = 8;
/// Default metadata (one copy) size: 16 KiB.
pub const DEFAULT_METADATA_SIZE: u64 = 0x4000;
/// Default keyslots area size: 16 MiB minus two default metadata copies.
pub const DEFAULT_KEYSLOTS_SIZE: u64 = 16744448;
/// Maximum keyslots area size (`LUKS2_MAX_KEYSLOTS_SIZE`, 128 MiB).
pub const MAX_KEYSLOTS_SIZE: u64 = 0x800_0000;
/// Size of a keyslot KDF salt and of a digest salt.
pub const SALT_SIZE: usize = 32;
/// Magic of the primary copy.
pub const MAGIC_PRIMARY: [u8; 6] = *b"LUKS\xba\xbe";
/// Magic of the secondary copy.
pub const MAGIC_SECONDARY: [u8; 6] = *b"SKUL\xba\xbe";
