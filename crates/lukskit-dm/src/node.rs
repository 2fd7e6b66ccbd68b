//! Device nodes: `/dev/mapper/NAME` and `/dev/mapper/control`.
//!
//! Where udev runs (`/run/udev/control` exists) it makes `/dev/mapper/NAME` (a symlink to
//! `../dm-N`) when the kernel announces the mapping (the resume's uevent, which carries
//! libdevmapper's rule flags, see [`crate::ioctl::udev_flags`]); we wait for it, for a bounded
//! time, and create the node ourselves if it does not come. Where no udev runs (containers,
//! initramfs, the reference VM unless a script starts udevd) we create the node ourselves, as
//! libdevmapper does without udev: a block node with the mapping's `dev_t`. Observed with
//! cryptsetup 2.6.1 and `DM_DISABLE_UDEV=1` on Debian 12: `brw-rw---- root disk 253,0
//! /dev/mapper/l2`, i.e. mode 0660, group `disk`. Both cases are checked against cryptsetup
//! with Debian's systemd-udevd in the reference VM (tests/refvm/udev).
//!
//! Nothing here needs a udev cookie semaphore: libdevmapper's cookie wait is the best-known
//! source of hangs (containers without the IPC namespace, udevd stopped), so we never block on
//! udev beyond [`UDEV_WAIT`].

use std::ffi::CString;
use std::fs;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::devt::DevT;
use crate::error::{DmError, Result};
use crate::ioctl::CONTROL_PATH;

/// Where mapping nodes live.
pub const MAPPER_DIR: &str = "/dev/mapper";
/// The file whose presence says udevd is running (and listening).
pub const UDEV_CONTROL: &str = "/run/udev/control";
/// How long to wait for udev to create or remove a node before doing it ourselves.
pub const UDEV_WAIT: Duration = Duration::from_secs(5);
/// Mode of the nodes we create (libdevmapper's default on Debian).
pub const NODE_MODE: u32 = 0o660;
/// The misc-device major number of `/dev/mapper/control`.
const MISC_MAJOR: u32 = 10;

/// True when udevd appears to run here (its control socket exists).
pub fn udev_running() -> bool {
    Path::new(UDEV_CONTROL).exists()
}

/// The path of mapping `name`'s node.
pub fn mapper_path(name: &str) -> PathBuf {
    Path::new(MAPPER_DIR).join(name)
}

/// Whether `/dev/mapper/NAME` is a block node itself (not a symlink). When no mapping named
/// NAME exists such a node is a leftover (a crashed tool, a deferred remove that a dead udevd
/// never cleaned up): [`ensure_node`] replaces it, as libdevmapper does (cryptsetup 2.6.1
/// opens over a stale `/dev/mapper/NAME` of another device number).
pub fn is_block_node(name: &str) -> bool {
    fs::symlink_metadata(mapper_path(name)).is_ok_and(|m| m.file_type().is_block_device())
}

/// How [`ensure_node`] made the node usable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NodeOutcome {
    /// It was there already (made by udev or an earlier call) with the right device number.
    Present,
    /// We created it (no udev, or udev did not make it in time).
    Created,
}

/// Make `/dev/mapper/NAME` a block node of `dev`. With udev running, wait up to `udev_wait`
/// for udev's symlink first. A stale node (another device number, or a dangling symlink) is
/// replaced; any other kind of file there is an error.
pub fn ensure_node(name: &str, dev: DevT, udev_wait: Duration) -> Result<NodeOutcome> {
    let path = mapper_path(name);
    if udev_running() {
        let deadline = Instant::now() + udev_wait;
        loop {
            if node_matches(&path, dev) {
                return Ok(NodeOutcome::Present);
            }
            if Instant::now() >= deadline {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    } else if node_matches(&path, dev) {
        return Ok(NodeOutcome::Present);
    }
    remove_stale(&path)?;
    fs::create_dir_all(MAPPER_DIR).map_err(|source| DmError::Node {
        path: PathBuf::from(MAPPER_DIR),
        what: "create directory",
        source,
    })?;
    make_node(&path, libc::S_IFBLK, dev, NODE_MODE)?;
    if let Some(gid) = disk_gid() {
        let c = cpath(&path)?;
        // SAFETY: chown(2) on a NUL-terminated path we own; -1 leaves the owner unchanged.
        let r = unsafe { libc::chown(c.as_ptr(), u32::MAX, gid) };
        if r != 0 {
            return Err(node_err(&path, "chown", io::Error::last_os_error()));
        }
    }
    Ok(NodeOutcome::Created)
}

/// After mapping `name` (device `dev`) was removed: wait up to `udev_wait` for udev to drop
/// its node when udev runs, then remove `/dev/mapper/NAME` ourselves if it is still a block
/// node of `dev` or a dangling symlink. Returns whether we removed something.
pub fn remove_node(name: &str, dev: DevT, udev_wait: Duration) -> Result<bool> {
    let path = mapper_path(name);
    if udev_running() {
        let deadline = Instant::now() + udev_wait;
        while fs::symlink_metadata(&path).is_ok() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    let Ok(md) = fs::symlink_metadata(&path) else {
        return Ok(false);
    };
    let ours = (md.file_type().is_block_device() && DevT::from_raw(md.rdev()) == dev)
        || (md.file_type().is_symlink() && fs::metadata(&path).is_err());
    if !ours {
        return Ok(false);
    }
    fs::remove_file(&path).map_err(|e| node_err(&path, "remove", e))?;
    Ok(true)
}

/// Make sure `/dev/mapper/control` exists, as the misc device the kernel registered
/// (`/proc/misc`, `device-mapper`, minor 236 on Linux 6.1). When the kernel has no
/// device-mapper registered and `load_modules` is set, `modprobe dm_mod` first. Returns
/// whether device-mapper is available afterwards (`Ok(false)`: this kernel has none).
pub fn ensure_control(load_modules: bool) -> Result<bool> {
    let mut minor = misc_minor("device-mapper");
    if minor.is_none() && load_modules {
        modprobe("dm_mod");
        minor = misc_minor("device-mapper");
    }
    let path = Path::new(CONTROL_PATH);
    let Some(minor) = minor else {
        // No /proc/misc entry (or no /proc): trust an existing node.
        return Ok(fs::metadata(path).is_ok_and(|m| m.file_type().is_char_device()));
    };
    let want = DevT::new(MISC_MAJOR, minor);
    if let Ok(md) = fs::symlink_metadata(path) {
        if md.file_type().is_char_device() && DevT::from_raw(md.rdev()) == want {
            return Ok(true);
        }
        fs::remove_file(path).map_err(|e| node_err(path, "remove stale", e))?;
    }
    fs::create_dir_all(MAPPER_DIR).map_err(|source| DmError::Node {
        path: PathBuf::from(MAPPER_DIR),
        what: "create directory",
        source,
    })?;
    make_node(path, libc::S_IFCHR, want, 0o600)?;
    Ok(true)
}

/// `modprobe dm_crypt` (and `dm_mod`), for kernels that build them as modules. The kernel
/// also loads dm-crypt by itself on the first crypt table or
/// [`crate::ioctl::Control::target_version`] query; this is for environments where that
/// autoloading is off. Returns whether `modprobe` succeeded.
pub fn load_crypt_module() -> bool {
    modprobe("dm_mod") & modprobe("dm_crypt")
}

fn modprobe(module: &str) -> bool {
    Command::new("modprobe")
        .args(["-q", module])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// The minor number of misc device `name` from `/proc/misc` (`236 device-mapper`).
fn misc_minor(name: &str) -> Option<u32> {
    let text = fs::read_to_string("/proc/misc").ok()?;
    parse_misc(&text, name)
}

fn parse_misc(text: &str, name: &str) -> Option<u32> {
    text.lines().find_map(|l| {
        let mut w = l.split_whitespace();
        let minor = w.next()?.parse().ok()?;
        (w.next()? == name).then_some(minor)
    })
}

/// The `disk` group's id, when the system has one.
fn disk_gid() -> Option<u32> {
    let text = fs::read_to_string("/etc/group").ok()?;
    text.lines().find_map(|l| {
        let mut f = l.split(':');
        (f.next()? == "disk").then_some(())?;
        f.next()?;
        f.next()?.parse().ok()
    })
}

fn node_matches(path: &Path, dev: DevT) -> bool {
    fs::metadata(path)
        .is_ok_and(|m| m.file_type().is_block_device() && DevT::from_raw(m.rdev()) == dev)
}

/// Remove a block node or a symlink at `path` (whatever device it names); refuse to touch
/// other file types.
fn remove_stale(path: &Path) -> Result<()> {
    let Ok(md) = fs::symlink_metadata(path) else {
        return Ok(());
    };
    let ft = md.file_type();
    if !(ft.is_block_device() || ft.is_symlink()) {
        return Err(node_err(
            path,
            "exists and is not a device node",
            io::Error::from_raw_os_error(libc::EEXIST),
        ));
    }
    fs::remove_file(path).map_err(|e| node_err(path, "remove stale", e))
}

fn make_node(path: &Path, kind: libc::mode_t, dev: DevT, mode: u32) -> Result<()> {
    let c = cpath(path)?;
    // SAFETY: mknod(2) with a NUL-terminated path, a file type and permission bits, and a
    // device number; it reads only the path.
    let r = unsafe {
        libc::mknod(
            c.as_ptr(),
            kind | mode as libc::mode_t,
            dev.to_raw() as libc::dev_t,
        )
    };
    if r != 0 {
        return Err(node_err(path, "mknod", io::Error::last_os_error()));
    }
    // mknod applies the umask: set the mode exactly.
    fs::set_permissions(path, fs::Permissions::from_mode(mode))
        .map_err(|e| node_err(path, "chmod", e))
}

fn cpath(path: &Path) -> Result<CString> {
    CString::new(path.as_os_str().as_bytes())
        .map_err(|_| DmError::InvalidArgument("NUL in a path".into()))
}

fn node_err(path: &Path, what: &'static str, source: io::Error) -> DmError {
    DmError::Node {
        path: path.to_path_buf(),
        what,
        source,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn misc_lookup() {
        // /proc/misc of the reference VM (Linux 6.1) has "236 device-mapper".
        let text = "229 fuse\n236 device-mapper\n 60 vga_arbiter\n";
        assert_eq!(parse_misc(text, "device-mapper"), Some(236));
        assert_eq!(parse_misc(text, "vga_arbiter"), Some(60));
        assert_eq!(parse_misc(text, "loop-control"), None);
    }

    #[test]
    fn mapper_paths() {
        assert_eq!(mapper_path("vol"), PathBuf::from("/dev/mapper/vol"));
    }
}
