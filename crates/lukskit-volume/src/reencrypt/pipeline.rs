//! Streaming I/O of the hot zones on the offline fast path: `O_DIRECT` reads and writes of
//! aligned chunks by two threads (one reads, one writes) while the calling thread hashes,
//! decrypts and encrypts (the cipher spreads a chunk over the cores), so the storage reads
//! the next chunk and writes the previous one while the current one is transformed.
//!
//! Only the data moves here: the order of the commits (resilience data and hot-zone metadata
//! before the first data write of a hot zone, the data synced before the segments move) is
//! the engine's, which waits for the writes ([`Io::drain`]) before it syncs. Every data write
//! is a crash-injection point as a [`crate::device::Device`] write is.

use super::fastio::DIRECT_ALIGN;
use std::collections::VecDeque;
use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::sync::mpsc::{channel, Receiver, Sender};
use std::thread::Scope;
use zeroize::Zeroize;

/// Bytes per read and write.
pub const CHUNK: usize = 4 << 20;
/// Chunk buffers of a streamed (resilience `none`) run: reads ahead plus writes in flight.
pub const POOL: usize = 8;

/// A [`DIRECT_ALIGN`]-aligned buffer of up to [`CHUNK`] bytes, wiped when dropped unless it
/// holds only ciphertext ([`Buf::holds_ciphertext`]): between the decryption and the
/// encryption it holds plaintext.
pub struct Buf {
    v: Vec<u8>,
    pad: usize,
    len: usize,
    wipe: bool,
}

impl Buf {
    fn new() -> Self {
        let v = vec![0u8; CHUNK + DIRECT_ALIGN];
        let pad = v.as_ptr().align_offset(DIRECT_ALIGN).min(DIRECT_ALIGN);
        Buf {
            v,
            pad,
            len: CHUNK,
            wipe: false,
        }
    }

    fn set_len(&mut self, len: usize) {
        debug_assert!(len <= CHUNK);
        self.len = len.min(CHUNK);
        self.wipe = true;
    }

    /// The buffer now holds only ciphertext (encrypted under the new key): no need to wipe
    /// it (1 GiB of hot zone would take a noticeable time).
    pub fn holds_ciphertext(&mut self) {
        self.wipe = false;
    }

    /// The bytes of the chunk.
    pub fn bytes(&self) -> &[u8] {
        &self.v[self.pad..self.pad + self.len]
    }

    /// The bytes of the chunk, writable.
    pub fn bytes_mut(&mut self) -> &mut [u8] {
        &mut self.v[self.pad..self.pad + self.len]
    }
}

impl Drop for Buf {
    fn drop(&mut self) {
        if self.wipe {
            self.v.zeroize();
        }
    }
}

/// Which I/O failed, and where.
#[derive(Debug)]
pub enum IoFailure {
    /// A read at this device offset.
    Read(u64, io::Error),
    /// A write at this device offset.
    Write(u64, io::Error),
}

type Done = (u64, io::Result<Buf>);

/// The reader and writer threads of one run and the chunk buffers.
pub struct Io {
    read_tx: Option<Sender<(u64, Buf)>>,
    read_rx: Receiver<Done>,
    write_tx: Option<Sender<(u64, Buf)>>,
    write_rx: Receiver<Done>,
    /// Device offsets of the reads in flight, in order.
    reads: VecDeque<u64>,
    writes: usize,
    free: Vec<Buf>,
    allocated: usize,
}

impl Io {
    /// Start the threads on `f` (opened read-write with `O_DIRECT`) in scope `s`.
    pub fn start<'s, 'e>(s: &'s Scope<'s, 'e>, f: &'e File) -> Self {
        let (read_tx, rx) = channel::<(u64, Buf)>();
        let (tx, read_rx) = channel::<Done>();
        s.spawn(move || {
            for (off, mut buf) in rx {
                let r = f.read_exact_at(buf.bytes_mut(), off).map(|_| buf);
                if tx.send((off, r)).is_err() {
                    break;
                }
            }
        });
        let (write_tx, rx) = channel::<(u64, Buf)>();
        let (tx, write_rx) = channel::<Done>();
        s.spawn(move || {
            for (off, buf) in rx {
                crate::device::crash_before_write();
                let r = f.write_all_at(buf.bytes(), off).map(|_| buf);
                if tx.send((off, r)).is_err() {
                    break;
                }
            }
        });
        Io {
            read_tx: Some(read_tx),
            read_rx,
            write_tx: Some(write_tx),
            write_rx,
            reads: VecDeque::new(),
            writes: 0,
            free: Vec::new(),
            allocated: 0,
        }
    }

    /// Reads in flight.
    pub fn reads_in_flight(&self) -> usize {
        self.reads.len()
    }

    /// A free buffer of `len` bytes: a recycled one, a new one while fewer than `limit`
    /// exist, or the next one a finished write gives back.
    fn buffer(&mut self, len: usize, limit: usize) -> Result<Buf, IoFailure> {
        self.reap(false)?;
        let mut b = match self.free.pop() {
            Some(b) => b,
            None if self.allocated < limit || self.writes == 0 => {
                self.allocated += 1;
                Buf::new()
            }
            None => {
                self.reap(true)?;
                self.free.pop().unwrap_or_else(Buf::new)
            }
        };
        b.set_len(len);
        Ok(b)
    }

    /// Collect finished writes (waiting for one when `wait`).
    fn reap(&mut self, mut wait: bool) -> Result<(), IoFailure> {
        while self.writes > 0 {
            let done = if wait {
                self.write_rx.recv().ok()
            } else {
                self.write_rx.try_recv().ok()
            };
            let Some((off, r)) = done else {
                if wait {
                    return Err(IoFailure::Write(u64::MAX, gone()));
                }
                break;
            };
            self.writes -= 1;
            wait = false;
            match r {
                Ok(b) => self.free.push(b),
                Err(e) => return Err(IoFailure::Write(off, e)),
            }
        }
        Ok(())
    }

    /// Queue a read of `len` bytes at device offset `off`; `limit` caps the buffers.
    pub fn read(&mut self, off: u64, len: usize, limit: usize) -> Result<(), IoFailure> {
        let b = self.buffer(len, limit)?;
        self.reads.push_back(off);
        self.read_tx
            .as_ref()
            .map(|t| t.send((off, b)))
            .transpose()
            .map_err(|_| IoFailure::Read(off, gone()))?;
        Ok(())
    }

    /// The oldest queued read, once done: its device offset and data.
    pub fn next_read(&mut self) -> Result<(u64, Buf), IoFailure> {
        let want = self
            .reads
            .pop_front()
            .ok_or_else(|| IoFailure::Read(u64::MAX, io::Error::other("no read in flight")))?;
        let (off, r) = self
            .read_rx
            .recv()
            .map_err(|_| IoFailure::Read(want, gone()))?;
        let b = r.map_err(|e| IoFailure::Read(off, e))?;
        if off != want {
            return Err(IoFailure::Read(off, io::Error::other("reads out of order")));
        }
        Ok((off, b))
    }

    /// Queue a write of `buf` at device offset `off`.
    pub fn write(&mut self, off: u64, buf: Buf) -> Result<(), IoFailure> {
        self.writes += 1;
        self.write_tx
            .as_ref()
            .map(|t| t.send((off, buf)))
            .transpose()
            .map_err(|_| IoFailure::Write(off, gone()))?;
        Ok(())
    }

    /// Give a buffer back without writing it.
    pub fn recycle(&mut self, buf: Buf) {
        self.free.push(buf);
    }

    /// Wait for every queued write (their data is then on the storage, not yet synced).
    pub fn drain(&mut self) -> Result<(), IoFailure> {
        while self.writes > 0 {
            self.reap(true)?;
        }
        Ok(())
    }

    /// Forget the reads in flight (their buffers are wiped when the threads drop them).
    pub fn cancel_reads(&mut self) {
        while self.reads.pop_front().is_some() {
            if let Ok((_, Ok(b))) = self.read_rx.recv() {
                self.free.push(b);
            }
        }
    }
}

impl Drop for Io {
    fn drop(&mut self) {
        // Closing the request channels ends the threads (the scope joins them).
        self.read_tx.take();
        self.write_tx.take();
    }
}

fn gone() -> io::Error {
    io::Error::other("re-encryption I/O thread ended")
}

/// Hash every `block` bytes of `data` with `hash` into `out` (`data.len() / block` digests),
/// on two threads for large inputs.
pub fn checksums(hash: lukskit_crypto::hash::HashAlg, block: usize, data: &[u8], out: &mut [u8]) {
    let ds = hash.digest_size();
    let n = data.len() / block;
    let one = |data: &[u8], out: &mut [u8]| {
        for (b, o) in data.chunks(block).zip(out.chunks_mut(ds)) {
            o.copy_from_slice(&hash.digest(&[b]));
        }
    };
    if n < 64 {
        one(data, out);
        return;
    }
    let half = n / 2;
    let (d1, d2) = data.split_at(half * block);
    let (o1, o2) = out.split_at_mut(half * ds);
    std::thread::scope(|s| {
        s.spawn(|| one(d2, o2));
        one(d1, o1);
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use lukskit_crypto::hash::HashAlg;

    #[test]
    fn checksums_on_two_threads_are_the_sequential_ones() {
        let data: Vec<u8> = (0..(1 << 20)).map(|i| (i * 7 + i / 4096) as u8).collect();
        let hash = HashAlg::from_name("sha256").unwrap();
        let mut out = vec![0u8; data.len() / 4096 * 32];
        checksums(hash, 4096, &data, &mut out);
        let want: Vec<u8> = data.chunks(4096).flat_map(|b| hash.digest(&[b])).collect();
        assert_eq!(out, want);
    }

    #[test]
    fn reads_come_back_in_order_and_writes_land() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        let len = 3 * CHUNK + 8192;
        let orig: Vec<u8> = (0..len).map(|i| (i % 251) as u8).collect();
        std::fs::write(&path, &orig).unwrap();
        let f = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(&path)
            .unwrap();
        let f = super::super::fastio::open_direct(&f).unwrap_or(f);
        std::thread::scope(|s| {
            let mut io = Io::start(s, &f);
            let mut pos = 0;
            while pos < len {
                let n = (len - pos).min(CHUNK);
                io.read(pos as u64, n, 2).ok().unwrap();
                pos += n;
            }
            let mut pos = 0;
            while pos < len {
                let (off, mut b) = io.next_read().ok().unwrap();
                assert_eq!(off, pos as u64);
                assert_eq!(b.bytes(), &orig[pos..pos + b.bytes().len()]);
                b.bytes_mut().iter_mut().for_each(|x| *x ^= 0xff);
                pos += b.bytes().len();
                io.write(off, b).ok().unwrap();
            }
            io.drain().ok().unwrap();
            assert!(io.next_read().is_err());
        });
        let got = std::fs::read(&path).unwrap();
        assert!(got.iter().zip(&orig).all(|(a, b)| *a == b ^ 0xff));
    }
}
