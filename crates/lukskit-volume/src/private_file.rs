//! Files lukskit makes beside a volume (the LUKS1 re-encryption's log, headers and journal in
//! the current directory, output files), which may be directories others can write to.
//!
//! A new file is created with `O_CREAT | O_EXCL | O_NOFOLLOW` (never through a planted
//! symbolic link, never into a file someone else made first), as cryptsetup creates its
//! re-encryption files. An existing one (a run to resume) is reopened only when it is what
//! lukskit would have left: a regular file, not a symbolic link, owned by this user, with a
//! single link (a hard link planted to another file would make us write there).

use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::Path;

/// Create `path` new with `mode` (read and write): fails with
/// [`io::ErrorKind::AlreadyExists`] when anything exists there, a symbolic link included.
pub fn create_new(path: impl AsRef<Path>, mode: u32) -> io::Result<File> {
    OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .mode(mode)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)
}

/// Open the existing file `path` for reading and writing, if it is one this user made: a
/// regular file (not a symbolic link), owned by the effective user, with one link. Any other
/// file fails with [`io::ErrorKind::PermissionDenied`].
pub fn open_own(path: impl AsRef<Path>) -> io::Result<File> {
    let f = OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC | libc::O_NONBLOCK)
        .open(path.as_ref())
        .map_err(|e| {
            // O_NOFOLLOW on a symbolic link: ELOOP.
            if e.raw_os_error() == Some(libc::ELOOP) {
                not_ours(path.as_ref(), "a symbolic link")
            } else {
                e
            }
        })?;
    let md = f.metadata()?;
    // SAFETY: geteuid has no preconditions and cannot fail.
    let me = unsafe { libc::geteuid() };
    if !md.file_type().is_file() {
        return Err(not_ours(path.as_ref(), "not a regular file"));
    }
    if md.uid() != me {
        return Err(not_ours(path.as_ref(), "owned by another user"));
    }
    if md.nlink() != 1 {
        return Err(not_ours(path.as_ref(), "a file with other links"));
    }
    Ok(f)
}

/// Open `path` for writing if this user made it ([`open_own`]), else create it new
/// ([`create_new`] with `mode`).
pub fn open_own_or_create(path: impl AsRef<Path>, mode: u32) -> io::Result<File> {
    match create_new(path.as_ref(), mode) {
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => open_own(path),
        other => other,
    }
}

fn not_ours(path: &Path, what: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::PermissionDenied,
        format!("{} is {what}, not a file lukskit made", path.display()),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn a_new_file_is_never_made_through_a_link_or_into_an_existing_file() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("victim");
        std::fs::write(&target, b"precious").unwrap();
        let link = dir.path().join("LUKS-x.log");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        let e = create_new(&link, 0o600).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::AlreadyExists);
        let e = create_new(&target, 0o600).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::AlreadyExists);
        assert_eq!(std::fs::read(&target).unwrap(), b"precious");
        let fresh = dir.path().join("fresh");
        create_new(&fresh, 0o600).unwrap();
        let mode = std::fs::metadata(&fresh).unwrap().permissions().mode() & 0o7777;
        assert_eq!(mode & 0o077, 0, "mode {mode:o}");
    }

    #[test]
    fn only_a_regular_file_of_ours_with_one_link_is_reopened() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("victim");
        std::fs::write(&target, b"precious").unwrap();
        let link = dir.path().join("sym");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        assert_eq!(
            open_own(&link).unwrap_err().kind(),
            io::ErrorKind::PermissionDenied
        );
        assert_eq!(
            open_own_or_create(&link, 0o600).unwrap_err().kind(),
            io::ErrorKind::PermissionDenied
        );
        let hard = dir.path().join("hard");
        std::fs::hard_link(&target, &hard).unwrap();
        assert_eq!(
            open_own(&hard).unwrap_err().kind(),
            io::ErrorKind::PermissionDenied
        );
        std::fs::remove_file(&hard).unwrap();
        open_own(&target).expect("our own file, one link");
        open_own_or_create(&target, 0o600).expect("reopened");
        // A file of another user (root only can make one here).
        // SAFETY: geteuid cannot fail.
        if unsafe { libc::geteuid() } == 0 {
            let theirs = dir.path().join("theirs");
            std::fs::write(&theirs, b"x").unwrap();
            std::os::unix::fs::chown(&theirs, Some(65534), None).unwrap();
            assert_eq!(
                open_own(&theirs).unwrap_err().kind(),
                io::ErrorKind::PermissionDenied
            );
        }
        assert_eq!(std::fs::read(&target).unwrap(), b"precious");
    }
}
