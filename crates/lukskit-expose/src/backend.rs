//! The block-device view that every exposure (FUSE file, NBD export) serves.
//!
//! [`BlockBackend`] is the whole contract between the exposure layer and the volume layer:
//! byte-addressed reads and writes of the plaintext, flush (durable on the backing store
//! before it returns), discard and write-zeroes. [`VolumeBackend`] implements it for an
//! unlocked volume and adds `luksSuspend`/`luksResume`; [`MemBackend`] is an in-memory disk
//! for tests of the exposures alone.

use lukskit_volume::data::{DataLayout, DataVolume, Threads};
use lukskit_volume::ring::SectorRing;
use lukskit_volume::VolumeError;
use std::io;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock};

/// Completion of an asynchronous read: the bytes read, or the error. Called exactly once,
/// possibly on another thread.
pub type ReadDone = Box<dyn FnOnce(io::Result<&[u8]>) + Send>;
/// Completion of an asynchronous write. Called exactly once, possibly on another thread.
pub type WriteDone = Box<dyn FnOnce(io::Result<()>) + Send>;

/// A block device's contents, shared by all the threads of an exposure.
pub trait BlockBackend: Send + Sync {
    /// Size in bytes.
    fn size(&self) -> u64;
    /// The smallest efficient I/O unit (the encryption sector size).
    fn block_size(&self) -> u32;
    /// Whether writes are refused.
    fn read_only(&self) -> bool;
    /// Read `buf.len()` bytes at `offset` (any alignment; must lie inside the device).
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()>;
    /// Write `buf` at `offset` (any alignment; must lie inside the device).
    fn write_at(&self, buf: &[u8], offset: u64) -> io::Result<()>;
    /// Whether requests can be queued with [`BlockBackend::try_read_async`] and
    /// [`BlockBackend::try_write_async`].
    fn queues_async(&self) -> bool {
        false
    }
    /// Start reading `len` bytes at `offset` without waiting for the backing store; `done`
    /// gets the bytes. Returns `done` back when the request cannot be queued (backends
    /// without asynchronous I/O, requests it does not take): the caller then uses
    /// [`BlockBackend::read_at`].
    fn try_read_async(&self, offset: u64, len: usize, done: ReadDone) -> Result<(), ReadDone> {
        let _ = (offset, len);
        Err(done)
    }
    /// Start writing `data` at `offset`; `done` runs once the write is complete (what a
    /// [`BlockBackend::write_at`] returning means). Returns `done` back when the request
    /// cannot be queued: the caller then uses [`BlockBackend::write_at`].
    fn try_write_async(&self, data: &[u8], offset: u64, done: WriteDone) -> Result<(), WriteDone> {
        let _ = (data, offset);
        Err(done)
    }
    /// The volume behind the backend, for callers that run its transfers on an io_uring of
    /// their own ([`lukskit_volume::ring::Transfer`]); `None`, at once and without waiting,
    /// when it is not available now (suspended, held, no io_uring wanted:
    /// `LUKSKIT_IO_URING=0`) or the backend has none: the caller then uses the synchronous
    /// calls.
    fn volume_now(&self) -> Option<Arc<DataVolume>> {
        None
    }
    /// Make everything written so far durable on the backing store.
    fn flush(&self) -> io::Result<()>;
    /// Discard (TRIM) a range. Backends that do not discard return `Unsupported`.
    fn discard(&self, offset: u64, len: u64) -> io::Result<()>;
    /// Whether [`BlockBackend::discard`] takes discards (so that an exposure advertises
    /// them); true unless the backend says otherwise.
    fn takes_discards(&self) -> bool {
        true
    }
    /// Make a range read back as zeroes.
    fn write_zeroes(&self, offset: u64, len: u64) -> io::Result<()> {
        const CHUNK: u64 = 1024 * 1024;
        let zeroes = vec![0u8; CHUNK.min(len) as usize];
        let mut pos = offset;
        let end = offset
            .checked_add(len)
            .ok_or_else(|| io::Error::from_raw_os_error(libc::EINVAL))?;
        while pos < end {
            let n = CHUNK.min(end - pos) as usize;
            self.write_at(&zeroes[..n], pos)?;
            pos += n as u64;
        }
        Ok(())
    }
}

/// An error of the volume layer as an I/O error (the message is kept; it never holds a
/// secret).
pub fn io_error(e: VolumeError) -> io::Error {
    io::Error::other(e.to_string())
}

fn range_ok(size: u64, offset: u64, len: u64) -> io::Result<()> {
    match offset.checked_add(len) {
        Some(end) if end <= size => Ok(()),
        _ => Err(io::Error::from_raw_os_error(libc::ENOSPC)),
    }
}

/// Whether discards reach the backing store (cryptsetup's `--allow-discards`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Discards {
    /// Discards are refused (`Unsupported`), the default as in dm-crypt.
    #[default]
    Refuse,
    /// Whole encryption sectors inside a discarded range are punched out of the backing
    /// file (they then read back as whatever the zeroed ciphertext decrypts to, as with
    /// dm-crypt on a discarding device).
    Allow,
}

struct State {
    /// The volume requests use; `None` while suspended or held.
    volume: Option<Arc<DataVolume>>,
    /// The volume while I/O is held ([`VolumeBackend::hold`]): keyed, nobody uses it.
    held: Option<DataVolume>,
    /// What `resume` reopens the volume with (`None` for a volume opened from a segment
    /// table of its own: it cannot be resumed with one key).
    layout: Option<DataLayout>,
}

/// An unlocked volume as a [`BlockBackend`], with `luksSuspend`/`luksResume`.
///
/// While suspended the volume key is gone from memory (the sector cipher's key schedules
/// are wiped when the last in-flight request drops its reference) and every request waits
/// until [`VolumeBackend::resume`] supplies the key again.
pub struct VolumeBackend {
    state: Mutex<State>,
    resumed: Condvar,
    path: String,
    /// Plaintext size in bytes (changed by [`VolumeBackend::set_size`]).
    size: AtomicU64,
    /// The volume's sector size (its segment table's block size).
    block_size: u32,
    writable: bool,
    discards: Discards,
    threads: Threads,
    /// Whether the volume was given `O_DIRECT` (kept across suspend/resume).
    direct_io: bool,
    /// The io_uring of asynchronous requests, set up on the first one (`None`: io_uring is
    /// unavailable or turned off with `LUKSKIT_IO_URING=0`).
    ring: OnceLock<Option<SectorRing>>,
    /// The last failed read, write or flush of the backing store (see
    /// [`VolumeBackend::last_error`]).
    last_error: Mutex<Option<String>>,
    /// Told of every failed read, write or flush ([`VolumeBackend::on_error`]).
    error_sink: OnceLock<ErrorSink>,
    /// Told of the backing store's connection events ([`VolumeBackend::on_backing_event`]).
    event_sink: OnceLock<lukskit_nbd::EventSink>,
}

/// What [`VolumeBackend::on_error`] is given.
type ErrorSink = Box<dyn Fn(&str) + Send + Sync>;

impl VolumeBackend {
    /// Serve `volume`.
    pub fn new(volume: DataVolume, writable: bool, discards: Discards) -> Self {
        VolumeBackend {
            path: volume.path().to_string(),
            size: AtomicU64::new(volume.size()),
            block_size: volume.sector_size(),
            writable,
            discards,
            threads: Threads::All,
            direct_io: volume.direct_io(),
            ring: OnceLock::new(),
            last_error: Mutex::new(None),
            error_sink: OnceLock::new(),
            event_sink: OnceLock::new(),
            state: Mutex::new(State {
                layout: volume.layout().cloned(),
                volume: Some(Arc::new(volume)),
                held: None,
            }),
            resumed: Condvar::new(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The last error of a synchronous read, write or flush of the backing store (an NBD
    /// server that stopped answering, a failing disk), with when it happened (seconds
    /// since the epoch); `None` while there was none.
    pub fn last_error(&self) -> Option<String> {
        self.last_error
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Call `sink` with the description of every failed read, write or flush of the backing
    /// store from now on (the serving process logs them). Set once; later calls are ignored.
    pub fn on_error(&self, sink: impl Fn(&str) + Send + Sync + 'static) {
        let _ = self.error_sink.set(Box::new(sink));
    }

    /// Call `sink` with the connection events of the backing store from now on, also after a
    /// resume or a reload opened it anew: an NBD export's lost and restored connections
    /// (`true`: lost). Set once; later calls are ignored.
    pub fn on_backing_event(&self, sink: lukskit_nbd::EventSink) {
        if self.event_sink.set(sink).is_ok() {
            if let Some(v) = &self.lock().volume {
                self.attach_events(v);
            }
        }
    }

    fn attach_events(&self, volume: &DataVolume) {
        if let Some(sink) = self.event_sink.get() {
            volume.on_nbd_event(std::sync::Arc::clone(sink));
        }
    }

    /// Record `e` as [`VolumeBackend::last_error`] and turn it into an I/O error.
    fn failed(&self, what: &str, e: VolumeError) -> io::Error {
        if let Some(sink) = self.error_sink.get() {
            sink(&format!("{what} of the backing store failed: {e}"));
        }
        let when = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        *self.last_error.lock().unwrap_or_else(|e| e.into_inner()) = Some(format!(
            "{what} failed at {when} (seconds since the epoch): {e}"
        ));
        io_error(e)
    }

    /// The volume, waiting while it is suspended.
    fn volume(&self) -> Arc<DataVolume> {
        let mut st = self.lock();
        loop {
            if let Some(v) = &st.volume {
                return Arc::clone(v);
            }
            st = self.resumed.wait(st).unwrap_or_else(|e| e.into_inner());
        }
    }

    /// The ring and the volume for a request of `len` bytes at `offset`, if the ring takes
    /// it (io_uring available, inside the device, whole sectors).
    fn queue_for(&self, offset: u64, len: usize) -> Option<(&SectorRing, Arc<DataVolume>)> {
        let ring = self.ring()?;
        range_ok(self.size(), offset, len as u64).ok()?;
        let vol = self.volume();
        SectorRing::accepts(&vol, offset, len).then_some((ring, vol))
    }

    fn ring(&self) -> Option<&SectorRing> {
        self.ring
            .get_or_init(|| {
                if std::env::var_os("LUKSKIT_IO_URING").is_some_and(|v| v == "0") {
                    return None;
                }
                SectorRing::new().ok()
            })
            .as_ref()
    }

    /// The data device path.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// The layout the volume was opened with (`None` for a segment table of its own).
    pub fn layout(&self) -> Option<DataLayout> {
        self.lock().layout.clone()
    }

    /// Whether the volume is suspended.
    pub fn is_suspended(&self) -> bool {
        let st = self.lock();
        st.volume.is_none() && st.held.is_none()
    }

    /// Whether I/O is held ([`VolumeBackend::hold`]).
    pub fn is_held(&self) -> bool {
        self.lock().held.is_some()
    }

    /// Take the volume out of service: new requests wait; returns it once the requests in
    /// flight (which hold clones) are done. `None` when it is suspended or held already.
    fn take_exclusive(&self) -> Option<DataVolume> {
        let mut arc = self.lock().volume.take()?;
        Some(loop {
            match Arc::try_unwrap(arc) {
                Ok(v) => break v,
                Err(again) => {
                    arc = again;
                    std::thread::sleep(std::time::Duration::from_millis(1));
                }
            }
        })
    }

    /// Put `volume` back in service and wake the waiting requests.
    fn put_back(&self, volume: DataVolume) {
        self.attach_events(&volume);
        self.lock().volume = Some(Arc::new(volume));
        self.resumed.notify_all();
    }

    /// Change the plaintext size to `size` bytes (requests wait meanwhile; the keys stay).
    /// The new end must lie inside the data device and be aligned to the block size.
    pub fn set_size(&self, size: u64) -> io::Result<()> {
        let Some(mut volume) = self.take_exclusive() else {
            return Err(io::Error::other("Volume is suspended."));
        };
        let r = volume.set_size(size).map_err(io_error);
        self.size.store(volume.size(), Ordering::SeqCst);
        self.put_back(volume);
        r
    }

    /// The current size of the data device (it may have grown since the volume was
    /// opened).
    pub fn device_size(&self) -> io::Result<u64> {
        self.volume().device_size().map_err(io_error)
    }

    /// Hold all I/O for an online re-encryption step: new requests wait, the requests in
    /// flight complete, written data is flushed; the volume (with its keys) is kept until
    /// [`VolumeBackend::reload`] replaces it or [`VolumeBackend::release`] puts it back.
    /// Holding a held volume does nothing; a suspended one cannot be held.
    pub fn hold(&self) -> io::Result<()> {
        if self.is_held() {
            return Ok(());
        }
        let Some(volume) = self.take_exclusive() else {
            return Err(io::Error::other("Volume is suspended."));
        };
        let flushed = if self.writable {
            volume.flush().map_err(io_error)
        } else {
            Ok(())
        };
        self.lock().held = Some(volume);
        flushed
    }

    /// Let held I/O proceed with the volume as it was.
    pub fn release(&self) -> io::Result<()> {
        let Some(volume) = self.lock().held.take() else {
            return Err(io::Error::other("I/O is not held."));
        };
        self.put_back(volume);
        Ok(())
    }

    /// Replace the held volume with `volume` (the segment table and keys of the next
    /// stage of an online re-encryption; `layout` when it is one segment that `resume`
    /// can reopen with one key) and let held I/O proceed. Its size must be the size served.
    pub fn reload(&self, mut volume: DataVolume, layout: Option<DataLayout>) -> io::Result<()> {
        if !self.is_held() {
            return Err(io::Error::other("I/O is not held."));
        }
        if volume.size() != self.size() {
            return Err(io::Error::other(format!(
                "the new segments cover {} bytes, the device served has {}",
                volume.size(),
                self.size()
            )));
        }
        volume.set_threads(self.threads);
        if self.direct_io {
            volume.use_direct_io();
        }
        let old = {
            let mut st = self.lock();
            st.layout = layout;
            st.held.take()
        };
        drop(old); // wipes the previous key schedules
        self.put_back(volume);
        Ok(())
    }

    /// `luksSuspend`: stop new I/O, wait for requests in flight, flush, and wipe the key.
    /// Returns once no copy of the key schedule is left in this backend.
    pub fn suspend(&self) -> io::Result<()> {
        if self.is_held() {
            return Err(io::Error::other(
                "Volume I/O is held by an online re-encryption.",
            ));
        }
        let Some(volume) = self.take_exclusive() else {
            return Ok(());
        };
        let flushed = if self.writable {
            volume.flush().map_err(io_error)
        } else {
            Ok(())
        };
        drop(volume); // wipes the key schedules
        flushed
    }

    /// `luksResume`: reopen the data with `key` (already checked against the header by the
    /// caller) and let waiting requests proceed.
    pub fn resume(&self, key: &[u8]) -> io::Result<()> {
        let mut st = self.lock();
        if st.volume.is_some() {
            return Err(io::Error::other("Volume is not suspended."));
        }
        if st.held.is_some() {
            return Err(io::Error::other("Volume is not suspended."));
        }
        let Some(layout) = st.layout.clone() else {
            return Err(io::Error::other(
                "A volume opened from a segment table cannot be resumed with one key.",
            ));
        };
        let mut v = DataVolume::open(&self.path, layout, key, self.writable).map_err(io_error)?;
        v.set_threads(self.threads);
        if self.direct_io {
            v.use_direct_io();
        }
        self.attach_events(&v);
        st.volume = Some(Arc::new(v));
        drop(st);
        self.resumed.notify_all();
        Ok(())
    }
}

impl BlockBackend for VolumeBackend {
    fn size(&self) -> u64 {
        self.size.load(Ordering::SeqCst)
    }

    fn block_size(&self) -> u32 {
        self.block_size
    }

    fn read_only(&self) -> bool {
        !self.writable
    }

    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        range_ok(self.size(), offset, buf.len() as u64)?;
        self.volume()
            .read_at(buf, offset)
            .map_err(|e| self.failed("read", e))
    }

    fn write_at(&self, buf: &[u8], offset: u64) -> io::Result<()> {
        if !self.writable {
            return Err(io::Error::from_raw_os_error(libc::EROFS));
        }
        range_ok(self.size(), offset, buf.len() as u64)?;
        self.volume()
            .write_at(buf, offset)
            .map_err(|e| self.failed("write", e))
    }

    fn queues_async(&self) -> bool {
        self.ring().is_some()
    }

    fn try_read_async(&self, offset: u64, len: usize, done: ReadDone) -> Result<(), ReadDone> {
        let Some((ring, vol)) = self.queue_for(offset, len) else {
            return Err(done);
        };
        ring.read(
            vol,
            offset,
            len,
            Box::new(move |r| done(r.map_err(io_error))),
        );
        Ok(())
    }

    fn try_write_async(&self, data: &[u8], offset: u64, done: WriteDone) -> Result<(), WriteDone> {
        let queued = self.writable.then(|| self.queue_for(offset, data.len()));
        let Some(Some((ring, vol))) = queued else {
            return Err(done);
        };
        ring.write(
            vol,
            data,
            offset,
            Box::new(move |r| done(r.map_err(io_error))),
        );
        Ok(())
    }

    fn volume_now(&self) -> Option<Arc<DataVolume>> {
        if std::env::var_os("LUKSKIT_IO_URING").is_some_and(|v| v == "0") {
            return None;
        }
        self.lock().volume.clone()
    }

    fn flush(&self) -> io::Result<()> {
        if !self.writable {
            return Ok(());
        }
        self.volume().flush().map_err(|e| self.failed("flush", e))
    }

    fn takes_discards(&self) -> bool {
        self.discards == Discards::Allow && self.writable
    }

    fn discard(&self, offset: u64, len: u64) -> io::Result<()> {
        if self.discards == Discards::Refuse {
            return Err(io::Error::from_raw_os_error(libc::EOPNOTSUPP));
        }
        if !self.writable {
            return Err(io::Error::from_raw_os_error(libc::EROFS));
        }
        range_ok(self.size(), offset, len)?;
        self.volume().discard(offset, len).map_err(io_error)
    }
}

/// An in-memory disk (tests of the exposures without any encryption).
pub struct MemBackend {
    data: Mutex<Vec<u8>>,
    block_size: u32,
    read_only: bool,
    flushes: std::sync::atomic::AtomicU64,
}

impl MemBackend {
    /// A zero-filled disk of `size` bytes.
    pub fn new(size: usize, block_size: u32, read_only: bool) -> Self {
        MemBackend {
            data: Mutex::new(vec![0; size]),
            block_size,
            read_only,
            flushes: std::sync::atomic::AtomicU64::new(0),
        }
    }

    /// A copy of the whole contents.
    pub fn contents(&self) -> Vec<u8> {
        self.data.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// How many times [`BlockBackend::flush`] was called.
    pub fn flushes(&self) -> u64 {
        self.flushes.load(std::sync::atomic::Ordering::SeqCst)
    }
}

impl BlockBackend for MemBackend {
    fn size(&self) -> u64 {
        self.data.lock().unwrap_or_else(|e| e.into_inner()).len() as u64
    }

    fn block_size(&self) -> u32 {
        self.block_size
    }

    fn read_only(&self) -> bool {
        self.read_only
    }

    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        let data = self.data.lock().unwrap_or_else(|e| e.into_inner());
        range_ok(data.len() as u64, offset, buf.len() as u64)?;
        let at = offset as usize;
        buf.copy_from_slice(&data[at..at + buf.len()]);
        Ok(())
    }

    fn write_at(&self, buf: &[u8], offset: u64) -> io::Result<()> {
        if self.read_only {
            return Err(io::Error::from_raw_os_error(libc::EROFS));
        }
        let mut data = self.data.lock().unwrap_or_else(|e| e.into_inner());
        range_ok(data.len() as u64, offset, buf.len() as u64)?;
        let at = offset as usize;
        data[at..at + buf.len()].copy_from_slice(buf);
        Ok(())
    }

    fn flush(&self) -> io::Result<()> {
        self.flushes
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        Ok(())
    }

    fn discard(&self, offset: u64, len: u64) -> io::Result<()> {
        self.write_zeroes(offset, len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mem_backend_reads_back_and_checks_ranges() {
        let m = MemBackend::new(8192, 512, false);
        m.write_at(b"hello", 4090).unwrap();
        let mut b = [0u8; 7];
        m.read_at(&mut b, 4089).unwrap();
        assert_eq!(&b, b"\0hello\0");
        assert!(m.read_at(&mut b, 8190).is_err());
        m.write_zeroes(4090, 5).unwrap();
        m.read_at(&mut b, 4089).unwrap();
        assert_eq!(b, [0u8; 7]);
        let ro = MemBackend::new(512, 512, true);
        assert!(ro.write_at(b"x", 0).is_err());
    }
}
