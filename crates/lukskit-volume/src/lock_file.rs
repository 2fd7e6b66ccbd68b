//! cryptsetup's lock files in `/run/cryptsetup`: `L_<major>:<minor>` for a block device,
//! `LN_<name>` for a named lock (the re-encryption lock), each held with `flock` and removed
//! by its last holder, as cryptsetup's `release_lock_handle` does, so that lock files do not
//! pile up.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::os::unix::io::AsRawFd;

/// A held lock file; released (and removed when no one else holds it) when dropped.
#[derive(Debug)]
pub(crate) struct LockFile {
    file: File,
    path: String,
}

/// Why a lock file was not taken.
#[derive(Debug)]
pub(crate) enum LockError {
    /// The file could not be opened or created.
    Open(io::Error),
    /// `flock` failed (`EWOULDBLOCK` for a non-blocking lock someone else holds).
    Lock(io::Error),
}

impl LockFile {
    /// Take `op` (`LOCK_SH` or `LOCK_EX`, with `LOCK_NB` not to wait) on the file at `path`,
    /// creating it (mode 0600).
    pub(crate) fn acquire(path: &str, op: libc::c_int) -> Result<Self, LockError> {
        // A holder that releases the lock between our open and our flock removes the file
        // we opened: the lock is then taken again on the file now at the path.
        loop {
            let file = OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(false)
                .mode(0o600)
                .custom_flags(libc::O_CLOEXEC)
                .open(path)
                .map_err(LockError::Open)?;
            flock(&file, op).map_err(LockError::Lock)?;
            if same_file(&file, path) {
                return Ok(LockFile {
                    file,
                    path: path.to_string(),
                });
            }
        }
    }
}

impl Drop for LockFile {
    fn drop(&mut self) {
        // Remove the file only when no one else holds it: an exclusive lock must be free.
        if flock(&self.file, libc::LOCK_EX | libc::LOCK_NB).is_ok()
            && same_file(&self.file, &self.path)
        {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

fn flock(file: &File, op: libc::c_int) -> io::Result<()> {
    loop {
        // SAFETY: flock on a valid, owned file descriptor; no memory is passed.
        if unsafe { libc::flock(file.as_raw_fd(), op) } == 0 {
            return Ok(());
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

/// Whether `file` is the file now at `path`.
fn same_file(file: &File, path: &str) -> bool {
    match (file.metadata(), std::fs::metadata(path)) {
        (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn last_holder_removes_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("LN_test");
        let path = path.to_str().unwrap();
        let a = LockFile::acquire(path, libc::LOCK_SH).unwrap();
        let b = LockFile::acquire(path, libc::LOCK_SH).unwrap();
        assert!(matches!(
            LockFile::acquire(path, libc::LOCK_EX | libc::LOCK_NB),
            Err(LockError::Lock(_))
        ));
        drop(a);
        assert!(std::path::Path::new(path).exists(), "still held by b");
        drop(b);
        assert!(
            !std::path::Path::new(path).exists(),
            "removed by its last holder"
        );
        let c = LockFile::acquire(path, libc::LOCK_EX | libc::LOCK_NB).unwrap();
        drop(c);
        assert!(!std::path::Path::new(path).exists());
    }
}
