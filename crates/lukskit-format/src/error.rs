//! Errors of the on-disk layer.
//!
//! The variants say what is wrong with which part of a header and carry the values needed to
//! describe it; wording for users (cryptsetup's messages) is the business of the caller.

/// An error reading, validating or writing a LUKS header.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FormatError {
    /// No LUKS header at all.
    #[error("not a LUKS device: {0}")]
    NotLuks(#[from] NotLuks),
    /// A LUKS1 header that is malformed, violates the format's rules or uses something this
    /// build does not implement.
    #[error("LUKS1 header: {0}")]
    Luks1(#[from] Luks1Error),
    /// A LUKS2 header that is malformed, violates the format's rules or uses something this
    /// build does not implement.
    #[error("LUKS2 header: {0}")]
    Luks2(#[from] Luks2Error),
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

/// Why a device holds no LUKS header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum NotLuks {
    /// No LUKS magic at offset 0.
    #[error("no LUKS magic")]
    NoMagic,
    /// The device is shorter than a LUKS1 header.
    #[error("device too small for a LUKS header")]
    TooSmall,
    /// A LUKS2 binary header copy without its magic.
    #[error("no LUKS2 {} header magic", if *.secondary { "secondary" } else { "primary" })]
    NoLuks2Magic {
        /// The secondary copy (else the primary one).
        secondary: bool,
    },
    /// Neither LUKS2 header copy has its magic.
    #[error("no LUKS2 header copy")]
    NoLuks2Copy,
}

/// A string field of the LUKS1 header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Luks1Field {
    /// `cipherName`.
    CipherName,
    /// `cipherMode`.
    CipherMode,
    /// `hashSpec`.
    HashSpec,
    /// `uuid`.
    Uuid,
}

impl std::fmt::Display for Luks1Field {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Luks1Field::CipherName => "cipher name",
            Luks1Field::CipherMode => "cipher mode",
            Luks1Field::HashSpec => "hash spec",
            Luks1Field::Uuid => "UUID",
        })
    }
}

/// What is wrong with a LUKS1 keyslot's layout (`LUKS_check_keyslots`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Luks1KeyslotProblem {
    /// The stripes count is not 4000.
    #[error("stripes {stripes}, must be 4000")]
    Stripes {
        /// The stripes count found.
        stripes: u32,
    },
    /// The key material starts inside the phdr.
    #[error("key material offset {offset} is inside the header")]
    InsideHeader {
        /// Key material offset (sectors).
        offset: u64,
    },
    /// The key material starts at or beyond the data area.
    #[error("key material offset {offset} beyond data area offset {payload}")]
    StartBeyondData {
        /// Key material offset (sectors).
        offset: u64,
        /// Payload offset (sectors).
        payload: u64,
    },
    /// The key material ends beyond the data area.
    #[error("key material sectors {offset}..{end} beyond data area offset {payload}")]
    EndBeyondData {
        /// Key material offset (sectors).
        offset: u64,
        /// End of the key material (sectors).
        end: u64,
        /// Payload offset (sectors).
        payload: u64,
    },
    /// The key material overlaps that of another keyslot.
    #[error("key material overlaps keyslot {other}")]
    Overlaps {
        /// The other keyslot.
        other: usize,
    },
}

/// A LUKS1 header that is malformed or cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Luks1Error {
    /// A string field that is not UTF-8.
    #[error("{field} is not valid UTF-8")]
    NotUtf8 {
        /// The field.
        field: Luks1Field,
    },
    /// Fewer bytes than the header's fields.
    #[error("truncated ({len} bytes, need {need})")]
    Truncated {
        /// Bytes given.
        len: usize,
        /// Bytes needed.
        need: usize,
    },
    /// A version other than 1.
    #[error("unsupported version {version}")]
    UnsupportedVersion {
        /// The version field.
        version: u16,
    },
    /// A key size of 0.
    #[error("key size 0")]
    KeySizeZero,
    /// A key size beyond what is supported.
    #[error("key size {key_bytes} bytes above {max}")]
    KeySizeTooLarge {
        /// The key size (bytes).
        key_bytes: u32,
        /// The largest supported (bytes).
        max: u32,
    },
    /// A key size refused when a header is made.
    #[error("invalid key size {key_bytes} bytes")]
    InvalidKeySize {
        /// The key size (bytes).
        key_bytes: u32,
    },
    /// The device is smaller than the header and its keyslots.
    #[error("device too small, need {need} bytes")]
    DeviceTooSmall {
        /// Bytes needed.
        need: u64,
    },
    /// A hash that is unknown or too short for LUKS1.
    #[error("unsupported hash {hash}")]
    UnsupportedHash {
        /// The hash spec.
        hash: String,
    },
    /// A keyslot with a broken layout.
    #[error("keyslot {slot}: {problem}")]
    Keyslot {
        /// The keyslot.
        slot: usize,
        /// What is wrong.
        problem: Luks1KeyslotProblem,
    },
    /// The payload offset is at or beyond the end of the data device.
    #[error("payload offset beyond the data device")]
    OffsetBeyondDevice,
    /// A payload offset that is neither 0 nor past the keyslots.
    #[error("payload offset inside the header")]
    DataOffsetInsideHeader,
    /// A UUID that is not in the canonical form.
    #[error("malformed UUID")]
    BadUuid,
    /// Repair refused: a key size other than 128, 256 or 512 bits.
    #[error("repair: non-standard key size")]
    RepairKeySize,
    /// Repair refused: keyslots not aligned as cryptsetup lays them out.
    #[error("repair: non-standard keyslot alignment")]
    RepairAlignment,
    /// Repair failed (the report says why).
    #[error("repair failed")]
    RepairFailed,
}

/// One line of the LUKS1 repair report (`LUKS_hdr_repair`'s log).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Luks1RepairNote {
    /// A problem found (or the reason a repair stopped).
    Problem(Luks1Error),
    /// A cipher mode `ecb-…` that is invalid.
    InvalidCipherMode {
        /// The mode.
        mode: String,
    },
    /// The cipher mode was set to `ecb`.
    CipherModeRepaired {
        /// The mode before.
        from: String,
    },
    /// A keyslot's key material offset was reset.
    OffsetRepaired {
        /// The keyslot.
        slot: usize,
        /// Offset before (sectors).
        from: u32,
        /// Offset after (sectors).
        to: u32,
    },
    /// A keyslot's stripes were reset to 4000.
    StripesRepaired {
        /// The keyslot.
        slot: usize,
        /// Stripes before.
        from: u32,
    },
    /// Keyslot 6's salt held a partition-table signature.
    BogusPartitionSignature {
        /// The keyslot.
        slot: usize,
    },
    /// A keyslot's salt was wiped.
    SaltWiped {
        /// The keyslot.
        slot: usize,
    },
}

/// A LUKS2 header that is malformed or cannot be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Luks2Error {
    /// Fewer than 512 bytes of binary header.
    #[error("binary header truncated")]
    BinaryTruncated,
    /// A binary header version other than 2 (read).
    #[error("unsupported version {version}")]
    UnsupportedVersion {
        /// The version field.
        version: u16,
    },
    /// A header to write whose version is not 2.
    #[error("cannot write version {version}")]
    WriteUnsupportedVersion {
        /// The version field.
        version: u16,
    },
    /// A copy's `hdr_offset` is not where it was read.
    #[error("offset {found:#x} differs from {expected:#x}")]
    OffsetMismatch {
        /// The offset field.
        found: u64,
        /// Where the copy lies.
        expected: u64,
    },
    /// A header size outside the allowed ones.
    #[error("bogus header size {size:#x}")]
    BogusSize {
        /// The size field.
        size: u64,
    },
    /// A checksum algorithm this build does not implement.
    #[error("unsupported checksum algorithm {alg}")]
    UnsupportedChecksum {
        /// The algorithm name.
        alg: String,
    },
    /// Neither copy is valid; what is wrong with each.
    #[error("no valid copy (primary: {primary}; secondary: {secondary})")]
    NoValidCopy {
        /// What is wrong with the primary copy.
        primary: CopyProblem,
        /// What is wrong with the secondary copy.
        secondary: CopyProblem,
    },
    /// Only the secondary copy is valid and the device also carries another signature
    /// (a file system, an LVM label): the primary is not recovered from the secondary
    /// automatically, as by cryptsetup, which leaves that to `repair`.
    #[error("only the secondary copy is valid and the device also has a {signature} signature")]
    AmbiguousSignatures {
        /// The other signature (blkid's name).
        signature: &'static str,
    },
    /// The device is smaller than both copies and the keyslots area.
    #[error("device too small, need {need} bytes")]
    DeviceTooSmall {
        /// Bytes needed.
        need: u64,
    },
    /// The JSON does not fit its area on write.
    #[error("JSON too large ({len} > {max} bytes)")]
    JsonTooLarge {
        /// Serialised length.
        len: usize,
        /// Room in the area.
        max: usize,
    },
    /// The on-disk sequence id changed under an update.
    #[error("concurrent metadata update")]
    ConcurrentUpdate,
    /// A keyslot that cannot be used (`luks2_keyslot_get_pbkdf_params`, `luks2_keyslot_validate`).
    #[error("keyslot {id}: {problem}")]
    KeyslotUnusable {
        /// The keyslot.
        id: u32,
        /// What is wrong.
        problem: KeyslotProblem,
    },
    /// A digest that cannot be used (`PBKDF2_digest_verify`).
    #[error("digest {id}: {problem}")]
    DigestUnusable {
        /// The digest.
        id: u32,
        /// What is wrong.
        problem: DigestProblem,
    },
    /// A keyslot id out of range.
    #[error("keyslot id {id} out of range")]
    KeyslotIdInvalid {
        /// The id.
        id: u32,
    },
    /// A keyslot type that cannot be added.
    #[error("keyslot type {kind} not supported")]
    UnsupportedKeyslotType {
        /// The type.
        kind: String,
    },
    /// A keyslot priority other than 0, 1, 2.
    #[error("invalid keyslot priority {priority}")]
    InvalidPriority {
        /// The priority.
        priority: u32,
    },
    /// A keyslot to add is in use.
    #[error("keyslot {id} in use")]
    KeyslotActive {
        /// The keyslot.
        id: u32,
    },
    /// A keyslot to change is not in use.
    #[error("keyslot {id} not in use")]
    KeyslotInactive {
        /// The keyslot.
        id: u32,
    },
    /// A digest id out of range.
    #[error("digest id {id} out of range")]
    DigestIdInvalid {
        /// The id.
        id: u32,
    },
    /// A digest that does not exist.
    #[error("digest {id} does not exist")]
    DigestMissing {
        /// The digest.
        id: u32,
    },
    /// A digest without its keyslots array.
    #[error("digest {id} has no keyslots array")]
    DigestNoKeyslots {
        /// The digest.
        id: u32,
    },
    /// A digest to add exists already.
    #[error("digest {id} exists")]
    DigestExists {
        /// The digest.
        id: u32,
    },
    /// All token ids are taken.
    #[error("no free token id")]
    NoFreeToken,
    /// A token id out of range.
    #[error("token id {id} out of range")]
    TokenIdInvalid {
        /// The id.
        id: u32,
    },
    /// A token to remove is not in use.
    #[error("token {id} not in use")]
    TokenNotInUse {
        /// The token.
        id: u32,
    },
    /// The JSON would not fit its area after an edit.
    #[error("JSON area full ({len} > {max} bytes)")]
    JsonAreaFull {
        /// Serialised length.
        len: u64,
        /// Size of the area.
        max: u64,
    },
    /// A metadata area size that is not one of LUKS2's.
    #[error("unsupported metadata size {size}")]
    UnsupportedMetadataSize {
        /// The size (bytes).
        size: u64,
    },
    /// A keyslots area size that is not allowed.
    #[error("unsupported keyslots size {size}")]
    UnsupportedKeyslotsSize {
        /// The size (bytes).
        size: u64,
    },
    /// A data offset inside the metadata and keyslots areas.
    #[error("data offset too small")]
    DataOffsetTooSmall,
    /// A label or subsystem of 48 bytes or more.
    #[error("label too long")]
    LabelTooLong,
    /// A UUID not in the canonical form.
    #[error("malformed UUID")]
    BadUuid,
    /// The re-encryption metadata (segments, digests' assignments, the `reencrypt`
    /// keyslot) does not describe a state re-encryption can continue from or edit.
    #[error("cannot load the LUKS2 re-encryption context: {what}")]
    ReencryptMetadata {
        /// What is missing or wrong.
        what: &'static str,
    },
    /// A top-level JSON section missing.
    #[error("missing {name} section")]
    MissingSection {
        /// The section.
        name: String,
    },
    /// Metadata plus keyslots sizes overflow.
    #[error("header size overflow")]
    HeaderSizeOverflow,
    /// The JSON metadata breaks one of cryptsetup's validation rules (the rule, as text).
    #[error("metadata validation failed: {0}")]
    Validation(String),
    /// A JSON metadata object of a shape that cannot be read or added.
    #[error("{object:?}: {problem}")]
    Json {
        /// The object.
        object: JsonObject,
        /// What is wrong with it.
        problem: JsonProblem,
    },
    /// A token to add that is not a JSON object.
    #[error("token JSON is not an object")]
    TokenNotObject,
    /// The copy chosen on read has no metadata (a bug).
    #[error("internal error: chosen copy has no metadata")]
    Internal,
}

/// Why one copy of a LUKS2 header is not usable.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CopyProblem {
    /// The binary header is refused.
    #[error("{0}")]
    Header(Box<FormatError>),
    /// No secondary copy where the primary says (or no primary to say where).
    #[error("no secondary header found")]
    NoSecondary,
    /// No secondary copy at any of the nine possible offsets.
    #[error("no secondary header found at any of the 9 possible offsets")]
    NoSecondaryAnywhere,
    /// Secondary magic seen, but no copy usable; what was wrong with the last one tried.
    #[error("no usable secondary header found (last: {0})")]
    NoUsableSecondary(Box<CopyProblem>),
    /// Unknown.
    #[error("?")]
    Unknown,
    /// Read errors, checksum, JSON area and validation failures, obsolete copies: lukskit's
    /// diagnostic description (cryptsetup prints these only in its debug log).
    #[error("{0}")]
    Other(String),
}

/// What makes a LUKS2 keyslot unusable.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum KeyslotProblem {
    /// A keyslot type other than `luks2`.
    #[error("type {kind}")]
    Type {
        /// The type.
        kind: String,
    },
    /// A KDF type that is not known.
    #[error("unknown KDF {name}")]
    UnknownKdf {
        /// The KDF type.
        name: String,
    },
    /// A KDF salt of the wrong size.
    #[error("KDF salt of {len} bytes")]
    KdfSaltSize {
        /// The salt length.
        len: usize,
    },
    /// A key size of 0.
    #[error("invalid key size")]
    KeySize,
    /// A KDF cost of 0 or beyond 32 bits.
    #[error("invalid KDF cost")]
    KdfCost,
    /// The keyslot is not a JSON object.
    #[error("not an object")]
    NotObject,
}

/// What makes a LUKS2 digest unusable.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DigestProblem {
    /// A digest type other than `pbkdf2`.
    #[error("type {kind}")]
    Type {
        /// The type.
        kind: String,
    },
    /// A salt of the wrong size.
    #[error("salt of {len} bytes")]
    SaltSize {
        /// The salt length.
        len: usize,
    },
    /// A digest of the wrong size.
    #[error("digest of {len} bytes")]
    DigestSize {
        /// The digest length.
        len: usize,
    },
}

/// What kind of LUKS2 JSON object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum JsonKind {
    /// A keyslot.
    Keyslot,
    /// A segment.
    Segment,
    /// A digest.
    Digest,
    /// A token.
    Token,
    /// The `config` object.
    Config,
}

/// A LUKS2 JSON object: its kind and, for numbered objects, its id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JsonObject {
    /// The kind.
    pub kind: JsonKind,
    /// The id (none for `config`, or for a member whose key is not numbered).
    pub id: Option<u32>,
}

impl JsonObject {
    /// A numbered object.
    pub fn numbered(kind: JsonKind, id: u32) -> Self {
        JsonObject { kind, id: Some(id) }
    }
}

/// The JSON type a member should have.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum JsonType {
    /// An array.
    Array,
    /// A string.
    String,
    /// A string holding a uint64.
    Uint64String,
    /// An object.
    Object,
}

/// What is wrong with a LUKS2 JSON object's shape.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum JsonProblem {
    /// A member key of a section that is not a number.
    #[error("key {key:?} not numbered")]
    NotNumbered {
        /// The key.
        key: String,
    },
    /// A member of a section that is not an object.
    #[error("{key} is not an object")]
    NotAnObject {
        /// The key.
        key: String,
    },
    /// A member missing or of the wrong type.
    #[error("missing {member:?} ({kind:?})")]
    Missing {
        /// The member.
        member: String,
        /// Its type.
        kind: JsonType,
    },
    /// An array member holding something other than a numbered id.
    #[error("illegal value in {member:?}")]
    IllegalArrayValue {
        /// The member.
        member: String,
    },
    /// Segment flags that are not an array of strings.
    #[error("illegal flags")]
    IllegalFlags,
    /// A token with an empty type.
    #[error("empty type")]
    EmptyType,
    /// A token's keyslots array with a non-string value.
    #[error("illegal value type in keyslots")]
    IllegalKeyslotsValue,
    /// A token referencing a keyslot that does not exist.
    #[error("missing keyslot {keyslot}")]
    MissingKeyslot {
        /// The keyslot key.
        keyslot: String,
    },
    /// A token type reserved for built-in tokens.
    #[error("reserved token type {kind}")]
    ReservedType {
        /// The type.
        kind: String,
    },
    /// A `luks2-keyring` token with other members than cryptsetup's.
    #[error("malformed luks2-keyring token")]
    KeyringShape,
}
