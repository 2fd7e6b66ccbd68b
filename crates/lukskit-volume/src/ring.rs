//! Asynchronous sector I/O on io_uring, for exposures that may answer requests out of order
//! (the FUSE file).
//!
//! With synchronous I/O, every small request costs a thread that sleeps in `pread`/`pwrite`
//! until the backing store answers, and a wakeup when it does: at 4 KiB that sleep and
//! wakeup cost far more CPU than the cipher (~0.5 µs). A [`SectorRing`] instead lets the
//! thread that received a request only *queue* its transfer (encrypting first, for writes)
//! and go back for the next request. One ring thread owns the io_uring: it submits queued
//! transfers and collects finished ones in batches, decrypts reads and calls each
//! request's completion. Being the ring's only user, it runs the kernel's completion work
//! itself when it asks for completions (`IORING_SETUP_SINGLE_ISSUER | DEFER_TASKRUN`,
//! where the kernel has them), so no other thread is interrupted or woken for it; request
//! threads wake it through an eventfd only when its queue was empty.
//!
//! The same rules as [`DataVolume::read_at`] / [`DataVolume::write_at`] hold: writes hold
//! the range lock of their sectors from before they are encrypted until the transfer is
//! complete; direct I/O is used where the volume uses it; a transfer that comes back short
//! or interrupted is finished synchronously. Whole-sector requests of up to [`MAX_ASYNC`]
//! bytes take this path ([`SectorRing::accepts`]); large ones are encrypted or decrypted on
//! all cores (as in the synchronous path), only their transfer is queued.
//!
//! Each request keeps its [`DataVolume`] alive (an `Arc`) until its completion has run, so
//! a volume is never dropped (its key wiped) under a transfer in flight.

use crate::data::{AlignedBuf, DataVolume};
use crate::error::{DataError, IoOp, Result, VolumeError};
use io_uring::{opcode, squeue, types, IoUring};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::thread::JoinHandle;

/// Largest request that goes through the ring (bytes): a FUSE request's largest.
pub const MAX_ASYNC: usize = 1024 * 1024;

/// Size of the buffers kept for reuse; larger requests get a buffer of their own.
const POOL_BUF: usize = 128 * 1024;

/// Completion of a read: the plaintext, or the error.
pub type ReadDone = Box<dyn FnOnce(Result<&[u8]>) + Send>;
/// Completion of a write.
pub type WriteDone = Box<dyn FnOnce(Result<()>) + Send>;

/// Submission queue entries (requests in flight are bounded by the exposure: a FUSE
/// connection's `max_background`).
const ENTRIES: u32 = 256;
/// Buffers kept for reuse.
const POOL: usize = 128;
/// `user_data` of the read of the wakeup eventfd.
const WAKE: u64 = 0;

enum Kind {
    Read(ReadDone),
    Write(WriteDone, (u64, u64)),
}

/// One transfer. Owned by the kernel (its address is the entry's `user_data`) from
/// submission until its completion is reaped.
struct Pending {
    vol: Arc<DataVolume>,
    buf: AlignedBuf,
    len: usize,
    offset: u64,
    kind: Kind,
}

struct Shared {
    /// Transfers queued for the ring thread.
    queue: Mutex<Vec<Pending>>,
    /// Written to wake the ring thread.
    wake: OwnedFd,
    /// Transfers queued or in flight.
    in_flight: AtomicUsize,
    stop: AtomicBool,
    pool: Mutex<Vec<AlignedBuf>>,
}

/// An io_uring and the thread that owns it, shared by all the request threads of an
/// exposure.
pub struct SectorRing {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for SectorRing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SectorRing")
            .field("in_flight", &self.shared.in_flight.load(Ordering::Relaxed))
            .finish()
    }
}

fn io_err(op: IoOp, vol: &DataVolume, errno: i32) -> VolumeError {
    VolumeError::io(op, vol.path(), std::io::Error::from_raw_os_error(errno))
}

/// A ring for one thread: single issuer with deferred completion work where the kernel
/// has it (6.1), a plain ring otherwise. A no-op round trip proves it works: setup can
/// succeed where submission is forbidden.
fn new_ring() -> std::io::Result<IoUring> {
    let mut ring = IoUring::builder()
        .setup_single_issuer()
        .setup_defer_taskrun()
        .build(ENTRIES)
        .or_else(|_| IoUring::new(ENTRIES))?;
    let nop = opcode::Nop::new().build().user_data(WAKE);
    // SAFETY: a no-op references no memory.
    unsafe { ring.submission().push(&nop) }
        .map_err(|_| std::io::Error::other("io_uring submission queue is full"))?;
    ring.submit_and_wait(1)?;
    if ring.completion().count() != 1 {
        return Err(std::io::Error::other("io_uring no-op did not complete"));
    }
    Ok(ring)
}

impl SectorRing {
    /// Set up a ring and its thread. Fails where io_uring is unavailable (kernels before
    /// 5.6, `kernel.io_uring_disabled`, seccomp filters); callers then keep to synchronous
    /// I/O.
    pub fn new() -> std::io::Result<Self> {
        let shared = Arc::new(Shared::new()?);
        let worker = Arc::clone(&shared);
        let (tx, rx) = mpsc::channel();
        let thread = std::thread::Builder::new()
            .name("lukskit-ring".into())
            .spawn(move || match new_ring() {
                Ok(ring) => {
                    let _ = tx.send(Ok(()));
                    ring_loop(ring, &worker);
                }
                Err(e) => {
                    let _ = tx.send(Err(e));
                }
            })?;
        match rx.recv() {
            Ok(Ok(())) => Ok(SectorRing {
                shared,
                thread: Some(thread),
            }),
            Ok(Err(e)) => {
                let _ = thread.join();
                Err(e)
            }
            Err(_) => {
                let _ = thread.join();
                Err(std::io::Error::other("io_uring thread failed"))
            }
        }
    }

    /// Whether a request of `len` bytes at plaintext `offset` may go through the ring
    /// (whole sectors, at most [`MAX_ASYNC`] bytes, inside one crypt or linear segment: one
    /// transfer of device bytes). Other requests take the synchronous path.
    pub fn accepts(vol: &DataVolume, offset: u64, len: usize) -> bool {
        let ss = vol.sector_size() as usize;
        !vol.is_remote()
            && len > 0
            && len <= MAX_ASYNC
            && len.is_multiple_of(ss)
            && offset.is_multiple_of(ss as u64)
            && vol.is_contiguous(offset, len)
    }

    /// Start reading `len` plaintext bytes at `offset` (see [`SectorRing::accepts`]);
    /// `done` gets the plaintext, on the ring thread (or at once on an error found before
    /// the transfer starts).
    pub fn read(&self, vol: Arc<DataVolume>, offset: u64, len: usize, done: ReadDone) {
        if let Err(e) = check(&vol, offset, len) {
            return done(Err(e));
        }
        let buf = self.shared.take_buf(len);
        self.queue(Pending {
            vol,
            buf,
            len,
            offset,
            kind: Kind::Read(done),
        });
    }

    /// Start writing `data` at plaintext `offset` (see [`SectorRing::accepts`]): it is
    /// encrypted into a buffer of the ring before this returns; `done` runs on the ring
    /// thread once the ciphertext is written (as far as a `pwrite` puts it: a flush still
    /// needs [`DataVolume::flush`]).
    pub fn write(&self, vol: Arc<DataVolume>, data: &[u8], offset: u64, done: WriteDone) {
        let len = data.len();
        if let Err(e) = vol.check_writable().and(check(&vol, offset, len)) {
            return done(Err(e));
        }
        let mut buf = self.shared.take_buf(len);
        let plain = &mut buf.as_mut_slice()[..len];
        plain.copy_from_slice(data);
        let range = vol.sector_range(offset, len);
        vol.lock_range(range);
        if let Err(e) = vol.encrypt_sectors(plain, offset) {
            vol.unlock_range(range);
            self.shared.put_buf(buf);
            return done(Err(e));
        }
        self.queue(Pending {
            vol,
            buf,
            len,
            offset,
            kind: Kind::Write(done, range),
        });
    }

    fn queue(&self, p: Pending) {
        self.shared.in_flight.fetch_add(1, Ordering::SeqCst);
        let mut q = self.shared.queue.lock().unwrap_or_else(|e| e.into_inner());
        let was_empty = q.is_empty();
        q.push(p);
        drop(q);
        // The ring thread empties the queue after every wakeup: it needs a new one only
        // when this is the first entry since.
        if was_empty {
            self.shared.wake();
        }
    }
}

fn check(vol: &DataVolume, offset: u64, len: usize) -> Result<()> {
    if !SectorRing::accepts(vol, offset, len) {
        return Err(DataError::NotQueued { offset, len }.into());
    }
    vol.check_range(offset, len)
}

impl Shared {
    /// Empty queue and pool, and the wakeup eventfd.
    fn new() -> std::io::Result<Self> {
        // SAFETY: eventfd takes no pointers; a non-negative result is a new descriptor
        // that nothing else owns.
        let fd = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC) };
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: `fd` was just created and is owned by nothing else.
        let wake = unsafe { OwnedFd::from_raw_fd(fd) };
        Ok(Shared {
            queue: Mutex::new(Vec::new()),
            wake,
            in_flight: AtomicUsize::new(0),
            stop: AtomicBool::new(false),
            pool: Mutex::new(Vec::new()),
        })
    }

    fn wake(&self) {
        let one = 1u64.to_ne_bytes();
        // SAFETY: writes 8 bytes from a live local buffer to our eventfd. It cannot fail
        // short of the counter overflowing, which a pending wakeup makes harmless.
        let _ = unsafe { libc::write(self.wake.as_raw_fd(), one.as_ptr().cast(), one.len()) };
    }

    fn take_buf(&self, len: usize) -> AlignedBuf {
        if len > POOL_BUF {
            return AlignedBuf::new(len);
        }
        let pooled = self.pool.lock().unwrap_or_else(|e| e.into_inner()).pop();
        pooled.unwrap_or_else(|| AlignedBuf::new(POOL_BUF))
    }

    fn put_buf(&self, buf: AlignedBuf) {
        if buf.as_slice().len() != POOL_BUF {
            return;
        }
        let mut pool = self.pool.lock().unwrap_or_else(|e| e.into_inner());
        if pool.len() < POOL {
            pool.push(buf);
        }
    }
}

/// The transfer of `p`; `None` when it is not one run of device bytes (never for a request
/// [`SectorRing::accepts`]; it is then done synchronously).
fn entry_for(p: &mut Pending) -> Option<squeue::Entry> {
    if !p.vol.is_contiguous(p.offset, p.len) {
        return None;
    }
    let at = p.vol.device_offset(p.offset)?;
    let len = p.len;
    let buf = &mut p.buf.as_mut_slice()[..len];
    let ptr = buf.as_mut_ptr();
    let fd = types::Fd(p.vol.file_for(buf, at)?.as_raw_fd());
    Some(match p.kind {
        Kind::Read(_) => opcode::Read::new(fd, ptr, len as u32).offset(at).build(),
        Kind::Write(..) => opcode::Write::new(fd, ptr, len as u32).offset(at).build(),
    })
}

/// The submission side of a ring as the ring thread uses it (a seam: tests give it a
/// queue that is always full).
trait Submit {
    /// Append `e` to the submission queue; false when the queue is full.
    ///
    /// # Safety
    /// As [`io_uring::squeue::SubmissionQueue::push`]: whatever the entry points to must stay
    /// valid until its completion has been reaped.
    unsafe fn push(&mut self, e: &squeue::Entry) -> bool;
    /// Hand the queued entries to the kernel, freeing their slots.
    fn submit(&mut self) -> std::io::Result<usize>;
}

impl Submit for IoUring {
    unsafe fn push(&mut self, e: &squeue::Entry) -> bool {
        // SAFETY: the caller keeps the entry's memory valid until its completion (this
        // function's own contract).
        unsafe { self.submission().push(e) }.is_ok()
    }
    fn submit(&mut self) -> std::io::Result<usize> {
        IoUring::submit(self)
    }
}

/// Put `p`'s transfer on the submission queue: true when it is there (its completion
/// comes back through the ring), false when it has been finished here instead.
///
/// The room check in [`ring_loop`] keeps the queue from filling, but a request must never
/// be lost if it does fill (it would hang its caller forever): the queue is then submitted
/// to free its slots and the push tried again, and if there is still no room the transfer
/// is done synchronously at once (as one that came back interrupted is) and its
/// completion runs.
fn place(sq: &mut impl Submit, shared: &Shared, p: Pending) -> bool {
    let mut p = Box::new(p);
    let Some(e) = entry_for(&mut p) else {
        finish(shared, *p, -libc::EAGAIN);
        return false;
    };
    let raw = Box::into_raw(p);
    let e = e.user_data(raw as u64);
    for attempt in 0..2 {
        // SAFETY: the entry's buffer and descriptor belong to the leaked `Pending` (and
        // its `Arc<DataVolume>`), reclaimed only when its completion is reaped.
        if unsafe { sq.push(&e) } {
            return true;
        }
        if attempt == 0 {
            // An error leaves the queue as it was; the second push then fails too.
            let _ = sq.submit();
        }
    }
    // SAFETY: `raw` came from `Box::into_raw` above and the entry naming it was never
    // queued, so nothing else holds it.
    let p = unsafe { Box::from_raw(raw) };
    finish(shared, *p, -libc::EAGAIN);
    false
}

/// The ring thread: submit what is queued, wait, finish what completed; until stopped and
/// nothing is left in flight.
fn ring_loop(mut ring: IoUring, shared: &Shared) {
    // The eventfd read's target. Leaked (8 bytes per ring): the read may still be armed
    // when this thread returns, and the kernel finishes tearing the ring down later.
    let counter: &'static mut [u8; 8] = Box::leak(Box::new([0u8; 8]));
    let mut wake_armed = false;
    let mut batch: Vec<Pending> = Vec::with_capacity(ENTRIES as usize);
    let mut submitted = 0usize; // entries the kernel holds (excluding the wakeup read)
    loop {
        if shared.stop.load(Ordering::SeqCst) && shared.in_flight.load(Ordering::SeqCst) == 0 {
            return;
        }
        if !wake_armed {
            let e = opcode::Read::new(
                types::Fd(shared.wake.as_raw_fd()),
                counter.as_mut_ptr(),
                counter.len() as u32,
            )
            .build()
            .user_data(WAKE);
            // SAFETY: `counter` is never freed, and the eventfd is closed only after the
            // thread (and its ring) are gone.
            if unsafe { ring.submission().push(&e) }.is_ok() {
                wake_armed = true;
            }
        }
        {
            let room = (ENTRIES as usize).saturating_sub(submitted + 1);
            let mut q = shared.queue.lock().unwrap_or_else(|e| e.into_inner());
            let take = q.len().min(room);
            batch.extend(q.drain(..take));
        }
        for p in batch.drain(..) {
            if place(&mut ring, shared, p) {
                submitted += 1;
            } else {
                shared.in_flight.fetch_sub(1, Ordering::SeqCst);
            }
        }
        match ring.submit_and_wait(1) {
            Ok(_) => {}
            Err(e) if e.raw_os_error() == Some(libc::EINTR) => {}
            Err(e) if e.raw_os_error() == Some(libc::EBUSY) => {}
            Err(_) => std::thread::sleep(std::time::Duration::from_millis(1)),
        }
        for c in ring.completion() {
            let (user_data, res) = (c.user_data(), c.result());
            if user_data == WAKE {
                wake_armed = false;
                continue;
            }
            // SAFETY: every other entry's user_data is a `Box<Pending>` leaked above, and
            // the kernel completes each entry exactly once.
            let p = unsafe { Box::from_raw(user_data as *mut Pending) };
            submitted -= 1;
            finish(shared, *p, res);
            shared.in_flight.fetch_sub(1, Ordering::SeqCst);
        }
    }
}

fn finish(shared: &Shared, p: Pending, res: i32) {
    let Pending {
        vol,
        mut buf,
        len,
        offset,
        kind,
    } = p;
    let data = &mut buf.as_mut_slice()[..len];
    // A short or interrupted transfer is redone synchronously (that finishes short
    // transfers and retries interrupted ones); a failed one reports its error.
    let complete = usize::try_from(res).is_ok_and(|n| n == len);
    let retry = res >= 0 || res == -libc::EINTR || res == -libc::EAGAIN;
    let outcome = |what: IoOp, redo: &mut dyn FnMut() -> Result<()>| match (complete, retry) {
        (true, _) => Ok(()),
        (false, true) => redo(),
        (false, false) => Err(io_err(what, &vol, -res)),
    };
    match kind {
        Kind::Read(done) => {
            let r = outcome(IoOp::Read, &mut || vol.pread(data, offset));
            match r.and_then(|()| vol.decrypt_sectors(data, offset)) {
                Ok(()) => done(Ok(data)),
                Err(e) => done(Err(e)),
            }
        }
        Kind::Write(done, range) => {
            let r = outcome(IoOp::Write, &mut || vol.pwrite(data, offset));
            vol.unlock_range(range);
            done(r);
        }
    }
    shared.put_buf(buf);
}

/// One whole-sector transfer whose I/O the caller runs on an io_uring of its own (the FUSE
/// over io_uring threads, which fetch requests and answer them on the same ring): this
/// prepares the submission entry (encrypting a write's plaintext in place first) and
/// finishes it once the completion has come (decrypting a read in place).
///
/// The same rules as [`SectorRing`] hold: a write holds the range lock of its sectors from
/// before it is encrypted until [`Transfer::complete`] (or the drop of the transfer); a
/// transfer that comes back short or interrupted is finished synchronously; the volume is
/// kept alive until then. The buffer given to [`Transfer::read`] or [`Transfer::write`]
/// must stay in place, untouched, until [`Transfer::complete`] is called with it.
#[derive(Debug)]
pub struct Transfer {
    vol: Arc<DataVolume>,
    offset: u64,
    len: usize,
    /// The sectors a write holds locked.
    lock: Option<(u64, u64)>,
}

impl Transfer {
    /// The read of the ciphertext of `buf.len()` plaintext bytes at `offset` (see
    /// [`SectorRing::accepts`]) into `buf`.
    pub fn read(
        vol: Arc<DataVolume>,
        offset: u64,
        buf: &mut [u8],
    ) -> Result<(Self, squeue::Entry)> {
        let len = buf.len();
        check(&vol, offset, len)?;
        let e = Self::entry(&vol, offset, buf, false)?;
        Ok((
            Transfer {
                vol,
                offset,
                len,
                lock: None,
            },
            e,
        ))
    }

    /// The write of the plaintext in `buf` at `offset` (see [`SectorRing::accepts`]): the
    /// sectors are locked and `buf` is encrypted in place. `Ok(None)`, with `buf` untouched,
    /// when another write holds some of the sectors (try again once it is done).
    pub fn write(
        vol: Arc<DataVolume>,
        offset: u64,
        buf: &mut [u8],
    ) -> Result<Option<(Self, squeue::Entry)>> {
        let len = buf.len();
        vol.check_writable().and(check(&vol, offset, len))?;
        let range = vol.sector_range(offset, len);
        if !vol.try_lock_range(range) {
            return Ok(None);
        }
        let t = Transfer {
            vol,
            offset,
            len,
            lock: Some(range),
        };
        t.vol.encrypt_sectors(buf, offset)?;
        let e = Self::entry(&t.vol, offset, buf, true)?;
        Ok(Some((t, e)))
    }

    fn entry(vol: &DataVolume, offset: u64, buf: &mut [u8], write: bool) -> Result<squeue::Entry> {
        let len = buf.len();
        let gone = || DataError::NotQueued { offset, len };
        let at = vol.device_offset(offset).ok_or_else(gone)?;
        let fd = types::Fd(vol.file_for(buf, at).ok_or_else(gone)?.as_raw_fd());
        let ptr = buf.as_mut_ptr();
        Ok(if write {
            opcode::Write::new(fd, ptr, len as u32).offset(at).build()
        } else {
            opcode::Read::new(fd, ptr, len as u32).offset(at).build()
        })
    }

    /// Finish the transfer whose completion gave `res`; `buf` is the buffer it was
    /// prepared with (a read's plaintext on success).
    pub fn complete(mut self, buf: &mut [u8], res: i32) -> Result<()> {
        let buf = &mut buf[..self.len];
        let complete = usize::try_from(res).is_ok_and(|n| n == self.len);
        let retry = res >= 0 || res == -libc::EINTR || res == -libc::EAGAIN;
        let (op, write) = match self.lock {
            Some(_) => (IoOp::Write, true),
            None => (IoOp::Read, false),
        };
        let r = match (complete, retry) {
            (true, _) => Ok(()),
            (false, true) if write => self.vol.pwrite(buf, self.offset),
            (false, true) => self.vol.pread(buf, self.offset),
            (false, false) => Err(io_err(op, &self.vol, -res)),
        };
        if let Some(range) = self.lock.take() {
            self.vol.unlock_range(range);
            return r;
        }
        r.and_then(|()| self.vol.decrypt_sectors(buf, self.offset))
    }

    /// `fdatasync` of the volume's data device as a submission entry (what
    /// [`DataVolume::flush`] does); `None` for a remote volume.
    pub fn sync_entry(vol: &DataVolume) -> Option<squeue::Entry> {
        let fd = types::Fd(vol.file()?.as_raw_fd());
        Some(
            opcode::Fsync::new(fd)
                .flags(types::FsyncFlags::DATASYNC)
                .build(),
        )
    }

    /// The outcome of a [`Transfer::sync_entry`] that completed with `res`.
    pub fn sync_result(vol: &DataVolume, res: i32) -> Result<()> {
        if res < 0 {
            return Err(io_err(IoOp::Sync, vol, -res));
        }
        Ok(())
    }
}

impl Drop for Transfer {
    fn drop(&mut self) {
        if let Some(range) = self.lock.take() {
            self.vol.unlock_range(range);
        }
    }
}

impl Drop for SectorRing {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        self.shared.wake();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::DataLayout;

    /// A submission queue that never has room; counts the attempts.
    #[derive(Default)]
    struct Full {
        pushes: usize,
        submits: usize,
    }

    impl Submit for Full {
        unsafe fn push(&mut self, _: &squeue::Entry) -> bool {
            self.pushes += 1;
            false
        }
        fn submit(&mut self) -> std::io::Result<usize> {
            self.submits += 1;
            Ok(0)
        }
    }

    /// A volume over a fresh temporary file; removed on drop.
    struct TempVolume(Arc<DataVolume>, std::path::PathBuf);

    impl TempVolume {
        fn new() -> Self {
            let mut b = [0u8; 8];
            lukskit_crypto::random::fill(&mut b).unwrap();
            let p = std::env::temp_dir().join(format!("lukskit-ringq-{}", hex::encode(b)));
            std::fs::File::create(&p)
                .unwrap()
                .set_len(4096 + 64 * 1024)
                .unwrap();
            let layout = DataLayout {
                cipher: "aes-xts-plain64".into(),
                offset: 4096,
                size: None,
                sector_size: 512,
                iv_offset: 0,
                iv_large_sectors: false,
            };
            let key: Vec<u8> = (0..64u8).collect();
            let vol = DataVolume::open(p.to_str().unwrap(), layout, &key, true).unwrap();
            TempVolume(Arc::new(vol), p)
        }
    }

    impl Drop for TempVolume {
        fn drop(&mut self) {
            let _ = std::fs::remove_file(&self.1);
        }
    }

    /// A write as [`SectorRing::write`] prepares it; its completion sends the outcome.
    fn write_pending(
        shared: &Shared,
        vol: &Arc<DataVolume>,
        data: &[u8],
        offset: u64,
    ) -> (Pending, mpsc::Receiver<Result<()>>) {
        let mut buf = shared.take_buf(data.len());
        buf.as_mut_slice()[..data.len()].copy_from_slice(data);
        let range = vol.sector_range(offset, data.len());
        vol.lock_range(range);
        vol.encrypt_sectors(&mut buf.as_mut_slice()[..data.len()], offset)
            .unwrap();
        let (tx, rx) = mpsc::channel();
        let done: WriteDone = Box::new(move |r| tx.send(r).unwrap());
        let p = Pending {
            vol: Arc::clone(vol),
            buf,
            len: data.len(),
            offset,
            kind: Kind::Write(done, range),
        };
        (p, rx)
    }

    fn read_pending(
        shared: &Shared,
        vol: &Arc<DataVolume>,
        offset: u64,
        len: usize,
    ) -> (Pending, mpsc::Receiver<Result<Vec<u8>>>) {
        let (tx, rx) = mpsc::channel();
        let done: ReadDone = Box::new(move |r| tx.send(r.map(<[u8]>::to_vec)).unwrap());
        let p = Pending {
            vol: Arc::clone(vol),
            buf: shared.take_buf(len),
            len,
            offset,
            kind: Kind::Read(done),
        };
        (p, rx)
    }

    /// With no room in the submission queue, a write and a read are not lost: the queue is
    /// submitted once to make room, and when that does not help the transfer is done at
    /// once synchronously and its completion runs with the right outcome.
    #[test]
    fn full_queue_finishes_the_request_synchronously() {
        let tv = TempVolume::new();
        let vol = &tv.0;
        let shared = Shared::new().unwrap();
        let data: Vec<u8> = (0..8192u32).map(|i| (i * 31 % 251) as u8).collect();
        let mut sq = Full::default();
        let (p, wrote) = write_pending(&shared, vol, &data, 4096);
        assert!(!place(&mut sq, &shared, p));
        assert_eq!((sq.pushes, sq.submits), (2, 1));
        wrote.try_recv().expect("write completion ran").unwrap();
        let mut back = vec![0u8; data.len()];
        vol.read_at(&mut back, 4096).unwrap();
        assert_eq!(back, data);
        // The range lock was released: a synchronous write over it does not block.
        vol.write_at(&data[..512], 4096).unwrap();
        let (p, read) = read_pending(&shared, vol, 4096, data.len());
        assert!(!place(&mut sq, &shared, p));
        assert_eq!(read.try_recv().expect("read completion ran").unwrap(), data);
    }

    /// A real ring whose only slot is taken: the push fails, the submit frees the slot, the
    /// second push succeeds and the transfer completes through the ring.
    #[test]
    fn full_ring_is_submitted_to_make_room() {
        let mut ring = match IoUring::new(1) {
            Ok(r) => r,
            Err(e) => {
                lukskit_testkit::skip_or_fail(
                    "full_ring_is_submitted_to_make_room",
                    &format!("io_uring is unavailable here ({e}); a kernel of 5.6 or later without kernel.io_uring_disabled"),
                );
                return;
            }
        };
        let tv = TempVolume::new();
        let vol = &tv.0;
        let data: Vec<u8> = (0..4096u32).map(|i| (i * 7 % 253) as u8).collect();
        vol.write_at(&data, 0).unwrap();
        let shared = Shared::new().unwrap();
        let nop = opcode::Nop::new().build().user_data(WAKE);
        // SAFETY: a no-op references no memory.
        assert!(unsafe { Submit::push(&mut ring, &nop) });
        let (p, read) = read_pending(&shared, vol, 0, data.len());
        assert!(place(&mut ring, &shared, p), "placed after making room");
        ring.submit_and_wait(1).unwrap();
        let mut reaped = 0;
        while reaped < 2 {
            for c in ring.completion() {
                reaped += 1;
                if c.user_data() != WAKE {
                    // SAFETY: the only other entry's user_data is the `Pending` leaked by
                    // `place`, completed exactly once.
                    let p = unsafe { Box::from_raw(c.user_data() as *mut Pending) };
                    finish(&shared, *p, c.result());
                }
            }
            if reaped < 2 {
                ring.submit_and_wait(1).unwrap();
            }
        }
        assert_eq!(read.try_recv().expect("read completion ran").unwrap(), data);
    }
}
