//! Opening devices and image files for header I/O: locking, durability, fault injection.
//!
//! Every metadata write of lukskit goes through [`Device`]. It
//! * takes `flock` locks like cryptsetup (shared for reading, exclusive for updates) on the
//!   file itself, or for block devices on `/run/cryptsetup/L_<major>:<minor>`, so lukskit and
//!   cryptsetup exclude each other (NBD exports, see [`remote`], are not locked: the
//!   server is the only place that could exclude other clients);
//! * counts writes and syncs so tests can stop the process at the Nth one (crash injection,
//!   enabled only when the environment variable [`CRASH_ENV`] is set).

use crate::error::{IoOp, Result, VolumeError};
use crate::lock_file::{LockError, LockFile};
use lukskit_format::io::Storage;
use lukskit_nbd::NbdClient;
use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt};
use std::os::unix::io::AsRawFd;
#[cfg(feature = "crash-injection")]
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Environment variable for crash injection, `write:N` or `sync:N`: the process exits
/// abruptly (status 86, no cleanup) just before its Nth metadata write or Nth sync. Only
/// builds with the `crash-injection` feature (the test suite's) look at it.
pub const CRASH_ENV: &str = "LUKSKIT_CRASH_AT";

/// Exit status used by an injected crash.
pub const CRASH_EXIT_STATUS: i32 = 86;

/// Environment variable for signal injection, `write:N` or `sync:N`: SIGINT is raised (to this
/// process) just before its Nth metadata write or Nth sync, as a Ctrl-C typed at that moment,
/// and the process goes on as it would after one. Crash-injection builds only, as
/// [`CRASH_ENV`].
pub const SIGNAL_ENV: &str = "LUKSKIT_SIGINT_AT";

#[cfg(feature = "crash-injection")]
static WRITES: AtomicU64 = AtomicU64::new(0);
#[cfg(feature = "crash-injection")]
static SYNCS: AtomicU64 = AtomicU64::new(0);

#[cfg(feature = "crash-injection")]
fn crash_point(kind: &str, counter: &AtomicU64) {
    let n = counter.fetch_add(1, Ordering::SeqCst) + 1;
    let at = |var: &str| {
        std::env::var(var).ok().is_some_and(|spec| {
            spec.split_once(':')
                .is_some_and(|(k, v)| k == kind && v.parse::<u64>().ok() == Some(n))
        })
    };
    if at(CRASH_ENV) {
        // SAFETY: _exit ends the process immediately without running destructors or
        // flushing buffers, which is exactly the crash being simulated.
        unsafe { libc::_exit(CRASH_EXIT_STATUS) };
    }
    if at(SIGNAL_ENV) {
        // SAFETY: raise(3) only sends a signal to this process; whatever the process does
        // with SIGINT (its handler, or the default action) is what is being tested.
        unsafe { libc::raise(libc::SIGINT) };
    }
}

/// Without the `crash-injection` feature (every build but the test suite's) there is no
/// crash point: the environment is never read.
#[cfg(not(feature = "crash-injection"))]
fn crash_point(_kind: &str, _counter: &()) {}
#[cfg(not(feature = "crash-injection"))]
static WRITES: () = ();
#[cfg(not(feature = "crash-injection"))]
static SYNCS: () = ();

/// A crash point before a write that is not a metadata write of [`Device`] (the data and
/// files of a LUKS1 re-encryption), counted with them.
pub(crate) fn crash_before_write() {
    crash_point("write", &WRITES);
}

/// A crash point before a sync that is not a [`Device`] sync (see [`crash_before_write`]).
pub(crate) fn crash_before_sync() {
    crash_point("sync", &SYNCS);
}

/// How a device is opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Read only, shared lock.
    Read,
    /// Read-write, exclusive lock (header updates).
    Write,
}

/// An open device or image file with its lock held (see [`Device::release_lock`] for a
/// long update that takes it only while it writes metadata).
#[derive(Debug)]
pub struct Device {
    backing: Backing,
    path: String,
    /// The lock file held (block devices), until [`Device::release_lock`].
    lock: std::sync::Mutex<Option<LockFile>>,
    /// How the lock is taken again for an update after [`Device::release_lock`].
    relock: Relock,
    /// Whether [`Device::release_lock`] released it.
    released: std::sync::atomic::AtomicBool,
}

/// Where a [`Device`]'s lock lives.
#[derive(Debug, Clone)]
enum Relock {
    /// Not locked (NBD exports).
    Nothing,
    /// `/run/cryptsetup/L_<major>:<minor>` (block devices).
    File(String),
    /// `flock` on the device or image file itself.
    Own,
}

/// The exclusive lock of a [`Device`] taken again for one update (see
/// [`Device::update_lock`]); released when dropped.
#[derive(Debug)]
pub struct UpdateLock<'a> {
    kind: UpdateKind<'a>,
}

#[derive(Debug)]
enum UpdateKind<'a> {
    /// The device's own lock was never released: nothing to do.
    Held,
    File {
        _lock: LockFile,
    },
    Own(&'a File),
}

impl Drop for UpdateLock<'_> {
    fn drop(&mut self) {
        if let UpdateKind::Own(f) = self.kind {
            let _ = flock(f, libc::LOCK_UN, "");
        }
    }
}

/// What a [`Device`] reads and writes.
#[derive(Debug)]
enum Backing {
    /// A local image file or block device.
    File(File),
    /// An NBD export (see [`remote`]).
    Nbd(Arc<NbdClient>),
}

/// Devices named by NBD URIs (`nbd://host[:port]/export`, `nbd+unix:///export?socket=PATH`,
/// `nbds://…` with TLS): the ciphertext lives on an NBD server and lukskit is its client
/// (crate `lukskit-nbd`). Anything that accepts a device path accepts such a URI.
pub mod remote {
    use crate::error::{IoOp, Result, VolumeError};
    use lukskit_nbd::{ClientOptions, NbdClient, NbdUri};
    use std::sync::Arc;

    /// Whether `path` is an NBD URI rather than a file name.
    pub fn is_remote(path: &str) -> bool {
        lukskit_nbd::uri::is_nbd_uri(path)
    }

    /// Connect to the NBD export `uri`; with `writable`, a read-only export is refused.
    pub fn connect(uri: &str, writable: bool) -> Result<Arc<NbdClient>> {
        let parsed: NbdUri = uri
            .parse()
            .map_err(|e: lukskit_nbd::NbdError| VolumeError::io(IoOp::Open, uri, e.into()))?;
        let client = NbdClient::connect(&parsed, ClientOptions::default().with_uri(&parsed))
            .map_err(|e| VolumeError::io(IoOp::Open, uri, e.into()))?;
        if writable && client.read_only() {
            return Err(VolumeError::io(
                IoOp::Open,
                uri,
                lukskit_nbd::NbdError::ReadOnly.into(),
            ));
        }
        Ok(Arc::new(client))
    }
}

impl Device {
    /// Open an existing device or file: [`VolumeError::NotFound`] when it is missing or not
    /// accessible, [`VolumeError::Io`] for any other OS error.
    pub fn open(path: &str, access: Access) -> Result<Self> {
        if remote::is_remote(path) {
            return Ok(Device {
                backing: Backing::Nbd(remote::connect(path, access == Access::Write)?),
                path: path.to_string(),
                lock: std::sync::Mutex::new(None),
                relock: Relock::Nothing,
                released: std::sync::atomic::AtomicBool::new(false),
            });
        }
        let file = OpenOptions::new()
            .read(true)
            .write(access == Access::Write)
            .custom_flags(libc::O_CLOEXEC)
            .open(path)
            .map_err(|e| match e.kind() {
                io::ErrorKind::NotFound | io::ErrorKind::PermissionDenied => {
                    VolumeError::not_found(path)
                }
                _ => VolumeError::io(IoOp::Open, path, e),
            })?;
        Self::locked(file, path, access)
    }

    /// Open `path` for writing, creating it (mode 0600) when missing — for detached headers,
    /// which luksFormat creates as cryptsetup does.
    pub fn open_or_create(path: &str) -> Result<Self> {
        if remote::is_remote(path) {
            return Self::open(path, Access::Write);
        }
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o600)
            .custom_flags(libc::O_CLOEXEC)
            .open(path)
            .map_err(|e| VolumeError::io(IoOp::Create, path, e))?;
        Self::locked(file, path, Access::Write)
    }

    fn locked(file: File, path: &str, access: Access) -> Result<Self> {
        let md = file
            .metadata()
            .map_err(|e| VolumeError::io(IoOp::Read, path, e))?;
        if !md.file_type().is_block_device() && !md.file_type().is_file() {
            return Err(VolumeError::NotCompatible {
                path: path.to_string(),
            });
        }
        let op = match access {
            Access::Read => libc::LOCK_SH,
            Access::Write => libc::LOCK_EX,
        };
        let (lock, relock) = if md.file_type().is_block_device() {
            let rdev = md.rdev();
            let (maj, min) = (libc::major(rdev), libc::minor(rdev));
            let _ = std::fs::create_dir_all("/run/cryptsetup");
            let lock_path = format!("/run/cryptsetup/L_{maj}:{min}");
            match LockFile::acquire(&lock_path, op) {
                Ok(lf) => (Some(lf), Relock::File(lock_path)),
                Err(LockError::Lock(e)) => return Err(VolumeError::io(IoOp::Lock, path, e)),
                // Without /run (unprivileged, read-only root) fall back to the device node.
                Err(LockError::Open(_)) => {
                    flock(&file, op, path)?;
                    (None, Relock::Own)
                }
            }
        } else {
            flock(&file, op, path)?;
            (None, Relock::Own)
        };
        Ok(Device {
            backing: Backing::File(file),
            path: path.to_string(),
            lock: std::sync::Mutex::new(lock),
            relock,
            released: std::sync::atomic::AtomicBool::new(false),
        })
    }

    /// Release the lock this device was opened with, for an update that lasts long (a
    /// re-encryption) and must not keep other readers of the metadata (`status`,
    /// `luksDump`, of lukskit or cryptsetup) waiting: cryptsetup's re-encryption holds the
    /// metadata lock only while it writes metadata. From then on every metadata write must
    /// hold [`Device::update_lock`] (see [`LockedUpdates`]).
    pub fn release_lock(&self) {
        use std::sync::atomic::Ordering;
        if self.released.swap(true, Ordering::SeqCst) {
            return;
        }
        match (&self.relock, &self.backing) {
            (Relock::File(_), _) => {
                let held = self.lock.lock().map(|mut l| l.take());
                drop(held);
            }
            (Relock::Own, Backing::File(f)) => {
                let _ = flock(f, libc::LOCK_UN, &self.path);
            }
            _ => {}
        }
    }

    /// The exclusive lock for one metadata update: taken again (waiting for readers and
    /// writers) after [`Device::release_lock`]; otherwise the lock held since the device was
    /// opened serves.
    pub fn update_lock(&self) -> Result<UpdateLock<'_>> {
        use std::sync::atomic::Ordering;
        if !self.released.load(Ordering::SeqCst) {
            return Ok(UpdateLock {
                kind: UpdateKind::Held,
            });
        }
        let kind = match (&self.relock, &self.backing) {
            (Relock::File(p), _) => match LockFile::acquire(p, libc::LOCK_EX) {
                Ok(lf) => UpdateKind::File { _lock: lf },
                Err(LockError::Lock(e) | LockError::Open(e)) => {
                    return Err(VolumeError::io(IoOp::Lock, &self.path, e))
                }
            },
            (Relock::Own, Backing::File(f)) => {
                flock(f, libc::LOCK_EX, &self.path)?;
                UpdateKind::Own(f)
            }
            _ => UpdateKind::Held,
        };
        Ok(UpdateLock { kind })
    }

    /// The path this device was opened with.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// The underlying file (for data I/O by upper layers); `None` for an NBD export.
    pub fn file(&self) -> Option<&File> {
        match &self.backing {
            Backing::File(f) => Some(f),
            Backing::Nbd(_) => None,
        }
    }

    /// The NBD client when this device is an NBD export.
    pub fn nbd(&self) -> Option<&Arc<NbdClient>> {
        match &self.backing {
            Backing::Nbd(c) => Some(c),
            Backing::File(_) => None,
        }
    }

    /// Whether this is a block device (as opposed to a regular image file or an NBD
    /// export).
    pub fn is_block_device(&self) -> bool {
        self.file()
            .and_then(|f| f.metadata().ok())
            .is_some_and(|m| m.file_type().is_block_device())
    }

    /// Grow a regular file to at least `len` bytes (detached header files).
    pub fn ensure_len(&self, len: u64) -> Result<()> {
        let cur = self
            .size()
            .map_err(|e| VolumeError::io(IoOp::Read, &self.path, e))?;
        let Backing::File(file) = &self.backing else {
            return Ok(());
        };
        if cur < len && !self.is_block_device() {
            file.set_len(len)
                .map_err(|e| VolumeError::io(IoOp::Resize, &self.path, e))?;
        }
        Ok(())
    }
}

fn flock(f: &File, op: libc::c_int, path: &str) -> Result<()> {
    loop {
        // SAFETY: flock on a valid, owned file descriptor; no memory is passed.
        let rc = unsafe { libc::flock(f.as_raw_fd(), op) };
        if rc == 0 {
            return Ok(());
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(VolumeError::io(IoOp::Lock, path, e));
        }
    }
}

impl Storage for Device {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        match &self.backing {
            Backing::File(f) => f.read_exact_at(buf, offset),
            Backing::Nbd(c) => c.read_at(buf, offset),
        }
    }
    fn write_all_at(&self, buf: &[u8], offset: u64) -> io::Result<()> {
        crash_point("write", &WRITES);
        match &self.backing {
            Backing::File(f) => f.write_all_at(buf, offset),
            Backing::Nbd(c) => c.write_at(buf, offset, false),
        }
    }
    fn sync(&self) -> io::Result<()> {
        crash_point("sync", &SYNCS);
        match &self.backing {
            Backing::File(f) => f.sync_all(),
            Backing::Nbd(c) => c.flush(),
        }
    }
    fn size(&self) -> io::Result<u64> {
        match &self.backing {
            Backing::File(f) => Storage::size(f),
            Backing::Nbd(c) => Ok(c.size()),
        }
    }
}

/// The metadata [`Storage`] of a long update whose [`Device`] released its lock
/// ([`Device::release_lock`]): the exclusive lock is taken at the first write after a sync
/// and released at the next sync (one LUKS2 header copy, one piece of resilience data), as
/// cryptsetup takes its metadata lock around each metadata write. Before it writes again it
/// checks, as cryptsetup's `LUKS2_check_sequence_id`, that the primary LUKS2 header on the
/// device still has the sequence id it had after its own last write: another process that
/// updated the metadata meanwhile (a keyslot added by cryptsetup) makes the write fail
/// instead of being overwritten. Reads and the data itself need no lock.
#[derive(Debug)]
pub struct LockedUpdates<'a> {
    dev: &'a Device,
    state: std::sync::Mutex<Updates<'a>>,
}

/// What [`LockedUpdates`] keeps between calls.
#[derive(Debug)]
struct Updates<'a> {
    /// The exclusive lock, from a write to the next sync.
    held: Option<UpdateLock<'a>>,
    /// The primary header's sequence id after the last sync (`None`: not a LUKS2 header).
    seqid: Option<u64>,
}

impl<'a> LockedUpdates<'a> {
    /// Wrap `dev` (opened for writing, its lock held): record the primary header's sequence
    /// id, then release the lock.
    pub fn new(dev: &'a Device) -> Self {
        let seqid = primary_seqid(dev);
        dev.release_lock();
        LockedUpdates {
            dev,
            state: std::sync::Mutex::new(Updates { held: None, seqid }),
        }
    }

    fn state(&self) -> io::Result<std::sync::MutexGuard<'_, Updates<'a>>> {
        self.state
            .lock()
            .map_err(|_| io::Error::other("lock poisoned"))
    }

    fn hold(&self) -> io::Result<()> {
        let mut st = self.state()?;
        if st.held.is_some() {
            return Ok(());
        }
        let guard = self
            .dev
            .update_lock()
            .map_err(|e| io::Error::other(e.to_string()))?;
        if let (Some(before), Some(now)) = (st.seqid, primary_seqid(self.dev)) {
            if before != now {
                return Err(io::Error::other(
                    "the LUKS2 metadata was changed by another process meanwhile",
                ));
            }
        }
        st.held = Some(guard);
        Ok(())
    }
}

impl Storage for LockedUpdates<'_> {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        self.dev.read_exact_at(buf, offset)
    }
    fn write_all_at(&self, buf: &[u8], offset: u64) -> io::Result<()> {
        self.hold()?;
        self.dev.write_all_at(buf, offset)
    }
    fn sync(&self) -> io::Result<()> {
        let r = self.dev.sync();
        let mut st = self.state()?;
        if st.held.is_some() {
            if r.is_ok() {
                st.seqid = primary_seqid(self.dev);
            }
            st.held = None;
        }
        r
    }
    fn size(&self) -> io::Result<u64> {
        self.dev.size()
    }
}

/// The sequence id of the primary LUKS2 header on `dev`, if it holds one.
fn primary_seqid(dev: &Device) -> Option<u64> {
    let mut b = [0u8; 24];
    dev.read_exact_at(&mut b, 0).ok()?;
    if b[..6] != lukskit_format::luks2::MAGIC_PRIMARY || b[6..8] != [0, 2] {
        return None;
    }
    Some(u64::from_be_bytes(b[16..24].try_into().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A file that starts like a LUKS2 primary header with sequence id `seqid`.
    fn luks2_like(dir: &std::path::Path, seqid: u64) -> String {
        let path = dir.join("hdr").to_str().unwrap().to_string();
        let mut b = vec![0u8; 8192];
        b[..6].copy_from_slice(&lukskit_format::luks2::MAGIC_PRIMARY);
        b[6..8].copy_from_slice(&2u16.to_be_bytes());
        b[16..24].copy_from_slice(&seqid.to_be_bytes());
        std::fs::write(&path, b).unwrap();
        path
    }

    /// Whether another open file description can take the exclusive lock now.
    fn free(path: &str) -> bool {
        let f = File::open(path).unwrap();
        flock(&f, libc::LOCK_EX | libc::LOCK_NB, path).is_ok()
    }

    #[test]
    fn locked_updates_hold_the_lock_from_a_write_to_the_next_sync_only() {
        let dir = tempfile::tempdir().unwrap();
        let path = luks2_like(dir.path(), 5);
        let dev = Device::open(&path, Access::Write).unwrap();
        assert!(!free(&path), "held while opened for writing");
        let meta = LockedUpdates::new(&dev);
        assert!(free(&path), "released for the long update");
        meta.write_all_at(b"x", 4096).unwrap();
        assert!(!free(&path), "held from the write");
        meta.sync().unwrap();
        assert!(free(&path), "released at the sync");
        let mut b = [0u8; 1];
        meta.read_exact_at(&mut b, 4096).unwrap();
        assert_eq!(&b, b"x");
    }

    #[test]
    fn locked_updates_refuse_to_write_over_another_process_update() {
        let dir = tempfile::tempdir().unwrap();
        let path = luks2_like(dir.path(), 5);
        let dev = Device::open(&path, Access::Write).unwrap();
        let meta = LockedUpdates::new(&dev);
        meta.write_all_at(b"a", 4096).unwrap();
        meta.sync().unwrap();
        // Another writer (it could take the lock) updates the header: seqid 6.
        {
            let other = Device::open(&path, Access::Write).unwrap();
            other.write_all_at(&6u64.to_be_bytes(), 16).unwrap();
            other.sync().unwrap();
        }
        let e = meta.write_all_at(b"b", 4096).unwrap_err();
        assert!(e.to_string().contains("changed by another process"), "{e}");
        let mut b = [0u8; 1];
        meta.read_exact_at(&mut b, 4096).unwrap();
        assert_eq!(&b, b"a", "nothing written over the other update");
        assert!(free(&path), "the lock is not kept after the refusal");
    }
}
