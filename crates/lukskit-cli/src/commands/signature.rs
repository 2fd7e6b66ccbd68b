//! Which file system or volume signature a device already holds, by magic bytes, so that
//! luksFormat can warn as cryptsetup (through blkid) does: "WARNING: Device X already contains
//! a 'ext4' superblock signature.". Names are blkid's ([`lukskit_volume::signature`]).

use crate::errors::{CliError, Result};
use std::io::Read;

/// The blkid name of the signature at the start of `path`, if lukskit recognises one:
/// `crypto_LUKS`, `ext2`, `ext3`, `ext4`, `xfs`, `vfat`, `swap` or `LVM2_member`.
pub fn detect(path: &str) -> Option<&'static str> {
    if matches!(lukskit_volume::formats::probe_device(path), Ok(Some(t)) if t.is_luks()) {
        return Some("crypto_LUKS");
    }
    lukskit_volume::signature::detect_bytes(&first_bytes(path)?)
}

fn first_bytes(path: &str) -> Option<Vec<u8>> {
    let mut buf = Vec::with_capacity(lukskit_volume::signature::PROBE_BYTES);
    std::fs::File::open(path)
        .ok()?
        .take(lukskit_volume::signature::PROBE_BYTES as u64)
        .read_to_end(&mut buf)
        .ok()?;
    Some(buf)
}

/// cryptsetup's refusal (through blkid) of an encryption sector size larger than the block
/// size of the file system on `path`: the file system would see writes of a size it does
/// not make torn differently after a crash. Nothing found (or nothing readable) passes.
pub fn check_sector_size_fits(path: &str, sector_size: u32) -> Result<()> {
    let Some(fs) = first_bytes(path)
        .as_deref()
        .and_then(lukskit_volume::signature::block_size_bytes)
    else {
        return Ok(());
    };
    if sector_size > fs.block_size {
        return Err(CliError::invalid(format!(
            "Requested --sector-size {sector_size} is incompatible with {} superblock\n\
             (block size: {} bytes) detected on device {path}.",
            fs.name, fs.block_size
        )));
    }
    Ok(())
}
