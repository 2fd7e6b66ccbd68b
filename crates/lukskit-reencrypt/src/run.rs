//! The run of a re-encryption whose metadata is written: offline, under a kernel mapping,
//! or through a lukskit userspace mapping.

use crate::{online, userspace, Progress, ReencryptError, Result};
use lukskit_activate::userspace::UserspaceMapping;
use lukskit_format::io::Storage;
use lukskit_volume::device::{Device, LockedUpdates};
use lukskit_volume::reencrypt::{self, Keys, Outcome, ReencryptLock, RunOptions, Status};
use lukskit_volume::Volume;

/// Where the run goes on.
pub enum RunTarget {
    /// Offline: nothing has the device open (the caller holds its claim).
    Offline,
    /// Under this kernel mapping, whose table follows the hot zones.
    Kernel(String),
    /// Through this userspace mapping, whose serving process follows the hot zones.
    Userspace(Box<UserspaceMapping>),
}

/// How the run goes.
#[derive(Debug, Clone, Copy, Default)]
pub struct RunRequest {
    /// The largest hot zone in bytes (0: cryptsetup's default).
    pub max_hotzone: u64,
    /// Re-encrypt only the first this many bytes (`None`: the whole data).
    pub device_size: Option<u64>,
}

/// The re-encryption lock of volume `uuid` that keeps other runs out, as cryptsetup's
/// (`None` with `disabled`, cryptsetup's `--disable-locks`). Hold it through [`run()`].
pub fn lock(uuid: &str, disabled: bool) -> Result<Option<ReencryptLock>> {
    if disabled {
        return Ok(None);
    }
    Ok(Some(ReencryptLock::acquire(uuid)?))
}

/// Run (or resume) the re-encryption of `vol`, whose data is on `data_dev` when its header
/// is detached (`block`: the data device's logical block size), with the volume `keys`, on
/// `target`, telling `progress`. The metadata lock is held only while metadata is written,
/// as cryptsetup's re-encryption does: `status` and `luksDump` go on meanwhile; the caller
/// holds the re-encryption [`lock`].
pub fn run(
    vol: &mut Volume,
    data_dev: Option<&Device>,
    block: u64,
    keys: &Keys,
    target: RunTarget,
    req: RunRequest,
    progress: &mut dyn Progress,
) -> Result<Outcome> {
    let uuid = vol.uuid().to_string();
    let Some((vol_dev, hdr)) = vol.luks2_edit() else {
        return Err(ReencryptError::NotLuks2);
    };
    let locked = LockedUpdates::new(vol_dev);
    let meta: &dyn Storage = &locked;
    let data: &dyn Storage = match data_dev {
        Some(d) => d,
        None => vol_dev,
    };
    let direct = data_dev
        .unwrap_or(vol_dev)
        .file()
        .and_then(reencrypt::fastio::open_direct);
    let mut cb = |done: u64, total: u64| progress.update(done, total);
    let run_opts = RunOptions {
        max_hotzone: req.max_hotzone,
        progress: Some(&mut cb),
        direct: direct.as_ref(),
        device_size: req.device_size,
    };
    Ok(match target {
        RunTarget::Kernel(name) => {
            if reencrypt::status(hdr)? == Status::Crash {
                return Err(ReencryptError::NeedsRecovery);
            }
            let c = reencrypt::Context::load(hdr)?;
            let forward = c.direction == reencrypt::Direction::Forward;
            let mut hook = online::kernel_hook(&name, &uuid, forward, c.data_offset_new())?;
            reencrypt::run_online(meta, data, block, hdr, keys, run_opts, &mut hook)?
        }
        RunTarget::Userspace(m) => {
            if reencrypt::Context::load(hdr)
                .is_ok_and(|c| reencrypt::datashift::is_reencrypt_shift(&c))
            {
                return Err(ReencryptError::OnlineShiftUnsupported);
            }
            userspace::run(meta, data, block, hdr, keys, run_opts, *m)?
        }
        RunTarget::Offline => reencrypt::run(meta, data, block, hdr, keys, run_opts)?,
    })
}
