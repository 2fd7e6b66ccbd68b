//! `luksFormat`.

use super::{need_args, pbkdf_options};
use crate::args::{parse_size, Opts};
use crate::errors::{CliError, Result};
use crate::input::{self, KeySource};
use lukskit_volume::format::{format, FormatParams, FormatType};
use lukskit_volume::VolumeError;

/// cryptsetup's default LUKS cipher.
pub const DEFAULT_CIPHER: &str = "aes-xts-plain64";

/// `luksFormat <device> [<key file>]`.
pub fn luks_format(o: &Opts, args: &[String]) -> Result<()> {
    need_args(args, 1, 2, "<device> [<new key file>]")?;
    let device = &args[0];
    let kind = match o.r#type.as_deref() {
        None | Some("luks2") | Some("luks") => FormatType::Luks2,
        Some("luks1") => FormatType::Luks1,
        Some(t) => {
            return Err(CliError::invalid(format!(
                "Unknown or unsupported LUKS type {t} for luksFormat."
            )))
        }
    };
    if kind == FormatType::Luks1
        && (o.luks2_metadata_size.is_some() || o.luks2_keyslots_size.is_some())
    {
        return Err(CliError::invalid(
            "Unsupported LUKS2 metadata size options.",
        ));
    }
    let size = |s: &Option<String>, what: &str| -> Result<Option<u64>> {
        match s {
            None => Ok(None),
            Some(v) => parse_size(v)
                .map(Some)
                .ok_or_else(|| CliError::invalid(format!("Invalid {what} specification."))),
        }
    };
    let cipher = o.cipher.clone().unwrap_or_else(|| DEFAULT_CIPHER.into());
    let key_size_bits = super::volume_key::luks_key_bits(o.key_size);
    let volume_key = match &o.volume_key_file {
        Some(p) => Some(super::volume_key::read_volume_key_file(
            p,
            super::volume_key::format_key_bytes(&cipher, key_size_bits)?,
        )?),
        None => None,
    };
    let offset_sectors = super::align::payload_offset(o, kind, &cipher, key_size_bits)?;
    let mut params = FormatParams {
        kind,
        device: device.clone(),
        header: o.header.clone(),
        cipher,
        key_size_bits,
        sector_size: o.sector_size,
        offset_sectors,
        alignment_sectors: super::align::luks2_alignment(o, kind),
        label: o.label.clone(),
        subsystem: o.subsystem.clone(),
        uuid: o.uuid.clone(),
        metadata_size: size(&o.luks2_metadata_size, "metadata size")?,
        keyslots_size: size(&o.luks2_keyslots_size, "keyslots size")?,
        key_slot: o.key_slot,
        pbkdf: pbkdf_options(o),
        volume_key,
    };
    let target = o.header.as_deref().unwrap_or(device);
    // Fail before any question when a mapping or a mount holds the device (format claims it
    // again, for the whole operation).
    match lukskit_volume::format::claim_devices(&params) {
        Ok(claims) => drop(claims),
        // cryptsetup adds why it gives up on a detached header it cannot use.
        Err(e @ VolumeError::NotCompatible { .. })
            if o.header.is_some()
                && matches!(&e, VolumeError::NotCompatible { path } if Some(path.as_str()) == o.header.as_deref()) =>
        {
            let mut err = crate::errors::volume(&e);
            err.message = format!("{}\nCannot use {target} as on-disk header.", err.message);
            return Err(err);
        }
        Err(e) => return Err(e.into()),
    }
    if !o.batch_mode {
        if let Some(kind) = super::signature::detect(target) {
            // cryptsetup prints this warning on standard output.
            println!("WARNING: Device {target} already contains a '{kind}' superblock signature.");
        }
    }
    input::confirm(
        &format!("This will overwrite data on {target} irrevocably."),
        o.batch_mode,
    )?;
    let src = match args.get(1).or(o.key_file.as_ref()) {
        Some(p) => KeySource::File {
            path: p.clone(),
            offset: o.keyfile_offset.unwrap_or(0),
            size: o.keyfile_size,
        },
        None => KeySource::prompt_limited(o.keyfile_offset, o.keyfile_size),
    };
    if o.verify_passphrase && !input::interactive() {
        eprintln!("Can't do passphrase verification on non-tty inputs.");
    }
    let verify = o.verify_passphrase || !o.batch_mode;
    let pass = input::get_secret(&src, &format!("Enter passphrase for {target}: "), verify)?;
    super::luks1_pbkdf_fallback(&mut params);
    if let Some(size) = lukskit_volume::format::small_keyslots_area(&params) {
        // cryptsetup prints this on standard output, -q or not, before it adds the keyslot.
        println!(
            "WARNING: keyslots area ({size} bytes) is very small, available LUKS2 keyslot \
             count is very limited."
        );
    }
    let out = format(&params, pass.as_bytes())?;
    if let Some(w) = out.warning {
        eprintln!("{}", crate::errors::format_warning(&w));
    }
    if o.verbose {
        println!("Key slot {} created.", out.keyslot);
    }
    Ok(())
}
