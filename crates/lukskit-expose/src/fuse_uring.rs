//! FUSE over io_uring (Linux 6.14+, `CONFIG_FUSE_IO_URING`, module parameter
//! `fuse.enable_uring=Y`): requests of the FUSE file are fetched and answered through
//! `IORING_OP_URING_CMD` commands on `/dev/fuse` instead of `read(2)`/`write(2)` of it.
//!
//! After the classic `FUSE_INIT` handshake has negotiated `FUSE_OVER_IO_URING`, every
//! possible CPU gets a queue (the kernel puts a request on the queue of the CPU that
//! issued it). Each queue is served by two threads (free to run on any CPU; pinned to the
//! queue's with `LUKSKIT_FUSE_URING_PIN=1`)
//! (`LUKSKIT_FUSE_URING_THREADS`: two, so that one thread serving a request synchronously
//! or descheduled does not stall its queue); each thread owns an io_uring (128-byte SQEs)
//! and several ring entries (8, `LUKSKIT_FUSE_URING_DEPTH`; at most 64 entries in all): a header
//! buffer (`fuse_uring_req_header`: the request's `fuse_in_header`, the opcode's fixed
//! argument, the entry's commit id and payload size) and a payload buffer of the largest
//! request (the data of a write, the reply of a read). `FUSE_IO_URING_CMD_REGISTER` hands
//! an entry to the kernel; its completion carries a request; the answer goes back with
//! `FUSE_IO_URING_CMD_COMMIT_AND_FETCH`, which also waits for the next request.
//!
//! The backing store's I/O goes on the same ring: a read of whole sectors becomes a read of
//! the ciphertext straight into the entry's payload buffer, decrypted there when it
//! completes, then committed; a write is encrypted in place in the payload buffer and
//! written from it; `fsync`, `flush` and `O_SYNC`/`O_DSYNC` writes become an `fdatasync`
//! on the ring. So one thread keeps all its entries' requests in flight and sleeps only
//! when none of them has anything to do, with no copy of the data. Requests the volume
//! cannot take that way (partial sectors, a suspended or held volume, another write on the
//! same sectors with nothing of this thread in flight) are served synchronously, after the
//! thread's own transfers in flight have completed (so a suspend, which waits for them,
//! is never blocked by a thread that waits for the resume).
//!
//! Interrupts and forgets stay on `/dev/fuse` (the kernel sends them there), served by the
//! classic threads, which keep running. The buffers hold what the classic path's buffers
//! hold: requests' data (plaintext) and replies, never a key.

use crate::fuse_core::{Core, TTL};
use io_uring::{cqueue, opcode, squeue, types, IoUring};
use lukskit_volume::data::{AlignedBuf, DataVolume};
use lukskit_volume::ring::{SectorRing, Transfer};
use std::collections::VecDeque;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
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

/// At most this many ring entries (of [`crate::fuse::MAX_IO`] bytes of payload each) in all.
const MAX_ENTRIES: usize = 64;
/// Threads per queue when the options do not say.
pub(crate) const DEFAULT_PER_QUEUE: usize = 2;
/// Ring entries per thread when `LUKSKIT_FUSE_URING_DEPTH` does not say.
pub(crate) const DEFAULT_DEPTH: usize = 8;
/// Whether each thread is kept on its queue's CPU when `LUKSKIT_FUSE_URING_PIN` does not say
/// (`1` pins them). Not by default: on a 2-CPU machine where the loop device's worker and
/// the application share the CPUs, a pinned thread cannot leave a busy one (bench/
/// fuse-pinning.md, 2026-11-28: random 4 KiB 0.33x/0.48x of the plain loop device pinned,
/// 0.62x/0.68x free, medians of three rounds).
pub(crate) const DEFAULT_PIN: bool = false;

/// `user_data` tags (the entry's index is in the low 32 bits).
const TAG_FETCH: u64 = 0;
const TAG_IO: u64 = 1 << 32;
const TAG_SYNC: u64 = 2 << 32;

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
    /// Register `per_queue` threads of `depth` entries each on every queue of the
    /// connection behind `dev` (a duplicate of the session's `/dev/fuse` descriptor, after
    /// `FUSE_INIT`) and serve them; `pin` keeps each thread on its queue's CPU. Returns once every entry is registered (the kernel
    /// then routes requests to the ring), or the first error.
    pub(crate) fn start(
        dev: OwnedFd,
        core: Arc<Core>,
        per_queue: usize,
        depth: usize,
        payload: usize,
        pin: bool,
    ) -> io::Result<UringServer> {
        let queues = possible_cpus();
        let per_queue = per_queue.clamp(1, (MAX_ENTRIES / queues).max(1));
        let depth = depth.clamp(1, (MAX_ENTRIES / (queues * per_queue)).max(1));
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
                        if pin {
                            pin_to(qid);
                        }
                        let q = match Queue::register(&dev, qid as u16, depth, payload, served) {
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
                        q.serve(&core);
                        drop(dev);
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

/// What an entry's request waits for on the ring.
enum Op {
    /// The ciphertext of `len` bytes being read into the payload.
    Read { t: Transfer, len: usize },
    /// The ciphertext of `len` bytes being written from the payload; `sync`: an
    /// `fdatasync` follows before the answer.
    Write {
        t: Transfer,
        len: usize,
        sync: Option<Arc<DataVolume>>,
    },
    /// An `fdatasync`; the answer then has `reply` bytes of payload (prepared already).
    Sync { vol: Arc<DataVolume>, reply: usize },
}

/// One ring entry: the buffers the kernel reads requests into and answers from.
struct Slot {
    header: Box<[u8; HDR_LEN]>,
    payload: AlignedBuf,
    /// Header and payload as the kernel's `iovec[2]` (kept alive with the entry).
    iov: Box<[libc::iovec; 2]>,
    /// The request's `unique` and commit id while it waits for I/O.
    pending: Option<(u64, u64, Op)>,
}

/// The entries of one thread with the io_uring they share.
struct Queue {
    /// Dropped first: the kernel lets go of the buffers once the ring is gone.
    ring: IoUring<squeue::Entry128, cqueue::Entry>,
    slots: Vec<Slot>,
    payload_len: usize,
    qid: u16,
    /// Backing-store operations in flight.
    in_flight: usize,
    /// Entries holding a request not yet started.
    backlog: VecDeque<usize>,
    /// Writes waiting for sectors another write holds.
    deferred: VecDeque<usize>,
    /// The connection is ending (a fetch failed).
    ending: bool,
    /// The session's `/dev/fuse` descriptor (kept open by the server).
    dev_fd: RawFd,
    /// Requests answered, for [`UringServer::served`].
    served: Arc<AtomicU64>,
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

/// Put the answer (`error`, `out_sz` bytes of payload) to request `unique` in `h`.
fn set_reply(h: &mut [u8], unique: u64, error: i32, out_sz: usize) {
    h[..OUT_HDR].fill(0);
    h[0..4].copy_from_slice(&((OUT_HDR + out_sz) as u32).to_ne_bytes());
    h[4..8].copy_from_slice(&error.to_ne_bytes());
    h[8..16].copy_from_slice(&unique.to_ne_bytes());
    h[ENT + 16..ENT + 20].copy_from_slice(&(out_sz as u32).to_ne_bytes());
}

fn volume_errno(e: &lukskit_volume::VolumeError) -> i32 {
    match e {
        lukskit_volume::VolumeError::ReadOnly { .. } => libc::EROFS,
        _ => libc::EIO,
    }
}

impl Queue {
    fn register(
        dev: &OwnedFd,
        qid: u16,
        depth: usize,
        payload_len: usize,
        served: Arc<AtomicU64>,
    ) -> io::Result<Queue> {
        let ring = IoUring::<squeue::Entry128, cqueue::Entry>::builder()
            .setup_single_issuer()
            .setup_defer_taskrun()
            .setup_cqsize((4 * depth).next_power_of_two() as u32)
            .build((2 * depth).next_power_of_two() as u32)?;
        let mut q = Queue {
            ring,
            slots: Vec::with_capacity(depth),
            payload_len,
            qid,
            in_flight: 0,
            backlog: VecDeque::new(),
            deferred: VecDeque::new(),
            ending: false,
            dev_fd: dev.as_raw_fd(),
            served,
        };
        for i in 0..depth {
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
            q.slots.push(Slot {
                header,
                payload,
                iov,
                pending: None,
            });
            let sqe = opcode::UringCmd80::new(types::Fd(dev.as_raw_fd()), CMD_REGISTER)
                .cmd(cmd_req(0, qid))
                .addr(Some(q.slots[i].iov.as_ptr() as u64))
                .build()
                .user_data(TAG_FETCH | i as u64);
            let sqe = with_len(sqe, 2);
            // The kernel answers a REGISTER sent before the connection is initialized with
            // EAGAIN; the handshake is over when this runs, but retry briefly anyway. A
            // REGISTER that fails completes inside the submitting call; one that succeeds
            // completes only with the first request.
            let deadline = Instant::now() + Duration::from_secs(5);
            'retry: loop {
                q.push(&sqe)?;
                q.ring.submit()?;
                let done: Vec<(u64, i32)> = q
                    .ring
                    .completion()
                    .map(|c| (c.user_data(), c.result()))
                    .collect();
                let mut again = false;
                for (ud, r) in done {
                    let slot = (ud & 0xffff_ffff) as usize;
                    if r == -libc::EAGAIN && slot == i && Instant::now() < deadline {
                        again = true;
                    } else if r < 0 {
                        return Err(io::Error::from_raw_os_error(-r));
                    } else {
                        q.backlog.push_back(slot);
                    }
                }
                if !again {
                    break 'retry;
                }
                std::thread::sleep(Duration::from_millis(5));
            }
        }
        Ok(q)
    }

    fn push(&mut self, sqe: &squeue::Entry128) -> io::Result<()> {
        for attempt in 0..2 {
            // SAFETY: the SQE points at buffers of `self.slots` (an entry's iovecs, header
            // and payload, or a transfer's part of a payload) or at nothing; they live as
            // long as `self`, whose ring is dropped first, and a slot's buffers are not
            // touched while the kernel holds its request or transfer.
            if unsafe { self.ring.submission().push(sqe) }.is_ok() {
                return Ok(());
            }
            if attempt == 0 {
                self.ring.submit()?;
            }
        }
        Err(io::Error::other("io_uring submission queue full"))
    }

    /// Answer until the connection ends.
    fn serve(mut self, core: &Core) {
        loop {
            while let Some(i) = self.backlog.pop_front() {
                self.start(i, core);
            }
            if !self.deferred.is_empty() {
                let waiting = std::mem::take(&mut self.deferred);
                for i in waiting {
                    self.start(i, core);
                }
            }
            if self.ending && self.in_flight == 0 {
                return;
            }
            if !self.reap(true) {
                return;
            }
        }
    }

    /// Submit, wait (`wait`) for a completion and take all of them: requests go to the
    /// backlog, finished transfers are answered. False when the ring failed.
    fn reap(&mut self, wait: bool) -> bool {
        let r = if wait {
            self.ring.submit_and_wait(1)
        } else {
            self.ring.submit()
        };
        match r {
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) if e.raw_os_error() == Some(libc::EBUSY) => {}
            Err(_) => return false,
        }
        let done: Vec<(u64, i32)> = self
            .ring
            .completion()
            .map(|c| (c.user_data(), c.result()))
            .collect();
        for (ud, res) in done {
            let i = (ud & 0xffff_ffff) as usize;
            match ud & !0xffff_ffff {
                TAG_FETCH if res < 0 => self.ending = true, // ENOTCONN / ECANCELED
                TAG_FETCH => self.backlog.push_back(i),
                _ => {
                    self.in_flight -= 1;
                    self.io_done(i, res);
                }
            }
        }
        true
    }

    /// Wait until this thread has no transfer in flight.
    fn drain(&mut self) {
        while self.in_flight > 0 {
            if !self.reap(true) {
                return;
            }
        }
    }

    /// Answer entry `i`'s request (`error`, `out_sz` bytes of payload) and fetch the next.
    fn commit(&mut self, i: usize, unique: u64, error: i32, out_sz: usize) {
        let out_sz = out_sz.min(self.payload_len);
        let h = &mut self.slots[i].header[..];
        let commit_id = u64_at(h, ENT + 8);
        set_reply(h, unique, error, out_sz);
        self.served.fetch_add(1, Ordering::Relaxed);
        let sqe = opcode::UringCmd80::new(types::Fd(self.dev_fd), CMD_COMMIT_AND_FETCH)
            .cmd(cmd_req(commit_id, self.qid))
            .build()
            .user_data(TAG_FETCH | i as u64);
        if self.push(&sqe).is_err() {
            self.ending = true;
        }
    }

    /// Start serving the request of entry `i`: queue its transfer, or answer it at once.
    fn start(&mut self, i: usize, core: &Core) {
        let h = &self.slots[i].header[..];
        let opcode = u32_at(h, 4);
        let unique = u64_at(h, 8);
        let nodeid = u64_at(h, 16);
        let uid = u32_at(h, 24);
        let pid = u32_at(h, 32);
        let in_sz = (u32_at(h, ENT + 16) as usize).min(self.payload_len);
        let op: [u8; 128] = h[OP_IN..OP_IN + 128].try_into().expect("128 bytes");
        match self.start_async(i, core, opcode, unique, nodeid, &op, in_sz) {
            Started::Queued => return,
            Started::Answered(error, out) => return self.commit(i, unique, error, out),
            Started::Deferred => {
                self.deferred.push_back(i);
                return;
            }
            Started::No => {}
        }
        // Served synchronously: first let this thread's own transfers finish (a suspend
        // waits for them while the synchronous path may wait for the resume).
        self.drain();
        let payload = &mut self.slots[i].payload.as_mut_slice()[..self.payload_len];
        let (error, out) = match reply(core, opcode, nodeid, (uid, pid), &op, payload, in_sz) {
            Ok(n) => (0, n),
            Err(e) => (-e, 0),
        };
        self.commit(i, unique, error, out);
    }

    /// The ring's way of serving a request: reads, writes and syncs of the volume.
    #[allow(clippy::too_many_arguments)]
    fn start_async(
        &mut self,
        i: usize,
        core: &Core,
        opcode: u32,
        unique: u64,
        nodeid: u64,
        op: &[u8; 128],
        in_sz: usize,
    ) -> Started {
        // Only the requests `reply` lets any uid make (READ, WRITE, FSYNC) and FLUSH, which
        // is checked there: FLUSH goes the synchronous way unless the caller may.
        if nodeid != 1 || !matches!(opcode, FUSE_READ | FUSE_WRITE | FUSE_FSYNC) {
            return Started::No;
        }
        let Some(vol) = core.backend.volume_now() else {
            return Started::No;
        };
        let commit_id = u64_at(&self.slots[i].header[..], ENT + 8);
        let payload_len = self.payload_len;
        let slot = &mut self.slots[i];
        let (sqe, pending) = match opcode {
            FUSE_READ => {
                let offset = u64_at(op, 8);
                let total = core.backend.size();
                if offset >= total {
                    return Started::Answered(0, 0);
                }
                let n = (u32_at(op, 16) as usize)
                    .min(payload_len)
                    .min((total - offset).min(usize::MAX as u64) as usize);
                if !SectorRing::accepts(&vol, offset, n) {
                    return Started::No;
                }
                let buf = &mut slot.payload.as_mut_slice()[..n];
                match Transfer::read(vol, offset, buf) {
                    Ok((t, e)) => (e.user_data(TAG_IO | i as u64), Op::Read { t, len: n }),
                    Err(e) => return Started::Answered(-volume_errno(&e), 0),
                }
            }
            FUSE_WRITE => {
                let offset = u64_at(op, 8);
                let n = (u32_at(op, 16) as usize).min(in_sz);
                let flags = u32_at(op, 32) as i32;
                if let Err(e) = core.check_write(offset, n) {
                    return Started::Answered(-e.code(), 0);
                }
                if core.backend.read_only() {
                    return Started::Answered(-libc::EROFS, 0);
                }
                if !SectorRing::accepts(&vol, offset, n) {
                    return Started::No;
                }
                let sync = (flags & (libc::O_SYNC | libc::O_DSYNC) != 0).then(|| Arc::clone(&vol));
                let buf = &mut slot.payload.as_mut_slice()[..n];
                match Transfer::write(vol, offset, buf) {
                    Ok(Some((t, e))) => (
                        e.user_data(TAG_IO | i as u64),
                        Op::Write { t, len: n, sync },
                    ),
                    // Another write holds some of the sectors: wait for it while this
                    // thread has something in flight, else the synchronous path waits.
                    Ok(None) if self.in_flight > 0 => return Started::Deferred,
                    Ok(None) => return Started::No,
                    Err(e) => return Started::Answered(-volume_errno(&e), 0),
                }
            }
            _ => {
                // FUSE_FSYNC
                if core.backend.read_only() {
                    return Started::Answered(0, 0);
                }
                let Some(e) = Transfer::sync_entry(&vol) else {
                    return Started::No;
                };
                (e.user_data(TAG_SYNC | i as u64), Op::Sync { vol, reply: 0 })
            }
        };
        slot.pending = Some((unique, commit_id, pending));
        if self.push(&sqe.into()).is_err() {
            // Not queued: finish it the synchronous way (the transfer is dropped, its
            // locks released; the payload is rebuilt by the caller only for reads, so a
            // write is answered with an error rather than written half-encrypted).
            let (_, _, p) = self.slots[i].pending.take().expect("just set");
            return match p {
                Op::Write { .. } => Started::Answered(-libc::EIO, 0),
                _ => Started::No,
            };
        }
        self.in_flight += 1;
        Started::Queued
    }

    /// The backing store's part of entry `i`'s request completed with `res`.
    fn io_done(&mut self, i: usize, res: i32) {
        let Some((unique, _, op)) = self.slots[i].pending.take() else {
            return;
        };
        let slot = &mut self.slots[i];
        let (error, out) = match op {
            Op::Read { t, len } => {
                let buf = &mut slot.payload.as_mut_slice()[..len];
                match t.complete(buf, res) {
                    Ok(()) => (0, len),
                    Err(e) => (-volume_errno(&e), 0),
                }
            }
            Op::Write { t, len, sync } => {
                let buf = &mut slot.payload.as_mut_slice()[..len];
                let r = t.complete(buf, res);
                // fuse_write_out { size u32; padding u32 }
                let p = slot.payload.as_mut_slice();
                p[..8].fill(0);
                p[..4].copy_from_slice(&(len as u32).to_ne_bytes());
                match (r, sync) {
                    (Err(e), _) => (-volume_errno(&e), 0),
                    (Ok(()), None) => (0, 8),
                    (Ok(()), Some(vol)) => {
                        let commit_id = u64_at(&slot.header[..], ENT + 8);
                        match Transfer::sync_entry(&vol) {
                            Some(e) => {
                                let sqe = e.user_data(TAG_SYNC | i as u64).into();
                                slot.pending =
                                    Some((unique, commit_id, Op::Sync { vol, reply: 8 }));
                                if self.push(&sqe).is_ok() {
                                    self.in_flight += 1;
                                    return;
                                }
                                self.slots[i].pending = None;
                                (-libc::EIO, 0)
                            }
                            None => match vol.flush() {
                                Ok(()) => (0, 8),
                                Err(e) => (-volume_errno(&e), 0),
                            },
                        }
                    }
                }
            }
            Op::Sync { vol, reply } => match Transfer::sync_result(&vol, res) {
                Ok(()) => (0, reply),
                Err(e) => (-volume_errno(&e), 0),
            },
        };
        self.commit(i, unique, error, out);
    }
}

/// How [`Queue::start_async`] left a request.
enum Started {
    /// Its transfer is on the ring.
    Queued,
    /// Answered at once with (error, payload length).
    Answered(i32, usize),
    /// A write waiting for sectors another write holds.
    Deferred,
    /// Not for the ring: serve it synchronously.
    No,
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
    (uid, pid): (u32, u32),
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
        FUSE_STATFS if !core.statfs_allowed(pid) => Err(libc::EOPNOTSUPP),
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
    o[0..8].copy_from_slice(&TTL.as_secs().to_ne_bytes());
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
