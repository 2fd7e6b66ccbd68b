//! BitLocker's `bitlkDump` (with `--dump-volume-key`), as cryptsetup 2.6.1's
//! `action_bitlkDump` and `bitlkDump_with_volume_key` (`open --type bitlk` / `bitlkOpen` go
//! through the generic open of the registry formats, `open_format.rs`). The secret is the
//! passphrase (a password, or the 48-digit recovery password) or the key file's contents (a
//! `.BEK` startup key, or a password in a file).

use super::{existing_key_source, need_args};
use crate::args::Opts;
use crate::errors::{CliError, ExitClass, Result};
use crate::input;
use lukskit_volume::formats::bitlk::{self, header::Metadata, keys};
use lukskit_volume::formats::Description;
use lukskit_volume::VolumeError;
use std::fmt::Write as _;

/// The CLI error of a BitLocker library error (cryptsetup's words, errors.rs).
fn error(e: VolumeError) -> CliError {
    CliError::from(e)
}

/// `bitlkDump DEVICE`.
pub fn dump(o: &Opts, args: &[String]) -> Result<()> {
    need_args(args, 1, 1, "<device>")?;
    let device = &args[0];
    if o.dump_volume_key {
        let md = bitlk::load(device).map_err(error)?;
        return dump_volume_key(o, device, &md);
    }
    let request_options = lukskit_volume::formats::FormatOptions::default();
    let request = lukskit_volume::formats::UnlockRequest {
        device,
        header: None,
        passphrase: None,
        key_files: &[],
        options: &request_options,
    };
    let d: Box<dyn Description> =
        lukskit_volume::formats::format_of(lukskit_format::VolumeType::Bitlk)
            .ok_or_else(|| CliError::invalid("BITLK is not available."))?
            .dump(&request)
            .map_err(error)?;
    print!("{d}");
    Ok(())
}

/// `bitlkDump --dump-volume-key`: the FVEK (no activation checks, as cryptsetup's
/// `crypt_volume_key_get`).
fn dump_volume_key(o: &Opts, device: &str, md: &Metadata) -> Result<()> {
    input::confirm_or(
        "The header dump with volume key is sensitive information\n\
         that allows access to encrypted partition without a passphrase.\n\
         This dump should be stored encrypted in a safe place.",
        o.batch_mode,
        CliError::permission(""),
    )?;
    let src = existing_key_source(o, None);
    let secret = input::get_secret(&src, &format!("Enter passphrase for {device}: "), false)?;
    let vk = keys::volume_key(md, secret.as_bytes()).map_err(|f| {
        // The library's lines, its "Cannot retrieve", then the tool's EPERM line.
        let mut messages = f.messages;
        messages.push("Cannot retrieve volume key for BITLK device.".into());
        if f.errno == keys::Errno::Perm {
            messages.push("No key available with this passphrase.".into());
        }
        let class = match f.errno.exit_code() {
            2 => ExitClass::Permission,
            3 => ExitClass::NoMemory,
            _ => ExitClass::Invalid,
        };
        CliError::new(class, messages.join("\n"))
    })?;
    if let Some(path) = &o.volume_key_file {
        std::fs::write(path, vk.as_bytes()).map_err(|e| CliError::io("write", path, &e))?;
    }
    let mut out = String::new();
    let _ = writeln!(out, "BITLK header information for {device}");
    let _ = writeln!(out, "Cipher name:   \t{}", md.cipher.name());
    let _ = writeln!(out, "Cipher mode:   \t{}", md.cipher.mode);
    let _ = writeln!(out, "UUID:          \t{}", md.guid);
    let _ = writeln!(out, "MK bits:       \t{}", vk.len() * 8);
    if let Some(path) = &o.volume_key_file {
        let _ = writeln!(out, "Key stored to file {path}.");
    } else {
        out.push_str("MK dump:\t");
        for (i, b) in vk.as_bytes().iter().enumerate() {
            if i > 0 && i % 16 == 0 {
                out.push_str("\n\t\t");
            }
            let _ = write!(out, "{b:02x} ");
        }
        out.push('\n');
    }
    print!("{out}");
    Ok(())
}
