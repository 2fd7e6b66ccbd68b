//! Opening devices and image files for header I/O: locking, durability, fault injection.
//!
//! Every metadata write of lukskit goes through [`Device`]. It
//! * takes `flock` locks like cryptsetup (shared for reading, exclusive for updates) on the
//!   file itself, or for block devices on `/run/cryptsetup/L_<major>:<minor>`, so lukskit and
//!   cryptsetup exclude each other;
//! * counts writes and syncs so tests can stop the process at the Nth one (crash injection,
//!   enabled only when the environment variable [`CRASH_ENV`] is set).

use crate::error::{IoOp, Result, VolumeError};
use lukskit_format::io::Storage;
use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt};
use std::os::unix::io::AsRawFd;
#[cfg(feature = "crash-injection")]
use std::sync::atomic::{AtomicU64, Ordering};

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
    file: File,
    path: String,
    _lock: Option<File>,
}

impl Device {
    /// Open an existing device or file: [`VolumeError::NotFound`] when it is missing or not
    /// accessible, [`VolumeError::Io`] for any other OS error.
    pub fn open(path: &str, access: Access) -> Result<Self> {
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
        let op = match access {
            Access::Read => libc::LOCK_SH,
            Access::Write => libc::LOCK_EX,
        };
        let lock = if md.file_type().is_block_device() {
            let rdev = md.rdev();
            let (maj, min) = (libc::major(rdev), libc::minor(rdev));
            let _ = std::fs::create_dir_all("/run/cryptsetup");
            let lock_path = format!("/run/cryptsetup/L_{maj}:{min}");
            match OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(false)
                .mode(0o600)
                .open(&lock_path)
            {
                Ok(lf) => {
                    flock(&lf, op, path)?;
                    Some(lf)
                }
                // Without /run (unprivileged, read-only root) fall back to the device node.
                Err(_) => {
                    flock(&file, op, path)?;
                    None
                }
            }
        } else {
            flock(&file, op, path)?;
            None
        };
        Ok(Device {
            file,
            path: path.to_string(),
            _lock: lock,
        })
    }

    /// The path this device was opened with.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// The underlying file (for data I/O by upper layers).
    pub fn file(&self) -> &File {
        &self.file
    }

    /// Whether this is a block device (as opposed to a regular image file).
    pub fn is_block_device(&self) -> bool {
        self.file
            .metadata()
            .map(|m| m.file_type().is_block_device())
            .unwrap_or(false)
    }

    /// Grow a regular file to at least `len` bytes (detached header files).
    pub fn ensure_len(&self, len: u64) -> Result<()> {
        let cur = self
            .size()
            .map_err(|e| VolumeError::io(IoOp::Read, &self.path, e))?;
        if cur < len && !self.is_block_device() {
            self.file
                .set_len(len)
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
        self.file.read_exact_at(buf, offset)
    }
    fn write_all_at(&self, buf: &[u8], offset: u64) -> io::Result<()> {
        crash_point("write", &WRITES);
        self.file.write_all_at(buf, offset)
    }
    fn sync(&self) -> io::Result<()> {
        crash_point("sync", &SYNCS);
        self.file.sync_all()
    }
    fn size(&self) -> io::Result<u64> {
        Storage::size(&self.file)
    }
}
