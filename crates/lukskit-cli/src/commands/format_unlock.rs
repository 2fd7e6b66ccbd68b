//! Unlocking the formats behind the seam that have no LUKS keyslots (TrueCrypt/VeraCrypt,
//! BitLocker, FileVault 2, loop-AES) through the registry ([`lukskit_volume::formats`]): the
//! secrets read as cryptsetup 2.6.1 reads them for each type, asked again after a wrong one
//! (`--tries`), and cryptsetup's words when none fits, as a
//! [`crate::resolve::UnlockRequest`] asks. Shared by `open` and its
//! `--test-passphrase` ([`super::open_format`]), `tcryptDump` and `image`.

use super::tcrypt_secrets;
use crate::errors::{CliError, Result};
use crate::input::{self, KeySource};
use lukskit_crypto::SecretBuf;
use lukskit_format::VolumeType;
use lukskit_volume::formats::{self, OnDiskFormat, OtherFormatError, UnlockRequest};
use lukskit_volume::VolumeError;

/// The secrets of one attempt: a passphrase (or password) and the key files' contents.
struct Secrets {
    passphrase: Option<SecretBuf>,
    key_files: Vec<SecretBuf>,
    /// TCRYPT: the PIM typed at `--veracrypt-query-pim`'s prompt.
    pim: Option<u32>,
}

/// Read the secrets for one unlock attempt of a volume of type `t` on `device`, as
/// cryptsetup's `action_open_*` of that type does; for a dump (`for_dump`), only what the
/// type's `*Dump` asks for (TCRYPT's passphrase: its header is encrypted).
fn read_secrets(
    u: &crate::resolve::UnlockRequest,
    t: VolumeType,
    device: &str,
    src: &KeySource,
    for_dump: bool,
) -> Result<Secrets> {
    // cryptsetup names the metadata device (crypt_get_device_name: the --header if given).
    let prompt = format!(
        "Enter passphrase for {}: ",
        u.header.as_deref().unwrap_or(device)
    );
    if for_dump && t != VolumeType::Tcrypt {
        return Ok(Secrets {
            passphrase: None,
            key_files: Vec::new(),
            pim: None,
        });
    }
    Ok(match t {
        // TrueCrypt's header is encrypted: the passphrase is always asked (it may be empty),
        // and every -d is a key file of TrueCrypt's key-file pool.
        VolumeType::Tcrypt => {
            let s = tcrypt_secrets::secrets(u, &prompt)?;
            Secrets {
                passphrase: Some(s.passphrase),
                key_files: s.key_files,
                pim: s.pim,
            }
        }
        // loop-AES keys come from the key file alone.
        VolumeType::Loopaes => {
            let KeySource::File { path, offset, size } = src else {
                return Err(CliError::invalid("Option --key-file is required."));
            };
            Secrets {
                passphrase: None,
                key_files: vec![input::read_keyfile(path, *offset, *size)?],
                pim: None,
            }
        }
        // BitLocker and FileVault 2: a password, recovery password or startup key, from the
        // key file or the prompt.
        _ => Secrets {
            passphrase: Some(input::get_secret(src, &prompt, false)?),
            key_files: Vec::new(),
            pim: None,
        },
    })
}

/// Run `step` (an unlock or a dump) of the format of type `t` on `device` with the secrets
/// it needs, asking again (`--tries`) after a wrong secret typed on a terminal (for TCRYPT
/// also after one that is too long: cryptsetup's `tcrypt_load` retries on -EPERM and
/// -ERANGE, for `tcryptOpen` and `tcryptDump` alike).
pub(super) fn attempt<T>(
    u: &crate::resolve::UnlockRequest,
    t: VolumeType,
    device: &str,
    for_dump: bool,
    step: impl Fn(&dyn OnDiskFormat, &UnlockRequest<'_>) -> lukskit_volume::Result<T>,
) -> Result<T> {
    let Some(format) = formats::format_of(t) else {
        return Err(CliError::invalid(format!(
            "Device type {} is not supported.",
            t.name().to_ascii_lowercase()
        )));
    };
    let options = &u.formats;
    let src = &u.key_source;
    let attempts = if t == VolumeType::Tcrypt {
        u.attempts(&KeySource::Prompt)
    } else {
        u.attempts(src)
    };
    // Formats whose metadata is readable without a secret are loaded before one is asked
    // for, as cryptsetup's crypt_load comes first: a device of another kind says so rather
    // than waiting for a passphrase (or "Nothing to read on input.").
    if !for_dump && format.metadata_without_secret() {
        let request = UnlockRequest {
            device,
            header: u.header.as_deref(),
            passphrase: None,
            key_files: &[],
            options,
        };
        format.dump(&request).map_err(CliError::from)?;
    }
    let mut left = attempts;
    loop {
        let secrets = read_secrets(u, t, device, src, for_dump)?;
        let mut options = options.clone();
        if secrets.pim.is_some() {
            options.tcrypt.pim = secrets.pim;
        }
        let request = UnlockRequest {
            device,
            header: u.header.as_deref(),
            passphrase: secrets.passphrase.as_ref(),
            key_files: &secrets.key_files,
            options: &options,
        };
        match step(format, &request) {
            Ok(u) => return Ok(u),
            Err(e) => {
                let retry = match &e {
                    VolumeError::OtherFormat(OtherFormatError::NoKey) => true,
                    VolumeError::OtherFormat(OtherFormatError::PassphraseTooLong { .. }) => {
                        t == VolumeType::Tcrypt
                    }
                    _ => false,
                };
                let e = failure(t, e);
                left -= 1;
                if !retry || left == 0 {
                    return Err(e);
                }
                eprintln!("{}", e.message);
            }
        }
    }
}

/// What cryptsetup says when a step of a volume of type `t` fails with `e` (no key found
/// with the secret given: exit 2).
fn failure(t: VolumeType, e: VolumeError) -> CliError {
    match e {
        _ if t == VolumeType::Tcrypt => tcrypt_secrets::load_error(e),
        VolumeError::OtherFormat(OtherFormatError::NoKey) => CliError::wrong_passphrase(),
        e => e.into(),
    }
}
