//! The minimal storage interface the on-disk layer reads and writes through.

use std::io;

/// Positioned I/O on a device, file or memory buffer.
///
/// Implementations must not change any file position (all calls are positioned) so that a
/// `&dyn Storage` can be shared.
pub trait Storage {
    /// Read exactly `buf.len()` bytes at byte offset `offset`; reading past the end is an error
    /// of kind `UnexpectedEof`.
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()>;
    /// Write all of `buf` at byte offset `offset`.
    fn write_all_at(&self, buf: &[u8], offset: u64) -> io::Result<()>;
    /// Make written data durable (`fdatasync`/`fsync`).
    fn sync(&self) -> io::Result<()>;
    /// Current size in bytes.
    fn size(&self) -> io::Result<u64>;
    /// Make written data durable without the file's metadata (`fdatasync`); by default
    /// [`Storage::sync`].
    fn sync_data(&self) -> io::Result<()> {
        self.sync()
    }
    /// Give back `[offset, offset + len)`: afterwards it reads as zeros (a hole punched in an
    /// image file). By default an error of kind `Unsupported`: storages that cannot
    /// deallocate keep their bytes.
    fn discard(&self, offset: u64, len: u64) -> io::Result<()> {
        let _ = (offset, len);
        Err(io::ErrorKind::Unsupported.into())
    }
    /// The local file or block device behind this storage, when there is one: it lets the
    /// layers above use what only a local descriptor has (`O_DIRECT`, io_uring, `flock`,
    /// block device ioctls). `None` (the default) for anything else (memory, a network
    /// export); everything then goes through the positioned calls above.
    fn local_file(&self) -> Option<&std::fs::File> {
        None
    }
}

/// A shared storage is a storage (a volume's header and data layers share one).
impl<T: Storage + ?Sized> Storage for std::sync::Arc<T> {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        (**self).read_exact_at(buf, offset)
    }
    fn write_all_at(&self, buf: &[u8], offset: u64) -> io::Result<()> {
        (**self).write_all_at(buf, offset)
    }
    fn sync(&self) -> io::Result<()> {
        (**self).sync()
    }
    fn size(&self) -> io::Result<u64> {
        (**self).size()
    }
    fn sync_data(&self) -> io::Result<()> {
        (**self).sync_data()
    }
    fn discard(&self, offset: u64, len: u64) -> io::Result<()> {
        (**self).discard(offset, len)
    }
    fn local_file(&self) -> Option<&std::fs::File> {
        (**self).local_file()
    }
}

impl Storage for std::fs::File {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        std::os::unix::fs::FileExt::read_exact_at(self, buf, offset)
    }
    fn write_all_at(&self, buf: &[u8], offset: u64) -> io::Result<()> {
        std::os::unix::fs::FileExt::write_all_at(self, buf, offset)
    }
    fn sync(&self) -> io::Result<()> {
        self.sync_all()
    }
    fn sync_data(&self) -> io::Result<()> {
        std::fs::File::sync_data(self)
    }
    /// `fallocate(PUNCH_HOLE | KEEP_SIZE)`: block devices and file systems without hole
    /// punching give an error (`EOPNOTSUPP`).
    fn discard(&self, offset: u64, len: u64) -> io::Result<()> {
        punch_hole(self, offset, len)
    }
    fn local_file(&self) -> Option<&std::fs::File> {
        Some(self)
    }
    /// `fstat` for a regular file, the `BLKGETSIZE64` ioctl for a block device: neither
    /// moves the file position (which other users of a shared `File` rely on).
    fn size(&self) -> io::Result<u64> {
        use std::os::unix::fs::FileTypeExt;
        let md = self.metadata()?;
        if md.file_type().is_block_device() {
            block_device_size(self)
        } else {
            Ok(md.len())
        }
    }
}

/// Size in bytes of the open block device `f` (the kernel's `BLKGETSIZE64`).
#[allow(unsafe_code)]
fn block_device_size(f: &std::fs::File) -> io::Result<u64> {
    use std::os::fd::AsRawFd;
    /// `_IOR(0x12, 114, size_t)` from linux/fs.h, encoded for this architecture.
    const BLKGETSIZE64: libc::Ioctl = libc::_IOR::<libc::size_t>(0x12, 114);
    let mut size: u64 = 0;
    // SAFETY: the descriptor belongs to `f`, which outlives the call; the kernel's
    // BLKGETSIZE64 handler writes one u64 through the pointer, which points to a live,
    // aligned, writable u64 owned by this frame.
    let r = unsafe { libc::ioctl(f.as_raw_fd(), BLKGETSIZE64, &mut size as *mut u64) };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(size)
}

/// Punch `[offset, offset + len)` out of `f` (the file keeps its size).
#[allow(unsafe_code)]
fn punch_hole(f: &std::fs::File, offset: u64, len: u64) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    let (Ok(at), Ok(n)) = (libc::off_t::try_from(offset), libc::off_t::try_from(len)) else {
        return Err(io::ErrorKind::InvalidInput.into());
    };
    // SAFETY: fallocate on the descriptor of `f`, which outlives the call; no memory is
    // passed.
    let rc = unsafe {
        libc::fallocate(
            f.as_raw_fd(),
            libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE,
            at,
            n,
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// An in-memory storage, for tests and for building headers before writing them.
#[derive(Debug, Default)]
pub struct MemStorage {
    data: std::sync::Mutex<Vec<u8>>,
}

impl MemStorage {
    /// A zero-filled storage of `len` bytes.
    pub fn new(len: usize) -> Self {
        Self::from_vec(vec![0; len])
    }
    /// A storage holding `data`.
    pub fn from_vec(data: Vec<u8>) -> Self {
        MemStorage {
            data: std::sync::Mutex::new(data),
        }
    }
    /// A copy of the contents.
    pub fn to_vec(&self) -> Vec<u8> {
        self.data.lock().unwrap().clone()
    }
}

impl Storage for MemStorage {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        let d = self.data.lock().unwrap();
        let start = usize::try_from(offset).map_err(|_| io::ErrorKind::UnexpectedEof)?;
        let end = start
            .checked_add(buf.len())
            .filter(|&e| e <= d.len())
            .ok_or(io::ErrorKind::UnexpectedEof)?;
        buf.copy_from_slice(&d[start..end]);
        Ok(())
    }
    fn write_all_at(&self, buf: &[u8], offset: u64) -> io::Result<()> {
        let mut d = self.data.lock().unwrap();
        let start = usize::try_from(offset).map_err(|_| io::ErrorKind::InvalidInput)?;
        let end = start + buf.len();
        if end > d.len() {
            d.resize(end, 0);
        }
        d[start..end].copy_from_slice(buf);
        Ok(())
    }
    fn sync(&self) -> io::Result<()> {
        Ok(())
    }
    fn size(&self) -> io::Result<u64> {
        Ok(self.data.lock().unwrap().len() as u64)
    }
    /// Zeroes the range (the part inside the current size).
    fn discard(&self, offset: u64, len: u64) -> io::Result<()> {
        let mut d = self.data.lock().unwrap();
        let size = d.len() as u64;
        let start = offset.min(size) as usize;
        let end = offset.saturating_add(len).min(size) as usize;
        d[start..end].fill(0);
        Ok(())
    }
}
