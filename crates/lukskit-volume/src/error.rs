//! Errors of the volume layer: what went wrong, with the data needed to word it.
//!
//! Every variant says *what* happened (a wrong passphrase, an inactive keyslot, an OS error
//! while reading a device, ...) and carries the slot numbers, paths, sizes and underlying
//! errors involved. Exit codes and cryptsetup's exact wording are not decided here: the
//! command line maps each variant to them. `Display` gives a plain English description.

use lukskit_crypto::CryptoError;
use lukskit_format::FormatError;
use std::io;

/// An error of a volume operation. Never contains passphrases or key material.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum VolumeError {
    /// The passphrase opened no keyslot.
    #[error("no keyslot opens with this passphrase")]
    WrongPassphrase,
    /// A volume key was given that is not this volume's.
    #[error("the volume key does not match the volume")]
    VolumeKeyMismatch,
    /// No keyslot could be tried: none is active, or the requested one is not usable.
    #[error("no usable keyslot")]
    NoUsableKeyslot,
    /// A keyslot cannot be used or changed as asked.
    #[error(transparent)]
    Keyslot(#[from] KeyslotError),
    /// The device or file does not exist or cannot be accessed.
    #[error("device {path} does not exist or cannot be accessed")]
    NotFound {
        /// The path as given.
        path: String,
    },
    /// The path is neither a block device nor a regular file (a character device, a
    /// directory, a FIFO): nothing a LUKS header can live on.
    #[error("{path} is neither a block device nor a regular file")]
    NotCompatible {
        /// The path as given.
        path: String,
    },
    /// An operating-system error during `op` on the device or file `path`.
    #[error("{op:?} {path} failed: {source}")]
    Io {
        /// What was being done.
        op: IoOp,
        /// The device or file.
        path: String,
        /// The OS error.
        #[source]
        source: io::Error,
    },
    /// An operating-system error while reading or writing metadata or keyslot material on
    /// the volume's header device.
    #[error("{op:?} failed: {source}")]
    DeviceIo {
        /// What was being done.
        op: DeviceOp,
        /// The OS error.
        #[source]
        source: io::Error,
    },
    /// Another user holds the device exclusively (it is open, mapped or being formatted).
    #[error("device {path} is in use")]
    InUse {
        /// The device.
        path: String,
    },
    /// A write to a data volume opened read-only.
    #[error("device {path} is opened read-only")]
    ReadOnly {
        /// The device.
        path: String,
    },
    /// The dm-integrity part of a `luksFormat --integrity` failed (the message says why; it
    /// comes from the activation layer, which formats through the kernel).
    #[error("{0}")]
    IntegrityFormat(String),
    /// There is no LUKS header on the device.
    #[error("device {path} is not a valid LUKS device")]
    NotLuks {
        /// The header device.
        path: String,
    },
    /// The device has a LUKS header that cannot be used: a LUKS1 header that fails
    /// validation, or a LUKS2 header with no valid copy.
    #[error("device {path} has an invalid LUKS header: {source}")]
    InvalidHeader {
        /// The header device.
        path: String,
        /// What is wrong with it.
        #[source]
        source: FormatError,
    },
    /// The operation needs a LUKS2 header and the device has a LUKS1 header.
    #[error("device {path} is not a valid LUKS2 device")]
    NotLuks2 {
        /// The header device.
        path: String,
    },
    /// A LUKS header of a version lukskit (and cryptsetup) do not know.
    #[error("unsupported LUKS version {version}")]
    UnsupportedVersion {
        /// The version field.
        version: u16,
    },
    /// A hash algorithm that is not available.
    #[error("hash algorithm {hash} is not supported")]
    HashUnsupported {
        /// The hash name.
        hash: String,
    },
    /// The LUKS2 header has requirements that forbid the operation.
    #[error(transparent)]
    Requirements(#[from] RequirementsError),
    /// Invalid or conflicting parameters for the operation.
    #[error(transparent)]
    Param(#[from] ParamError),
    /// The data area cannot be laid out or accessed as asked.
    #[error(transparent)]
    Data(#[from] DataError),
    /// A token operation failed.
    #[error(transparent)]
    Token(#[from] TokenError),
    /// LUKS1 ↔ LUKS2 conversion is not possible.
    #[error(transparent)]
    Convert(#[from] ConvertError),
    /// Header backup or restore failed.
    #[error(transparent)]
    Backup(#[from] BackupError),
    /// The on-disk layer refused or could not read or write a header.
    #[error(transparent)]
    Format(FormatError),
    /// The crypto layer failed (unsupported cipher, limits, random generator).
    #[error(transparent)]
    Crypto(#[from] CryptoError),
    /// LUKS2 re-encryption cannot start, continue or recover.
    #[error(transparent)]
    Reencrypt(#[from] ReencryptError),
    /// A volume of one of the other formats (TCRYPT, BITLK, FVAULT2, loop-AES) could not be
    /// described or unlocked.
    #[error(transparent)]
    OtherFormat(#[from] crate::formats::error::OtherFormatError),
}

impl From<FormatError> for VolumeError {
    fn from(e: FormatError) -> Self {
        match e {
            FormatError::Crypto(c) => VolumeError::Crypto(c),
            other => VolumeError::Format(other),
        }
    }
}

impl VolumeError {
    /// An OS error during `op` on `path`.
    pub fn io(op: IoOp, path: &str, source: io::Error) -> Self {
        VolumeError::Io {
            op,
            path: path.to_string(),
            source,
        }
    }
    /// A failed metadata or keyslot I/O.
    pub fn device_io(op: DeviceOp, source: io::Error) -> Self {
        VolumeError::DeviceIo { op, source }
    }
    /// The device `path` does not exist or cannot be accessed.
    pub fn not_found(path: &str) -> Self {
        VolumeError::NotFound {
            path: path.to_string(),
        }
    }
}

/// The operation of a [`VolumeError::Io`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum IoOp {
    /// Opening the device or file.
    Open,
    /// Creating the file.
    Create,
    /// Reading (data, size).
    Read,
    /// Writing data.
    Write,
    /// Growing the file.
    Resize,
    /// Taking the `flock` lock.
    Lock,
    /// Syncing.
    Sync,
    /// Discarding (punching holes).
    Discard,
    /// Reading the device size.
    ReadSize,
    /// Creating a header backup file.
    CreateBackup,
    /// Writing a header backup file.
    WriteBackup,
}

/// The operation of a [`VolumeError::DeviceIo`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum DeviceOp {
    /// Overwriting an area (keyslot wipe).
    Wipe,
    /// Writing LUKS1 keyslot material.
    WriteKeyMaterial,
    /// Writing a LUKS1 header.
    WriteHeader,
    /// Reading a LUKS1 keyslot's material.
    ReadKeyMaterial {
        /// The keyslot.
        slot: u32,
    },
    /// Reading a LUKS2 keyslot's area.
    ReadKeyslotArea {
        /// The keyslot.
        slot: u32,
    },
    /// Writing a LUKS2 keyslot's area.
    WriteKeyslotArea,
    /// Reading the device size.
    GetSize,
    /// Syncing the device.
    Sync,
    /// Reading the header area of `path` (for a backup).
    ReadHeader {
        /// The device.
        path: String,
    },
    /// Writing a header to `path` (restore).
    WriteHeaderTo {
        /// The device.
        path: String,
    },
    /// Reading data (a re-encryption hot zone) at `offset`.
    ReadData {
        /// Byte offset on the data device.
        offset: u64,
    },
    /// Writing data (a re-encryption hot zone) at `offset`.
    WriteData {
        /// Byte offset on the data device.
        offset: u64,
    },
}

/// A keyslot cannot be used or changed as asked.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum KeyslotError {
    /// The keyslot is not active.
    #[error("keyslot {slot} is not active")]
    NotActive {
        /// The keyslot.
        slot: u32,
    },
    /// A LUKS1 keyslot number outside 0..8 or an inactive LUKS1 keyslot to unlock.
    #[error("keyslot {slot} is invalid")]
    Invalid {
        /// The keyslot.
        slot: u32,
    },
    /// A keyslot number outside `0..count`.
    #[error("keyslot {slot} is out of range (0..{count})")]
    OutOfRange {
        /// The keyslot.
        slot: u32,
        /// The number of keyslots of the format.
        count: u32,
    },
    /// The requested new keyslot is in use.
    #[error("keyslot {slot} is in use")]
    Full {
        /// The keyslot.
        slot: u32,
    },
    /// Every keyslot is in use.
    #[error("all keyslots are in use")]
    AllFull,
    /// The keyslot (requested with `unbound`) is bound to the data segment.
    #[error("keyslot {slot} is not unbound")]
    NotUnbound {
        /// The keyslot.
        slot: u32,
    },
    /// The keyslot is not bound to the data segment.
    #[error("keyslot {slot} is not assigned to the data segment")]
    NotBound {
        /// The keyslot.
        slot: u32,
    },
    /// Unbound keyslots were asked for on LUKS1.
    #[error("LUKS1 has no unbound keyslots")]
    NoUnboundInLuks1,
    /// The keyslot has no digest.
    #[error("keyslot {slot} has no digest")]
    NoDigest {
        /// The keyslot.
        slot: u32,
    },
    /// A keyslot could not be opened (its digest is unusable).
    #[error("keyslot open failed")]
    OpenFailed,
    /// The keyslot's anti-forensic hash is not available.
    #[error("keyslot AF hash {hash} is not available")]
    AfHashUnavailable {
        /// The hash name.
        hash: String,
    },
    /// The keyslot's area lies (partly) outside the device.
    #[error("keyslot {slot} area lies outside the device")]
    AreaOutsideDevice {
        /// The keyslot.
        slot: u32,
    },
    /// The keyslot's area cipher is not usable.
    #[error("keyslot {slot} area cipher {cipher} is not supported")]
    AreaCipherUnsupported {
        /// The keyslot.
        slot: u32,
        /// The cipher.
        cipher: String,
    },
    /// A keyslot cipher with IV options other than essiv's.
    #[error("keyslot cipher has IV options (only essiv takes them)")]
    IvOptions {
        /// The LUKS2 keyslot, or `None` for a LUKS1 header's cipher.
        slot: Option<u32>,
    },
    /// No room in the keyslots area for a new keyslot.
    #[error("no space for a new keyslot")]
    NoSpace,
    /// No free digest for an unbound key.
    #[error("no free digest slot for an unbound key")]
    NoFreeDigest,
    /// The volume has no digest of its data segment.
    #[error("the volume has no data segment digest")]
    NoSegmentDigest,
    /// A digest's iteration count is unusable.
    #[error("digest {digest} has invalid iterations")]
    DigestIterations {
        /// The digest.
        digest: u32,
    },
    /// No keyslot is bound to the data segment, so the volume key size is unknown.
    #[error("no keyslot is bound to the data segment")]
    NoBoundKeyslot,
}

/// LUKS2 requirements that forbid an operation.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RequirementsError {
    /// Requirements lukskit does not know.
    #[error("unknown requirements {0:?}")]
    Unknown(Vec<String>),
    /// Known requirements that still forbid the operation.
    #[error("operation not supported with requirements {0:?}")]
    Unsupported(Vec<String>),
    /// Requirements that forbid access to the data.
    #[error("data access not supported with requirements {0:?}")]
    DataAccess(Vec<String>),
}

/// Invalid or conflicting parameters.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ParamError {
    /// `luksFormat` of a type that is not LUKS (lukskit formats LUKS1 and LUKS2 only, as
    /// cryptsetup's `luksFormat`).
    #[error("cannot format a {volume_type} device")]
    NotLuksType {
        /// The type asked for.
        volume_type: lukskit_format::VolumeType,
    },
    /// A keyslot priority other than ignore/normal/prefer.
    #[error("priority must be ignore, normal or prefer")]
    Priority,
    /// `token_replace` without a token id.
    #[error("token replace requires a token id")]
    TokenReplaceNeedsId,
    /// A keyslot key size without a keyslot cipher.
    #[error("keyslot key size requires a keyslot cipher")]
    KeyslotKeySizeNeedsCipher,
    /// A key size in bits that is not a multiple of 8.
    #[error("key size is not a multiple of 8 bits")]
    KeySizeNotBytes,
    /// A key size of zero.
    #[error("key size is zero")]
    KeySizeZero,
    /// A cipher that cannot encrypt keyslots.
    #[error("cipher {cipher} cannot be used for keyslot encryption")]
    KeyslotCipher {
        /// The cipher.
        cipher: String,
    },
    /// A PBKDF other than PBKDF2 for LUKS1.
    #[error("LUKS1 takes only PBKDF2")]
    PbkdfForLuks1,
    /// A forced iteration count below the minimum.
    #[error("iteration count for {pbkdf} below the minimum {min}")]
    IterationsTooLow {
        /// The PBKDF.
        pbkdf: String,
        /// The minimum.
        min: u32,
    },
    /// A forced memory cost below the minimum.
    #[error("memory cost for {pbkdf} below the minimum {min_kib} KiB")]
    MemoryTooLow {
        /// The PBKDF.
        pbkdf: String,
        /// The minimum in KiB.
        min_kib: u32,
    },
    /// An unknown PBKDF name.
    #[error("unknown PBKDF {name}")]
    UnknownPbkdf {
        /// The name.
        name: String,
    },
    /// PBKDF parameters outside the limits for creating keyslots.
    #[error("invalid PBKDF parameters: {0}")]
    PbkdfLimits(CryptoError),
    /// A UUID that does not parse.
    #[error("invalid UUID")]
    Uuid,
    /// A volume key of the wrong size.
    #[error("volume key has {got} bytes, {expected} expected")]
    VolumeKeySize {
        /// Bytes given.
        got: usize,
        /// Bytes expected.
        expected: usize,
    },
    /// A label or subsystem for LUKS1.
    #[error("label and subsystem need LUKS2")]
    LabelNeedsLuks2,
    /// An encryption sector size that is not a power of two in 512..=4096.
    #[error("unsupported encryption sector size")]
    SectorSize,
    /// A LUKS1 data offset that does not fit the header.
    #[error("data offset too large for LUKS1")]
    OffsetTooLargeForLuks1,
    /// A LUKS1 data offset that leaves no room for the keyslots.
    #[error("data offset too small for the LUKS1 keyslots")]
    OffsetTooSmallForLuks1,
    /// A LUKS1 detached header with a data offset that is neither 0 nor past the header's
    /// size (cryptsetup refuses it: the data could not be told from the header).
    #[error("data offset of a detached LUKS1 header must be 0 or past the header size")]
    DetachedOffsetInsideHeader,
    /// An unsupported LUKS2 metadata size.
    #[error("unsupported LUKS2 metadata size")]
    MetadataSize,
    /// A LUKS2 data offset that is not a multiple of 4096 bytes.
    #[error("data offset is not a multiple of 4096 bytes")]
    OffsetNot4096,
    /// An unsupported LUKS2 keyslots area size.
    #[error("unsupported LUKS2 keyslots size")]
    KeyslotsSize,
    /// A data offset too small for the metadata.
    #[error("requested data offset is too small")]
    OffsetTooSmall,
    /// A data offset not aligned to the encryption sector size.
    #[error("data offset not aligned to the encryption sector size")]
    OffsetNotAligned,
    /// `iv_large_sectors` with 512-byte sectors.
    #[error("large IV sectors need sectors larger than 512 bytes")]
    LargeIvSectors,
    /// A cipher specification that does not parse.
    #[error("no known cipher specification pattern")]
    CipherPattern,
    /// A plain-mode offset or size in sectors that overflows.
    #[error("invalid {what:?} specification")]
    Overflow {
        /// Which value.
        what: PlainValue,
    },
    /// The plain-mode passphrase hash cannot give the key.
    #[error("key processing error with hash {hash}")]
    KeyProcessing {
        /// The hash spec.
        hash: String,
    },
}

/// Which plain-mode value overflowed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PlainValue {
    /// `--offset`.
    Offset,
    /// `--size`.
    Size,
}

/// The data area cannot be laid out or accessed as asked.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DataError {
    /// A LUKS2 segment type the data path does not handle.
    #[error("unsupported LUKS2 segment type {kind}")]
    SegmentType {
        /// The type.
        kind: String,
    },
    /// No data segment.
    #[error("LUKS2 header has no data segment")]
    NoSegment,
    /// Several data segments.
    #[error("several data segments")]
    SeveralSegments,
    /// dm-integrity protection.
    #[error("data integrity protection is not supported")]
    Integrity,
    /// An IV offset that is not a multiple of the sector size (in 512-byte sectors).
    #[error("IV offset {iv_offset} not a multiple of the sector size {sector_size}")]
    IvOffsetAlignment {
        /// The IV offset (512-byte sectors).
        iv_offset: u64,
        /// The sector size.
        sector_size: u32,
    },
    /// A data offset that is not a multiple of 512 bytes.
    #[error("data offset is not a multiple of 512 bytes")]
    OffsetAlignment,
    /// A device or data size not aligned to the sector size.
    #[error("device size not aligned to the sector size")]
    SizeAlignment,
    /// Nothing after the data offset.
    #[error("no data after the data offset")]
    NoData,
    /// The device is smaller than the requested data area.
    #[error("the data area needs {needed} bytes after offset {offset}, {available} available")]
    TooSmall {
        /// Bytes needed.
        needed: u64,
        /// The data offset.
        offset: u64,
        /// Bytes available.
        available: u64,
    },
    /// A request not aligned to the sector size.
    #[error("request at {offset} of {len} bytes not aligned to {sector_size} bytes")]
    Unaligned {
        /// Offset.
        offset: u64,
        /// Length.
        len: usize,
        /// Sector size.
        sector_size: u32,
    },
    /// A request beyond the end of the volume.
    #[error("{len} bytes at {offset} beyond the end ({size})")]
    BeyondEnd {
        /// Offset.
        offset: u64,
        /// Length.
        len: usize,
        /// Volume size.
        size: u64,
    },
    /// A discard beyond the end of the volume.
    #[error("discard beyond the end of the volume")]
    DiscardBeyondEnd,
    /// A discard range that does not fit the OS interface.
    #[error("discard range too large")]
    DiscardTooLarge,
    /// A request the I/O ring cannot take.
    #[error("request at {offset} of {len} bytes cannot be queued")]
    NotQueued {
        /// Offset.
        offset: u64,
        /// Length.
        len: usize,
    },
    /// An encryption worker thread panicked.
    #[error("encryption thread panicked")]
    ThreadPanicked,
    /// A segment table that cannot describe a data area.
    #[error(transparent)]
    Segment(#[from] SegmentError),
}

/// A segment table (crate::segment) that is not a valid description of a data area.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SegmentError {
    /// No segment at all.
    #[error("a segment table needs at least one segment")]
    Empty,
    /// Segment `index` starts after the end of the previous one.
    #[error("segment {index} starts at {start} after a gap (the previous one ends at {expected})")]
    Gap {
        /// The segment.
        index: usize,
        /// Where it starts (plaintext byte).
        start: u64,
        /// Where the previous one ends.
        expected: u64,
    },
    /// Segment `index` starts before the end of the previous one.
    #[error("segment {index} starts at {start}, overlapping the previous one (which ends at {expected})")]
    Overlap {
        /// The segment.
        index: usize,
        /// Where it starts (plaintext byte).
        start: u64,
        /// Where the previous one ends.
        expected: u64,
    },
    /// An empty segment in a table of several.
    #[error("segment {index} is empty")]
    EmptySegment {
        /// The segment.
        index: usize,
    },
    /// A segment whose start or length is not a multiple of the table's block size.
    #[error("segment {index} ({len} bytes at {start}) is not aligned to the {block}-byte block size of the table")]
    Unaligned {
        /// The segment.
        index: usize,
        /// Its length.
        len: u64,
        /// Its start.
        start: u64,
        /// The table's block size.
        block: u32,
    },
    /// A crypt segment whose IV offset is not a multiple of its sector size.
    #[error("segment {index}: IV offset {iv_offset} is not a multiple of the encryption sector size ({sector_size} bytes)")]
    IvOffsetAlignment {
        /// The segment.
        index: usize,
        /// The IV offset (512-byte sectors).
        iv_offset: u64,
        /// The sector size.
        sector_size: u32,
    },
    /// Offsets or lengths that overflow 64 bits.
    #[error("the segment table is too large")]
    TooLarge,
    /// A segment whose device extent ends past 2^64 bytes.
    #[error("segment {index} ends beyond any device")]
    BeyondAnyDevice {
        /// The segment.
        index: usize,
    },
    /// A LUKS2 segment of dynamic size that is not the last one.
    #[error("LUKS2 segment {id} has a dynamic size but is not the last one")]
    DynamicNotLast {
        /// The segment's id in the header.
        id: u32,
    },
    /// A LUKS2 crypt segment no digest is assigned to.
    #[error("no digest for LUKS2 segment {id}")]
    NoDigest {
        /// The segment's id in the header.
        id: u32,
    },
    /// A segment whose device bytes lie beyond the end of the device.
    #[error("a segment needs {len} bytes at offset {offset}, the device has {device_size}")]
    BeyondDevice {
        /// The segment's device offset.
        offset: u64,
        /// Its length.
        len: u64,
        /// The device size.
        device_size: u64,
    },
}

/// A token operation failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TokenError {
    /// The token id is in use.
    #[error("token {id} in use")]
    InUse {
        /// The token.
        id: u32,
    },
    /// The token id is not in use.
    #[error("token {id} is not in use")]
    NotInUse {
        /// The token.
        id: u32,
    },
    /// The token cannot be exported.
    #[error("cannot export token {id}")]
    Export {
        /// The token.
        id: u32,
    },
}

/// A LUKS1 ↔ LUKS2 conversion is not possible.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConvertError {
    /// The device has the target type already.
    #[error("device is already {target}")]
    AlreadyType {
        /// "LUKS1" or "LUKS2".
        target: &'static str,
    },
    /// The device is in use.
    #[error("device {path} is in use")]
    InUse {
        /// The device.
        path: String,
    },
    /// Keyslot areas could not be moved.
    #[error("unable to move keyslot area")]
    MoveArea,
    /// The keyslot areas do not fit.
    #[error("not enough space to move keyslot areas")]
    NoSpace,
    /// The LUKS2 keyslots area is too small.
    #[error("LUKS2 keyslots area too small")]
    AreaTooSmall,
    /// The LUKS1 header size is invalid.
    #[error("invalid LUKS1 header size")]
    Luks1HeaderSize,
    /// Keyslot material at an offset conversion cannot handle.
    #[error("unsupported keyslots material offset {offset}")]
    MaterialOffset {
        /// The offset (sectors).
        offset: u64,
    },
    /// A LUKS1 cipher LUKS2 cannot hold.
    #[error("cipher {cipher}-{mode} unusable for LUKS2")]
    CipherForLuks2 {
        /// Cipher name.
        cipher: String,
        /// Cipher mode.
        mode: String,
    },
    /// LUKSMETA metadata in the header.
    #[error("LUKSMETA metadata present")]
    LuksMeta,
    /// The converted metadata does not validate.
    #[error("invalid metadata")]
    InvalidMetadata,
    /// Unknown or unmet LUKS2 requirements.
    #[error("unmet LUKS2 requirements")]
    UnmetRequirements,
    /// Marked for legacy (offline) reencryption.
    #[error("marked for legacy reencryption")]
    LegacyReencryption,
    /// Marked for LUKS2 reencryption.
    #[error("marked for LUKS2 reencryption")]
    Reencryption,
    /// The LUKS2 header cannot be expressed as LUKS1.
    #[error("not LUKS1 compatible: {0}")]
    NotLuks1(Luks1Incompatibility),
}

/// Why a LUKS2 header cannot become LUKS1.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Luks1Incompatibility {
    /// Digests are not a single PBKDF2 digest.
    #[error("digests")]
    Digests,
    /// More than one segment.
    #[error("segments")]
    Segments,
    /// A segment sector size other than 512.
    #[error("sector size")]
    SectorSize,
    /// A cipher LUKS1 cannot name.
    #[error("cipher {cipher}")]
    CipherSpec {
        /// The segment encryption.
        cipher: String,
    },
    /// A wrapped-key cipher.
    #[error("wrapped key cipher {cipher}")]
    WrappedKey {
        /// The cipher name.
        cipher: String,
    },
    /// Tokens.
    #[error("{count} tokens")]
    Tokens {
        /// How many.
        count: usize,
    },
    /// No active keyslots.
    #[error("no active keyslots")]
    NoActiveKeyslots,
    /// An unbound keyslot.
    #[error("keyslot {slot} unbound")]
    Unbound {
        /// The keyslot.
        slot: u32,
    },
    /// An active keyslot above LUKS1's 8.
    #[error("keyslot {slot} over maximum")]
    OverMaximum {
        /// The keyslot.
        slot: u32,
    },
    /// A keyslot LUKS1 cannot hold.
    #[error("keyslot {slot}")]
    Keyslot {
        /// The keyslot.
        slot: u32,
    },
    /// No space for a keyslot.
    #[error("no space for keyslot {slot}")]
    NoSpace {
        /// The keyslot.
        slot: u32,
    },
    /// A keyslot area offset out of range.
    #[error("keyslot {slot} area offset out of range")]
    AreaOffset {
        /// The keyslot.
        slot: u32,
    },
    /// A data offset LUKS1 cannot hold.
    #[error("data offset too large")]
    DataOffset,
    /// A keyslot outside the movable area.
    #[error("keyslot {slot} outside the movable area")]
    OutsideArea {
        /// The keyslot.
        slot: u32,
    },
    /// The resulting LUKS1 header does not validate.
    #[error("LUKS1 header: {0}")]
    Header(FormatError),
}

/// Header backup or restore failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum BackupError {
    /// The backup file exists already.
    #[error("backup file {path} exists already")]
    Exists {
        /// The file.
        path: String,
    },
    /// The backup file has no LUKS header at all.
    #[error("backup file {path} has no LUKS header")]
    NoHeader {
        /// The file.
        path: String,
    },
    /// The backup file's header is not valid.
    #[error("backup file {path} has no valid LUKS header")]
    Invalid {
        /// The file.
        path: String,
    },
    /// The backup file holds no LUKS signature at all.
    #[error("backup file {path} holds no LUKS header")]
    Incompatible {
        /// The file.
        path: String,
    },
    /// The backup file's LUKS1 header (its first sector) is not valid.
    #[error("backup file {path} has no valid LUKS1 header")]
    InvalidLuks1 {
        /// The file.
        path: String,
    },
    /// The backup file is shorter than the header and keyslots area it describes.
    #[error("backup file {path} is shorter than its header")]
    Truncated {
        /// The file.
        path: String,
    },
    /// The data offsets of the device and the backup differ.
    #[error("data offsets differ")]
    DataOffset,
    /// The keyslots area sizes of the device and the backup differ.
    #[error("keyslots area sizes differ")]
    KeyslotsSize,
    /// LUKS1: the data offsets or the volume key sizes of the device and the backup differ
    /// (cryptsetup checks both at once for LUKS1).
    #[error("data offsets or key sizes differ")]
    Luks1Layout,
}

/// Result type of the volume layer.
pub type Result<T> = std::result::Result<T, VolumeError>;

impl From<SegmentError> for VolumeError {
    fn from(e: SegmentError) -> Self {
        VolumeError::Data(DataError::Segment(e))
    }
}

/// Why a LUKS2 re-encryption ([`crate::reencrypt`]) cannot start, continue or recover.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ReencryptError {
    /// The header carries no re-encryption (no `online-reencrypt` requirement).
    #[error("the device is not marked for LUKS2 re-encryption")]
    NotInReencryption,
    /// `--init-only` on a header already in re-encryption.
    #[error("LUKS2 re-encryption is already initialized in the metadata")]
    AlreadyInitialized,
    /// The re-encryption metadata digest does not verify (tampered or stale metadata, or
    /// the wrong keys).
    #[error("the re-encryption metadata is invalid")]
    MetadataInvalid,
    /// Another process holds the re-encryption lock of this volume.
    #[error("a re-encryption of this volume is already running")]
    AlreadyRunning,
    /// The re-encryption keyslot, backup segments or segments do not describe a state this
    /// implementation can continue from.
    #[error("cannot load the LUKS2 re-encryption context: {0}")]
    Context(String),
    /// A mode, direction or resilience lukskit does not (yet) run.
    #[error("unsupported re-encryption setting: {0}")]
    Unsupported(String),
    /// The data area size is not a multiple of the new encryption sector size.
    #[error("the data device is not aligned to the requested encryption sector size ({sector_size} bytes)")]
    DeviceAlignment {
        /// The sector size.
        sector_size: u32,
    },
    /// A data shift is not a multiple of the encryption sector size (the larger of the
    /// old and the new one).
    #[error("the data shift is not aligned to the encryption sector size ({sector_size} bytes)")]
    ShiftAlignment {
        /// The sector size.
        sector_size: u32,
    },
    /// `--hotzone-size` is not a multiple of the zone alignment.
    #[error("the hotzone size must be a multiple of the zone alignment ({alignment} bytes)")]
    HotzoneAlignment {
        /// The alignment in bytes.
        alignment: u64,
    },
    /// A volume key needed by the re-encryption was not unlocked.
    #[error("the passphrase does not unlock both the old and the new volume key")]
    KeysMissing,
    /// The checksums of the current hot zone could not be read back.
    #[error("failed to read the checksums of the current hot zone")]
    ChecksumRead,
    /// The live mapping of an online re-encryption could not follow (the backend's
    /// message: a device-mapper ioctl, a daemon's reply).
    #[error("{0}")]
    Online(String),
    /// A fixed size to re-encrypt (`--device-size`) that is not the live mapping's size.
    #[error("the active device size and the requested re-encryption size differ")]
    ActiveSizeMismatch,
    /// A fixed size to re-encrypt beyond the data device, short of the fixed segments, or
    /// not whole encryption sectors.
    #[error("illegal device size requested in the re-encryption parameters")]
    IllegalDeviceSize,
    /// A fixed size to re-encrypt that is not a multiple of the zone alignment.
    #[error("the device size must be a multiple of the zone alignment ({alignment} bytes)")]
    DeviceSizeAlignment {
        /// The alignment in bytes.
        alignment: u64,
    },
}
