//! Online LUKS2 re-encryption under a live kernel dm-crypt mapping, with cryptsetup 2.6's
//! device-mapper stack (`lib/luks2/luks2_reencrypt.c`), so that either tool finds what the
//! other left:
//!
//! * `NAME-hotzone-forward` (or `-backward`): dm-linear over the data area of the data
//!   device (from the new data offset on);
//! * `NAME-overlay`: first the live table of `NAME`; then, per hot zone, the segments with
//!   the hot zone mapped (under the new key) onto the hot-zone device;
//! * `NAME` itself becomes dm-linear over `NAME-overlay` for the run, so the file system on
//!   it never sees a table change.
//!
//! Per hot zone ([`OnlineHook::before_hotzone`]): load the overlay's next table, suspend
//! the overlay, suspend the hot-zone device, resume the overlay (its new table goes live,
//! and every I/O to the hot zone now waits in the suspended hot-zone device); the engine
//! rewrites the hot zone on the data device directly; then ([`OnlineHook::after_hotzone`])
//! the hot-zone device is resumed and the waiting I/O goes on, under the new key. At the
//! end ([`OnlineHook::finish`]) `NAME` gets the header's segments as its own table and the
//! helper devices go. All suspends skip the file-system freeze and do not flush (as
//! cryptsetup's `DM_SUSPEND_SKIP_LOCKFS | DM_SUSPEND_NOFLUSH`). The DM UUIDs of the helpers
//! are `CRYPT-SUBDEV-<uuid>-<helper name>`, as cryptsetup's.

use crate::error::{ActivateError, Result};
use crate::kernel::dm_targets;
use lukskit_dm::{
    dm_uuid, keyring, CryptFlags, CryptKey, DevT, DeviceMapper, LinearTarget, RemoveOptions,
    SuspendOptions, Target,
};
use lukskit_volume::reencrypt::decrypt_shift::MoveHook;
use lukskit_volume::reencrypt::online::{HotZone, OnlineHook};
use lukskit_volume::segment::{SegmentKind, SegmentTable};
use lukskit_volume::{ReencryptError, VolumeError};
use std::os::fd::AsRawFd;
use std::time::Duration;

const QUIET: SuspendOptions = SuspendOptions {
    noflush: true,
    skip_lockfs: true,
};

/// The kernel side of an online re-encryption of mapping `NAME` (see the module
/// documentation). Made with [`KernelReencrypt::new`], driven by the engine as an
/// [`OnlineHook`].
pub struct KernelReencrypt {
    dm: DeviceMapper,
    name: String,
    overlay: String,
    hotzone: String,
    luks_uuid: String,
    device: DevT,
    flags: CryptFlags,
    keyring: bool,
    readonly: bool,
    sectors: u64,
    data_offset: u64,
    data: std::fs::File,
    stacked: bool,
    hotzone_suspended: bool,
    /// Size of the hot-zone device in sectors.
    hotzone_sectors: u64,
}

/// `targets` cut to the first `sectors` sectors: the live mapping keeps its size through the
/// run and after it, as cryptsetup's (which re-encrypts the active device's size), where
/// the header's last segment may reach further (`whole device` after an encryption with a
/// data shift, whose mapping is the device less the shift; a mapping resized smaller).
fn clip(mut targets: Vec<Target>, sectors: u64) -> Vec<Target> {
    targets.retain(|t| t.start() < sectors);
    if let Some(last) = targets.last_mut() {
        let len = sectors - last.start();
        match last {
            Target::Crypt(c) => c.sectors = c.sectors.min(len),
            Target::Linear(l) => l.sectors = l.sectors.min(len),
            Target::Zero { sectors, .. }
            | Target::Error { sectors, .. }
            | Target::Other { sectors, .. } => *sectors = (*sectors).min(len),
            _ => {}
        }
    }
    targets
}

fn online_err(e: impl std::fmt::Display) -> VolumeError {
    ReencryptError::Online(e.to_string()).into()
}

impl KernelReencrypt {
    /// Prepare to re-encrypt under live mapping `name` of the LUKS2 volume with UUID
    /// `luks_uuid`, whose new data area starts `data_offset` bytes into the data device;
    /// `forward`: the direction (it names the hot-zone device). Checks that `name` is a
    /// mapping of crypt/linear targets on one device and that no helper device is left.
    pub fn new(name: &str, luks_uuid: &str, forward: bool, data_offset: u64) -> Result<Self> {
        let me = Self::query(name, luks_uuid, forward, data_offset)?;
        for helper in [&me.overlay, &me.hotzone] {
            if me.dm.info(helper).is_ok() {
                return Err(ActivateError::InvalidRequest(format!(
                    "Failed to activate hotzone device {}. Device {helper} already \
                     exists (left over by an interrupted online re-encryption): close \
                     {name} and remove it first.",
                    me.hotzone
                )));
            }
        }
        Ok(me)
    }

    /// cryptsetup's check of the active mapping when a re-encryption is initialized under
    /// it (`reencrypt_init`, before the metadata is written): mapping `name` must be active
    /// and its table exactly `table` (the initialized header's segments with their keys;
    /// key descriptions included), else "Mismatching parameters on device NAME.".
    pub fn check_mapping(name: &str, luks_uuid: &str, table: &SegmentTable) -> Result<()> {
        Self::query(name, luks_uuid, true, 0)?.check_live(table)
    }

    /// The live mapping `name`: one device under crypt/linear targets.
    fn query(name: &str, luks_uuid: &str, forward: bool, data_offset: u64) -> Result<Self> {
        let dm = DeviceMapper::open()?;
        let (info, targets) = dm
            .table(name, false)
            .map_err(|_| ActivateError::InvalidRequest(format!("Device {name} is not active.")))?;
        let mismatch =
            || ActivateError::InvalidRequest(format!("Mismatching parameters on device {name}."));
        let mut device = None;
        let mut flags = None;
        let mut keyring = false;
        let mut sectors = 0;
        for t in &targets {
            let dev = match t {
                Target::Crypt(c) => {
                    if flags.is_none() {
                        flags = Some(CryptFlags {
                            iv_large_sectors: false,
                            ..c.flags
                        });
                        // Keys go where the live mapping keeps its key; a mapping with
                        // none (cipher_null) gives no hint, so the new key goes into the
                        // keyring wherever dm-crypt takes keys from it, as cryptsetup's
                        // reload does (luks2-reencryption-test [24]).
                        keyring = match c.key {
                            CryptKey::Empty => dm.crypt_features()?.is_some_and(|f| f.keyring()),
                            _ => c.key.in_keyring(),
                        };
                    }
                    c.device
                }
                Target::Linear(l) => l.device,
                _ => return Err(mismatch()),
            };
            if device.is_some_and(|d| d != dev) {
                return Err(mismatch());
            }
            device = Some(dev);
            sectors = t.start() + t.sectors();
        }
        let device = device.ok_or_else(mismatch)?;
        let overlay = format!("{name}-overlay");
        let hotzone = format!(
            "{name}-hotzone-{}",
            if forward { "forward" } else { "backward" }
        );
        let path = device_path(device);
        let data = std::fs::File::open(&path)
            .map_err(|e| ActivateError::io(format!("Cannot open {path}"), e))?;
        Ok(KernelReencrypt {
            dm,
            name: name.to_string(),
            overlay,
            hotzone,
            luks_uuid: luks_uuid.to_string(),
            device,
            flags: flags.unwrap_or_default(),
            keyring,
            readonly: info.flags.readonly,
            sectors,
            data_offset,
            data,
            stacked: false,
            hotzone_suspended: false,
            hotzone_sectors: 0,
        })
    }

    /// The mapping's size in 512-byte sectors.
    pub fn sectors(&self) -> u64 {
        self.sectors
    }

    fn targets(&self, table: &SegmentTable, hot: Option<(usize, DevT)>) -> Vec<Target> {
        let (uuid, keyring) = (self.luks_uuid.clone(), self.keyring);
        let mut targets = dm_targets(table, self.device, self.flags, |c| {
            let description = c.digest.map(|d| keyring::luks2_key_description(&uuid, d));
            CryptKey::for_volume_key(&c.key, description.as_deref(), keyring)
        });
        if let Some((i, hz)) = hot {
            let shift = self.data_offset / 512;
            match targets.get_mut(i) {
                Some(Target::Crypt(c)) => {
                    c.device = hz;
                    c.offset -= shift;
                }
                Some(Target::Linear(l)) => {
                    l.device = hz;
                    l.offset -= shift;
                }
                _ => {}
            }
        }
        clip(targets, self.sectors)
    }

    /// The live table must be what the header describes (cryptsetup's "Mismatching
    /// parameters" check), keys included.
    fn check_live(&self, table: &SegmentTable) -> Result<()> {
        let (_, live) = self.dm.table(&self.name, true)?;
        let want = self.targets(table, None);
        let same = live.len() == want.len()
            && live
                .iter()
                .zip(&want)
                .all(|(a, b)| *a.to_line() == *b.to_line());
        if !same {
            return Err(ActivateError::InvalidRequest(format!(
                "Mismatching parameters on device {}.",
                self.name
            )));
        }
        Ok(())
    }

    fn sub_uuid(&self, name: &str) -> Result<String> {
        Ok(dm_uuid::crypt_dm_uuid(
            "SUBDEV",
            Some(&self.luks_uuid),
            name,
        )?)
    }

    fn build_stack(&mut self, live: &SegmentTable) -> Result<()> {
        self.check_live(live)?;
        // The hot-zone device: 1:1 over the data area from the new data offset, up to the end
        // of the device (a re-encryption that shifts the data further on maps less than the
        // old data area: the mapping was shrunk by the shift).
        let device_sectors = lukskit_format::io::Storage::size(&self.data)
            .map_err(|e| ActivateError::io("Cannot get the size of the data device", e))?
            / 512;
        let span = (live.size() / 512).min(device_sectors.saturating_sub(self.data_offset / 512));
        let hz = Target::Linear(LinearTarget {
            start: 0,
            sectors: span,
            device: self.device,
            offset: self.data_offset / 512,
        });
        self.hotzone_sectors = span;
        self.dm.create(
            &self.hotzone,
            Some(&self.sub_uuid(&self.hotzone)?),
            &[hz],
            false,
        )?;
        // The overlay: the live table of NAME.
        let targets = self.targets(live, None);
        if let Err(e) = self.dm.create(
            &self.overlay,
            Some(&self.sub_uuid(&self.overlay)?),
            &targets,
            self.readonly,
        ) {
            let _ = self.remove_helpers();
            return Err(e.into());
        }
        // NAME → linear over the overlay, at its own size.
        let top = Target::Linear(LinearTarget {
            start: 0,
            sectors: span.min(self.sectors),
            device: self.dm.dev(&self.overlay)?,
            offset: 0,
        });
        if let Err(e) = self.swap(&self.name, &[top]) {
            let _ = self.remove_helpers();
            return Err(e);
        }
        self.stacked = true;
        Ok(())
    }

    /// Load `targets` into `name` and make them live (suspend without flush or freeze,
    /// resume).
    fn swap(&self, name: &str, targets: &[Target]) -> Result<()> {
        self.dm.load_inactive(name, targets, self.readonly)?;
        self.dm.suspend(name, QUIET)?;
        self.dm.resume(name)?;
        Ok(())
    }

    fn remove_helpers(&self) -> Result<()> {
        let opts = RemoveOptions {
            deferred: false,
            retry_busy: Some(Duration::from_secs(5)),
        };
        let mut first = None;
        for helper in [&self.overlay, &self.hotzone] {
            if self.dm.info(helper).is_ok() {
                if let Err(e) = self.dm.remove(helper, opts) {
                    first.get_or_insert(e);
                }
            }
        }
        match first {
            Some(e) => Err(e.into()),
            None => Ok(()),
        }
    }

    /// Drop the data device's cached pages of `[offset, offset + len)` (bytes of the data
    /// area; `len` 0: to the end of the device): the engine reads the hot zone through the
    /// page cache, which dm-crypt's writes bypass.
    fn drop_cache(&self, offset: u64, len: u64) {
        let start = (self.data_offset + offset) as libc::off_t;
        // SAFETY: posix_fadvise only reads its integer arguments; the descriptor is open.
        unsafe {
            libc::posix_fadvise(
                self.data.as_raw_fd(),
                start,
                len as libc::off_t,
                libc::POSIX_FADV_DONTNEED,
            );
        }
    }
}

/// `/dev/NAME` of a block device number (sysfs), `/dev/block/M:m` otherwise.
fn device_path(dev: DevT) -> String {
    let raw = dev.to_raw();
    let (maj, min) = (libc::major(raw), libc::minor(raw));
    std::fs::read_to_string(format!("/sys/dev/block/{maj}:{min}/uevent"))
        .ok()
        .and_then(|u| {
            u.lines()
                .find_map(|l| l.strip_prefix("DEVNAME=").map(|n| format!("/dev/{n}")))
        })
        .unwrap_or_else(|| format!("/dev/block/{maj}:{min}"))
}

/// The initialization of a decryption with a moved segment under this mapping
/// (cryptsetup 2.6.1's online `reencrypt_decrypt_with_datashift_init`): the mapping's table
/// is checked against the old segment, the moved layout's table is loaded, the mapping is
/// suspended (skipping the file-system freeze, but with its writes flushed, as
/// `DM_SUSPEND_SKIP_LOCKFS`) while the first segment moves, and resumed once the metadata
/// is committed (under its old table after a failure).
impl MoveHook for KernelReencrypt {
    fn check(&mut self, old: &SegmentTable) -> lukskit_volume::Result<()> {
        self.check_live(old).map_err(online_err)
    }

    fn before_move(&mut self, new: &SegmentTable) -> lukskit_volume::Result<()> {
        let targets = self.targets(new, None);
        self.dm
            .load_inactive(&self.name, &targets, self.readonly)
            .map_err(|e| online_err(format!("Failed to reload device {}: {e}", self.name)))?;
        let flush = SuspendOptions {
            noflush: false,
            skip_lockfs: true,
        };
        if let Err(e) = self.dm.suspend(&self.name, flush) {
            let _ = self.dm.clear_inactive(&self.name);
            return Err(online_err(format!(
                "Failed to suspend device {}: {e}",
                self.name
            )));
        }
        // The mapping wrote the data to move past the page cache of the device.
        self.drop_cache(0, 0);
        Ok(())
    }

    fn after_move(&mut self, committed: bool) -> lukskit_volume::Result<()> {
        if !committed && self.dm.clear_inactive(&self.name).is_err() {
            return Err(online_err("Failed to clear table."));
        }
        self.dm
            .resume(&self.name)
            .map(|_| ())
            .map_err(|e| online_err(format!("Failed to resume device {}: {e}", self.name)))
    }
}

impl OnlineHook for KernelReencrypt {
    fn mapping_size(&self) -> Option<u64> {
        Some(self.sectors * 512)
    }

    fn start(&mut self, live: &SegmentTable) -> lukskit_volume::Result<()> {
        self.build_stack(live).map_err(online_err)
    }

    fn before_hotzone(
        &mut self,
        segments: &SegmentTable,
        hot: HotZone,
    ) -> lukskit_volume::Result<()> {
        let hz = self.dm.dev(&self.hotzone).map_err(online_err)?;
        let targets = self.targets(segments, Some((hot.index, hz)));
        self.dm
            .load_inactive(&self.overlay, &targets, self.readonly)
            .map_err(|e| online_err(format!("Failed to reload device {}: {e}", self.overlay)))?;
        // Top to bottom: the overlay, then the hot-zone device; the overlay's new table goes
        // live while the hot zone's I/O waits.
        self.dm
            .suspend(&self.overlay, QUIET)
            .map_err(|e| online_err(format!("Failed to suspend device {}: {e}", self.overlay)))?;
        self.dm
            .suspend(&self.hotzone, QUIET)
            .map_err(|e| online_err(format!("Failed to suspend device {}: {e}", self.hotzone)))?;
        self.hotzone_suspended = true;
        self.dm
            .resume(&self.overlay)
            .map_err(|e| online_err(format!("Failed to resume device {}: {e}", self.overlay)))?;
        // From the hot zone on to the end of the device: a decryption with a moved segment
        // reads the hot zone's ciphertext further on, where the mapping wrote it.
        self.drop_cache(hot.offset, 0);
        Ok(())
    }

    fn after_hotzone(&mut self, _segments: &SegmentTable) -> lukskit_volume::Result<()> {
        self.dm
            .resume(&self.hotzone)
            .map_err(|e| online_err(format!("Failed to resume device {}: {e}", self.hotzone)))?;
        self.hotzone_suspended = false;
        Ok(())
    }

    fn finish(&mut self, segments: &SegmentTable, finished: bool) -> lukskit_volume::Result<()> {
        if !self.stacked {
            return Ok(());
        }
        let targets = self.targets(segments, None);
        let reloaded = self
            .swap(&self.name, &targets)
            .map_err(|e| online_err(format!("Failed to reload device {}: {e}", self.name)));
        let removed = self.remove_helpers().map_err(online_err);
        self.stacked = false;
        // A finished decryption (nothing left encrypted): as cryptsetup 2.6.1's
        // `reencrypt_teardown_ok`, the mapping goes with a deferred removal (at once when
        // nothing holds it open, else on its last close, e.g. the unmount).
        let decrypted = !segments
            .segments()
            .iter()
            .any(|s| matches!(s.kind, SegmentKind::Crypt(_)));
        if reloaded.is_ok() && finished && decrypted {
            let deferred = RemoveOptions {
                deferred: true,
                retry_busy: None,
            };
            let _ = self.dm.remove(&self.name, deferred);
        }
        reloaded.and(removed)
    }

    fn abort(&mut self, _data_touched: bool) {
        if !self.hotzone_suspended {
            return;
        }
        // As cryptsetup's fatal path: I/O waiting for the hot zone must not go on under a
        // table that may not match the data (the overlay maps it under the new key), nor
        // hang: the hot-zone device fails every I/O until a recovery (close, then open or
        // repair, by either tool).
        let err = Target::Error {
            start: 0,
            sectors: self.hotzone_sectors,
        };
        if self.swap(&self.hotzone, &[err]).is_ok() {
            self.hotzone_suspended = false;
        }
    }
}
