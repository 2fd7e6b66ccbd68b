//! Whether a re-encryption may start or go on with the header as it is, as cryptsetup
//! 2.6.1's `reencrypt` decides it before it asks for any passphrase: the state of the header
//! ([`lukskit_volume::reencrypt::Status`]) against the phase, mode and options asked for.

use crate::{resume, Phase, ReencryptError, ReencryptRequest, Result};
use lukskit_format::luks2::Luks2Header;
use lukskit_volume::reencrypt::{self, Status};

/// The re-encryption state of `hdr` when `req` may go on with it; cryptsetup's refusal
/// otherwise. `moved`: the initialization was done already by one that moves the data (an
/// encryption making room for its header, a decryption exporting it), whose header is in
/// re-encryption by now.
pub fn check(hdr: &Luks2Header, req: &ReencryptRequest, moved: bool) -> Result<Status> {
    // A LUKS2 header marked by the legacy (2.0) offline re-encryption.
    if hdr.requirements().iter().any(|r| r == "offline-reencrypt") {
        return Err(ReencryptError::LegacyReencryption);
    }
    let st = reencrypt::status(hdr)?;
    if st != Status::None && req.phase == Phase::InitOnly && !moved {
        return Err(ReencryptError::AlreadyInitialized);
    }
    if st != Status::None && !moved {
        resume::check_resume_params(req, hdr)?;
    }
    if st == Status::None && req.phase == Phase::ResumeOnly {
        return Err(ReencryptError::NotInProgress);
    }
    // A decryption not started yet needs --header (cryptsetup 2.6.1's `action_decrypt` asks
    // before it looks for an active mapping): the header goes out to that file, or is there.
    let new_decryption = st == Status::None && req.decrypts() && !moved;
    if new_decryption && req.header.is_none() {
        return Err(ReencryptError::DecryptNeedsHeader);
    }
    // `--reduce-device-size` with `--decrypt`: cryptsetup 2.6.1 ignores it where the header
    // moves out to the new FILE (the data moves by the data offset: the same bytes as
    // without it), and fails with these words on a detached header, after it has written
    // the start of a re-encryption that cannot run into the header; lukskit leaves the header
    // and the device as they were.
    if new_decryption && req.reduce_device_size.is_some() {
        return Err(ReencryptError::DecryptShiftUnsupported);
    }
    Ok(st)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_images::{fresh, prepared, MIB};
    use lukskit_volume::device::Access;
    use lukskit_volume::reencrypt::Mode;
    use lukskit_volume::Volume;

    fn req(mode: Option<Mode>, phase: Phase) -> ReencryptRequest {
        ReencryptRequest {
            mode,
            phase,
            ..ReencryptRequest::default()
        }
    }

    fn image(dir: &tempfile::TempDir, make: fn(&str)) -> Volume {
        let path = dir.path().join("img");
        let path = path.to_str().unwrap();
        make(path);
        Volume::load(path, None, Access::Read).unwrap()
    }

    #[test]
    fn a_header_not_in_reencryption_starts_unless_cryptsetup_refuses() {
        let dir = tempfile::tempdir().unwrap();
        let vol = image(&dir, fresh);
        let hdr = vol.luks2().unwrap();
        for phase in [Phase::Full, Phase::InitOnly] {
            assert_eq!(check(hdr, &req(None, phase), false).unwrap(), Status::None);
        }
        assert!(matches!(
            check(hdr, &req(None, Phase::ResumeOnly), false),
            Err(ReencryptError::NotInProgress)
        ));
        // A decryption needs --header, and takes no --reduce-device-size with it.
        let decrypt = req(Some(Mode::Decrypt), Phase::Full);
        assert!(matches!(
            check(hdr, &decrypt, false),
            Err(ReencryptError::DecryptNeedsHeader)
        ));
        let with_header = ReencryptRequest {
            header: Some("header.img".into()),
            ..decrypt.clone()
        };
        assert_eq!(check(hdr, &with_header, false).unwrap(), Status::None);
        let shifted = ReencryptRequest {
            reduce_device_size: Some(MIB),
            ..with_header
        };
        assert!(matches!(
            check(hdr, &shifted, false),
            Err(ReencryptError::DecryptShiftUnsupported)
        ));
        // One that moved its header out was initialized already: not refused again.
        assert_eq!(check(hdr, &decrypt, true).unwrap(), Status::None);
    }

    #[test]
    fn a_header_in_reencryption_resumes_but_is_not_initialized_again() {
        let dir = tempfile::tempdir().unwrap();
        let vol = image(&dir, prepared);
        let hdr = vol.luks2().unwrap();
        let st = check(hdr, &req(None, Phase::Full), false).unwrap();
        assert_ne!(st, Status::None);
        assert_eq!(
            check(hdr, &req(None, Phase::ResumeOnly), false).unwrap(),
            st
        );
        assert!(matches!(
            check(hdr, &req(None, Phase::InitOnly), false),
            Err(ReencryptError::AlreadyInitialized)
        ));
        // Initialized just now by an encryption or decryption that moves the data.
        assert_eq!(check(hdr, &req(None, Phase::InitOnly), true).unwrap(), st);
    }
}
