//! Overwriting areas of a device (keyslot revocation, format).

use crate::error::{DeviceOp, Result, VolumeError};
use lukskit_format::io::Storage;

const CHUNK: u64 = 1 << 20;

fn fill(dev: &dyn Storage, offset: u64, len: u64, random: bool) -> Result<()> {
    let mut buf = vec![0u8; CHUNK.min(len) as usize];
    let mut done = 0;
    while done < len {
        let n = CHUNK.min(len - done) as usize;
        if random {
            lukskit_crypto::random::fill(&mut buf[..n])?;
        }
        dev.write_all_at(&buf[..n], offset + done)
            .map_err(|e| VolumeError::device_io(DeviceOp::Wipe, e))?;
        done += n as u64;
    }
    dev.sync()
        .map_err(|e| VolumeError::device_io(DeviceOp::Wipe, e))
}

/// Overwrite `[offset, offset+len)` with random data and sync (keyslot revocation on
/// non-rotational storage, as cryptsetup does).
pub fn random(dev: &dyn Storage, offset: u64, len: u64) -> Result<()> {
    fill(dev, offset, len, true)
}

/// Overwrite `[offset, offset+len)` with zeros and sync.
pub fn zero(dev: &dyn Storage, offset: u64, len: u64) -> Result<()> {
    fill(dev, offset, len, false)
}
