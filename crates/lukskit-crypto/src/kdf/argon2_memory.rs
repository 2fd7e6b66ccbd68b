//! Argon2's block memory: an anonymous mapping, zero-filled by the kernel (so never zeroed a
//! second time by us) and pre-faulted in one go (`MAP_POPULATE`: no page fault inside the
//! lanes' fill), aligned to 2 MiB so that kernels with transparent huge pages set to `always`
//! can back it with huge pages; wiped and unmapped on drop.
//!
//! `MADV_HUGEPAGE` is deliberately not asked for: on the machine of BENCHMARKS.md (THP
//! `madvise`, a shared VM) it gave no huge page at all and cost 1.4 s of kernel time per
//! 590 MiB in compaction attempts, against 0.3 s for plain pages.

use super::argon2_blamka::Block;
use crate::{CryptoError, Result};

/// Huge page size the mapping is aligned to (x86_64 and arm64 with 4 KiB pages).
const HUGE: usize = 2 << 20;

/// `count` Argon2 blocks in their own mapping.
pub(crate) struct BlockMemory {
    map: *mut libc::c_void,
    map_len: usize,
    blocks: *mut Block,
    count: usize,
}

// SAFETY: BlockMemory owns its mapping exclusively (like a Box<[Block]>).
unsafe impl Send for BlockMemory {}

impl BlockMemory {
    /// Map `count` zeroed blocks; [`CryptoError::Limit`] when the system will not give them.
    pub(crate) fn new(count: usize) -> Result<Self> {
        let refuse = || {
            CryptoError::Limit(format!(
                "cannot allocate {} KiB of memory for Argon2",
                count.saturating_mul(std::mem::size_of::<Block>()) / 1024
            ))
        };
        let len = count
            .checked_mul(std::mem::size_of::<Block>())
            .filter(|&l| l > 0)
            .ok_or_else(refuse)?;
        let map_len = len.checked_add(HUGE).ok_or_else(refuse)?;
        // SAFETY: an anonymous private mapping at an address of the kernel's choice; no
        // existing memory is affected.
        let map = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                map_len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_POPULATE,
                -1,
                0,
            )
        };
        if map == libc::MAP_FAILED {
            return Err(refuse());
        }
        let offset = (HUGE - (map as usize) % HUGE) % HUGE;
        // SAFETY: offset < HUGE and map_len = len + HUGE, so [offset, offset + len) lies
        // within the mapping.
        let start = unsafe { (map as *mut u8).add(offset) };
        Ok(BlockMemory {
            map,
            map_len,
            blocks: start.cast(),
            count,
        })
    }

    /// The blocks (all zero after [`BlockMemory::new`]).
    pub(crate) fn blocks_mut(&mut self) -> &mut [Block] {
        // SAFETY: `blocks` points to `count` blocks of a live mapping owned by self, 2 MiB
        // (hence 64-byte) aligned; zero bytes are a valid Block; &mut self gives exclusivity.
        unsafe { std::slice::from_raw_parts_mut(self.blocks, self.count) }
    }
}

impl Drop for BlockMemory {
    fn drop(&mut self) {
        // SAFETY: the `count` blocks of our live mapping (as in `blocks_mut`). The memory is
        // handed to munmap below, an opaque call, so this wipe cannot be optimized away; the
        // fence keeps it before the unmap.
        unsafe { std::ptr::write_bytes(self.blocks, 0, self.count) };
        std::sync::atomic::compiler_fence(std::sync::atomic::Ordering::SeqCst);
        // SAFETY: unmapping exactly the mapping created in `new`, which nothing borrows
        // any more (drop has &mut self).
        unsafe {
            libc::munmap(self.map, self.map_len);
        }
    }
}
