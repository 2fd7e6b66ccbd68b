//! `reencrypt` of an active device: finding the mapping (cryptsetup's
//! `tools_lookup_crypt_device`, or `--active-name`) and the hook that moves it along.

use crate::errors::{CliError, Result};
use std::path::Path;

/// The active dm-crypt mapping of LUKS2 volume `uuid` on block device `data_device`, as
/// cryptsetup finds it: among the device-mapper holders of the device, the one whose DM
/// UUID is `CRYPT-LUKS2-<uuid>-…`. `Ok(None)`: the device has no holder. A device held by
/// something else is "still in use", as cryptsetup says.
pub fn detect(data_device: &str, uuid: &str) -> Result<Option<String>> {
    use std::os::unix::fs::MetadataExt;
    let rdev = std::fs::metadata(data_device)
        .map_err(|e| CliError::io("Opening", data_device, &e))?
        .rdev();
    let (maj, min) = (libc::major(rdev), libc::minor(rdev));
    let holders = Path::new("/sys/dev/block")
        .join(format!("{maj}:{min}"))
        .join("holders");
    let Ok(dir) = std::fs::read_dir(&holders) else {
        return Ok(None);
    };
    let prefix = format!("CRYPT-LUKS2-{}-", uuid.replace('-', ""));
    let mut count = 0;
    let mut found = None;
    for entry in dir.flatten() {
        count += 1;
        let dm = entry.path().join("dm");
        let dm_uuid = std::fs::read_to_string(dm.join("uuid")).unwrap_or_default();
        if dm_uuid.trim_end().starts_with(&prefix) {
            if let Ok(name) = std::fs::read_to_string(dm.join("name")) {
                found = Some(name.trim_end().to_string());
            }
        }
    }
    if count > 0 && found.is_none() {
        return Err(CliError::invalid(format!(
            "Device {data_device} is still in use."
        )));
    }
    Ok(found)
}

/// Whether block device `device` has holders (a mapping or anything else stacked on it).
pub fn has_holders(device: &str) -> bool {
    use std::os::unix::fs::MetadataExt;
    let Ok(m) = std::fs::metadata(device) else {
        return false;
    };
    let rdev = m.rdev();
    let holders = Path::new("/sys/dev/block")
        .join(format!("{}:{}", libc::major(rdev), libc::minor(rdev)))
        .join("holders");
    std::fs::read_dir(holders).is_ok_and(|mut d| d.next().is_some())
}

/// The hook of an online run under kernel mapping `name` (refused for a userspace one).
pub fn kernel_hook(
    name: &str,
    uuid: &str,
    forward: bool,
    data_offset: u64,
) -> Result<lukskit_activate::online_reencrypt::KernelReencrypt> {
    match lukskit_activate::find(name) {
        Ok(Some(lukskit_activate::Mapping::Kernel(_))) | Err(_) => {}
        Ok(Some(_)) => {
            return Err(CliError::invalid(format!(
                "Online re-encryption of {name}, a lukskit userspace mapping, is not \
                 supported yet; close it first or use --force-offline-reencrypt."
            )))
        }
        Ok(None) => return Err(CliError::invalid(format!("Device {name} is not active."))),
    }
    Ok(lukskit_activate::online_reencrypt::KernelReencrypt::new(
        name,
        uuid,
        forward,
        data_offset,
    )?)
}

/// Before the re-encryption metadata (`hdr`, initialized in memory, with the unlocked
/// `keys`; data device of `data_size` bytes) is written for an online run under `name`:
/// the kernel mapping must be active and map exactly the header's segments, as cryptsetup
/// 2.6.1's `reencrypt_init` checks it. A lukskit userspace mapping is left to the run
/// (which refuses it).
pub fn check_before_init(
    name: &str,
    uuid: &str,
    hdr: &lukskit_format::luks2::Luks2Header,
    keys: &lukskit_volume::reencrypt::Keys,
    data_size: u64,
) -> Result<()> {
    match lukskit_activate::find(name) {
        Ok(Some(lukskit_activate::Mapping::Kernel(_))) | Err(_) => {}
        Ok(Some(_)) => return Ok(()),
        Ok(None) => return Err(CliError::invalid(format!("Device {name} is not active."))),
    }
    let (table, _) = lukskit_volume::reencrypt::online::live_table(hdr, keys, data_size)?;
    lukskit_activate::online_reencrypt::KernelReencrypt::check_mapping(name, uuid, &table)?;
    Ok(())
}
