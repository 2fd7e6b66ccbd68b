//! Which cipher specifications can encrypt keyslot material.
//!
//! cryptsetup encrypts and decrypts keyslot areas in userspace through its crypto backend
//! (`crypt_storage`), whose IV generators are named exactly: `null`, `plain`, `plain64`,
//! `plain64be`, `benbi`, `eboiv` and `essiv:HASH`. IV options on any other generator
//! (`plain64:sha256`) are refused there, although the kernel's dm-crypt ignores them on data;
//! lukskit refuses them for keyslots too, so both tools accept the same keyslots.

use crate::error::{KeyslotError, Result};
use lukskit_crypto::spec::CipherSpec;

/// Refuse a keyslot cipher that cryptsetup's keyslot code cannot use.
/// `slot` is the LUKS2 keyslot, `None` for a LUKS1 header's cipher.
pub(crate) fn check(spec: &CipherSpec, slot: Option<u32>) -> Result<()> {
    if spec.ivopts.is_some() && spec.ivmode.as_deref() != Some("essiv") {
        return Err(KeyslotError::IvOptions { slot }.into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_essiv_takes_options() {
        for (s, ok) in [
            ("aes-xts-plain64", true),
            ("aes-cbc-essiv:sha256", true),
            ("aes-xts-plain64:sha256", false),
            ("aes-cbc-benbi:sha1", false),
        ] {
            let spec = CipherSpec::parse(s).unwrap();
            assert_eq!(check(&spec, Some(0)).is_ok(), ok, "{s}");
        }
    }
}
