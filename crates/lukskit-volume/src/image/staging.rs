//! Nothing is written under an image's (or a decrypted output's) name until everything is:
//! a regular file is made as a new file beside it (a hidden name of its own, `O_EXCL |
//! O_NOFOLLOW`, mode 0600 whatever the umask) and renamed over it once complete and synced;
//! a LUKS header on a block device has its magic hidden until the data behind it is
//! complete.

use super::ImageError;
use lukskit_format::VolumeType;
use std::fs::{File, OpenOptions};
use std::os::unix::fs::{FileExt, FileTypeExt};
use std::path::{Path, PathBuf};

/// Whether writing to `path` would destroy something (an existing non-empty file or any
/// block device).
pub fn has_content(path: &str) -> bool {
    match std::fs::metadata(path) {
        Ok(m) => m.file_type().is_block_device() || m.len() > 0,
        Err(_) => false,
    }
}

/// Whether `path` is a block device (links followed).
pub fn is_block_device(path: &str) -> bool {
    std::fs::metadata(path)
        .map(|m| m.file_type().is_block_device())
        .unwrap_or(false)
}

/// A new file beside `path` (a hidden name of its own, made with `O_EXCL | O_NOFOLLOW`, mode
/// 0600 whatever the umask) that [`rename_into_place`] later puts in place of `path`.
pub fn new_file_beside(path: &str) -> Result<(File, PathBuf), ImageError> {
    let dst = Path::new(path);
    let name = dst.file_name().ok_or_else(|| ImageError::NotAFileName {
        path: path.to_string(),
    })?;
    let dir = dst.parent().filter(|d| !d.as_os_str().is_empty());
    let temp = dir.unwrap_or(Path::new(".")).join(format!(
        ".{}.lukskit-{}",
        name.to_string_lossy(),
        uuid::Uuid::new_v4().simple()
    ));
    let file = crate::private_file::create_new(&temp, 0o600).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound | std::io::ErrorKind::PermissionDenied => ImageError::Create {
            path: path.to_string(),
            source: e,
        },
        _ => ImageError::io("Creating", path, e),
    })?;
    Ok((file, temp))
}

/// Rename `temp` over `dst` and sync the directory, so that the rename survives a crash.
pub fn rename_into_place(temp: &Path, dst: &Path) -> std::io::Result<()> {
    std::fs::rename(temp, dst)?;
    let dir = dst.parent().filter(|d| !d.as_os_str().is_empty());
    if let Ok(d) = File::open(dir.unwrap_or(Path::new("."))) {
        let _ = d.sync_all();
    }
    Ok(())
}

/// The process's umask (read by setting it and putting it back).
fn current_umask() -> u32 {
    // SAFETY: umask has no preconditions and cannot fail; the old mask is put back at once.
    unsafe {
        let old = libc::umask(0o077);
        libc::umask(old);
        old
    }
}

/// The effective user id.
fn euid() -> u32 {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}

/// What `image encrypt` has written that is not yet under the image's name: a regular file
/// (image or detached header) is made as a new file beside it and renamed over it at the end;
/// a LUKS header on a block device has its magic hidden until the data behind it is
/// complete. Dropped before [`PendingImage::commit`] (an error, SIGINT, SIGTERM), the new
/// files are removed and a hidden header stays hidden: nothing interrupted looks complete.
#[derive(Default)]
pub struct PendingImage {
    /// The image as written now, and the path it ends up under.
    image: Option<(String, String)>,
    /// The same for a detached header.
    header: Option<(String, String)>,
    /// New files to rename into place (new, final).
    renames: Vec<(PathBuf, PathBuf)>,
    /// Hidden LUKS magics: (device, offset, the magic bytes).
    hidden: Vec<(String, u64, [u8; 6])>,
    committed: bool,
}

impl PendingImage {
    /// Decide where the image (and a detached header) are written: a new file beside a
    /// regular file (or a missing one), the device itself for a block device.
    pub fn stage(&mut self, image: &str, header: Option<&str>) -> Result<(), ImageError> {
        let image_now = self.stage_one(image)?;
        self.image = Some((image_now, image.to_string()));
        if let Some(h) = header {
            let header_now = self.stage_one(h)?;
            self.header = Some((header_now, h.to_string()));
        }
        Ok(())
    }

    fn stage_one(&mut self, path: &str) -> Result<String, ImageError> {
        if is_block_device(path) {
            return Ok(path.to_string());
        }
        let dst = Path::new(path);
        let (file, temp) = new_file_beside(path)?;
        // An existing file of ours keeps its mode (its owner chose it); a new one gets what
        // the umask gives, as before.
        {
            use std::os::unix::fs::{MetadataExt, PermissionsExt};
            let mode = match std::fs::symlink_metadata(dst) {
                Ok(md) if md.file_type().is_file() && md.uid() == euid() => md.mode() & 0o7777,
                Ok(_) => 0o600,
                Err(_) => 0o666 & !current_umask(),
            };
            let _ = file.set_permissions(std::fs::Permissions::from_mode(mode));
        }
        self.renames.push((temp.clone(), dst.to_path_buf()));
        Ok(temp.to_string_lossy().into_owned())
    }

    /// The image as written now.
    pub fn image(&self) -> &str {
        self.image.as_ref().map_or("", |(now, _)| now)
    }

    /// The detached header as written now.
    pub fn header(&self) -> Option<&str> {
        self.header.as_ref().map(|(now, _)| now.as_str())
    }

    /// Hide the LUKS header just written on a block device (the image's, or a detached
    /// header's): its magic (both copies for LUKS2) is zeroed until [`Self::commit`], so
    /// that neither lukskit nor cryptsetup nor blkid takes the device for a LUKS volume while
    /// its data is incomplete.
    pub fn hide_header(&mut self) -> Result<(), ImageError> {
        let holder = self.header().unwrap_or(self.image()).to_string();
        if !is_block_device(&holder) {
            return Ok(());
        }
        let f = OpenOptions::new()
            .read(true)
            .write(true)
            .open(&holder)
            .map_err(|e| ImageError::io("Opening", &holder, e))?;
        let mut first = [0u8; 16];
        f.read_exact_at(&mut first, 0)
            .map_err(|e| ImageError::io("Reading", &holder, e))?;
        let mut offsets = vec![0u64];
        if lukskit_format::detect::detect(&first) == Some(VolumeType::Luks2) {
            // The secondary copy starts where the primary's binary header says it ends.
            let hdr_size = u64::from_be_bytes(first[8..16].try_into().unwrap_or_default());
            offsets.push(hdr_size);
        }
        for off in offsets {
            let mut magic = [0u8; 6];
            f.read_exact_at(&mut magic, off)
                .map_err(|e| ImageError::io("Reading", &holder, e))?;
            f.write_all_at(&[0u8; 6], off)
                .map_err(|e| ImageError::io("Writing", &holder, e))?;
            self.hidden.push((holder.clone(), off, magic));
        }
        f.sync_all()
            .map_err(|e| ImageError::io("Syncing", &holder, e))
    }

    /// Everything is written and synced: show the header, put the new files in place.
    pub fn commit(&mut self) -> Result<(), ImageError> {
        for (dev, off, magic) in &self.hidden {
            let f = OpenOptions::new()
                .write(true)
                .open(dev)
                .map_err(|e| ImageError::io("Opening", dev, e))?;
            f.write_all_at(magic, *off)
                .and_then(|()| f.sync_all())
                .map_err(|e| ImageError::io("Writing", dev, e))?;
        }
        self.hidden.clear();
        for (temp, dst) in &self.renames {
            rename_into_place(temp, dst)
                .map_err(|e| ImageError::io("Creating", &dst.to_string_lossy(), e))?;
        }
        self.renames.clear();
        self.committed = true;
        Ok(())
    }
}

impl Drop for PendingImage {
    fn drop(&mut self) {
        if !self.committed {
            for (temp, _) in &self.renames {
                let _ = std::fs::remove_file(temp);
            }
        }
    }
}

/// The decrypted output. A block device is written as it is. A regular file is never
/// written in place: the plaintext goes into a new file beside it (made with `O_EXCL |
/// O_NOFOLLOW`, mode 0600 whatever the umask), which [`PlainOutput::commit`] renames over the
/// output once it is complete and synced. So a symbolic link planted as the output is
/// replaced, not followed; another user's file is replaced (where the directory lets us),
/// never written into; an interrupted run leaves no partial plaintext under the output's
/// name; and an existing file of ours keeps its mode (never loosened).
pub struct PlainOutput {
    file: File,
    /// (the new file, the output it replaces), for a regular file.
    temp: Option<(PathBuf, PathBuf)>,
}

impl PlainOutput {
    /// Open the output `path` (a new file beside a regular one, a device or pipe as it is).
    pub fn open(path: &str) -> Result<Self, ImageError> {
        // A device or pipe (also through a link, as /dev/disk/by-id/... is) is written as it
        // is; only a regular file, a link to one or nothing at all is replaced.
        let in_place = std::fs::metadata(path).is_ok_and(|m| {
            let t = m.file_type();
            t.is_block_device() || t.is_char_device() || t.is_fifo()
        });
        if in_place {
            let file = OpenOptions::new()
                .write(true)
                .open(path)
                .map_err(|e| ImageError::io("Opening", path, e))?;
            return Ok(PlainOutput { file, temp: None });
        }
        let dst = Path::new(path);
        let (file, temp) = new_file_beside(path)?;
        // An existing output of ours keeps its mode (its owner chose it).
        if let Ok(md) = std::fs::symlink_metadata(dst) {
            use std::os::unix::fs::{MetadataExt, PermissionsExt};
            if md.file_type().is_file() && md.uid() == euid() {
                let _ = file.set_permissions(std::fs::Permissions::from_mode(md.mode() & 0o7777));
            }
        }
        Ok(PlainOutput {
            file,
            temp: Some((temp, dst.to_path_buf())),
        })
    }

    /// The file written now.
    pub fn file(&self) -> &File {
        &self.file
    }

    /// Whether the output is a new file that replaces the output at the end (a regular
    /// file: it may have holes).
    pub fn is_replacement(&self) -> bool {
        self.temp.is_some()
    }

    /// Make the output durable and, for a regular file, put it in place of the output
    /// (`path`, for errors).
    pub fn commit(mut self, path: &str) -> Result<(), ImageError> {
        self.file
            .sync_data()
            .map_err(|e| ImageError::io("Syncing", path, e))?;
        if let Some((temp, dst)) = self.temp.take() {
            if let Err(e) = rename_into_place(&temp, &dst) {
                let _ = std::fs::remove_file(&temp);
                return Err(ImageError::io("Creating", path, e));
            }
        }
        Ok(())
    }
}

impl Drop for PlainOutput {
    fn drop(&mut self) {
        // Not committed: the partial plaintext goes.
        if let Some((temp, _)) = self.temp.take() {
            let _ = std::fs::remove_file(temp);
        }
    }
}
