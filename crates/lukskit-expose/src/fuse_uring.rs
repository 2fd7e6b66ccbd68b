//! FUSE over io_uring (Linux 6.14+, `CONFIG_FUSE_IO_URING`, module parameter
//! `fuse.enable_uring=Y`): requests of the FUSE file are fetched and answered through
//! `IORING_OP_URING_CMD` commands on `/dev/fuse` instead of `read(2)`/`write(2)` of it.
//!
//! After the classic `FUSE_INIT` handshake has negotiated `FUSE_OVER_IO_URING`, every
//! possible CPU gets a queue (the kernel puts a request on the queue of the CPU that
//! issued it). Each queue is served by a few threads pinned to that CPU; each thread owns
//! an io_uring (128-byte SQEs) and one ring entry: a header buffer (`fuse_uring_req_header`:
//! the request's `fuse_in_header`, the opcode's fixed argument, the entry's commit id and
//! payload size) and a payload buffer of the largest request (the data of a write, the
//! reply of a read). `FUSE_IO_URING_CMD_REGISTER` hands the entry to the kernel; its
//! completion carries a request; the answer goes back with
//! `FUSE_IO_URING_CMD_COMMIT_AND_FETCH`, which also waits for the next request: one system
//! call per request and no wake-up of another thread.
//!
//! Interrupts and forgets stay on `/dev/fuse` (the kernel sends them there), served by the
//! classic threads, which keep running. The buffers hold what the classic path's buffers
//! hold: requests' data (plaintext) and replies, never a key.

use crate::fuse::Core;
use io_uring::{cqueue, opcode, squeue, types, IoUring};
use lukskit_volume::data::AlignedBuf;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

const CMD_REGISTER: u32 = 1;
const CMD_COMMIT_AND_FETCH: u32 = 2;

/// `struct fuse_uring_req_header`: 128 bytes `in_out`, 128 bytes `op_in`,
/// `fuse_uring_ent_in_out` (flags, commit_id, payload_sz, padding, reserved).
const HDR_LEN: usize = 128 + 128 + 32;
const OP_IN: usize = 128;
const ENT: usize = 256;
/// `fuse_out_header` size.
const OUT_HDR: usize = 16;

// Opcodes (include/uapi/linux/fuse.h).
const FUSE_LOOKUP: u32 = 1;
const FUSE_GETATTR: u32 = 3;
const FUSE_SETATTR: u32 = 4;
const FUSE_OPEN: u32 = 14;
const FUSE_READ: u32 = 15;
const FUSE_WRITE: u32 = 16;
const FUSE_STATFS: u32 = 17;
const FUSE_RELEASE: u32 = 18;
const FUSE_FSYNC: u32 = 20;
const FUSE_FLUSH: u32 = 25;
const FUSE_FALLOCATE: u32 = 43;

/// At most this many threads (and entries of [`crate::fuse::MAX_IO`] bytes) in all.
const MAX_THREADS: usize = 64;
/// Threads per queue when the options do not say.
pub(crate) const DEFAULT_PER_QUEUE: usize = 16;

/// The number of queues the kernel expects: one per possible CPU.
fn possible_cpus() -> usize {
    let s = std::fs::read_to_string("/sys/devices/system/cpu/possible").unwrap_or_default();
    let max = s
        .trim()
        .split(',')
        .filter_map(|r| r.rsplit('-').next()?.parse::<usize>().ok())
        .max();
    match max {
        Some(m) => m + 1,
        None => std::thread::available_parallelism().map_or(1, |n| n.get()),
    }
}

fn pin_to(cpu: usize) {
    // SAFETY: cpu_set_t is plain data; CPU_SET stays inside it (checked bound); the call
    // only reads the set. Failure (offline CPU) is harmless: the thread runs anywhere.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if cpu < libc::CPU_SETSIZE as usize {
            libc::CPU_SET(cpu, &mut set);
            let _ = libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
        }
    }
}

/// The io_uring threads of one FUSE connection.
pub(crate) struct UringServer {
    threads: Vec<JoinHandle<()>>,
    served: Arc<AtomicU64>,
}

impl UringServer {
    /// Register `per_queue` entries on every queue of the connection behind `dev` (a
    /// duplicate of the session's `/dev/fuse` descriptor, after `FUSE_INIT`) and serve
    /// them. Returns once every entry is registered (the kernel then routes requests to
    /// the ring), or the first error.
    pub(crate) fn start(
        dev: OwnedFd,
        core: Arc<Core>,
        per_queue: usize,
        payload: usize,
    ) -> io::Result<UringServer> {
        let queues = possible_cpus();
        let per_queue = per_queue.clamp(1, (MAX_THREADS / queues).max(1));
        let dev = Arc::new(dev);
        let served = Arc::new(AtomicU64::new(0));
        let (tx, rx) = mpsc::channel::<io::Result<()>>();
        let mut threads = Vec::new();
        for qid in 0..queues {
            for _ in 0..per_queue {
                let (dev, core, served, tx) = (
                    Arc::clone(&dev),
                    Arc::clone(&core),
                    Arc::clone(&served),
                    tx.clone(),
                );
                let t = std::thread::Builder::new()
                    .name("lukskit-furing".into())
                    .spawn(move || {
                        pin_to(qid);
                        let (q, first) = match Entry::register(&dev, qid as u16, payload) {
                            Ok(q) => {
                                let _ = tx.send(Ok(()));
                                q
                            }
                            Err(e) => {
                                let _ = tx.send(Err(e));
                                return;
                            }
                        };
                        drop(tx);
                        q.serve(&dev, &core, &served, first);
                    })?;
                threads.push(t);
            }
        }
        drop(tx);
        for _ in 0..threads.len() {
            match rx.recv() {
                Ok(Ok(())) => {}
                Ok(Err(e)) => return Err(e),
                Err(_) => return Err(io::Error::other("FUSE io_uring thread ended")),
            }
        }
        Ok(UringServer { threads, served })
    }

    /// Requests answered through the ring so far.
    pub(crate) fn served(&self) -> u64 {
        self.served.load(Ordering::Relaxed)
    }

    /// Wait until `deadline` for the threads (they end when the connection does).
    pub(crate) fn join_until(self, deadline: Instant) -> bool {
        for t in self.threads {
            while !t.is_finished() {
                if Instant::now() >= deadline {
                    return false;
                }
                std::thread::sleep(Duration::from_millis(10));
            }
            let _ = t.join();
        }
        true
    }
}

/// One ring entry with the io_uring of its thread.
struct Entry {
    ring: IoUring<squeue::Entry128, cqueue::Entry>,
    header: Box<[u8; HDR_LEN]>,
    payload: AlignedBuf,
    payload_len: usize,
    qid: u16,
    /// Header and payload as the kernel's `iovec[2]` (kept alive with the entry).
    iov: Box<[libc::iovec; 2]>,
}

/// Set `len` of an SQE (the io-uring crate's `UringCmd80` has no setter for it; FUSE's
/// REGISTER takes the number of iovecs there).
fn with_len(sqe: squeue::Entry128, len: u32) -> squeue::Entry128 {
    const _: () = assert!(std::mem::size_of::<squeue::Entry128>() == 128);
    // SAFETY: Entry128 is a #[repr(C)] pair of the 64-byte `struct io_uring_sqe` and 64
    // bytes of command: plain bytes without padding or invariants, so it round-trips
    // through a byte array; `len` is the u32 at offset 24 of `struct io_uring_sqe`.
    unsafe {
        let mut b: [u8; 128] = std::mem::transmute(sqe);
        b[24..28].copy_from_slice(&len.to_ne_bytes());
        std::mem::transmute::<[u8; 128], squeue::Entry128>(b)
    }
}

fn cmd_req(commit_id: u64, qid: u16) -> [u8; 80] {
    // struct fuse_uring_cmd_req { u64 flags; u64 commit_id; u16 qid; u8 padding[6]; }
    let mut c = [0u8; 80];
    c[8..16].copy_from_slice(&commit_id.to_ne_bytes());
    c[16..18].copy_from_slice(&qid.to_ne_bytes());
    c
}

fn u32_at(b: &[u8], off: usize) -> u32 {
    u32::from_ne_bytes(b[off..off + 4].try_into().expect("4 bytes"))
}

fn u64_at(b: &[u8], off: usize) -> u64 {
    u64::from_ne_bytes(b[off..off + 8].try_into().expect("8 bytes"))
}

impl Entry {
    fn register(dev: &OwnedFd, qid: u16, payload_len: usize) -> io::Result<(Entry, Option<i32>)> {
        let ring = IoUring::<squeue::Entry128, cqueue::Entry>::builder()
            .setup_single_issuer()
            .setup_defer_taskrun()
            .build(2)?;
        let mut payload = AlignedBuf::default();
        payload.ensure(payload_len);
        let mut header = Box::new([0u8; HDR_LEN]);
        let iov = Box::new([
            libc::iovec {
                iov_base: header.as_mut_ptr().cast(),
                iov_len: HDR_LEN,
            },
            libc::iovec {
                iov_base: payload.as_mut_slice().as_mut_ptr().cast(),
                iov_len: payload_len,
            },
        ]);
        let mut e = Entry {
            ring,
            header,
            payload,
            payload_len,
            qid,
            iov,
        };
        let sqe = opcode::UringCmd80::new(types::Fd(dev.as_raw_fd()), CMD_REGISTER)
            .cmd(cmd_req(0, qid))
            .addr(Some(e.iov.as_ptr() as u64))
            .build();
        let sqe = with_len(sqe, 2);
        // The kernel answers a REGISTER sent before the connection is initialized with
        // EAGAIN; the handshake is over when this runs, but retry briefly anyway. A
        // REGISTER that fails completes inside the submitting call; one that succeeds
        // completes only with the first request.
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            e.push(&sqe)?;
            e.ring.submit()?;
            let res = e.ring.completion().next().map(|c| c.result());
            match res {
                Some(r) if r == -libc::EAGAIN && Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(5));
                }
                Some(r) if r < 0 => return Err(io::Error::from_raw_os_error(-r)),
                other => return Ok((e, other)),
            }
        }
    }

    /// Answer requests until the connection ends. `first`: a completion already taken.
    fn serve(mut self, dev: &OwnedFd, core: &Core, served: &AtomicU64, mut first: Option<i32>) {
        loop {
            let res = match first.take() {
                Some(r) => r,
                None => {
                    match self.ring.submit_and_wait(1) {
                        Ok(_) => {}
                        Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                        Err(_) => return,
                    }
                    match self.ring.completion().next() {
                        Some(c) => c.result(),
                        None => continue,
                    }
                }
            };
            if res < 0 {
                // ENOTCONN / ECANCELED: the connection is ending.
                return;
            }
            let commit_id = u64_at(&self.header[..], ENT + 8);
            self.handle(core);
            served.fetch_add(1, Ordering::Relaxed);
            let sqe = opcode::UringCmd80::new(types::Fd(dev.as_raw_fd()), CMD_COMMIT_AND_FETCH)
                .cmd(cmd_req(commit_id, self.qid))
                .build();
            if self.push(&sqe).is_err() {
                return;
            }
        }
    }

    /// Answer the request in the header and payload buffers in place.
    fn handle(&mut self, core: &Core) {
        let h = &self.header[..];
        let opcode = u32_at(h, 4);
        let unique = u64_at(h, 8);
        let nodeid = u64_at(h, 16);
        let uid = u32_at(h, 24);
        let in_sz = (u32_at(h, ENT + 16) as usize).min(self.payload_len);
        let op: [u8; 128] = h[OP_IN..OP_IN + 128].try_into().expect("128 bytes");
        let payload = &mut self.payload.as_mut_slice()[..self.payload_len];
        let res = reply(core, opcode, nodeid, uid, &op, payload, in_sz);
        let (error, out_sz) = match res {
            Ok(n) => (0i32, n.min(self.payload_len)),
            Err(e) => (-e, 0),
        };
        let h = &mut self.header[..];
        h[..OUT_HDR].fill(0);
        h[0..4].copy_from_slice(&((OUT_HDR + out_sz) as u32).to_ne_bytes());
        h[4..8].copy_from_slice(&error.to_ne_bytes());
        h[8..16].copy_from_slice(&unique.to_ne_bytes());
        h[ENT + 16..ENT + 20].copy_from_slice(&(out_sz as u32).to_ne_bytes());
    }

    fn push(&mut self, sqe: &squeue::Entry128) -> io::Result<()> {
        // SAFETY: the SQE points at `self.iov` (and through it at the header and payload),
        // which live as long as `self`, i.e. as long as the ring that uses them.
        unsafe { self.ring.submission().push(sqe) }
            .map_err(|_| io::Error::other("io_uring submission queue full"))
    }
}

/// The errno of an I/O error.
fn errno(e: &io::Error) -> i32 {
    e.raw_os_error().unwrap_or(libc::EIO)
}

/// Serve one request: `op` is its fixed argument, `payload[..in_sz]` its data. The reply's
/// data goes to `payload`; returns its length or an errno.
fn reply(
    core: &Core,
    opcode: u32,
    nodeid: u64,
    uid: u32,
    op: &[u8; 128],
    payload: &mut [u8],
    in_sz: usize,
) -> Result<usize, i32> {
    // As the classic path (fuser's `SessionACL::Owner`): requests the kernel may send
    // without the caller's uid pass, the others only for the mounting user.
    let uid_free = matches!(opcode, FUSE_READ | FUSE_WRITE | FUSE_FSYNC | FUSE_RELEASE);
    if !core.allow_other && !uid_free && uid != core.uid {
        return Err(libc::EACCES);
    }
    if opcode != FUSE_STATFS && nodeid != 1 {
        return Err(libc::ENOENT);
    }
    match opcode {
        FUSE_READ => {
            // fuse_read_in { fh, offset u64; size u32; ... }
            let offset = u64_at(op, 8);
            let size = (u32_at(op, 16) as usize).min(payload.len());
            core.read(offset, &mut payload[..size])
                .map_err(|e| errno(&e))
        }
        FUSE_WRITE => {
            // fuse_write_in { fh, offset u64; size, write_flags u32; lock_owner u64;
            // flags u32; ... }
            let offset = u64_at(op, 8);
            let size = (u32_at(op, 16) as usize).min(in_sz);
            let flags = u32_at(op, 32) as i32;
            let n = core
                .write(offset, &payload[..size], flags)
                .map_err(|e| errno(&e))?;
            // fuse_write_out { size u32; padding u32 }
            payload[..8].fill(0);
            payload[..4].copy_from_slice(&n.to_ne_bytes());
            Ok(8)
        }
        FUSE_FSYNC | FUSE_FLUSH => {
            if opcode == FUSE_FLUSH && core.read_only {
                return Ok(0);
            }
            core.backend.flush().map(|()| 0).map_err(|e| errno(&e))
        }
        FUSE_GETATTR | FUSE_SETATTR => {
            if opcode == FUSE_SETATTR {
                // fuse_setattr_in { valid u32; padding u32; fh u64; size u64; ... }
                const FATTR_SIZE: u32 = 1 << 3;
                if u32_at(op, 0) & FATTR_SIZE != 0 && u64_at(op, 16) != core.backend.size() {
                    return Err(libc::EPERM);
                }
            }
            Ok(attr_out(core, payload))
        }
        FUSE_OPEN => {
            // fuse_open_in { flags u32; open_flags u32 }
            let fopen = core.open(u32_at(op, 0) as i32)?;
            // fuse_open_out { fh u64; open_flags u32; backing_id i32 }
            payload[..16].fill(0);
            payload[8..12].copy_from_slice(&fopen.to_ne_bytes());
            Ok(16)
        }
        FUSE_RELEASE => Ok(0),
        FUSE_FALLOCATE => {
            // fuse_fallocate_in { fh, offset, length u64; mode u32; padding u32 }
            core.fallocate(u64_at(op, 8), u64_at(op, 16), u32_at(op, 24) as i32)
                .map(|()| 0)
                .map_err(|e| errno(&e))
        }
        FUSE_STATFS => {
            // fuse_kstatfs: blocks, bfree, bavail, files, ffree u64; bsize, namelen,
            // frsize, padding u32; spare[6] u32. As fuser's default reply.
            payload[..80].fill(0);
            payload[40..44].copy_from_slice(&512u32.to_ne_bytes());
            payload[44..48].copy_from_slice(&255u32.to_ne_bytes());
            Ok(80)
        }
        FUSE_LOOKUP => Err(libc::ENOENT),
        _ => Err(libc::ENOSYS),
    }
}

/// `fuse_attr_out` of the file into `out`; returns its length (104).
fn attr_out(core: &Core, out: &mut [u8]) -> usize {
    let a = core.attr();
    let secs = |t: std::time::SystemTime| {
        let d = t.duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
        (d.as_secs(), d.subsec_nanos())
    };
    let (m, mn) = secs(a.mtime);
    let o = &mut out[..104];
    o.fill(0);
    // attr_valid u64, attr_valid_nsec u32, dummy u32
    o[0..8].copy_from_slice(&crate::fuse::TTL.as_secs().to_ne_bytes());
    // fuse_attr at 16: ino, size, blocks, atime, mtime, ctime u64; atimensec, mtimensec,
    // ctimensec, mode, nlink, uid, gid, rdev, blksize, flags u32.
    let a64 = [a.ino.0, a.size, a.blocks, m, m, m];
    for (i, v) in a64.iter().enumerate() {
        o[16 + 8 * i..24 + 8 * i].copy_from_slice(&v.to_ne_bytes());
    }
    let mode = libc::S_IFREG | u32::from(a.perm);
    let a32 = [
        mn, mn, mn, mode, a.nlink, a.uid, a.gid, a.rdev, a.blksize, 0,
    ];
    for (i, v) in a32.iter().enumerate() {
        o[64 + 4 * i..68 + 4 * i].copy_from_slice(&v.to_ne_bytes());
    }
    104
}
