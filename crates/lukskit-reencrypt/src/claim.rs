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

use crate::{ClaimRefusal, ReencryptError, Result};
use lukskit_volume::claim::{Claim, ClaimError};

/// Claim `path` for a re-encryption (see the module); refused as `refusal` says when in use
/// or when it cannot be opened.
pub fn claim(path: &str, refusal: ClaimRefusal) -> Result<Claim> {
    Claim::acquire_for_rewrite(path).map_err(|e| ReencryptError::Claim {
        path: path.to_string(),
        refusal,
        in_use: matches!(e, ClaimError::InUse),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_claimed_image_is_refused_and_free_again_after() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("img");
        std::fs::write(&p, [0u8; 4096]).unwrap();
        let p = p.to_str().unwrap();
        let held = claim(p, ClaimRefusal::Run).unwrap();
        let e = claim(p, ClaimRefusal::Run).unwrap_err();
        assert!(matches!(
            e,
            ReencryptError::Claim {
                in_use: true,
                refusal: ClaimRefusal::Run,
                ..
            }
        ));
        drop(held);
        claim(p, ClaimRefusal::Run).expect("free once the first claim is gone");
    }
}
