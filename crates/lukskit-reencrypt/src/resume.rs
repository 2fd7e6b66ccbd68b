//! Whether a request may go on with the re-encryption in progress (cryptsetup's
//! `reencrypt_verify_and_update_params`).

use crate::{choice, ReencryptError, ReencryptRequest, ResilienceName, Result};
use lukskit_format::luks2::Luks2Header;
use lukskit_volume::reencrypt::{Context, Mode, Resilience};

/// The mode must be the one in progress; a data shift cannot change to anything else, nor
/// anything else to a data shift; a decryption with a data shift (`datashift-checksum`/
/// `-journal`) takes `checksum`/`journal` or those, nothing else. A header whose
/// re-encryption metadata cannot be read is left to the run to refuse.
pub fn check_resume_params(req: &ReencryptRequest, hdr: &Luks2Header) -> Result<()> {
    let Ok(c) = Context::load(hdr) else {
        return Ok(());
    };
    if req.encrypts() && c.mode != Mode::Encrypt {
        return Err(ReencryptError::NotInEncryption);
    }
    if req.decrypts() && c.mode != Mode::Decrypt {
        return Err(ReencryptError::NotInDecryption);
    }
    let Some(want) = &req.resilience else {
        return Ok(());
    };
    let shifting = matches!(c.resilience, Resilience::Datashift { .. });
    // `datashift` alone, or `datashift-checksum`/`-journal` (a decryption moving the data).
    let plain_shift = shifting && c.moved_protection.is_none();
    let asks_shift = *want == ResilienceName::Datashift;
    if plain_shift && !asks_shift {
        return Err(ReencryptError::DatashiftInProgress);
    }
    if !plain_shift && asks_shift {
        return Err(ReencryptError::ResilienceNotApplicable);
    }
    if shifting && !plain_shift {
        // The moved segment's protection may change (`decrypt_verify_and_set_params`).
        return choice::moved_protection(req).map(|_| ());
    }
    if want.is_datashift_variant() {
        return Err(ReencryptError::ResilienceNotApplicable);
    }
    Ok(())
}
