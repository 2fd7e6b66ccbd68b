//! The fast path of the hot-zone I/O: the data is read (and, offline, written by
//! [`super::pipeline`]) with `O_DIRECT` through a second open file description of the data
//! device, as cryptsetup's storage wrappers do. Cold,
//! large sequential reads through the page cache are limited by read-ahead (a few hundred
//! MiB/s on a virtio disk, against the GiB/s a direct read of a whole hot zone gets). Where
//! the writes go through the [`Storage`] of the caller (online, journal, data shift), a
//! direct read of a range with dirty pages is coherent (the kernel writes the range back
//! first).

use lukskit_format::io::Storage;
use std::fs::File;
use std::io;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::os::unix::io::AsRawFd;

/// Alignment of the buffers, offsets and lengths of a direct read.
pub const DIRECT_ALIGN: usize = 4096;

/// An `O_DIRECT` handle on the file `f` is open on (read-write when `f`'s file allows it, for
/// the streamed hot zones of [`super::pipeline`]; read-only otherwise), or `None` where the
/// file system or device does not take `O_DIRECT` (tmpfs).
pub fn open_direct(f: &File) -> Option<File> {
    let path = format!("/proc/self/fd/{}", f.as_raw_fd());
    let open = |write: bool| {
        std::fs::OpenOptions::new()
            .read(true)
            .write(write)
            .custom_flags(libc::O_DIRECT | libc::O_CLOEXEC)
            .open(&path)
            .ok()
    };
    open(true).or_else(|| open(false))
}

/// Whether `f` was opened for writing.
pub fn writable(f: &File) -> bool {
    // SAFETY: F_GETFL on a valid descriptor reads its flags; no memory is passed.
    let fl = unsafe { libc::fcntl(f.as_raw_fd(), libc::F_GETFL) };
    fl >= 0 && (fl & libc::O_ACCMODE) == libc::O_RDWR
}

/// The part of `buf` (grown to `len + DIRECT_ALIGN` bytes) that starts on a
/// [`DIRECT_ALIGN`] boundary and is `len` bytes long.
pub fn aligned(buf: &mut Vec<u8>, len: usize) -> &mut [u8] {
    buf.resize(len + DIRECT_ALIGN, 0);
    let pad = buf.as_ptr().align_offset(DIRECT_ALIGN).min(DIRECT_ALIGN);
    &mut buf[pad..pad + len]
}

/// Read `buf` at `offset`: directly through `direct` when given and everything is aligned,
/// through `data` otherwise (or when the direct read fails, e.g. `EINVAL` on an odd
/// alignment).
pub fn read_at(
    direct: Option<&File>,
    data: &dyn Storage,
    buf: &mut [u8],
    offset: u64,
) -> io::Result<()> {
    let aligned = (buf.as_ptr() as usize).is_multiple_of(DIRECT_ALIGN)
        && buf.len().is_multiple_of(DIRECT_ALIGN)
        && offset.is_multiple_of(DIRECT_ALIGN as u64);
    if let (Some(f), true) = (direct, aligned) {
        if FileExt::read_exact_at(f, buf, offset).is_ok() {
            return Ok(());
        }
    }
    data.read_exact_at(buf, offset)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aligned_slice() {
        let mut v = Vec::new();
        let s = aligned(&mut v, 8192);
        assert_eq!(s.len(), 8192);
        assert_eq!(s.as_ptr() as usize % DIRECT_ALIGN, 0);
    }
}
