//! Key files and headers on another device (`PATH:UUID=…`): the device is mounted read-only
//! (nosuid, nodev, noexec) under `/run/lukskit` for the time the file is read, and unmounted
//! when the [`ReadOnlyMount`] is dropped.

use crate::error::CrypttabError;
use crate::locate::resolve;
use crate::table::FileRef;
use std::path::{Path, PathBuf};

/// A device mounted read-only to read a file from it: unmounted when dropped.
#[derive(Debug)]
pub struct ReadOnlyMount {
    dir: PathBuf,
}

impl ReadOnlyMount {
    /// Where the device is mounted.
    pub fn dir(&self) -> &Path {
        &self.dir
    }
}

impl Drop for ReadOnlyMount {
    fn drop(&mut self) {
        if let Ok(c) = std::ffi::CString::new(self.dir.as_os_str().as_encoded_bytes()) {
            // SAFETY: `c` is a valid NUL-terminated path; umount2 only reads it.
            unsafe { libc::umount2(c.as_ptr(), libc::MNT_DETACH) };
        }
        let _ = std::fs::remove_dir(&self.dir);
    }
}

/// Mount `dev` read-only (nosuid, nodev, noexec) on a fresh directory, trying the block file
/// systems the kernel has.
pub fn mount_read_only(dev: &Path) -> Result<ReadOnlyMount, CrypttabError> {
    let base = Path::new("/run/lukskit");
    let create = |p: &Path, source| CrypttabError::CreateDirectory {
        path: p.display().to_string(),
        source,
    };
    std::fs::create_dir_all(base).map_err(|e| create(base, e))?;
    static SEQ: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let n = SEQ.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = base.join(format!("crypttab-key-{}-{n}", std::process::id()));
    let _ = std::fs::remove_dir(&dir);
    std::fs::create_dir(&dir).map_err(|e| create(&dir, e))?;
    let m = ReadOnlyMount { dir };
    let fstypes: Vec<String> = std::fs::read_to_string("/proc/filesystems")
        .unwrap_or_default()
        .lines()
        .filter(|l| !l.starts_with("nodev"))
        .map(|l| l.trim().to_string())
        .filter(|t| !t.is_empty())
        .take(64)
        .collect();
    let cdev = std::ffi::CString::new(dev.as_os_str().as_encoded_bytes())
        .map_err(|_| CrypttabError::NulInPath { what: "Device" })?;
    let cdir = std::ffi::CString::new(m.dir.as_os_str().as_encoded_bytes())
        .map_err(|_| CrypttabError::NulInPath { what: "Directory" })?;
    let flags = libc::MS_RDONLY | libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC;
    for t in &fstypes {
        let Ok(ct) = std::ffi::CString::new(t.as_str()) else {
            continue;
        };
        // SAFETY: every pointer is a valid NUL-terminated string that outlives the call; no
        // data argument.
        let r = unsafe {
            libc::mount(
                cdev.as_ptr(),
                cdir.as_ptr(),
                ct.as_ptr(),
                flags,
                std::ptr::null(),
            )
        };
        if r == 0 {
            return Ok(m);
        }
    }
    Err(CrypttabError::Mount {
        device: dev.display().to_string(),
    })
}

/// The path of `f`, mounting its device when it is on another one (the mount kept in
/// `mounts`, which must outlive the use of the path).
pub fn file_path(f: &FileRef, mounts: &mut Vec<ReadOnlyMount>) -> Result<String, CrypttabError> {
    let Some(dev) = &f.device else {
        return Ok(f.path.clone());
    };
    if Path::new(&f.path)
        .components()
        .any(|c| c == std::path::Component::ParentDir)
    {
        return Err(CrypttabError::ParentDirectory(f.clone()));
    }
    let path = resolve(dev).ok_or_else(|| CrypttabError::FileDeviceNotFound {
        device: dev.clone(),
        path: f.path.clone(),
    })?;
    let m = mount_read_only(&path)?;
    let p = m.dir.join(f.path.trim_start_matches('/'));
    mounts.push(m);
    Ok(p.display().to_string())
}

/// How a file is shown before anything is mounted: its path, or
/// `<DEVICE mounted read-only>/PATH` for a file on another device.
pub fn display_path(f: &FileRef) -> String {
    match &f.device {
        Some(d) => format!("<{d} mounted read-only>/{}", f.path.trim_start_matches('/')),
        None => f.path.clone(),
    }
}
