//! The kernel backend of `open`, `close` and `status`: a real dm-crypt mapping through the
//! device-mapper ioctls (crate `lukskit-dm`), made exactly as cryptsetup 2.6 makes it — the
//! same table line (LUKS2 keys through the kernel keyring as `logon` keys), the same DM UUID,
//! a loop device with autoclear for image files.

use crate::error::{ActivateError, Result};
use crate::request::{KernelOptions, MappingConfig};
use crate::status::{Exposure, Status};
use lukskit_crypto::SecretBuf;
use lukskit_dm::{
    dm_uuid, keyring, CryptFlags, CryptKey, CryptTarget, DevT, DeviceMapper, LinearTarget,
    RemoveOptions, Target,
};
use lukskit_expose::loopdev::{LoopDevice, LoopOptions};
use lukskit_volume::data::DataLayout;
use lukskit_volume::segment::{CryptSegment, SegmentKind, SegmentTable};
use std::os::unix::fs::FileTypeExt;
use std::path::Path;
use std::time::Duration;

/// Whether the kernel has device-mapper with dm-crypt (creating `/dev/mapper/control` and
/// loading the modules where needed).
pub fn available() -> bool {
    DeviceMapper::open()
        .and_then(|dm| dm.crypt_features())
        .is_ok_and(|f| f.is_some())
}

/// Make the dm-crypt mapping described by `config` with volume key `key`.
pub fn open(config: &MappingConfig, opts: &KernelOptions, key: &SecretBuf) -> Result<()> {
    open_with(config, opts, TableSource::Layout(key))
}

/// Make one mapping of all the segments of `table` (a LUKS2 header in re-encryption, as
/// cryptsetup's `LUKS2_activate_multi`): one target per segment, LUKS2 keys through the
/// kernel keyring named after each segment's digest. The table must fit the data device.
pub fn open_table(
    config: &MappingConfig,
    opts: &KernelOptions,
    table: &SegmentTable,
) -> Result<()> {
    open_with(config, opts, TableSource::Table(table))
}

/// Where the table of a new mapping comes from.
enum TableSource<'a> {
    /// `config.layout` with this volume key.
    Layout(&'a SecretBuf),
    /// A ready segment table.
    Table(&'a SegmentTable),
}

fn open_with(config: &MappingConfig, opts: &KernelOptions, source: TableSource<'_>) -> Result<()> {
    let dm = DeviceMapper::open()?;
    if dm.info(&config.name).is_ok() {
        return Err(ActivateError::NameExists {
            name: config.name.clone(),
        });
    }
    let features = dm.crypt_features()?.ok_or(ActivateError::NoDeviceMapper)?;
    // The device as the kernel's table names it: a block device, or a loop device (with
    // autoclear: it goes away with the mapping) over an image file, as cryptsetup does.
    let dev_path = Path::new(&config.device);
    let is_block = std::fs::metadata(dev_path)
        .map(|m| m.file_type().is_block_device())
        .map_err(|_| ActivateError::DeviceMissing {
            device: config.device.clone(),
        })?;
    // Nobody may hold the device (cryptsetup's O_EXCL check; not for --shared, whose device
    // other mappings use); the kernel claims it itself as the table loads, so the check's
    // claim is released again first.
    if !opts.shared {
        drop(
            lukskit_volume::claim::Claim::acquire(&config.device).map_err(|_| {
                ActivateError::DeviceInUse {
                    device: config.device.clone(),
                }
            })?,
        );
    }
    // An image that cannot be opened for writing (a read-only file system, no write
    // permission) is attached read-only, as cryptsetup's `crypt_loop_attach` does on EROFS
    // or EACCES.
    let loop_dev = if is_block {
        None
    } else {
        let attach = |read_only| {
            LoopDevice::attach(
                dev_path,
                LoopOptions {
                    block_size: 512,
                    read_only,
                    direct_io: false,
                },
            )
        };
        let attached = match attach(config.read_only) {
            Err(e)
                if !config.read_only
                    && matches!(e.raw_os_error(), Some(libc::EROFS | libc::EACCES)) =>
            {
                attach(true)
            }
            other => other,
        };
        Some(attached.map_err(|e| {
            ActivateError::io(
                format!("Cannot attach a loop device to {}", config.device),
                e,
            )
        })?)
    };
    let backing = loop_dev.as_ref().map_or(dev_path, |l| l.path());
    // A read-only backing device (such a loop device, a write-protected disk) makes the
    // mapping read-only, as cryptsetup's `device_block_adjust` sets CRYPT_ACTIVATE_READONLY
    // - but not for TCRYPT, whose `TCRYPT_activate` resets the flags of every layer it
    // creates after that call (seen in the reference VM: tests/refvm/kernel/formats.sh opens
    // images on a read-only ext4; cryptsetup's TCRYPT mappings stay read/write, BITLK ones
    // are read-only).
    let read_only = config.read_only
        || (config.kind != lukskit_format::VolumeType::Tcrypt && device_read_only(backing));
    let devt = DevT::of_block_device(backing)?;
    let layout = DataLayout::from(&config.layout);
    let device_size = block_size_bytes(backing)?;
    let built;
    let table = match source {
        TableSource::Layout(key) => {
            built = SegmentTable::from_layout(&layout, key.as_bytes(), device_size)?;
            &built
        }
        TableSource::Table(t) => {
            t.check_device(device_size)?;
            t
        }
    };
    let flags = CryptFlags {
        allow_discards: config.allow_discards,
        same_cpu_crypt: opts.same_cpu_crypt,
        submit_from_crypt_cpus: opts.submit_from_crypt_cpus,
        no_read_workqueue: opts.no_read_workqueue,
        no_write_workqueue: opts.no_write_workqueue,
        iv_large_sectors: false,
        high_priority: false,
    };
    // The mapping's size must be whole logical blocks of the device (cryptsetup checks it
    // before it makes the mapping: a plain `--size 7` over a 4096-byte disk is refused).
    let total: u64 = table.segments().iter().map(|s| s.len / 512).sum();
    if !total.is_multiple_of(logical_block_sectors(backing)) {
        return Err(ActivateError::InvalidRequest(
            "Device size is not aligned to device logical block size.".to_string(),
        ));
    }
    let targets = dm_targets(table, devt, flags, |c| {
        // LUKS2 keys go through the kernel keyring, named after their digest.
        let description = match (config.kind.name(), &config.uuid, c.digest.or(opts.digest)) {
            ("LUKS2", Some(uuid), Some(d)) => Some(keyring::luks2_key_description(uuid, d)),
            _ => None,
        };
        CryptKey::for_volume_key(
            &c.key,
            description.as_deref(),
            features.keyring() && !opts.disable_keyring,
        )
    });
    let uuid = dm_uuid::crypt_dm_uuid(config.kind.name(), config.uuid.as_deref(), &config.name)?;
    let made = dm.create(&config.name, Some(&uuid), &targets, read_only);
    // The mapping holds the loop device now; with autoclear it is detached on close.
    drop(loop_dev);
    made.map_err(|e| ActivateError::from_create(&config.device, e))?;
    Ok(())
}

/// `BLKROGET` (`_IO(0x12, 94)`, linux/fs.h): whether a block device is read-only.
const BLKROGET: libc::c_ulong = 0x125e;

/// Whether block device `path` cannot be written, as cryptsetup's `device_info` decides it:
/// its read-write open is refused (EROFS, EACCES) or the kernel marks it read-only
/// (BLKROGET).
fn device_read_only(path: &Path) -> bool {
    use std::os::fd::AsRawFd;
    match std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)
    {
        Err(e) => matches!(e.raw_os_error(), Some(libc::EROFS | libc::EACCES)),
        Ok(f) => {
            let mut ro: libc::c_int = 0;
            // SAFETY: BLKROGET writes one int through the pointer, which lives for the call.
            let rc = unsafe { libc::ioctl(f.as_raw_fd(), BLKROGET as _, &mut ro) };
            rc == 0 && ro != 0
        }
    }
}

/// The device-mapper table of segment table `table` over `device`: one target per segment,
/// in order (crypt, linear, zero), each starting where the previous ends (in 512-byte
/// sectors). Crypt targets get the boolean `flags` (their own `iv_large_sectors`), their
/// sector size and IV offset, and the key field `key` makes for the segment (`-` for
/// `cipher_null`). A table of one crypt segment gives exactly cryptsetup's single-target
/// table.
pub fn dm_targets(
    table: &SegmentTable,
    device: DevT,
    flags: CryptFlags,
    mut key: impl FnMut(&CryptSegment) -> CryptKey,
) -> Vec<Target> {
    table
        .segments()
        .iter()
        .map(|s| {
            let (start, sectors) = (s.start / 512, s.len / 512);
            match &s.kind {
                SegmentKind::Crypt(c) => {
                    let k = if c.cipher.cipher == "cipher_null" {
                        CryptKey::Empty
                    } else {
                        key(c)
                    };
                    let mut t = CryptTarget::new(
                        sectors,
                        &c.cipher.to_string(),
                        k,
                        device,
                        c.device_offset / 512,
                    );
                    t.start = start;
                    t.iv_offset = c.iv_offset;
                    t.sector_size = c.sector_size;
                    t.flags = CryptFlags {
                        iv_large_sectors: c.iv_large_sectors,
                        ..flags
                    };
                    Target::Crypt(t)
                }
                SegmentKind::Linear { device_offset } => Target::Linear(LinearTarget {
                    start,
                    sectors,
                    device,
                    offset: device_offset / 512,
                }),
                SegmentKind::Zero => Target::Zero { start, sectors },
            }
        })
        .collect()
}

/// The logical block size of block device `dev` in 512-byte sectors (1 when it cannot be
/// read: the kernel then has the last word).
fn logical_block_sectors(dev: &Path) -> u64 {
    use std::os::fd::AsRawFd;
    let Ok(f) = std::fs::File::open(dev) else {
        return 1;
    };
    let mut size: libc::c_int = 0;
    // SAFETY: BLKSSZGET writes one int into the pointed-to, live local; the descriptor is open.
    let rc = unsafe { libc::ioctl(f.as_raw_fd(), libc::BLKSSZGET, &mut size) };
    if rc != 0 || size < 512 {
        return 1;
    }
    u64::try_from(size).map_or(1, |s| s / 512)
}

fn block_size_bytes(dev: &Path) -> Result<u64> {
    let f = std::fs::File::open(dev)
        .map_err(|e| ActivateError::io(format!("Cannot open {}", dev.display()), e))?;
    lukskit_format::io::Storage::size(&f)
        .map_err(|e| ActivateError::io(format!("Cannot read the size of {}", dev.display()), e))
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

/// `/dev/mapper/NAME` when `dev` is a device-mapper device (what cryptsetup's `status`
/// names a data device that is itself a mapping), from sysfs.
fn mapper_name(dev: DevT) -> Option<String> {
    let raw = dev.to_raw();
    let (maj, min) = (libc::major(raw), libc::minor(raw));
    let name = std::fs::read_to_string(format!("/sys/dev/block/{maj}:{min}/dm/name")).ok()?;
    let name = name.trim_end();
    (!name.is_empty()).then(|| format!("/dev/mapper/{name}"))
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

/// A kernel dm-crypt mapping, as read back from the kernel.
pub struct KernelMapping {
    dm: DeviceMapper,
    info: lukskit_dm::DeviceInfo,
    /// The mapping name.
    pub name: String,
    /// `LUKS1`, `LUKS2`, `PLAIN`, ... from the DM UUID (`n/a` without one).
    pub kind: String,
    /// The LUKS UUID from the DM UUID (with dashes), when it carries one.
    pub uuid: Option<String>,
    /// The live crypt target (keys redacted).
    pub target: CryptTarget,
    /// The data device as a path (`/dev/vda`, or the image file behind a loop device).
    pub device: String,
    /// The dm-integrity mapping under the crypt target (`NAME_dif`), for LUKS2 authenticated
    /// encryption.
    pub dif: Option<String>,
    /// The data device (under `NAME_dif` when there is one).
    data_dev: DevT,
    /// The size of the whole table in 512-byte sectors (more than the crypt target's
    /// during a re-encryption).
    total_sectors: u64,
    /// The offset and IV offset `status` reports (see [`reported_offsets`]).
    reported: (u64, u64),
    /// Whether a crypt target of the mapping's own table takes its key from the kernel
    /// keyring (what `status` reports as the key location: not under the online
    /// re-encryption's helper stack, whose own table is one linear target, as cryptsetup).
    own_keyring_key: bool,
}

/// The data offset and IV offset cryptsetup's `status` reports for a mapping whose own table
/// is `targets`: those of its crypt or linear target with the smallest offset (the first of
/// equals; a linear target has no IV offset). So a LUKS2 device in re-encryption reports
/// the smallest of its segments' offsets, and 0 under the online re-encryption stack (one
/// linear target over `NAME-overlay`), as cryptsetup 2.6.1 (checked in the VM, 2026-11-28).
fn reported_offsets(targets: &[Target]) -> Option<(u64, u64)> {
    let mut min: Option<(u64, u64)> = None;
    for t in targets {
        let this = match t {
            Target::Crypt(c) => (c.offset, c.iv_offset),
            Target::Linear(l) => (l.offset, 0),
            _ => continue,
        };
        if min.is_none_or(|(offset, _)| offset > this.0) {
            min = Some(this);
        }
    }
    min
}

/// The names of the kernel's dm-crypt mappings made by lukskit or cryptsetup (a DM UUID
/// `CRYPT-…`), in the kernel's order; none without device-mapper. Kernels too old to report
/// UUIDs in the list (before DM interface 4.45) have each mapping asked.
pub fn crypt_mapping_names() -> Vec<String> {
    let Ok(dm) = DeviceMapper::open() else {
        return Vec::new();
    };
    let Ok(list) = dm.list() else {
        return Vec::new();
    };
    list.into_iter()
        .filter(|d| match &d.uuid {
            Some(u) => u.starts_with("CRYPT-"),
            None => dm
                .table(&d.name, false)
                .is_ok_and(|(info, _)| info.uuid.is_some_and(|u| u.starts_with("CRYPT-"))),
        })
        // Helper devices (`CRYPT-SUBDEV-…`: an online re-encryption's layers, the lower
        // layers of a cascade) are shown through the mapping on top of them.
        .filter(|d| {
            !d.uuid
                .as_deref()
                .is_some_and(|u| u.starts_with("CRYPT-SUBDEV-"))
        })
        .map(|d| d.name)
        .collect()
}

/// The kernel mapping `name`: `Ok(None)` when there is none (or no device-mapper at all).
pub fn find(name: &str) -> Result<Option<KernelMapping>> {
    let Ok(dm) = DeviceMapper::open() else {
        return Ok(None);
    };
    let Ok((info, targets)) = dm.table(name, false) else {
        return Ok(None);
    };
    let total_sectors = targets.last().map_or(0, |t| t.start() + t.sectors());
    let reported = reported_offsets(&targets);
    let own_keyring_key = targets
        .iter()
        .any(|t| matches!(t, Target::Crypt(c) if c.key.in_keyring()));
    // An online re-encryption (running, or stopped by a failure and waiting for recovery)
    // maps NAME as one linear target over NAME-overlay, whose table holds the segments:
    // look through it, past the crypt target that goes through the hot-zone device.
    let targets = through_reencryption_stack(&dm, name, targets);
    // A LUKS2 device in re-encryption has several targets (crypt and linear): its first
    // crypt target describes it.
    let parsed = info.uuid.as_deref().and_then(dm_uuid::parse_crypt_dm_uuid);
    let first_linear = match targets.first() {
        Some(Target::Linear(l)) => Some(l.clone()),
        _ => None,
    };
    let target = match targets.into_iter().find(|t| matches!(t, Target::Crypt(_))) {
        Some(Target::Crypt(t)) => t,
        // An encryption in progress that has not encrypted anything yet: only dm-linear,
        // under a LUKS2 DM UUID (cryptsetup's `reencrypt --encrypt --init-only DEV NAME`).
        // It stands here as the null cipher over the same sectors.
        _ => match (first_linear, &parsed) {
            (Some(l), Some(u)) if u.crypt_type.starts_with("LUKS2") => CryptTarget {
                start: 0,
                sectors: total_sectors,
                cipher: "cipher_null-ecb".to_string(),
                key: CryptKey::Empty,
                iv_offset: 0,
                device: l.device,
                offset: l.offset,
                flags: CryptFlags::default(),
                sector_size: 512,
                extra_options: Vec::new(),
            },
            _ => {
                return Err(ActivateError::Unsupported(format!(
                    "Device {name} is not a crypt device."
                )))
            }
        },
    };
    let kind = parsed
        .as_ref()
        .map_or_else(|| "n/a".to_string(), |u| u.crypt_type.clone());
    let uuid = parsed.and_then(|u| u.uuid_hex).map(|u| with_dashes(&u));
    // Authenticated encryption: dm-crypt sits on NAME_dif, whose device is the data device.
    let dif = crate::dif_mapping::dif_under(&dm, name, target.device);
    let data_dev = dif.as_ref().map_or(target.device, |(_, d)| *d);
    let dev = device_name(data_dev);
    let device = loop_backing(&dev).unwrap_or(dev);
    Ok(Some(KernelMapping {
        dif: dif.map(|(n, _)| n),
        data_dev,
        dm,
        info,
        name: name.to_string(),
        kind,
        uuid,
        reported: reported.unwrap_or((target.offset, target.iv_offset)),
        own_keyring_key,
        target,
        total_sectors,
        device,
    }))
}

/// The targets that describe mapping `name` whose own table is `targets`: those of
/// `NAME-overlay` when `name` is one linear target over it (the online re-encryption stack,
/// see `online_reencrypt`), without the targets that go through a `NAME-hotzone-*` device
/// (they would name the hot-zone device as the data device); else `targets`.
fn through_reencryption_stack(dm: &DeviceMapper, name: &str, targets: Vec<Target>) -> Vec<Target> {
    let overlay = format!("{name}-overlay");
    match (targets.as_slice(), dm.dev(&overlay)) {
        ([Target::Linear(l)], Ok(dev)) if l.device == dev => {}
        _ => return targets,
    }
    let Ok((_, inner)) = dm.table(&overlay, false) else {
        return targets;
    };
    let hot: Vec<DevT> = ["forward", "backward"]
        .iter()
        .filter_map(|d| dm.dev(&format!("{name}-hotzone-{d}")).ok())
        .collect();
    let device = |t: &Target| match t {
        Target::Crypt(c) => Some(c.device),
        Target::Linear(l) => Some(l.device),
        _ => None,
    };
    let kept: Vec<Target> = inner
        .into_iter()
        .filter(|t| device(t).is_some_and(|d| !hot.contains(&d)))
        .collect();
    if kept.is_empty() {
        targets
    } else {
        kept
    }
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

    /// Whether the mapping is suspended.
    pub fn is_suspended(&self) -> bool {
        self.info.flags.suspended
    }

    /// The size of the whole table in 512-byte sectors (read from the live table; the data
    /// device is not opened).
    pub fn size_sectors(&self) -> u64 {
        self.total_sectors
    }

    /// What `status` shows. Like cryptsetup, the type (and the sector size) come from the
    /// LUKS header, read from `header` or the mapped device: where it cannot be read (a
    /// detached header not given) the type is `n/a` and the sector size 512.
    pub fn status(&self, header: Option<&str>) -> Status {
        let t = &self.target;
        let header_read = !self.is_luks()
            || matches!(
                lukskit_volume::formats::probe_device(header.unwrap_or(&self.device)),
                Ok(Some(t)) if t.is_luks()
            );
        let (kind, sector_size) = if header_read {
            (self.kind.clone(), t.sector_size)
        } else {
            ("n/a".to_string(), 512)
        };
        let dev = device_name(self.data_dev);
        let f = &t.flags;
        // An integrity mapping: the LUKS cipher and integrity type behind the capi: field.
        let (cipher, integrity) =
            match (&self.dif, lukskit_dm::integrity::parse_dm_cipher(&t.cipher)) {
                (Some(_), Some((cipher, integrity))) => {
                    let bits =
                        lukskit_dm::integrity::integrity_key_bytes(&integrity).unwrap_or(0) * 8;
                    (cipher, Some((integrity, bits as u32)))
                }
                _ => (t.cipher.clone(), None),
            };
        let flags = [
            (f.allow_discards, "discards"),
            (f.same_cpu_crypt, "same_cpu_crypt"),
            (f.submit_from_crypt_cpus, "submit_from_crypt_cpus"),
            (f.no_read_workqueue, "no_read_workqueue"),
            (f.no_write_workqueue, "no_write_workqueue"),
        ]
        .iter()
        .filter(|(on, _)| *on)
        .map(|(_, n)| *n)
        .collect();
        Status {
            path: lukskit_dm::node::mapper_path(&self.name)
                .display()
                .to_string(),
            kind,
            cipher,
            key_bits: (t.key.size() * 8) as u32,
            key_in_keyring: self.own_keyring_key,
            integrity,
            header: None,
            loop_file: loop_backing(&dev),
            device: mapper_name(self.data_dev).unwrap_or(dev),
            sector_size,
            offset_sectors: self.reported.0,
            size_sectors: self.total_sectors,
            iv_offset_sectors: self.reported.1,
            read_only: self.info.flags.readonly,
            suspended: self.info.flags.suspended,
            in_use: self.info.open_count > 0,
            flags,
            exposure: Exposure::Kernel,
            server: None,
            last_error: None,
            engine: None,
        }
    }

    /// Remove the mapping (`deferred`: when its last user closes it); refused while it is
    /// in use.
    pub fn close(&self, deferred: bool) -> Result<()> {
        let res = self.dm.remove(
            &self.name,
            RemoveOptions {
                deferred,
                retry_busy: Some(Duration::from_secs(2)),
            },
        );
        match res {
            Ok(_) => {
                // The helper devices an online re-encryption that failed (or was killed)
                // left under it go too, as cryptsetup's deactivation removes its
                // `CRYPT-SUBDEV-` devices.
                if !deferred {
                    self.remove_reencrypt_helpers();
                }
                // cryptsetup removes the dm-integrity mapping under it too.
                if let (Some(dif), false) = (&self.dif, deferred) {
                    self.dm.remove(
                        dif,
                        RemoveOptions {
                            deferred: false,
                            retry_busy: Some(Duration::from_secs(2)),
                        },
                    )?;
                }
                Ok(())
            }
            Err(e) if e.is_busy() => Err(ActivateError::MappingBusy {
                name: self.name.clone(),
            }),
            Err(e) => Err(e.into()),
        }
    }

    /// Remove `NAME-overlay` and `NAME-hotzone-forward`/`-backward` when they are the
    /// helper devices of an online re-encryption (DM UUID `CRYPT-SUBDEV-…`).
    fn remove_reencrypt_helpers(&self) {
        for suffix in ["overlay", "hotzone-forward", "hotzone-backward"] {
            let helper = format!("{}-{suffix}", self.name);
            let is_subdev = self.dm.info(&helper).is_ok_and(|i| {
                i.uuid
                    .as_deref()
                    .is_some_and(|u| u.starts_with("CRYPT-SUBDEV-"))
            });
            if is_subdev {
                let _ = self.dm.remove(
                    &helper,
                    RemoveOptions {
                        deferred: false,
                        retry_busy: Some(Duration::from_secs(2)),
                    },
                );
            }
        }
    }

    /// Cancel a deferred removal of the mapping (`close --cancel-deferred`).
    pub fn cancel_deferred(&self) -> Result<()> {
        self.dm.cancel_deferred_remove(&self.name)?;
        Ok(())
    }

    /// Rename the mapping to `new_name` (`DM_DEV_RENAME`; the nodes in `/dev/mapper` follow).
    pub fn rename(&self, new_name: &str) -> Result<()> {
        self.dm.rename(&self.name, new_name)?;
        Ok(())
    }

    /// `luksSuspend`: suspend I/O (flushing first) and wipe the key from dm-crypt, as
    /// cryptsetup's `dm_suspend_and_wipe_key` does.
    pub fn suspend(&self) -> Result<()> {
        if !self.is_luks() {
            return Err(ActivateError::Unsupported(format!(
                "Operation not supported for device type {}.",
                self.kind
            )));
        }
        if self.is_suspended() {
            return Err(ActivateError::AlreadySuspended {
                name: self.name.clone(),
            });
        }
        self.dm
            .suspend(&self.name, lukskit_dm::SuspendOptions::default())?;
        if let Err(e) = self.dm.wipe_key(&self.name, 0) {
            let _ = self.dm.resume(&self.name);
            return Err(e.into());
        }
        Ok(())
    }

    /// `luksResume` with volume key `vk` (already checked against the header; `digest` is the
    /// LUKS2 segment digest): give dm-crypt the key again (through the keyring for LUKS2
    /// where the kernel has one, as cryptsetup does) and resume I/O.
    pub fn resume(&self, vk: &SecretBuf, digest: Option<u32>) -> Result<()> {
        if !self.is_suspended() {
            return Err(ActivateError::NotSuspended {
                name: self.name.clone(),
            });
        }
        // A cipher_null mapping has no key: dm-crypt takes `key set -` only (cryptsetup
        // sends that too).
        let (_, live) = self.dm.table(&self.name, false)?;
        let null = live
            .iter()
            .any(|t| matches!(t, Target::Crypt(c) if c.cipher.starts_with("cipher_null")));
        let key = if null {
            CryptKey::Empty
        } else {
            let keyring = self.dm.crypt_features()?.is_some_and(|f| f.keyring());
            self.key_for(vk, digest, keyring)
        };
        self.dm.set_key(&self.name, 0, &key)?;
        self.dm.resume(&self.name)?;
        Ok(())
    }

    fn key_for(&self, vk: &SecretBuf, digest: Option<u32>, keyring: bool) -> CryptKey {
        let description = match (self.kind.as_str(), &self.uuid, digest) {
            ("LUKS2", Some(uuid), Some(d)) => Some(keyring::luks2_key_description(uuid, d)),
            _ => None,
        };
        CryptKey::for_volume_key(vk, description.as_deref(), keyring)
    }

    /// `refresh`: reload the table with the same size and the dm-crypt flags asked for now
    /// (`allow_discards` and `opts`'s performance flags replace the live ones), giving the key
    /// again from `vk` as cryptsetup's refresh does.
    pub fn refresh(
        &self,
        vk: &SecretBuf,
        allow_discards: bool,
        opts: &KernelOptions,
    ) -> Result<()> {
        if self.kind == "PLAIN" {
            // A plain key comes from the passphrase and options of this command line: as
            // cryptsetup, refuse a refresh whose key is not the live one.
            let (_, live) = self.dm.table(&self.name, true)?;
            let same = live.iter().any(|t| {
                matches!(t, Target::Crypt(c) if matches!(&c.key, CryptKey::Hex(k) if k.ct_eq(vk.as_bytes())))
            });
            if !same {
                return Err(ActivateError::InvalidRequest(format!(
                    "Cannot refresh {}: the volume key differs from the active one (wrong \
                     passphrase, --hash, --cipher or --key-size).",
                    self.name
                )));
            }
        }
        // As cryptsetup's refresh: the key goes through the keyring where dm-crypt can take
        // it from there, unless --disable-keyring.
        let keyring =
            !opts.disable_keyring && self.dm.crypt_features()?.is_some_and(|f| f.keyring());
        let mut next = self.target.clone();
        next.key = self.key_for(vk, opts.digest, keyring);
        next.flags = CryptFlags {
            allow_discards,
            same_cpu_crypt: opts.same_cpu_crypt,
            submit_from_crypt_cpus: opts.submit_from_crypt_cpus,
            no_read_workqueue: opts.no_read_workqueue,
            no_write_workqueue: opts.no_write_workqueue,
            ..self.target.flags
        };
        self.dm
            .reload(&self.name, &[Target::Crypt(next)], self.info.flags.readonly)?;
        Ok(())
    }

    /// Whether reloading the table ([`KernelMapping::resize`]) needs the volume key: its key
    /// is in the kernel keyring (LUKS2), so the key must be put there again.
    pub fn needs_volume_key(&self) -> bool {
        self.target.key.in_keyring()
    }

    /// `resize`: reload the table with `sectors` 512-byte sectors of data (`None`: all of the
    /// device after the data offset), as cryptsetup's resize does. `vk` (with the LUKS2
    /// segment digest) is needed when [`KernelMapping::needs_volume_key`].
    pub fn resize(
        &self,
        sectors: Option<u64>,
        vk: Option<(&SecretBuf, Option<u32>)>,
    ) -> Result<()> {
        // A suspended mapping has its key wiped from the kernel and its I/O held: cryptsetup
        // refuses to resize it.
        if self.is_suspended() {
            return Err(ActivateError::Suspended {
                name: self.name.clone(),
            });
        }
        let t = &self.target;
        let dev_path = device_name(t.device);
        // A loop device under the mapping first takes the size of its backing file (which may
        // have grown since it was attached), as cryptsetup's resize does; when that fails,
        // cryptsetup goes on with the size the loop device has, and so does this.
        if lukskit_expose::loopdev::is_loop_device(Path::new(&dev_path)) {
            let _ = lukskit_expose::loopdev::set_capacity(Path::new(&dev_path));
        }
        let capacity = block_size_bytes(Path::new(&dev_path))? / 512;
        let available = capacity.saturating_sub(t.offset);
        let per_sector = u64::from(t.sector_size / 512).max(1);
        let want = sectors.unwrap_or(available);
        if want == 0 || want > available {
            return Err(ActivateError::InvalidRequest(format!(
                "Device {} is too small (it has {available} sectors after the data offset).",
                self.name
            )));
        }
        if !want.is_multiple_of(per_sector) {
            return Err(ActivateError::InvalidRequest(format!(
                "Device size is not aligned to requested sector size ({} bytes).",
                t.sector_size
            )));
        }
        // Nor to the data device's logical block size (a 4096-byte disk under a mapping of
        // 512-byte sectors): cryptsetup refuses before it suspends anything.
        if !want.is_multiple_of(logical_block_sectors(Path::new(&dev_path))) {
            return Err(ActivateError::InvalidRequest(
                "Device size is not aligned to device logical block size.".to_string(),
            ));
        }
        let key = match vk {
            Some((vk, digest)) => self.key_for(vk, digest, t.key.in_keyring()),
            None => {
                let (_, targets) = self.dm.table(&self.name, true)?;
                match targets.into_iter().next() {
                    Some(Target::Crypt(live)) => live.key,
                    _ => {
                        return Err(ActivateError::Unsupported(format!(
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
            .reload(&self.name, &[Target::Crypt(next)], self.info.flags.readonly)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lukskit_crypto::spec::CipherSpec;
    use lukskit_volume::segment::Segment;

    #[allow(clippy::too_many_arguments)]
    fn crypt(
        start: u64,
        len: u64,
        cipher: &str,
        key: &[u8],
        ss: u32,
        iv: u64,
        large: bool,
        dev: u64,
    ) -> Segment {
        Segment {
            start,
            len,
            kind: SegmentKind::Crypt(CryptSegment {
                cipher: CipherSpec::parse(cipher).unwrap(),
                key: SecretBuf::from_slice(key),
                sector_size: ss,
                iv_offset: iv,
                iv_large_sectors: large,
                device_offset: dev,
                digest: None,
            }),
        }
    }

    fn lines(targets: &[Target]) -> Vec<String> {
        targets.iter().map(|t| t.to_line().to_string()).collect()
    }

    /// One crypt segment renders the single target the kernel backend made before segment
    /// tables (the line cryptsetup makes; checked against cryptsetup in refvm_kernel.rs).
    #[test]
    fn single_segment_is_the_plain_crypt_target() {
        let layout = DataLayout {
            cipher: "aes-xts-plain64".into(),
            offset: 16 << 20,
            size: None,
            sector_size: 4096,
            iv_offset: 0,
            iv_large_sectors: false,
        };
        let key = SecretBuf::from_slice(&[0x11; 64]);
        let table = SegmentTable::from_layout(&layout, key.as_bytes(), 48 << 20).unwrap();
        let flags = CryptFlags {
            allow_discards: true,
            no_read_workqueue: true,
            ..CryptFlags::default()
        };
        let t = dm_targets(&table, DevT::new(254, 0), flags, |c| {
            CryptKey::for_volume_key(&c.key, None, false)
        });
        assert_eq!(
            lines(&t),
            [format!(
                "0 65536 crypt aes-xts-plain64 {} 0 254:0 32768 3 allow_discards \
                 no_read_workqueue sector_size:4096",
                "11".repeat(64)
            )]
        );
        // cipher_null gets the empty key field.
        let null = DataLayout {
            cipher: "cipher_null-ecb".into(),
            sector_size: 512,
            ..layout
        };
        let table = SegmentTable::from_layout(&null, &[], 48 << 20).unwrap();
        let t = dm_targets(&table, DevT::new(7, 3), CryptFlags::default(), |_| {
            unreachable!("no key for cipher_null")
        });
        assert_eq!(lines(&t), ["0 65536 crypt cipher_null-ecb - 0 7:3 32768"]);
    }

    /// Several segments: one target each, contiguous, with their own cipher, key, IV offset,
    /// sector size and `iv_large_sectors`.
    #[test]
    fn segments_render_one_target_each() {
        let table = SegmentTable::new(vec![
            crypt(
                0,
                64 << 10,
                "aes-xts-plain64",
                &[0xaa; 64],
                4096,
                8,
                true,
                160 << 10,
            ),
            Segment {
                start: 64 << 10,
                len: 32 << 10,
                kind: SegmentKind::Linear {
                    device_offset: 8 << 10,
                },
            },
            Segment {
                start: 96 << 10,
                len: 16 << 10,
                kind: SegmentKind::Zero,
            },
            crypt(
                112 << 10,
                48 << 10,
                "aes-cbc-essiv:sha256",
                &[0xbb; 32],
                512,
                3,
                false,
                48 << 10,
            ),
        ])
        .unwrap();
        let t = dm_targets(&table, DevT::new(254, 16), CryptFlags::default(), |c| {
            CryptKey::for_volume_key(&c.key, None, false)
        });
        assert_eq!(
            lines(&t),
            [
                format!(
                    "0 128 crypt aes-xts-plain64 {} 8 254:16 320 2 iv_large_sectors sector_size:4096",
                    "aa".repeat(64)
                ),
                "128 64 linear 254:16 16".to_string(),
                "192 32 zero ".to_string(),
                format!("224 96 crypt aes-cbc-essiv:sha256 {} 3 254:16 96", "bb".repeat(32)),
            ]
        );
        assert_eq!(lukskit_dm::table::check_contiguous(&t).unwrap(), 320);
    }

    /// The offsets `status` reports, from tables cryptsetup 2.6.1 reported in the VM
    /// (2026-11-28): the smallest offset of the mapping's own targets, with that target's
    /// IV offset (none for dm-linear).
    #[test]
    fn status_reports_the_smallest_offset_of_the_own_table() {
        let t = |lines: &[&str]| -> Vec<Target> {
            lines
                .iter()
                .map(|l| Target::parse_line(l, false).unwrap())
                .collect()
        };
        // An encryption with a data shift initialized: two dm-linear segments.
        let init = t(&[
            "0 8192 linear 254:0 122880",
            "8192 106496 linear 254:0 8192",
        ]);
        assert_eq!(reported_offsets(&init), Some((8192, 0)));
        // Under the online re-encryption stack: one linear target over NAME-overlay.
        assert_eq!(
            reported_offsets(&t(&["0 98304 linear 253:3 0"])),
            Some((0, 0))
        );
        // A crypt segment with an IV offset (re-encryption segments).
        let segs = t(&[
            "0 10240 crypt aes-xts-plain64 - 0 254:0 32768",
            "10240 2048 crypt aes-xts-plain64 - 5 254:0 20480",
        ]);
        assert_eq!(reported_offsets(&segs), Some((20480, 5)));
        // Equal offsets: the first one's IV offset.
        let eq = t(&[
            "0 8 crypt aes-xts-plain64 - 7 254:0 64",
            "8 8 linear 254:0 64",
        ]);
        assert_eq!(reported_offsets(&eq), Some((64, 7)));
        assert_eq!(reported_offsets(&t(&["0 8 zero"])), None);
    }
}
