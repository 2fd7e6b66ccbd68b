//! cryptsetup 2.7's kernel keyring options for `open` (cryptsetup 2.6.1 has neither):
//!
//! - `--link-vk-to-keyring KEYRING::KEY`: once a LUKS2 volume is active, its volume key is
//!   added to KEYRING (`@s`, `@u`, …, a serial, or a keyring's name, `%:NAME`) as the key KEY
//!   (`%user:NAME`, `%logon:NAME`, or NAME: a `user` key), replacing one of the same type and
//!   name there. As cryptsetup, nothing is linked by `--test-passphrase`, by a LUKS1 or plain
//!   volume, or with `--disable-keyring`.
//! - `--volume-key-keyring KEY`: the volume key is the payload of the key KEY (`%TYPE:NAME`,
//!   or NAME for a `user` key; it must be readable, so not `logon`), checked against the
//!   header's digest before anything is activated.

use crate::args::Opts;
use crate::errors::{CliError, Result};
use lukskit_crypto::SecretBuf;
use lukskit_dm::keyctl::{self, KeyName};

/// Where `--link-vk-to-keyring` puts the volume key.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct VkLink {
    keyring: i32,
    kind: String,
    description: String,
}

fn invalid() -> CliError {
    CliError::invalid("Invalid --link-vk-to-keyring value.")
}

/// Parse `--link-vk-to-keyring` as cryptsetup 2.7 does
/// (`parse_single_vk_and_keyring_description`, `crypt_set_keyring_to_link`) and find the
/// keyring it names. `None` without the option.
pub(crate) fn link_request(o: &Opts) -> Result<Option<VkLink>> {
    let Some(spec) = o.link_vk_to_keyring.as_deref() else {
        return Ok(None);
    };
    let (ring, key) = spec.split_once("::").ok_or_else(invalid)?;
    let (kind, description) = match key.strip_prefix('%') {
        Some(typed) => typed.split_once(':').ok_or_else(invalid)?,
        None => ("user", key),
    };
    if !matches!(kind, "user" | "logon") || description.is_empty() {
        return Err(invalid());
    }
    // A type given for the keyring is ignored: it is a keyring.
    let ring = match ring.strip_prefix('%') {
        Some(typed) => {
            if o.verbose {
                println!(
                    "Type specification in --link-vk-to-keyring keyring specification is ignored."
                );
            }
            typed.split_once(':').ok_or_else(invalid)?.1
        }
        None => ring,
    };
    let numbered = KeyName::parse(ring).is_some_and(|n| matches!(n, KeyName::Id(i) if i > 0));
    let name = if ring.starts_with('@') || numbered {
        ring.to_string()
    } else {
        format!("%:{ring}")
    };
    let not_found =
        || CliError::invalid(format!("Could not find keyring described by \"{name}\"."));
    let keyring = KeyName::parse(&name)
        .ok_or_else(not_found)?
        .resolve()
        .map_err(|_| not_found())?;
    Ok(Some(VkLink {
        keyring,
        kind: kind.into(),
        description: description.into(),
    }))
}

/// Add the volume key `vk` where `link` says; the new key's serial.
pub(crate) fn link(link: &VkLink, vk: &SecretBuf) -> Result<i32> {
    crate::debug::log(format_args!(
        "Linking volume key (type {}, name {}) to the specified keyring",
        link.kind, link.description
    ));
    keyctl::add(&link.kind, &link.description, vk.as_bytes(), link.keyring).map_err(|e| {
        crate::debug::log(format_args!("add_key failed: {e}."));
        CliError::invalid("Failed to link volume key in user defined keyring.")
    })
}

/// Undo [`link`] (the activation it was for failed), as cryptsetup does.
pub(crate) fn unlink(link: &VkLink, serial: i32) {
    if keyctl::unlink(serial, link.keyring).is_err() {
        eprintln!("Failed to unlink volume key from user specified keyring.");
    }
}

/// The volume key `--volume-key-keyring` names (cryptsetup's `parse_vk_description`: a
/// name without `%TYPE:` is a `user` key's).
pub(crate) fn volume_key(spec: &str) -> Result<SecretBuf> {
    let typed = if spec.starts_with('%') {
        spec.to_string()
    } else {
        format!("%user:{spec}")
    };
    let failed = || CliError::invalid("Failed to read volume key candidate from keyring.");
    let serial = KeyName::parse(&typed)
        .ok_or_else(failed)?
        .resolve()
        .map_err(|e| {
            crate::debug::log(format_args!("Looking up {typed}: {e}."));
            failed()
        })?;
    keyctl::read(serial).map_err(|e| {
        crate::debug::log(format_args!("Reading key {serial}: {e}."));
        failed()
    })
}
