//! luksFormat `--align-payload=SECTORS` (deprecated in cryptsetup, still accepted): the data
//! starts at the end of the header area rounded up to a multiple of SECTORS. Without it, a
//! LUKS1 or LUKS2 volume on a block device is aligned by the device's I/O topology as
//! cryptsetup 2.6.1 aligns it: to 1 MiB (or the optimal I/O size where 1 MiB is not a multiple
//! of it), plus the device's alignment offset (a partition that starts off the physical
//! blocks).

use crate::args::{parse_size, Opts};
use crate::errors::{CliError, Result};
use lukskit_format::luks1::Luks1Header;
use lukskit_format::luks2;
use lukskit_format::VolumeType;
use lukskit_volume::format::DataCipher;

/// The data offset in 512-byte sectors to format with: `--offset`, or the one
/// `--align-payload` gives, or None for the default.
pub fn payload_offset(
    o: &Opts,
    kind: VolumeType,
    cipher: &DataCipher,
    key_size_bits: Option<u32>,
) -> Result<Option<u64>> {
    let Some(align) = o.align_payload.filter(|&a| a != 0) else {
        // cryptsetup 2.6.1 takes a LUKS1 --offset only in whole 4096-byte blocks (as LUKS2's);
        // --align-payload has no such rule.
        if kind == VolumeType::Luks1 && o.offset.is_some_and(|s| !s.is_multiple_of(8)) {
            return Err(CliError::invalid(
                "Data offset is not multiple of 4096 bytes.",
            ));
        }
        if o.offset.is_some() || o.header.is_some() {
            return Ok(o.offset);
        }
        // On a block device: its topology.
        let Some((align, shift)) = device_topology(o, true) else {
            return Ok(None);
        };
        if kind == VolumeType::Luks2 {
            // LUKS2_generate_hdr(): the end of the keyslots area rounded up to the alignment,
            // plus the alignment offset.
            let (metadata, keyslots) = luks2_areas(o);
            return Ok(Some(
                ((2 * metadata + keyslots).div_ceil(align) * align + shift) / 512,
            ));
        }
        let key_bytes = super::volume_key::format_key_bytes(cipher, key_size_bits)?;
        let key_bytes =
            u32::try_from(key_bytes).map_err(|_| CliError::invalid("Invalid key size."))?;
        let align_sectors = u32::try_from(align / 512).unwrap_or(u32::MAX);
        let payload = Luks1Header::layout(key_bytes, align_sectors, None, false).1;
        return Ok(Some(u64::from(payload) + shift / 512));
    };
    if o.offset.is_some() {
        return Err(CliError::invalid(
            "Options --align-payload and --offset cannot be combined.",
        ));
    }
    if o.header.is_some() {
        // With a detached header the alignment is the data offset itself.
        return Ok(Some(u64::from(align)));
    }
    let sectors = match kind {
        VolumeType::Luks1 => {
            let key_bytes = super::volume_key::format_key_bytes(cipher, key_size_bits)?;
            let key_bytes =
                u32::try_from(key_bytes).map_err(|_| CliError::invalid("Invalid key size."))?;
            u64::from(Luks1Header::layout(key_bytes, align, None, false).1)
        }
        // LUKS2 (only LUKS types are formatted).
        _ => {
            let (metadata, keyslots) = luks2_areas(o);
            let align_bytes = u64::from(align) * 512;
            (2 * metadata + keyslots).div_ceil(align_bytes) * align_bytes / 512
        }
    };
    Ok(Some(sectors))
}

/// The LUKS2 metadata and keyslots area sizes in bytes luksFormat will use.
fn luks2_areas(o: &Opts) -> (u64, u64) {
    let size = |s: &Option<String>| s.as_deref().and_then(parse_size);
    let metadata = size(&o.luks2_metadata_size).unwrap_or(luks2::DEFAULT_METADATA_SIZE);
    let keyslots = size(&o.luks2_keyslots_size).unwrap_or(
        (luks2::DEFAULT_KEYSLOTS_SIZE + 2 * luks2::DEFAULT_METADATA_SIZE)
            .saturating_sub(2 * metadata),
    );
    (metadata, keyslots)
}

/// The data alignment (bytes) and alignment offset of the device being formatted when its
/// topology asks for something other than cryptsetup's default (1 MiB, no offset); None for a
/// file, a device without topology or the default. `warn`: say so when the optimal I/O size
/// is ignored, as cryptsetup does.
fn device_topology(o: &Opts, warn: bool) -> Option<(u64, u64)> {
    let device = o.positional.get(1)?;
    let (align, shift) = topology_alignment(device, warn)?;
    (align != DEFAULT_ALIGN || shift != 0).then_some((align, shift))
}

/// The alignment (512-byte sectors) a LUKS2 data offset was rounded up to, for the sector
/// size checks of luksFormat: `--align-payload`, or the device topology's when it gave the
/// offset (see [`payload_offset`]).
pub fn luks2_alignment(o: &Opts, kind: VolumeType) -> Option<u64> {
    if kind != VolumeType::Luks2 || o.offset.is_some() {
        return None;
    }
    if let Some(a) = o.align_payload.filter(|&a| a != 0) {
        return Some(u64::from(a));
    }
    if o.header.is_some() {
        return None;
    }
    device_topology(o, false).map(|(align, _)| align / 512)
}

/// cryptsetup's default data alignment in bytes.
const DEFAULT_ALIGN: u64 = 1 << 20;

/// The data alignment and alignment offset (bytes) cryptsetup 2.6.1 derives from the I/O
/// topology of a block device (its `device_topology_alignment`), from sysfs; None for a file
/// or when sysfs does not say.
fn topology_alignment(device: &str, warn: bool) -> Option<(u64, u64)> {
    use std::os::unix::fs::{FileTypeExt, MetadataExt};
    let md = std::fs::metadata(device).ok()?;
    if !md.file_type().is_block_device() {
        return None;
    }
    let rdev = md.rdev();
    let sys = std::path::PathBuf::from(format!(
        "/sys/dev/block/{}:{}",
        libc::major(rdev),
        libc::minor(rdev)
    ));
    let read = |p: &std::path::Path| -> Option<i64> {
        std::fs::read_to_string(p).ok()?.trim().parse().ok()
    };
    // A partition has no queue/ of its own: its disk's.
    let queue = if sys.join("queue").is_dir() {
        sys.join("queue")
    } else {
        sys.join("../queue")
    };
    let min_io = read(&queue.join("minimum_io_size")).filter(|&v| v > 0)? as u64;
    let opt_io = read(&queue.join("optimal_io_size")).unwrap_or(0).max(0) as u64;
    // "-1" (misaligned) or unknown reads as 0.
    let shift = read(&sys.join("alignment_offset")).unwrap_or(0).max(0) as u64;
    let mut align = min_io;
    // An optimal I/O size that is a multiple of the minimum and of 4 KiB wins; a bogus one is
    // ignored.
    if min_io < opt_io && opt_io.is_multiple_of(min_io) && opt_io.is_multiple_of(4096) {
        align = opt_io;
    } else if warn && opt_io != 0 && opt_io != min_io {
        // cryptsetup says so on standard error (device_topology_alignment()).
        eprintln!("Ignoring bogus optimal-io size for data device ({opt_io} bytes).");
    }
    // 1 MiB stays unless it is not a multiple of the device's alignment.
    let required = if align != 0 && !DEFAULT_ALIGN.is_multiple_of(align) {
        align
    } else {
        DEFAULT_ALIGN
    };
    Some((required, shift))
}
