//! The one file a FUSE export serves, as both request paths see it: the classic
//! `/dev/fuse` threads ([`crate::fuse`]) and the FUSE-over-io_uring ones (`fuse_uring`).
//! Its attributes, and the checks and transfers every request of either path goes through.

use crate::backend::BlockBackend;
use fuser::{Errno, FileAttr, FileType, FopenFlags, INodeNo};
use std::io;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

/// The inode of the file (the mount's root).
pub(crate) const ROOT: INodeNo = INodeNo(1);
/// How long the kernel may cache the file's attributes.
pub(crate) const TTL: Duration = Duration::from_secs(1);

/// The file, shared by the classic request threads and the io_uring ones.
pub(crate) struct Core {
    pub(crate) backend: Arc<dyn BlockBackend>,
    pub(crate) read_only: bool,
    pub(crate) direct_io: bool,
    pub(crate) allow_other: bool,
    pub(crate) uid: u32,
    pub(crate) gid: u32,
    pub(crate) mtime: SystemTime,
    /// READ and WRITE requests answered by the classic `/dev/fuse` threads.
    pub(crate) classic_data_requests: std::sync::atomic::AtomicU64,
}

/// Whether `pid` (a thread id, as FUSE requests carry it) is a thread of this process.
fn own_thread(pid: u32) -> bool {
    pid != 0 && std::path::Path::new(&format!("/proc/self/task/{pid}")).exists()
}

impl Core {
    pub(crate) fn attr(&self) -> FileAttr {
        let size = self.backend.size();
        FileAttr {
            ino: ROOT,
            size,
            blocks: size.div_ceil(512),
            atime: self.mtime,
            mtime: self.mtime,
            ctime: self.mtime,
            crtime: self.mtime,
            kind: FileType::RegularFile,
            perm: if self.read_only { 0o400 } else { 0o600 },
            nlink: 1,
            uid: self.uid,
            gid: self.gid,
            rdev: 0,
            blksize: self.backend.block_size().max(4096),
            flags: 0,
        }
    }

    pub(crate) fn check_ino(ino: INodeNo) -> Result<(), Errno> {
        if ino == ROOT {
            Ok(())
        } else {
            Err(Errno::ENOENT)
        }
    }

    /// Read at `offset` into `buf` (short at the end of the file); returns the length.
    pub(crate) fn read(&self, offset: u64, buf: &mut [u8]) -> io::Result<usize> {
        let total = self.backend.size();
        if offset >= total {
            return Ok(0);
        }
        let n = (buf.len() as u64).min(total - offset) as usize;
        self.backend.read_at(&mut buf[..n], offset)?;
        Ok(n)
    }

    /// Write `data` at `offset` for a file opened with `flags` (`O_SYNC`/`O_DSYNC`: durable
    /// on return); returns the length written.
    pub(crate) fn write(&self, offset: u64, data: &[u8], flags: i32) -> io::Result<u32> {
        self.check_write(offset, data.len())
            .map_err(|e| io::Error::from_raw_os_error(e.code()))?;
        self.backend.write_at(data, offset)?;
        if flags & (libc::O_SYNC | libc::O_DSYNC) != 0 {
            self.backend.flush()?;
        }
        Ok(data.len() as u32)
    }

    pub(crate) fn check_write(&self, offset: u64, len: usize) -> Result<(), Errno> {
        if self.read_only {
            return Err(Errno::EROFS);
        }
        let fits = offset
            .checked_add(len as u64)
            .is_some_and(|end| end <= self.backend.size());
        if fits {
            Ok(())
        } else {
            Err(Errno::ENOSPC)
        }
    }

    /// The `FOPEN_*` flags of an open with `flags`, or the errno refusing it.
    pub(crate) fn open(&self, flags: i32) -> Result<u32, i32> {
        if self.read_only && flags & libc::O_ACCMODE != libc::O_RDONLY {
            return Err(libc::EROFS);
        }
        let fl = if self.direct_io {
            FopenFlags::FOPEN_DIRECT_IO | FopenFlags::FOPEN_PARALLEL_DIRECT_WRITES
        } else {
            FopenFlags::FOPEN_KEEP_CACHE
        };
        Ok(fl.bits())
    }

    /// Whether a `statfs(2)` of the mount from process (thread) `pid` is answered.
    ///
    /// The loop driver advertises discards on a loop device over a file whose file system
    /// has `fallocate` and answers `statfs` (drivers/block/loop.c, `loop_get_discard_config`:
    /// the granularity is the file system's block size); FUSE always has `fallocate`. So
    /// that a loop device over a file whose backend refuses discards does not advertise any
    /// (dm-crypt without `allow_discards` has `max_discard_sectors` 0, and `fstrim` on it
    /// says "the discard operation is not supported"), the `statfs` the serving process
    /// itself makes while it configures its loop device fails. Every other process (`df`)
    /// gets an answer.
    pub(crate) fn statfs_allowed(&self, pid: u32) -> bool {
        self.backend.takes_discards() || !own_thread(pid)
    }

    /// `fallocate(2)` of the file: punching holes discards, zeroing writes zeroes,
    /// allocation inside the file does nothing.
    pub(crate) fn fallocate(&self, offset: u64, length: u64, mode: i32) -> io::Result<()> {
        let err = |e: i32| Err(io::Error::from_raw_os_error(e));
        if self.read_only {
            return err(libc::EROFS);
        }
        let end = offset.checked_add(length);
        let inside = end.is_some_and(|e| e <= self.backend.size());
        if mode & libc::FALLOC_FL_PUNCH_HOLE != 0 {
            if !inside {
                return err(libc::EINVAL);
            }
            self.backend.discard(offset, length)
        } else if mode & libc::FALLOC_FL_ZERO_RANGE != 0 {
            if !inside {
                return err(libc::EINVAL);
            }
            self.backend.write_zeroes(offset, length)
        } else if mode & !libc::FALLOC_FL_KEEP_SIZE == 0 {
            // Allocation: everything inside the volume is allocated already.
            if inside {
                Ok(())
            } else {
                err(libc::EFBIG)
            }
        } else {
            err(libc::EOPNOTSUPP)
        }
    }
}
