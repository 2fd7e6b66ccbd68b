//! Header-level actions: isLuks, luksUUID, luksDump, luksHeaderBackup/Restore, erase.

use super::{existing_key_source, need_args, tries};
use crate::args::Opts;
use crate::dump;
use crate::errors::{self, CliError, Result};
use crate::input;
use lukskit_format::TypeRequest;
use lukskit_volume::backup;
use lukskit_volume::device::Access;
use lukskit_volume::formats;
use lukskit_volume::Header;

/// `isLuks <device>`: exit 0 for a LUKS header (of `--type` if given), else 1.
pub fn is_luks(o: &Opts, args: &[String]) -> Result<()> {
    need_args(args, 1, 1, "<device>")?;
    // As cryptsetup, a full load of the header (of `--type` if given): a damaged header is
    // not LUKS. cryptsetup prints why only with -v (and then without its verdict line).
    // No LUKS magic at the start may still be a LUKS2 header whose secondary copy is intact
    // (then the load decides).
    let found = formats::probe_device(&args[0])?;
    let requested = match o.r#type.as_deref() {
        None => Some(TypeRequest::AnyLuks),
        Some(t) => TypeRequest::parse(t),
    };
    let ok = match (found, requested) {
        (_, None) => false,
        (None, Some(_)) => true,
        (Some(t), Some(r)) => t.is_luks() && r.admits(t),
    };
    if !ok {
        return Err(CliError::invalid(String::new()));
    }
    match super::load_volume_typed(o, &args[0], Access::Read, super::requested_luks(o)) {
        Ok(_) => Ok(()),
        Err(lukskit_volume::VolumeError::NotLuks { .. }) => Err(CliError::invalid(String::new())),
        Err(e) if o.verbose => Err(errors::problem_only(e)),
        Err(e) => Err(CliError::new(errors::problem_only(e).class, String::new())),
    }
}

/// `luksUUID <device>`: print the UUID, or set it with `--uuid`.
pub fn luks_uuid(o: &Opts, args: &[String]) -> Result<()> {
    need_args(args, 1, 1, "<device>")?;
    // A device with no LUKS header at all fails without a word, as with cryptsetup (exit 1).
    let no_luks = |e: lukskit_volume::VolumeError| match e {
        lukskit_volume::VolumeError::NotLuks { .. } => CliError::invalid(String::new()),
        e => errors::problem_only(e),
    };
    match &o.uuid {
        None => {
            let vol = super::load_volume_typed(o, &args[0], Access::Read, super::requested_luks(o))
                .map_err(no_luks)?;
            println!("{}", vol.uuid());
            Ok(())
        }
        Some(u) => {
            let mut vol =
                super::load_volume_typed(o, &args[0], Access::Write, super::requested_luks(o))
                    .map_err(|e| match e {
                        lukskit_volume::VolumeError::NotLuks { .. } => {
                            CliError::invalid(String::new())
                        }
                        e => CliError::from(e),
                    })?;
            input::confirm_or(
                "Do you really want to change UUID of device?",
                o.batch_mode,
                input::refused("Operation aborted.", true),
            )?;
            vol.set_uuid(u).map_err(CliError::from)
        }
    }
}

/// `luksDump <device>` with `--dump-volume-key` / `--dump-json-metadata`.
pub fn luks_dump(o: &Opts, args: &[String]) -> Result<()> {
    need_args(args, 1, 1, "<device>")?;
    let device = &args[0];
    let vol = super::load_volume(o, device, Access::Read)?;
    if o.unbound {
        return dump_unbound_key(o, device, &vol);
    }
    if o.dump_volume_key {
        // Not answered YES: cryptsetup ends without a word, exit code 2.
        input::confirm_or(
            "The header dump with volume key is sensitive information\nthat allows access to encrypted partition without a passphrase.\nThis dump should be stored encrypted in a safe place.",
            o.batch_mode,
            CliError::permission(""),
        )?;
        let src = existing_key_source(o, None);
        let mut last = None;
        for _ in 0..tries(o, &src) {
            let pass = input::get_secret(&src, &format!("Enter passphrase for {device}: "), false)?;
            // Any keyslot, whatever --key-slot says: cryptsetup 2.6.1 does the same.
            match vol.unlock(pass.as_bytes(), None, false) {
                Ok((_, vk)) => {
                    let payload = vol.data_offset()? / 512;
                    let text = dump::volume_key(
                        device,
                        &vol.cipher_spec()?,
                        payload,
                        vol.uuid(),
                        vk.as_bytes(),
                    );
                    if let Some(path) = &o.volume_key_file {
                        let head: String = text.lines().take(6).map(|l| format!("{l}\n")).collect();
                        write_key_file(path, vk.as_bytes())?;
                        println!("{head}Key stored to file {path}.");
                    } else {
                        print!("{text}");
                    }
                    return Ok(());
                }
                Err(e) if errors::is_wrong_passphrase(&e) => {
                    let e = CliError::from(e);
                    eprintln!("{}", e.message);
                    last = Some(e);
                }
                Err(e) => return Err(e.into()),
            }
        }
        return Err(last.unwrap_or_else(CliError::wrong_passphrase).silenced());
    }
    match vol.header() {
        Header::Luks1(h) => {
            if o.dump_json_metadata {
                return Err(CliError::invalid(
                    "Dump operation is not supported for this device type.",
                ));
            }
            print!("{}", dump::luks1(vol.dev.path(), h));
        }
        Header::Luks2(h) => {
            if o.dump_json_metadata {
                // cryptsetup prints the JSON without a final newline.
                print!(
                    "{}",
                    dump::json_pretty(&serde_json::Value::Object(h.json().clone()))
                );
            } else {
                print!("{}", dump::luks2(h, !o.disable_external_tokens)?);
            }
        }
    }
    Ok(())
}

/// `luksDump --unbound -S N`: the unbound key of keyslot N (LUKS2), in hex or, with
/// `--volume-key-file`, to that new file, as cryptsetup's luksDump_with_unbound_key.
fn dump_unbound_key(o: &Opts, device: &str, vol: &lukskit_volume::Volume) -> Result<()> {
    // The usage checks require --key-slot with --unbound.
    let slot = o.key_slot.ok_or_else(|| CliError::invalid(""))?;
    if !vol.keyslot_unbound(slot)? {
        return Err(CliError::invalid(format!(
            "Keyslot {slot} does not contain unbound key."
        )));
    }
    input::confirm_or(
        "The header dump with unbound key is sensitive information.\nThis dump should be stored encrypted in a safe place.",
        o.batch_mode,
        CliError::permission(""),
    )?;
    let src = existing_key_source(o, None);
    let (_, key, _) = super::keys::unlock_with_tries(
        vol,
        o,
        &src,
        &format!("Enter passphrase for {device}: "),
        Some(slot),
        true,
    )?;
    if let Some(path) = &o.volume_key_file {
        // cryptsetup's tools_write_mk: exit 1 and its own words, whatever the error.
        write_key_file(path, key.as_bytes())
            .map_err(|_| CliError::invalid(format!("Cannot open keyfile {path} for write.")))?;
    }
    print!(
        "{}",
        dump::unbound_key(
            device,
            vol.uuid(),
            slot,
            key.as_bytes(),
            o.volume_key_file.is_none()
        )
    );
    if let Some(path) = &o.volume_key_file {
        println!("Key stored to file {path}.");
    }
    Ok(())
}

/// Write a volume key file (mode 0400, must not exist).
pub(super) fn write_key_file(path: &str, key: &[u8]) -> Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o400)
        .open(path)
        .map_err(|_| CliError::invalid(format!("Cannot open keyfile {path} for write.")))?;
    f.write_all(key)
        .and_then(|_| f.sync_all())
        .map_err(|e| CliError::io("Writing volume key file", path, &e))
}

/// `luksHeaderBackup <device> --header-backup-file <file>`.
pub fn backup(o: &Opts, args: &[String]) -> Result<()> {
    need_args(args, 1, 1, "<device>")?;
    let file = o
        .header_backup_file
        .as_deref()
        .ok_or_else(|| CliError::invalid("Option --header-backup-file is required."))?;
    backup::header_backup(&args[0], o.header.as_deref(), file).map_err(errors::problem_or_verdict)
}

/// `luksHeaderRestore <device> --header-backup-file <file>`.
pub fn restore(o: &Opts, args: &[String]) -> Result<()> {
    need_args(args, 1, 1, "<device>")?;
    let file = o
        .header_backup_file
        .as_deref()
        .ok_or_else(|| CliError::invalid("Option --header-backup-file is required."))?;
    let img = backup::read_backup(file)?;
    let target = o.header.as_deref().unwrap_or(&args[0]);
    // cryptsetup words it after the backup's version ("LUKS header" for LUKS1).
    let kind = match img.version {
        lukskit_format::VolumeType::Luks2 => "LUKS2",
        _ => "LUKS",
    };
    // cryptsetup reads the device as the backup's version: a header of the other version is
    // no header to it (and its LUKS1 reader says so of a LUKS2 one).
    use lukskit_format::VolumeType;
    let current = formats::probe_device(target).ok().flatten();
    if img.version != VolumeType::Luks2 && current == Some(VolumeType::Luks2) {
        eprintln!("Unsupported LUKS version 2.");
    }
    // As cryptsetup: a header whose layout differs from the backup's is refused before the
    // question.
    let found = backup::check_restore_target(&args[0], o.header.as_deref(), &img)?;
    let mut msg = if found.has_header {
        format!("Device {target} already contains {kind} header. Replacing header will destroy existing keyslots.")
    } else {
        format!("Device {target} does not contain {kind} header. Replacing header can destroy data on that device.")
    };
    if found.uuid_differs {
        msg.push_str("\nWARNING: real device header has different UUID than backup!");
    }
    if found.unknown_requirements {
        msg.push_str(
            "\nWARNING: unknown LUKS2 requirements detected in real device header!\
             \nReplacing header with backup may corrupt the data on that device!",
        );
    }
    if found.offline_reencryption {
        msg.push_str(
            "\nWARNING: Unfinished offline reencryption detected on the device!\
             \nReplacing header with backup may corrupt data.",
        );
    }
    // Not answered YES: cryptsetup ends without a word, exit code 1.
    input::confirm_or(&msg, o.batch_mode, CliError::invalid(""))?;
    backup::header_restore(&args[0], o.header.as_deref(), &img).map_err(CliError::from)
}

/// `erase <device>`: destroy every keyslot.
pub fn erase(o: &Opts, args: &[String]) -> Result<()> {
    need_args(args, 1, 1, "<device>")?;
    let mut vol = super::load_volume(o, &args[0], Access::Write)?;
    input::confirm_or(
        &format!(
            "This operation will erase all keyslots on device {}.\nDevice will become unusable \
             after this operation.",
            o.header.as_deref().unwrap_or(&args[0])
        ),
        o.batch_mode,
        input::refused("Operation aborted, keyslots were NOT wiped.", true),
    )?;
    // The keyslot of a LUKS2 re-encryption in progress stays (as with cryptsetup: its
    // metadata would not be valid without it); every other one goes.
    for slot in vol.active_keyslots()? {
        if vol.is_reencrypt_keyslot(slot)? {
            continue;
        }
        vol.kill_keyslot(slot)?;
        if o.verbose {
            println!("Key slot {slot} removed.");
        }
    }
    Ok(())
}
