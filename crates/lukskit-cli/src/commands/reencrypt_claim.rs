//! Exclusive use of the data device for an offline re-encryption.
//!
//! cryptsetup 2.6.1 opens the data device of every offline run with `O_EXCL`
//! (`device_open_excl`), `--force-offline-reencrypt` or not, and refuses while a mapping or a
//! mount holds it: a run under a live mapping would leave the mapping with the old key and
//! the file system on it destroyed. lukskit claims the device the same way, and an image
//! file too (cryptsetup takes no claim on files): an image that a lukskit mapping serves, or
//! that a loop device in use is attached to, is refused alike.
//!
//! Unlike cryptsetup, which writes the re-encryption metadata first and refuses afterwards
//! (the header is left in re-encryption), lukskit claims the device before anything is
//! written: a refused run leaves header and data as they were. The claim is held until the
//! run ends.

use crate::errors::{CliError, Result};
use lukskit_volume::claim::{Claim, ClaimError};

/// Which of cryptsetup's refusals a device in use gets.
#[derive(Clone, Copy, Debug)]
pub(super) enum Refusal {
    /// A LUKS2 run (`reencrypt_load_by_passphrase`), also an encryption with a detached
    /// header: "Failed to open DEV in exclusive mode (already mapped or mounted)." (exit 5).
    Run,
    /// An encryption that moves the first segment at its initialization (`--encrypt
    /// --reduce-device-size` without `--header`): the same line, then "Failed to initialize
    /// LUKS2 reencryption in metadata." (exit 1).
    MovedSegment,
    /// The LUKS1 re-encryption, and a LUKS2 decryption that exports its header to a new
    /// file: "Cannot exclusively open DEV, device in use." (exit 1).
    Legacy,
}

/// Claim `path` (the data device) for an offline run, or refuse with cryptsetup's words.
pub(super) fn claim(path: &str, refusal: Refusal) -> Result<Claim> {
    match Claim::acquire_for_rewrite(path) {
        Ok(c) => Ok(c),
        Err(e) => Err(refused(path, refusal, &e)),
    }
}

fn refused(path: &str, refusal: Refusal, e: &ClaimError) -> CliError {
    let excl = format!("Failed to open {path} in exclusive mode (already mapped or mounted).");
    match (refusal, e) {
        // cryptsetup says this for any failure of the exclusive open of a run.
        (Refusal::Run, _) => CliError::busy(excl),
        (Refusal::MovedSegment, ClaimError::InUse) => CliError::invalid(format!(
            "{excl}\nFailed to initialize LUKS2 reencryption in metadata."
        )),
        (Refusal::Legacy, ClaimError::InUse) => {
            CliError::invalid(format!("Cannot exclusively open {path}, device in use."))
        }
        (_, _) => CliError::invalid(format!("Cannot open device {path}.")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_refusal_has_cryptsetups_words_and_exit_code() {
        let busy = ClaimError::InUse;
        let run = refused("/dev/x", Refusal::Run, &busy);
        assert_eq!(run.class.exit_code(), 5);
        assert_eq!(
            run.message,
            "Failed to open /dev/x in exclusive mode (already mapped or mounted)."
        );
        let moved = refused("/dev/x", Refusal::MovedSegment, &busy);
        assert_eq!(moved.class.exit_code(), 1);
        assert_eq!(
            moved.message,
            "Failed to open /dev/x in exclusive mode (already mapped or mounted).\n\
             Failed to initialize LUKS2 reencryption in metadata."
        );
        let legacy = refused("/dev/x", Refusal::Legacy, &busy);
        assert_eq!(legacy.class.exit_code(), 1);
        assert_eq!(
            legacy.message,
            "Cannot exclusively open /dev/x, device in use."
        );
    }

    #[test]
    fn a_claimed_image_is_refused_and_free_again_after() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("img");
        std::fs::write(&p, [0u8; 4096]).unwrap();
        let p = p.to_str().unwrap();
        let held = claim(p, Refusal::Run).unwrap();
        let e = claim(p, Refusal::Run).unwrap_err();
        assert_eq!(e.class.exit_code(), 5);
        drop(held);
        claim(p, Refusal::Run).expect("free once the first claim is gone");
    }
}
