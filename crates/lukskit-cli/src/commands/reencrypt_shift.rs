//! `reencrypt --encrypt --reduce-device-size SIZE <device>` without `--header`: encryption
//! in place with the header in space taken from the device, as cryptsetup 2.6.1's
//! `encrypt_luks2_init` does it: a LUKS2 header with data offset `SIZE/2` is formatted into
//! the temporary file `LUKS2-temp-<uuid>.new` (current directory), the re-encryption is
//! initialized in it (resilience `datashift`, the first `SIZE/2` bytes of plaintext copied to
//! the free tail of the device), the file is restored over the head of the device and
//! removed. The last `SIZE` bytes of the device must be unused (shrink the file system
//! first).

use super::existing_key_source;
use super::reencrypt_claim::{self, Refusal};
use crate::args::Opts;
use crate::errors::{CliError, Result};
use lukskit_reencrypt::{shift, ReencryptError};
use lukskit_volume::claim::Claim;
use lukskit_volume::reencrypt;

/// Whether the command line asks for an encryption with a data shift (`--encrypt
/// --reduce-device-size` without `--header`).
pub fn wanted(o: &Opts) -> bool {
    o.given.has("encrypt") && o.header.is_none() && o.given.has("reduce-device-size")
}

/// The resilience requested with a data shift: cryptsetup replaces `checksum`, `journal`
/// and `none` by `datashift` for this operation, and refuses the `datashift-*` types.
fn check_resilience(o: &Opts) -> Result<()> {
    let req = crate::resolve::reencrypt(o);
    Ok(lukskit_reencrypt::choice::check_shift_resilience(&req)?)
}

/// Initialize the encryption with a data shift of `device`; returns the new volume key and
/// the device's claim (taken before anything is written: the first segment moves now), to
/// be held through the run.
pub fn init(o: &Opts, device: &str) -> Result<(reencrypt::Keys, Claim)> {
    check_resilience(o)?;
    let mut reduce = o
        .given
        .value("reduce-device-size")
        .and_then(crate::args::parse_device_size)
        .ok_or_else(|| {
            CliError::invalid("Invalid size specification in parameter --reduce-device-size.")
        })?;
    // `--offset` (sectors) must be at most half the reduction; a smaller one halves it.
    if let Some(off) = o.offset.filter(|o| *o != 0) {
        if off > reduce / 1024 {
            return Err(CliError::invalid(
                "Requested data offset must be less than or equal to half of \
                 --reduce-device-size parameter.",
            ));
        }
        if off < reduce / 1024 {
            reduce = off * 1024;
            println!(
                "Adjusting --reduce-device-size value to twice the --offset {} (sectors).",
                off * 2
            );
        }
    }
    let shift = reduce / 2;
    if shift == 0 {
        return Err(ReencryptError::EncryptWithoutHeader.into());
    }
    let uuid = match &o.uuid {
        Some(u) => uuid::Uuid::parse_str(u)
            .map_err(|_| CliError::invalid("Wrong LUKS UUID format provided."))?
            .hyphenated()
            .to_string(),
        None => uuid::Uuid::new_v4().hyphenated().to_string(),
    };
    // An encryption sector size the file system on the device cannot take: refused before
    // anything is written, as by cryptsetup.
    if let Some(ss) = o.sector_size {
        super::signature::check_sector_size_fits(device, ss)?;
    }
    let claim = reencrypt_claim::claim(device, Refusal::MovedSegment)?;
    let temp = format!("LUKS2-temp-{uuid}.new");
    match std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&temp)
    {
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            return Err(CliError::invalid(format!(
                "Temporary header file {temp} already exists. Aborting."
            )))
        }
        Err(_) => {
            return Err(CliError::invalid(format!(
                "Cannot create temporary header file {temp}."
            )))
        }
    }
    let r = init_with_temp(o, device, &temp, &uuid, shift, &claim);
    // The temporary header goes in any case, as cryptsetup's does (on a failure after the
    // restore began it is the only complete copy: keep it then).
    match &r {
        Err((_, true)) => {
            eprintln!("Failed to place new header at head of device {device}.");
        }
        _ => {
            let _ = std::fs::remove_file(&temp);
        }
    }
    r.map(|keys| (keys, claim)).map_err(|(e, _)| e)
}

/// The body of [`init`]; the flag of an error says whether the temporary header must be
/// kept (the restore over the head of the device had started).
fn init_with_temp(
    o: &Opts,
    device: &str,
    temp: &str,
    uuid: &str,
    shift: u64,
    claim: &Claim,
) -> std::result::Result<reencrypt::Keys, (CliError, bool)> {
    let plain = |e: CliError| (e, false);
    // cryptsetup's luksFormat of the temporary header file it has just made.
    super::format::confirm_overwrite(o, temp, false).map_err(plain)?;
    let src = existing_key_source(o, None);
    let pass = super::format::new_passphrase(o, &src, temp).map_err(plain)?;
    let params = lukskit_volume::format::FormatRequest {
        header: Some(temp.to_string()),
        cipher: crate::resolve::data_cipher(o, false).map_err(plain)?,
        key_size_bits: o.key_size,
        sector_size: Some(o.sector_size.unwrap_or(512)),
        offset_sectors: Some(shift / 512),
        label: o.label.clone(),
        subsystem: o.subsystem.clone(),
        uuid: Some(uuid.to_string()),
        // cryptsetup: the keyslots area fills the space up to the data offset (at most
        // 128 MiB).
        keyslots_size: Some(shift.saturating_sub(2 * 16384).min(128 << 20)),
        key_slot: o.key_slot,
        pbkdf: crate::resolve::pbkdf(o),
        ..lukskit_volume::format::FormatRequest::new(lukskit_format::VolumeType::Luks2, device)
    };
    super::format::warn_small_keyslots_area(&params);
    let outcome = lukskit_volume::format::format_claimed(
        &params,
        std::slice::from_ref(claim),
        pass.as_bytes(),
    )
    .map_err(|e| plain(e.into()))?;
    if let Some(w) = outcome.warning.as_ref() {
        eprintln!("{}", crate::errors::format_warning(w));
    }
    let pbkdf = crate::resolve::pbkdf(o);
    let s = shift::EncryptShift {
        device,
        temp,
        shift,
        pbkdf: &pbkdf,
    };
    shift::init_encrypt(&s, pass.as_bytes()).map_err(|e| {
        // The restore over the head of the device had begun: the temporary header stays.
        let keep = matches!(e, ReencryptError::HeaderRestore(_));
        (CliError::from(e), keep)
    })
}
