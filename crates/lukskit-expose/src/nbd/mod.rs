//! An NBD server (fixed newstyle handshake, simple replies) exporting a [`BlockBackend`]
//! over a Unix or TCP socket.
//!
//! ```no_run
//! # use std::sync::Arc;
//! # use lukskit_expose::backend::MemBackend;
//! # use lukskit_expose::nbd::{NbdAddress, NbdOptions, NbdServer};
//! let addr: NbdAddress = "unix:/run/lukskit/vol.sock".parse().unwrap();
//! let server = NbdServer::bind(&addr, NbdOptions::default()).unwrap();
//! let stop = server.shutdown_handle(); // call stop.shutdown() from another thread
//! server.serve(Arc::new(MemBackend::new(1 << 20, 512, false))).unwrap();
//! ```
//!
//! Each connection gets its own threads: a few workers take turns reading one request
//! each (so requests are read in order), execute them in parallel against the backend and
//! send the replies one at a time over the shared write half.
//!
//! Limits that hold whatever clients do: at most [`NbdOptions::max_connections`]
//! connections (further ones are closed before the greeting), of which at most
//! [`NbdOptions::max_handshakes`] may still be in the handshake (further ones are closed at
//! once, so peers that never finish it cannot take every slot), each handshake (TLS
//! included) cut at [`NbdOptions::handshake_deadline`] after the connection was accepted, at most
//! [`MAX_BYTES_IN_FLIGHT`] per connection (then its requests are no longer read until
//! replies drain), a failed thread start or allocation ends only the connection concerned,
//! and shutdown takes at most [`NbdOptions::shutdown_grace`] plus the requests executing
//! at that moment.
//!
//! TLS ([`NbdTls`], set in [`NbdOptions::tls`]): the server offers `NBD_OPT_STARTTLS`
//! with X.509 credentials in qemu-nbd's and nbdkit's layout (crate `lukskit-nbd`'s
//! [`lukskit_nbd::tls`]); when TLS is required, every option but `STARTTLS` and `ABORT`
//! is refused with `NBD_REP_ERR_TLS_REQD` until the session is encrypted, and client
//! certificates can be required (see [`lukskit_nbd::tls::server_config`]). A TCP export without TLS is neither encrypted nor
//! authenticated: whoever can connect reads and writes the plaintext (see
//! [`NbdAddress::is_network`]).

mod handshake;
pub mod proto;
mod socket;
mod threads;
mod transmission;

pub use transmission::MAX_BYTES_IN_FLIGHT;

use crate::backend::BlockBackend;
use socket::{Listener, OwnedSocketPath, Stream};
use std::collections::HashMap;
use std::fmt;
use std::io::{self, Read, Write};
use std::net::Shutdown;
use std::os::fd::AsFd;
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::str::FromStr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};
use threads::Threads;

/// How long a client may take, unless told otherwise, for the whole handshake: from the
/// accepted connection to the start of transmission, TLS handshake included.
pub const DEFAULT_HANDSHAKE_DEADLINE: Duration = Duration::from_secs(20);

/// Connections served at once unless told otherwise: twice what a multi-connection client
/// such as `nbdcopy` opens (4), so one such client and a few single-connection ones
/// (`qemu-img`, `nbdinfo`) fit.
pub const DEFAULT_MAX_CONNECTIONS: usize = 8;

/// How long shutdown waits, unless told otherwise, for connections to finish on their own.
pub const DEFAULT_SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

/// Where the server listens: `unix:PATH` or `tcp:HOST:PORT`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NbdAddress {
    /// A Unix domain socket at this path.
    Unix(PathBuf),
    /// A TCP address `host:port` (IPv6 hosts in brackets: `[::1]:10809`).
    Tcp(String),
}

impl FromStr for NbdAddress {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        if let Some(path) = s.strip_prefix("unix:") {
            if path.is_empty() {
                return Err(format!("invalid NBD address '{s}': empty socket path"));
            }
            return Ok(NbdAddress::Unix(PathBuf::from(path)));
        }
        if let Some(hp) = s.strip_prefix("tcp:") {
            let Some((host, port)) = hp.rsplit_once(':') else {
                return Err(format!("invalid NBD address '{s}': expected tcp:HOST:PORT"));
            };
            if host.is_empty() {
                return Err(format!("invalid NBD address '{s}': empty host"));
            }
            if port.parse::<u16>().is_err() {
                return Err(format!(
                    "invalid NBD address '{s}': port '{port}' is not a number from 0 to 65535"
                ));
            }
            let bracketed = host.starts_with('[') && host.ends_with(']') && host.len() > 2;
            if host.contains(':') && !bracketed {
                return Err(format!(
                    "invalid NBD address '{s}': write IPv6 hosts in brackets (tcp:[::1]:10809)"
                ));
            }
            if (host.starts_with('[') || host.ends_with(']')) && !bracketed {
                return Err(format!("invalid NBD address '{s}': unbalanced brackets"));
            }
            return Ok(NbdAddress::Tcp(hp.to_string()));
        }
        Err(format!(
            "invalid NBD address '{s}': expected unix:PATH or tcp:HOST:PORT"
        ))
    }
}

impl NbdAddress {
    /// True for a TCP address. NBD has no encryption or authentication here: anyone who
    /// can reach the port can read and write the plaintext of the export (a Unix socket is
    /// created with mode 0600, so only its owner can connect).
    pub fn is_network(&self) -> bool {
        matches!(self, NbdAddress::Tcp(_))
    }
}

impl fmt::Display for NbdAddress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NbdAddress::Unix(p) => write!(f, "unix:{}", p.display()),
            NbdAddress::Tcp(hp) => write!(f, "tcp:{hp}"),
        }
    }
}

/// TLS for an NBD export.
#[cfg(feature = "tls")]
#[derive(Debug, Clone)]
pub struct NbdTls {
    /// The server's TLS configuration (see [`lukskit_nbd::tls::server_config`]).
    pub config: Arc<lukskit_nbd::tls::ServerTlsConfig>,
    /// Refuse to negotiate an export before TLS (`--tls=require`); otherwise TLS is offered
    /// and plain clients are served too (`--tls=on`).
    pub required: bool,
}

#[cfg(feature = "tls")]
impl NbdTls {
    fn is_required(&self) -> bool {
        self.required
    }

    /// The server side of the TLS handshake over `stream` (once `NBD_OPT_STARTTLS` is
    /// acknowledged): the plaintext end of the session, `None` when the handshake failed
    /// (rustls has sent the peer an alert).
    fn accept(&self, stream: &Stream) -> io::Result<Option<UnixStream>> {
        let config = Arc::clone(&self.config);
        Ok(match stream {
            Stream::Tcp(t) => lukskit_nbd::tls::accept(t.try_clone()?, config),
            Stream::Unix(u) => lukskit_nbd::tls::accept(u.try_clone()?, config),
        }
        .ok())
    }
}

#[cfg(feature = "tls")]
impl PartialEq for NbdTls {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.config, &other.config) && self.required == other.required
    }
}

#[cfg(feature = "tls")]
impl Eq for NbdTls {}

/// TLS for an NBD export: built without the `tls` feature, no export has it (the type has no
/// values; `NBD_OPT_STARTTLS` is answered as unsupported).
#[cfg(not(feature = "tls"))]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NbdTls {}

#[cfg(not(feature = "tls"))]
impl NbdTls {
    fn is_required(&self) -> bool {
        match *self {}
    }

    fn accept(&self, _stream: &Stream) -> io::Result<Option<UnixStream>> {
        match *self {}
    }
}

/// What the server exports and how (the default: export name "", writable, no TRIM,
/// [`DEFAULT_MAX_CONNECTIONS`], [`DEFAULT_SHUTDOWN_GRACE`], [`DEFAULT_HANDSHAKE_DEADLINE`],
/// no TLS).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NbdOptions {
    /// The export's name; clients may also ask for "" (the default export).
    pub export_name: String,
    /// Refuse writes even if the backend is writable.
    pub read_only: bool,
    /// Advertise and pass on TRIM (discard) requests.
    pub allow_trim: bool,
    /// Most connections served at once (0 = unlimited); further ones are closed at once,
    /// before the greeting. Each connection may hold up to [`MAX_BYTES_IN_FLIGHT`] of
    /// requests and a few threads.
    pub max_connections: usize,
    /// At shutdown, how long connections get to finish the requests they have in flight;
    /// then their sockets are shut down in both directions (which also frees a thread
    /// blocked writing to a client that reads nothing).
    pub shutdown_grace: Duration,
    /// TLS (`NBD_OPT_STARTTLS`); `None` for none.
    pub tls: Option<NbdTls>,
    /// The longest a client may take from the accepted connection to the start of
    /// transmission (greeting, options, TLS handshake): then its connection is shut down
    /// and its slot freed, however steadily it was sending.
    pub handshake_deadline: Duration,
}

impl NbdOptions {
    /// Most connections that may be in the handshake at once: half of
    /// [`NbdOptions::max_connections`], at least 1 (0, unlimited, when connections are
    /// unlimited). A connection over this is closed at once, before the greeting, so peers
    /// that hold their handshake open (up to [`NbdOptions::handshake_deadline`]) never keep
    /// the established clients' slots or all free ones.
    pub fn max_handshakes(&self) -> usize {
        match self.max_connections {
            0 => 0,
            n => (n / 2).max(1),
        }
    }
}

impl Default for NbdOptions {
    fn default() -> Self {
        NbdOptions {
            export_name: String::new(),
            read_only: false,
            allow_trim: false,
            max_connections: DEFAULT_MAX_CONNECTIONS,
            shutdown_grace: DEFAULT_SHUTDOWN_GRACE,
            tls: None,
            handshake_deadline: DEFAULT_HANDSHAKE_DEADLINE,
        }
    }
}

/// An open connection as the server keeps track of it.
struct Connection {
    /// A handle on its socket (the network socket, also under TLS), to shut it down.
    stream: Stream,
    /// While it is in the handshake: when the handshake must be over.
    handshake_until: Option<Instant>,
}

/// State shared by the server, its connections and its shutdown handles.
struct Shared {
    stopping: AtomicBool,
    /// Written to (one byte) to wake the accept loop.
    wake: UnixStream,
    /// Every open connection, to shut them down.
    connections: Mutex<HashMap<u64, Connection>>,
    /// Signalled when a connection ends.
    ended: Condvar,
    next_id: AtomicU64,
    socket_path: Option<OwnedSocketPath>,
    threads: Threads,
}

impl Shared {
    fn connections(&self) -> MutexGuard<'_, HashMap<u64, Connection>> {
        self.connections.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Wait until no connection is left or `grace` has passed.
    fn wait_for_connections(&self, grace: Duration) {
        let deadline = Instant::now() + grace;
        let mut conns = self.connections();
        while !conns.is_empty() {
            let now = Instant::now();
            if now >= deadline {
                return;
            }
            conns = self
                .ended
                .wait_timeout(conns, deadline - now)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    }

    /// Shut every remaining connection down in both directions: blocked reads and writes
    /// of its threads fail, so they end.
    fn cut_connections(&self) {
        for c in self.connections().values() {
            c.stream.shutdown(Shutdown::Both);
        }
    }

    /// Shut down the connections whose handshake is past its deadline (their threads then
    /// fail and end, freeing the slots); the earliest deadline still pending, if any.
    fn cut_late_handshakes(&self, now: Instant) -> Option<Instant> {
        let mut next: Option<Instant> = None;
        for c in self.connections().values_mut() {
            match c.handshake_until {
                Some(t) if t <= now => {
                    c.stream.shutdown(Shutdown::Both);
                    c.handshake_until = None;
                }
                Some(t) => next = Some(next.map_or(t, |n| n.min(t))),
                None => {}
            }
        }
        next
    }
}

/// A listening NBD server.
pub struct NbdServer {
    listener: Listener,
    woken: UnixStream,
    shared: Arc<Shared>,
    opts: NbdOptions,
}

/// Stops an [`NbdServer`] from any thread.
#[derive(Clone)]
pub struct NbdShutdown {
    shared: Arc<Shared>,
}

impl NbdShutdown {
    /// Stop accepting connections and remove the Unix socket; connections stop reading
    /// requests and get [`NbdOptions::shutdown_grace`] to answer those in flight, then are
    /// cut off. [`NbdServer::serve`] returns once all have ended. Idempotent; does not
    /// block.
    pub fn shutdown(&self) {
        let sh = &self.shared;
        {
            let conns = sh.connections();
            sh.stopping.store(true, Ordering::SeqCst);
            for c in conns.values() {
                // Readers see end-of-stream; replies to requests in flight still go out.
                c.stream.shutdown(Shutdown::Read);
            }
        }
        let _ = (&sh.wake).write(&[1]);
        if let Some(p) = &sh.socket_path {
            p.remove();
        }
    }
}

/// Unregisters a connection when its thread ends.
struct Registration {
    shared: Arc<Shared>,
    id: u64,
}

impl Registration {
    /// The handshake is over: the connection no longer counts against
    /// [`NbdOptions::max_handshakes`] nor is cut at the deadline.
    fn handshake_done(&self) {
        if let Some(c) = self.shared.connections().get_mut(&self.id) {
            c.handshake_until = None;
        }
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        self.shared.connections().remove(&self.id);
        self.shared.ended.notify_all();
    }
}

impl NbdServer {
    /// Listen on `addr`; the socket accepts connections when this returns. A Unix socket
    /// is created with mode 0600 (never visible with a wider one); a stale socket at the
    /// path is removed, but any other existing file is left alone and the bind fails.
    pub fn bind(addr: &NbdAddress, opts: NbdOptions) -> io::Result<NbdServer> {
        let listener = Listener::bind(addr)?;
        let (wake, woken) = UnixStream::pair()?;
        wake.set_nonblocking(true)?;
        woken.set_nonblocking(true)?;
        let shared = Arc::new(Shared {
            stopping: AtomicBool::new(false),
            wake,
            connections: Mutex::new(HashMap::new()),
            ended: Condvar::new(),
            next_id: AtomicU64::new(0),
            socket_path: listener.socket_path().cloned(),
            threads: Threads::default(),
        });
        Ok(NbdServer {
            listener,
            woken,
            shared,
            opts,
        })
    }

    /// The address actually listened on, as `unix:PATH` or `tcp:HOST:PORT` (with the real
    /// port when port 0 was asked for).
    pub fn address(&self) -> String {
        self.listener.address()
    }

    /// A handle that stops [`NbdServer::serve`].
    pub fn shutdown_handle(&self) -> NbdShutdown {
        NbdShutdown {
            shared: Arc::clone(&self.shared),
        }
    }

    /// Serve `backend` until [`NbdShutdown::shutdown`]; then flush the backend.
    ///
    /// The export is read-only when [`NbdOptions::read_only`] is set or the backend is.
    /// Each connection runs on its own threads; `serve` returns once all of them ended,
    /// at most [`NbdOptions::shutdown_grace`] after the shutdown plus the time the
    /// requests executing then take.
    pub fn serve(&self, backend: Arc<dyn BlockBackend>) -> io::Result<()> {
        let ctx = Arc::new(ExportContext::new(&self.opts, backend.as_ref()));
        let mut threads = Vec::new();
        let result = self.accept_loop(&backend, &ctx, &mut threads);
        // Make sure every connection ends, also when the loop failed: first gently (no
        // more requests are read), then, after the grace period, by cutting them off.
        self.shutdown_handle().shutdown();
        self.shared.wait_for_connections(self.opts.shutdown_grace);
        self.shared.cut_connections();
        for t in threads {
            let _ = t.join();
        }
        let flushed = if ctx.limits.read_only {
            Ok(())
        } else {
            backend.flush()
        };
        result.and(flushed)
    }

    fn accept_loop(
        &self,
        backend: &Arc<dyn BlockBackend>,
        ctx: &Arc<ExportContext>,
        threads: &mut Vec<std::thread::JoinHandle<()>>,
    ) -> io::Result<()> {
        let sh = &self.shared;
        loop {
            if sh.stopping.load(Ordering::SeqCst) {
                return Ok(());
            }
            let next_deadline = sh.cut_late_handshakes(Instant::now());
            let wait = next_deadline.map(|t| t.saturating_duration_since(Instant::now()));
            let (incoming, _) =
                socket::wait_readable(self.listener.as_fd(), self.woken.as_fd(), wait)?;
            let mut drain = [0u8; 64];
            while matches!((&self.woken).read(&mut drain), Ok(n) if n > 0) {}
            if !incoming || sh.stopping.load(Ordering::SeqCst) {
                continue;
            }
            let stream = match self.listener.accept() {
                Ok(s) => s,
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::WouldBlock
                            | io::ErrorKind::Interrupted
                            | io::ErrorKind::ConnectionAborted
                    ) =>
                {
                    continue
                }
                Err(e) => return Err(e),
            };
            threads.retain(|t| !t.is_finished());
            // Over a limit (or stopping): dropping `stream` closes it before the greeting.
            let Some(registration) = self.register(&stream) else {
                continue;
            };
            // Each connection is told the size the backend has when it connects (a resize
            // of the mapping reaches new connections; NBD cannot tell connected clients).
            let ctx = Arc::new(ExportContext {
                limits: proto::ExportLimits {
                    size: backend.size(),
                    ..ctx.limits
                },
                name: ctx.name.clone(),
                tls: ctx.tls.clone(),
                ..**ctx
            });
            let backend = Arc::clone(backend);
            let spawned = sh.threads.spawn("nbd-conn", move || {
                let registration = registration;
                let _ = run_connection(stream, backend.as_ref(), &ctx, &registration);
            });
            match spawned {
                Ok(t) => threads.push(t),
                // Out of threads: the closure, with the stream and registration, was
                // dropped, which closed and unregistered the connection.
                Err(_) => continue,
            }
        }
    }

    /// Record a connection for shutdown and for its handshake deadline; `None` when the
    /// server is already stopping, serves [`NbdOptions::max_connections`] already or has
    /// [`NbdOptions::max_handshakes`] in the handshake.
    fn register(&self, stream: &Stream) -> Option<Registration> {
        let sh = &self.shared;
        let handle = stream.try_clone().ok()?;
        let mut conns = sh.connections();
        if sh.stopping.load(Ordering::SeqCst) {
            return None;
        }
        let max = self.opts.max_connections;
        if max > 0 && conns.len() >= max {
            return None;
        }
        let max_handshakes = self.opts.max_handshakes();
        let handshaking = conns
            .values()
            .filter(|c| c.handshake_until.is_some())
            .count();
        if max_handshakes > 0 && handshaking >= max_handshakes {
            return None;
        }
        let id = sh.next_id.fetch_add(1, Ordering::SeqCst);
        let until = Instant::now() + self.opts.handshake_deadline;
        conns.insert(
            id,
            Connection {
                stream: handle,
                handshake_until: Some(until),
            },
        );
        Some(Registration {
            shared: Arc::clone(sh),
            id,
        })
    }
}

impl Drop for NbdServer {
    fn drop(&mut self) {
        if let Some(p) = &self.shared.socket_path {
            p.remove();
        }
    }
}

/// The export as every connection sees it.
struct ExportContext {
    name: String,
    tls: Option<NbdTls>,
    handshake_deadline: Duration,
    flags: u16,
    preferred_block: u32,
    limits: proto::ExportLimits,
}

impl ExportContext {
    fn new(opts: &NbdOptions, backend: &dyn BlockBackend) -> Self {
        let read_only = opts.read_only || backend.read_only();
        let mut flags = proto::TFLAG_HAS_FLAGS
            | proto::TFLAG_SEND_FLUSH
            | proto::TFLAG_SEND_FUA
            | proto::TFLAG_SEND_WRITE_ZEROES
            | proto::TFLAG_CAN_MULTI_CONN;
        if read_only {
            flags |= proto::TFLAG_READ_ONLY;
        }
        if opts.allow_trim {
            flags |= proto::TFLAG_SEND_TRIM;
        }
        let preferred_block = backend
            .block_size()
            .max(4096)
            .checked_next_power_of_two()
            .unwrap_or(4096)
            .min(proto::MAX_PAYLOAD);
        ExportContext {
            name: opts.export_name.clone(),
            tls: opts.tls.clone(),
            handshake_deadline: opts.handshake_deadline,
            flags,
            preferred_block,
            limits: proto::ExportLimits {
                size: backend.size(),
                read_only,
                allow_trim: opts.allow_trim,
            },
        }
    }
}

fn run_connection(
    stream: Stream,
    backend: &dyn BlockBackend,
    ctx: &ExportContext,
    registration: &Registration,
) -> io::Result<()> {
    let shared = &registration.shared;
    // The accept loop shuts the connection down at the deadline whatever it is blocked in
    // (a slow TLS handshake too); the timeouts are a second bound on each step.
    stream.set_read_timeout(Some(ctx.handshake_deadline))?;
    stream.set_write_timeout(Some(ctx.handshake_deadline))?;
    let export = handshake::Export {
        name: &ctx.name,
        size: ctx.limits.size,
        flags: ctx.flags,
        preferred_block: ctx.preferred_block,
        stopping: &shared.stopping,
        tls: ctx.tls.as_ref(),
        step_timeout: ctx.handshake_deadline,
    };
    let Some(stream) = handshake::negotiate(stream, &export)? else {
        return Ok(());
    };
    registration.handshake_done();
    stream.set_read_timeout(None)?;
    stream.set_write_timeout(None)?;
    transmission::serve(stream, backend, ctx.limits, &shared.threads)
}

#[cfg(test)]
mod tests;
