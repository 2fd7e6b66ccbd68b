//! The kernel backend of `open`, `close` and `status`: a real dm-crypt mapping through the
//! device-mapper ioctls (crate `lukskit-dm`), made exactly as cryptsetup 2.6 makes it — the
//! same table line (LUKS2 keys through the kernel keyring as `logon` keys), the same DM UUID,
//! a loop device with autoclear for image files.

use crate::args::Opts;
use lukskit_crypto::SecretBuf;
use lukskit_dm::{
    dm_uuid, keyring, CryptFlags, CryptKey, CryptTarget, DevT, DeviceMapper, DmError,
    RemoveOptions, Target,
};
use lukskit_expose::loopdev::{LoopDevice, LoopOptions};
use lukskit_expose::runtime::MappingConfig;
use lukskit_volume::data::DataLayout;
use lukskit_volume::{ErrorKind, Result, VolumeError};
use std::os::unix::fs::FileTypeExt;
use std::path::Path;
use std::time::Duration;

/// Which backend `open` uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// A kernel dm-crypt mapping.
    Kernel,
    /// lukskit's own serving process (FUSE file + loop device, FUSE file only, NBD export).
    Userspace,
}

/// The backend for these options: `--backend kernel|userspace` when given; `--no-loop` and
/// `--nbd` need the userspace server; otherwise the kernel whenever it has device-mapper with
/// dm-crypt (loading the modules if needed), userspace elsewhere.
pub fn choose(o: &Opts) -> Result<Backend> {
    let userspace_only = o.no_loop || o.nbd.is_some();
    match o.backend.as_deref() {
        Some("kernel") if userspace_only => Err(VolumeError::invalid(
            "Options --no-loop and --nbd need --backend userspace.",
        )),
        Some("kernel") => {
            if kernel_has_dm_crypt() {
                Ok(Backend::Kernel)
            } else {
                Err(VolumeError::invalid(
                    "The kernel has no device-mapper with dm-crypt (/dev/mapper/control, dm_crypt).",
                ))
            }
        }
        Some("userspace") => Ok(Backend::Userspace),
        Some(other) => Err(VolumeError::invalid(format!(
            "Unknown backend {other} (kernel or userspace)."
        ))),
        None if userspace_only => Ok(Backend::Userspace),
        None if kernel_has_dm_crypt() => Ok(Backend::Kernel),
        None => Ok(Backend::Userspace),
    }
}

fn kernel_has_dm_crypt() -> bool {
    DeviceMapper::open()
        .and_then(|dm| dm.crypt_features())
        .is_ok_and(|f| f.is_some())
}

fn dm_err(e: DmError) -> VolumeError {
    let kind = if e.is_busy() {
        ErrorKind::Busy
    } else if e.is_not_found() {
        ErrorKind::Device
    } else {
        ErrorKind::Invalid
    };
    VolumeError::new(
        kind,
        format!("Cannot activate the device-mapper mapping: {e}."),
    )
}

/// Make the dm-crypt mapping described by `config` with volume key `key`. `digest` is the
/// LUKS2 digest of the data segment (it names the keyring key as cryptsetup names it).
pub fn open(o: &Opts, config: &MappingConfig, key: &SecretBuf, digest: Option<u32>) -> Result<()> {
    let dm = DeviceMapper::open().map_err(dm_err)?;
    if dm.info(&config.name).is_ok() {
        return Err(VolumeError::busy(format!(
            "Device {} already exists.",
            config.name
        )));
    }
    let features = dm
        .crypt_features()
        .map_err(dm_err)?
        .ok_or_else(|| VolumeError::invalid("The kernel has no dm-crypt target."))?;
    // The device as the kernel's table names it: a block device, or a loop device (with
    // autoclear: it goes away with the mapping) over an image file, as cryptsetup does.
    let dev_path = Path::new(&config.device);
    let is_block = std::fs::metadata(dev_path)
        .map(|m| m.file_type().is_block_device())
        .map_err(|_| {
            VolumeError::device(format!(
                "Device {} does not exist or access denied.",
                config.device
            ))
        })?;
    // Nobody may hold the device (cryptsetup's O_EXCL check); the kernel claims it itself as
    // the table loads, so the check's claim is released again first.
    drop(
        lukskit_volume::claim::Claim::acquire(&config.device).map_err(|_| {
            VolumeError::busy(format!(
                "Cannot use device {} which is in use (already mapped or mounted).",
                config.device
            ))
        })?,
    );
    let loop_dev = if is_block {
        None
    } else {
        Some(
            LoopDevice::attach(
                dev_path,
                LoopOptions {
                    block_size: 512,
                    read_only: config.read_only,
                    direct_io: false,
                },
            )
            .map_err(|e| VolumeError::io("Attaching a loop device to", &config.device, &e))?,
        )
    };
    let backing = loop_dev.as_ref().map_or(dev_path, |l| l.path());
    let devt = DevT::of_block_device(backing).map_err(dm_err)?;
    let layout = DataLayout::from(&config.layout);
    let device_size = block_size_bytes(backing)?;
    let size = layout.resolve_size(device_size)?;
    let description = match (config.kind.as_str(), &config.uuid, digest) {
        ("LUKS2", Some(uuid), Some(d)) => Some(keyring::luks2_key_description(uuid, d)),
        _ => None,
    };
    let key = if layout.cipher.starts_with("cipher_null") {
        CryptKey::Empty
    } else {
        CryptKey::for_volume_key(key, description.as_deref(), features.keyring())
    };
    let mut target = CryptTarget::new(size / 512, &layout.cipher, key, devt, layout.offset / 512);
    target.iv_offset = layout.iv_offset;
    target.sector_size = layout.sector_size;
    target.flags = CryptFlags {
        allow_discards: config.allow_discards,
        same_cpu_crypt: o.perf_same_cpu_crypt,
        submit_from_crypt_cpus: o.perf_submit_from_crypt_cpus,
        no_read_workqueue: o.perf_no_read_workqueue,
        no_write_workqueue: o.perf_no_write_workqueue,
        iv_large_sectors: layout.iv_large_sectors,
        high_priority: false,
    };
    let uuid = dm_uuid::crypt_dm_uuid(&config.kind, config.uuid.as_deref(), &config.name)
        .map_err(dm_err)?;
    let made = dm.create(
        &config.name,
        Some(&uuid),
        &[Target::Crypt(target)],
        config.read_only,
    );
    // The mapping holds the loop device now; with autoclear it is detached on close.
    drop(loop_dev);
    made.map_err(|e| {
        if e.is_busy() {
            VolumeError::busy(format!(
                "Cannot use device {} which is in use (already mapped or mounted).",
                config.device
            ))
        } else {
            dm_err(e)
        }
    })?;
    Ok(())
}

fn block_size_bytes(dev: &Path) -> Result<u64> {
    let f = std::fs::File::open(dev)
        .map_err(|e| VolumeError::io("Opening", &dev.display().to_string(), &e))?;
    lukskit_format::io::Storage::size(&f)
        .map_err(|e| VolumeError::io("Reading the size of", &dev.display().to_string(), &e))
}

/// The name of a `close`/`status` argument: cryptsetup accepts `/dev/mapper/NAME` too.
pub fn mapping_name(arg: &str) -> &str {
    arg.strip_prefix("/dev/mapper/").unwrap_or(arg)
}

/// `close NAME` for a kernel mapping: `None` when there is no dm mapping of that name.
pub fn close(name: &str, deferred: bool) -> Option<Result<()>> {
    let dm = DeviceMapper::open().ok()?;
    dm.info(name).ok()?;
    let res = dm.remove(
        name,
        RemoveOptions {
            deferred,
            retry_busy: Some(Duration::from_secs(2)),
        },
    );
    Some(match res {
        Ok(_) => Ok(()),
        Err(e) if e.is_busy() => Err(VolumeError::busy(format!("Device {name} is still in use."))),
        Err(e) => Err(dm_err(e)),
    })
}

/// `status NAME` for a kernel mapping, in cryptsetup 2.6's words: `None` when there is no dm
/// mapping of that name.
pub fn status(name: &str) -> Option<Result<()>> {
    let dm = DeviceMapper::open().ok()?;
    let (info, targets) = dm.table(name, false).ok()?;
    Some(print_status(name, &info, &targets))
}

fn print_status(name: &str, info: &lukskit_dm::DeviceInfo, targets: &[Target]) -> Result<()> {
    let Some(Target::Crypt(t)) = targets.first() else {
        println!("/dev/mapper/{name} is active.");
        return Ok(());
    };
    let kind = info
        .uuid
        .as_deref()
        .and_then(dm_uuid::parse_crypt_dm_uuid)
        .map(|u| u.crypt_type)
        .unwrap_or_else(|| "n/a".into());
    let in_use = info.open_count > 0;
    let mut s = format!(
        "/dev/mapper/{name} is active{}.\n",
        if in_use { " and is in use" } else { "" }
    );
    s += &format!("  type:    {kind}\n");
    s += &format!("  cipher:  {}\n", t.cipher);
    s += &format!("  keysize: {} bits\n", t.key.size() * 8);
    s += &format!(
        "  key location: {}\n",
        if t.key.in_keyring() {
            "keyring"
        } else {
            "dm-crypt"
        }
    );
    let dev = device_name(t.device);
    s += &format!("  device:  {dev}\n");
    if let Some(file) = loop_backing(&dev) {
        s += &format!("  loop:    {file}\n");
    }
    s += &format!("  sector size:  {}\n", t.sector_size);
    s += &format!("  offset:  {} sectors\n", t.offset);
    s += &format!("  size:    {} sectors\n", t.sectors);
    if t.iv_offset != 0 || kind == "PLAIN" {
        s += &format!("  skipped: {} sectors\n", t.iv_offset);
    }
    s += &format!(
        "  mode:    {}{}\n",
        if info.flags.readonly {
            "readonly"
        } else {
            "read/write"
        },
        if info.flags.suspended {
            " (suspended)"
        } else {
            ""
        }
    );
    let mut flags = Vec::new();
    if t.flags.allow_discards {
        flags.push("discards");
    }
    if t.flags.same_cpu_crypt {
        flags.push("same_cpu_crypt");
    }
    if t.flags.submit_from_crypt_cpus {
        flags.push("submit_from_crypt_cpus");
    }
    if t.flags.no_read_workqueue {
        flags.push("no_read_workqueue");
    }
    if t.flags.no_write_workqueue {
        flags.push("no_write_workqueue");
    }
    if !flags.is_empty() {
        s += &format!("  flags:   {}\n", flags.join(" "));
    }
    print!("{s}");
    Ok(())
}

/// `/dev/NAME` of a block device number, from sysfs.
fn device_name(dev: DevT) -> String {
    let raw = dev.to_raw();
    let (maj, min) = (libc::major(raw), libc::minor(raw));
    std::fs::read_to_string(format!("/sys/dev/block/{maj}:{min}/uevent"))
        .ok()
        .and_then(|u| {
            u.lines()
                .find_map(|l| l.strip_prefix("DEVNAME=").map(|n| format!("/dev/{n}")))
        })
        .unwrap_or_else(|| format!("{maj}:{min}"))
}

fn loop_backing(dev: &str) -> Option<String> {
    let n = dev.strip_prefix("/dev/")?;
    if !n.starts_with("loop") {
        return None;
    }
    std::fs::read_to_string(format!("/sys/block/{n}/loop/backing_file"))
        .ok()
        .map(|s| s.trim_end().to_string())
}

/// A kernel mapping made for a LUKS volume: what luksSuspend/luksResume/resize need.
pub struct KernelMapping {
    dm: DeviceMapper,
    /// The mapping name.
    pub name: String,
    /// `LUKS1`, `LUKS2`, `PLAIN`, ... from the DM UUID.
    pub kind: String,
    /// The LUKS UUID from the DM UUID (with dashes), when it carries one.
    pub uuid: Option<String>,
    /// The live crypt target (keys redacted).
    pub target: CryptTarget,
    /// Whether the mapping is suspended.
    pub suspended: bool,
    /// Whether the mapping is read-only.
    pub read_only: bool,
    /// The data device as a path (`/dev/vda`, or the image file behind a loop device).
    pub device: String,
}

/// The kernel mapping `name` (`/dev/mapper/NAME` accepted), `None` when there is none.
pub fn find(name: &str) -> Option<Result<KernelMapping>> {
    let name = mapping_name(name);
    let dm = DeviceMapper::open().ok()?;
    let (info, targets) = dm.table(name, false).ok()?;
    Some((|| {
        let Some(Target::Crypt(target)) = targets.into_iter().next() else {
            return Err(VolumeError::invalid(format!(
                "Device {name} is not a crypt device."
            )));
        };
        let parsed = info.uuid.as_deref().and_then(dm_uuid::parse_crypt_dm_uuid);
        let kind = parsed
            .as_ref()
            .map_or_else(|| "n/a".to_string(), |u| u.crypt_type.clone());
        let uuid = parsed.and_then(|u| u.uuid_hex).map(|u| with_dashes(&u));
        let dev = device_name(target.device);
        let device = loop_backing(&dev).unwrap_or(dev);
        Ok(KernelMapping {
            dm,
            name: name.to_string(),
            kind,
            uuid,
            suspended: info.flags.suspended,
            read_only: info.flags.readonly,
            target,
            device,
        })
    })())
}

/// A UUID written without dashes (as in DM UUIDs) in its canonical form.
fn with_dashes(u: &str) -> String {
    if u.len() != 32 || u.contains('-') {
        return u.to_string();
    }
    format!(
        "{}-{}-{}-{}-{}",
        &u[..8],
        &u[8..12],
        &u[12..16],
        &u[16..20],
        &u[20..]
    )
}

impl KernelMapping {
    fn is_luks(&self) -> bool {
        self.kind.starts_with("LUKS")
    }

    /// `luksSuspend`: suspend I/O (flushing first) and wipe the key from dm-crypt, as
    /// cryptsetup's `dm_suspend_and_wipe_key` does.
    pub fn suspend(&self) -> Result<()> {
        if !self.is_luks() {
            return Err(VolumeError::invalid(format!(
                "Operation not supported for device type {}.",
                self.kind
            )));
        }
        if self.suspended {
            return Err(VolumeError::busy(format!(
                "Volume {} is already suspended.",
                self.name
            )));
        }
        self.dm
            .suspend(&self.name, lukskit_dm::SuspendOptions::default())
            .map_err(dm_err)?;
        if let Err(e) = self.dm.wipe_key(&self.name, 0) {
            let _ = self.dm.resume(&self.name);
            return Err(dm_err(e));
        }
        Ok(())
    }

    /// `luksResume` with volume key `vk` (already checked against the header): give dm-crypt
    /// the key again (through the keyring for LUKS2 where the kernel has one, as cryptsetup
    /// does) and resume I/O.
    pub fn resume(&self, vk: &SecretBuf, digest: Option<u32>) -> Result<()> {
        if !self.suspended {
            return Err(VolumeError::invalid(format!(
                "Volume {} is not suspended.",
                self.name
            )));
        }
        let keyring = self
            .dm
            .crypt_features()
            .map_err(dm_err)?
            .is_some_and(|f| f.keyring());
        let description = match (self.kind.as_str(), &self.uuid, digest) {
            ("LUKS2", Some(uuid), Some(d)) => Some(keyring::luks2_key_description(uuid, d)),
            _ => None,
        };
        let key = CryptKey::for_volume_key(vk, description.as_deref(), keyring);
        self.dm.set_key(&self.name, 0, &key).map_err(dm_err)?;
        self.dm.resume(&self.name).map_err(dm_err)?;
        Ok(())
    }
}

impl KernelMapping {
    /// The volume key as the live table needs it for a reload: hex keys are read back from
    /// the kernel; a keyring key (LUKS2) needs `vk`, unlocked by the caller from the header.
    pub fn needs_volume_key(&self) -> bool {
        self.target.key.in_keyring()
    }

    /// `resize`: reload the table with `sectors` 512-byte sectors of data (`None`: all of the
    /// device after the data offset), as cryptsetup's resize does. `vk` and `digest` are
    /// needed when [`KernelMapping::needs_volume_key`].
    pub fn resize(
        &self,
        sectors: Option<u64>,
        vk: Option<(&SecretBuf, Option<u32>)>,
    ) -> Result<()> {
        let t = &self.target;
        let dev_path = device_name(t.device);
        let capacity = block_size_bytes(Path::new(&dev_path))? / 512;
        let available = capacity.saturating_sub(t.offset);
        let per_sector = u64::from(t.sector_size / 512).max(1);
        let want = sectors.unwrap_or(available);
        if want == 0 || want > available {
            return Err(VolumeError::invalid(format!(
                "Device {} is too small (it has {available} sectors after the data offset).",
                self.name
            )));
        }
        if !want.is_multiple_of(per_sector) {
            return Err(VolumeError::invalid(format!(
                "Device size is not aligned to requested sector size ({} bytes).",
                t.sector_size
            )));
        }
        let key = match vk {
            Some((vk, digest)) => {
                let description = match (self.kind.as_str(), &self.uuid, digest) {
                    ("LUKS2", Some(uuid), Some(d)) => Some(keyring::luks2_key_description(uuid, d)),
                    _ => None,
                };
                CryptKey::for_volume_key(vk, description.as_deref(), t.key.in_keyring())
            }
            None => {
                let (_, targets) = self.dm.table(&self.name, true).map_err(dm_err)?;
                match targets.into_iter().next() {
                    Some(Target::Crypt(live)) => live.key,
                    _ => {
                        return Err(VolumeError::invalid(format!(
                            "Device {} is not a crypt device.",
                            self.name
                        )))
                    }
                }
            }
        };
        let mut next = t.clone();
        next.sectors = want;
        next.key = key;
        self.dm
            .reload(&self.name, &[Target::Crypt(next)], self.read_only)
            .map_err(dm_err)?;
        Ok(())
    }
}
