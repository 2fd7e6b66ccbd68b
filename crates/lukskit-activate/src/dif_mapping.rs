//! The dm-integrity mapping cryptsetup stacks under a dm-crypt mapping `NAME` for LUKS2
//! authenticated encryption: its name, `NAME_dif`, and finding it under an existing mapping.
//! Shared by the making of the layers ([`crate::integrity`]) and the status of a mapping
//! ([`crate::kernel`]).

use lukskit_dm::integrity::IntegrityTarget;
use lukskit_dm::{DevT, DeviceMapper};

/// The name of the dm-integrity mapping under dm-crypt mapping `name` (cryptsetup's).
pub fn dif_name(name: &str) -> String {
    format!("{name}_dif")
}

/// The dm-integrity mapping a crypt target's device `dev` is, when it is one cryptsetup (or
/// lukskit) stacked under dm-crypt mapping `name`: its name and its own data device.
pub fn dif_under(dm: &DeviceMapper, name: &str, dev: DevT) -> Option<(String, DevT)> {
    let raw = dev.to_raw();
    let (maj, min) = (libc::major(raw), libc::minor(raw));
    let dm_name = std::fs::read_to_string(format!("/sys/dev/block/{maj}:{min}/dm/name")).ok()?;
    let dm_name = dm_name.trim_end();
    if dm_name != dif_name(name) {
        return None;
    }
    let (info, targets) = dm.table(dm_name, false).ok()?;
    if !info
        .uuid
        .as_deref()
        .is_some_and(|u| u.starts_with("CRYPT-INTEGRITY-"))
    {
        return None;
    }
    let (under, _, _) = IntegrityTarget::parse_device(targets.first()?).ok()??;
    Some((dm_name.to_string(), under))
}
