//! The plaintext of a volume as one regular file, served over FUSE (the `fuser` crate, pure
//! Rust: mounted directly with mount(2) as root, through `fusermount3` otherwise).
//!
//! The file system's root *is* the file: it is mounted over an existing regular file (the
//! kernel takes the root's type from the mount point), so the plaintext appears at exactly
//! the path given, e.g. `/run/lukskit/NAME/device`, without a directory around it.
//!
//! Requests are served by several threads, each with its own cloned `/dev/fuse`
//! descriptor, straight into the [`BlockBackend`]; writes of up to 1 MiB arrive in one
//! request. Reads and writes are queued ([`BlockBackend::try_read_async`]) where the
//! backend can (an opened volume's io_uring) and answered when their transfer completes,
//! from the backend's completion thread; the others are answered by the thread that read
//! them. `fsync` and `flush` reach the backing store (`fdatasync`) before they are
//! answered; `fallocate(PUNCH_HOLE)` becomes a discard (refused unless the backend allows
//! discards); `fallocate(ZERO_RANGE)` writes zeroes. The file cannot be resized through FUSE; its size
//! follows the backend's (a `resize` of the mapping, [`FuseExport::size_changed`]).

use crate::backend::{BlockBackend, ReadDone, WriteDone};
use crate::fuse_core::{Core, ROOT, TTL};
use fuser::{
    BackgroundSession, Config, Errno, FileHandle, Filesystem, FopenFlags, INodeNo, InitFlags,
    KernelConfig, LockOwner, MountOption, OpenFlags, ReplyAttr, ReplyData, ReplyEmpty, ReplyOpen,
    ReplyWrite, Request, SessionACL, WriteFlags,
};
use lukskit_volume::data::AlignedBuf;
use std::cell::RefCell;
use std::io;
use std::os::fd::AsFd;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

/// Largest read or write the kernel sends in one request.
pub const MAX_IO: u32 = 1024 * 1024;

/// How the file is served.
#[derive(Debug, Clone)]
pub struct FuseOptions {
    /// Serve read-only (the mount is `ro` too).
    pub read_only: bool,
    /// Open the file with `FOPEN_DIRECT_IO` (no page cache in the FUSE layer; what a loop
    /// device on top wants) instead of `FOPEN_KEEP_CACHE`.
    pub direct_io: bool,
    /// Number of request threads (`None`: [`default_threads`] for the backend).
    pub threads: Option<usize>,
    /// Let other users than the mounting one access the file (`allow_other`).
    pub allow_other: bool,
    /// The `fsname` shown in /proc/mounts.
    pub fs_name: String,
    /// Serve the file's requests over io_uring when the kernel offers FUSE over io_uring
    /// (`fuse.enable_uring=Y`; the classic `/dev/fuse` path otherwise). On by default;
    /// `LUKSKIT_FUSE_URING=0` in the environment turns it off, `LUKSKIT_FUSE_URING=1` on,
    /// whatever this says.
    pub io_uring: bool,
    /// io_uring threads per CPU (`None`: 2, or `LUKSKIT_FUSE_URING_THREADS`); each has 8
    /// ring entries (`LUKSKIT_FUSE_URING_DEPTH`), at most 64 entries in all.
    pub uring_threads_per_queue: Option<usize>,
    /// How long the kernel waits for an answer to any request before it aborts the FUSE
    /// connection (every request then fails with an I/O error, and the mapping is dead), where
    /// the kernel can (Linux 6.14+, `FUSE_REQUEST_TIMEOUT`); `None` for no timeout.
    /// `LUKSKIT_FUSE_REQUEST_TIMEOUT=SECONDS` in the environment overrides it (0: none).
    /// Default [`DEFAULT_REQUEST_TIMEOUT`].
    pub request_timeout: Option<Duration>,
}

/// The default [`FuseOptions::request_timeout`]: longer than the worst a healthy backend
/// takes for one request (an NBD request that times out once, reconnects and is sent again
/// takes up to about 3 minutes with the NBD client's defaults), so that only a serving
/// process that stopped answering is cut off.
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(300);

impl Default for FuseOptions {
    fn default() -> Self {
        FuseOptions {
            read_only: false,
            direct_io: true,
            threads: None,
            allow_other: false,
            fs_name: "lukskit".into(),
            io_uring: true,
            uring_threads_per_queue: None,
            request_timeout: Some(DEFAULT_REQUEST_TIMEOUT),
        }
    }
}

/// Request threads for `backend`.
///
/// A backend that queues requests asynchronously ([`BlockBackend::queues_async`]: the
/// io_uring of an opened volume) needs few: a thread only reads a request, queues its
/// transfer (encrypting first, for a write) and goes back for the next, and a handful keep
/// the kernel's queue drained while fewer threads mean fewer wakeups (measured here: 4
/// threads give ~20% more 4 KiB random IOPS than 8 or 32).
///
/// Otherwise every request holds a thread while it waits for the backing store (the cipher
/// costs ~0.5 µs per 4 KiB, a synchronous read or write of the backing file far more), so
/// there must be one per request the kernel keeps in flight: a loop device over the file
/// passes on its queue (fio `--iodepth=16` and more, the ext4 journal beside it), up to
/// `max_background` (64) at once. Idle threads cost only their stacks.
pub fn default_threads(backend: &dyn BlockBackend) -> usize {
    let cpus = std::thread::available_parallelism().map_or(2, |n| n.get());
    if backend.queues_async() {
        cpus.clamp(4, 8)
    } else {
        (cpus * 4).clamp(32, 64)
    }
}

thread_local! {
    /// Per-thread read buffer (grown once to the largest request).
    /// Aligned, so that reads of whole pages go to the backing store with `O_DIRECT`.
    static READ_BUF: RefCell<AlignedBuf> = RefCell::new(AlignedBuf::default());
}

struct PlainFile {
    core: Arc<Core>,
    /// Ask for FUSE over io_uring when the kernel offers it.
    want_uring: bool,
    /// Set by `init` when FUSE over io_uring was negotiated.
    uring: Arc<std::sync::atomic::AtomicBool>,
    /// The request timeout to ask the kernel for, in seconds (0: none).
    request_timeout: u16,
}

/// [`FuseOptions::request_timeout`] in whole seconds (at least 1, at most the kernel's u16),
/// or `LUKSKIT_FUSE_REQUEST_TIMEOUT`; 0 for none.
fn request_timeout_secs(opts: &FuseOptions) -> u16 {
    let from_env = std::env::var("LUKSKIT_FUSE_REQUEST_TIMEOUT")
        .ok()
        .and_then(|v| v.trim().parse::<u64>().ok())
        .map(Duration::from_secs);
    match from_env.or(opts.request_timeout) {
        Some(t) if !t.is_zero() => t.as_secs().clamp(1, u64::from(u16::MAX)) as u16,
        _ => 0,
    }
}

impl std::ops::Deref for PlainFile {
    type Target = Core;
    fn deref(&self) -> &Core {
        &self.core
    }
}

fn errno(e: &io::Error) -> Errno {
    Errno::from_i32(e.raw_os_error().unwrap_or(libc::EIO))
}

impl Filesystem for PlainFile {
    fn init(&mut self, _req: &Request, config: &mut KernelConfig) -> io::Result<()> {
        let _ = config.set_max_write(MAX_IO);
        if let Err(max) = config.set_max_readahead(MAX_IO) {
            let _ = config.set_max_readahead(max);
        }
        let _ = config.set_max_background(64);
        let _ = config.set_congestion_threshold(48);
        for cap in [
            InitFlags::FUSE_ASYNC_READ,
            InitFlags::FUSE_BIG_WRITES,
            InitFlags::FUSE_MAX_PAGES,
            InitFlags::FUSE_ASYNC_DIO,
        ] {
            let _ = config.add_capabilities(cap);
        }
        // Where the kernel offers it (6.14+), a request unanswered for this long aborts the
        // connection: readers get I/O errors instead of waiting for ever on a stalled server.
        if self.request_timeout > 0
            && config
                .add_capabilities(InitFlags::FUSE_REQUEST_TIMEOUT)
                .is_ok()
        {
            config.set_request_timeout(self.request_timeout);
        }
        if self.want_uring
            && config
                .add_capabilities(InitFlags::FUSE_OVER_IO_URING)
                .is_ok()
        {
            self.uring.store(true, std::sync::atomic::Ordering::SeqCst);
        }
        Ok(())
    }

    fn getattr(&self, _req: &Request, ino: INodeNo, _fh: Option<FileHandle>, reply: ReplyAttr) {
        match Core::check_ino(ino) {
            Ok(()) => reply.attr(&TTL, &self.attr()),
            Err(e) => reply.error(e),
        }
    }

    fn setattr(
        &self,
        _req: &Request,
        ino: INodeNo,
        _mode: Option<u32>,
        _uid: Option<u32>,
        _gid: Option<u32>,
        size: Option<u64>,
        _atime: Option<fuser::TimeOrNow>,
        _mtime: Option<fuser::TimeOrNow>,
        _ctime: Option<SystemTime>,
        _fh: Option<FileHandle>,
        _crtime: Option<SystemTime>,
        _chgtime: Option<SystemTime>,
        _bkuptime: Option<SystemTime>,
        _flags: Option<fuser::BsdFileFlags>,
        reply: ReplyAttr,
    ) {
        if let Err(e) = Core::check_ino(ino) {
            return reply.error(e);
        }
        // The size is that of the volume: truncating to it (O_TRUNC of a device-like file
        // is not meaningful) is refused unless it changes nothing.
        match size {
            Some(s) if s != self.backend.size() => reply.error(Errno::EPERM),
            _ => reply.attr(&TTL, &self.attr()),
        }
    }

    fn open(&self, _req: &Request, ino: INodeNo, flags: OpenFlags, reply: ReplyOpen) {
        if let Err(e) = Core::check_ino(ino) {
            return reply.error(e);
        }
        match self.core.open(flags.0) {
            Ok(fl) => reply.opened(FileHandle(0), FopenFlags::from_bits_retain(fl)),
            Err(e) => reply.error(Errno::from_i32(e)),
        }
    }

    fn read(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        size: u32,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyData,
    ) {
        self.classic_data_requests
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        if let Err(e) = Core::check_ino(ino) {
            return reply.error(e);
        }
        let total = self.backend.size();
        if offset >= total {
            return reply.data(&[]);
        }
        let n = u64::from(size).min(total - offset) as usize;
        let done: ReadDone = Box::new(move |r| match r {
            Ok(data) => reply.data(data),
            Err(e) => reply.error(errno(&e)),
        });
        let Err(done) = self.backend.try_read_async(offset, n, done) else {
            return;
        };
        READ_BUF.with(|b| {
            let mut buf = b.borrow_mut();
            buf.ensure(n);
            let buf = buf.as_mut_slice();
            done(
                self.backend
                    .read_at(&mut buf[..n], offset)
                    .map(|()| &buf[..n]),
            );
        });
    }

    fn write(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        data: &[u8],
        _write_flags: WriteFlags,
        flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyWrite,
    ) {
        self.classic_data_requests
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        if let Err(e) = Core::check_ino(ino) {
            return reply.error(e);
        }
        if let Err(e) = self.check_write(offset, data.len()) {
            return reply.error(e);
        }
        // O_SYNC / O_DSYNC writers expect the data durable on return.
        let sync = flags.0 & (libc::O_SYNC | libc::O_DSYNC) != 0;
        if !sync {
            let len = data.len() as u32;
            let done: WriteDone = Box::new(move |r| match r {
                Ok(()) => reply.written(len),
                Err(e) => reply.error(errno(&e)),
            });
            let Err(done) = self.backend.try_write_async(data, offset, done) else {
                return;
            };
            return done(self.backend.write_at(data, offset));
        }
        if let Err(e) = self.backend.write_at(data, offset) {
            return reply.error(errno(&e));
        }
        if let Err(e) = self.backend.flush() {
            return reply.error(errno(&e));
        }
        reply.written(data.len() as u32);
    }

    fn flush(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _fh: FileHandle,
        _lock_owner: LockOwner,
        reply: ReplyEmpty,
    ) {
        if self.read_only {
            return reply.ok();
        }
        match self.backend.flush() {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(errno(&e)),
        }
    }

    fn fsync(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _fh: FileHandle,
        _datasync: bool,
        reply: ReplyEmpty,
    ) {
        match self.backend.flush() {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(errno(&e)),
        }
    }

    fn statfs(&self, req: &Request, _ino: INodeNo, reply: fuser::ReplyStatfs) {
        if !self.core.statfs_allowed(req.pid()) {
            return reply.error(Errno::EOPNOTSUPP);
        }
        // fuser's default answer.
        reply.statfs(0, 0, 0, 0, 0, 512, 255, 0);
    }

    fn fallocate(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        length: u64,
        mode: i32,
        reply: ReplyEmpty,
    ) {
        if let Err(e) = Core::check_ino(ino) {
            return reply.error(e);
        }
        let res = self.core.fallocate(offset, length, mode);
        match res {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(errno(&e)),
        }
    }
}

/// A mounted plaintext file. Dropping it unmounts (lazily).
pub struct FuseExport {
    session: Option<BackgroundSession>,
    uring: Option<crate::fuse_uring::UringServer>,
    path: PathBuf,
    core: Arc<Core>,
}

impl FuseExport {
    /// Mount `backend` over the regular file `path` (created when missing) and start
    /// serving it.
    pub fn mount(
        backend: Arc<dyn BlockBackend>,
        path: &Path,
        opts: &FuseOptions,
    ) -> io::Result<FuseExport> {
        if !path.exists() {
            std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(path)?;
        }
        let threads = opts.threads.unwrap_or_else(|| default_threads(&*backend));
        // SAFETY: getuid/getgid cannot fail.
        let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
        let core = Arc::new(Core {
            backend,
            read_only: opts.read_only,
            direct_io: opts.direct_io,
            allow_other: opts.allow_other,
            uid,
            gid,
            mtime: SystemTime::now(),
            classic_data_requests: std::sync::atomic::AtomicU64::new(0),
        });
        // Wherever the kernel offers it (the option's default: the kernel offers it only
        // once root turned fuse.enable_uring on; the two paths measured within noise of each
        // other, bench/fuse-paths.md); LUKSKIT_FUSE_URING=0 or 1 overrides the option.
        let env = std::env::var_os("LUKSKIT_FUSE_URING");
        let want_uring = match env.as_deref().and_then(|v| v.to_str()) {
            Some("0") => false,
            Some("1") => true,
            _ => opts.io_uring,
        };
        if want_uring {
            // Not negotiated (kernel without it, parameter off): the classic session is
            // kept. Negotiated, but the ring could not be set up: mount again without it.
            if let Ok(export) = Self::mount_with(&core, path, opts, threads, true) {
                return Ok(export);
            }
        }
        Self::mount_with(&core, path, opts, threads, false)
    }

    fn mount_with(
        core: &Arc<Core>,
        path: &Path,
        opts: &FuseOptions,
        threads: usize,
        want_uring: bool,
    ) -> io::Result<FuseExport> {
        let negotiated = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let fs = PlainFile {
            core: Arc::clone(core),
            want_uring,
            uring: Arc::clone(&negotiated),
            request_timeout: request_timeout_secs(opts),
        };
        let mut mount_options = vec![
            MountOption::FSName(opts.fs_name.clone()),
            MountOption::Subtype("lukskit".into()),
            MountOption::DefaultPermissions,
            MountOption::NoDev,
            MountOption::NoSuid,
            MountOption::NoExec,
            MountOption::NoAtime,
        ];
        mount_options.push(if opts.read_only {
            MountOption::RO
        } else {
            MountOption::RW
        });
        let mut config = Config::default();
        config.mount_options = mount_options;
        config.acl = if opts.allow_other {
            SessionACL::All
        } else {
            SessionACL::Owner
        };
        config.n_threads = Some(threads.max(1));
        config.clone_fd = true;
        // The handshake (FUSE_INIT) is done when this returns.
        let session = fuser::Session::new(fs, path, &config)?;
        let mut uring = None;
        if negotiated.load(std::sync::atomic::Ordering::SeqCst) {
            // Until every queue has an entry the kernel holds requests back, so the ring
            // is set up before the classic threads start; if that fails the session is
            // dropped (unmounted) and the caller mounts again without io_uring.
            let dev = session.as_fd().try_clone_to_owned()?;
            let per_queue = opts
                .uring_threads_per_queue
                .or_else(|| {
                    std::env::var("LUKSKIT_FUSE_URING_THREADS")
                        .ok()?
                        .parse()
                        .ok()
                })
                .unwrap_or(crate::fuse_uring::DEFAULT_PER_QUEUE);
            let depth = std::env::var("LUKSKIT_FUSE_URING_DEPTH")
                .ok()
                .and_then(|v| v.parse().ok())
                .unwrap_or(crate::fuse_uring::DEFAULT_DEPTH);
            uring = Some(crate::fuse_uring::UringServer::start(
                dev,
                Arc::clone(core),
                per_queue,
                depth,
                MAX_IO as usize,
                std::env::var("LUKSKIT_FUSE_URING_PIN")
                    .map_or(crate::fuse_uring::DEFAULT_PIN, |v| v != "0"),
            )?);
        }
        let session = session.spawn()?;
        Ok(FuseExport {
            session: Some(session),
            uring,
            path: path.to_path_buf(),
            core: Arc::clone(core),
        })
    }

    /// Whether requests are served over io_uring (FUSE over io_uring was negotiated and
    /// its queues are registered).
    pub fn uses_io_uring(&self) -> bool {
        self.uring.is_some()
    }

    /// Requests answered over io_uring so far (0 on the classic path).
    pub fn io_uring_requests(&self) -> u64 {
        self.uring.as_ref().map_or(0, |u| u.served())
    }

    /// READ and WRITE requests answered on the classic `/dev/fuse` path so far (with FUSE
    /// over io_uring only what the kernel did not give the ring).
    pub fn classic_data_requests(&self) -> u64 {
        self.core
            .classic_data_requests
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    /// The plaintext file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Make the kernel see the backend's new size (after a resize): the cached attributes
    /// of the file are invalidated (`FUSE_NOTIFY_INVAL_INODE`) and read again with a
    /// `stat`, so that the inode's size, which a loop device on top takes with
    /// `LOOP_SET_CAPACITY`, is the new one. Returns the size the kernel now has.
    pub fn size_changed(&self) -> io::Result<u64> {
        if let Some(s) = &self.session {
            // A negative offset: attributes only, the (unused) page cache stays.
            s.notifier().inval_inode(ROOT, -1, 0)?;
        }
        Ok(std::fs::metadata(&self.path)?.len())
    }

    /// Unmount (lazily: the kernel finishes it once the last user, e.g. a loop device, is
    /// gone) and wait up to `wait` for the request threads to end.
    pub fn unmount(mut self, wait: Duration) -> io::Result<()> {
        let Some(session) = self.session.take() else {
            return Ok(());
        };
        let deadline = std::time::Instant::now() + wait;
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(session.umount_and_join());
        });
        match rx.recv_timeout(wait) {
            Ok(r) => {
                if let Some(u) = self.uring.take() {
                    if !u.join_until(deadline) {
                        return Err(io::Error::new(
                            io::ErrorKind::TimedOut,
                            "FUSE io_uring threads did not end in time",
                        ));
                    }
                }
                r
            }
            Err(_) => Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "FUSE session did not end in time",
            )),
        }
    }
}

impl Drop for FuseExport {
    fn drop(&mut self) {
        if let Some(s) = self.session.take() {
            drop(s);
        }
    }
}
