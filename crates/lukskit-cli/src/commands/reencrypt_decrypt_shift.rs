//! `reencrypt --decrypt --header FILE <device>` where FILE does not exist and the device
//! has its LUKS2 header at its start: as cryptsetup 2.6.1's `decrypt_luks2_datashift_init`,
//! the header is exported to FILE, the signatures on the device are wiped and the data is
//! decrypted while it moves down over the old header area (resilience
//! `datashift-checksum`, or `datashift-journal` with `--resilience journal`). FILE is the
//! header of the re-encryption from then on: `--resume-only --header FILE` continues it.

use super::existing_key_source;
use crate::args::Opts;
use crate::errors::{CliError, Result};
use crate::input;
use lukskit_crypto::hash::HashAlg;
use lukskit_reencrypt::shift;
use lukskit_volume::claim::Claim;
use lukskit_volume::device::Access;
use lukskit_volume::reencrypt;
use lukskit_volume::Volume;

/// Whether the command line asks for a decryption that exports the header (`--decrypt
/// --header FILE` with FILE missing).
pub fn wanted(o: &Opts) -> bool {
    o.given.has("decrypt")
        && o.header
            .as_deref()
            .is_some_and(|h| !std::path::Path::new(h).exists())
}

/// The moved segment's protection (`decrypt_verify_and_set_params`): checksums unless
/// `--resilience journal`; `datashift` and `none` are refused.
fn checksum_hash(o: &Opts) -> Result<Option<HashAlg>> {
    let req = crate::resolve::reencrypt(o);
    Ok(lukskit_reencrypt::choice::moved_protection(&req)?)
}

/// Initialize the decryption of `device`, exporting its header to `--header`; returns the
/// volume key and, when the device is open through a kernel mapping (online, as cryptsetup
/// 2.6.1: the mapping follows the moved layout), the mapping's name, else the device's claim
/// (offline: taken before anything is written, to be held through the run).
pub fn init(o: &Opts, device: &str) -> Result<(reencrypt::Keys, Option<String>, Option<Claim>)> {
    let file = o
        .header
        .clone()
        .ok_or_else(|| CliError::invalid("No header file."))?;
    input::confirm(
        &format!(
            "Header file {file} does not exist. Do you want to initialize LUKS2 decryption of \
             device {device} and export LUKS2 header to file {file}?"
        ),
        o.batch_mode,
    )?;
    let checksum = checksum_hash(o)?;
    let is_block = std::fs::metadata(device).is_ok_and(|m| {
        use std::os::unix::fs::FileTypeExt;
        m.file_type().is_block_device()
    });
    let offline = o.given.has("force-offline-reencrypt");
    // A device that is no block device: refused at once with -q (cryptsetup's
    // `reencrypt_hint_force_offline_reencrypt`), else asked about once the passphrase is read.
    let unknown_use = !offline && !is_block && o.given.value("active-name").is_none();
    let notice = if unknown_use {
        Some(super::reencrypt_notice::ActiveNotice::unknown(o, device)?)
    } else {
        None
    };
    let moved_length = match o.given.value("hotzone-size") {
        Some(v) => crate::args::parse_device_size(v).ok_or_else(|| {
            CliError::invalid("Invalid max reencryption hotzone size specification.")
        })?,
        None => 0,
    };
    let mut vol = Volume::load(device, None, Access::Write)?;
    if vol.luks2().is_none() {
        return Err(CliError::invalid(
            "LUKS1 re-encryption is not supported by lukskit (convert to LUKS2 first).",
        ));
    }
    let src = existing_key_source(o, None);
    let prompt = format!("Enter passphrase for {device}: ");
    let (_, vk, _pass) = super::keys::unlock_with_tries(&vol, o, &src, &prompt, o.key_slot, false)?;
    // The kernel mapping of the device, if it is open (`reencrypt_get_active_name`).
    let active = if offline {
        None
    } else if let Some(notice) = &notice {
        notice.say(o)?;
        None
    } else if let Some(n) = o.given.value("active-name") {
        Some(lukskit_activate::mapping_name(n).to_string())
    } else {
        let found = lukskit_reencrypt::online::detect(device, vol.uuid())?;
        if let Some(name) = &found {
            super::reencrypt_notice::ActiveNotice::Detected {
                name: name.clone(),
                data_path: device.to_string(),
            }
            .say(o)?;
        }
        found
    };
    let pbkdf = crate::resolve::pbkdf(o);
    let d = shift::DecryptShift {
        device,
        file: &file,
        active: active.as_deref(),
        checksum,
        moved_length,
        pbkdf: &pbkdf,
    };
    let (keys, claim) = shift::init_decrypt(&mut vol, vk, &d)?;
    Ok((keys, active, claim))
}
