//! The volume keys a LUKS2 re-encryption needs, and the metadata digest's data over them.

use super::context::Context;
use super::verify;
use crate::error::{ReencryptError, Result};
use lukskit_crypto::SecretBuf;
use lukskit_format::luks2::Luks2Header;

/// The volume keys a re-encryption needs.
#[derive(Debug, Default)]
pub struct Keys {
    /// Key of the old layout (digest of backup-previous).
    pub old: Option<SecretBuf>,
    /// Key of the new layout (digest of backup-final).
    pub new: Option<SecretBuf>,
}

/// The data the metadata digest of a re-encryption covers (cryptsetup's
/// `reencrypt_verification_data`): the header's re-encryption state and the keys it needs.
pub(super) fn verification(hdr: &Luks2Header, c: &Context, keys: &Keys) -> Result<SecretBuf> {
    let old = if c.digest_old.is_some() {
        Some(
            keys.old
                .as_ref()
                .ok_or(ReencryptError::KeysMissing)?
                .as_bytes(),
        )
    } else {
        None
    };
    let new = if c.digest_new.is_some() && c.digest_new != c.digest_old {
        Some(
            keys.new
                .as_ref()
                .ok_or(ReencryptError::KeysMissing)?
                .as_bytes(),
        )
    } else {
        None
    };
    verify::verification_data(hdr, c.keyslot, c.version, old, new)
}
