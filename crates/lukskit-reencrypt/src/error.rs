//! What can go wrong in a re-encryption's orchestration, typed; the engine's own failures
//! come through as [`ReencryptError::Volume`].

/// The result of the orchestration.
pub type Result<T> = std::result::Result<T, ReencryptError>;

/// Why a device's claim for a re-encryption was refused (cryptsetup words each case
/// differently; see [`ReencryptError::Claim`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClaimRefusal {
    /// An offline run (cryptsetup's exclusive open of the data device).
    Run,
    /// A decryption that moves the first segment (cryptsetup refuses it during its
    /// initialization).
    MovedSegment,
    /// cryptsetup's legacy code (LUKS1 re-encryption, a decryption exporting the header).
    Legacy,
}

/// A re-encryption that cannot be done, or failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReencryptError {
    /// `--resilience NAME` with a NAME cryptsetup does not know.
    #[error("unsupported resilience mode {0}")]
    UnsupportedResilience(String),
    /// The resilience asked for does not fit the re-encryption in progress (or the
    /// initialization asked for).
    #[error("the requested resilience cannot be applied to this re-encryption")]
    ResilienceNotApplicable,
    /// A re-encryption in progress with resilience `datashift` keeps it.
    #[error("the re-encryption in progress uses datashift resilience")]
    DatashiftInProgress,
    /// An initialization cryptsetup refuses without saying more than that it failed.
    #[error("failed to initialize the re-encryption")]
    InitFailed,
    /// The initialization failed for this reason; nothing was written.
    #[error("failed to initialize the re-encryption: {0}")]
    InitFailedBecause(Box<ReencryptError>),
    /// The data device's size is not a multiple of the new encryption sector size (bytes).
    #[error("the data device is not aligned to the encryption sector size ({0} bytes)")]
    DataDeviceAlignment(u32),
    /// The new cipher cannot take the kept volume key (as written).
    #[error("unable to use cipher specification {0} for LUKS2")]
    UnusableCipher(String),
    /// An encryption was asked for, another mode is in progress.
    #[error("the device is not in encryption")]
    NotInEncryption,
    /// A decryption was asked for, another mode is in progress.
    #[error("the device is not in decryption")]
    NotInDecryption,
    /// The keyslot asked for does not hold the volume key.
    #[error("keyslot {0} is not active")]
    KeyslotInactive(u32),
    /// No keyslot holds the volume key.
    #[error("no usable keyslot is available")]
    NoUsableKeyslot,
    /// The data device has holders, none of them the volume's mapping.
    #[error("device {0} is still in use")]
    StillInUse(String),
    /// The data device's status could not be read.
    #[error("cannot open {path}: {source}")]
    Open {
        /// The device.
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// The mapping named is not active.
    #[error("device {0} is not active")]
    NotActive(String),
    /// The mapping named is one of lukskit's userspace mappings, which an online run over
    /// a kernel mapping cannot use.
    #[error("{0} is a lukskit userspace mapping")]
    UserspaceMappingNamed(String),
    /// A data shift under a lukskit userspace mapping.
    #[error("online re-encryption with a data shift of a userspace mapping is not supported")]
    OnlineShiftUnsupported,
    /// The mapping of an online run with a data shift does not fit the data left.
    #[error("illegal device size requested in reencryption parameters")]
    IllegalDeviceSize,
    /// An online run of a header with an interrupted hot zone.
    #[error("the re-encryption must be recovered first")]
    NeedsRecovery,
    /// The data device could not be claimed for the run.
    #[error("cannot claim {path}")]
    Claim {
        /// The device.
        path: String,
        /// Which step wanted it.
        refusal: ClaimRefusal,
        /// It is in use (else it could not be opened at all).
        in_use: bool,
    },
    /// The re-encryption metadata does not match its digest (mangled).
    #[error("the re-encryption metadata is invalid: {0}")]
    InvalidMetadata(#[source] lukskit_volume::VolumeError),
    /// The re-encryption lock an activation takes could not be had (the engine's
    /// `AlreadyRunning`: a run holds it).
    #[error("cannot take the re-encryption lock to activate the device: {0}")]
    ActivationLock(#[source] lukskit_volume::VolumeError),
    /// The recovery of the hot zone a crash left failed.
    #[error("failed to recover from the re-encryption crash: {0}")]
    CrashRecovery(#[source] lukskit_volume::VolumeError),
    /// The device is too small for the data shift asked for (no plaintext would be left).
    #[error("device {0} is too small")]
    DeviceTooSmall(String),
    /// The restore of the new header over the head of the device failed after it began (the
    /// temporary header is the only complete copy).
    #[error("failed to place the new header at the head of the device: {0}")]
    HeaderRestore(#[source] lukskit_volume::VolumeError),
    /// The header file to export to could not be made.
    #[error("cannot create header backup file {0}")]
    HeaderFileCreate(String),
    /// The initialization failed after the header was exported: the file is the header's
    /// backup.
    #[error("the re-encryption initialization failed; header backup is available in {file}")]
    InitFailedWithBackup {
        /// The header file.
        file: String,
        /// Why.
        source: Box<ReencryptError>,
    },
    /// A decryption of a detached header whose data does not start at offset 0.
    #[error("decryption is supported with a detached header of data offset 0 only")]
    DecryptNeedsDetachedHeader,
    /// The passphrases come from a key file, and more than one keyslot would be unlocked.
    #[error("a key file can be used only with one keyslot")]
    KeyFileNeedsOneKeyslot,
    /// A re-encryption keeping the volume key changes nothing of the data segment.
    #[error("no data segment parameters changed")]
    NoSegmentChange,
    /// A raise of the encryption sector size without an active mapping to check it on.
    #[error("encryption sector size increase on an offline device is not supported")]
    SectorIncreaseOffline,
    /// The detached header of an encryption with a data shift does not fit the shift.
    #[error("the LUKS2 metadata size is larger than the data shift")]
    MetadataLargerThanShift,
    /// An encryption without a detached header and without a data shift (no room for the
    /// header).
    #[error("encryption needs a detached header or a data device size reduction")]
    EncryptWithoutHeader,
    /// The header is marked by the legacy (cryptsetup 2.0) offline re-encryption.
    #[error("legacy LUKS2 re-encryption is no longer supported")]
    LegacyReencryption,
    /// `--init-only` of a header already in re-encryption.
    #[error("the re-encryption is already initialized")]
    AlreadyInitialized,
    /// `--resume-only` of a header not in re-encryption.
    #[error("the device is not in re-encryption")]
    NotInProgress,
    /// A new decryption without `--header`.
    #[error("a decryption requires a detached header")]
    DecryptNeedsHeader,
    /// A new decryption of a detached header with `--reduce-device-size`.
    #[error("failed to write the re-encryption resilience metadata")]
    DecryptShiftUnsupported,
    /// The volume's header is not LUKS2.
    #[error("the device is not a valid LUKS2 device")]
    NotLuks2,
    /// `--type` names the other LUKS version than the header's (`found`).
    #[error("conflicting versions: device {device} is {found:?}")]
    ConflictingVersions {
        /// The header device.
        device: String,
        /// What it holds.
        found: crate::legacy::DevState,
    },
    /// An encryption of a device whose LUKS header does not load.
    #[error("device {path} contains broken LUKS metadata: {source}")]
    BrokenLuks {
        /// The device.
        path: String,
        /// Why it does not load.
        source: lukskit_volume::VolumeError,
    },
    /// An encryption of a device that is a LUKS device already.
    #[error("device {0} is already a LUKS device")]
    AlreadyLuks(String),
    /// An encryption of a device in re-encryption.
    #[error("device {0} is already in LUKS re-encryption")]
    AlreadyInReencryption(String),
    /// A legacy (LUKS1) run with a device size (`--device-size`), which lukskit's legacy
    /// code does not take yet.
    #[error("a device size is not supported by the LUKS1 re-encryption yet")]
    LegacyDeviceSizeUnsupported,
    /// A legacy run's block size is not 1-64 MiB.
    #[error("the re-encryption block size must be 1 to 64 MiB")]
    LegacyBlockSize,
    /// The data device cannot be opened for writing.
    #[error("cannot open device {0}")]
    CannotOpenDevice(String),
    /// The UUID of a decryption to resume is not a UUID.
    #[error("the UUID given is invalid")]
    InvalidUuid,
    /// The device holds no LUKS1 header (nor one in legacy re-encryption).
    #[error("device {0} is not a valid LUKS device")]
    NotValidLuks(String),
    /// A keyslot number beyond LUKS1's eight.
    #[error("the keyslot is invalid")]
    InvalidKeyslot,
    /// A legacy run's log file cannot be opened (`Some`: why) or read (`None`: it is not a
    /// log file of this format).
    #[error("cannot open the re-encryption log file")]
    LegacyLogOpen(Option<lukskit_volume::VolumeError>),
    /// A UUID was given but no decryption is in progress to resume.
    #[error("the UUID can be used only to resume a decryption in progress")]
    UuidOnlyResumes,
    /// A legacy run's header file could not be made.
    #[error("cannot create header file {path}: {source}")]
    LegacyHeaderCreate {
        /// The file.
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// The header is not LUKS1.
    #[error("the device is not a valid LUKS1 device")]
    NotLuks1,
    /// The size of the data device could not be read.
    #[error("cannot read the size of {path}: {source}")]
    DeviceSize {
        /// The device.
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// A legacy run's data copy failed (its log and files stay: it is resumable).
    #[error("I/O error during re-encryption: {0}")]
    LegacyCopy(#[source] lukskit_volume::VolumeError),
    /// A legacy run was stopped by its caller between blocks (resumable).
    #[error("the re-encryption was interrupted")]
    LegacyInterrupted,
    /// An encryption's new detached header could not be moved to its place.
    #[error("cannot restore the LUKS1 header on {header}: {source}")]
    LegacyRestoreRename {
        /// The header file.
        header: String,
        /// Why.
        source: std::io::Error,
    },
    /// A legacy run's new header could not be written over the device's.
    #[error("cannot restore the LUKS1 header on {device}: {source}")]
    LegacyRestore {
        /// The header device.
        device: String,
        /// Why.
        source: lukskit_volume::VolumeError,
    },
    /// The engine, the header or the device failed.
    #[error(transparent)]
    Volume(#[from] lukskit_volume::VolumeError),
    /// A cipher or key cannot be used.
    #[error(transparent)]
    Crypto(#[from] lukskit_crypto::CryptoError),
    /// The header could not be read or written.
    #[error(transparent)]
    Format(#[from] lukskit_format::FormatError),
    /// A mapping could not be looked at or changed.
    #[error(transparent)]
    Activate(#[from] lukskit_activate::ActivateError),
}
