//! The conversion pipeline: one reader, `workers` engine threads each processing whole
//! chunks (single-threaded engine calls, so no thread idles or spins between chunks), one
//! writer. Buffers are recycled; at most `2 * workers + 2` chunks are in flight.

use super::ImageError;
use crate::data::DataVolume;
use std::fs::File;
use std::io::{Read, Write};
use std::os::unix::fs::FileExt;
use std::sync::mpsc::sync_channel;

/// Size of one streamed chunk (a multiple of every sector size). Small enough that the
/// buffers in flight stay in the CPU caches between the read, the engine and the write.
pub const CHUNK: usize = 1024 * 1024;
/// Granularity of hole detection in decrypted output.
pub const HOLE_BLOCK: usize = 4096;

/// A chunk moving through the pipeline: buffer, valid length, plaintext offset.
struct Chunk {
    buf: Vec<u8>,
    len: usize,
    offset: u64,
}

/// Fill `buf` from `r` until it is full or the input ends; returns the bytes read.
fn read_full(r: &mut dyn Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match r.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

/// Run the pipeline. `read` fills a buffer and returns (length to process, plaintext
/// offset) or None at the end; `write` receives processed chunks in any order. A decryption
/// continues through `upper` (the further tables of a stacked volume), in order.
fn run_pipeline<R, W>(
    dv: &DataVolume,
    upper: &[DataVolume],
    workers: usize,
    encrypt: bool,
    mut read: R,
    mut write: W,
) -> Result<(), ImageError>
where
    R: FnMut(&mut [u8]) -> Result<Option<(usize, u64)>, ImageError> + Send,
    W: FnMut(&Chunk) -> Result<(), ImageError>,
{
    let in_flight = 2 * workers + 2;
    let (free_tx, free_rx) = sync_channel::<Vec<u8>>(in_flight);
    for _ in 0..in_flight {
        free_tx
            .send(vec![0u8; CHUNK])
            .map_err(|_| ImageError::Pipeline("buffer pool"))?;
    }
    let (work_tx, work_rx) = sync_channel::<Chunk>(in_flight);
    let (done_tx, done_rx) = sync_channel::<Result<Chunk, ImageError>>(in_flight);
    let work_rx = std::sync::Mutex::new(work_rx);
    std::thread::scope(|s| -> Result<(), ImageError> {
        let reader = s.spawn(move || -> Result<(), ImageError> {
            while let Ok(mut buf) = free_rx.recv() {
                let Some((len, offset)) = read(&mut buf)? else {
                    break;
                };
                work_tx
                    .send(Chunk { buf, len, offset })
                    .map_err(|_| ImageError::Pipeline("engine"))?;
            }
            Ok(())
        });
        for _ in 0..workers {
            let (work_rx, done_tx) = (&work_rx, done_tx.clone());
            s.spawn(move || loop {
                let next = work_rx
                    .lock()
                    .map_err(|_| ())
                    .and_then(|r| r.recv().map_err(|_| ()));
                let Ok(mut c) = next else { break };
                let r = if encrypt {
                    dv.encrypt_sectors(&mut c.buf[..c.len], c.offset)
                } else {
                    std::iter::once(dv)
                        .chain(upper)
                        .try_for_each(|v| v.decrypt_sectors(&mut c.buf[..c.len], c.offset))
                };
                if done_tx
                    .send(r.map(|()| c).map_err(ImageError::from))
                    .is_err()
                {
                    break;
                }
            });
        }
        drop(done_tx);
        let mut result = Ok(());
        for c in done_rx.iter() {
            match c.and_then(|c| write(&c).map(|()| c)) {
                Ok(c) => {
                    // The pool is gone once the reader has finished.
                    let _ = free_tx.send(c.buf);
                }
                Err(e) => {
                    result = Err(e);
                    break;
                }
            }
        }
        // Unblock everyone: no more buffers, no more results wanted.
        drop(free_tx);
        drop(done_rx);
        let r = reader.join().map_err(|_| ImageError::Pipeline("reader"))?;
        result?;
        r
    })
}

/// Encrypt a plaintext stream (`input`, called `name` in errors) into the data area of `dv`
/// (writable), zero-padding the last chunk to a whole sector. `interrupted` is asked before
/// each chunk is read (true: stop with [`ImageError::Interrupted`]); `progress` is told of
/// each chunk written. Returns the number of plaintext bytes.
pub fn encrypt_stream(
    mut input: Box<dyn Read + Send>,
    name: &str,
    dv: &DataVolume,
    workers: usize,
    interrupted: fn() -> bool,
    progress: &mut dyn FnMut(u64),
) -> Result<u64, ImageError> {
    let ss = dv.sector_size() as usize;
    let mut offset = 0u64;
    let mut ended = false;
    let total = &mut offset;
    run_pipeline(
        dv,
        &[],
        workers,
        true,
        |buf| {
            if ended {
                return Ok(None);
            }
            if interrupted() {
                return Err(ImageError::Interrupted);
            }
            let n = read_full(&mut *input, buf).map_err(|e| ImageError::io("Reading", name, e))?;
            if n == 0 {
                return Ok(None);
            }
            let padded = n.div_ceil(ss) * ss;
            buf[n..padded].fill(0);
            ended = n < buf.len();
            let at = *total;
            *total += n as u64;
            Ok(Some((padded, at)))
        },
        |c| {
            dv.pwrite(&c.buf[..c.len], c.offset)?;
            progress(c.len as u64);
            Ok(())
        },
    )?;
    Ok(offset)
}

/// Where decrypted data goes.
pub enum Sink<'a> {
    /// A regular file or a block device, written at the plaintext offsets; `sparse`: blocks
    /// of zeros become holes (a new regular file only).
    File {
        /// The file.
        file: &'a File,
        /// Whether to leave holes.
        sparse: bool,
    },
    /// A stream (standard output): written in order.
    Stream(&'a mut dyn Write),
}

/// Decrypt the first `total` bytes of the data area of `dv` (continuing through `upper`,
/// the further tables of a stacked volume) into `sink`, called `dst_name` in errors;
/// `progress` is told of each chunk written.
pub fn decrypt_stream(
    dv: &DataVolume,
    upper: &[DataVolume],
    total: u64,
    sink: Sink<'_>,
    dst_name: &str,
    workers: usize,
    progress: &mut dyn FnMut(u64),
) -> Result<(), ImageError> {
    let mut offset = 0u64;
    // A stream needs the chunks in order: park early ones until their turn.
    let mut next_out = 0u64;
    let mut parked: std::collections::BTreeMap<u64, Vec<u8>> = Default::default();
    let mut sink = sink;
    run_pipeline(
        dv,
        upper,
        workers,
        false,
        |buf| {
            if offset >= total {
                return Ok(None);
            }
            let n = (total - offset).min(buf.len() as u64) as usize;
            dv.pread(&mut buf[..n], offset)?;
            let at = offset;
            offset += n as u64;
            Ok(Some((n, at)))
        },
        |c| {
            let data = &c.buf[..c.len];
            let io = |e: std::io::Error| ImageError::io("Writing", dst_name, e);
            match &mut sink {
                Sink::File { file, sparse: true } => {
                    write_sparse(file, data, c.offset).map_err(io)?
                }
                Sink::File { file, .. } => file.write_all_at(data, c.offset).map_err(io)?,
                Sink::Stream(out) => {
                    parked.insert(c.offset, data.to_vec());
                    while let Some(d) = parked.remove(&next_out) {
                        out.write_all(&d).map_err(io)?;
                        next_out += d.len() as u64;
                    }
                }
            }
            progress(c.len as u64);
            Ok(())
        },
    )
}

/// Write `data` at `offset`, leaving holes for all-zero blocks ([`HOLE_BLOCK`]) of a sparse
/// regular file.
pub fn write_sparse(file: &File, data: &[u8], offset: u64) -> std::io::Result<()> {
    let mut run_start: Option<usize> = None;
    let mut at = 0;
    while at < data.len() {
        let end = (at + HOLE_BLOCK).min(data.len());
        let zero = is_zero(&data[at..end]);
        match (zero, run_start) {
            (false, None) => run_start = Some(at),
            (true, Some(s)) => {
                file.write_all_at(&data[s..at], offset + s as u64)?;
                run_start = None;
            }
            _ => {}
        }
        at = end;
    }
    if let Some(s) = run_start {
        file.write_all_at(&data[s..], offset + s as u64)?;
    }
    Ok(())
}

/// Whether every byte of `b` is zero.
pub fn is_zero(b: &[u8]) -> bool {
    // Word-wise; the compiler vectorises the fold.
    let (pre, mid, post) = {
        // SAFETY: any byte pattern is a valid u64; align_to only reinterprets the aligned middle.
        unsafe { b.align_to::<u64>() }
    };
    pre.iter().all(|&x| x == 0)
        && mid.iter().fold(0u64, |acc, &w| acc | w) == 0
        && post.iter().all(|&x| x == 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zero_detection() {
        let mut b = vec![0u8; 10_000];
        assert!(is_zero(&b));
        for at in [0, 1, 7, 8, 4095, 9_999] {
            b[at] = 1;
            assert!(!is_zero(&b), "{at}");
            assert!(is_zero(&b[..at]));
            b[at] = 0;
        }
    }
}
