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
}
