//! Loop devices on top of a file (the FUSE plaintext file), through the kernel's loop
//! ioctls (`LOOP_CTL_GET_FREE`, `LOOP_CONFIGURE`, `LOOP_CLR_FD`, `LOOP_SET_CAPACITY`).
//!
//! The ioctls are few and stable, so they are called directly with `libc` rather than
//! through a crate (the `loopdev` crate generates its bindings with bindgen at build time,
//! which needs clang).

use std::fs::{File, OpenOptions};
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

const LOOP_CLR_FD: libc::Ioctl = 0x4C01;
const LOOP_SET_CAPACITY: libc::Ioctl = 0x4C07;
const LOOP_CONFIGURE: libc::Ioctl = 0x4C0A;
const LOOP_CTL_GET_FREE: libc::Ioctl = 0x4C82;

const LO_FLAGS_READ_ONLY: u32 = 1;
const LO_FLAGS_AUTOCLEAR: u32 = 4;
const LO_FLAGS_DIRECT_IO: u32 = 16;

/// `struct loop_info64` of `<linux/loop.h>`.
#[repr(C)]
#[derive(Clone, Copy)]
struct LoopInfo64 {
    lo_device: u64,
    lo_inode: u64,
    lo_rdevice: u64,
    lo_offset: u64,
    lo_sizelimit: u64,
    lo_number: u32,
    lo_encrypt_type: u32,
    lo_encrypt_key_size: u32,
    lo_flags: u32,
    lo_file_name: [u8; 64],
    lo_crypt_name: [u8; 64],
    lo_encrypt_key: [u8; 32],
    lo_init: [u64; 2],
}

/// `struct loop_config` of `<linux/loop.h>`.
#[repr(C)]
#[derive(Clone, Copy)]
struct LoopConfig {
    fd: u32,
    block_size: u32,
    info: LoopInfo64,
    reserved: [u64; 8],
}

/// How to attach a file.
#[derive(Debug, Clone, Copy)]
pub struct LoopOptions {
    /// Logical block size of the loop device (the encryption sector size).
    pub block_size: u32,
    /// Attach read-only.
    pub read_only: bool,
    /// Ask for direct I/O on the backing file (falls back to buffered I/O when refused).
    pub direct_io: bool,
}

/// An attached loop device. The device stays attached while this value (which holds the
/// device open) lives, or until [`LoopDevice::detach`]; it is attached with `autoclear`, so
/// if the process dies the kernel detaches it as soon as nobody else has it open.
#[derive(Debug)]
pub struct LoopDevice {
    file: Option<File>,
    path: PathBuf,
    number: u32,
}

fn ioctl_err(what: &str, path: &Path) -> io::Error {
    let e = io::Error::last_os_error();
    io::Error::new(e.kind(), format!("{what} {}: {e}", path.display()))
}

impl LoopDevice {
    /// Attach `backing` to a free loop device.
    pub fn attach(backing: &Path, opts: LoopOptions) -> io::Result<LoopDevice> {
        let backing_file = OpenOptions::new()
            .read(true)
            .write(!opts.read_only)
            .custom_flags(libc::O_CLOEXEC)
            .open(backing)?;
        let control = OpenOptions::new()
            .read(true)
            .write(true)
            .custom_flags(libc::O_CLOEXEC)
            .open("/dev/loop-control")?;
        let mut last_err = None;
        for _attempt in 0..16 {
            // SAFETY: LOOP_CTL_GET_FREE takes no argument and returns a device number.
            let n = unsafe { libc::ioctl(control.as_raw_fd(), LOOP_CTL_GET_FREE) };
            if n < 0 {
                return Err(ioctl_err(
                    "Cannot find a free loop device via",
                    Path::new("/dev/loop-control"),
                ));
            }
            let number = n as u32;
            let path = PathBuf::from(format!("/dev/loop{number}"));
            let dev = match OpenOptions::new()
                .read(true)
                .write(!opts.read_only)
                .custom_flags(libc::O_CLOEXEC)
                .open(&path)
            {
                Ok(f) => f,
                Err(e) => {
                    last_err = Some(e);
                    continue;
                }
            };
            let mut flags = LO_FLAGS_AUTOCLEAR;
            if opts.read_only {
                flags |= LO_FLAGS_READ_ONLY;
            }
            let tries: &[u32] = if opts.direct_io {
                &[LO_FLAGS_DIRECT_IO, 0]
            } else {
                &[0]
            };
            for &extra in tries {
                let cfg = loop_config(&backing_file, opts.block_size, flags | extra, backing);
                // SAFETY: LOOP_CONFIGURE reads a fully initialised `struct loop_config` that
                // lives for the duration of the call.
                let rc = unsafe { libc::ioctl(dev.as_raw_fd(), LOOP_CONFIGURE, &cfg) };
                if rc == 0 {
                    return Ok(LoopDevice {
                        file: Some(dev),
                        path,
                        number,
                    });
                }
                let e = io::Error::last_os_error();
                if e.raw_os_error() == Some(libc::EBUSY) {
                    // Someone else took this device between GET_FREE and CONFIGURE.
                    last_err = Some(e);
                    break;
                }
                last_err = Some(e);
            }
            if last_err.as_ref().and_then(|e| e.raw_os_error()) != Some(libc::EBUSY) {
                break;
            }
        }
        let e = last_err.unwrap_or_else(|| io::Error::other("no free loop device"));
        Err(io::Error::new(
            e.kind(),
            format!("Cannot attach {} to a loop device: {e}", backing.display()),
        ))
    }

    /// The device node (`/dev/loopN`).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether the kernel uses direct I/O on the backing file.
    pub fn direct_io(&self) -> bool {
        std::fs::read_to_string(format!("/sys/block/loop{}/loop/dio", self.number))
            .map(|s| s.trim() == "1")
            .unwrap_or(false)
    }

    /// Write back the device's page cache and have the loop driver flush its backing file
    /// (`fsync` of the block device: the kernel's `sync_blockdev` and a flush request, which
    /// the loop driver turns into an `fsync` of the backing file).
    pub fn sync(&self) -> io::Result<()> {
        match &self.file {
            Some(f) => f.sync_all().map_err(|e| {
                io::Error::new(
                    e.kind(),
                    format!("Cannot sync {}: {e}", self.path.display()),
                )
            }),
            None => Ok(()),
        }
    }

    /// Detach the device and wait (up to a few seconds) until the kernel has released the
    /// backing file. Fails with `EBUSY` when the device is in use (mounted, or held open
    /// exclusively).
    pub fn detach(&mut self) -> io::Result<()> {
        if is_busy(&self.path)? {
            return Err(io::Error::from_raw_os_error(libc::EBUSY));
        }
        // What programs wrote through the device's page cache without syncing is written
        // back first: the last close of a block device does that, but this value keeps the
        // device open, so their close was not the last one. Best effort: a backing file that
        // fails (an aborted FUSE connection, a dead NBD server) cannot take the data, and the
        // device is detached all the same (the failed writes are the backend's errors, which
        // the serving process logs).
        let _ = self.sync();
        if let Some(f) = self.file.take() {
            // SAFETY: LOOP_CLR_FD takes no argument.
            let rc = unsafe { libc::ioctl(f.as_raw_fd(), LOOP_CLR_FD, 0) };
            if rc != 0 {
                let e = io::Error::last_os_error();
                // ENXIO: already detached.
                if e.raw_os_error() != Some(libc::ENXIO) {
                    self.file = Some(f);
                    return Err(e);
                }
            }
            drop(f);
        }
        wait_detached(self.number, Duration::from_secs(5));
        Ok(())
    }
}

fn loop_config(backing: &File, block_size: u32, flags: u32, name: &Path) -> LoopConfig {
    let mut info = LoopInfo64 {
        lo_device: 0,
        lo_inode: 0,
        lo_rdevice: 0,
        lo_offset: 0,
        lo_sizelimit: 0,
        lo_number: 0,
        lo_encrypt_type: 0,
        lo_encrypt_key_size: 0,
        lo_flags: flags,
        lo_file_name: [0; 64],
        lo_crypt_name: [0; 64],
        lo_encrypt_key: [0; 32],
        lo_init: [0; 2],
    };
    let bytes = name.as_os_str().as_encoded_bytes();
    let n = bytes.len().min(63);
    info.lo_file_name[..n].copy_from_slice(&bytes[..n]);
    LoopConfig {
        fd: backing.as_raw_fd() as u32,
        block_size,
        info,
        reserved: [0; 8],
    }
}

/// Whether a block device is in use: mounted, a holder below another device, or open
/// exclusively (an exclusive open fails with `EBUSY`).
pub fn is_busy(dev: &Path) -> io::Result<bool> {
    match OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_EXCL | libc::O_CLOEXEC)
        .open(dev)
    {
        Ok(_) => Ok(false),
        Err(e) if e.raw_os_error() == Some(libc::EBUSY) => Ok(true),
        Err(e) => Err(e),
    }
}

/// The backing file of `/dev/loopN`, if attached.
pub fn backing_file(dev: &Path) -> Option<String> {
    let name = dev.file_name()?.to_str()?;
    let s = std::fs::read_to_string(format!("/sys/block/{name}/loop/backing_file")).ok()?;
    Some(s.trim_end_matches('\n').to_string())
}

/// Whether `dev` is a loop device (`/dev/loopN`, or another node of the loop driver).
pub fn is_loop_device(dev: &Path) -> bool {
    use std::os::unix::fs::{FileTypeExt, MetadataExt};
    // The loop driver's block major (LOOP_MAJOR of <linux/major.h>).
    const LOOP_MAJOR: u32 = 7;
    std::fs::metadata(dev)
        .is_ok_and(|m| m.file_type().is_block_device() && libc::major(m.rdev()) == LOOP_MAJOR)
}

/// Make loop device `dev` take the current size of its backing file (`LOOP_SET_CAPACITY`), as
/// cryptsetup's `resize` does before it computes the new size of a mapping over a loop device:
/// after the backing file grew (`truncate -s`), the loop device keeps its old size until then.
pub fn set_capacity(dev: &Path) -> io::Result<()> {
    let f = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_CLOEXEC)
        .open(dev)?;
    // SAFETY: LOOP_SET_CAPACITY takes no argument; the descriptor is open for the call.
    let rc = unsafe { libc::ioctl(f.as_raw_fd(), LOOP_SET_CAPACITY, 0) };
    if rc != 0 {
        return Err(ioctl_err("Cannot resize loop device", dev));
    }
    Ok(())
}

/// Detach a loop device left behind by a dead server (only if it still has `backing` as
/// its backing file). Fails with `EBUSY` when it is in use.
pub fn detach_stale(dev: &Path, backing: &Path) -> io::Result<()> {
    let Some(current) = backing_file(dev) else {
        return Ok(());
    };
    // The kernel appends " (deleted)" when the file is gone.
    let current = current.trim_end_matches(" (deleted)");
    if Path::new(current) != backing {
        return Ok(());
    }
    if is_busy(dev)? {
        return Err(io::Error::from_raw_os_error(libc::EBUSY));
    }
    let f = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_CLOEXEC)
        .open(dev)?;
    // SAFETY: LOOP_CLR_FD takes no argument.
    let rc = unsafe { libc::ioctl(f.as_raw_fd(), LOOP_CLR_FD, 0) };
    if rc != 0 {
        let e = io::Error::last_os_error();
        if e.raw_os_error() != Some(libc::ENXIO) {
            return Err(ioctl_err("Cannot detach", dev));
        }
    }
    drop(f);
    if let Some(n) = dev
        .file_name()
        .and_then(|n| n.to_str())
        .and_then(|n| n.strip_prefix("loop"))
        .and_then(|n| n.parse().ok())
    {
        wait_detached(n, Duration::from_secs(5));
    }
    Ok(())
}

fn wait_detached(number: u32, timeout: Duration) {
    let start = Instant::now();
    let p = format!("/sys/block/loop{number}/loop/backing_file");
    while Path::new(&p).exists() && start.elapsed() < timeout {
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn struct_sizes_match_the_kernel() {
        assert_eq!(std::mem::size_of::<LoopInfo64>(), 232);
        assert_eq!(std::mem::size_of::<LoopConfig>(), 304);
    }

    fn dev_sectors(dev: &Path) -> u64 {
        let name = dev.file_name().unwrap().to_str().unwrap();
        std::fs::read_to_string(format!("/sys/block/{name}/size"))
            .unwrap()
            .trim()
            .parse()
            .unwrap()
    }

    /// A loop device keeps its size when its backing file grows, until `set_capacity` (what
    /// cryptsetup's `resize` does before it sizes a mapping over a loop device: compat-test's
    /// "Resize underlying loop device as well").
    #[test]
    fn set_capacity_grows_a_loop_device_to_its_file() {
        const T: &str = "loopdev::set_capacity";
        if !Path::new("/dev/loop-control").exists() {
            lukskit_testkit::skip_or_fail(T, "no /dev/loop-control (loop module not loaded)");
            return;
        }
        let dir = std::env::temp_dir().join(format!("lukskit-loopcap-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let img = dir.join("img");
        let f = File::create(&img).unwrap();
        f.set_len(1 << 20).unwrap();
        let dev = match LoopDevice::attach(
            &img,
            LoopOptions {
                block_size: 512,
                read_only: false,
                direct_io: false,
            },
        ) {
            Ok(d) => d,
            Err(e) => {
                lukskit_testkit::skip_or_fail(T, &format!("cannot attach a loop device: {e}"));
                return;
            }
        };
        assert!(is_loop_device(dev.path()));
        assert!(!is_loop_device(&img));
        assert_eq!(dev_sectors(dev.path()), 2048);
        f.set_len(16 << 20).unwrap();
        // The kernel does not notice by itself.
        assert_eq!(dev_sectors(dev.path()), 2048);
        set_capacity(dev.path()).unwrap();
        assert_eq!(dev_sectors(dev.path()), 32768);
        drop(dev);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
