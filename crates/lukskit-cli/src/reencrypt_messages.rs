//! cryptsetup 2.6.1's words and exit codes for what the re-encryption library reports.

use crate::errors::CliError;
use lukskit_reencrypt::legacy::DevState;
use lukskit_reencrypt::{ClaimRefusal, ReencryptError};
use lukskit_volume::{ReencryptError as VolumeReencryptError, VolumeError};

impl From<ReencryptError> for CliError {
    fn from(e: ReencryptError) -> Self {
        message(e)
    }
}

fn message(e: ReencryptError) -> CliError {
    use ReencryptError as E;
    match e {
        E::UnsupportedResilience(name) => {
            CliError::invalid(format!("Unsupported resilience mode {name}"))
        }
        E::ResilienceNotApplicable => CliError::invalid(
            "Requested --resilience option cannot be applied to current reencryption operation.",
        ),
        E::DatashiftInProgress => CliError::invalid(
            "Device is in reencryption using datashift resilience. Requested --resilience \
             option cannot be applied.",
        ),
        E::InitFailed => CliError::invalid("Failed to initialize LUKS2 reencryption in metadata."),
        E::InitFailedBecause(reason) => init_failed(CliError::from(*reason)),
        E::DataDeviceAlignment(sector_size) => CliError::invalid(format!(
            "Data device is not aligned to encryption sector size ({sector_size} bytes)."
        )),
        E::UnusableCipher(cipher) => CliError::invalid(format!(
            "Unable to use cipher specification {cipher} for LUKS2."
        )),
        E::NotInEncryption => {
            CliError::invalid("Device is not in LUKS2 encryption. Conflicting option --encrypt.")
        }
        E::NotInDecryption => {
            CliError::invalid("Device is not in LUKS2 decryption. Conflicting option --decrypt.")
        }
        E::KeyslotInactive(slot) => CliError::invalid(format!("Keyslot {slot} is not active.")),
        E::NoUsableKeyslot => CliError::invalid("No usable keyslot is available."),
        E::StillInUse(device) => CliError::invalid(format!("Device {device} is still in use.")),
        E::Open { path, source } => CliError::io("Opening", &path, &source),
        E::NotActive(name) => CliError::invalid(format!("Device {name} is not active.")),
        E::UserspaceMappingNamed(name) => CliError::invalid(format!(
            "Online re-encryption of {name}, a lukskit userspace mapping, is not supported \
             yet; close it first or use --force-offline-reencrypt."
        )),
        E::OnlineShiftUnsupported => CliError::invalid(
            "Online re-encryption with a data shift (--reduce-device-size) of a lukskit \
             userspace mapping is not supported; close it first or use \
             --force-offline-reencrypt.",
        ),
        E::IllegalDeviceSize => {
            CliError::invalid("Illegal device size requested in reencryption parameters.")
        }
        E::NeedsRecovery => {
            CliError::invalid("Cannot proceed with reencryption. Run reencryption recovery first.")
        }
        E::Claim {
            path,
            refusal,
            in_use,
        } => claim_refused(&path, refusal, in_use),
        // "Reencryption metadata is invalid." and the like, with exit 2.
        E::InvalidMetadata(e) => CliError::permission(crate::errors::volume(&e).message),
        E::ActivationLock(VolumeError::Reencrypt(VolumeReencryptError::AlreadyRunning)) => {
            CliError::busy("Reencryption in-progress. Cannot activate device.")
        }
        E::ActivationLock(_) => CliError::invalid("Failed to get reencryption lock."),
        E::CrashRecovery(e) => {
            let m = crate::errors::volume(&e).message;
            CliError::invalid(format!("Failed to recover from reencryption crash.\n{m}"))
        }
        E::DeviceTooSmall(device) => CliError::invalid(format!("Device {device} is too small.")),
        E::HeaderRestore(e) => e.into(),
        E::HeaderFileCreate(file) => {
            CliError::invalid(format!("Cannot create header backup file {file}."))
        }
        E::InitFailedWithBackup { file, source } => with_backup_note(&file, (*source).into()),
        E::NotLuks2 => CliError::invalid("Device is not a valid LUKS2 device."),
        E::LegacyReencryption => {
            CliError::invalid("Legacy LUKS2 reencryption is no longer supported.")
        }
        E::AlreadyInitialized => {
            CliError::invalid("LUKS2 reencryption already initialized. Aborting operation.")
        }
        E::NotInProgress => CliError::invalid("Device reencryption not in progress."),
        E::DecryptNeedsHeader => CliError::invalid("LUKS2 decryption requires --header option."),
        E::DecryptShiftUnsupported => {
            CliError::invalid("Failed to write reencryption resilience metadata.")
        }
        E::DecryptNeedsDetachedHeader => CliError::invalid(
            "LUKS2 decryption is supported with detached header device only (with data \
             offset set to 0).",
        ),
        E::KeyFileNeedsOneKeyslot => CliError::invalid(
            "Key file can be used only with --key-slot or with exactly one key slot active.",
        ),
        E::NoSegmentChange => {
            CliError::invalid("No data segment parameters changed. Reencryption aborted.")
        }
        E::Crypto(e) => e.into(),
        E::SectorIncreaseOffline => CliError::invalid(
            "Encryption sector size increase on offline device is not supported.\n\
             Activate the device first or use --force-offline-reencrypt option (dangerous!).",
        ),
        E::MetadataLargerThanShift => {
            CliError::invalid("LUKS2 metadata size is larger than data shift value.")
        }
        E::EncryptWithoutHeader => CliError::invalid(
            "Encryption without detached header (--header) is not possible without data \
             device size reduction (--reduce-device-size).",
        ),
        E::ConflictingVersions { device, found } => {
            let what = match found {
                DevState::Luks1 => "LUKS1",
                DevState::Luks1Unusable => "in LUKS1 reencryption",
                DevState::Luks2 => "LUKS2",
                DevState::Luks2Reencrypt => "in LUKS2 reencryption",
                DevState::NotLuks => "not LUKS",
            };
            CliError::invalid(format!("Conflicting versions. Device {device} is {what}."))
        }
        E::BrokenLuks { path, source } => {
            let m = crate::errors::problem_only(source).message;
            let problem = if m.is_empty() { m } else { format!("{m}\n") };
            CliError::invalid(format!(
                "{problem}Device {path} contains broken LUKS metadata. Aborting operation."
            ))
        }
        E::AlreadyLuks(device) => CliError::invalid(format!(
            "Device {device} is already LUKS device. Aborting operation."
        )),
        E::AlreadyInReencryption(device) => CliError::invalid(format!(
            "Device {device} is already in LUKS reencryption. Aborting operation."
        )),
        E::LegacyDeviceSizeUnsupported => CliError::invalid(
            "Option --device-size is not supported by lukskit's LUKS1 reencrypt yet.",
        ),
        E::LegacyBlockSize => CliError::invalid(
            "Only values between 1 MiB and 64 MiB allowed for reencryption block size.",
        ),
        E::CannotOpenDevice(device) => CliError::invalid(format!("Cannot open device {device}.")),
        E::InvalidUuid => CliError::invalid("Provided UUID is invalid."),
        E::NotValidLuks(device) => {
            CliError::invalid(format!("Device {device} is not a valid LUKS device."))
        }
        E::InvalidKeyslot => CliError::invalid("Key slot is invalid."),
        E::LegacyLogOpen(why) => {
            let why = match why {
                Some(e) => crate::errors::volume(&e).message,
                None => "Wrong log format.".to_string(),
            };
            CliError::invalid(format!("{why}\nCannot open reencryption log file."))
        }
        E::UuidOnlyResumes => CliError::invalid(
            "No decryption in progress, provided UUID can be used only to resume suspended \
             decryption process.",
        ),
        E::LegacyHeaderCreate { path, source } => {
            CliError::invalid(format!("Cannot create header file {path}: {source}."))
        }
        E::NotLuks1 => CliError::invalid("Device is not a valid LUKS1 device."),
        E::DeviceSize { path, source } => CliError::io("read the size of", &path, &source),
        E::LegacyCopy(e) => after("IO error during reencryption.", e.into()),
        E::LegacyInterrupted => CliError::invalid("\nReencryption interrupted."),
        E::LegacyRestoreRename { header, source } => after(
            &format!("Cannot restore LUKS1 header on device {header}."),
            CliError::io("rename", &header, &source),
        ),
        E::LegacyRestore { device, source } => after(
            &format!("Cannot restore LUKS1 header on device {device}."),
            source.into(),
        ),
        E::Volume(e) => e.into(),
        E::Format(e) => e.into(),
        E::Activate(e) => e.into(),
        other => CliError::invalid(other.to_string()),
    }
}

/// `e` with the line cryptsetup says before it (its exit code).
fn after(line: &str, e: CliError) -> CliError {
    if e.message.is_empty() {
        return CliError::new(e.class, line);
    }
    CliError::new(e.class, format!("{line}\n{}", e.message))
}

/// A failure of the re-encryption's initialization in cryptsetup's words: the reason, then
/// "Failed to initialize LUKS2 reencryption in metadata." (once).
pub(crate) fn init_failed(e: CliError) -> CliError {
    const FAILED: &str = "Failed to initialize LUKS2 reencryption in metadata.";
    if e.message.ends_with(FAILED) {
        return e;
    }
    if e.message.is_empty() {
        return CliError::new(e.class, FAILED);
    }
    CliError::new(e.class, format!("{}\n{FAILED}", e.message))
}

/// A failure of an initialization after the header was exported to `file`: cryptsetup's note
/// of the backup, then the reason (its exit code).
fn with_backup_note(file: &str, e: CliError) -> CliError {
    let note = format!("Reencryption initialization failed. Header backup is available in {file}.");
    if e.message.is_empty() {
        return CliError::new(e.class, note);
    }
    CliError::new(e.class, format!("{note}\n{}", e.message))
}

/// A claim of `path` refused: cryptsetup's words for each step (its exclusive open of the
/// data device, exit 5 for a run; exit 1 otherwise).
fn claim_refused(path: &str, refusal: ClaimRefusal, in_use: bool) -> CliError {
    let excl = format!("Failed to open {path} in exclusive mode (already mapped or mounted).");
    match (refusal, in_use) {
        (ClaimRefusal::Run, _) => CliError::busy(excl),
        (ClaimRefusal::MovedSegment, true) => CliError::invalid(format!(
            "{excl}\nFailed to initialize LUKS2 reencryption in metadata."
        )),
        (ClaimRefusal::Legacy, true) => {
            CliError::invalid(format!("Cannot exclusively open {path}, device in use."))
        }
        (_, false) => CliError::invalid(format!("Cannot open device {path}.")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::errors::ExitClass;

    #[test]
    fn each_refusal_has_cryptsetups_words_and_exit_code() {
        let run = claim_refused("/dev/x", ClaimRefusal::Run, true);
        assert_eq!(run.class.exit_code(), 5);
        assert_eq!(
            run.message,
            "Failed to open /dev/x in exclusive mode (already mapped or mounted)."
        );
        let moved = claim_refused("/dev/x", ClaimRefusal::MovedSegment, true);
        assert_eq!(moved.class.exit_code(), 1);
        assert_eq!(
            moved.message,
            "Failed to open /dev/x in exclusive mode (already mapped or mounted).\n\
             Failed to initialize LUKS2 reencryption in metadata."
        );
        let legacy = claim_refused("/dev/x", ClaimRefusal::Legacy, true);
        assert_eq!(legacy.class.exit_code(), 1);
        assert_eq!(
            legacy.message,
            "Cannot exclusively open /dev/x, device in use."
        );
        let gone = claim_refused("/dev/x", ClaimRefusal::Legacy, false);
        assert_eq!(gone.message, "Cannot open device /dev/x.");
    }

    const FAILED: &str = "Failed to initialize LUKS2 reencryption in metadata.";

    #[test]
    fn init_failure_follows_its_reason_once() {
        let e = init_failed(CliError::new(
            ExitClass::Invalid,
            "Unsupported resilience mode x",
        ));
        assert_eq!(
            e.message,
            format!("Unsupported resilience mode x\n{FAILED}")
        );
        assert_eq!(
            init_failed(e).message,
            format!("Unsupported resilience mode x\n{FAILED}")
        );
    }

    #[test]
    fn the_backup_note_comes_before_the_reason() {
        let e = CliError::from(ReencryptError::InitFailedWithBackup {
            file: "h.img".into(),
            source: Box::new(ReencryptError::InitFailed),
        });
        assert_eq!(
            e.message,
            format!("Reencryption initialization failed. Header backup is available in h.img.\n{FAILED}")
        );
        let e = with_backup_note("h.img", CliError::new(ExitClass::Invalid, ""));
        assert_eq!(
            e.message,
            "Reencryption initialization failed. Header backup is available in h.img."
        );
    }

    #[test]
    fn init_failure_without_a_reason_is_one_line() {
        let e = init_failed(CliError::new(ExitClass::Invalid, ""));
        assert_eq!(e.message, FAILED);
    }
}
