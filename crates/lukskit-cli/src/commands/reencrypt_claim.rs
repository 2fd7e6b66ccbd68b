//! Exclusive use of the data device for an offline re-encryption (see
//! [`lukskit_reencrypt::claim`]), with cryptsetup's refusals (`crate::reencrypt_messages`).

use crate::errors::Result;
use lukskit_volume::claim::Claim;

pub(super) use lukskit_reencrypt::ClaimRefusal as Refusal;

/// Claim `path` for a re-encryption; refused in cryptsetup's words for `refusal`.
pub(super) fn claim(path: &str, refusal: Refusal) -> Result<Claim> {
    Ok(lukskit_reencrypt::claim::claim(path, refusal)?)
}
