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

#[cfg(feature = "crash-injection")]
static WRITES: AtomicU64 = AtomicU64::new(0);
#[cfg(feature = "crash-injection")]
static SYNCS: AtomicU64 = AtomicU64::new(0);

#[cfg(feature = "crash-injection")]
fn crash_point(kind: &str, counter: &AtomicU64) {
    let n = counter.fetch_add(1, Ordering::SeqCst) + 1;
    if let Ok(spec) = std::env::var(CRASH_ENV) {
        if let Some((k, v)) = spec.split_once(':') {
            if k == kind && v.parse::<u64>().ok() == Some(n) {
                // SAFETY: _exit ends the process immediately without running destructors or
                // flushing buffers, which is exactly the crash being simulated.
                unsafe { libc::_exit(CRASH_EXIT_STATUS) };
            }
        }
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

/// An open device or image file with its lock held.
#[derive(Debug)]
pub struct Device {
    backing: Backing,
    path: String,
    _lock: Option<LockFile>,
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
        let client = NbdClient::connect(&parsed, ClientOptions::default())
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
                _lock: None,
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
        let lock = if md.file_type().is_block_device() {
            let rdev = md.rdev();
            let (maj, min) = (libc::major(rdev), libc::minor(rdev));
            let _ = std::fs::create_dir_all("/run/cryptsetup");
            let lock_path = format!("/run/cryptsetup/L_{maj}:{min}");
            match LockFile::acquire(&lock_path, op) {
                Ok(lf) => Some(lf),
                Err(LockError::Lock(e)) => return Err(VolumeError::io(IoOp::Lock, path, e)),
                // Without /run (unprivileged, read-only root) fall back to the device node.
                Err(LockError::Open(_)) => {
                    flock(&file, op, path)?;
                    None
                }
            }
        } else {
            flock(&file, op, path)?;
            None
        };
        Ok(Device {
            backing: Backing::File(file),
            path: path.to_string(),
            _lock: lock,
        })
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
