//! `reencrypt` of a device that a userspace (FUSE or NBD) mapping serves: the engine runs
//! here and the serving process follows the hot zones through its control socket
//! (`lukskit_activate::userspace::online`).

use crate::Result;
use lukskit_activate::userspace::online::UserspaceOnline;
use lukskit_activate::userspace::wire::{Progress, ProgressPhase};
use lukskit_activate::userspace::{self, UserspaceMapping};
use lukskit_format::io::Storage;
use lukskit_format::luks2::Luks2Header;
use lukskit_volume::reencrypt::{self, Keys, Outcome, RunOptions, Status};
use lukskit_volume::{DeviceOp, VolumeError};

/// The active userspace mapping of the data device `path`, if any.
pub fn active_mapping(path: &str) -> Result<Option<UserspaceMapping>> {
    Ok(lukskit_activate::userspace::online::find_by_device(path)?)
}

/// The device a userspace mapping exposes its plaintext as (its `/dev/mapper` link, loop
/// device or FUSE file); `None` for an NBD export.
pub fn mapping_device(m: &UserspaceMapping) -> Option<String> {
    let st = m.state.as_ref()?;
    st.mapper_link
        .clone()
        .or_else(|| st.loop_device.clone())
        .or_else(|| st.fuse_file.clone())
}

/// Run (or resume) the re-encryption online: a hot zone interrupted while the serving
/// process held its I/O is recovered first, then the engine runs with the serving process
/// following every hot zone; at the end the serving process gets the final segments.
pub fn run(
    meta: &dyn Storage,
    data: &dyn Storage,
    block: u64,
    hdr: &mut Luks2Header,
    keys: &Keys,
    opts: RunOptions<'_>,
    mapping: UserspaceMapping,
) -> Result<Outcome> {
    let name = mapping.name.clone();
    let mut hook = UserspaceOnline::new(mapping);
    // The serving process logs the run's start, every 10 % and its end (issue 35 item 1).
    let tell = |phase, (done, total): (u64, u64)| {
        userspace::notify_progress(&name, Progress { phase, done, total });
    };
    let mut last = (0u64, 0u64);
    let result = (|| -> Result<Outcome> {
        if reencrypt::status(hdr)? == Status::Crash {
            reencrypt::recover(meta, data, block, hdr, keys)?;
        }
        let out = if reencrypt::status(hdr)? == Status::None {
            Outcome::Finished
        } else {
            let RunOptions {
                max_hotzone,
                progress: mut user,
                direct,
                device_size,
            } = opts;
            let mut started = false;
            let mut progress = |done: u64, total: u64| -> bool {
                let phase = if started {
                    ProgressPhase::Step
                } else {
                    ProgressPhase::Start
                };
                started = true;
                last = (done, total);
                tell(phase, last);
                user.as_mut().is_none_or(|p| p(done, total))
            };
            let opts = RunOptions {
                max_hotzone,
                progress: Some(&mut progress),
                direct,
                device_size,
            };
            reencrypt::run_online(meta, data, block, hdr, keys, opts, &mut hook)?
        };
        if out == Outcome::Finished {
            // Also when the engine only had the final metadata update left (no hot zone, so
            // no hook call): the serving process maps the whole device with the new key.
            // The final table: one segment, under the new key (linear after a decryption).
            let size = data
                .size()
                .map_err(|e| VolumeError::device_io(DeviceOp::GetSize, e))?;
            hook.install(&crate::segments::table(hdr, keys, size)?)?;
        }
        Ok(out)
    })();
    match &result {
        Ok(Outcome::Finished) => tell(ProgressPhase::Finished, (last.1, last.1)),
        Ok(Outcome::Interrupted) => tell(ProgressPhase::Stopped, last),
        Err(_) => tell(ProgressPhase::Failed, last),
    }
    result
}
