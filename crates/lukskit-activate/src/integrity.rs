//! LUKS2 authenticated encryption (`luksFormat --integrity`) on the kernel: dm-integrity under
//! dm-crypt, made as cryptsetup 2.6.1 makes it (see [`lukskit_dm::integrity`] for the tables).
//!
//! * [`format()`] — the kernel writes the dm-integrity superblock when an integrity target is
//!   loaded over a zeroed superblock, so formatting is: zero 8 sectors at the data offset,
//!   load an 8-sector integrity target under a temporary name, remove it.
//! * the two layers cryptsetup stacks ([`crate::ActivationPlan::for_volume`]), which
//!   [`crate::activate_plan`] makes: `NAME_dif` (dm-integrity, sized by the superblock's
//!   `provided_data_sectors`) and `NAME` (dm-crypt over it with the `capi:`
//!   cipher and `integrity:<tag>:aead`).
//! * [`crate::integrity_wipe::wipe`] — luksFormat's wipe, through a temporary mapping in direct
//!   (journal-less) mode, writing zeros over the whole data area so every sector has a valid
//!   tag.
//!
//! There is no userspace implementation: without device-mapper these fail with
//! [`ActivateError::NoDeviceMapper`]-like errors the CLI words.

use crate::error::{ActivateError, Result};
use crate::layers::IntegrityLayer;
use crate::request::{KernelOptions, MappingConfig};
use lukskit_crypto::SecretBuf;
use lukskit_dm::integrity::{self as dmi, IntegrityMode, IntegrityTarget, Superblock};
use lukskit_dm::{
    dm_uuid, keyring, CryptFlags, CryptKey, CryptTarget, DevT, DeviceMapper, RemoveOptions, Target,
};
use lukskit_expose::loopdev::{LoopDevice, LoopOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::Path;
use std::time::Duration;

// Where the `NAME_dif` layer is named and found (the kernel status reads it too).
pub use crate::dif_mapping::{dif_name, dif_under};

/// Whether the kernel has device-mapper with dm-crypt (dm-integrity loads on demand).
pub fn available() -> bool {
    crate::kernel::available()
}

pub(crate) fn no_dm() -> ActivateError {
    ActivateError::Unsupported(
        "Authenticated encryption (LUKS2 --integrity) needs the kernel's dm-integrity and \
         dm-crypt (device-mapper), which this system does not have; lukskit has no userspace \
         implementation of it."
            .into(),
    )
}

/// A block device for `device`: itself, or a loop device (autoclear) over an image file.
fn backing(device: &str, read_only: bool) -> Result<(Option<LoopDevice>, std::path::PathBuf)> {
    let p = Path::new(device);
    let is_block = std::fs::metadata(p)
        .map(|m| m.file_type().is_block_device())
        .map_err(|_| ActivateError::DeviceMissing {
            device: device.to_string(),
        })?;
    if is_block {
        return Ok((None, p.to_path_buf()));
    }
    let l = LoopDevice::attach(
        p,
        LoopOptions {
            block_size: 512,
            read_only,
            direct_io: false,
        },
    )
    .map_err(|e| ActivateError::io(format!("Cannot attach a loop device to {device}"), e))?;
    let path = l.path().to_path_buf();
    Ok((Some(l), path))
}

/// Read the dm-integrity superblock at byte `offset` of `device` (a block device read with
/// `O_DIRECT`: the kernel wrote it past the page cache).
pub fn read_superblock(device: &Path, offset: u64) -> Result<Option<Superblock>> {
    let is_block = std::fs::metadata(device)
        .map(|m| m.file_type().is_block_device())
        .unwrap_or(false);
    let mut opts = std::fs::OpenOptions::new();
    opts.read(true);
    if is_block {
        opts.custom_flags(libc::O_DIRECT);
    }
    let mut f = opts
        .open(device)
        .map_err(|e| ActivateError::io(format!("Cannot open {}", device.display()), e))?;
    // An aligned 4096-byte window for O_DIRECT.
    let mut buf = vec![0u8; 8192];
    let skew = buf.as_ptr().align_offset(4096);
    let win = &mut buf[skew..skew + 4096];
    f.seek(SeekFrom::Start(offset))
        .and_then(|_| f.read_exact(win))
        .map_err(|e| {
            ActivateError::io(
                format!("Cannot read dm-integrity metadata on {}", device.display()),
                e,
            )
        })?;
    Ok(Superblock::parse(win))
}

/// luksFormat's integrity step: zero the 8 sectors at `data_offset` (bytes) of `device` and
/// have the kernel write a dm-integrity superblock there for cipher `cipher` with integrity
/// type `integrity` and `sector_size`-byte blocks (the fixed padding unless
/// `legacy_padding`). Returns the superblock the kernel wrote.
pub fn format(
    device: &str,
    cipher: &str,
    integrity: &str,
    data_offset: u64,
    sector_size: u32,
    legacy_padding: bool,
) -> Result<Superblock> {
    if !available() {
        return Err(no_dm());
    }
    let tag = dmi::tag_size(cipher, integrity).ok_or_else(|| {
        ActivateError::InvalidRequest(format!(
            "Integrity {integrity} is not supported with cipher {cipher}."
        ))
    })?;
    {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .open(device)
            .map_err(|e| ActivateError::io(format!("Cannot open {device}"), e))?;
        f.seek(SeekFrom::Start(data_offset))
            .and_then(|_| f.write_all(&[0u8; 4096]))
            .and_then(|_| f.sync_all())
            .map_err(|e| ActivateError::io(format!("Cannot wipe header on device {device}"), e))?;
    }
    let dm = DeviceMapper::open()?;
    let (loop_dev, path) = backing(device, false)?;
    let devt = DevT::of_block_device(&path)?;
    let name = format!("temporary-cryptsetup-{}", std::process::id());
    let uuid = dm_uuid::crypt_dm_uuid("INTEGRITY", None, &name)?;
    let target = IntegrityTarget {
        start: 0,
        sectors: 8,
        device: devt,
        offset: data_offset / 512,
        tag_size: tag,
        mode: IntegrityMode::Journal,
        block_size: sector_size,
        fix_padding: !legacy_padding,
    };
    dm.create(&name, Some(&uuid), &[target.to_target()], false)
        .map_err(|e| {
            ActivateError::InvalidRequest(format!(
                "Cannot format integrity for device {device} ({e})."
            ))
        })?;
    dm.remove(
        &name,
        RemoveOptions {
            deferred: false,
            retry_busy: Some(Duration::from_secs(5)),
        },
    )?;
    let sb = read_superblock(&path, data_offset)?;
    drop(loop_dev);
    sb.ok_or_else(|| {
        ActivateError::InvalidRequest(format!(
            "Cannot format integrity for device {device}: no superblock was written."
        ))
    })
}

/// The tag size of `config`'s cipher with integrity type `integrity`, or cryptsetup's refusal.
fn tag_for(config: &MappingConfig, integrity: &str) -> Result<(String, u32)> {
    let cipher = &config.layout.cipher;
    let capi = dmi::dm_cipher(cipher, integrity).ok_or_else(|| {
        ActivateError::InvalidRequest(format!(
            "Integrity {integrity} is not supported with cipher {cipher}."
        ))
    })?;
    Ok((capi, dmi::tag_size(cipher, integrity).unwrap_or(0)))
}

/// The kernel renderer of a dm-integrity layer: `config.name` (`NAME_dif`) over
/// `config.device` from the data offset on, sized by the superblock luksFormat had the kernel
/// write there.
pub(crate) fn open_layer(
    config: &MappingConfig,
    opts: &KernelOptions,
    layer: &IntegrityLayer,
) -> Result<()> {
    let dm = DeviceMapper::open()?;
    if dm.info(&config.name).is_ok() {
        return Err(ActivateError::NameExists {
            name: config.name.clone(),
        });
    }
    dm.crypt_features()?.ok_or_else(no_dm)?;
    let layout = &config.layout;
    let (_, tag) = tag_for(config, &layer.kind)?;
    if !opts.shared {
        drop(
            lukskit_volume::claim::Claim::acquire(&config.device).map_err(|_| {
                ActivateError::DeviceInUse {
                    device: config.device.clone(),
                }
            })?,
        );
    }
    let (loop_dev, path) = backing(&config.device, config.read_only)?;
    let devt = DevT::of_block_device(&path)?;
    let sb = read_superblock(&path, layout.offset)?.ok_or_else(|| {
        ActivateError::InvalidRequest(format!(
            "No kernel dm-integrity metadata detected on {}.",
            config.device
        ))
    })?;
    if u32::from(sb.tag_size) != tag {
        return Err(ActivateError::InvalidRequest(format!(
            "dm-integrity metadata on {} has tag size {}, the cipher needs {tag}.",
            config.device, sb.tag_size
        )));
    }
    let itarget = IntegrityTarget {
        start: 0,
        sectors: sb.provided_data_sectors,
        device: devt,
        offset: layout.offset / 512,
        tag_size: tag,
        mode: layer.mode,
        block_size: layout.sector_size,
        fix_padding: sb.fixed_padding(),
    };
    let uuid = dm_uuid::crypt_dm_uuid("INTEGRITY", config.uuid.as_deref(), &config.name)?;
    let made = dm.create(
        &config.name,
        Some(&uuid),
        &[itarget.to_target()],
        config.read_only,
    );
    // The mapping holds the loop device now; with autoclear it is detached on close.
    drop(loop_dev);
    made.map_err(|e| ActivateError::from_create(&config.device, e))?;
    Ok(())
}

/// The kernel renderer of the dm-crypt layer on a dm-integrity layer: `config.name` over all
/// of `config.device` (`/dev/mapper/NAME_dif`) with the authenticated cipher of
/// `config.layout` and key `key` (through the kernel keyring as for any LUKS2 mapping).
pub(crate) fn open_crypt_layer(
    config: &MappingConfig,
    opts: &KernelOptions,
    key: &SecretBuf,
) -> Result<()> {
    let integrity = config.layout.integrity.as_deref().unwrap_or_default();
    let dm = DeviceMapper::open()?;
    if dm.info(&config.name).is_ok() {
        return Err(ActivateError::NameExists {
            name: config.name.clone(),
        });
    }
    let features = dm.crypt_features()?.ok_or_else(no_dm)?;
    let (cipher, tag) = tag_for(config, integrity)?;
    let dev = Path::new(&config.device);
    let devt = DevT::of_block_device(dev)?;
    let sectors = std::fs::File::open(dev)
        .and_then(|mut f| f.seek(SeekFrom::End(0)))
        .map_err(|e| ActivateError::io(format!("Cannot open {}", config.device), e))?
        / 512;
    let description = match (&config.uuid, opts.digest) {
        (Some(uuid), Some(d)) => Some(keyring::luks2_key_description(uuid, d)),
        _ => None,
    };
    let ckey = CryptKey::for_volume_key(
        key,
        description.as_deref(),
        features.keyring() && !opts.disable_keyring,
    );
    let mut t = CryptTarget::new(sectors, &cipher, ckey, devt, 0);
    t.sector_size = config.layout.sector_size;
    t.flags = CryptFlags {
        allow_discards: config.allow_discards,
        same_cpu_crypt: opts.same_cpu_crypt,
        submit_from_crypt_cpus: opts.submit_from_crypt_cpus,
        no_read_workqueue: opts.no_read_workqueue,
        no_write_workqueue: opts.no_write_workqueue,
        ..CryptFlags::default()
    };
    t.extra_options = vec![dmi::crypt_integrity_option(tag)];
    let uuid = dm_uuid::crypt_dm_uuid(config.kind.name(), config.uuid.as_deref(), &config.name)?;
    dm.create(
        &config.name,
        Some(&uuid),
        &[Target::Crypt(t)],
        config.read_only,
    )?;
    Ok(())
}

/// Remove kernel mapping `name` (a layer of a plan that failed further up).
pub(crate) fn remove_by_name(name: &str) -> Result<()> {
    remove(&DeviceMapper::open()?, name)
}

pub(crate) fn remove(dm: &DeviceMapper, name: &str) -> Result<()> {
    dm.remove(
        name,
        RemoveOptions {
            deferred: false,
            retry_busy: Some(Duration::from_secs(2)),
        },
    )?;
    Ok(())
}
