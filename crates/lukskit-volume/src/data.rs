//! The volume data path: plaintext reads and writes at any byte offset of an unlocked LUKS1,
//! LUKS2 or plain-mode volume, with dm-crypt's exact sector and IV numbering.
//!
//! A [`DataLayout`] says where the ciphertext lives and how it is numbered (what a dm-crypt
//! table line says: cipher, data offset, length, sector size, IV offset, `iv_large_sectors`):
//!
//! * LUKS1: data at `payload_offset × 512`, 512-byte sectors, IV sector 0 at the data start.
//! * LUKS2: the data segment's `offset`, `size` (or `"dynamic"`: the rest of the device),
//!   `sector_size`, and `iv_tweak` as the IV offset in 512-byte sectors. LUKS2 never sets
//!   `iv_large_sectors`: with 4096-byte sectors the IV of a sector is the number of its first
//!   512-byte sector (plus `iv_tweak`).
//! * plain mode ([`crate::plain`]): `--offset` is the data offset, `--skip` the IV offset,
//!   `--size`, `--sector-size` and `--iv-large-sectors` as given.
//!
//! A [`DataVolume`] reads and writes through a [`SegmentTable`] ([`crate::segment`]): a layout
//! with its key is a table of one crypt segment ([`SegmentTable::from_layout`]); a LUKS2 header
//! may describe several segments, and a table may also be built directly (crypt segments with
//! their own cipher, key, sector size and IV offset; linear segments passed through
//! unencrypted; zero segments reading zeros and dropping writes, as dm-zero does). A request
//! is split at segment boundaries, each part handled as its segment says; with one segment
//! that is one comparison and the path below.
//!
//! Within a crypt segment, aligned requests go
//! straight to the sector engine in large batches spread over all cores (or a fixed number of
//! threads); unaligned head and tail sectors are read, patched and rewritten under a lock that
//! covers only the sectors a write touches. Nothing is allocated per sector: aligned reads are
//! decrypted in the caller's buffer, writes are encrypted in a per-thread bounce buffer that is
//! reused (or in the caller's buffer with [`DataVolume::write_at_in_place`]).

use crate::device::Access;
use crate::error::{DataError, IoOp, Result, SegmentError, VolumeError};
use crate::segment::{SegmentKind, SegmentTable};
use crate::storage::SharedStorage;
use crate::volume::Volume;
use lukskit_crypto::engine::SectorCipher;
use std::cell::RefCell;
use std::fs::{File, OpenOptions};
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::sync::{Condvar, Mutex};

/// Size of the batches handed to the sector engine by the copying write path (bytes).
pub const BATCH: usize = 1024 * 1024;

/// Largest encryption sector size dm-crypt supports.
const MAX_SECTOR: usize = 4096;

/// Alignment (address, length and file offset) under which a transfer uses the `O_DIRECT`
/// descriptor: 4 KiB satisfies every logical block size Linux file systems and disks use.
pub const DIRECT_ALIGN: usize = 4096;

/// A zero-initialised byte buffer whose start is aligned to [`DIRECT_ALIGN`], so that
/// transfers from or into it can bypass the page cache (`O_DIRECT`).
#[derive(Debug, Default)]
pub struct AlignedBuf {
    raw: Vec<u8>,
    start: usize,
    len: usize,
}

impl AlignedBuf {
    /// A buffer of `len` zero bytes.
    pub fn new(len: usize) -> Self {
        let mut b = AlignedBuf::default();
        b.ensure(len);
        b
    }

    /// Grow to at least `len` bytes (contents are not kept).
    pub fn ensure(&mut self, len: usize) {
        if self.len >= len {
            return;
        }
        self.raw = vec![0u8; len + DIRECT_ALIGN];
        let off = self.raw.as_ptr().align_offset(DIRECT_ALIGN);
        self.start = if off < DIRECT_ALIGN { off } else { 0 };
        self.len = len;
    }

    /// The aligned bytes.
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        &mut self.raw[self.start..self.start + self.len]
    }

    /// The aligned bytes.
    pub fn as_slice(&self) -> &[u8] {
        &self.raw[self.start..self.start + self.len]
    }
}

/// Where and how the ciphertext is laid out (its own module, which the segment tables build on).
pub use crate::data_layout::DataLayout;

/// How many threads the sector engine uses for large batches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Threads {
    /// All cores (the engine's own parallel entry points).
    #[default]
    All,
    /// Exactly this many threads (1 = the calling thread only).
    Fixed(usize),
}

/// Sectors currently being written (a range lock: writes to disjoint sectors proceed in
/// parallel, overlapping ones wait).
#[derive(Debug, Default)]
struct RangeLocks {
    busy: Mutex<Vec<(u64, u64)>>,
    freed: Condvar,
}

struct RangeGuard<'a> {
    locks: &'a RangeLocks,
    range: (u64, u64),
}

impl RangeLocks {
    /// Wait until no held range overlaps `[start, end)`, then hold it.
    fn acquire(&self, start: u64, end: u64) {
        let mut busy = self.busy.lock().unwrap_or_else(|e| e.into_inner());
        while busy.iter().any(|&(s, e)| s < end && start < e) {
            busy = self.freed.wait(busy).unwrap_or_else(|e| e.into_inner());
        }
        busy.push((start, end));
    }

    /// Hold `[start, end)` if no held range overlaps it; false (holding nothing) otherwise.
    #[cfg(feature = "io-uring")]
    fn try_acquire(&self, start: u64, end: u64) -> bool {
        let mut busy = self.busy.lock().unwrap_or_else(|e| e.into_inner());
        if busy.iter().any(|&(s, e)| s < end && start < e) {
            return false;
        }
        busy.push((start, end));
        true
    }

    /// Release a range taken with [`RangeLocks::acquire`].
    fn release(&self, range: (u64, u64)) {
        let mut busy = self.busy.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(i) = busy.iter().position(|&r| r == range) {
            busy.swap_remove(i);
        }
        drop(busy);
        self.freed.notify_all();
    }

    fn lock(&self, start: u64, end: u64) -> RangeGuard<'_> {
        self.acquire(start, end);
        RangeGuard {
            locks: self,
            range: (start, end),
        }
    }
}

impl Drop for RangeGuard<'_> {
    fn drop(&mut self) {
        self.locks.release(self.range);
    }
}

thread_local! {
    /// Per-thread bounce buffer of the copying write path (reused, grown once to [`BATCH`]).
    static BOUNCE: RefCell<AlignedBuf> = RefCell::new(AlignedBuf::default());
}

/// The plaintext view of an unlocked volume.
///
/// All methods take `&self` and may be called from several threads at once.
#[derive(Debug)]
pub struct DataVolume {
    /// Where the stored bytes (ciphertext) are: one call per request or batch.
    dev: SharedStorage,
    /// The NBD client when the storage is an NBD export (its connection events).
    #[cfg(feature = "nbd")]
    nbd: Option<std::sync::Arc<lukskit_nbd::NbdClient>>,
    /// The same device opened with `O_DIRECT` (see [`DataVolume::use_direct_io`]).
    direct: Option<File>,
    path: String,
    /// The single-segment layout this volume was opened with, if it was.
    layout: Option<DataLayout>,
    /// The segments of the table, keyed (their raw keys are not kept).
    segs: Vec<SegIo>,
    size: u64,
    /// The table's block size: the alignment of every segment boundary.
    block: u32,
    writable: bool,
    threads: Threads,
    locks: RangeLocks,
}

/// One segment as the data path uses it.
#[derive(Debug)]
struct SegIo {
    start: u64,
    end: u64,
    kind: IoKind,
}

#[derive(Debug)]
enum IoKind {
    Crypt {
        cipher: SectorCipher,
        sector_size: u32,
        iv_offset: u64,
        device_offset: u64,
    },
    Linear {
        device_offset: u64,
    },
    Zero,
}

/// Where a data volume's bytes are, as opened.
struct DataDev {
    storage: SharedStorage,
    #[cfg(feature = "nbd")]
    nbd: Option<std::sync::Arc<lukskit_nbd::NbdClient>>,
}

impl DataDev {
    fn new(storage: SharedStorage) -> Self {
        DataDev {
            storage,
            #[cfg(feature = "nbd")]
            nbd: None,
        }
    }

    fn size(&self, path: &str) -> Result<u64> {
        storage_size(&*self.storage, path)
    }
}

fn storage_size(storage: &dyn lukskit_format::io::Storage, path: &str) -> Result<u64> {
    storage
        .size()
        .map_err(|e| VolumeError::io(IoOp::Read, path, e))
}

impl SegIo {
    /// The device byte offset of segment-relative byte `rel`; `None` in a zero segment.
    fn device(&self, rel: u64) -> Option<u64> {
        match self.kind {
            IoKind::Crypt { device_offset, .. } | IoKind::Linear { device_offset } => {
                Some(device_offset + rel)
            }
            IoKind::Zero => None,
        }
    }
}

impl DataVolume {
    /// The data of an unlocked LUKS volume, opened from `vol.data_path` (the data device even
    /// when the header is detached). `key` must be the volume key.
    pub fn from_volume(vol: &Volume, key: &[u8], writable: bool) -> Result<Self> {
        let file = match vol.data_storage() {
            Some(storage) => DataDev::new(std::sync::Arc::clone(storage)),
            None => Self::open_dev(&vol.data_path, writable)?,
        };
        let dev_size = file.size(&vol.data_path)?;
        let table = SegmentTable::from_volume(vol, key, dev_size)?;
        let layout = match table.segments() {
            [_] => DataLayout::from_volume(vol).ok(),
            _ => None,
        };
        Self::build(file, &vol.data_path, table, layout, writable, dev_size)
    }

    /// Open `path` (an image file or block device) with `layout` and `key`.
    pub fn open(path: &str, layout: DataLayout, key: &[u8], writable: bool) -> Result<Self> {
        let dev = Self::open_dev(path, writable)?;
        let dev_size = dev.size(path)?;
        let table = SegmentTable::from_layout(&layout, key, dev_size)?;
        Self::build(dev, path, table, Some(layout), writable, dev_size)
    }

    /// Open `path` (an image file or block device) with the segment table `table`.
    pub fn open_table(path: &str, table: SegmentTable, writable: bool) -> Result<Self> {
        let dev = Self::open_dev(path, writable)?;
        let dev_size = dev.size(path)?;
        Self::build(dev, path, table, None, writable, dev_size)
    }

    /// Read and write through `storage` (see [`crate::storage`]), named `name` in errors,
    /// with the segment table `table` (for a single crypt segment:
    /// [`SegmentTable::from_layout`]).
    pub fn from_storage(
        storage: SharedStorage,
        name: &str,
        table: SegmentTable,
        writable: bool,
    ) -> Result<Self> {
        let dev = DataDev::new(storage);
        let dev_size = dev.size(name)?;
        Self::build(dev, name, table, None, writable, dev_size)
    }

    /// Open an image file, block device or NBD URI.
    fn open_dev(path: &str, writable: bool) -> Result<DataDev> {
        if crate::device::remote::is_remote(path) {
            #[cfg(feature = "nbd")]
            {
                let client = crate::device::remote::connect(path, writable)?;
                let storage = crate::storage::NbdStorage::new(std::sync::Arc::clone(&client));
                return Ok(DataDev {
                    storage: std::sync::Arc::new(storage),
                    nbd: Some(client),
                });
            }
            #[cfg(not(feature = "nbd"))]
            return crate::device::remote::storage(path, writable).map(DataDev::new);
        }
        let file = Self::open_file(path, writable)?;
        Ok(DataDev::new(std::sync::Arc::new(file)))
    }

    fn open_file(path: &str, writable: bool) -> Result<File> {
        OpenOptions::new()
            .read(true)
            .write(writable)
            .custom_flags(libc::O_CLOEXEC)
            .open(path)
            .map_err(|e| match e.kind() {
                std::io::ErrorKind::NotFound | std::io::ErrorKind::PermissionDenied => {
                    VolumeError::not_found(path)
                }
                _ => VolumeError::io(IoOp::Open, path, e),
            })
    }

    /// Use an already open data device. Its current size decides the size of a dynamic
    /// data area.
    pub fn from_file(
        file: File,
        path: &str,
        layout: DataLayout,
        key: &[u8],
        writable: bool,
    ) -> Result<Self> {
        let dev_size = lukskit_format::io::Storage::size(&file)
            .map_err(|e| VolumeError::io(IoOp::Read, path, e))?;
        let table = SegmentTable::from_layout(&layout, key, dev_size)?;
        Self::build(
            DataDev::new(std::sync::Arc::new(file)),
            path,
            table,
            Some(layout),
            writable,
            dev_size,
        )
    }

    fn build(
        dev: DataDev,
        path: &str,
        table: SegmentTable,
        layout: Option<DataLayout>,
        writable: bool,
        dev_size: u64,
    ) -> Result<Self> {
        table.check_device(dev_size)?;
        let mut segs = Vec::with_capacity(table.segments().len());
        for s in table.segments() {
            let kind = match &s.kind {
                SegmentKind::Crypt(c) => IoKind::Crypt {
                    cipher: SectorCipher::new_data(
                        &c.cipher,
                        c.key.as_bytes(),
                        c.sector_size,
                        c.iv_large_sectors,
                    )?,
                    sector_size: c.sector_size,
                    iv_offset: c.iv_offset,
                    device_offset: c.device_offset,
                },
                SegmentKind::Linear { device_offset } => IoKind::Linear {
                    device_offset: *device_offset,
                },
                SegmentKind::Zero => IoKind::Zero,
            };
            segs.push(SegIo {
                start: s.start,
                end: s.end(),
                kind,
            });
        }
        Ok(DataVolume {
            dev: dev.storage,
            #[cfg(feature = "nbd")]
            nbd: dev.nbd,
            direct: None,
            path: path.to_string(),
            layout,
            segs,
            size: table.size(),
            block: table.block_size(),
            writable,
            threads: Threads::All,
            locks: RangeLocks::default(),
        })
    }

    /// Also open the data device with `O_DIRECT` and use it for transfers whose buffer
    /// address, length and device offset are all multiples of [`DIRECT_ALIGN`] (the
    /// ciphertext then does not fill the page cache a second time; other transfers stay
    /// buffered, which the kernel keeps coherent with direct I/O). Returns whether direct
    /// I/O is in use: file systems without `O_DIRECT` (tmpfs) refuse it, and the volume
    /// stays buffered.
    pub fn use_direct_io(&mut self) -> bool {
        if self.file().is_none() {
            return false;
        }
        let direct = OpenOptions::new()
            .read(true)
            .write(self.writable)
            .custom_flags(libc::O_CLOEXEC | libc::O_DIRECT)
            .open(&self.path);
        self.direct = direct.ok();
        self.direct.is_some()
    }

    /// Whether transfers may bypass the page cache (see [`DataVolume::use_direct_io`]).
    pub fn direct_io(&self) -> bool {
        self.direct.is_some()
    }

    /// The descriptor a transfer of `buf` at device offset `at` uses: the `O_DIRECT` one
    /// where it may, the buffered one otherwise.
    /// `None` for an NBD export (which [`crate::ring::SectorRing`] never gets).
    #[cfg(feature = "io-uring")]
    pub(crate) fn file_for(&self, buf: &[u8], at: u64) -> Option<&File> {
        self.direct_for(buf, at).or(self.file())
    }

    /// Whether the stored bytes are somewhere else than in a local file or device (on an
    /// NBD server, in a storage of the caller's).
    pub fn is_remote(&self) -> bool {
        self.file().is_none()
    }

    /// The `O_DIRECT` descriptor if `buf` at device offset `at` may use it.
    fn direct_for(&self, buf: &[u8], at: u64) -> Option<&File> {
        let d = self.direct.as_ref()?;
        let aligned = (buf.as_ptr() as usize).is_multiple_of(DIRECT_ALIGN)
            && buf.len().is_multiple_of(DIRECT_ALIGN)
            && at.is_multiple_of(DIRECT_ALIGN as u64);
        aligned.then_some(d)
    }

    /// Choose how many threads large batches use (default: all cores).
    pub fn set_threads(&mut self, threads: Threads) {
        self.threads = threads;
    }

    /// The layout this volume was opened with, when it has one crypt segment described by
    /// a [`DataLayout`] (`None` for a volume opened from a segment table of its own).
    pub fn layout(&self) -> Option<&DataLayout> {
        self.layout.as_ref()
    }

    /// Plaintext size in bytes.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// The current size of the data device in bytes (an image file or block device may
    /// have grown since the volume was opened).
    pub fn device_size(&self) -> Result<u64> {
        storage_size(&*self.dev, &self.path)
    }

    /// Change the plaintext size to `size` bytes by moving the end of the last segment
    /// (what a dm-crypt table reload with another length does; the keys stay). `size` must
    /// be a multiple of the table's block size, leave the last segment at least one block,
    /// and its device bytes must lie inside the data device as it is now.
    pub fn set_size(&mut self, size: u64) -> Result<()> {
        let block = u64::from(self.block);
        let Some(last) = self.segs.last() else {
            return Err(SegmentError::Empty.into());
        };
        if size <= last.start || !size.is_multiple_of(block) {
            return Err(SegmentError::Unaligned {
                index: self.segs.len() - 1,
                len: size.saturating_sub(last.start),
                start: last.start,
                block: self.block,
            }
            .into());
        }
        let len = size - last.start;
        if let Some(o) = last.device(0) {
            let dev = self.device_size()?;
            if o.checked_add(len).is_none_or(|e| e > dev) {
                return Err(SegmentError::BeyondDevice {
                    offset: o,
                    len,
                    device_size: dev,
                }
                .into());
            }
        }
        if let Some(l) = self.segs.last_mut() {
            l.end = size;
        }
        self.size = size;
        if let Some(layout) = self.layout.as_mut() {
            layout.size = Some(size);
        }
        Ok(())
    }

    /// The alignment of sector-aligned requests in bytes: the encryption sector size of a
    /// single-segment volume, the segment table's block size in general (the largest
    /// encryption sector size of its segments).
    pub fn sector_size(&self) -> u32 {
        self.block
    }

    /// Tell `sink` of the NBD client's connection events (lost, reconnected) when the
    /// stored bytes are on an NBD export; nothing otherwise.
    #[cfg(feature = "nbd")]
    pub fn on_nbd_event(&self, sink: lukskit_nbd::EventSink) {
        if let Some(c) = &self.nbd {
            c.on_event(sink);
        }
    }

    /// The data device path.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// The underlying data device (for callers doing their own I/O with
    /// [`DataVolume::encrypt_sectors`] / [`DataVolume::decrypt_sectors`]); `None` when it is
    /// an NBD export or a storage of the caller's (use [`DataVolume::pread`] /
    /// [`DataVolume::pwrite`]).
    pub fn file(&self) -> Option<&File> {
        lukskit_format::io::Storage::local_file(&*self.dev)
    }

    /// The storage the stored bytes are read from and written to.
    pub fn storage(&self) -> &SharedStorage {
        &self.dev
    }

    /// The index of the segment holding plaintext byte `offset` (`segs.len()` at or past
    /// the end). One comparison for a single-segment volume.
    fn seg_index(&self, offset: u64) -> usize {
        self.segs.partition_point(|s| s.end <= offset)
    }

    /// Call `f(segment, offset in the segment, range of the request)` for each part of the
    /// request `[offset, offset + len)` that lies in one segment, in order; bytes past the
    /// end belong to the last segment. No allocation.
    fn for_each_piece(
        &self,
        offset: u64,
        len: usize,
        mut f: impl FnMut(&SegIo, u64, std::ops::Range<usize>) -> Result<()>,
    ) -> Result<()> {
        if let [only] = self.segs.as_slice() {
            // The common case: one segment, starting at 0, that continues past the end.
            return f(only, offset, 0..len);
        }
        let end = offset
            .checked_add(len as u64)
            .ok_or_else(|| self.range_error(offset, len))?;
        let mut pos = offset;
        let mut i = self.seg_index(offset).min(self.segs.len() - 1);
        while pos < end {
            let Some(s) = self.segs.get(i) else {
                return Err(self.range_error(offset, len));
            };
            // The last segment continues past the end (an image file written as a stream
            // grows with what is written; requests are range-checked before).
            let n = if i + 1 == self.segs.len() {
                end - pos
            } else {
                s.end.min(end) - pos
            };
            let at = (pos - offset) as usize;
            f(s, pos - s.start, at..at + n as usize)?;
            pos += n;
            i += 1;
        }
        Ok(())
    }

    /// The device byte offset of plaintext byte `offset`: `None` in a zero segment (which
    /// has no device bytes) or at or past the end.
    pub fn device_offset(&self, offset: u64) -> Option<u64> {
        let s = self.segs.get(self.seg_index(offset))?;
        s.device(offset - s.start)
    }

    /// Whether `[offset, offset + len)` (not empty) lies inside one crypt or linear segment,
    /// so that it is one run of device bytes from [`DataVolume::device_offset`] on.
    pub fn is_contiguous(&self, offset: u64, len: usize) -> bool {
        let Some(s) = self.segs.get(self.seg_index(offset)) else {
            return false;
        };
        len > 0
            && offset.checked_add(len as u64).is_some_and(|e| e <= s.end)
            && !matches!(s.kind, IoKind::Zero)
    }

    /// Encrypt whole sectors in place without any I/O: `buf` holds the plaintext that
    /// belongs at plaintext byte `offset` (aligned to the sector size of every segment it
    /// touches, length likewise). Parts in linear segments are left as they are (they are
    /// stored unencrypted), parts in zero segments too (their writes are dropped). Past the
    /// end of the volume the last segment continues (a growing image file).
    pub fn encrypt_sectors(&self, buf: &mut [u8], offset: u64) -> Result<()> {
        self.for_each_piece(offset, buf.len(), |s, rel, r| match &s.kind {
            IoKind::Crypt { .. } => self.crypt(s, &mut buf[r], rel, true),
            IoKind::Linear { .. } | IoKind::Zero => Ok(()),
        })
    }

    /// Decrypt whole sectors in place without any I/O (see [`DataVolume::encrypt_sectors`]);
    /// parts in zero segments become zeros.
    pub fn decrypt_sectors(&self, buf: &mut [u8], offset: u64) -> Result<()> {
        self.for_each_piece(offset, buf.len(), |s, rel, r| match &s.kind {
            IoKind::Crypt { .. } => self.crypt(s, &mut buf[r], rel, false),
            IoKind::Linear { .. } => Ok(()),
            IoKind::Zero => {
                buf[r].fill(0);
                Ok(())
            }
        })
    }

    /// En- or decrypt whole sectors of crypt segment `s` at segment-relative offset `rel`.
    fn crypt(&self, s: &SegIo, buf: &mut [u8], rel: u64, encrypt: bool) -> Result<()> {
        let IoKind::Crypt {
            cipher: c,
            sector_size,
            iv_offset,
            ..
        } = &s.kind
        else {
            return Ok(());
        };
        let ss = *sector_size as usize;
        if !rel.is_multiple_of(ss as u64) || !buf.len().is_multiple_of(ss) {
            return Err(DataError::Unaligned {
                offset: s.start + rel,
                len: buf.len(),
                sector_size: *sector_size,
            }
            .into());
        }
        let sector = (rel / 512).wrapping_add(*iv_offset);
        let run = |b: &mut [u8], s: u64| {
            if encrypt {
                c.encrypt(b, s)
            } else {
                c.decrypt(b, s)
            }
        };
        match self.threads {
            Threads::All => {
                if encrypt {
                    c.encrypt_parallel(buf, sector)?
                } else {
                    c.decrypt_parallel(buf, sector)?
                }
            }
            Threads::Fixed(n) if n <= 1 || buf.len() < 2 * 64 * 1024 => run(buf, sector)?,
            Threads::Fixed(n) => {
                let per = buf.len().div_ceil(n).div_ceil(ss) * ss;
                std::thread::scope(|scope| -> Result<()> {
                    let handles: Vec<_> = buf
                        .chunks_mut(per)
                        .enumerate()
                        .map(|(i, chunk)| {
                            let s = sector.wrapping_add(((i * per) / 512) as u64);
                            scope.spawn(move || run(chunk, s))
                        })
                        .collect();
                    for h in handles {
                        h.join().map_err(|_| DataError::ThreadPanicked)??;
                    }
                    Ok(())
                })?
            }
        }
        Ok(())
    }

    fn range_error(&self, offset: u64, len: usize) -> VolumeError {
        DataError::BeyondEnd {
            offset,
            len,
            size: self.size,
        }
        .into()
    }

    pub(crate) fn check_range(&self, offset: u64, len: usize) -> Result<()> {
        match offset.checked_add(len as u64) {
            Some(end) if end <= self.size => Ok(()),
            _ => Err(self.range_error(offset, len)),
        }
    }

    /// Read the stored bytes (ciphertext, or plaintext of linear segments; zeros for zero
    /// segments) at plaintext `offset`, without decryption (for callers doing their own
    /// pipelining with [`DataVolume::decrypt_sectors`]). Past the end of the volume the last
    /// segment continues.
    pub fn pread(&self, buf: &mut [u8], offset: u64) -> Result<()> {
        self.for_each_piece(offset, buf.len(), |s, rel, r| {
            self.pread_in(s, &mut buf[r], rel)
        })
    }

    /// Write stored bytes (see [`DataVolume::pread`]) at plaintext `offset`: the output of
    /// [`DataVolume::encrypt_sectors`]. The parts in zero segments are dropped; past the end
    /// of the volume the last segment continues (an image file grows).
    pub fn pwrite(&self, buf: &[u8], offset: u64) -> Result<()> {
        self.for_each_piece(offset, buf.len(), |s, rel, r| {
            self.pwrite_in(s, &buf[r], rel)
        })
    }

    fn pread_in(&self, s: &SegIo, buf: &mut [u8], rel: u64) -> Result<()> {
        let Some(at) = s.device(rel) else {
            buf.fill(0);
            return Ok(());
        };
        let r = match self.direct_for(buf, at) {
            Some(direct) => direct.read_exact_at(buf, at),
            None => lukskit_format::io::Storage::read_exact_at(&*self.dev, buf, at),
        };
        r.map_err(|e| VolumeError::io(IoOp::Read, &self.path, e))
    }

    fn pwrite_in(&self, s: &SegIo, buf: &[u8], rel: u64) -> Result<()> {
        let Some(at) = s.device(rel) else {
            return Ok(());
        };
        let r = match self.direct_for(buf, at) {
            Some(direct) => direct.write_all_at(buf, at),
            None => lukskit_format::io::Storage::write_all_at(&*self.dev, buf, at),
        };
        r.map_err(|e| VolumeError::io(IoOp::Write, &self.path, e))
    }

    /// Read and decrypt one whole sector at (aligned) offset `sec_off` of crypt segment `s`.
    fn read_sector(&self, s: &SegIo, sector: &mut [u8], sec_off: u64) -> Result<()> {
        self.pread_in(s, sector, sec_off)?;
        self.crypt(s, sector, sec_off, false)
    }

    /// Read `buf.len()` plaintext bytes at plaintext byte `offset`.
    pub fn read_at(&self, buf: &mut [u8], offset: u64) -> Result<()> {
        self.check_range(offset, buf.len())?;
        self.for_each_piece(offset, buf.len(), |s, rel, r| match &s.kind {
            IoKind::Crypt { sector_size, .. } => {
                self.read_crypt(s, u64::from(*sector_size), &mut buf[r], rel)
            }
            IoKind::Linear { .. } | IoKind::Zero => self.pread_in(s, &mut buf[r], rel),
        })
    }

    /// Read plaintext at offset `rel` of crypt segment `s` (sector size `ss`).
    fn read_crypt(&self, s: &SegIo, ss: u64, buf: &mut [u8], rel: u64) -> Result<()> {
        let mut pos = rel;
        let mut done = 0usize;
        // Unaligned head (or a request inside one sector). The sector buffer is only set up
        // (zeroed) for partial sectors: aligned requests, the common case, skip it.
        let head = pos % ss;
        if head != 0 && !buf.is_empty() {
            let mut sector = [0u8; MAX_SECTOR];
            let sector = &mut sector[..ss as usize];
            let base = pos - head;
            self.read_sector(s, sector, base)?;
            let n = ((ss - head) as usize).min(buf.len());
            buf[..n].copy_from_slice(&sector[head as usize..head as usize + n]);
            pos += n as u64;
            done = n;
        }
        // Aligned middle: straight into the caller's buffer.
        let mid = (buf.len() - done) / ss as usize * ss as usize;
        if mid > 0 {
            let part = &mut buf[done..done + mid];
            self.pread_in(s, part, pos)?;
            self.crypt(s, part, pos, false)?;
            pos += mid as u64;
            done += mid;
        }
        // Unaligned tail.
        if done < buf.len() {
            let mut sector = [0u8; MAX_SECTOR];
            let sector = &mut sector[..ss as usize];
            self.read_sector(s, sector, pos)?;
            let n = buf.len() - done;
            buf[done..].copy_from_slice(&sector[..n]);
        }
        Ok(())
    }

    pub(crate) fn check_writable(&self) -> Result<()> {
        if self.writable {
            Ok(())
        } else {
            Err(VolumeError::ReadOnly {
                path: self.path.clone(),
            })
        }
    }

    /// Patch the bytes `data` into the sector at aligned offset `sec_off` of crypt segment
    /// `s`, starting `at` bytes into it (read-modify-write).
    fn patch_sector(
        &self,
        s: &SegIo,
        ss: usize,
        sec_off: u64,
        at: usize,
        data: &[u8],
    ) -> Result<()> {
        let mut sector = [0u8; MAX_SECTOR];
        let sector = &mut sector[..ss];
        self.read_sector(s, sector, sec_off)?;
        sector[at..at + data.len()].copy_from_slice(data);
        self.crypt(s, sector, sec_off, true)?;
        self.pwrite_in(s, sector, sec_off)
    }

    /// The blocks covering `[offset, offset + len)`, as a range of block numbers (blocks of
    /// [`DataVolume::sector_size`] bytes: they cover whole sectors of every segment).
    pub(crate) fn sector_range(&self, offset: u64, len: usize) -> (u64, u64) {
        let ss = u64::from(self.block);
        (offset / ss, (offset + len as u64).div_ceil(ss))
    }

    /// Lock the sectors covering `[offset, offset + len)`.
    fn lock_sectors(&self, offset: u64, len: usize) -> RangeGuard<'_> {
        let (start, end) = self.sector_range(offset, len);
        self.locks.lock(start, end)
    }

    /// Hold the lock of a sector range beyond one call (an asynchronous write).
    #[cfg(feature = "io-uring")]
    pub(crate) fn lock_range(&self, range: (u64, u64)) {
        self.locks.acquire(range.0, range.1);
    }

    /// [`DataVolume::lock_range`] without waiting: false (nothing held) when part of the
    /// range is held already.
    #[cfg(feature = "io-uring")]
    pub(crate) fn try_lock_range(&self, range: (u64, u64)) -> bool {
        self.locks.try_acquire(range.0, range.1)
    }

    /// Release a range taken with [`DataVolume::lock_range`].
    #[cfg(feature = "io-uring")]
    pub(crate) fn unlock_range(&self, range: (u64, u64)) {
        self.locks.release(range);
    }

    /// Write `buf.len()` plaintext bytes at plaintext byte `offset`. Partial sectors at the
    /// edges are read, patched and rewritten; `buf` is left untouched. Bytes in zero
    /// segments are dropped (as dm-zero does), bytes in linear segments stored as they are.
    pub fn write_at(&self, buf: &[u8], offset: u64) -> Result<()> {
        self.check_writable()?;
        self.check_range(offset, buf.len())?;
        if buf.is_empty() {
            return Ok(());
        }
        let _guard = self.lock_sectors(offset, buf.len());
        self.for_each_piece(offset, buf.len(), |s, rel, r| match &s.kind {
            IoKind::Crypt { sector_size, .. } => {
                self.write_crypt(s, u64::from(*sector_size), &buf[r], rel)
            }
            IoKind::Linear { .. } | IoKind::Zero => self.pwrite_in(s, &buf[r], rel),
        })
    }

    /// Encrypt and write plaintext at offset `rel` of crypt segment `s` (sector size `ss`).
    fn write_crypt(&self, s: &SegIo, ss: u64, buf: &[u8], rel: u64) -> Result<()> {
        let mut pos = rel;
        let mut done = 0usize;
        let head = pos % ss;
        if head != 0 {
            let n = ((ss - head) as usize).min(buf.len());
            self.patch_sector(s, ss as usize, pos - head, head as usize, &buf[..n])?;
            pos += n as u64;
            done = n;
        }
        let mid = (buf.len() - done) / ss as usize * ss as usize;
        if mid > 0 {
            BOUNCE.with(|b| -> Result<()> {
                let mut bounce = b.borrow_mut();
                bounce.ensure(BATCH.min(mid));
                let bounce = bounce.as_mut_slice();
                let cap = bounce.len() / ss as usize * ss as usize;
                let src = &buf[done..done + mid];
                let mut at = 0usize;
                while at < mid {
                    let n = cap.min(mid - at);
                    let chunk = &mut bounce[..n];
                    chunk.copy_from_slice(&src[at..at + n]);
                    let p = pos + at as u64;
                    self.crypt(s, chunk, p, true)?;
                    self.pwrite_in(s, chunk, p)?;
                    at += n;
                }
                Ok(())
            })?;
            pos += mid as u64;
            done += mid;
        }
        if done < buf.len() {
            self.patch_sector(s, ss as usize, pos, 0, &buf[done..])?;
        }
        Ok(())
    }

    /// Like [`DataVolume::write_at`] but encrypts in the caller's buffer when the request is
    /// aligned to [`DataVolume::sector_size`] (no copy); `buf` then holds what was stored
    /// afterwards (ciphertext in crypt segments). Unaligned requests take the copying path
    /// and leave `buf` unchanged.
    pub fn write_at_in_place(&self, buf: &mut [u8], offset: u64) -> Result<()> {
        let ss = self.block as usize;
        if !offset.is_multiple_of(ss as u64) || !buf.len().is_multiple_of(ss) {
            return self.write_at(buf, offset);
        }
        self.check_writable()?;
        self.check_range(offset, buf.len())?;
        let _guard = self.lock_sectors(offset, buf.len());
        self.for_each_piece(offset, buf.len(), |s, rel, r| {
            let part = &mut buf[r];
            self.crypt(s, part, rel, true)?;
            self.pwrite_in(s, part, rel)
        })
    }

    /// Discard `[offset, offset + len)`: in crypt segments the whole encryption sectors
    /// inside the range have their ciphertext punched out of the data file
    /// (`fallocate(PUNCH_HOLE)`), so they read back as the decryption of zeroes, as after a
    /// discard through dm-crypt (partial sectors at the edges are left alone); in linear
    /// segments the bytes are punched out (they read back as zeros); in zero segments
    /// nothing happens. Block devices and file systems without hole punching give an
    /// `Unsupported` error.
    pub fn discard(&self, offset: u64, len: u64) -> Result<()> {
        self.check_writable()?;
        match offset.checked_add(len) {
            Some(end) if end <= self.size => {}
            _ => return Err(DataError::DiscardBeyondEnd.into()),
        }
        let Ok(n) = usize::try_from(len) else {
            return Err(DataError::DiscardTooLarge.into());
        };
        let _guard = self.lock_sectors(offset, n);
        self.for_each_piece(offset, n, |s, rel, r| {
            let (start, end) = match s.kind {
                IoKind::Crypt { sector_size, .. } => {
                    let ss = u64::from(sector_size);
                    (rel.div_ceil(ss) * ss, (rel + r.len() as u64) / ss * ss)
                }
                IoKind::Linear { .. } => (rel, rel + r.len() as u64),
                IoKind::Zero => return Ok(()),
            };
            match s.device(start) {
                Some(at) if end > start => self.punch(at, end - start),
                _ => Ok(()),
            }
        })
    }

    /// Punch `[at, at + n)` out of the stored bytes ([`lukskit_format::io::Storage::discard`]:
    /// a hole in an image file; NBD exports keep their bytes and say `Unsupported`).
    fn punch(&self, at: u64, n: u64) -> Result<()> {
        if libc::off_t::try_from(at).is_err() || libc::off_t::try_from(n).is_err() {
            return Err(DataError::DiscardTooLarge.into());
        }
        lukskit_format::io::Storage::discard(&*self.dev, at, n)
            .map_err(|e| VolumeError::io(IoOp::Discard, &self.path, e))
    }

    /// Make written data durable (`fdatasync` of the data device).
    /// For an NBD export this is `NBD_CMD_FLUSH` (with multi-conn, one flush covers every
    /// connection).
    pub fn flush(&self) -> Result<()> {
        lukskit_format::io::Storage::sync_data(&*self.dev)
            .map_err(|e| VolumeError::io(IoOp::Sync, &self.path, e))
    }
}

/// Open the data of a LUKS volume whose header is at `header` (or in `device`) with an
/// already known volume key, checking the key against the header digest first.
pub fn open_luks(
    device: &str,
    header: Option<&str>,
    key: &[u8],
    writable: bool,
) -> Result<DataVolume> {
    let access = if writable {
        Access::Write
    } else {
        Access::Read
    };
    let vol = Volume::load(device, header, access)?;
    vol.verify_volume_key(key)?;
    DataVolume::from_volume(&vol, key, writable)
}

#[cfg(test)]
mod tests {
    use super::*;
    use lukskit_crypto::spec::CipherSpec;

    fn tmpfile(len: u64) -> (tempdir::Dir, String) {
        let d = tempdir::Dir::new();
        let p = d.path("data.img");
        let f = File::create(&p).unwrap();
        f.set_len(len).unwrap();
        (d, p)
    }

    /// Minimal temp dir helper (no dev-dependencies in this crate).
    mod tempdir {
        pub struct Dir(std::path::PathBuf);
        impl Dir {
            pub fn new() -> Self {
                let mut b = [0u8; 8];
                lukskit_crypto::random::fill(&mut b).unwrap();
                let p = std::env::temp_dir().join(format!("lukskit-data-{}", hex::encode(b)));
                std::fs::create_dir(&p).unwrap();
                Dir(p)
            }
            pub fn path(&self, name: &str) -> String {
                self.0.join(name).to_str().unwrap().to_string()
            }
        }
        impl Drop for Dir {
            fn drop(&mut self) {
                let _ = std::fs::remove_dir_all(&self.0);
            }
        }
    }

    fn layout(cipher: &str, ss: u32, offset: u64, iv_offset: u64, large: bool) -> DataLayout {
        DataLayout {
            cipher: cipher.into(),
            offset,
            size: None,
            sector_size: ss,
            iv_offset,
            iv_large_sectors: large,
        }
    }

    fn pattern(len: usize, seed: u8) -> Vec<u8> {
        (0..len)
            .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed))
            .collect()
    }

    #[test]
    fn set_size_moves_the_end_and_keeps_the_data() {
        let (_d, p) = tmpfile(4 << 20);
        let l = layout("aes-xts-plain64", 4096, 1 << 20, 0, false);
        let mut v = DataVolume::open(&p, l.clone(), &[7u8; 64], true).unwrap();
        assert_eq!(v.size(), 3 << 20);
        let data = pattern(1 << 20, 3);
        v.write_at(&data, 0).unwrap();
        v.set_size(1 << 20).unwrap();
        assert_eq!(v.size(), 1 << 20);
        assert_eq!(v.layout().and_then(|l| l.size), Some(1 << 20));
        // Unaligned, empty, or past the device: refused, size unchanged.
        assert!(v.set_size((1 << 20) + 512).is_err());
        assert!(v.set_size(0).is_err());
        assert!(v.set_size(4 << 20).is_err());
        assert_eq!(v.size(), 1 << 20);
        // The device grows; the volume grows into it with the same key.
        File::options()
            .write(true)
            .open(&p)
            .unwrap()
            .set_len(6 << 20)
            .unwrap();
        assert_eq!(v.device_size().unwrap(), 6 << 20);
        v.set_size(5 << 20).unwrap();
        let mut back = vec![0u8; 1 << 20];
        v.read_at(&mut back, 0).unwrap();
        assert!(back == data);
        let fresh = DataVolume::open(&p, l, &[7u8; 64], false).unwrap();
        assert_eq!(fresh.size(), 5 << 20);
        fresh.read_at(&mut back, 0).unwrap();
        assert!(back == data);
    }

    /// The ciphertext on disk equals the engine's output with dm-crypt's sector numbering,
    /// computed here directly (offset/512 + iv_offset), so the layout arithmetic is checked.
    #[test]
    fn on_disk_bytes_follow_dm_crypt_numbering() {
        for (cipher, ss, iv_off, large) in [
            ("aes-xts-plain64", 4096u32, 0u64, false),
            ("aes-xts-plain64", 4096, 16, false),
            ("aes-xts-plain64", 4096, 16, true),
            ("aes-cbc-essiv:sha256", 512, 7, false),
            ("serpent-xts-plain64", 1024, 2, false),
        ] {
            let key_len = if cipher.contains("xts") { 64 } else { 32 };
            let key = pattern(key_len, 9);
            let data_off = 8192u64;
            let (_d, p) = tmpfile(data_off + 64 * 1024);
            let dv = DataVolume::open(&p, layout(cipher, ss, data_off, iv_off, large), &key, true)
                .unwrap();
            assert_eq!(dv.size(), 64 * 1024);
            let plain = pattern(64 * 1024, 3);
            dv.write_at(&plain, 0).unwrap();
            let mut disk = vec![0u8; 64 * 1024];
            dv.file()
                .unwrap()
                .read_exact_at(&mut disk, data_off)
                .unwrap();
            let spec = CipherSpec::parse(cipher).unwrap();
            let eng = SectorCipher::new(&spec, &key, ss, large).unwrap();
            let mut expect = plain.clone();
            for (i, unit) in expect.chunks_mut(ss as usize).enumerate() {
                let cc = (i as u64 * u64::from(ss)) / 512 + iv_off;
                eng.encrypt(unit, cc).unwrap();
            }
            assert_eq!(
                disk, expect,
                "{cipher} ss={ss} iv_off={iv_off} large={large}"
            );
            let mut back = vec![0u8; plain.len()];
            dv.read_at(&mut back, 0).unwrap();
            assert_eq!(back, plain);
        }
    }

    /// Random unaligned reads and writes against an in-memory model of the plaintext.
    #[test]
    fn unaligned_access_matches_model() {
        random_access_matches_model(false);
    }

    /// The same with `O_DIRECT` for aligned transfers (mixed with buffered ones), and the
    /// ciphertext on disk equal to what a buffered volume writes for the same plaintext.
    #[test]
    fn direct_io_matches_model_and_buffered_bytes() {
        random_access_matches_model(true);
    }

    fn random_access_matches_model(direct: bool) {
        let key = pattern(64, 1);
        let size = 256 * 1024u64;
        let (d, p) = tmpfile(size + 4096);
        let mut dv = DataVolume::open(
            &p,
            layout("aes-xts-plain64", 4096, 4096, 0, false),
            &key,
            true,
        )
        .unwrap();
        if direct && !dv.use_direct_io() {
            lukskit_testkit::skip_or_fail(
                "random_access_matches_model (direct I/O)",
                &format!(
                    "O_DIRECT is unsupported by the file system of {} (tmpfs before Linux \
                     6.6); point TMPDIR at a disk file system",
                    std::env::temp_dir().display()
                ),
            );
            return;
        }
        let mut aligned = AlignedBuf::default();
        let mut model = vec![0u8; size as usize];
        dv.read_at(&mut model, 0).unwrap();
        let mut rng = 0x1234_5678_9abc_def0u64;
        let mut next = |m: u64| {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            rng % m
        };
        for round in 0..300 {
            dv.set_threads(match round % 3 {
                0 => Threads::All,
                1 => Threads::Fixed(1),
                _ => Threads::Fixed(3),
            });
            let off = next(size);
            let len = next((size - off).min(200_000) + 1) as usize;
            if round % 2 == 0 {
                let data = pattern(len, round as u8);
                if round % 4 == 0 {
                    dv.write_at(&data, off).unwrap();
                } else {
                    let mut d = data.clone();
                    dv.write_at_in_place(&mut d, off).unwrap();
                }
                model[off as usize..off as usize + len].copy_from_slice(&data);
            } else if round % 3 == 0 {
                // Whole pages into an aligned buffer: the O_DIRECT path when enabled.
                let off = off / 4096 * 4096;
                let len = (len.div_ceil(4096) * 4096).min((size - off) as usize);
                aligned.ensure(len);
                let got = &mut aligned.as_mut_slice()[..len];
                dv.read_at(got, off).unwrap();
                assert!(
                    got == &model[off as usize..off as usize + len],
                    "round {round}"
                );
            } else {
                let mut got = vec![0u8; len];
                dv.read_at(&mut got, off).unwrap();
                assert_eq!(
                    got,
                    &model[off as usize..off as usize + len],
                    "round {round}"
                );
            }
        }
        let mut all = vec![0u8; size as usize];
        dv.read_at(&mut all, 0).unwrap();
        assert_eq!(all, model);
        dv.flush().unwrap();
        // A buffered volume writing the final plaintext in one go leaves the same bytes.
        let p2 = d.path("buffered.img");
        File::create(&p2).unwrap().set_len(size + 4096).unwrap();
        let dv2 = DataVolume::open(
            &p2,
            layout("aes-xts-plain64", 4096, 4096, 0, false),
            &key,
            true,
        )
        .unwrap();
        dv2.write_at(&model, 0).unwrap();
        assert!(std::fs::read(&p).unwrap() == std::fs::read(&p2).unwrap());
    }

    /// A four-segment table as the VM interop test uses: crypt (key A, 4096-byte sectors,
    /// IV offset 8, `iv_large_sectors`) / linear / zero / crypt (key B, another cipher,
    /// 512-byte sectors, IV offset 3), with device extents out of order.
    pub(crate) fn mixed_table(key_a: &[u8], key_b: &[u8]) -> SegmentTable {
        use crate::segment::{CryptSegment, Segment};
        let crypt = |start, len, cipher: &str, key: &[u8], ss, iv, large, dev| Segment {
            start,
            len,
            kind: SegmentKind::Crypt(CryptSegment {
                cipher: CipherSpec::parse(cipher).unwrap(),
                key: lukskit_crypto::SecretBuf::from_slice(key),
                sector_size: ss,
                iv_offset: iv,
                iv_large_sectors: large,
                device_offset: dev,
                digest: None,
            }),
        };
        SegmentTable::new(vec![
            crypt(
                0,
                64 << 10,
                "aes-xts-plain64",
                key_a,
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
                key_b,
                512,
                3,
                false,
                48 << 10,
            ),
        ])
        .unwrap()
    }

    /// Random unaligned reads and writes crossing segment boundaries against a model in which
    /// the zero segment stays zero; then the bytes on the device: each crypt segment holds the
    /// engine's output with its own key, IV offset and sector size, the linear segment the
    /// plaintext, and nothing was written for the zero segment. Discards across boundaries
    /// leave the zero segment zero and the linear bytes zero.
    #[test]
    fn segment_table_io_matches_model() {
        let (key_a, key_b) = (pattern(64, 11), pattern(32, 12));
        let dev_len = 224u64 << 10;
        let (_d, p) = tmpfile(dev_len);
        // Mark the device so that stray writes show.
        std::fs::write(&p, vec![0xeeu8; dev_len as usize]).unwrap();
        let dv = DataVolume::open_table(&p, mixed_table(&key_a, &key_b), true).unwrap();
        let size = dv.size();
        assert_eq!((size, dv.sector_size()), (160 << 10, 4096));
        assert!(dv.layout().is_none());
        let zero = (96usize << 10)..(112usize << 10);
        let mut model = vec![0u8; size as usize];
        dv.read_at(&mut model, 0).unwrap();
        assert!(model[zero.clone()].iter().all(|&b| b == 0));
        assert!(
            model[64 << 10..96 << 10].iter().all(|&b| b == 0xee),
            "linear"
        );
        let mut rng = 0x0bad_cafe_f00d_1234u64;
        let mut next = |m: u64| {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            rng % m
        };
        for round in 0..400 {
            // Bias towards boundaries: start near one of them.
            let b = [0u64, 64 << 10, 96 << 10, 112 << 10][round % 4];
            let off = (b + next(16 << 10)).saturating_sub(8 << 10).min(size - 1);
            let len = next((size - off).min(70_000) + 1) as usize;
            if round % 2 == 0 {
                let data = pattern(len, round as u8);
                if round % 4 == 0 {
                    dv.write_at(&data, off).unwrap();
                } else {
                    let (o, l) = (off / 4096 * 4096, len.div_ceil(4096) * 4096);
                    let l = l.min((size - o) as usize);
                    let data = pattern(l, round as u8);
                    let mut d = data.clone();
                    dv.write_at_in_place(&mut d, o).unwrap();
                    model[o as usize..o as usize + l].copy_from_slice(&data);
                    model[zero.clone()].fill(0);
                    continue;
                }
                model[off as usize..off as usize + len].copy_from_slice(&data);
                model[zero.clone()].fill(0);
            } else {
                let mut got = vec![0u8; len];
                dv.read_at(&mut got, off).unwrap();
                assert!(
                    got == model[off as usize..off as usize + len],
                    "round {round}"
                );
            }
        }
        let mut all = vec![0u8; size as usize];
        dv.read_at(&mut all, 0).unwrap();
        assert!(all == model);
        dv.flush().unwrap();
        // The device bytes, segment by segment.
        let disk = std::fs::read(&p).unwrap();
        let enc = |cipher: &str, key: &[u8], ss: u32, iv: u64, large: bool, plain: &[u8]| {
            let eng =
                SectorCipher::new(&CipherSpec::parse(cipher).unwrap(), key, ss, large).unwrap();
            let mut out = plain.to_vec();
            for (i, unit) in out.chunks_mut(ss as usize).enumerate() {
                eng.encrypt(unit, i as u64 * u64::from(ss) / 512 + iv)
                    .unwrap();
            }
            out
        };
        let a = enc("aes-xts-plain64", &key_a, 4096, 8, true, &model[..64 << 10]);
        assert!(disk[160 << 10..224 << 10] == a[..], "crypt segment A");
        assert!(
            disk[8 << 10..40 << 10] == model[64 << 10..96 << 10],
            "linear"
        );
        let b = enc(
            "aes-cbc-essiv:sha256",
            &key_b,
            512,
            3,
            false,
            &model[112 << 10..],
        );
        assert!(disk[48 << 10..96 << 10] == b[..], "crypt segment B");
        assert!(disk[..8 << 10].iter().all(|&x| x == 0xee), "untouched");
        assert!(
            disk[40 << 10..48 << 10].iter().all(|&x| x == 0xee),
            "untouched"
        );
        assert!(
            disk[96 << 10..160 << 10].iter().all(|&x| x == 0xee),
            "untouched"
        );
        // Encrypting in place and storing gives the same bytes as write_at.
        let mut stored = model.clone();
        dv.encrypt_sectors(&mut stored, 0).unwrap();
        let mut back = vec![0u8; size as usize];
        dv.pread(&mut back, 0).unwrap();
        assert!(back[..96 << 10] == stored[..96 << 10] && back[112 << 10..] == stored[112 << 10..]);
        assert!(back[zero.clone()].iter().all(|&x| x == 0));
        dv.decrypt_sectors(&mut back, 0).unwrap();
        assert!(back == model);
        // Not every request is one run of device bytes.
        assert!(dv.is_contiguous(0, 64 << 10));
        assert!(!dv.is_contiguous(60 << 10, 8 << 10), "crosses crypt/linear");
        assert!(!dv.is_contiguous(96 << 10, 4096), "zero segment");
        assert_eq!(dv.device_offset(64 << 10), Some(8 << 10));
        assert_eq!(dv.device_offset(100 << 10), None);
        // A discard over linear / zero / crypt B: whole B sectors become the decryption of
        // zeros, linear bytes zeros (partial 512-byte sectors of B untouched).
        if dv.discard((80 << 10) + 100, 40 << 10).is_ok() {
            dv.read_at(&mut all, 0).unwrap();
            assert!(all[(80 << 10) + 100..96 << 10].iter().all(|&x| x == 0));
            assert!(all[zero.clone()].iter().all(|&x| x == 0));
            let b_end = (80 << 10) + 100 + (40 << 10);
            let whole = (b_end / 512 * 512) as usize;
            assert!(all[whole..] == model[whole..], "after the discard");
            assert!(all[..(80 << 10) + 100] == model[..(80 << 10) + 100]);
        }
    }

    #[test]
    fn aligned_buf_is_aligned_and_grows() {
        let mut b = AlignedBuf::new(100);
        assert_eq!(b.as_slice().len(), 100);
        assert!((b.as_slice().as_ptr() as usize).is_multiple_of(DIRECT_ALIGN));
        b.ensure(1 << 20);
        assert_eq!(b.as_mut_slice().len(), 1 << 20);
        assert!((b.as_slice().as_ptr() as usize).is_multiple_of(DIRECT_ALIGN));
        assert!(b.as_slice().iter().all(|&x| x == 0));
    }

    #[test]
    fn concurrent_unaligned_writes_to_one_sector() {
        let key = pattern(64, 5);
        let (_d, p) = tmpfile(4096 * 4);
        let dv =
            DataVolume::open(&p, layout("aes-xts-plain64", 4096, 0, 0, false), &key, true).unwrap();
        std::thread::scope(|s| {
            for t in 0..8u8 {
                let dv = &dv;
                s.spawn(move || {
                    for i in 0..50u64 {
                        let off = u64::from(t) * 16 + (i % 4) * 4096;
                        dv.write_at(&[t + 1; 16], off).unwrap();
                    }
                });
            }
        });
        let mut all = vec![0u8; 4096 * 4];
        dv.read_at(&mut all, 0).unwrap();
        for sec in 0..4 {
            for t in 0..8usize {
                let at = sec * 4096 + t * 16;
                assert_eq!(&all[at..at + 16], &[t as u8 + 1; 16]);
            }
        }
    }

    #[test]
    fn bounds_and_alignment_errors() {
        let key = pattern(64, 5);
        let (_d, p) = tmpfile(4096 * 4 + 1024 + 100);
        // 17408 usable bytes after offset 0: not a multiple of 4096.
        assert!(
            DataVolume::open(&p, layout("aes-xts-plain64", 4096, 0, 0, false), &key, true).is_err()
        );
        let mut l = layout("aes-xts-plain64", 4096, 0, 0, false);
        l.size = Some(4096 * 4);
        let dv = DataVolume::open(&p, l.clone(), &key, false).unwrap();
        assert!(dv.write_at(&[1], 0).is_err(), "read-only");
        let mut b = [0u8; 2];
        assert!(dv.read_at(&mut b, 4096 * 4 - 1).is_err());
        assert!(dv.read_at(&mut b, u64::MAX).is_err());
        l.size = Some(4096 * 5);
        assert!(DataVolume::open(&p, l.clone(), &key, false).is_err());
        l.size = Some(1000);
        assert!(DataVolume::open(&p, l, &key, false).is_err());
        assert!(
            DataVolume::open(
                &p,
                layout("aes-xts-plain64", 4096, 0, 1, false),
                &key,
                false
            )
            .is_err(),
            "iv offset must be sector aligned"
        );
        assert!(DataVolume::open(
            &p,
            layout("aes-xts-plain64", 1000, 0, 0, false),
            &key,
            false
        )
        .is_err());
        assert!(
            DataVolume::open(
                &p,
                layout("aes-xts-plain64", 512, 0, 0, false),
                &[0; 16],
                true
            )
            .is_err(),
            "wrong key length"
        );
    }
}
