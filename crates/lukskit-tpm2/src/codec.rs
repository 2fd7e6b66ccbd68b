//! A small bounded codec for the TPM 2.0 wire format (big-endian integers, `TPM2B_*`
//! size-prefixed buffers). Every read is checked against the end of the input.

use crate::error::{Result, Tpm2Error};

/// The largest `TPM2B` lukskit accepts from a TPM or a token (the TPM's own limit for
/// `TPM2B_PUBLIC`/`TPM2B_PRIVATE` is far smaller; RSA-4096 keys are 512 bytes).
pub const MAX_TPM2B: usize = 2048;

/// An append-only command buffer.
#[derive(Default)]
pub struct Writer {
    /// The bytes written so far.
    pub buf: Vec<u8>,
}

impl Writer {
    /// A new empty buffer.
    pub fn new() -> Self {
        Self::default()
    }
    /// Append one byte.
    pub fn u8(&mut self, v: u8) -> &mut Self {
        self.buf.push(v);
        self
    }
    /// Append a big-endian `u16`.
    pub fn u16(&mut self, v: u16) -> &mut Self {
        self.buf.extend_from_slice(&v.to_be_bytes());
        self
    }
    /// Append a big-endian `u32`.
    pub fn u32(&mut self, v: u32) -> &mut Self {
        self.buf.extend_from_slice(&v.to_be_bytes());
        self
    }
    /// Append raw bytes.
    pub fn bytes(&mut self, v: &[u8]) -> &mut Self {
        self.buf.extend_from_slice(v);
        self
    }
    /// Append a `TPM2B`: a `u16` size and the bytes. Sizes past `u16` are a caller bug;
    /// they are truncated to an empty buffer the TPM refuses.
    pub fn tpm2b(&mut self, v: &[u8]) -> &mut Self {
        match u16::try_from(v.len()) {
            Ok(n) => {
                self.u16(n);
                self.bytes(v)
            }
            Err(_) => self.u16(0),
        }
    }
}

/// A bounded reader over a response or a token blob.
pub struct Reader<'a> {
    data: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    /// Read `data` from its start.
    pub fn new(data: &'a [u8]) -> Self {
        Reader { data, pos: 0 }
    }
    /// How many bytes are left.
    pub fn remaining(&self) -> usize {
        self.data.len() - self.pos
    }
    /// The bytes from position `from` to the current position.
    pub fn since(&self, from: usize) -> &'a [u8] {
        &self.data[from..self.pos]
    }
    /// The current position.
    pub fn pos(&self) -> usize {
        self.pos
    }
    /// The next `n` bytes.
    pub fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        if self.remaining() < n {
            return Err(Tpm2Error::BadResponse("truncated"));
        }
        let s = &self.data[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }
    /// One byte.
    pub fn u8(&mut self) -> Result<u8> {
        Ok(self.take(1)?[0])
    }
    /// A big-endian `u16`.
    pub fn u16(&mut self) -> Result<u16> {
        let b = self.take(2)?;
        Ok(u16::from_be_bytes([b[0], b[1]]))
    }
    /// A big-endian `u32`.
    pub fn u32(&mut self) -> Result<u32> {
        let b = self.take(4)?;
        Ok(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }
    /// A `TPM2B` of at most `max` bytes (and never more than [`MAX_TPM2B`]).
    pub fn tpm2b(&mut self, max: usize) -> Result<&'a [u8]> {
        let n = usize::from(self.u16()?);
        if n > max.min(MAX_TPM2B) {
            return Err(Tpm2Error::BadResponse("buffer too large"));
        }
        self.take(n)
    }
    /// Fail unless everything was read.
    pub fn finish(&self) -> Result<()> {
        if self.remaining() != 0 {
            return Err(Tpm2Error::BadResponse("trailing bytes"));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reader_is_bounded() {
        let mut r = Reader::new(&[0, 3, 1, 2]);
        assert!(r.tpm2b(100).is_err());
        let mut r = Reader::new(&[0, 2, 1, 2]);
        assert_eq!(r.tpm2b(100).unwrap(), &[1, 2]);
        r.finish().unwrap();
        let mut r = Reader::new(&[0, 2, 1, 2]);
        assert!(r.tpm2b(1).is_err());
        let mut r = Reader::new(&[1]);
        assert!(r.u16().is_err());
    }

    #[test]
    fn writer_tpm2b() {
        let mut w = Writer::new();
        w.tpm2b(&[9, 8]).u32(1);
        assert_eq!(w.buf, [0, 2, 9, 8, 0, 0, 0, 1]);
    }
}
