//! Argon2i/Argon2id version 0x13 (RFC 9106) without secret or associated data, as LUKS2
//! keyslots use it: the lanes of each slice on separate threads, the block compression in the
//! widest SIMD the CPU has ([`super::argon2_blamka`]), and the memory from
//! [`super::argon2_memory`] (pre-faulted, wiped and unmapped afterwards).
//!
//! H₀ and the variable-length hash H′ are BLAKE2b from the `blake2` crate.

use blake2::digest::block_api::{UpdateCore, VariableOutputCore};
use blake2::digest::block_buffer::LazyBuffer;
use blake2::{Blake2b512, Blake2bVarCore, Digest};
use zeroize::{Zeroize, Zeroizing};

use super::argon2_blamka::{compress, Block, Kernel};
use super::argon2_memory::BlockMemory;
use super::Argon2Variant;
use crate::{CryptoError, Result};

/// Argon2 sync points (slices) per pass.
pub(crate) const SYNC_POINTS: u32 = 4;
const VERSION: u32 = 0x13;
const ADDRESSES_IN_BLOCK: usize = 128;

/// The checked parameters of one derivation.
pub(crate) struct Params {
    pub variant: Argon2Variant,
    pub time: u32,
    pub memory_kib: u32,
    pub lanes: u32,
    /// Threads running the lanes of a slice (≤ lanes).
    pub threads: usize,
}

impl Params {
    /// Blocks actually used: memory rounded down to a multiple of 4 × lanes (RFC 9106 §3.2).
    pub(crate) fn block_count(&self) -> usize {
        let m = self.memory_kib.max(2 * SYNC_POINTS * self.lanes);
        let q = m / (SYNC_POINTS * self.lanes);
        (q * SYNC_POINTS * self.lanes) as usize
    }
}

fn type_id(v: Argon2Variant) -> u32 {
    match v {
        Argon2Variant::I => 1,
        Argon2Variant::Id => 2,
    }
}

/// BLAKE2b with an `out.len()`-byte output (1..=64) of the concatenated `inputs`.
fn blake2b_var(inputs: &[&[u8]], out: &mut [u8]) -> Result<()> {
    let mut core = Blake2bVarCore::new(out.len())
        .map_err(|_| CryptoError::InvalidInput("BLAKE2b output length".into()))?;
    let mut buf = LazyBuffer::default();
    for input in inputs {
        buf.digest_blocks(input, |blocks| core.update_blocks(blocks));
    }
    let mut full = Zeroizing::new([0u8; 64]);
    let mut arr = Default::default();
    core.finalize_variable_core(&mut buf, &mut arr);
    full.copy_from_slice(&arr);
    arr.zeroize();
    out.copy_from_slice(&full[..out.len()]);
    Ok(())
}

/// H′ (RFC 9106 §3.3): the variable-length hash of the concatenated `inputs` into `out`.
fn h_prime(inputs: &[&[u8]], out: &mut [u8]) -> Result<()> {
    let len = u32::try_from(out.len())
        .map_err(|_| CryptoError::InvalidInput("Argon2 output too long".into()))?
        .to_le_bytes();
    let mut all: Vec<&[u8]> = Vec::with_capacity(inputs.len() + 1);
    all.push(&len);
    all.extend_from_slice(inputs);
    if out.len() <= 64 {
        return blake2b_var(&all, out);
    }
    // V1 = H⁶⁴(LE32(T) || X); the first 32 bytes of V1..Vr, then H^(T−32r)(Vr) whole.
    let mut h = Blake2b512::new();
    for i in &all {
        Digest::update(&mut h, i);
    }
    let mut v = Zeroizing::new([0u8; 64]);
    v.copy_from_slice(&h.finalize());
    out[..32].copy_from_slice(&v[..32]);
    let mut pos = 32;
    while out.len() - pos > 64 {
        let next = Blake2b512::digest(&v[..]);
        v.copy_from_slice(&next);
        out[pos..pos + 32].copy_from_slice(&v[..32]);
        pos += 32;
    }
    blake2b_var(&[&v[..]], &mut out[pos..])
}

/// H₀ (RFC 9106 §3.2), with empty secret and associated data.
fn initial_hash(p: &Params, password: &[u8], salt: &[u8], tag_len: usize) -> Zeroizing<[u8; 72]> {
    let le = |n: usize| u32::try_from(n).unwrap_or(u32::MAX).to_le_bytes();
    let mut h = Blake2b512::new();
    for w in [
        p.lanes,
        tag_len as u32,
        p.memory_kib,
        p.time,
        VERSION,
        type_id(p.variant),
    ] {
        Digest::update(&mut h, w.to_le_bytes());
    }
    Digest::update(&mut h, le(password.len()));
    Digest::update(&mut h, password);
    Digest::update(&mut h, le(salt.len()));
    Digest::update(&mut h, salt);
    Digest::update(&mut h, 0u32.to_le_bytes()); // secret
    Digest::update(&mut h, 0u32.to_le_bytes()); // associated data
    let mut out = Zeroizing::new([0u8; 72]);
    out[..64].copy_from_slice(&h.finalize());
    out
}

/// Raw access to the block array shared by the lane threads of a slice.
#[derive(Clone, Copy)]
struct Shared {
    ptr: *mut Block,
    len: usize,
}

// SAFETY: the threads of a slice write disjoint segments (their own lane's) and read only
// blocks no thread writes during that slice (Argon2's indexing never references another
// lane's current segment); `fill_segment` upholds this, and slices are separated by the
// joins of a scope.
unsafe impl Send for Shared {}
// SAFETY: as for Send.
unsafe impl Sync for Shared {}

/// Derive `out` (4..=512 bytes) into `mem` (exactly `p.block_count()` blocks).
pub(crate) fn derive(
    p: &Params,
    password: &[u8],
    salt: &[u8],
    mem: &mut BlockMemory,
    out: &mut [u8],
) -> Result<()> {
    derive_with(p, password, salt, mem, out, Kernel::detect())
}

/// [`derive`] with a given compression kernel (tests compare them).
pub(crate) fn derive_with(
    p: &Params,
    password: &[u8],
    salt: &[u8],
    mem: &mut BlockMemory,
    out: &mut [u8],
    kernel: Kernel,
) -> Result<()> {
    let blocks = mem.blocks_mut();
    let lanes = p.lanes as usize;
    let lane_len = blocks.len() / lanes;
    let mut h0 = initial_hash(p, password, salt, out.len());
    let mut bytes = Zeroizing::new([0u8; 1024]);
    for lane in 0..lanes {
        for i in 0..2u32 {
            h0[64..68].copy_from_slice(&i.to_le_bytes());
            h0[68..72].copy_from_slice(&(lane as u32).to_le_bytes());
            h_prime(&[&h0[..]], &mut bytes[..])?;
            blocks[lane * lane_len + i as usize].load(&bytes);
        }
    }
    h0.zeroize();
    let shared = Shared {
        ptr: blocks.as_mut_ptr(),
        len: blocks.len(),
    };
    let geometry = Geometry {
        p,
        lanes,
        lane_len,
        segment_len: lane_len / SYNC_POINTS as usize,
        total: blocks.len(),
        kernel,
    };
    let threads = p.threads.clamp(1, lanes);
    for pass in 0..p.time {
        for slice in 0..SYNC_POINTS {
            let g = &geometry;
            // Thread k fills lanes k, k + threads, ..., two at a time in lockstep (the
            // reference block of one is fetched from memory while the other is compressed).
            let run = move |k: usize| {
                let mine: Vec<usize> = (k..lanes).step_by(threads).collect();
                for group in mine.chunks(LOCKSTEP) {
                    // SAFETY: each lane is filled by exactly one thread in this slice; see
                    // `Shared`.
                    unsafe { fill_segments(g, shared, pass, slice, group) };
                }
            };
            if threads == 1 {
                run(0);
                continue;
            }
            std::thread::scope(|scope| {
                let mut inline = Vec::new();
                for k in 1..threads {
                    let spawned = std::thread::Builder::new()
                        .name(format!("lukskit-argon2-{k}"))
                        .spawn_scoped(scope, move || run(k));
                    if spawned.is_err() {
                        inline.push(k);
                    }
                }
                run(0);
                for k in inline {
                    run(k);
                }
            });
        }
    }
    // Final block: XOR of each lane's last block.
    let blocks = mem.blocks_mut();
    let mut last = blocks[lane_len - 1];
    for lane in 1..lanes {
        last.xor_with(&blocks[lane * lane_len + lane_len - 1]);
    }
    last.store(&mut bytes);
    last.zeroize();
    h_prime(&[&bytes[..]], out)
}

struct Geometry<'a> {
    p: &'a Params,
    lanes: usize,
    lane_len: usize,
    segment_len: usize,
    total: usize,
    kernel: Kernel,
}

/// Lanes one thread fills in lockstep.
const LOCKSTEP: usize = 2;

/// One lane's position in the segment being filled.
struct Cursor {
    lane: usize,
    /// Index of the segment's first block.
    start: usize,
    prev: usize,
    address: Block,
    input: Block,
}

/// Ask the CPU to start loading block `b` into its caches.
#[inline(always)]
fn prefetch(b: *const Block) {
    #[cfg(target_arch = "x86_64")]
    for line in 0..16 {
        // SAFETY: a prefetch is a hint that never faults, whatever the address; `b` points
        // into the block array anyway.
        unsafe {
            std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(
                (b as *const i8).wrapping_add(64 * line),
            )
        };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = b;
}

/// Fill the segments of `slice` in `pass` of `lanes` (at most [`LOCKSTEP`]), block by block
/// in lockstep.
///
/// # Safety
/// No other thread may write the blocks of these segments or read them, and no other thread
/// may write any block they reference (Argon2's indexing ensures it when each lane of a slice
/// is filled by one thread and slices do not overlap in time).
unsafe fn fill_segments(g: &Geometry<'_>, mem: Shared, pass: u32, slice: u32, lanes: &[usize]) {
    let data_independent = match g.p.variant {
        Argon2Variant::I => true,
        Argon2Variant::Id => pass == 0 && slice < SYNC_POINTS / 2,
    };
    let zero = Block::zero();
    let first = if pass == 0 && slice == 0 { 2 } else { 0 };
    let seg = g.segment_len;
    let mut cursors: Vec<Cursor> = lanes
        .iter()
        .map(|&lane| {
            let start = lane * g.lane_len + slice as usize * seg;
            let mut c = Cursor {
                lane,
                start,
                prev: if first == 0 && slice == 0 {
                    start + g.lane_len - 1
                } else {
                    start + first - 1
                },
                address: Block::zero(),
                input: Block::zero(),
            };
            if data_independent {
                c.input.0[0] = u64::from(pass);
                c.input.0[1] = lane as u64;
                c.input.0[2] = u64::from(slice);
                c.input.0[3] = g.total as u64;
                c.input.0[4] = u64::from(g.p.time);
                c.input.0[5] = u64::from(type_id(g.p.variant));
                if first == 2 {
                    next_addresses(g.kernel, &mut c.address, &mut c.input, &zero);
                }
            }
            c
        })
        .collect();
    let mut refs = [0usize; LOCKSTEP];
    for index in first..seg {
        for (c, r) in cursors.iter_mut().zip(refs.iter_mut()) {
            let rand = if data_independent {
                let i = index % ADDRESSES_IN_BLOCK;
                if i == 0 {
                    next_addresses(g.kernel, &mut c.address, &mut c.input, &zero);
                }
                c.address.0[i]
            } else {
                debug_assert!(c.prev < mem.len);
                // SAFETY: prev is a block of this lane already computed (by this thread in
                // this slice, or before the slice began), in bounds.
                unsafe { (*mem.ptr.add(c.prev)).0[0] }
            };
            *r = reference(g, pass, slice, c.lane, index, rand);
            prefetch(mem.ptr.wrapping_add(*r));
        }
        for (c, &r) in cursors.iter_mut().zip(refs.iter()) {
            let cur = c.start + index;
            debug_assert!(cur < mem.len && r < mem.len && c.prev < mem.len);
            // SAFETY: all three indices are in bounds; `cur` belongs to this thread's segment
            // and is neither `prev` nor `r` (the reference area excludes the current block),
            // and the blocks read are not written by any other thread during this slice.
            unsafe {
                let prev_b = &*mem.ptr.add(c.prev);
                let ref_b = &*mem.ptr.add(r);
                let cur_b = &mut *mem.ptr.add(cur);
                compress(g.kernel, prev_b, ref_b, cur_b, pass > 0);
            }
            c.prev = cur;
        }
    }
    for c in cursors.iter_mut() {
        c.address.zeroize();
        c.input.zeroize();
    }
}

/// The index of the block that block `index` of `lane`'s segment references (RFC 9106 §3.4).
fn reference(
    g: &Geometry<'_>,
    pass: u32,
    slice: u32,
    lane: usize,
    index: usize,
    rand: u64,
) -> usize {
    let seg = g.segment_len;
    let ref_lane = if pass == 0 && slice == 0 {
        lane
    } else {
        ((rand >> 32) as usize) % g.lanes
    };
    let area = if pass == 0 {
        if slice == 0 {
            index - 1
        } else if ref_lane == lane {
            slice as usize * seg + index - 1
        } else {
            slice as usize * seg - usize::from(index == 0)
        }
    } else if ref_lane == lane {
        g.lane_len - seg + index - 1
    } else {
        g.lane_len - seg - usize::from(index == 0)
    };
    let j1 = rand & 0xFFFF_FFFF;
    let x = (j1 * j1) >> 32;
    let rel = area - 1 - ((area as u64 * x) >> 32) as usize;
    let start = if pass != 0 && slice != SYNC_POINTS - 1 {
        (slice as usize + 1) * seg
    } else {
        0
    };
    ref_lane * g.lane_len + (start + rel) % g.lane_len
}

/// The next block of pseudo-random addresses (Argon2i addressing): G(0, G(0, input)) after
/// incrementing the counter.
fn next_addresses(k: Kernel, address: &mut Block, input: &mut Block, zero: &Block) {
    input.0[6] += 1;
    let mut tmp = Block::zero();
    compress(k, zero, input, &mut tmp, false);
    compress(k, zero, &tmp, address, false);
}
