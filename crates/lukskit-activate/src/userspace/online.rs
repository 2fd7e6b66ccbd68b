//! Online re-encryption of a userspace mapping: the re-encryption engine
//! ([`lukskit_volume::reencrypt::run_online`]) runs in the `lukskit reencrypt` process and
//! moves the serving process's data path along through the control socket.
//!
//! * before each hot zone the serving process **holds** all I/O (requests in flight
//!   complete and are flushed, new ones wait), so that nothing reads or writes the hot zone
//!   while its bytes change key on the device;
//! * once the hot zone is rewritten, synced and committed, the serving process **reloads**
//!   the header's new segment table (new key up to the end of the hot zone, old key after
//!   it) and lets the held I/O proceed with it.
//!
//! The serving process never writes a sector with a key the device does not have there:
//! between hold and reload it writes nothing, and it keeps holding when the re-encryption
//! process dies (or fails) inside a hot zone, until `reencrypt --resume-only` recovers the
//! hot zone and reloads the segments the header then holds.

use super::UserspaceMapping;
use lukskit_volume::reencrypt::online::{HotZone, OnlineHook};
use lukskit_volume::segment::SegmentTable;
use lukskit_volume::ReencryptError;
use lukskit_volume::VolumeError;

/// The [`OnlineHook`] of a userspace (FUSE or NBD) mapping.
pub struct UserspaceOnline {
    mapping: UserspaceMapping,
    /// Whether the run is still in [`OnlineHook::start`] (nothing on the device changed
    /// yet: held I/O may go on with the segments it had).
    starting: bool,
}

impl UserspaceOnline {
    /// The hook for `mapping`.
    pub fn new(mapping: UserspaceMapping) -> Self {
        UserspaceOnline {
            mapping,
            starting: false,
        }
    }

    /// The mapping name.
    pub fn name(&self) -> &str {
        &self.mapping.name
    }

    /// Hold the mapping's I/O and install `table` (then I/O proceeds with it).
    pub fn install(&mut self, table: &SegmentTable) -> lukskit_volume::Result<()> {
        self.mapping.hold().map_err(online_error)?;
        self.mapping.reload(table).map_err(online_error)
    }
}

fn online_error(e: crate::ActivateError) -> VolumeError {
    ReencryptError::Online(format!("the serving process could not follow: {e}")).into()
}

impl OnlineHook for UserspaceOnline {
    fn start(&mut self, live: &SegmentTable) -> lukskit_volume::Result<()> {
        self.starting = true;
        self.install(live)?;
        self.starting = false;
        Ok(())
    }

    fn before_hotzone(&mut self, _: &SegmentTable, _: HotZone) -> lukskit_volume::Result<()> {
        self.mapping.hold().map_err(online_error)
    }

    fn after_hotzone(&mut self, segments: &SegmentTable) -> lukskit_volume::Result<()> {
        self.mapping.reload(segments).map_err(online_error)
    }

    fn finish(&mut self, segments: &SegmentTable, _finished: bool) -> lukskit_volume::Result<()> {
        self.install(segments)
    }

    fn abort(&mut self, _data_touched: bool) {
        // Once a hot zone was committed the header may describe it as in re-encryption
        // (a recovery then trusts the old ciphertext's checksums): I/O with the old
        // segments would break that, so it stays held until `--resume-only`.
        if self.starting {
            let _ = self.mapping.release();
        }
    }
}

/// The userspace mapping whose data device is `path` (the same file or block device),
/// if one is active.
pub fn find_by_device(path: &str) -> crate::Result<Option<UserspaceMapping>> {
    use std::os::unix::fs::{FileTypeExt, MetadataExt};
    let Ok(want) = std::fs::metadata(path) else {
        return Ok(None);
    };
    let same = |other: &str| {
        std::fs::metadata(other).is_ok_and(|m| {
            if want.file_type().is_block_device() {
                m.file_type().is_block_device() && m.rdev() == want.rdev()
            } else {
                m.dev() == want.dev() && m.ino() == want.ino()
            }
        })
    };
    let Ok(dir) = std::fs::read_dir(super::runtime::run_dir()) else {
        return Ok(None);
    };
    for e in dir.flatten() {
        let Some(name) = e.file_name().to_str().map(str::to_string) else {
            continue;
        };
        if super::runtime::check_name(&name).is_err() {
            continue;
        }
        if let Some(m) = super::find(&name)? {
            if m.state.as_ref().is_some_and(|s| same(&s.config.device)) {
                return Ok(Some(m));
            }
        }
    }
    Ok(None)
}
