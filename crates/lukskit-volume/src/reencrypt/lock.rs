//! The re-encryption lock cryptsetup takes besides the metadata lock: an exclusive `flock`
//! on `/run/cryptsetup/LN_LUKS2-reencryption-<uuid>`, so that two processes (lukskit or
//! cryptsetup, in any combination) never run or recover the same re-encryption at once.

use crate::error::{IoOp, ReencryptError, Result, VolumeError};
use crate::lock_file::{LockError, LockFile};

/// Directory of cryptsetup's lock files.
pub const LOCK_DIR: &str = "/run/cryptsetup";

/// A held re-encryption lock; released (and its file removed when no one else holds it)
/// when dropped.
#[derive(Debug)]
pub struct ReencryptLock {
    _file: LockFile,
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
        match LockFile::acquire(&path, libc::LOCK_EX | libc::LOCK_NB) {
            Ok(file) => Ok(ReencryptLock { _file: file }),
            Err(LockError::Lock(e)) if e.raw_os_error() == Some(libc::EWOULDBLOCK) => {
                Err(ReencryptError::AlreadyRunning.into())
            }
            Err(LockError::Lock(e) | LockError::Open(e)) => {
                Err(VolumeError::io(IoOp::Lock, &path, e))
            }
        }
    }
}
