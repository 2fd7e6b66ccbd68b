//! The kernel mapping an online re-encryption goes on under: found among the data device's
//! holders as cryptsetup finds it, checked against the metadata before it is written, and
//! the hook that swaps its table during the run.

use crate::{ReencryptError, Result};
use lukskit_activate::online_reencrypt::KernelReencrypt;
use lukskit_activate::Mapping;
use lukskit_format::luks2::Luks2Header;
use lukskit_volume::reencrypt::Keys;
use std::path::Path;

/// The name of the volume's kernel mapping (dm UUID `CRYPT-LUKS2-<uuid without dashes>-…`)
/// among the holders of `data_device` (cryptsetup's `get_active_device_name`); `None`
/// without holders; refused when it has holders but none is the volume's.
pub fn detect(data_device: &str, uuid: &str) -> Result<Option<String>> {
    use std::os::unix::fs::MetadataExt;
    let rdev = std::fs::metadata(data_device)
        .map_err(|source| ReencryptError::Open {
            path: data_device.to_string(),
            source,
        })?
        .rdev();
    let Ok(dir) = std::fs::read_dir(holders_dir(rdev)) else {
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
        return Err(ReencryptError::StillInUse(data_device.to_string()));
    }
    Ok(found)
}

/// Whether block device `device` has holders (a mapping, a partition in use, …).
pub fn has_holders(device: &str) -> bool {
    use std::os::unix::fs::MetadataExt;
    let Ok(m) = std::fs::metadata(device) else {
        return false;
    };
    std::fs::read_dir(holders_dir(m.rdev())).is_ok_and(|mut d| d.next().is_some())
}

/// `/sys/dev/block/MAJ:MIN/holders` of device number `rdev`.
fn holders_dir(rdev: u64) -> std::path::PathBuf {
    Path::new("/sys/dev/block")
        .join(format!("{}:{}", libc::major(rdev), libc::minor(rdev)))
        .join("holders")
}

/// The hook of an online run under kernel mapping `name` of the volume `uuid`, whose run
/// goes `forward` (else backward) to new data offset `data_offset`.
pub fn kernel_hook(
    name: &str,
    uuid: &str,
    forward: bool,
    data_offset: u64,
) -> Result<KernelReencrypt> {
    match lukskit_activate::find(name) {
        Ok(Some(Mapping::Kernel(_))) | Err(_) => {}
        Ok(Some(_)) => return Err(ReencryptError::UserspaceMappingNamed(name.to_string())),
        Ok(None) => return Err(ReencryptError::NotActive(name.to_string())),
    }
    Ok(KernelReencrypt::new(name, uuid, forward, data_offset)?)
}

/// Before an online run's metadata is written: kernel mapping `name` must show the table
/// of the re-encryption about to start (cryptsetup's `crypt_compare_dm_devices`), for
/// `data_size` bytes of data. A userspace mapping is not checked.
pub fn check_before_init(
    name: &str,
    uuid: &str,
    hdr: &Luks2Header,
    keys: &Keys,
    data_size: u64,
) -> Result<()> {
    match lukskit_activate::find(name) {
        Ok(Some(Mapping::Kernel(_))) | Err(_) => {}
        Ok(Some(_)) => return Ok(()),
        Ok(None) => return Err(ReencryptError::NotActive(name.to_string())),
    }
    let (table, _) = lukskit_volume::reencrypt::online::live_table(hdr, keys, data_size)?;
    KernelReencrypt::check_mapping(name, uuid, &table)?;
    Ok(())
}
