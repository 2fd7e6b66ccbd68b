//! The one place that decides what the user sees when a command fails: cryptsetup's exit
//! code and cryptsetup's exact wording, for the command line's own errors and for every
//! typed error of the libraries (volume, activation).

use lukskit_activate::ActivateError;
use lukskit_crypto::CryptoError;
use lukskit_format::{
    CopyProblem, DigestProblem, FormatError, JsonKind, JsonObject, JsonProblem, JsonType,
    KeyslotProblem, Luks1Error, Luks1Field, Luks1KeyslotProblem, Luks1RepairNote, Luks2Error,
    NotLuks,
};
use lukskit_volume::edit::RepairNote;
use lukskit_volume::format::FormatWarning;
use lukskit_volume::{
    BackupError, ConvertError, DataError, DeviceOp, IoOp, KeyslotError, Luks1Incompatibility,
    ParamError, PlainValue, RequirementsError, SegmentError, TokenError, VolumeError,
};

/// cryptsetup's exit-code classes (its `translate_errno`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExitClass {
    /// Wrong or missing parameters, unusable header, inactive keyslot (exit 1).
    Invalid,
    /// No permission or bad passphrase (exit 2).
    Permission,
    /// Out of memory (exit 3).
    NoMemory,
    /// Wrong device or file specified (exit 4).
    Device,
    /// Device already exists or is busy (exit 5).
    Busy,
}

impl ExitClass {
    /// The process exit code.
    pub fn exit_code(self) -> i32 {
        match self {
            ExitClass::Invalid => 1,
            ExitClass::Permission => 2,
            ExitClass::NoMemory => 3,
            ExitClass::Device => 4,
            ExitClass::Busy => 5,
        }
    }

    /// The words of cryptsetup's "Command failed with code -N (...)." line.
    pub fn text(self) -> &'static str {
        match self {
            ExitClass::Invalid => "wrong or missing parameters",
            ExitClass::Permission => "no permission or bad passphrase",
            ExitClass::NoMemory => "out of memory",
            ExitClass::Device => "wrong device or file specified",
            ExitClass::Busy => "device already exists or device is busy",
        }
    }

    /// The class of an operating-system error, as cryptsetup's errno translation gives it
    /// for a failed device or file operation.
    pub fn of_io(e: &std::io::Error) -> Self {
        match e.raw_os_error() {
            Some(libc::ENOMEM) => ExitClass::NoMemory,
            Some(libc::EBUSY) | Some(libc::EEXIST) => ExitClass::Busy,
            Some(libc::EACCES) | Some(libc::EPERM) => ExitClass::Permission,
            _ => ExitClass::Device,
        }
    }
}

/// A failed command as the user sees it: an exit class and cryptsetup's message (one or
/// more lines, no trailing newline; empty when everything was printed already).
#[derive(Debug)]
pub struct CliError {
    /// The exit class.
    pub class: ExitClass,
    /// The message.
    pub message: String,
    /// Standard input ended before anything was read ("Nothing to read on input.").
    nothing_to_read: bool,
}

/// Result type of the command line.
pub type Result<T> = std::result::Result<T, CliError>;

impl CliError {
    /// A new error.
    pub fn new(class: ExitClass, message: impl Into<String>) -> Self {
        CliError {
            class,
            message: message.into(),
            nothing_to_read: false,
        }
    }
    /// Wrong or missing parameters (exit 1).
    pub fn invalid(message: impl Into<String>) -> Self {
        Self::new(ExitClass::Invalid, message)
    }
    /// No permission / bad passphrase (exit 2).
    pub fn permission(message: impl Into<String>) -> Self {
        Self::new(ExitClass::Permission, message)
    }
    /// Wrong device (exit 4).
    pub fn device(message: impl Into<String>) -> Self {
        Self::new(ExitClass::Device, message)
    }
    /// Busy or existing (exit 5).
    pub fn busy(message: impl Into<String>) -> Self {
        Self::new(ExitClass::Busy, message)
    }
    /// cryptsetup's "No key available with this passphrase." (exit 2).
    pub fn wrong_passphrase() -> Self {
        Self::permission(WRONG_PASSPHRASE)
    }
    /// An I/O error on `path` while doing `what` ("Opening", "Reading", ...).
    pub fn io(what: &str, path: &str, e: &std::io::Error) -> Self {
        Self::new(ExitClass::of_io(e), format!("{what} {path} failed: {e}."))
    }
    /// Standard input gave nothing (exit 1, "Nothing to read on input.").
    pub fn nothing_to_read() -> Self {
        CliError {
            nothing_to_read: true,
            ..Self::invalid("Nothing to read on input.")
        }
    }
    /// Whether standard input ended before anything was read.
    pub fn is_nothing_to_read(&self) -> bool {
        self.nothing_to_read
    }
    /// The same error, its message already printed.
    pub fn silenced(self) -> Self {
        CliError {
            message: String::new(),
            ..self
        }
    }
}

const WRONG_PASSPHRASE: &str = "No key available with this passphrase.";

impl From<VolumeError> for CliError {
    fn from(e: VolumeError) -> Self {
        volume(&e)
    }
}

/// Whether a volume error is a passphrase that opened no keyslot (the one error a
/// passphrase prompt asks again for).
pub fn is_wrong_passphrase(e: &VolumeError) -> bool {
    matches!(e, VolumeError::WrongPassphrase)
}

/// cryptsetup's exit class and words for an error of the volume layer: the one place that
/// words them.
pub fn volume(e: &VolumeError) -> CliError {
    use ExitClass::{Device, Invalid, Permission};
    let (class, message) = match e {
        VolumeError::WrongPassphrase => (Permission, WRONG_PASSPHRASE.to_string()),
        VolumeError::VolumeKeyMismatch => {
            (Permission, "Volume key does not match the volume.".into())
        }
        VolumeError::NoUsableKeyslot => (Invalid, "No usable keyslot is available.".into()),
        VolumeError::Keyslot(k) => (Invalid, keyslot(k)),
        VolumeError::NotFound { path } => (
            Device,
            format!("Device {path} does not exist or access denied."),
        ),
        VolumeError::NotCompatible { path } => {
            (Device, format!("Device {path} is not compatible."))
        }
        VolumeError::Io { op, path, source } => {
            return CliError::io(io_verb(*op), path, source);
        }
        VolumeError::DeviceIo { op, source } => (Device, device_io(op, source)),
        VolumeError::InUse { path } => (
            Invalid,
            format!("Cannot exclusively open {path}, device in use."),
        ),
        VolumeError::ReadOnly { path } => (Invalid, format!("Device {path} is opened read-only.")),
        VolumeError::NotLuks { path } => (
            Invalid,
            format!("Device {path} is not a valid LUKS device."),
        ),
        VolumeError::InvalidHeader { path, source } => {
            let verdict = format!("Device {path} is not a valid LUKS device.");
            let message = match header_problem(path, source) {
                Some(problem) => format!("{problem}\n{verdict}"),
                None => verdict,
            };
            (Invalid, message)
        }
        VolumeError::NotLuks2 { path } => (
            Invalid,
            format!("Device {path} is not a valid LUKS2 device."),
        ),
        VolumeError::UnsupportedVersion { version } => {
            (Invalid, format!("Unsupported LUKS version {version}."))
        }
        VolumeError::HashUnsupported { hash } => {
            (Invalid, format!("Hash algorithm {hash} not supported."))
        }
        VolumeError::Requirements(r) => (Invalid, requirements(r)),
        VolumeError::Param(p) => (Invalid, param(p)),
        VolumeError::Data(d) => return data(d),
        VolumeError::Token(t) => (
            Invalid,
            match t {
                TokenError::InUse { id } => format!("Token {id} in use."),
                TokenError::NotInUse { id } => format!("Token {id} is not in use."),
                TokenError::Export { id } => format!("Failed to get token {id} for export."),
                other => sentence(&other.to_string()),
            },
        ),
        VolumeError::Convert(c) => return convert(c),
        VolumeError::Backup(b) => return backup(b),
        VolumeError::Format(f) => return format_error(f),
        VolumeError::Crypto(c) => return crypto(c),
        VolumeError::Reencrypt(lukskit_volume::ReencryptError::AlreadyRunning) => (
            ExitClass::Busy,
            "Reencryption process is already running.".into(),
        ),
        VolumeError::Reencrypt(r) => (Invalid, reencrypt(r)),
        VolumeError::OtherFormat(f) => return other_format(f),
        other => (Invalid, sentence(&other.to_string())),
    };
    CliError::new(class, message)
}

/// cryptsetup's exit class and words for the formats other than LUKS.
fn other_format(e: &lukskit_volume::formats::OtherFormatError) -> CliError {
    use lukskit_format::VolumeType;
    use lukskit_volume::formats::OtherFormatError as E;
    match e {
        E::NotThisFormat { volume_type, path } => CliError::invalid(format!(
            "Device {path} is not a valid {volume_type} device."
        )),
        // TCRYPT's header is found only with the right passphrase (cryptsetup's words).
        E::NoKey => CliError::new(ExitClass::Permission, WRONG_PASSPHRASE),
        E::NotReadable {
            volume_type,
            path,
            problem,
        } => CliError::invalid(format!(
            "{problem}\nDevice {path} is not a valid {volume_type} device."
        )),
        E::SecretMissing { what } => CliError::invalid(format!("{what} is required.")),
        E::Invalid { volume_type, why } => {
            crate::debug::log(format_args!("Invalid {volume_type} metadata: {why}"));
            CliError::invalid(match volume_type {
                VolumeType::Tcrypt => "No device header detected with this passphrase.".into(),
                t => format!("Device is not a valid {t} device."),
            })
        }
        E::Unsupported(words) => CliError::invalid(words.clone()),
        E::DeviceTooSmall { .. } => CliError::invalid(e.to_string()),
        // The library's words (if any), then cryptsetup's verdict line.
        E::NotLoadable { .. } => CliError::invalid(e.to_string()),
        // cryptsetup's lines as it prints them, with its exit code.
        E::Refused {
            messages,
            exit_code,
        } => {
            let mut lines = messages.clone();
            let class = match exit_code {
                2 => {
                    lines.push(WRONG_PASSPHRASE.into());
                    ExitClass::Permission
                }
                3 => ExitClass::NoMemory,
                _ => ExitClass::Invalid,
            };
            CliError::new(class, lines.join("\n"))
        }
        other => CliError::invalid(sentence(&other.to_string())),
    }
}

/// What cryptsetup says is wrong with a header that does not load, before its verdict
/// "Device PATH is not a valid LUKS device." (which some actions do not add): a LUKS1
/// header's problem; nothing for a LUKS2 header without a valid copy (cryptsetup says why
/// only in its debug output, and so does lukskit).
fn header_problem(path: &str, e: &FormatError) -> Option<String> {
    crate::debug::log(format_args!(
        "Header of {path} is unusable: {}",
        format_text_detailed(e)
    ));
    match e {
        FormatError::Luks1(Luks1Error::DeviceTooSmall { need }) => Some(format!(
            "Device {path} is too small. (LUKS1 requires at least {need} bytes.)"
        )),
        FormatError::Luks2(Luks2Error::NoValidCopy { .. }) => None,
        FormatError::Luks2(Luks2Error::AmbiguousSignatures { .. }) => Some(
            "Device contains ambiguous signatures, cannot auto-recover LUKS2.\n\
             Please run \"cryptsetup repair\" for recovery."
                .into(),
        ),
        other => Some(format_text(other)),
    }
}

/// The error of an action that, like cryptsetup's `luksUUID` and `isLuks -v`, reports a
/// header that does not load with its problem alone (nothing for a LUKS2 header without a
/// valid copy), without the verdict line.
pub fn problem_only(e: VolumeError) -> CliError {
    match e {
        VolumeError::InvalidHeader { path, source } => {
            CliError::invalid(header_problem(&path, &source).unwrap_or_default())
        }
        other => volume(&other),
    }
}

/// The error of an action that, like cryptsetup's `luksHeaderBackup`, reports a header that
/// does not load with its problem if it has one, else with the verdict line.
pub fn problem_or_verdict(e: VolumeError) -> CliError {
    match e {
        VolumeError::InvalidHeader { path, source } => CliError::invalid(
            header_problem(&path, &source)
                .unwrap_or_else(|| format!("Device {path} is not a valid LUKS device.")),
        ),
        other => volume(&other),
    }
}

/// cryptsetup's wording of a re-encryption error.
fn reencrypt(r: &lukskit_volume::ReencryptError) -> String {
    use lukskit_volume::ReencryptError as R;
    match r {
        R::NotInReencryption => "Device not marked for LUKS2 reencryption.".into(),
        R::AlreadyInitialized => "LUKS2 reencryption already initialized in metadata.".into(),
        R::MetadataInvalid => "Reencryption metadata is invalid.".into(),
        R::AlreadyRunning => "Reencryption process is already running.".into(),
        R::Context(_) => "Failed to load LUKS2 reencryption context.".into(),
        R::DeviceAlignment { sector_size } => {
            format!("Data device is not aligned to encryption sector size ({sector_size} bytes).")
        }
        R::ShiftAlignment { sector_size } => format!(
            "Data shift value is not aligned to encryption sector size ({sector_size} bytes)."
        ),
        R::HotzoneAlignment { alignment } => format!(
            "Hotzone size must be multiple of calculated zone alignment ({alignment} bytes)."
        ),
        R::KeysMissing => WRONG_PASSPHRASE.into(),
        R::ChecksumRead => "Failed to read checksums for current hotzone.".into(),
        R::ActiveSizeMismatch => {
            "Active device size and requested reencryption size don't match.".into()
        }
        R::IllegalDeviceSize => "Illegal device size requested in reencryption parameters.".into(),
        R::DeviceSizeAlignment { alignment } => format!(
            "Device size must be multiple of calculated zone alignment ({alignment} bytes).\n\
             Failed to load LUKS2 reencryption context."
        ),
        other => sentence(&other.to_string()),
    }
}

/// The verb of cryptsetup-style "VERB PATH failed: ERROR." lines.
fn io_verb(op: IoOp) -> &'static str {
    match op {
        IoOp::Open => "Opening",
        IoOp::Create => "Creating",
        IoOp::Read => "Reading",
        IoOp::Write => "Writing",
        IoOp::Resize => "Resizing",
        IoOp::Lock => "Locking",
        IoOp::Sync => "Syncing",
        IoOp::Discard => "Discarding on",
        IoOp::ReadSize => "Reading size of",
        IoOp::CreateBackup => "Creating header backup file",
        IoOp::WriteBackup => "Writing header backup file",
        _ => "Accessing",
    }
}

fn device_io(op: &DeviceOp, e: &std::io::Error) -> String {
    match op {
        DeviceOp::Wipe => format!("Cannot wipe device: {e}."),
        DeviceOp::WriteKeyMaterial => format!("Cannot write to device: {e}."),
        DeviceOp::WriteHeader => format!("Cannot write LUKS header: {e}."),
        DeviceOp::ReadKeyMaterial { slot } => {
            format!("Cannot read keyslot {slot} key material: {e}.")
        }
        DeviceOp::ReadKeyslotArea { slot } => format!("Cannot read keyslot {slot} area: {e}."),
        DeviceOp::WriteKeyslotArea => format!("Cannot write keyslot area: {e}."),
        DeviceOp::GetSize => format!("Cannot get device size: {e}."),
        DeviceOp::Sync => format!("Cannot sync device: {e}."),
        DeviceOp::ReadHeader { path } => format!("Cannot read header from {path}: {e}."),
        DeviceOp::WriteHeaderTo { path } => format!("Cannot write header to {path}: {e}."),
        DeviceOp::ReadData { offset } => {
            format!("Failed to read hotzone area starting at {offset}: {e}.")
        }
        DeviceOp::WriteData { offset } => {
            format!("Failed to write hotzone area starting at {offset}: {e}.")
        }
        _ => format!("Device I/O failed: {e}."),
    }
}

fn keyslot(k: &KeyslotError) -> String {
    match k {
        KeyslotError::NotActive { slot } => format!("Keyslot {slot} is not active."),
        KeyslotError::Invalid { slot } => format!("Key slot {slot} is invalid."),
        KeyslotError::OutOfRange { slot, count } => format!(
            "Key slot {slot} is invalid, please select between 0 and {}.",
            count.saturating_sub(1)
        ),
        KeyslotError::Full { slot } => {
            format!("Key slot {slot} is full, please select another one.")
        }
        KeyslotError::AllFull => "All key slots full.".into(),
        KeyslotError::NotUnbound { slot } => format!("Keyslot {slot} is not unbound."),
        KeyslotError::NotBound { slot } => {
            format!("Keyslot {slot} is not assigned to the data segment (use --unbound).")
        }
        KeyslotError::NoUnboundInLuks1 => "LUKS1 has no unbound keyslots.".into(),
        KeyslotError::NoDigest { slot } => format!("Keyslot {slot} has no digest."),
        KeyslotError::OpenFailed => "Keyslot open failed.".into(),
        KeyslotError::AfHashUnavailable { hash } => {
            format!("Hash algorithm {hash} is not available.\nKeyslot open failed.")
        }
        KeyslotError::AreaOutsideDevice { slot } => {
            format!("Keyslot {slot} area lies outside the device.")
        }
        KeyslotError::AreaCipherUnsupported { slot, cipher } => {
            format!("Keyslot {slot} area cipher {cipher} is not supported.")
        }
        KeyslotError::IvOptions { slot } => {
            let what = match slot {
                Some(s) => format!("Keyslot {s}"),
                None => "Keyslot cipher".into(),
            };
            format!("{what}: IV options are only supported with essiv in keyslots.")
        }
        KeyslotError::NoSpace => "No space for new keyslot.".into(),
        KeyslotError::NoFreeDigest => "No free digest slot for an unbound key.".into(),
        KeyslotError::NoSegmentDigest => "Volume has no data segment digest.".into(),
        KeyslotError::DigestIterations { digest } => {
            format!("Digest {digest} has invalid iterations.")
        }
        KeyslotError::NoBoundKeyslot => {
            "Cannot determine volume key size: no keyslot is bound to the data segment.".into()
        }
        other => sentence(&other.to_string()),
    }
}

/// cryptsetup 2.6.1's words for a header whose requirements forbid the operation
/// (`LUKS2_unmet_requirements`): requirements it does not know (`opal` among them, which came
/// with 2.7) first, then a legacy or a LUKS2 re-encryption in progress.
fn requirements(r: &RequirementsError) -> String {
    const UNMET: &str = "Unmet LUKS2 requirements detected.";
    let reqs = match r {
        RequirementsError::Unknown(_) => return UNMET.into(),
        RequirementsError::Unsupported(r) | RequirementsError::DataAccess(r) => r,
        other => return sentence(&other.to_string()),
    };
    if reqs.iter().any(|q| q.starts_with("online-reencrypt")) {
        "Operation incompatible with device marked for LUKS2 reencryption. Aborting.".into()
    } else if reqs.iter().any(|q| q == "offline-reencrypt") {
        "Operation incompatible with device marked for legacy reencryption. Aborting.".into()
    } else {
        UNMET.into()
    }
}

const PBKDF_FAILED: &str = "Failed to set pbkdf parameters.";

fn param(p: &ParamError) -> String {
    match p {
        ParamError::Priority => "Option --priority can be only ignore/normal/prefer.".into(),
        ParamError::TokenReplaceNeedsId => "Option --token-replace requires --token-id.".into(),
        ParamError::KeyslotKeySizeNeedsCipher => {
            "Option --keyslot-key-size requires --keyslot-cipher.".into()
        }
        // cryptsetup 2.6.1 prints this one without a period.
        ParamError::KeySizeNotBytes => "Key size in bits must be a multiple of 8 bits".into(),
        ParamError::KeySizeZero => "Key size must be non-zero.".into(),
        ParamError::KeyslotCipher { cipher } => {
            format!("Cipher {cipher} cannot be used for keyslot encryption.")
        }
        ParamError::PbkdfForLuks1 => {
            format!("Requested PBKDF type is not supported for LUKS1.\n{PBKDF_FAILED}")
        }
        ParamError::IterationsTooLow { pbkdf, min } => format!(
            "Forced iteration count is too low for {pbkdf} (minimum is {min}).\n{PBKDF_FAILED}"
        ),
        ParamError::MemoryTooLow { pbkdf, min_kib } => format!(
            "Forced memory cost is too low for {pbkdf} (minimum is {min_kib} kilobytes).\n{PBKDF_FAILED}"
        ),
        ParamError::UnknownPbkdf { name } => format!("Unknown PBKDF type {name}."),
        ParamError::PbkdfLimits(e) => format!("Invalid PBKDF parameters: {e}."),
        ParamError::Uuid => "Wrong LUKS UUID format provided.".into(),
        ParamError::VolumeKeySize { got, expected } => {
            format!("Volume key file has {got} bytes, {expected} bytes expected.")
        }
        ParamError::LabelNeedsLuks2 => "Label and subsystem are supported only for LUKS2.".into(),
        ParamError::SectorSize => "Unsupported encryption sector size.".into(),
        ParamError::OffsetTooLargeForLuks1 => "Offset is too large for LUKS1.".into(),
        ParamError::OffsetTooSmallForLuks1 => {
            "Data offset is too small for the LUKS1 keyslots.".into()
        }
        ParamError::DetachedOffsetInsideHeader => {
            "Data offset for LUKS header must be either 0 or higher than header size.".into()
        }
        ParamError::MetadataSize => "Unsupported LUKS2 metadata size.".into(),
        ParamError::OffsetNot4096 => "Data offset is not multiple of 4096 bytes.".into(),
        ParamError::KeyslotsSize => "Unsupported LUKS2 keyslots size.".into(),
        ParamError::OffsetTooSmall => "Requested data offset is too small.".into(),
        ParamError::OffsetNotAligned => {
            "Requested data offset is not aligned to the encryption sector size.".into()
        }
        ParamError::LargeIvSectors => "Large IV sectors option is supported only for opening \
             plain type device with sector size larger than 512 bytes."
            .into(),
        ParamError::CipherPattern => "No known cipher specification pattern detected.".into(),
        ParamError::Overflow { what } => match what {
            PlainValue::Offset => "Invalid offset specification.".into(),
            PlainValue::Size => "Invalid size specification.".into(),
        },
        ParamError::KeyProcessing { hash } => format!("Key processing error (using hash {hash})."),
        other => sentence(&other.to_string()),
    }
}

fn data(d: &DataError) -> CliError {
    let m = match d {
        DataError::SegmentType { kind } => format!("Unsupported LUKS2 segment type {kind}."),
        DataError::NoSegment => "LUKS2 header has no data segment.".into(),
        DataError::SeveralSegments => {
            "LUKS2 devices with several data segments are not supported.".into()
        }
        DataError::Integrity => {
            "LUKS2 data integrity protection (dm-integrity) is not supported.".into()
        }
        DataError::IvOffsetAlignment {
            iv_offset,
            sector_size,
        } => format!(
            "IV offset {iv_offset} is not a multiple of the encryption sector size ({sector_size} bytes)."
        ),
        DataError::OffsetAlignment => "Data offset is not a multiple of 512 bytes.".into(),
        DataError::SizeAlignment => "Device size is not aligned to requested sector size.".into(),
        DataError::NoData => {
            return CliError::device("Device is too small: no data after the data offset.")
        }
        DataError::TooSmall {
            needed,
            offset,
            available,
        } => {
            return CliError::device(format!(
                "Device is too small: the data area needs {needed} bytes after offset {offset}, \
                 {available} available."
            ))
        }
        DataError::Unaligned {
            offset,
            len,
            sector_size,
        } => format!(
            "Request at {offset} of {len} bytes is not aligned to the {sector_size}-byte sector size."
        ),
        DataError::BeyondEnd { offset, len, size } => format!(
            "Access beyond the end of the volume ({len} bytes at offset {offset}, size {size})."
        ),
        DataError::DiscardBeyondEnd => "Discard beyond the end of the volume.".into(),
        DataError::DiscardTooLarge => "Discard range too large.".into(),
        DataError::NotQueued { offset, len } => {
            format!("Request at {offset} of {len} bytes cannot be queued.")
        }
        DataError::ThreadPanicked => "Encryption thread panicked.".into(),
        DataError::Segment(SegmentError::BeyondDevice {
            offset,
            len,
            device_size,
        }) => {
            return CliError::device(format!(
                "Device is too small: a segment needs {len} bytes at offset {offset}, the \
                 device has {device_size}."
            ))
        }
        DataError::Segment(seg) => sentence(&seg.to_string()),
        other => sentence(&other.to_string()),
    };
    CliError::invalid(m)
}

fn convert(c: &ConvertError) -> CliError {
    let m = match c {
        ConvertError::AlreadyType { target } => format!("Device is already {target} type."),
        ConvertError::InUse { path } => {
            return CliError::busy(format!(
                "Cannot convert device {path} which is still in use."
            ))
        }
        ConvertError::MoveArea => "Unable to move keyslot area.".into(),
        ConvertError::NoSpace => "Unable to move keyslot area. Not enough space.".into(),
        ConvertError::AreaTooSmall => {
            "Unable to move keyslot area. LUKS2 keyslots area too small.".into()
        }
        ConvertError::Luks1HeaderSize => "Invalid LUKS1 header size.".into(),
        ConvertError::MaterialOffset { offset } => {
            format!("Unable to convert header with unsupported keyslots material offset {offset}.")
        }
        ConvertError::CipherForLuks2 { cipher, mode } => {
            format!("Unable to use cipher specification {cipher}-{mode} for LUKS2.")
        }
        ConvertError::LuksMeta => {
            "Unable to convert header with LUKSMETA additional metadata.".into()
        }
        ConvertError::InvalidMetadata => {
            "Cannot convert to LUKS2 format - invalid metadata.".into()
        }
        ConvertError::UnmetRequirements => "Unmet LUKS2 requirements detected.".into(),
        ConvertError::LegacyReencryption => {
            "Operation incompatible with device marked for legacy reencryption. Aborting.".into()
        }
        ConvertError::Reencryption => {
            "Operation incompatible with device marked for LUKS2 reencryption. Aborting.".into()
        }
        ConvertError::NotLuks1(why) => {
            format!("Cannot convert to LUKS1 format - {}", not_luks1(why))
        }
        other => sentence(&other.to_string()),
    };
    CliError::invalid(m)
}

fn not_luks1(why: &Luks1Incompatibility) -> String {
    use Luks1Incompatibility as I;
    match why {
        I::Digests => "key slot digests are not LUKS1 compatible.".into(),
        I::Segments => "device uses more segments.".into(),
        I::SectorSize => "default segment encryption sector size is not 512 bytes.".into(),
        I::CipherSpec { cipher } => format!("unsupported cipher specification {cipher}."),
        I::WrappedKey { cipher } => format!("device uses wrapped key cipher {cipher}."),
        I::Tokens { count } => format!("LUKS2 header contains {count} token(s)."),
        I::NoActiveKeyslots => "there are no active keyslots.".into(),
        I::Unbound { slot } => format!("keyslot {slot} is unbound."),
        I::OverMaximum { slot } => format!("slot {slot} (over maximum slots) is still active."),
        I::Keyslot { slot } => format!("keyslot {slot} is not LUKS1 compatible."),
        I::NoSpace { slot } => format!("no space in the keyslots area for keyslot {slot}."),
        I::AreaOffset { slot } => format!("keyslot {slot} area offset is out of range."),
        I::DataOffset => "data offset is too large for LUKS1.".into(),
        I::OutsideArea { slot } => {
            format!("keyslot {slot} lies outside the movable keyslots area.")
        }
        // What is wrong with the header, in the on-disk layer's words below.
        I::Header(e) => format_text(e),
        other => other.to_string(),
    }
}

fn backup(b: &BackupError) -> CliError {
    let m = match b {
        // Exit 1 as with cryptsetup 2.6.1 (not 5: its library reports it as EINVAL).
        BackupError::Exists { path } => {
            format!("Requested header backup file {path} already exists.")
        }
        BackupError::NoHeader { path } => format!(
            "Device {path} does not exist or access denied.\n\
             Header backup file does not contain compatible LUKS header."
        ),
        BackupError::Invalid { path } => {
            format!("Backup file {path} doesn't contain valid LUKS header.")
        }
        BackupError::Incompatible { .. } => {
            "Header backup file does not contain compatible LUKS header.".into()
        }
        BackupError::InvalidLuks1 { .. } => {
            "Backup file does not contain valid LUKS header.".into()
        }
        BackupError::Truncated { path } => format!("Cannot read header backup file {path}."),
        BackupError::DataOffset => {
            "Data offset differ on device and backup, restore failed.".into()
        }
        BackupError::KeyslotsSize => "Binary header with keyslot areas size differ on device \
             and backup, restore failed."
            .into(),
        BackupError::Luks1Layout => {
            "Data offset or key size differs on device and backup, restore failed.".into()
        }
        other => sentence(&other.to_string()),
    };
    CliError::invalid(m)
}

/// Errors of the on-disk layer: I/O is a device error (exit 4), the crypto layer's errors are
/// worded as such, and what is wrong with a header is an invalid-argument error (exit 1).
fn format_error(e: &FormatError) -> CliError {
    match e {
        FormatError::Io { context, source } => {
            CliError::device(with_period(format!("{context}: {source}")))
        }
        FormatError::Crypto(c) => crypto(c),
        other => CliError::invalid(format_text(other)),
    }
}

/// The sentence for an error of the on-disk layer (cryptsetup's wording where cryptsetup has
/// one, else a description of what is wrong with the header).
fn format_text(e: &FormatError) -> String {
    match e {
        FormatError::NotLuks(n) => match n {
            NotLuks::NoMagic => "LUKS header not detected.".into(),
            NotLuks::TooSmall => "Device is too small to contain a LUKS header.".into(),
            NotLuks::NoLuks2Magic { secondary } => format!(
                "No LUKS2 {} header magic.",
                if *secondary { "secondary" } else { "primary" }
            ),
            NotLuks::NoLuks2Copy => "Device is not a valid LUKS device.".into(),
            other => with_period(other.to_string()),
        },
        FormatError::Luks1(l) => luks1_text(l),
        FormatError::Luks2(l) => luks2_text(l),
        FormatError::Io { context, source } => with_period(format!("{context}: {source}")),
        FormatError::Crypto(c) => crypto(c).message,
        other => with_period(other.to_string()),
    }
}

/// The sentence for what is wrong with a LUKS1 header.
fn luks1_text(e: &Luks1Error) -> String {
    match e {
        Luks1Error::NotUtf8 { field } => {
            let field = match field {
                Luks1Field::CipherName => "cipher name",
                Luks1Field::CipherMode => "cipher mode",
                Luks1Field::HashSpec => "hash spec",
                Luks1Field::Uuid => "UUID",
                _ => "field",
            };
            format!("LUKS header {field} is not valid UTF-8.")
        }
        Luks1Error::Truncated { len, need } => {
            format!("LUKS header is truncated ({len} bytes, need {need}).")
        }
        Luks1Error::UnsupportedVersion { version } => {
            format!("Unsupported LUKS version {version}.")
        }
        Luks1Error::KeySizeZero => "LUKS header has invalid key size 0.".into(),
        Luks1Error::KeySizeTooLarge { key_bytes, max } => {
            format!("LUKS key size {key_bytes} bytes is too large (at most {max} bytes supported).")
        }
        Luks1Error::InvalidKeySize { key_bytes } => {
            format!("Invalid LUKS key size {key_bytes} bytes.")
        }
        Luks1Error::DeviceTooSmall { need } => {
            format!("Device is too small. (LUKS1 requires at least {need} bytes.)")
        }
        Luks1Error::UnsupportedHash { hash } => {
            format!("Requested LUKS hash {hash} is not supported.")
        }
        Luks1Error::Keyslot { slot, .. } => format!("LUKS keyslot {slot} is invalid."),
        Luks1Error::OffsetBeyondDevice => "Requested offset is beyond real size of device.".into(),
        Luks1Error::DataOffsetInsideHeader => {
            "Data offset for LUKS header must be either 0 or higher than header size.".into()
        }
        Luks1Error::BadUuid => "Wrong LUKS UUID format provided.".into(),
        Luks1Error::RepairKeySize => "Non standard key size, manual repair required.".into(),
        Luks1Error::RepairAlignment => {
            "Non standard keyslots alignment, manual repair required.".into()
        }
        Luks1Error::RepairFailed => "Repair failed.".into(),
        other => with_period(other.to_string()),
    }
}

/// [`luks1_text`] with the reason a keyslot is invalid (for `--debug`).
fn luks1_text_detailed(e: &Luks1Error) -> String {
    match e {
        Luks1Error::Keyslot { slot, problem } => {
            let why = match problem {
                Luks1KeyslotProblem::Stripes { stripes } => {
                    format!(
                        "stripes {stripes}, must be {}",
                        lukskit_format::luks1::STRIPES
                    )
                }
                Luks1KeyslotProblem::InsideHeader { offset } => {
                    format!("key material offset {offset} is inside the header")
                }
                Luks1KeyslotProblem::StartBeyondData { offset, payload } => {
                    format!("key material offset {offset} beyond data area offset {payload}")
                }
                Luks1KeyslotProblem::EndBeyondData {
                    offset,
                    end,
                    payload,
                } => format!(
                    "key material sectors {offset}..{end} beyond data area offset {payload}"
                ),
                Luks1KeyslotProblem::Overlaps { other } => {
                    format!("key material overlaps keyslot {other}")
                }
                other => other.to_string(),
            };
            format!("LUKS keyslot {slot} is invalid ({why}).")
        }
        other => luks1_text(other),
    }
}

/// [`format_text`] with the details cryptsetup leaves to its debug output.
fn format_text_detailed(e: &FormatError) -> String {
    match e {
        FormatError::Luks1(l) => luks1_text_detailed(l),
        other => format_text(other),
    }
}

/// The sentence for what is wrong with a LUKS2 header.
fn luks2_text(e: &Luks2Error) -> String {
    match e {
        Luks2Error::BinaryTruncated => "LUKS2 binary header is truncated.".into(),
        Luks2Error::UnsupportedVersion { version } => {
            format!("Unsupported LUKS2 header version {version}.")
        }
        Luks2Error::WriteUnsupportedVersion { version } => {
            format!("Unsupported LUKS2 header version ({version}).")
        }
        Luks2Error::OffsetMismatch { found, expected } => format!(
            "LUKS2 offset 0x{found:04x} on device differs to expected offset 0x{expected:04x}."
        ),
        Luks2Error::BogusSize { size } => format!("LUKS2 header has bogus size 0x{size:04x}."),
        Luks2Error::UnsupportedChecksum { alg } => {
            format!("Unsupported LUKS2 checksum algorithm {alg}.")
        }
        Luks2Error::NoValidCopy { primary, secondary } => format!(
            "Device is not a valid LUKS device (primary header: {}; secondary header: {}).",
            copy_text(primary),
            copy_text(secondary)
        ),
        Luks2Error::DeviceTooSmall { need } => {
            format!("Device is too small. Need at least {need} bytes.")
        }
        Luks2Error::JsonTooLarge { len, max } => {
            format!("JSON is too large ({len} > {max} bytes).")
        }
        Luks2Error::ConcurrentUpdate => {
            "Detected attempt for concurrent LUKS2 metadata update. Aborting operation.".into()
        }
        Luks2Error::KeyslotUnusable { id, problem } => match problem {
            KeyslotProblem::Type { kind } => format!("Keyslot {id} has type {kind}."),
            KeyslotProblem::UnknownKdf { name } => {
                format!("Keyslot {id}: unknown KDF type {name}.")
            }
            KeyslotProblem::KdfSaltSize { len } => {
                format!(
                    "Keyslot {id}: KDF salt is {len} bytes, expected {}.",
                    lukskit_format::luks2::SALT_SIZE
                )
            }
            KeyslotProblem::KeySize => format!("Keyslot {id}: invalid key size."),
            KeyslotProblem::KdfCost => format!("Keyslot {id}: invalid KDF cost parameters."),
            KeyslotProblem::NotObject => format!("Keyslot {id} is not an object."),
            other => format!("Keyslot {id}: {other}."),
        },
        Luks2Error::DigestUnusable { id, problem } => match problem {
            DigestProblem::Type { kind } => format!("Digest {id} has type {kind}."),
            DigestProblem::SaltSize { len } => {
                format!(
                    "Digest {id}: salt is {len} bytes, expected {}.",
                    lukskit_format::luks2::SALT_SIZE
                )
            }
            DigestProblem::DigestSize { len } => format!("Digest {id}: digest is {len} bytes."),
            other => format!("Digest {id}: {other}."),
        },
        Luks2Error::UnsupportedMetadataSize { size } => {
            format!("Unsupported LUKS2 metadata size {size}.")
        }
        Luks2Error::UnsupportedKeyslotsSize { size } => {
            format!("Unsupported LUKS2 keyslots size {size}.")
        }
        Luks2Error::DataOffsetTooSmall => "Requested data offset is too small.".into(),
        Luks2Error::LabelTooLong => "Label is too long.".into(),
        Luks2Error::BadUuid => "Wrong LUKS UUID format provided.".into(),
        Luks2Error::DigestIdInvalid { id } => format!("Invalid digest id {id}."),
        Luks2Error::MissingSection { name } => format!("Missing {name} section."),
        Luks2Error::HeaderSizeOverflow => "Header size overflow.".into(),
        Luks2Error::JsonAreaFull { len, max } => {
            format!("Not enough space in header JSON area ({len} > {max} bytes).")
        }
        Luks2Error::KeyslotIdInvalid { id } => format!("Key slot {id} is invalid."),
        Luks2Error::UnsupportedKeyslotType { kind } => format!("keyslot type {kind}."),
        Luks2Error::InvalidPriority { priority } => format!("Invalid keyslot priority {priority}."),
        Luks2Error::KeyslotActive { id } => format!("Cannot modify already active keyslot {id}."),
        Luks2Error::KeyslotInactive { id } => format!("Keyslot {id} is not active."),
        Luks2Error::DigestMissing { id } => format!("Digest {id} does not exist."),
        Luks2Error::DigestNoKeyslots { id } => format!("Digest {id} has no keyslots array."),
        Luks2Error::DigestExists { id } => format!("Digest {id} already exists."),
        Luks2Error::NoFreeToken => "No free token slot.".into(),
        Luks2Error::TokenIdInvalid { id } => format!("Token {id} is invalid."),
        Luks2Error::TokenNotInUse { id } => format!("Token {id} is not in use."),
        Luks2Error::Validation(rule) => {
            with_period(format!("LUKS2 metadata validation failed: {rule}"))
        }
        Luks2Error::Json { object, problem } => json_text(object, problem),
        Luks2Error::TokenNotObject => "Token JSON must be an object.".into(),
        Luks2Error::Internal => "internal error: chosen copy has no metadata.".into(),
        other => with_period(other.to_string()),
    }
}

/// What is wrong with the shape of a LUKS2 JSON object.
fn json_text(object: &JsonObject, problem: &JsonProblem) -> String {
    let kind = match object.kind {
        JsonKind::Keyslot => "Keyslot",
        JsonKind::Segment => "Segment",
        JsonKind::Digest => "Digest",
        JsonKind::Token => "Token",
        JsonKind::Config => "Config",
        _ => "Object",
    };
    let ctx = match object.id {
        Some(id) => format!("{kind} {id}"),
        None => kind.to_owned(),
    };
    match problem {
        JsonProblem::NotNumbered { key } => format!("{kind} \"{key}\" is not in numbered form."),
        JsonProblem::NotAnObject { key } => format!("{kind} {key} is not an object."),
        JsonProblem::Missing { member, kind } => {
            let t = match kind {
                JsonType::Array => "array",
                JsonType::String => "string",
                JsonType::Uint64String => "uint64 string",
                JsonType::Object => "object",
                _ => "value",
            };
            format!("{ctx} is missing \"{member}\" ({t}).")
        }
        JsonProblem::IllegalArrayValue { member } => {
            format!("{ctx}: illegal value in \"{member}\" array.")
        }
        JsonProblem::IllegalFlags => format!("{ctx}: illegal flags."),
        JsonProblem::EmptyType => format!("{ctx} has an empty type."),
        JsonProblem::IllegalKeyslotsValue => {
            format!("{ctx}: illegal value type in keyslots array.")
        }
        JsonProblem::MissingKeyslot { keyslot } => {
            format!("{ctx} references missing keyslot {keyslot}.")
        }
        JsonProblem::ReservedType { kind } => {
            format!("{ctx}: {kind} is a reserved built-in token type.")
        }
        JsonProblem::KeyringShape => {
            format!("{ctx}: luks2-keyring token needs exactly type, keyslots and key_description.")
        }
        other => format!("{ctx}: {other}."),
    }
}

/// What is wrong with one LUKS2 header copy (a diagnostic inside the message above).
fn copy_text(p: &CopyProblem) -> String {
    match p {
        CopyProblem::Header(e) => format_text(e),
        CopyProblem::NoUsableSecondary(last) => {
            format!(
                "no usable secondary header found (last: {})",
                copy_text(last)
            )
        }
        other => other.to_string(),
    }
}

/// The line `repair` prints for a note of the LUKS1 repair report.
fn luks1_repair_text(n: &Luks1RepairNote) -> String {
    match n {
        Luks1RepairNote::Problem(e) => luks1_text(e),
        Luks1RepairNote::InvalidCipherMode { mode } => {
            format!("LUKS cipher mode {mode} is invalid.")
        }
        Luks1RepairNote::CipherModeRepaired { from } => {
            format!("Cipher mode repaired ({from} -> ecb).")
        }
        Luks1RepairNote::OffsetRepaired { slot, from, to } => {
            format!("Keyslot {slot}: offset repaired ({from} -> {to}).")
        }
        Luks1RepairNote::StripesRepaired { slot, from } => format!(
            "Keyslot {slot}: stripes repaired ({from} -> {}).",
            lukskit_format::luks1::STRIPES
        ),
        Luks1RepairNote::BogusPartitionSignature { slot } => {
            format!("Keyslot {slot}: bogus partition signature.")
        }
        Luks1RepairNote::SaltWiped { slot } => format!("Keyslot {slot}: salt wiped."),
        other => format!("{other:?}"),
    }
}

/// Errors of the crypto layer (unsupported ciphers and hashes, bad keys, limits), shown as
/// a sentence; limits are cryptsetup's "out of memory" (exit 3).
fn crypto(e: &CryptoError) -> CliError {
    let class = match e {
        CryptoError::Limit(_) => ExitClass::NoMemory,
        _ => ExitClass::Invalid,
    };
    let s = e.to_string();
    let mut c = s.chars();
    let capital = match c.next() {
        Some(f) => f.to_uppercase().collect::<String>() + c.as_str(),
        None => s,
    };
    CliError::new(class, with_period(capital))
}

fn with_period(mut s: String) -> String {
    if !s.ends_with('.') {
        s.push('.');
    }
    s
}

/// cryptsetup's words for a warning of a successful format.
pub fn format_warning(w: &FormatWarning) -> String {
    match w {
        FormatWarning::TooSmallForActivation { path } => format!(
            "Device {path} is too small for activation, there is no remaining space for data."
        ),
        other => format!("{other:?}"),
    }
}

/// cryptsetup's words for what `repair` did.
pub fn repair_note(n: &RepairNote) -> String {
    match n {
        RepairNote::PrimaryRestored => "Primary LUKS2 header was damaged and has been restored \
             from the secondary copy."
            .into(),
        RepairNote::SecondaryRestored => "Secondary LUKS2 header was damaged and has been \
             restored from the primary copy."
            .into(),
        RepairNote::Luks1(n) => luks1_repair_text(n),
        other => format!("{other:?}"),
    }
}

impl From<CryptoError> for CliError {
    fn from(e: CryptoError) -> Self {
        crypto(&e)
    }
}

impl From<FormatError> for CliError {
    fn from(e: FormatError) -> Self {
        format_error(&e)
    }
}

impl From<ActivateError> for CliError {
    fn from(e: ActivateError) -> Self {
        activation_error(e)
    }
}

/// cryptsetup's words and exit code for what the activation layer reports.
fn activation_error(e: ActivateError) -> CliError {
    match e {
        ActivateError::InvalidName { name } => {
            CliError::invalid(format!("Device name {name:?} is not valid."))
        }
        ActivateError::NameExists { name } => {
            CliError::busy(format!("Device {name} already exists."))
        }
        ActivateError::NotActive { name } => inactive(&name),
        ActivateError::DeviceInUse { device } => CliError::busy(format!(
            "Cannot use device {device} which is in use (already mapped or mounted)."
        )),
        ActivateError::DeviceMissing { device } => {
            CliError::device(format!("Device {device} does not exist or access denied."))
        }
        ActivateError::MappingBusy { name } => {
            CliError::busy(format!("Device {name} is still in use."))
        }
        ActivateError::Suspended { name } => CliError::busy(format!(
            "Device {name} is suspended; resume it before closing it."
        )),
        ActivateError::NotSuspended { name } => {
            CliError::invalid(format!("Volume {name} is not suspended."))
        }
        ActivateError::AlreadySuspended { name } => {
            CliError::invalid(format!("Volume {name} is already suspended."))
        }
        ActivateError::InvalidRequest(m) | ActivateError::Unsupported(m) => CliError::invalid(m),
        ActivateError::NoDeviceMapper => CliError::invalid(
            "The kernel has no device-mapper with dm-crypt (/dev/mapper/control, dm_crypt).",
        ),
        ActivateError::Volume(v) => v.into(),
        ActivateError::NeedsRoot { what } => CliError::invalid(format!(
            "{what} needs root. As another user, open --no-loop serves the volume as a FUSE \
             file ({}/NAME/device).",
            lukskit_activate::userspace::runtime::run_dir().display()
        )),
        ActivateError::UnsafeStateDir { path } => CliError::invalid(format!(
            "Cannot keep mapping state in {path}: it must be a directory of yours alone \
             (mode 0700, not a symbolic link)."
        )),
        ActivateError::Io { context, source } => {
            let class = match source.raw_os_error() {
                Some(libc::EBUSY) | Some(libc::EEXIST) => ExitClass::Busy,
                Some(libc::ENODEV) | Some(libc::ENXIO) => ExitClass::Device,
                Some(libc::EPERM) | Some(libc::EACCES) => ExitClass::Permission,
                _ => ExitClass::Invalid,
            };
            CliError::new(class, format!("{context}: {source}"))
        }
        ActivateError::Kernel(k) => {
            let class = if k.is_busy() {
                ExitClass::Busy
            } else if k.is_not_found() {
                ExitClass::Device
            } else {
                ExitClass::Invalid
            };
            CliError::new(class, format!("device-mapper: {k}."))
        }
        other => CliError::invalid(sentence(&other.to_string())),
    }
}

/// cryptsetup's "Device NAME is not active." (exit 4).
pub fn inactive(name: &str) -> CliError {
    CliError::device(format!("Device {name} is not active."))
}

/// `s` with a capital first letter and a final period.
fn sentence(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_uppercase().collect::<String>() + c.as_str() + ".",
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io;

    fn shown(e: VolumeError) -> (i32, String) {
        let c = CliError::from(e);
        (c.class.exit_code(), c.message)
    }

    #[test]
    fn volume_errors_get_cryptsetups_words_and_exit_codes() {
        let cases: Vec<(VolumeError, i32, &str)> = vec![
            (
                VolumeError::WrongPassphrase,
                2,
                "No key available with this passphrase.",
            ),
            (
                VolumeError::VolumeKeyMismatch,
                2,
                "Volume key does not match the volume.",
            ),
            (
                VolumeError::NoUsableKeyslot,
                1,
                "No usable keyslot is available.",
            ),
            (
                KeyslotError::OutOfRange { slot: 9, count: 8 }.into(),
                1,
                "Key slot 9 is invalid, please select between 0 and 7.",
            ),
            (
                KeyslotError::NotActive { slot: 3 }.into(),
                1,
                "Keyslot 3 is not active.",
            ),
            (
                KeyslotError::IvOptions { slot: None }.into(),
                1,
                "Keyslot cipher: IV options are only supported with essiv in keyslots.",
            ),
            (
                VolumeError::not_found("/dev/nope"),
                4,
                "Device /dev/nope does not exist or access denied.",
            ),
            (
                VolumeError::io(IoOp::Read, "/img", io::Error::from_raw_os_error(libc::EIO)),
                4,
                "Reading /img failed: Input/output error (os error 5).",
            ),
            (
                VolumeError::io(
                    IoOp::Lock,
                    "/img",
                    io::Error::from_raw_os_error(libc::EBUSY),
                ),
                5,
                "Locking /img failed: Device or resource busy (os error 16).",
            ),
            (
                VolumeError::io(
                    IoOp::Open,
                    "/img",
                    io::Error::from_raw_os_error(libc::EACCES),
                ),
                2,
                "Opening /img failed: Permission denied (os error 13).",
            ),
            (
                VolumeError::device_io(
                    DeviceOp::ReadKeyMaterial { slot: 1 },
                    io::Error::from_raw_os_error(libc::EIO),
                ),
                4,
                "Cannot read keyslot 1 key material: Input/output error (os error 5).",
            ),
            (
                VolumeError::InUse {
                    path: "/dev/sdb".into(),
                },
                1,
                "Cannot exclusively open /dev/sdb, device in use.",
            ),
            (
                VolumeError::NotLuks {
                    path: "/dev/sdb".into(),
                },
                1,
                "Device /dev/sdb is not a valid LUKS device.",
            ),
            (
                RequirementsError::Unknown(vec!["a".into(), "b".into()]).into(),
                1,
                "Unmet LUKS2 requirements detected.",
            ),
            (
                RequirementsError::Unsupported(vec!["online-reencrypt-v2".into()]).into(),
                1,
                "Operation incompatible with device marked for LUKS2 reencryption. Aborting.",
            ),
            (
                RequirementsError::Unsupported(vec!["offline-reencrypt".into()]).into(),
                1,
                "Operation incompatible with device marked for legacy reencryption. Aborting.",
            ),
            (
                ParamError::KeySizeNotBytes.into(),
                1,
                "Key size in bits must be a multiple of 8 bits",
            ),
            (
                ParamError::MemoryTooLow {
                    pbkdf: "argon2id".into(),
                    min_kib: 32,
                }
                .into(),
                1,
                "Forced memory cost is too low for argon2id (minimum is 32 kilobytes).\n\
                 Failed to set pbkdf parameters.",
            ),
            (
                DataError::TooSmall {
                    needed: 4096,
                    offset: 512,
                    available: 1024,
                }
                .into(),
                4,
                "Device is too small: the data area needs 4096 bytes after offset 512, 1024 \
                 available.",
            ),
            (TokenError::InUse { id: 2 }.into(), 1, "Token 2 in use."),
            (
                ConvertError::InUse {
                    path: "/dev/sdb".into(),
                }
                .into(),
                5,
                "Cannot convert device /dev/sdb which is still in use.",
            ),
            (
                ConvertError::NotLuks1(Luks1Incompatibility::Tokens { count: 1 }).into(),
                1,
                "Cannot convert to LUKS1 format - LUKS2 header contains 1 token(s).",
            ),
            (
                BackupError::Exists { path: "/b".into() }.into(),
                1,
                "Requested header backup file /b already exists.",
            ),
            (
                VolumeError::Crypto(CryptoError::Limit("argon2 memory".into())),
                3,
                "Limit exceeded: argon2 memory.",
            ),
            (
                FormatError::from(Luks2Error::BogusSize { size: 0x1000 }).into(),
                1,
                "LUKS2 header has bogus size 0x1000.",
            ),
            (
                FormatError::from(Luks1Error::Keyslot {
                    slot: 4,
                    problem: Luks1KeyslotProblem::Stripes { stripes: 3999 },
                })
                .into(),
                1,
                "LUKS keyslot 4 is invalid.",
            ),
            (
                VolumeError::InvalidHeader {
                    path: "/dev/sdb".into(),
                    source: Luks1Error::DeviceTooSmall { need: 1049600 }.into(),
                },
                1,
                "Device /dev/sdb is too small. (LUKS1 requires at least 1049600 bytes.)\n\
                 Device /dev/sdb is not a valid LUKS device.",
            ),
            (
                VolumeError::InvalidHeader {
                    path: "/dev/sdb".into(),
                    source: Luks2Error::NoValidCopy {
                        primary: CopyProblem::Header(Box::new(
                            NotLuks::NoLuks2Magic { secondary: false }.into(),
                        )),
                        secondary: CopyProblem::Header(Box::new(
                            NotLuks::NoLuks2Magic { secondary: true }.into(),
                        )),
                    }
                    .into(),
                },
                1,
                "Device /dev/sdb is not a valid LUKS device.",
            ),
            (
                FormatError::from(Luks2Error::Json {
                    object: JsonObject::numbered(JsonKind::Segment, 0),
                    problem: JsonProblem::Missing {
                        member: "offset".into(),
                        kind: JsonType::Uint64String,
                    },
                })
                .into(),
                1,
                "Segment 0 is missing \"offset\" (uint64 string).",
            ),
            (
                FormatError::from(Luks2Error::NoValidCopy {
                    primary: CopyProblem::Header(Box::new(
                        NotLuks::NoLuks2Magic { secondary: false }.into(),
                    )),
                    secondary: CopyProblem::NoUsableSecondary(Box::new(CopyProblem::Header(
                        Box::new(Luks2Error::UnsupportedVersion { version: 3 }.into()),
                    ))),
                })
                .into(),
                1,
                "Device is not a valid LUKS device (primary header: No LUKS2 primary header \
                 magic.; secondary header: no usable secondary header found (last: \
                 Unsupported LUKS2 header version 3.)).",
            ),
            (
                FormatError::io(
                    "Cannot read header",
                    io::Error::from_raw_os_error(libc::EIO),
                )
                .into(),
                4,
                "Cannot read header: Input/output error (os error 5).",
            ),
        ];
        for (e, code, text) in cases {
            let desc = format!("{e:?}");
            assert_eq!(shown(e), (code, text.to_string()), "{desc}");
        }
    }

    #[test]
    fn only_a_wrong_passphrase_is_asked_again() {
        assert!(is_wrong_passphrase(&VolumeError::WrongPassphrase));
        assert!(!is_wrong_passphrase(&VolumeError::NoUsableKeyslot));
        assert!(!is_wrong_passphrase(&VolumeError::VolumeKeyMismatch));
    }

    #[test]
    fn warnings_and_repair_notes_get_cryptsetups_words() {
        assert_eq!(
            format_warning(&FormatWarning::TooSmallForActivation { path: "a".into() }),
            "Device a is too small for activation, there is no remaining space for data."
        );
        assert_eq!(
            repair_note(&RepairNote::PrimaryRestored),
            "Primary LUKS2 header was damaged and has been restored from the secondary copy."
        );
        assert_eq!(
            repair_note(&RepairNote::SecondaryRestored),
            "Secondary LUKS2 header was damaged and has been restored from the primary copy."
        );
    }

    #[test]
    fn nothing_to_read_is_typed() {
        let e = CliError::nothing_to_read();
        assert!(e.is_nothing_to_read());
        assert_eq!(e.message, "Nothing to read on input.");
        assert!(!CliError::invalid("Nothing to read on input.").is_nothing_to_read());
    }
}
