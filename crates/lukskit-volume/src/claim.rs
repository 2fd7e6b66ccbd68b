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
//!
//!   Anyone who can read a file can also take a read lock on it, and a read lock keeps every
//!   write lock out. So that a user who can only read an image cannot stop root from opening or
//!   re-encrypting it, root's claims on files are also registered in a directory only root can
//!   write ([`REGISTRY_DIR`]): a lock there is the unforgeable sign of another root claim.
//!   Root, holding its registry lock, treats readers' locks on the image as no obstacle and takes
//!   a read lock beside them (which still keeps every other writer's claim out). Writers' locks
//!   (someone who may write the image) and other root claims still make it "in use".

use std::fs::{File, OpenOptions};
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// Where root registers its claims on image files: one lock file per claimed file, named by
/// the file's device and inode numbers (directory mode 0700, root's).
pub const REGISTRY_DIR: &str = "/run/lukskit-claims";

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
    /// For an image file: its lock (and root's registration of it).
    _image: Option<FileLock>,
    /// For a loop device: the lock on its backing file (the same data under another name).
    _backing: Option<FileLock>,
}

/// The claim's hold on a regular file: an open-file-description lock on the file, and for
/// root, the registration that tells root's claims apart from any reader's lock.
///
/// Fields drop in order: the image lock goes before the registration, so a root claim that
/// registers next never finds this claim's lock still on the image.
#[derive(Debug)]
struct FileLock {
    _file: File,
    _registered: Option<Registration>,
}

/// A locked file in [`REGISTRY_DIR`]; removed (while still locked) when dropped.
#[derive(Debug)]
struct Registration {
    _file: File,
    path: PathBuf,
}

impl Drop for Registration {
    fn drop(&mut self) {
        // Unlinked while the lock is still held: a claim that opened the old file before the
        // unlink finds, once it has the lock, that the path names another file (or none) and
        // starts over (see `register`).
        let _ = std::fs::remove_file(&self.path);
    }
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
                _image: None,
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
                _image: None,
                _backing: backing,
            });
        }
        if !ft.is_file() {
            // Character devices, pipes: nothing to claim them with (cryptsetup takes no claim
            // on those either); the holder still has the file open.
            let f = File::open(path).map_err(ClaimError::Io)?;
            return Ok(Claim {
                _file: Some(f),
                _image: None,
                _backing: None,
            });
        }
        let lock = lock_file(path)?;
        if attached_to_loop_device(md.dev(), md.ino(), loops) {
            return Err(ClaimError::InUse);
        }
        Ok(Claim {
            _file: None,
            _image: Some(lock),
            _backing: None,
        })
    }
}

/// Open the regular file `path` and take the claim's lock on it: a write lock, or a read lock
/// on a file we may only read (which still keeps writers and formatters out). Root registers
/// the claim first and then lets no reader's lock stand in its way (module documentation).
fn lock_file(path: &str) -> Result<FileLock, ClaimError> {
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
    let md = f.metadata().map_err(ClaimError::Io)?;
    // SAFETY: geteuid has no preconditions and cannot fail.
    let root = unsafe { libc::geteuid() } == 0;
    let registered = if root {
        register(Path::new(REGISTRY_DIR), md.dev(), md.ino())?
    } else {
        None
    };
    match ofd_lock(&f, kind) {
        Ok(()) => {}
        // Only readers hold locks on it, and no other root claim exists (we hold the
        // registration): a read lock beside theirs keeps every other writer's claim out.
        Err(ClaimError::InUse)
            if registered.is_some() && conflicting_lock(&f, kind) == Some(libc::F_RDLCK) =>
        {
            ofd_lock(&f, libc::F_RDLCK)?
        }
        Err(e) => return Err(e),
    }
    Ok(FileLock {
        _file: f,
        _registered: registered,
    })
}

/// Register a claim on the file with device `dev` and inode `ino` in `dir`: lock the file's
/// entry there. [`ClaimError::InUse`] while another claim holds it; `None` when `dir` cannot be
/// made or is not a directory that only root controls (the claim then rests on the image lock
/// alone, as for other users).
fn register(dir: &Path, dev: u64, ino: u64) -> Result<Option<Registration>, ClaimError> {
    if !trusted_dir(dir) {
        return Ok(None);
    }
    let path = dir.join(format!("{dev}:{ino}"));
    loop {
        let file = match OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(&path)
        {
            Ok(f) => f,
            Err(_) => return Ok(None),
        };
        ofd_lock(&file, libc::F_WRLCK)?;
        // The holder before us unlinks the entry before it lets go: ours counts only if the
        // path still names the file we locked.
        let ours = file.metadata().map_err(ClaimError::Io)?;
        match std::fs::symlink_metadata(&path) {
            Ok(now) if now.dev() == ours.dev() && now.ino() == ours.ino() => {
                return Ok(Some(Registration { _file: file, path }))
            }
            _ => continue,
        }
    }
}

/// Make `dir` (mode 0700) if it is missing; whether it is a real directory owned by root that
/// nobody else may write.
fn trusted_dir(dir: &Path) -> bool {
    use std::os::unix::fs::DirBuilderExt;
    let _ = std::fs::DirBuilder::new().mode(0o700).create(dir);
    std::fs::symlink_metadata(dir)
        .is_ok_and(|m| m.file_type().is_dir() && m.uid() == 0 && m.mode() & 0o022 == 0)
}

/// The type of a lock that keeps a lock of `kind` off the whole file (`F_RDLCK` or
/// `F_WRLCK`), or `None` if none does now.
fn conflicting_lock(f: &File, kind: i32) -> Option<i32> {
    let mut lock = libc::flock {
        l_type: kind as libc::c_short,
        l_whence: libc::SEEK_SET as libc::c_short,
        l_start: 0,
        l_len: 0,
        l_pid: 0,
    };
    // SAFETY: fcntl on a descriptor this function borrows, with a fully initialised flock
    // that the kernel reads and overwrites for F_OFD_GETLK.
    let rc = unsafe { libc::fcntl(f.as_raw_fd(), libc::F_OFD_GETLK, &mut lock) };
    match (rc, i32::from(lock.l_type)) {
        (0, libc::F_UNLCK) | (-1, _) => None,
        (_, t) => Some(t),
    }
}

/// A loop device (`rdev`) is its backing file under another name: the file is claimed with
/// it, so that an image a lukskit mapping serves is not rewritten or opened again through a
/// loop device attached to it later. [`ClaimError::InUse`] while someone holds the file's
/// claim; `None` for any other block device, or a backing file that cannot be opened (gone,
/// not ours to open: nothing of lukskit's can hold it either).
fn claim_loop_backing_file(rdev: u64) -> Result<Option<FileLock>, ClaimError> {
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

    /// A lock taken by a stranger who can only read the file: another open file description
    /// of it, read-only, with a read lock (what any user with read access can do).
    fn readers_lock(p: &str) -> File {
        let f = File::open(p).unwrap();
        ofd_lock(&f, libc::F_RDLCK).unwrap();
        f
    }

    #[test]
    fn a_readers_lock_stops_no_root_claim_and_root_claims_still_exclude_each_other() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("img");
        std::fs::write(&p, [0u8; 4096]).unwrap();
        let p = p.to_str().unwrap();
        let reader = readers_lock(p);
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            // Other users' claims rest on the image lock alone, as before.
            assert!(matches!(Claim::acquire(p), Err(ClaimError::InUse)));
            return;
        }
        let first = Claim::acquire(p).expect("a reader's lock does not stop root");
        assert!(matches!(Claim::acquire(p), Err(ClaimError::InUse)));
        // The first claim's read lock keeps out writers who are not root, too.
        let writer = OpenOptions::new().read(true).write(true).open(p).unwrap();
        drop(reader);
        assert!(matches!(
            ofd_lock(&writer, libc::F_WRLCK),
            Err(ClaimError::InUse)
        ));
        drop(first);
        let md = std::fs::metadata(p).unwrap();
        let entry = Path::new(REGISTRY_DIR).join(format!("{}:{}", md.dev(), md.ino()));
        assert!(
            !entry.exists(),
            "the registration is removed with the claim"
        );
        ofd_lock(&writer, libc::F_WRLCK).expect("free once the claim is dropped");
        drop(writer);
        Claim::acquire(p).expect("free again");
    }

    #[test]
    fn a_writers_lock_still_means_in_use() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("img");
        std::fs::write(&p, [0u8; 4096]).unwrap();
        let p = p.to_str().unwrap();
        let writer = OpenOptions::new().read(true).write(true).open(p).unwrap();
        ofd_lock(&writer, libc::F_WRLCK).unwrap();
        assert!(matches!(Claim::acquire(p), Err(ClaimError::InUse)));
    }

    #[test]
    fn registrations_exclude_each_other_and_are_never_followed_through_links() {
        let dir = tempfile::tempdir().unwrap();
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            // Not root: a directory we own is not trusted, nothing is registered.
            assert!(register(dir.path(), 1, 2).unwrap().is_none());
            return;
        }
        let first = register(dir.path(), 1, 2).unwrap().expect("registered");
        assert!(matches!(register(dir.path(), 1, 2), Err(ClaimError::InUse)));
        assert!(
            register(dir.path(), 1, 3).unwrap().is_some(),
            "another file"
        );
        drop(first);
        assert!(!dir.path().join("1:2").exists());
        let _again = register(dir.path(), 1, 2).unwrap().expect("free again");
        // A planted link in place of an entry is not opened through.
        let target = dir.path().join("target");
        std::fs::write(&target, b"").unwrap();
        std::os::unix::fs::symlink(&target, dir.path().join("7:7")).unwrap();
        assert!(register(dir.path(), 7, 7).unwrap().is_none());
        // A directory others may write is not trusted.
        let open = dir.path().join("open");
        std::fs::create_dir(&open).unwrap();
        std::fs::set_permissions(&open, std::os::unix::fs::PermissionsExt::from_mode(0o1777))
            .unwrap();
        assert!(register(&open, 1, 2).unwrap().is_none());
    }
}
