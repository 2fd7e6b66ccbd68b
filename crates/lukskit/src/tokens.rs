//! Unlocking with the LUKS2 tokens lukskit runs without interaction: clevis (tang, tpm2, sss
//! pins), with the `tang` feature.

use crate::error::{Error, Result};
use lukskit_crypto::SecretBuf;

/// The keyslot and volume key the token `id` (or the first token that works) gives.
#[cfg(feature = "tang")]
pub(crate) fn unlock(
    vol: &lukskit_volume::Volume,
    id: Option<u32>,
) -> Result<(Option<u32>, SecretBuf)> {
    let Some(h) = vol.luks2() else {
        return Err(Error::NoTokenUnlocked);
    };
    let tokens = h.tokens().map_err(lukskit_volume::VolumeError::Format)?;
    for t in tokens.iter().filter(|t| id.is_none_or(|id| id == t.id)) {
        if t.kind != lukskit_format::luks2::TokenType::Clevis {
            continue;
        }
        let Ok(token) = lukskit_tang::ClevisToken::parse(&t.json) else {
            continue;
        };
        let Ok(passphrase) = token.unlock(&lukskit_tang::default_limits()) else {
            continue;
        };
        for &slot in &t.keyslots {
            if let Ok((slot, key)) = vol.unlock(passphrase.as_bytes(), Some(slot), false) {
                return Ok((Some(slot), key));
            }
        }
    }
    Err(Error::NoTokenUnlocked)
}

/// Without the `tang` feature no token kind can be run.
#[cfg(not(feature = "tang"))]
pub(crate) fn unlock(
    _vol: &lukskit_volume::Volume,
    _id: Option<u32>,
) -> Result<(Option<u32>, SecretBuf)> {
    Err(Error::FeatureDisabled { feature: "tang" })
}
