//! Where the metadata is read from: the device, or (tests, fuzzing) bytes in memory.

use crate::device::Device;
use lukskit_format::io::Storage;

/// Something the metadata can be read from at byte offsets.
pub trait Source {
    /// Fill `buf` from byte `offset`; `false` when that is not possible (short device,
    /// offset beyond it, I/O error), as a short read is for cryptsetup.
    fn read_at(&self, buf: &mut [u8], offset: u64) -> bool;
}

impl Source for Device {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> bool {
        self.read_exact_at(buf, offset).is_ok()
    }
}

impl Source for [u8] {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> bool {
        let Ok(start) = usize::try_from(offset) else {
            return false;
        };
        match start
            .checked_add(buf.len())
            .and_then(|end| self.get(start..end))
        {
            Some(src) => {
                buf.copy_from_slice(src);
                true
            }
            None => false,
        }
    }
}
