//! FileVault 2: `fvault2Dump` and `open --test-passphrase --type fvault2`, through the
//! format seam ([`lukskit_volume::formats::fvault2`]), with cryptsetup 2.6.1's words and exit
//! codes (src/cryptsetup.c `action_fvault2Dump`, `action_open_fvault2`).

use super::{existing_key_source, need_args, tries};
use crate::args::Opts;
use crate::errors::{CliError, Result};
use crate::input;
use lukskit_format::VolumeType;
use lukskit_volume::formats::{
    format_of, FormatOptions, OtherFormatError, UnlockRequest, Unlocked,
};
use lukskit_volume::VolumeError;

fn format() -> Result<&'static dyn lukskit_volume::formats::OnDiskFormat> {
    format_of(VolumeType::Fvault2)
        .ok_or_else(|| CliError::invalid("Device type fvault2 is not supported."))
}

/// Unlock with the passphrase (or key file) as cryptsetup: a terminal gets `--tries` prompts,
/// each wrong one "No key available with this passphrase." (exit 2 at the end).
/// `wrong` is said before each wrong passphrase's message.
pub fn unlock(o: &Opts, device: &str, wrong: Option<&str>) -> Result<Unlocked> {
    let f = format()?;
    let options = FormatOptions::default();
    let src = existing_key_source(o, None);
    let mut last = None;
    for _ in 0..tries(o, &src) {
        let pass = input::get_secret(&src, &format!("Enter passphrase for {device}: "), false)?;
        let request = UnlockRequest {
            device,
            header: None,
            passphrase: Some(&pass),
            key_files: &[],
            options: &options,
        };
        match f.unlock(&request) {
            Ok(u) => return Ok(u),
            Err(VolumeError::OtherFormat(OtherFormatError::NoKey)) => {
                if let Some(w) = wrong {
                    eprintln!("{w}");
                }
                let e = CliError::wrong_passphrase();
                eprintln!("{}", e.message);
                last = Some(e);
            }
            Err(e) => return Err(e.into()),
        }
    }
    Err(last.unwrap_or_else(CliError::wrong_passphrase).silenced())
}

/// Check that the metadata reads (before anything is asked), as cryptsetup's `crypt_load`.
fn load_check(device: &str) -> Result<Box<dyn lukskit_volume::formats::Description>> {
    let options = FormatOptions::default();
    let request = UnlockRequest {
        device,
        header: None,
        passphrase: None,
        key_files: &[],
        options: &options,
    };
    format()?.dump(&request).map_err(CliError::from)
}

/// `fvault2Dump DEVICE` (`--dump-volume-key` adds the volume key, after a confirmation and
/// the passphrase; `--volume-key-file` writes it there too).
pub fn dump(o: &Opts, args: &[String]) -> Result<()> {
    need_args(args, 1, 1, "<device>")?;
    let device = &args[0];
    let text = load_check(device)?;
    if !o.dump_volume_key {
        print!("{text}");
        return Ok(());
    }
    // Not answered YES: cryptsetup ends without a word, exit code 2.
    input::confirm_or(
        "The header dump with volume key is sensitive information\nthat allows access to encrypted partition without a passphrase.\nThis dump should be stored encrypted in a safe place.",
        o.batch_mode,
        CliError::permission(""),
    )?;
    let unlocked = unlock(
        o,
        device,
        Some("Cannot retrieve volume key for FVAULT2 device."),
    )?;
    if o.verbose {
        println!("Key slot 0 unlocked.");
    }
    if let Some(path) = &o.volume_key_file {
        super::header::write_key_file(path, unlocked.volume_key.as_bytes())?;
    }
    print!("{text}");
    let hex: String = unlocked
        .volume_key
        .as_bytes()
        .iter()
        .map(|b| format!("{b:02x} "))
        .collect();
    println!("Volume key:       \t{hex}");
    Ok(())
}
