//! The re-encryption lock cryptsetup takes besides the metadata lock: an exclusive `flock`
//! on `/run/cryptsetup/LN_LUKS2-reencryption-<uuid>`, so that two processes (lukskit or
//! cryptsetup, in any combination) never run or recover the same re-encryption at once.

use crate::error::{IoOp, ReencryptError, Result, VolumeError};
use std::fs::{File, OpenOptions};
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::io::AsRawFd;

/// Directory of cryptsetup's lock files.
pub const LOCK_DIR: &str = "/run/cryptsetup";

/// A held re-encryption lock; released when dropped.
#[derive(Debug)]
pub struct ReencryptLock {
    _file: File,
}

/// The lock file path for a volume UUID.
pub fn lock_path(uuid: &str) -> String {
    format!("{LOCK_DIR}/LN_LUKS2-reencryption-{uuid}")
}

impl ReencryptLock {
    /// Take the lock without waiting: [`ReencryptError::AlreadyRunning`] when another
    /// process holds it.
    pub fn acquire(uuid: &str) -> Result<Self> {
        let path = lock_path(uuid);
        let _ = std::fs::create_dir_all(LOCK_DIR);
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o600)
            .custom_flags(libc::O_CLOEXEC)
            .open(&path)
            .map_err(|e| VolumeError::io(IoOp::Lock, &path, e))?;
        loop {
            // SAFETY: flock on a valid, owned file descriptor; no memory is passed.
            let rc = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
            if rc == 0 {
                return Ok(ReencryptLock { _file: file });
            }
            let e = std::io::Error::last_os_error();
            match e.raw_os_error() {
                Some(libc::EINTR) => continue,
                Some(libc::EWOULDBLOCK) => return Err(ReencryptError::AlreadyRunning.into()),
                _ => return Err(VolumeError::io(IoOp::Lock, &path, e)),
            }
        }
    }
}
