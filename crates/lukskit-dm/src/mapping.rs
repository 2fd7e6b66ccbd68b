//! Mappings as cryptsetup makes them: create + load + resume as one step with cleanup,
//! remove with node cleanup, table and info queries, suspend/resume, dm-crypt key messages.
//!
//! Still kernel-only: nothing here reads a LUKS header. The activation layer decides the
//! table (cipher, key, offsets, flags) and the DM UUID ([`crate::dm_uuid::crypt_dm_uuid`]);
//! this module puts it into the kernel the way libdevmapper does for cryptsetup
//! (`DM_DEV_CREATE` with name and UUID, `DM_TABLE_LOAD` with `DM_SECURE_DATA_FLAG`, then a
//! resume; the device is removed again when a later step fails).

use std::time::Duration;

use zeroize::Zeroizing;

use crate::crypt::{CryptKey, KeyType};
use crate::devt::DevT;
use crate::error::{DmError, Result};
use crate::ioctl::{Control, DeviceInfo, ListedDevice, StatusType, SuspendOptions, TargetVersion};
use crate::keyring::{self, ThreadKey};
use crate::node::{self, NodeOutcome};
use crate::table::{check_contiguous, Target};

/// What dm-crypt in this kernel supports, from its target version (the thresholds
/// cryptsetup 2.6.1 uses in `_dm_set_crypt_compat`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CryptFeatures {
    /// The dm-crypt target version (`[1, 24, 0]` on Linux 6.1).
    pub version: [u32; 3],
    /// Whether the kernel keyring exists (`request_key` is not `ENOSYS`).
    pub kernel_keyring: bool,
}

impl CryptFeatures {
    fn at_least(&self, v: [u32; 3]) -> bool {
        self.version >= v
    }

    /// Keys by keyring reference (`:<size>:logon:<desc>`): dm-crypt >= 1.18.1 and a kernel
    /// keyring (cryptsetup's `DM_KERNEL_KEYRING_SUPPORTED`). Otherwise pass keys in hex.
    pub fn keyring(&self) -> bool {
        self.at_least([1, 18, 1]) && self.kernel_keyring
    }

    /// `allow_discards` (>= 1.11).
    pub fn discards(&self) -> bool {
        self.at_least([1, 11, 0])
    }

    /// `same_cpu_crypt` and `submit_from_crypt_cpus` (>= 1.14).
    pub fn same_cpu_crypt(&self) -> bool {
        self.at_least([1, 14, 0])
    }

    /// `sector_size:<n>`, `iv_large_sectors` and `capi:` cipher strings (>= 1.17).
    pub fn sector_size(&self) -> bool {
        self.at_least([1, 17, 0])
    }

    /// `no_read_workqueue` / `no_write_workqueue` (>= 1.22).
    pub fn no_workqueue(&self) -> bool {
        self.at_least([1, 22, 0])
    }

    /// `high_priority` (>= 1.26).
    pub fn high_priority(&self) -> bool {
        self.at_least([1, 26, 0])
    }
}

/// A mapping as the kernel reports it, plus where its node is.
#[derive(Debug, Clone)]
pub struct MappingInfo {
    /// Name, DM UUID, device number, open count, flags.
    pub info: DeviceInfo,
    /// `/dev/mapper/NAME`.
    pub node: std::path::PathBuf,
    /// Whether we created the node (no udev, or udev too slow) or found it.
    pub node_outcome: Option<NodeOutcome>,
}

/// What [`DeviceMapper::remove`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RemoveOutcome {
    /// The mapping is gone.
    Removed,
    /// It is still open; the kernel removes it when the last opener closes (deferred).
    Deferred,
}

/// Options of [`DeviceMapper::remove`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RemoveOptions {
    /// Use `DM_DEFERRED_REMOVE`: an open mapping is removed on its last close.
    pub deferred: bool,
    /// Retry on `EBUSY` for up to this long (libdevmapper's `dm_task_retry_remove` retries
    /// for ~5 s: udev's probes hold mappings open briefly). `None`: fail at once.
    pub retry_busy: Option<Duration>,
}

/// The kernel's device-mapper, through an open control node.
#[derive(Debug)]
pub struct DeviceMapper {
    ctl: Control,
    udev_wait: Duration,
}

impl DeviceMapper {
    /// Open `/dev/mapper/control`, creating the node (and loading `dm_mod`) when missing.
    pub fn open() -> Result<DeviceMapper> {
        // Best effort: if it cannot be made, opening reports why.
        let _ = node::ensure_control(true);
        Ok(DeviceMapper {
            ctl: Control::open()?,
            udev_wait: node::UDEV_WAIT,
        })
    }

    /// Use an already open control node.
    pub fn with_control(ctl: Control) -> DeviceMapper {
        DeviceMapper {
            ctl,
            udev_wait: node::UDEV_WAIT,
        }
    }

    /// Change how long node handling waits for udev (default [`node::UDEV_WAIT`]).
    pub fn set_udev_wait(&mut self, wait: Duration) {
        self.udev_wait = wait;
    }

    /// The raw ioctl interface.
    pub fn control(&self) -> &Control {
        &self.ctl
    }

    /// The kernel's DM ioctl interface version.
    pub fn version(&self) -> Result<[u32; 3]> {
        self.ctl.version()
    }

    /// Every mapping.
    pub fn list(&self) -> Result<Vec<ListedDevice>> {
        self.ctl.list_devices()
    }

    /// Target types and versions the kernel has loaded.
    pub fn targets(&self) -> Result<Vec<TargetVersion>> {
        self.ctl.list_versions()
    }

    /// What dm-crypt supports here (loads dm-crypt if needed). `Ok(None)`: no dm-crypt.
    pub fn crypt_features(&self) -> Result<Option<CryptFeatures>> {
        Ok(self.ctl.target_version("crypt")?.map(|t| CryptFeatures {
            version: t.version,
            kernel_keyring: keyring::kernel_keyring_available(),
        }))
    }

    /// Create mapping `name` with DM UUID `dm_uuid`, load `targets` (contiguous from sector
    /// 0) read-only or not, and resume it; then make `/dev/mapper/NAME` usable. Keyring keys
    /// that carry a payload are added to this thread's keyring for the load and revoked right
    /// after it. If any step after the create fails, the half-made mapping is removed again.
    pub fn create(
        &self,
        name: &str,
        dm_uuid: Option<&str>,
        targets: &[Target],
        readonly: bool,
    ) -> Result<MappingInfo> {
        check_contiguous(targets)?;
        let specs = targets
            .iter()
            .map(Target::to_spec)
            .collect::<Result<Vec<_>>>()?;
        let secure = targets.iter().any(|t| matches!(t, Target::Crypt(_)));
        self.ctl.create(name, dm_uuid)?;
        let loaded = (|| {
            let keys = load_keyring_payloads(targets)?;
            self.ctl.load_table(name, &specs, readonly, secure)?;
            revoke_all(keys)?;
            self.ctl.resume(name, secure)
        })();
        let info = match loaded {
            Ok(i) => i,
            Err(e) => {
                let _ = self.ctl.remove(name, false);
                return Err(e);
            }
        };
        let outcome = match node::ensure_node(name, info.dev, self.udev_wait) {
            Ok(o) => o,
            Err(e) => {
                let _ = self.ctl.remove(name, false);
                return Err(e);
            }
        };
        Ok(MappingInfo {
            node: node::mapper_path(name),
            node_outcome: Some(outcome),
            info: self.ctl.info(name).unwrap_or(info),
        })
    }

    /// Load `targets` as the inactive table of existing mapping `name` and make it live with
    /// a suspend + resume (what cryptsetup's `resize` and `refresh` do). The suspend flushes
    /// (no `noflush`).
    pub fn reload(&self, name: &str, targets: &[Target], readonly: bool) -> Result<DeviceInfo> {
        check_contiguous(targets)?;
        let specs = targets
            .iter()
            .map(Target::to_spec)
            .collect::<Result<Vec<_>>>()?;
        let secure = targets.iter().any(|t| matches!(t, Target::Crypt(_)));
        let keys = load_keyring_payloads(targets)?;
        self.ctl.load_table(name, &specs, readonly, secure)?;
        revoke_all(keys)?;
        if let Err(e) = self.ctl.suspend(name, SuspendOptions::default()) {
            let _ = self.ctl.clear_table(name);
            return Err(e);
        }
        self.ctl.resume(name, secure)
    }

    /// Load `targets` as the inactive table of existing mapping `name`, without making it
    /// live (a later resume does; what libdevmapper's reload does). Keyring keys with a
    /// payload are in this thread's keyring for the load only.
    pub fn load_inactive(&self, name: &str, targets: &[Target], readonly: bool) -> Result<()> {
        check_contiguous(targets)?;
        let specs = targets
            .iter()
            .map(Target::to_spec)
            .collect::<Result<Vec<_>>>()?;
        let secure = targets.iter().any(|t| matches!(t, Target::Crypt(_)));
        let keys = load_keyring_payloads(targets)?;
        self.ctl.load_table(name, &specs, readonly, secure)?;
        revoke_all(keys)
    }

    /// Remove mapping `name` and, unless udev handles it, its `/dev/mapper/NAME` node.
    pub fn remove(&self, name: &str, opts: RemoveOptions) -> Result<RemoveOutcome> {
        let dev = self.ctl.info(name)?.dev;
        let deadline = opts.retry_busy.map(|d| std::time::Instant::now() + d);
        let info = loop {
            match self.ctl.remove(name, opts.deferred) {
                Ok(i) => break i,
                Err(e)
                    if e.is_busy() && deadline.is_some_and(|d| std::time::Instant::now() < d) =>
                {
                    std::thread::sleep(Duration::from_millis(200));
                }
                Err(e) => return Err(e),
            }
        };
        if opts.deferred && info.flags.deferred_remove {
            // Where no udev runs nobody would remove the node once the kernel drops the
            // mapping: remove it now, as libdevmapper does (cryptsetup 2.6.1 with
            // DM_DISABLE_UDEV=1 leaves no /dev/mapper/NAME after `close --deferred`, the
            // holder keeps its open file). Where udev runs, its remove event does it later.
            if !node::udev_running() {
                node::remove_node(name, dev, Duration::ZERO)?;
            }
            return Ok(RemoveOutcome::Deferred);
        }
        node::remove_node(name, dev, self.udev_wait)?;
        Ok(RemoveOutcome::Removed)
    }

    /// Cancel a deferred remove of `name`.
    pub fn cancel_deferred_remove(&self, name: &str) -> Result<()> {
        self.ctl.cancel_deferred_remove(name)
    }

    /// State of `name` (open count, flags, device number, DM UUID).
    pub fn info(&self, name: &str) -> Result<DeviceInfo> {
        self.ctl.info(name)
    }

    /// The live table of `name`. With `with_keys`, crypt targets carry their hex keys (read
    /// with `DM_SECURE_DATA_FLAG`, held in zeroizing memory); without, hex keys come back
    /// [`CryptKey::Redacted`]. Keyring references are returned either way.
    pub fn table(&self, name: &str, with_keys: bool) -> Result<(DeviceInfo, Vec<Target>)> {
        let (info, raw) = self.ctl.table_status(name, StatusType::Table, true)?;
        let targets = raw
            .iter()
            .map(|t| Target::from_status(t, with_keys))
            .collect::<Result<Vec<_>>>()?;
        Ok((info, targets))
    }

    /// The run-time status lines of `name` (`dmsetup status`): `(start, length, type,
    /// status)` per target.
    pub fn status(&self, name: &str) -> Result<Vec<(u64, u64, String, String)>> {
        let (_, raw) = self.ctl.table_status(name, StatusType::Info, false)?;
        Ok(raw
            .into_iter()
            .map(|t| {
                (
                    t.start,
                    t.length,
                    t.target_type.clone(),
                    t.params.to_string(),
                )
            })
            .collect())
    }

    /// Suspend `name` (flushing unless `opts.noflush`).
    pub fn suspend(&self, name: &str, opts: SuspendOptions) -> Result<DeviceInfo> {
        self.ctl.suspend(name, opts)
    }

    /// Drop the inactive table of `name` loaded by [`DeviceMapper::load_inactive`] (so that
    /// a resume keeps the live one).
    pub fn clear_inactive(&self, name: &str) -> Result<()> {
        self.ctl.clear_table(name).map(|_| ())
    }

    /// Resume `name`.
    pub fn resume(&self, name: &str) -> Result<DeviceInfo> {
        self.ctl.resume(name, true)
    }

    /// Send `message` to the target at `sector` of `name`, with `DM_SECURE_DATA_FLAG`.
    pub fn message(
        &self,
        name: &str,
        sector: u64,
        message: &str,
    ) -> Result<Option<Zeroizing<String>>> {
        self.ctl.message(name, sector, message.as_bytes(), true)
    }

    /// dm-crypt's `key wipe` on the target at `sector` (the mapping must be suspended):
    /// what `cryptsetup luksSuspend` sends after suspending.
    pub fn wipe_key(&self, name: &str, sector: u64) -> Result<()> {
        self.ctl.message(name, sector, b"key wipe", true)?;
        Ok(())
    }

    /// dm-crypt's `key set <key>` on the target at `sector` (the mapping must be suspended):
    /// what `cryptsetup luksResume` sends before resuming. A keyring key with a payload is
    /// added to the thread keyring for the message and revoked after it.
    pub fn set_key(&self, name: &str, sector: u64, key: &CryptKey) -> Result<()> {
        if matches!(key, CryptKey::Redacted { .. }) {
            return Err(DmError::InvalidArgument("cannot set a redacted key".into()));
        }
        let thread_key = match key {
            CryptKey::Keyring(k) => match &k.payload {
                Some(p) => Some(ThreadKey::add(k.key_type, &k.description, p.as_bytes())?),
                None => None,
            },
            _ => None,
        };
        let mut msg = Zeroizing::new(String::from("key set "));
        msg.push_str(&key.render());
        self.ctl.message(name, sector, msg.as_bytes(), true)?;
        if let Some(k) = thread_key {
            k.revoke()?;
        }
        Ok(())
    }

    /// Rename `name` to `new_name` (the node follows where we manage it).
    pub fn rename(&self, name: &str, new_name: &str) -> Result<DeviceInfo> {
        let before = self.ctl.info(name)?;
        let info = self.ctl.rename(name, new_name)?;
        node::remove_node(name, before.dev, self.udev_wait)?;
        node::ensure_node(new_name, before.dev, self.udev_wait)?;
        Ok(info)
    }

    /// The device number of mapping `name`.
    pub fn dev(&self, name: &str) -> Result<DevT> {
        Ok(self.ctl.info(name)?.dev)
    }
}

/// Add the payloads of keyring keys in `targets` to the thread keyring.
fn load_keyring_payloads(targets: &[Target]) -> Result<Vec<ThreadKey>> {
    let mut keys = Vec::new();
    for t in targets {
        if let Target::Crypt(c) = t {
            if let CryptKey::Keyring(k) = &c.key {
                if let Some(p) = &k.payload {
                    if k.key_type != KeyType::Logon && k.key_type != KeyType::User {
                        return Err(DmError::InvalidArgument(
                            "only logon and user keys can be loaded from a payload".into(),
                        ));
                    }
                    keys.push(ThreadKey::add(k.key_type, &k.description, p.as_bytes())?);
                }
            }
        }
    }
    Ok(keys)
}

fn revoke_all(keys: Vec<ThreadKey>) -> Result<()> {
    for k in keys {
        k.revoke()?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn feature_thresholds_follow_cryptsetup() {
        let f = |v| CryptFeatures {
            version: v,
            kernel_keyring: true,
        };
        // Linux 6.1 (reference VM): crypt v1.24.0.
        let k61 = f([1, 24, 0]);
        assert!(k61.keyring() && k61.sector_size() && k61.no_workqueue() && k61.discards());
        assert!(!k61.high_priority());
        assert!(!f([1, 18, 0]).keyring());
        assert!(f([1, 18, 1]).keyring());
        assert!(!CryptFeatures {
            version: [1, 24, 0],
            kernel_keyring: false
        }
        .keyring());
        assert!(!f([1, 21, 0]).no_workqueue());
    }
}
