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
