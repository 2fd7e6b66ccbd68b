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
        "  mode:    {}\n",
        if info.flags.readonly {
            "readonly"
        } else {
            "read/write"
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

/// Actions the kernel backend does not have yet fail clearly on a kernel mapping (instead of
/// reporting it inactive).
pub fn refuse_unsupported(name: &str, action: &str) -> Result<()> {
    let is_kernel = DeviceMapper::open().is_ok_and(|dm| dm.info(mapping_name(name)).is_ok());
    if is_kernel {
        return Err(VolumeError::invalid(format!(
            "{action} of a kernel dm-crypt mapping is not supported by lukskit yet."
        )));
    }
    Ok(())
}
