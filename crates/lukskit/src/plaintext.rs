//! Plaintext access to an unlocked volume: at any offset, or as a `std::io` stream.

use crate::error::{Error, Result};
use lukskit_volume::data::DataVolume;
use std::io::{self, Read, Seek, SeekFrom, Write};

/// The plaintext of an unlocked volume's data area. Reads and writes at any byte offset
/// (whole sectors are decrypted and re-encrypted around unaligned ranges); `&self` methods
/// may be called from several threads at once.
#[derive(Debug)]
pub struct Plaintext {
    data: DataVolume,
}

impl Plaintext {
    pub(crate) fn new(data: DataVolume) -> Self {
        Plaintext { data }
    }

    /// Size of the plaintext in bytes.
    pub fn size(&self) -> u64 {
        self.data.size()
    }

    /// The encryption sector size in bytes.
    pub fn sector_size(&self) -> u32 {
        self.data.sector_size()
    }

    fn check(&self, offset: u64, len: usize) -> Result<()> {
        let size = self.size();
        match offset.checked_add(len as u64) {
            Some(end) if end <= size => Ok(()),
            _ => Err(Error::OutOfRange {
                offset,
                len: len as u64,
                size,
            }),
        }
    }

    /// Read `buf.len()` bytes at plaintext `offset`; [`Error::OutOfRange`] past the end.
    pub fn read_at(&self, buf: &mut [u8], offset: u64) -> Result<()> {
        self.check(offset, buf.len())?;
        Ok(self.data.read_at(buf, offset)?)
    }

    /// Write `buf` at plaintext `offset`; [`Error::OutOfRange`] past the end,
    /// [`Error::ReadOnly`] unless the volume was opened for writing.
    pub fn write_at(&self, buf: &[u8], offset: u64) -> Result<()> {
        self.check(offset, buf.len())?;
        Ok(self.data.write_at(buf, offset)?)
    }

    /// Make written data durable on the device.
    pub fn flush(&self) -> Result<()> {
        Ok(self.data.flush()?)
    }

    /// A [`Read`] + [`Write`] + [`Seek`] stream over the plaintext, starting at offset 0.
    pub fn stream(&self) -> PlaintextStream<'_> {
        PlaintextStream {
            plain: self,
            pos: 0,
        }
    }

    /// The volume-layer data view, for what the facade does not cover.
    pub fn as_data_volume(&self) -> &DataVolume {
        &self.data
    }
}

/// A cursor over [`Plaintext`]: reads stop at the end (0 bytes = end of file), writes past
/// the end fail (the data area has a fixed size).
#[derive(Debug)]
pub struct PlaintextStream<'a> {
    plain: &'a Plaintext,
    pos: u64,
}

impl Read for PlaintextStream<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let left = self.plain.size().saturating_sub(self.pos);
        let n = usize::try_from(left).unwrap_or(usize::MAX).min(buf.len());
        self.plain.read_at(&mut buf[..n], self.pos)?;
        self.pos += n as u64;
        Ok(n)
    }
}

impl Write for PlaintextStream<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.plain.write_at(buf, self.pos)?;
        self.pos += buf.len() as u64;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(self.plain.flush()?)
    }
}

impl Seek for PlaintextStream<'_> {
    fn seek(&mut self, to: SeekFrom) -> io::Result<u64> {
        let base = match to {
            SeekFrom::Start(p) => Some(p),
            SeekFrom::End(d) => self.plain.size().checked_add_signed(d),
            SeekFrom::Current(d) => self.pos.checked_add_signed(d),
        };
        let pos = base.ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                "seek before the start or overflow",
            )
        })?;
        self.pos = pos;
        Ok(pos)
    }
}
