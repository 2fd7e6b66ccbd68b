//! Opening devices and image files for header I/O: locking, durability.
//!
//! Every metadata write of lukskit goes through [`Device`]: a [`Storage`] (a local file or
//! block device, an NBD export, or one of the library user's, see [`crate::storage`]) with
//! its lock. It takes `flock` locks like cryptsetup (shared for reading, exclusive for
//! updates) on the file itself, or for block devices on `/run/cryptsetup/L_<major>:<minor>`,
//! so lukskit and cryptsetup exclude each other (NBD exports, see [`remote`], and storages
//! of the user are not locked: their owner is the only one who could exclude other users).
//!
//! Crash tests wrap the storage in a [`crate::storage::CrashingStorage`]; the test suite's
//! build of the command line (feature `crash-injection`) wraps the devices it opens in the
//! plan its environment names (`LUKSKIT_CRASH_AT`, `LUKSKIT_SIGINT_AT`: `write:N`, `sync:N`).

use crate::error::{IoOp, Result, VolumeError};
use crate::lock_file::{LockError, LockFile};
use crate::storage::SharedStorage;
use lukskit_format::io::Storage;
use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt};
use std::os::unix::io::AsRawFd;

/// Exit status used by an injected crash ([`crate::storage::CrashAction::Exit`]).
pub const CRASH_EXIT_STATUS: i32 = crate::storage::CrashPlan::EXIT_STATUS;

/// A crash point before a write that does not go through a [`Device`] (the data and files
/// of a LUKS1 re-encryption), counted with them; only in `crash-injection` builds.
pub(crate) fn crash_before_write() {
    #[cfg(feature = "crash-injection")]
    crate::storage::env::before_write();
}

/// A crash point before a sync that is not a [`Device`] sync (see [`crash_before_write`]).
pub(crate) fn crash_before_sync() {
    #[cfg(feature = "crash-injection")]
    crate::storage::env::before_sync();
}

/// How a device is opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Read only, shared lock.
    Read,
    /// Read-write, exclusive lock (header updates).
    Write,
}

/// Whether the paths `a` and `b` name the same device or file (links followed): two block
/// device nodes of one device (the same device number), or one file. False when either does
/// not exist.
pub fn same_device(a: &str, b: &str) -> bool {
    match (std::fs::metadata(a), std::fs::metadata(b)) {
        (Ok(x), Ok(y)) if x.file_type().is_block_device() && y.file_type().is_block_device() => {
            x.rdev() == y.rdev()
        }
        (Ok(x), Ok(y)) => x.dev() == y.dev() && x.ino() == y.ino(),
        _ => false,
    }
}

/// An open device or image file with its lock held (see [`Device::release_lock`] for a
/// long update that takes it only while it writes metadata).
#[derive(Debug)]
pub struct Device {
    storage: SharedStorage,
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

/// Devices named by NBD URIs (`nbd://host[:port]/export`, `nbd+unix:///export?socket=PATH`,
/// `nbds://…` with TLS): the ciphertext lives on an NBD server and lukskit is its client
/// (crate `lukskit-nbd`). Anything that accepts a device path accepts such a URI.
pub mod remote {
    use crate::error::{IoOp, Result, VolumeError};

    /// Whether `path` is an NBD URI rather than a file name (in every build: one without the
    /// `nbd` feature refuses to connect rather than taking the URI for a file name).
    pub fn is_remote(path: &str) -> bool {
        #[cfg(feature = "nbd")]
        return lukskit_nbd::uri::is_nbd_uri(path);
        #[cfg(not(feature = "nbd"))]
        [
            "nbd://",
            "nbds://",
            "nbd+unix://",
            "nbds+unix://",
            "nbd+tcp://",
            "nbds+tcp://",
        ]
        .iter()
        .any(|scheme| path.starts_with(scheme))
    }

    /// Connect to the NBD export `uri`; with `writable`, a read-only export is refused.
    #[cfg(feature = "nbd")]
    pub fn connect(uri: &str, writable: bool) -> Result<std::sync::Arc<lukskit_nbd::NbdClient>> {
        use lukskit_nbd::{ClientOptions, NbdClient, NbdUri};
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
        Ok(std::sync::Arc::new(client))
    }

    /// The storage of the NBD export `uri` (see [`connect`]); without the `nbd` feature an
    /// error of kind `Unsupported`.
    pub fn storage(uri: &str, writable: bool) -> Result<crate::storage::SharedStorage> {
        #[cfg(feature = "nbd")]
        {
            let client = connect(uri, writable)?;
            Ok(std::sync::Arc::new(crate::storage::NbdStorage::new(client)))
        }
        #[cfg(not(feature = "nbd"))]
        {
            let _ = writable;
            Err(VolumeError::io(
                IoOp::Open,
                uri,
                std::io::Error::new(
                    std::io::ErrorKind::Unsupported,
                    "NBD URIs need lukskit-volume's `nbd` feature",
                ),
            ))
        }
    }
}

impl Device {
    /// Open an existing device or file: [`VolumeError::NotFound`] when it is missing or not
    /// accessible, [`VolumeError::Io`] for any other OS error.
    pub fn open(path: &str, access: Access) -> Result<Self> {
        if remote::is_remote(path) {
            let storage = remote::storage(path, access == Access::Write)?;
            return Ok(Self::from_storage(crate::storage::opened(storage), path));
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

    /// A device on a storage of the caller's (see [`crate::storage`]), named `name` in
    /// errors. It is not locked: the storage's owner alone can exclude other users.
    pub fn from_storage(storage: SharedStorage, name: &str) -> Self {
        Device {
            storage,
            path: name.to_string(),
            lock: std::sync::Mutex::new(None),
            relock: Relock::Nothing,
            released: std::sync::atomic::AtomicBool::new(false),
        }
    }

    /// The storage this device reads and writes (shared with the data path).
    pub fn storage(&self) -> &SharedStorage {
        &self.storage
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
            storage: crate::storage::opened(std::sync::Arc::new(file)),
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
        match (&self.relock, self.file()) {
            (Relock::File(_), _) => {
                let held = self.lock.lock().map(|mut l| l.take());
                drop(held);
            }
            (Relock::Own, Some(f)) => {
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
        let kind = match (&self.relock, self.file()) {
            (Relock::File(p), _) => match LockFile::acquire(p, libc::LOCK_EX) {
                Ok(lf) => UpdateKind::File { _lock: lf },
                Err(LockError::Lock(e) | LockError::Open(e)) => {
                    return Err(VolumeError::io(IoOp::Lock, &self.path, e))
                }
            },
            (Relock::Own, Some(f)) => {
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

    /// The local file or block device behind the storage (for data I/O by upper layers);
    /// `None` for an NBD export or a storage of the caller's.
    pub fn file(&self) -> Option<&File> {
        self.storage.local_file()
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
        let Some(file) = self.file() else {
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
        self.storage.read_exact_at(buf, offset)
    }
    fn write_all_at(&self, buf: &[u8], offset: u64) -> io::Result<()> {
        self.storage.write_all_at(buf, offset)
    }
    fn sync(&self) -> io::Result<()> {
        self.storage.sync()
    }
    fn size(&self) -> io::Result<u64> {
        self.storage.size()
    }
    fn sync_data(&self) -> io::Result<()> {
        self.storage.sync_data()
    }
    fn discard(&self, offset: u64, len: u64) -> io::Result<()> {
        self.storage.discard(offset, len)
    }
    fn local_file(&self) -> Option<&File> {
        self.storage.local_file()
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

    #[test]
    fn same_device_follows_links_and_tells_files_apart() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("a"), dir.path().join("b"));
        std::fs::write(&a, b"a").unwrap();
        std::fs::write(&b, b"b").unwrap();
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&a, &link).unwrap();
        let p = |x: &std::path::Path| x.to_str().unwrap().to_string();
        assert!(same_device(&p(&a), &p(&link)));
        assert!(!same_device(&p(&a), &p(&b)));
        assert!(!same_device(&p(&a), &p(&dir.path().join("missing"))));
        // Two nodes of one block device (here: the node and a link to it, where /dev/loop0
        // exists).
        if std::path::Path::new("/dev/loop0").exists() {
            let l = dir.path().join("loop");
            std::os::unix::fs::symlink("/dev/loop0", &l).unwrap();
            assert!(same_device("/dev/loop0", &p(&l)));
        }
    }

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
