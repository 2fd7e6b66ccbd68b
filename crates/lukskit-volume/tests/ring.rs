//! The io_uring data path ([`SectorRing`]) against the synchronous one: the same plaintext
//! reads back, the same ciphertext lands on disk, errors come back through the completion,
//! and dropping the ring finishes every transfer first.

use lukskit_volume::data::{DataLayout, DataVolume};
use lukskit_volume::ring::{SectorRing, MAX_ASYNC};
use std::sync::mpsc;
use std::sync::Arc;

struct TempDir(std::path::PathBuf);

impl TempDir {
    fn new(tag: &str) -> Self {
        let mut b = [0u8; 8];
        lukskit_crypto::random::fill(&mut b).unwrap();
        let p = std::env::temp_dir().join(format!("lukskit-ring-{tag}-{}", hex::encode(b)));
        std::fs::create_dir(&p).unwrap();
        TempDir(p)
    }
    fn file(&self, name: &str, len: u64) -> String {
        let p = self.0.join(name);
        std::fs::File::create(&p).unwrap().set_len(len).unwrap();
        p.to_str().unwrap().to_string()
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn layout(sector_size: u32) -> DataLayout {
    DataLayout {
        cipher: "aes-xts-plain64".into(),
        offset: 8192,
        size: None,
        sector_size,
        iv_offset: 8 * u64::from(sector_size / 512),
        iv_large_sectors: false,
    }
}

fn ring(test: &str) -> Option<SectorRing> {
    match SectorRing::new() {
        Ok(r) => Some(r),
        Err(e) => {
            lukskit_testkit::skip_or_fail(
                test,
                &format!(
                    "io_uring is unavailable here ({e}): it needs Linux 5.6 or later, \
                     sysctl kernel.io_uring_disabled=0 and no seccomp filter blocking it"
                ),
            );
            None
        }
    }
}

struct Rng(u64);

impl Rng {
    fn below(&mut self, m: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % m
    }
}

fn read_async(ring: &SectorRing, vol: &Arc<DataVolume>, off: u64, len: usize) -> Vec<u8> {
    let (tx, rx) = mpsc::channel();
    ring.read(
        Arc::clone(vol),
        off,
        len,
        Box::new(move |r| tx.send(r.map(<[u8]>::to_vec)).unwrap()),
    );
    rx.recv().unwrap().unwrap()
}

/// Four threads write and read their own quarter of the volume through the ring, many
/// requests in flight at once; every read matches a model, the synchronous path reads the
/// same plaintext, and the ciphertext equals what synchronous writes of the same
/// plaintext leave.
fn ring_matches_sync_path(sector_size: u32, direct: bool) {
    let Some(ring) = ring("ring_matches_sync_path") else {
        return;
    };
    let dir = TempDir::new("match");
    let key: Vec<u8> = (0..64u8).map(|i| i.wrapping_mul(7)).collect();
    let size = 2 * 1024 * 1024u64;
    let path = dir.file("a.img", size + 8192);
    let mut vol = DataVolume::open(&path, layout(sector_size), &key, true).unwrap();
    if direct && !vol.use_direct_io() {
        lukskit_testkit::skip_or_fail(
            "ring_matches_sync_path (direct I/O)",
            &format!(
                "O_DIRECT is unsupported by the file system of {} (tmpfs before Linux 6.6); \
                 point TMPDIR at a disk file system",
                std::env::temp_dir().display()
            ),
        );
        return;
    }
    let vol = Arc::new(vol);
    let ss = u64::from(sector_size);
    let quarter = size / 4;
    let models: Vec<Vec<u8>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..4u64)
            .map(|t| {
                let (ring, vol) = (&ring, &vol);
                s.spawn(move || {
                    let base = t * quarter;
                    let mut model = vec![0u8; quarter as usize];
                    vol.read_at(&mut model, base).unwrap();
                    let mut rng = Rng(0x9e37_79b9_7f4a_7c15 ^ (t + 1));
                    let (tx, rx) = mpsc::channel::<Result<(), String>>();
                    let mut pending = 0;
                    for round in 0..200u32 {
                        let max = (MAX_ASYNC as u64 / ss).min(quarter / ss);
                        let n = (rng.below(max) + 1) * ss;
                        let off = rng.below((quarter - n) / ss + 1) * ss;
                        if round % 3 == 2 {
                            // Reads wait for the writes before them, then compare.
                            for _ in 0..pending {
                                rx.recv().unwrap().unwrap();
                            }
                            pending = 0;
                            let got = read_async(ring, vol, base + off, n as usize);
                            assert!(
                                got == model[off as usize..(off + n) as usize],
                                "thread {t} round {round}: read at {off} of {n} differs"
                            );
                        } else {
                            // Writes are not waited for: several are in flight, and one
                            // that overlaps an earlier one waits in `write` for that one's
                            // sector lock, so they land in order.
                            let data: Vec<u8> = (0..n)
                                .map(|i| (i as u8).wrapping_mul(13) ^ (round as u8) ^ (t as u8))
                                .collect();
                            model[off as usize..(off + n) as usize].copy_from_slice(&data);
                            let tx = tx.clone();
                            ring.write(
                                Arc::clone(vol),
                                &data,
                                base + off,
                                Box::new(move |r| tx.send(r.map_err(|e| e.to_string())).unwrap()),
                            );
                            pending += 1;
                        }
                    }
                    for _ in 0..pending {
                        rx.recv().unwrap().unwrap();
                    }
                    model
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let model: Vec<u8> = models.concat();
    let mut all = vec![0u8; size as usize];
    vol.read_at(&mut all, 0).unwrap();
    assert!(all == model, "synchronous read of the whole volume differs");
    vol.flush().unwrap();
    let path2 = dir.file("b.img", size + 8192);
    let sync_vol = DataVolume::open(&path2, layout(sector_size), &key, true).unwrap();
    sync_vol.write_at(&model, 0).unwrap();
    sync_vol.flush().unwrap();
    assert!(
        std::fs::read(&path).unwrap() == std::fs::read(&path2).unwrap(),
        "ciphertext written through the ring differs from the synchronous path's"
    );
}

#[test]
fn ring_matches_sync_path_buffered_512() {
    ring_matches_sync_path(512, false);
}

#[test]
fn ring_matches_sync_path_direct_4096() {
    ring_matches_sync_path(4096, true);
}

#[test]
fn ring_matches_sync_path_direct_512() {
    ring_matches_sync_path(512, true);
}

/// Many reads queued at once, then the ring is dropped: every completion has run, with the
/// right data, before the drop returns.
#[test]
fn drop_finishes_every_transfer() {
    let Some(ring) = ring("drop_finishes_every_transfer") else {
        return;
    };
    let dir = TempDir::new("drop");
    let key = [7u8; 64];
    let path = dir.file("a.img", 1024 * 1024 + 8192);
    let vol = Arc::new(DataVolume::open(&path, layout(4096), &key, true).unwrap());
    let pattern: Vec<u8> = (0..1024 * 1024).map(|i: u32| (i % 251) as u8).collect();
    vol.write_at(&pattern, 0).unwrap();
    let (tx, rx) = mpsc::channel();
    for i in 0..200u64 {
        let off = (i * 4096 * 7) % (1024 * 1024 - 8192);
        let tx = tx.clone();
        let want = pattern[off as usize..off as usize + 8192].to_vec();
        ring.read(
            Arc::clone(&vol),
            off,
            8192,
            Box::new(move |r| tx.send(r.map(|d| d == want).unwrap_or(false)).unwrap()),
        );
    }
    drop(tx);
    drop(ring);
    let results: Vec<bool> = rx.try_iter().collect();
    assert_eq!(
        results.len(),
        200,
        "every completion ran before the drop returned"
    );
    assert!(
        results.iter().all(|&ok| ok),
        "every read returned the plaintext"
    );
    assert_eq!(
        Arc::strong_count(&vol),
        1,
        "no transfer still holds the volume"
    );
}

/// Requests the ring does not take, and errors, come back through the completion.
#[test]
fn refusals_reach_the_completion() {
    let Some(ring) = ring("refusals_reach_the_completion") else {
        return;
    };
    let dir = TempDir::new("refuse");
    let key = [9u8; 64];
    let path = dir.file("a.img", 64 * 1024 + 8192);
    let rw = Arc::new(DataVolume::open(&path, layout(4096), &key, true).unwrap());
    let ro = Arc::new(DataVolume::open(&path, layout(4096), &key, false).unwrap());
    assert!(SectorRing::accepts(&rw, 4096, 8192));
    assert!(!SectorRing::accepts(&rw, 512, 4096), "unaligned offset");
    assert!(!SectorRing::accepts(&rw, 0, 1000), "partial sector");
    assert!(!SectorRing::accepts(&rw, 0, 0), "empty");
    assert!(!SectorRing::accepts(&rw, 0, MAX_ASYNC + 4096), "too large");
    type Report = Box<dyn FnOnce(Option<String>) + Send>;
    let err = |f: &dyn Fn(Report)| {
        let (tx, rx) = mpsc::channel();
        f(Box::new(move |e| tx.send(e).unwrap()));
        rx.recv().unwrap()
    };
    let e = err(&|cb| {
        ring.write(
            Arc::clone(&ro),
            &[0u8; 4096],
            0,
            Box::new(move |r| cb(r.err().map(|e| e.to_string()))),
        )
    });
    assert!(
        e.is_some_and(|m| m.contains("read-only")),
        "write to a read-only volume"
    );
    let e = err(&|cb| {
        ring.read(
            Arc::clone(&rw),
            64 * 1024,
            4096,
            Box::new(move |r| cb(r.err().map(|e| e.to_string()))),
        )
    });
    assert!(e.is_some(), "read past the end");
    let e = err(&|cb| {
        ring.read(
            Arc::clone(&rw),
            512,
            4096,
            Box::new(move |r| cb(r.err().map(|e| e.to_string()))),
        )
    });
    assert!(e.is_some(), "unaligned read");
    // Nothing was written by the refused write.
    let mut back = vec![1u8; 4096];
    rw.read_at(&mut back, 0).unwrap();
    let mut fresh = vec![2u8; 4096];
    DataVolume::open(&path, layout(4096), &key, false)
        .unwrap()
        .read_at(&mut fresh, 0)
        .unwrap();
    assert_eq!(back, fresh);
    let raw = std::fs::read(&path).unwrap();
    assert!(
        raw.iter().all(|&b| b == 0),
        "the refused write left the file untouched"
    );
}

/// A segment table (crypt / linear / zero / crypt with another sector size): the ring takes
/// only requests inside one crypt or linear segment, and what it writes and reads there
/// agrees with the synchronous path, which handles everything else.
#[test]
fn ring_on_a_segment_table() {
    use lukskit_crypto::spec::CipherSpec;
    use lukskit_crypto::SecretBuf;
    use lukskit_volume::segment::{CryptSegment, Segment, SegmentKind, SegmentTable};
    let Some(ring) = ring("ring_on_a_segment_table") else {
        return;
    };
    let dir = TempDir::new("segments");
    let path = dir.file("s.img", 512 * 1024);
    let crypt = |start, len, ss, key: u8, dev| Segment {
        start,
        len,
        kind: SegmentKind::Crypt(CryptSegment {
            cipher: CipherSpec::parse("aes-xts-plain64").unwrap(),
            key: SecretBuf::from_vec(vec![key; 64]),
            sector_size: ss,
            iv_offset: 16,
            iv_large_sectors: false,
            device_offset: dev,
            digest: None,
        }),
    };
    let k = 1024u64;
    let table = SegmentTable::new(vec![
        crypt(0, 64 * k, 4096, 1, 256 * k),
        Segment {
            start: 64 * k,
            len: 64 * k,
            kind: SegmentKind::Linear { device_offset: 0 },
        },
        Segment {
            start: 128 * k,
            len: 32 * k,
            kind: SegmentKind::Zero,
        },
        crypt(160 * k, 96 * k, 512, 2, 64 * k),
    ])
    .unwrap();
    let vol = Arc::new(DataVolume::open_table(&path, table, true).unwrap());
    let size = vol.size() as usize;
    assert!(SectorRing::accepts(&vol, 0, 64 * 1024));
    assert!(SectorRing::accepts(&vol, 64 * 1024, 8192), "linear");
    assert!(
        !SectorRing::accepts(&vol, 60 * 1024, 8192),
        "crosses a boundary"
    );
    assert!(!SectorRing::accepts(&vol, 128 * 1024, 4096), "zero segment");
    let mut model = vec![0u8; size];
    vol.read_at(&mut model, 0).unwrap();
    let mut rng = Rng(0x5eed_0123_4567_89ab);
    for round in 0..300 {
        let off = rng.below(size as u64 / 4096) * 4096;
        let len = ((rng.below(6) + 1) * 4096).min(size as u64 - off) as usize;
        let data: Vec<u8> = (0..len).map(|i| (i as u8) ^ (round as u8)).collect();
        let via_ring = SectorRing::accepts(&vol, off, len);
        if round % 2 == 0 {
            if via_ring {
                let (tx, rx) = mpsc::channel();
                ring.write(
                    Arc::clone(&vol),
                    &data,
                    off,
                    Box::new(move |r| tx.send(r).unwrap()),
                );
                rx.recv().unwrap().unwrap();
            } else {
                vol.write_at(&data, off).unwrap();
            }
            model[off as usize..off as usize + len].copy_from_slice(&data);
            model[128 * 1024..160 * 1024].fill(0);
        } else {
            let got = if via_ring {
                read_async(&ring, &vol, off, len)
            } else {
                let mut b = vec![0u8; len];
                vol.read_at(&mut b, off).unwrap();
                b
            };
            assert!(
                got == model[off as usize..off as usize + len],
                "round {round}"
            );
        }
    }
    let mut all = vec![0u8; size];
    vol.read_at(&mut all, 0).unwrap();
    assert!(all == model);
}
