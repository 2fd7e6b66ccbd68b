//! Exclusive use of a device or image file: what the kernel's claim of a mapping's backing
//! device is to dm-crypt.
//!
//! A [`Claim`] is held for as long as a volume is open (by the serving process) and taken for
//! the duration of a command that rewrites a whole device (format, convert). While one exists,
//! every other claim on the same device or file fails with [`ClaimError::InUse`], so a device
//! is never opened twice for writing or formatted under a live mapping.
//!
//! * **Block devices**: opened with `O_EXCL`. The kernel then refuses other exclusive openers,
//!   and a device that is mounted, part of an md array or claimed by a device-mapper target
//!   (cryptsetup's own mappings) cannot be claimed here.
//! * **Regular files** (images): an open-file-description lock (`F_OFD_SETLK`, write lock on
//!   the whole file) — independent of the `flock` locks that lukskit and cryptsetup take for
//!   header updates, so adding a key to an open volume still works, and released by the kernel
//!   when the holder dies. A file attached to a loop device (by `losetup` or by cryptsetup's
//!   own activation of an image) counts as in use too.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt};
use std::path::Path;

/// Why a device could not be claimed.
#[derive(Debug)]
#[non_exhaustive]
pub enum ClaimError {
    /// Someone else uses the device: a mapping (lukskit's or the kernel's), a mount, a loop
    /// device, an md array, or another exclusive opener.
    InUse,
    /// The device could not be opened or inspected.
    Io(io::Error),
}

impl std::fmt::Display for ClaimError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ClaimError::InUse => f.write_str("device in use"),
            ClaimError::Io(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for ClaimError {}

/// Exclusive use of a device or image file, released when dropped (or when the process that
/// holds it ends).
#[derive(Debug)]
pub struct Claim {
    _file: Option<File>,
    /// For a loop device: the lock on its backing file (the same data under another name).
    _backing: Option<File>,
}

impl Claim {
    /// Claim `path` for exclusive use.
    ///
    /// An NBD export (a `nbd://…` URI) cannot be claimed from here: the claim is empty and
    /// excluding other clients is left to the server.
    pub fn acquire(path: &str) -> Result<Claim, ClaimError> {
        Self::acquire_with(path, LoopPolicy::AnyAttached)
    }

    /// Claim `path` for a command that rewrites it offline (luksFormat, an offline
    /// re-encryption): as [`Claim::acquire`], but an image file with a loop device attached
    /// counts as in use only while that loop device is itself in use (mapped, mounted, opened
    /// exclusively). cryptsetup formats and re-encrypts an image file whatever loop device is
    /// attached to it (upstream's compat-test2 formats the file its idle `losetup` device is
    /// attached to) and takes no claim on files at all; refusing one under a live mapping
    /// (lukskit's, or any through a loop device) is lukskit's own precaution.
    pub fn acquire_for_rewrite(path: &str) -> Result<Claim, ClaimError> {
        Self::acquire_with(path, LoopPolicy::BusyOnly)
    }

    fn acquire_with(path: &str, loops: LoopPolicy) -> Result<Claim, ClaimError> {
        if crate::device::remote::is_remote(path) {
            return Ok(Claim {
                _file: None,
                _backing: None,
            });
        }
        let md = std::fs::metadata(path).map_err(ClaimError::Io)?;
        let ft = md.file_type();
        if ft.is_block_device() {
            let f = open_excl(path)?;
            let backing = claim_loop_backing_file(md.rdev())?;
            return Ok(Claim {
                _file: Some(f),
                _backing: backing,
            });
        }
        if !ft.is_file() {
            // Character devices, pipes: nothing to claim them with (cryptsetup takes no claim
            // on those either); the holder still has the file open.
            let f = File::open(path).map_err(ClaimError::Io)?;
            return Ok(Claim {
                _file: Some(f),
                _backing: None,
            });
        }
        let f = lock_file(path)?;
        if attached_to_loop_device(md.dev(), md.ino(), loops) {
            return Err(ClaimError::InUse);
        }
        Ok(Claim {
            _file: Some(f),
            _backing: None,
        })
    }
}

/// Open the regular file `path` and take the claim's lock on it: a write lock, or a read lock
/// on a file we may only read (which still keeps writers and formatters out).
fn lock_file(path: &str) -> Result<File, ClaimError> {
    let (f, kind) = match OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(libc::O_CLOEXEC)
        .open(path)
    {
        Ok(f) => (f, libc::F_WRLCK),
        // A file we may only read: a read lock still keeps writers and formatters out.
        Err(e) if matches!(e.raw_os_error(), Some(libc::EACCES | libc::EROFS)) => {
            (File::open(path).map_err(ClaimError::Io)?, libc::F_RDLCK)
        }
        Err(e) => return Err(ClaimError::Io(e)),
    };
    ofd_lock(&f, kind)?;
    Ok(f)
}

/// A loop device (`rdev`) is its backing file under another name: the file is claimed with
/// it, so that an image a lukskit mapping serves is not rewritten or opened again through a
/// loop device attached to it later. [`ClaimError::InUse`] while someone holds the file's
/// claim; `None` for any other block device, or a backing file that cannot be opened (gone,
/// not ours to open: nothing of lukskit's can hold it either).
fn claim_loop_backing_file(rdev: u64) -> Result<Option<File>, ClaimError> {
    let sys = format!(
        "/sys/dev/block/{}:{}/loop/backing_file",
        libc::major(rdev),
        libc::minor(rdev)
    );
    let Ok(backing) = std::fs::read_to_string(sys) else {
        return Ok(None);
    };
    let backing = backing.trim_end_matches('\n');
    if !std::fs::metadata(backing).is_ok_and(|m| m.file_type().is_file()) {
        return Ok(None);
    }
    match lock_file(backing) {
        Ok(f) => Ok(Some(f)),
        Err(ClaimError::InUse) => Err(ClaimError::InUse),
        Err(ClaimError::Io(_)) => Ok(None),
    }
}

fn open_excl(path: &str) -> Result<File, ClaimError> {
    OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_EXCL | libc::O_CLOEXEC)
        .open(path)
        .map_err(|e| match e.raw_os_error() {
            Some(libc::EBUSY) => ClaimError::InUse,
            _ => ClaimError::Io(e),
        })
}

/// Take an open-file-description lock of `kind` on the whole file, without waiting.
fn ofd_lock(f: &File, kind: i32) -> Result<(), ClaimError> {
    let lock = libc::flock {
        l_type: kind as libc::c_short,
        l_whence: libc::SEEK_SET as libc::c_short,
        l_start: 0,
        l_len: 0,
        l_pid: 0,
    };
    loop {
        // SAFETY: fcntl on a descriptor this function borrows, with a fully initialised flock
        // that the kernel only reads for F_OFD_SETLK.
        let rc = unsafe { libc::fcntl(f.as_raw_fd(), libc::F_OFD_SETLK, &lock) };
        if rc == 0 {
            return Ok(());
        }
        let e = io::Error::last_os_error();
        match e.raw_os_error() {
            Some(libc::EINTR) => continue,
            Some(libc::EAGAIN | libc::EACCES) => return Err(ClaimError::InUse),
            _ => return Err(ClaimError::Io(e)),
        }
    }
}

/// Whether a loop device is attached to the file with this device and inode number.
/// Which loop devices attached to an image file make it "in use".
#[derive(Clone, Copy, PartialEq, Eq)]
enum LoopPolicy {
    /// Any attached loop device.
    AnyAttached,
    /// Only one that cannot be opened exclusively (held by a mapping, a mount, ...).
    BusyOnly,
}

fn attached_to_loop_device(dev: u64, ino: u64, loops: LoopPolicy) -> bool {
    let Ok(entries) = std::fs::read_dir("/sys/block") else {
        return false;
    };
    entries.flatten().any(|e| {
        let name = e.file_name();
        if !name.to_string_lossy().starts_with("loop") {
            return false;
        }
        let Ok(backing) = std::fs::read_to_string(e.path().join("loop/backing_file")) else {
            return false;
        };
        let backing = backing.trim_end_matches('\n');
        let attached =
            std::fs::metadata(Path::new(backing)).is_ok_and(|m| m.dev() == dev && m.ino() == ino);
        attached
            && (loops == LoopPolicy::AnyAttached
                || matches!(
                    open_excl(&format!("/dev/{}", name.to_string_lossy())),
                    Err(ClaimError::InUse)
                ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_is_claimed_once_and_released_on_drop() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("img");
        std::fs::write(&p, [0u8; 4096]).unwrap();
        let p = p.to_str().unwrap();
        let first = Claim::acquire(p).unwrap();
        assert!(matches!(Claim::acquire(p), Err(ClaimError::InUse)));
        drop(first);
        Claim::acquire(p).expect("free again after the first claim is dropped");
    }

    #[test]
    fn header_locks_do_not_conflict_with_a_claim() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("img");
        std::fs::write(&p, [0u8; 4096]).unwrap();
        let p = p.to_str().unwrap();
        let _claim = Claim::acquire(p).unwrap();
        // A header update (luksAddKey on an open volume) takes cryptsetup's flock.
        crate::device::Device::open(p, crate::device::Access::Write)
            .expect("an exclusive flock is still available under a claim");
    }
}
