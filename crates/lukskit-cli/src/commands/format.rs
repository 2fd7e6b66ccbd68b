//! `luksFormat`.

use super::need_args;
use crate::args::Opts;
use crate::errors::{CliError, Result};
use crate::input::{self, KeySource};
use crate::resolve;
use lukskit_format::VolumeType;
use lukskit_volume::format::{format, FormatRequest};
use lukskit_volume::VolumeError;

/// `luksFormat <device> [<key file>]`.
pub fn luks_format(o: &Opts, args: &[String]) -> Result<()> {
    need_args(args, 1, 2, "<device> [<new key file>]")?;
    let device = &args[0];
    let kind = match o.r#type.as_deref() {
        None | Some("luks2") | Some("luks") => VolumeType::Luks2,
        Some("luks1") => VolumeType::Luks1,
        Some(t) => {
            return Err(CliError::invalid(format!(
                "Unknown or unsupported LUKS type {t} for luksFormat."
            )))
        }
    };
    if kind == VolumeType::Luks1
        && (o.luks2_metadata_size.is_some() || o.luks2_keyslots_size.is_some())
    {
        return Err(CliError::invalid(
            "Unsupported LUKS2 metadata size options.",
        ));
    }
    let integrity = match &o.integrity {
        Some(i) => {
            if kind != VolumeType::Luks2 {
                return Err(CliError::invalid(
                    "Integrity option can be used only for LUKS2 format.",
                ));
            }
            Some(integrity_mode(i)?)
        }
        None => None,
    };
    // After cryptsetup's checks of the type's options, before anything else.
    let created = create_header_file(o)?;
    let target = o.header.as_deref().unwrap_or(device);
    // Fail before any question when a mapping or a mount holds the device (format claims it
    // again, for the whole operation); as cryptsetup, before the cipher is looked at.
    match lukskit_volume::format::claim_paths(device, o.header.as_deref()) {
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
    let cipher = resolve::data_cipher(o, integrity.is_some())?;
    let mut key_size_bits = super::volume_key::luks_key_bits(o.key_size);
    let volume_key = match (&o.volume_key_file, &integrity) {
        (p, Some((_, int_bytes))) => {
            // cryptsetup: the cipher's key (--key-size or its default), then the integrity
            // key; the volume key is both.
            let cipher_bits = key_size_bits.unwrap_or_else(|| {
                let text = cipher.text();
                let mode = text.split('-').nth(1).unwrap_or_default();
                if mode == "xts" {
                    512
                } else {
                    256
                }
            });
            let total = cipher_bits as usize / 8 + int_bytes;
            key_size_bits = Some((total * 8) as u32);
            Some(match p {
                Some(p) => super::volume_key::read_volume_key_file(p, total)?,
                None => lukskit_crypto::SecretBuf::random(total).map_err(|e| {
                    CliError::invalid(format!("Cannot get random volume key ({e})."))
                })?,
            })
        }
        (Some(p), None) => Some(super::volume_key::read_volume_key_file(
            p,
            super::volume_key::format_key_bytes(&cipher, key_size_bits)?,
        )?),
        (None, None) => None,
    };
    let offset_sectors = super::align::payload_offset(o, kind, &cipher, key_size_bits)?;
    let mut params = resolve::format(
        o,
        resolve::NewHeader {
            kind,
            device: device.clone(),
            cipher,
            key_size_bits,
            offset_sectors,
            alignment_sectors: super::align::luks2_alignment(o, kind),
            volume_key,
            integrity: integrity.as_ref().map(|(k, _)| k.clone()),
        },
    )?;
    confirm_overwrite(o, target, created)?;
    let src = match args.get(1).or(o.key_file.as_ref()) {
        Some(p) => KeySource::File {
            path: p.clone(),
            offset: o.keyfile_offset.unwrap_or(0),
            size: o.keyfile_size,
        },
        None => KeySource::prompt_limited(o.keyfile_offset, o.keyfile_size),
    };
    let pass = new_passphrase(o, &src, target)?;
    // Ctrl-C while the passphrase was read from a pipe: cryptsetup writes the header, then
    // stops before the keyslot (exit 1); lukskit stops before writing anything.
    crate::interrupt::stop_if_interrupted()?;
    super::luks1_pbkdf_fallback(&mut params);
    warn_small_keyslots_area(&params);
    if let Some((kind, _)) = &integrity {
        return format_with_integrity(o, &params, kind, pass.as_bytes());
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

/// luksFormat's warning about a signature on `target` (the header or the device), and the
/// question whether to overwrite it, not asked for a header file just `created`.
pub(crate) fn confirm_overwrite(o: &Opts, target: &str, created: bool) -> Result<()> {
    if !o.batch_mode && !o.disable_blkid {
        if let Some(kind) = super::signature::detect(target) {
            // cryptsetup prints this warning on standard output.
            println!("WARNING: Device {target} already contains a '{kind}' superblock signature.");
        }
    }
    if created {
        return Ok(());
    }
    input::confirm(
        &format!("This will overwrite data on {target} irrevocably."),
        o.batch_mode,
    )
}

/// The passphrase of a new header on `target`: "Enter passphrase for TARGET: ", asked twice
/// on a terminal unless `-q` (cryptsetup's `_verify_passphrase(1)`).
pub(crate) fn new_passphrase(
    o: &Opts,
    src: &KeySource,
    target: &str,
) -> Result<lukskit_crypto::SecretBuf> {
    if o.verify_passphrase && !input::interactive() {
        eprintln!("Can't do passphrase verification on non-tty inputs.");
    }
    let verify = o.verify_passphrase || !o.batch_mode;
    input::get_secret(src, &format!("Enter passphrase for {target}: "), verify)
}

/// `--header FILE` where FILE does not exist (cryptsetup's `_luksFormat`): the question
/// "Header file does not exist, do you want to create it?" (not with `-q`; "no" ends with
/// exit code 2), then FILE is made, 4 KiB, readable and writable by its owner only. Returns
/// whether it was made: the question whether to overwrite it is then not asked.
pub(crate) fn create_header_file(o: &Opts) -> Result<bool> {
    use std::os::unix::fs::OpenOptionsExt;
    let Some(file) = o.header.as_deref() else {
        return Ok(false);
    };
    match std::fs::metadata(file) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        _ => return Ok(false),
    }
    if !input::confirmed(
        "Header file does not exist, do you want to create it?",
        o.batch_mode,
    )? {
        return Err(input::refused("Operation aborted.", true));
    }
    let made = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(file)
        .and_then(|f| f.set_len(4096));
    made.map_err(|_| CliError::invalid(format!("Cannot create header file {file}.")))?;
    Ok(true)
}

/// cryptsetup 2.6.1's `--integrity` values: the LUKS2 integrity type and its key size in
/// bytes (`hmac-sha256` is `hmac(sha256)` with a 32-byte key; AEAD modes have none).
fn integrity_mode(arg: &str) -> Result<(String, usize)> {
    let kind = match arg {
        "aead" | "poly1305" => arg.to_string(),
        _ => match arg.strip_prefix("hmac-") {
            Some(h) => format!("hmac({h})"),
            None => String::new(),
        },
    };
    match lukskit_dm::integrity::integrity_key_bytes(&kind) {
        Some(k) if !kind.is_empty() => Ok((kind, k)),
        _ => Err(CliError::invalid(
            "No known integrity specification pattern detected.",
        )),
    }
}

/// luksFormat with authenticated encryption: the header, the dm-integrity superblock the
/// kernel writes (between wiping the header areas and writing the header, as cryptsetup), then
/// unless `--integrity-no-wipe` zeros written through a temporary mapping so that every sector
/// has a valid tag.
fn format_with_integrity(
    o: &Opts,
    params: &FormatRequest,
    kind: &str,
    passphrase: &[u8],
) -> Result<()> {
    use lukskit_activate::integrity;
    let device = params.device.clone();
    let cipher = params.cipher.text();
    let legacy = o.integrity_legacy_padding;
    let mut hook = |offset: u64, sector_size: u32| {
        integrity::format(&device, &cipher, kind, offset, sector_size, legacy)
            .map(|_| ())
            // The CLI makes the message a sentence (one final period).
            .map_err(|e| e.to_string().trim_end_matches('.').to_string())
    };
    let out = lukskit_volume::format::format_integrity(params, passphrase, &mut hook)?;
    if let Some(w) = out.warning {
        eprintln!("{}", crate::errors::format_warning(&w));
    }
    if o.verbose {
        println!("Key slot {} created.", out.keyslot);
    }
    if o.integrity_no_wipe {
        return Ok(());
    }
    let vk = params
        .volume_key
        .as_ref()
        .ok_or_else(|| CliError::invalid("No volume key."))?;
    let vol = lukskit_volume::volume::Volume::load_requested(
        &params.device,
        params.header.as_deref(),
        lukskit_volume::device::Access::Read,
        None,
    )?;
    let (layout, _) = lukskit_volume::data::DataLayout::from_volume_with_integrity(&vol)?;
    let name = format!("temporary-cryptsetup-{}", std::process::id());
    let mut config = resolve::activation(o, &name, vol.volume_type());
    config.uuid = Some(vol.uuid().to_string());
    config.device = params.device.clone();
    config.layout = lukskit_activate::LayoutInfo::from(&layout);
    config.layout.integrity = Some(kind.to_string());
    config.read_only = false;
    config.allow_discards = false;
    let kopts = lukskit_activate::KernelOptions {
        digest: vol.segment_digest_id()?,
        // The device was just checked (and the loop device of the superblock's format may
        // still be detaching): no second exclusive-use check.
        shared: true,
        ..Default::default()
    };
    println!(
        "Wiping device to initialize integrity checksum.\nYou can interrupt this by pressing \
         CTRL+c (rest of not wiped device will contain invalid checksum)."
    );
    // Ctrl-C (caught since the passphrase was read) stops the wipe, as cryptsetup's.
    let complete = lukskit_activate::integrity_wipe::wipe(
        &config,
        &kopts,
        vk,
        kind,
        &crate::interrupt::interrupted,
    )
    .map_err(CliError::from)?;
    if !complete {
        return Err(CliError::invalid("\nWipe interrupted."));
    }
    Ok(())
}

/// cryptsetup's warning when the LUKS2 header about to be written for `params` has room for
/// few keyslots: on standard output, `-q` or not, before the first keyslot is added (by
/// `luksFormat` and by an encryption's new header).
pub fn warn_small_keyslots_area(params: &lukskit_volume::format::FormatRequest) {
    if let Some(size) = lukskit_volume::format::small_keyslots_area(params) {
        println!(
            "WARNING: keyslots area ({size} bytes) is very small, available LUKS2 keyslot \
             count is very limited."
        );
    }
}
