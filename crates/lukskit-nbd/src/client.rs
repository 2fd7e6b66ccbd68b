//! The NBD client: one export of one server, read and written at byte offsets from any
//! number of threads.
//!
//! * **Handshake**: fixed newstyle; `NBD_OPT_STARTTLS` first for `nbds://` URIs (TLS is then
//!   required: a server that refuses it is not used in the clear);
//!   `NBD_OPT_STRUCTURED_REPLY`; `NBD_OPT_GO` asking for the block size constraints
//!   (`NBD_OPT_EXPORT_NAME` with servers that do not know `GO`).
//! * **Pipelining**: a request larger than [`ClientOptions::request_size`] is cut into
//!   pieces, of which up to [`ClientOptions::window`] are in flight on a connection at once;
//!   replies may arrive in any order and are matched by cookie.
//! * **Multi-conn**: where the server advertises `NBD_FLAG_CAN_MULTI_CONN`, up to
//!   [`ClientOptions::connections`] connections are opened as concurrent callers need them;
//!   otherwise there is one (a flush on one connection then covers every write).
//! * **Flush and FUA** are passed to the server when it advertises them.
//! * **Failures**: a connection that breaks fails the requests in flight on it with
//!   [`NbdError::Disconnected`] (an I/O error: what was not acknowledged is never assumed
//!   written) and is dropped with every idle one. The next request reconnects, retrying
//!   with exponential backoff (50 ms doubling up to 2 s) for up to
//!   [`ClientOptions::reconnect_timeout`]. A read that failed that way is retried once on
//!   the new connection (reads have no side effects); writes and flushes are not retried.
//! * **Timeouts**: the whole handshake of a connection (TCP connect, greeting, options,
//!   TLS) must finish within [`ClientOptions::handshake_timeout`] (a watchdog shuts the
//!   socket down at the deadline, so a server that trickles its greeting byte by byte is
//!   cut too), and at most [`MAX_OPTION_REPLIES`] replies to one option are accepted. In
//!   the transmission phase each reply must arrive within
//!   [`ClientOptions::request_timeout`] (and a send must not block longer): a server that
//!   stops answering breaks the connection as above, so a request fails with an I/O error
//!   after at most about request timeout + reconnect timeout + handshake timeout +
//!   request timeout instead of hanging. Requests waiting for a connection while a
//!   reconnection fails fail with it rather than queueing for their own attempt.
//! * **Hostile servers**: every length is checked against what was asked for before
//!   anything is allocated or copied; data outside the requested range is a protocol error
//!   and ends the connection.

use crate::error::NbdError;
use crate::proto::{self, be16, be32, be64};
#[cfg(feature = "tls")]
use crate::tls;

/// The TLS configuration of an `nbds://` connection.
#[cfg(feature = "tls")]
type TlsConfig = Arc<rustls::ClientConfig>;
/// Without the `tls` feature there is none (an `nbds://` URI is refused at connection).
#[cfg(not(feature = "tls"))]
type TlsConfig = std::convert::Infallible;
use crate::uri::{NbdUri, Transport};
use std::io::{self, BufReader, Read, Write};
use std::net::{Shutdown, TcpStream, ToSocketAddrs};
use std::os::unix::net::UnixStream;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// Tunables of an [`NbdClient`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientOptions {
    /// Most connections when the server allows multi-conn (default 4).
    pub connections: usize,
    /// Largest single NBD request in bytes (default 1 MiB; never more than the server's
    /// maximum block size).
    pub request_size: u32,
    /// Requests in flight per connection (default 16).
    pub window: usize,
    /// How long to keep trying to reconnect after a connection broke (default 30 s).
    pub reconnect_timeout: Duration,
    /// Timeout of each TCP connection attempt and of each read or write of the handshake
    /// (default 10 s; never more than what is left of the handshake timeout).
    pub connect_timeout: Duration,
    /// Deadline of a whole handshake, from the TCP connect to the end of option
    /// negotiation, TLS included (default 30 s).
    pub handshake_timeout: Duration,
    /// How long a request waits for each reply of the server, and a send for the server to
    /// take the data (default 60 s). When it passes, the connection is dropped and the
    /// request fails (reads are tried once more on a new connection).
    pub request_timeout: Duration,
}

/// Most option replies accepted for one option during the handshake (a server that
/// floods `NBD_REP_INFO` is cut there).
pub const MAX_OPTION_REPLIES: usize = 64;

impl ClientOptions {
    /// These options with the timeouts the URI's parameters set (`request-timeout`,
    /// `handshake-timeout`, `reconnect-timeout`).
    pub fn with_uri(mut self, uri: &NbdUri) -> ClientOptions {
        if let Some(t) = uri.request_timeout {
            self.request_timeout = t;
        }
        if let Some(t) = uri.handshake_timeout {
            self.handshake_timeout = t;
        }
        if let Some(t) = uri.reconnect_timeout {
            self.reconnect_timeout = t;
        }
        self
    }
}

impl Default for ClientOptions {
    fn default() -> Self {
        ClientOptions {
            connections: 4,
            request_size: 1 << 20,
            window: 16,
            reconnect_timeout: Duration::from_secs(30),
            connect_timeout: Duration::from_secs(10),
            handshake_timeout: Duration::from_secs(30),
            request_timeout: Duration::from_secs(60),
        }
    }
}

/// What the server said about the export.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExportInfo {
    /// Size in bytes.
    pub size: u64,
    /// Transmission flags (`NBD_FLAG_*`).
    pub flags: u16,
    /// Minimum block size (requests are aligned to it; 1 if the server said nothing).
    pub min_block: u32,
    /// Maximum request payload.
    pub max_block: u32,
}

/// One socket, plain or the plaintext end of a TLS session.
enum Sock {
    Tcp(TcpStream),
    Unix(UnixStream),
}

impl Sock {
    fn try_clone(&self) -> io::Result<Sock> {
        Ok(match self {
            Sock::Tcp(s) => Sock::Tcp(s.try_clone()?),
            Sock::Unix(s) => Sock::Unix(s.try_clone()?),
        })
    }
    fn set_timeouts(&self, t: Option<Duration>) -> io::Result<()> {
        match self {
            Sock::Tcp(s) => {
                s.set_read_timeout(t)?;
                s.set_write_timeout(t)
            }
            Sock::Unix(s) => {
                s.set_read_timeout(t)?;
                s.set_write_timeout(t)
            }
        }
    }
    fn shutdown(&self) {
        let _ = match self {
            Sock::Tcp(s) => s.shutdown(Shutdown::Both),
            Sock::Unix(s) => s.shutdown(Shutdown::Both),
        };
    }
}

impl Read for Sock {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Sock::Tcp(s) => s.read(buf),
            Sock::Unix(s) => s.read(buf),
        }
    }
}

impl Write for Sock {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Sock::Tcp(s) => s.write(buf),
            Sock::Unix(s) => s.write(buf),
        }
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// `d` in seconds for messages (`2 s`, `0.5 s`).
fn secs(d: Duration) -> String {
    format!("{} s", d.as_secs_f64())
}

/// A socket timeout of `d` (the socket calls refuse zero).
fn sock_timeout(d: Duration) -> Option<Duration> {
    Some(d.max(Duration::from_millis(1)))
}

/// One half of a connection in the transmission phase. The socket's own timeouts
/// ([`ClientOptions::request_timeout`]) bound each read and write; a read that starts after
/// `deadline` fails at once, so that a server trickling a reply cannot stretch it either.
/// Both end in [`io::ErrorKind::TimedOut`].
struct Timed {
    sock: Sock,
    deadline: Option<Instant>,
    timeout: Duration,
}

impl Timed {
    fn timed_out(&self) -> io::Error {
        io::Error::new(
            io::ErrorKind::TimedOut,
            format!(
                "the server did not answer within {} (request timeout)",
                secs(self.timeout)
            ),
        )
    }

    fn map(&self, e: io::Error) -> io::Error {
        if matches!(
            e.kind(),
            io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
        ) {
            self.timed_out()
        } else {
            e
        }
    }
}

impl Read for Timed {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.deadline.is_some_and(|d| Instant::now() >= d) {
            return Err(self.timed_out());
        }
        self.sock.read(buf).map_err(|e| self.map(e))
    }
}

impl Write for Timed {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.sock.write(buf).map_err(|e| self.map(e))
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Shuts a socket down when the handshake deadline passes (a blocked read then returns),
/// unless stopped first.
struct Watchdog {
    state: Arc<(Mutex<(bool, bool)>, Condvar)>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Watchdog {
    /// Watch `sock` (a clone of the connection's socket) until `deadline`. `None` when no
    /// thread could be started (the per-read timeouts still bound each step then).
    fn start(sock: Sock, deadline: Instant) -> Option<Watchdog> {
        let state = Arc::new((Mutex::new((false, false)), Condvar::new()));
        let st = Arc::clone(&state);
        let thread = std::thread::Builder::new()
            .name("nbd-handshake".into())
            .spawn(move || {
                let (m, cv) = &*st;
                let mut g = m.lock().unwrap_or_else(|e| e.into_inner());
                loop {
                    if g.0 {
                        return;
                    }
                    let now = Instant::now();
                    if now >= deadline {
                        g.1 = true;
                        sock.shutdown();
                        return;
                    }
                    g = cv
                        .wait_timeout(g, deadline - now)
                        .unwrap_or_else(|e| e.into_inner())
                        .0;
                }
            })
            .ok()?;
        Some(Watchdog {
            state,
            thread: Some(thread),
        })
    }

    /// Stop watching; whether the deadline had passed (the socket is shut down then).
    fn stop(mut self) -> bool {
        self.cancel()
    }

    fn cancel(&mut self) -> bool {
        let (m, cv) = &*self.state;
        m.lock().unwrap_or_else(|e| e.into_inner()).0 = true;
        cv.notify_all();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        m.lock().unwrap_or_else(|e| e.into_inner()).1
    }
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        self.cancel();
    }
}

/// One negotiated connection in the transmission phase.
struct Conn {
    reader: BufReader<Timed>,
    writer: Timed,
    structured: bool,
    next_cookie: u64,
    /// [`ClientOptions::request_timeout`].
    timeout: Duration,
}

/// Why a batch of requests failed.
enum Fail {
    /// The connection is unusable (I/O error, protocol violation).
    Conn(io::Error),
    /// The server answered with an error; the connection is fine.
    Req(NbdError),
}

impl From<io::Error> for Fail {
    fn from(e: io::Error) -> Fail {
        Fail::Conn(e)
    }
}

fn protocol(m: impl Into<String>) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, m.into())
}

/// The data of one batch.
enum Data<'a> {
    Read(&'a mut [u8]),
    Write(&'a [u8]),
    None,
}

impl Data<'_> {
    fn len(&self) -> usize {
        match self {
            Data::Read(b) => b.len(),
            Data::Write(b) => b.len(),
            Data::None => 0,
        }
    }
}

/// A request in flight.
struct Flight {
    cookie: u64,
    start: usize,
    len: usize,
    covered: usize,
    /// The parts of a read that its chunks filled so far (offsets within the piece, start ->
    /// end, adjacent parts merged): a chunk over a part already filled is a protocol error
    /// (the NBD specification forbids overlapping chunks; counting bytes alone would let
    /// two overlapping chunks pass as a whole read and leave stale bytes in the buffer).
    filled: std::collections::BTreeMap<usize, usize>,
}

/// Most separate (non-adjacent) parts one read's chunks may fill: bounds what a server can
/// make the client keep (real servers send a chunk per extent of data or hole).
const MAX_READ_PARTS: usize = 65536;

impl Flight {
    /// Record that a chunk filled `[s, e)` of this piece; `Err` with the protocol error when
    /// it overlaps a part filled before or the read is in too many parts.
    fn fill(&mut self, s: usize, e: usize) -> Result<(), String> {
        if let Some((&ps, &pe)) = self.filled.range(..=s).next_back() {
            if pe > s {
                return Err(format!(
                    "overlapping chunks at {s}..{e} and {ps}..{pe} of a read"
                ));
            }
        }
        if let Some((&ns, &ne)) = self.filled.range(s..).next() {
            if ns < e {
                return Err(format!(
                    "overlapping chunks at {s}..{e} and {ns}..{ne} of a read"
                ));
            }
        }
        // Merge with the neighbours this part touches.
        let mut start = s;
        let mut end = e;
        if let Some((&ps, &pe)) = self.filled.range(..=s).next_back() {
            if pe == s {
                self.filled.remove(&ps);
                start = ps;
            }
        }
        if let Some(ne) = self.filled.remove(&e) {
            end = ne;
        }
        if self.filled.len() >= MAX_READ_PARTS {
            return Err(format!("a read in more than {MAX_READ_PARTS} parts"));
        }
        self.filled.insert(start, end);
        self.covered += e - s;
        Ok(())
    }
}

/// Largest non-data structured reply chunk accepted (error messages).
const MAX_CHUNK_META: u32 = 64 * 1024;

impl Conn {
    /// Send `cmd` over `[offset, offset + data.len())` in pieces of `piece` bytes with up to
    /// `window` in flight, and collect every reply.
    fn run(
        &mut self,
        cmd: u16,
        flags: u16,
        offset: u64,
        mut data: Data<'_>,
        piece: usize,
        window: usize,
    ) -> Result<(), Fail> {
        let total = data.len();
        let count = if total == 0 { 1 } else { total.div_ceil(piece) };
        let mut flights: Vec<Flight> = Vec::with_capacity(window.min(count));
        let mut next = 0;
        let mut failed: Option<NbdError> = None;
        let during = match cmd {
            proto::CMD_READ => "read",
            proto::CMD_WRITE => "write",
            _ => "flush",
        };
        while next < count || !flights.is_empty() {
            while next < count && flights.len() < window {
                let start = next * piece;
                let len = piece.min(total - start);
                let cookie = self.next_cookie;
                self.next_cookie = self.next_cookie.wrapping_add(1);
                let hdr =
                    proto::encode_request(flags, cmd, cookie, offset + start as u64, len as u32);
                self.writer.write_all(&hdr)?;
                if let Data::Write(b) = &data {
                    self.writer.write_all(&b[start..start + len])?;
                }
                flights.push(Flight {
                    cookie,
                    start,
                    len,
                    covered: 0,
                    filled: std::collections::BTreeMap::new(),
                });
                next += 1;
            }
            if let Some(e) = self.reply(cmd, offset, &mut data, &mut flights, during)? {
                failed.get_or_insert(e);
            }
        }
        match failed {
            Some(e) => Err(Fail::Req(e)),
            None => Ok(()),
        }
    }

    /// Read one reply (or one structured chunk). Returns the request's error, if the
    /// request finished with one.
    fn reply(
        &mut self,
        cmd: u16,
        offset: u64,
        data: &mut Data<'_>,
        flights: &mut Vec<Flight>,
        during: &'static str,
    ) -> Result<Option<NbdError>, Fail> {
        self.reader.get_mut().deadline = Some(Instant::now() + self.timeout);
        let r = &mut self.reader;
        let mut magic = [0u8; 4];
        r.read_exact(&mut magic)?;
        let find = |flights: &Vec<Flight>, cookie: u64| {
            flights
                .iter()
                .position(|f| f.cookie == cookie)
                .ok_or_else(|| protocol(format!("reply for unknown cookie {cookie:#x}")))
        };
        match u32::from_be_bytes(magic) {
            proto::SIMPLE_REPLY_MAGIC => {
                let mut h = [0u8; 12];
                r.read_exact(&mut h)?;
                let (errno, cookie) = (be32(&h, 0), be64(&h, 4));
                let i = find(flights, cookie)?;
                let f = flights.swap_remove(i);
                if errno != 0 {
                    return Ok(Some(NbdError::Server {
                        during,
                        errno,
                        message: String::new(),
                    }));
                }
                if cmd == proto::CMD_READ {
                    if self.structured {
                        return Err(protocol(
                            "simple reply with data after structured replies were negotiated",
                        )
                        .into());
                    }
                    if let Data::Read(b) = data {
                        r.read_exact(&mut b[f.start..f.start + f.len])?;
                    }
                }
                Ok(None)
            }
            proto::STRUCTURED_REPLY_MAGIC if self.structured => {
                let mut h = [0u8; 16];
                r.read_exact(&mut h)?;
                let (flags, kind, cookie, len) =
                    (be16(&h, 0), be16(&h, 2), be64(&h, 4), be32(&h, 12));
                let i = find(flights, cookie)?;
                let mut result = None;
                match kind {
                    proto::REPLY_TYPE_NONE => {
                        if len != 0 || flags & proto::REPLY_FLAG_DONE == 0 {
                            return Err(protocol("bad NBD_REPLY_TYPE_NONE chunk").into());
                        }
                    }
                    proto::REPLY_TYPE_OFFSET_DATA | proto::REPLY_TYPE_OFFSET_HOLE => {
                        let Data::Read(buf) = data else {
                            return Err(protocol("data chunk in the reply to a non-read").into());
                        };
                        let hole = kind == proto::REPLY_TYPE_OFFSET_HOLE;
                        if (hole && len != 12) || (!hole && len <= 8) {
                            return Err(protocol("bad length of a data chunk").into());
                        }
                        let mut o = [0u8; 8];
                        r.read_exact(&mut o)?;
                        let at = be64(&o, 0);
                        let n = if hole {
                            let mut l = [0u8; 4];
                            r.read_exact(&mut l)?;
                            u64::from(be32(&l, 0))
                        } else {
                            u64::from(len - 8)
                        };
                        let f = &mut flights[i];
                        let lo = offset + f.start as u64;
                        let hi = lo + f.len as u64;
                        if at < lo || at.checked_add(n).is_none_or(|e| e > hi) {
                            return Err(protocol(format!(
                                "server sent {n} bytes at {at} for a read of {lo}..{hi}"
                            ))
                            .into());
                        }
                        let rel = (at - lo) as usize;
                        f.fill(rel, rel + n as usize).map_err(protocol)?;
                        let s = f.start + rel;
                        let dst = &mut buf[s..s + n as usize];
                        if hole {
                            dst.fill(0);
                        } else {
                            r.read_exact(dst)?;
                        }
                    }
                    k if k & proto::REPLY_TYPE_ERROR_BIT != 0 => {
                        if !(6..=MAX_CHUNK_META).contains(&len) {
                            return Err(protocol("bad length of an error chunk").into());
                        }
                        let mut b = vec![0u8; len as usize];
                        r.read_exact(&mut b)?;
                        let errno = be32(&b, 0);
                        let mlen = usize::from(be16(&b, 4));
                        if 6 + mlen > b.len() {
                            return Err(protocol("error message longer than its chunk").into());
                        }
                        let message = String::from_utf8_lossy(&b[6..6 + mlen]).into_owned();
                        result = Some(NbdError::Server {
                            during,
                            errno: if errno == 0 { 5 } else { errno },
                            message,
                        });
                    }
                    k => {
                        return Err(protocol(format!("unexpected structured reply type {k}")).into())
                    }
                }
                if flags & proto::REPLY_FLAG_DONE != 0 {
                    let f = flights.swap_remove(i);
                    if result.is_none() && cmd == proto::CMD_READ && f.covered != f.len {
                        return Err(protocol(format!(
                            "read reply covered {} of {} bytes",
                            f.covered, f.len
                        ))
                        .into());
                    }
                }
                Ok(result)
            }
            m => Err(protocol(format!("bad reply magic {m:#x}")).into()),
        }
    }

    /// Send `NBD_CMD_DISC` and wait (briefly) for the server to close, so that a TLS
    /// session ends with `close_notify` rather than a cut connection.
    fn disconnect(mut self) {
        let hdr = proto::encode_request(0, proto::CMD_DISC, 0, 0, 0);
        if self.writer.write_all(&hdr).is_ok() {
            let _ = match &self.writer.sock {
                Sock::Tcp(s) => s.shutdown(Shutdown::Write),
                Sock::Unix(s) => s.shutdown(Shutdown::Write),
            };
            let r = self.reader.get_mut();
            r.deadline = Some(Instant::now() + Duration::from_secs(2));
            let _ = r.sock.set_timeouts(Some(Duration::from_secs(2)));
            let mut sink = [0u8; 4096];
            while matches!(self.reader.read(&mut sink), Ok(n) if n > 0) {}
        }
        self.writer.sock.shutdown();
    }
}

/// Read one option reply: (reply type, payload). Checks magic and option.
fn option_reply(r: &mut impl Read, option: u32) -> Result<(u32, Vec<u8>), NbdError> {
    let mut h = [0u8; 20];
    r.read_exact(&mut h).map_err(handshake_io)?;
    if be64(&h, 0) != proto::OPTION_REPLY_MAGIC || be32(&h, 8) != option {
        return Err(NbdError::Protocol(format!(
            "bad reply to option {option} during the handshake"
        )));
    }
    let len = be32(&h, 16);
    if len > MAX_CHUNK_META {
        return Err(NbdError::Protocol(format!("option reply of {len} bytes")));
    }
    let mut data = vec![0u8; len as usize];
    r.read_exact(&mut data).map_err(handshake_io)?;
    Ok((be32(&h, 12), data))
}

fn handshake_io(e: io::Error) -> NbdError {
    NbdError::Protocol(format!("handshake: {e}"))
}

fn refused(what: &str, reply: u32, data: &[u8]) -> NbdError {
    let msg = String::from_utf8_lossy(data);
    let why = match reply {
        proto::REP_ERR_TLS_REQD => "the server requires TLS (use an nbds:// URI)".to_string(),
        proto::REP_ERR_UNKNOWN => "no such export".to_string(),
        proto::REP_ERR_POLICY => "forbidden by the server's policy".to_string(),
        proto::REP_ERR_UNSUP => "not supported by the server".to_string(),
        proto::REP_ERR_BLOCK_SIZE_REQD => "the server requires block size negotiation".to_string(),
        r => format!("error {:#x}", r & !proto::REP_FLAG_ERROR),
    };
    if msg.is_empty() {
        NbdError::Refused(format!("{what}: {why}"))
    } else {
        NbdError::Refused(format!("{what}: {why} ({msg})"))
    }
}

fn connect_socket(uri: &NbdUri, timeout: Duration) -> Result<Sock, NbdError> {
    let err = |source| NbdError::Connect {
        server: uri.server(),
        source,
    };
    match &uri.transport {
        Transport::Tcp { host, port } => {
            let addrs = (host.as_str(), *port).to_socket_addrs().map_err(err)?;
            let mut last = io::Error::new(io::ErrorKind::NotFound, "host has no address");
            for a in addrs {
                match TcpStream::connect_timeout(&a, timeout) {
                    Ok(s) => {
                        s.set_nodelay(true).map_err(err)?;
                        return Ok(Sock::Tcp(s));
                    }
                    Err(e) => last = e,
                }
            }
            Err(err(last))
        }
        Transport::Unix(p) => UnixStream::connect(p).map(Sock::Unix).map_err(err),
    }
}

/// Open one connection and negotiate the export, all within the handshake timeout.
fn negotiate(
    uri: &NbdUri,
    tls: Option<&TlsConfig>,
    opts: &ClientOptions,
) -> Result<(Conn, ExportInfo), NbdError> {
    let deadline = Instant::now() + opts.handshake_timeout;
    let s = connect_socket(uri, opts.connect_timeout.min(opts.handshake_timeout))?;
    let dog = s
        .try_clone()
        .ok()
        .and_then(|c| Watchdog::start(c, deadline));
    let r = handshake(uri, tls, opts, s, deadline);
    let fired = dog.is_some_and(Watchdog::stop);
    if fired || (r.is_err() && Instant::now() >= deadline) {
        return Err(NbdError::Connect {
            server: uri.server(),
            source: io::Error::new(
                io::ErrorKind::TimedOut,
                format!(
                    "the handshake did not finish within {} (handshake timeout)",
                    secs(opts.handshake_timeout)
                ),
            ),
        });
    }
    r
}

/// The handshake of [`negotiate`] on the connected socket `s`.
fn handshake(
    uri: &NbdUri,
    tls: Option<&TlsConfig>,
    opts: &ClientOptions,
    mut s: Sock,
    deadline: Instant,
) -> Result<(Conn, ExportInfo), NbdError> {
    let step = |deadline: Instant| {
        sock_timeout(
            opts.connect_timeout
                .min(deadline.saturating_duration_since(Instant::now())),
        )
    };
    s.set_timeouts(step(deadline)).map_err(handshake_io)?;
    let mut g = [0u8; 18];
    s.read_exact(&mut g).map_err(|e| NbdError::Connect {
        server: uri.server(),
        source: if matches!(
            e.kind(),
            io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
        ) {
            io::Error::new(
                io::ErrorKind::TimedOut,
                format!(
                    "no greeting within {} s (a server that serves one client at a time, \
                     such as qemu-nbd without --shared=N, is busy: lukskit needs 2)",
                    opts.connect_timeout.as_secs()
                ),
            )
        } else {
            e
        },
    })?;
    if be64(&g, 0) != proto::NBD_MAGIC {
        return Err(NbdError::Protocol(format!(
            "{} is not an NBD server",
            uri.server()
        )));
    }
    if be64(&g, 8) != proto::IHAVEOPT {
        return Err(NbdError::Protocol(
            "oldstyle NBD servers are not supported".into(),
        ));
    }
    let sflags = be16(&g, 16);
    if sflags & proto::FLAG_FIXED_NEWSTYLE == 0 {
        return Err(NbdError::Protocol(
            "the server does not speak fixed newstyle".into(),
        ));
    }
    let no_zeroes = sflags & proto::FLAG_NO_ZEROES != 0;
    let cflags = proto::FLAG_C_FIXED_NEWSTYLE
        | if no_zeroes {
            proto::FLAG_C_NO_ZEROES
        } else {
            0
        };
    s.write_all(&cflags.to_be_bytes()).map_err(handshake_io)?;
    #[cfg(not(feature = "tls"))]
    if let Some(never) = tls {
        match *never {}
    }
    #[cfg(feature = "tls")]
    if let Some(cfg) = tls {
        s.write_all(&proto::encode_option(proto::OPT_STARTTLS, &[]))
            .map_err(handshake_io)?;
        let (rep, data) = option_reply(&mut s, proto::OPT_STARTTLS)?;
        if rep != proto::REP_ACK {
            return Err(refused("TLS (NBD_OPT_STARTTLS)", rep, &data));
        }
        let net = s;
        let plain = match net {
            Sock::Tcp(t) => tls::connect(t, Arc::clone(cfg), &uri.server_name())?,
            Sock::Unix(u) => tls::connect(u, Arc::clone(cfg), &uri.server_name())?,
        };
        s = Sock::Unix(plain);
        s.set_timeouts(step(deadline)).map_err(handshake_io)?;
    }
    s.write_all(&proto::encode_option(proto::OPT_STRUCTURED_REPLY, &[]))
        .map_err(handshake_io)?;
    let (rep, data) = option_reply(&mut s, proto::OPT_STRUCTURED_REPLY)?;
    if rep == proto::REP_ERR_TLS_REQD {
        return Err(refused("structured replies", rep, &data));
    }
    let structured = rep == proto::REP_ACK;
    s.write_all(&proto::encode_option(
        proto::OPT_GO,
        &proto::go_payload(&uri.export),
    ))
    .map_err(handshake_io)?;
    let mut info = ExportInfo {
        size: 0,
        flags: 0,
        min_block: 1,
        max_block: 32 << 20,
    };
    let mut have_export = false;
    let mut replies = 0;
    loop {
        replies += 1;
        if replies > MAX_OPTION_REPLIES {
            return Err(NbdError::Protocol(format!(
                "more than {MAX_OPTION_REPLIES} replies to NBD_OPT_GO"
            )));
        }
        let (rep, data) = option_reply(&mut s, proto::OPT_GO)?;
        match rep {
            proto::REP_ACK => break,
            proto::REP_INFO if data.len() >= 2 => match be16(&data, 0) {
                proto::INFO_EXPORT if data.len() == 12 => {
                    info.size = be64(&data, 2);
                    info.flags = be16(&data, 10);
                    have_export = true;
                }
                proto::INFO_BLOCK_SIZE if data.len() == 14 => {
                    let (min, max) = (be32(&data, 2), be32(&data, 10));
                    if min == 0 || !min.is_power_of_two() || min > 64 * 1024 || max < min {
                        return Err(NbdError::Protocol(format!(
                            "impossible block sizes: minimum {min}, maximum {max}"
                        )));
                    }
                    info.min_block = min;
                    info.max_block = max;
                }
                _ => {}
            },
            proto::REP_INFO => {}
            proto::REP_ERR_UNSUP => {
                // An old server without NBD_OPT_GO.
                s.write_all(&proto::encode_option(
                    proto::OPT_EXPORT_NAME,
                    uri.export.as_bytes(),
                ))
                .map_err(handshake_io)?;
                let mut b = [0u8; 10];
                s.read_exact(&mut b).map_err(|_| {
                    NbdError::Refused(format!("export '{}': no such export", uri.export))
                })?;
                if !no_zeroes {
                    let mut z = [0u8; 124];
                    s.read_exact(&mut z).map_err(handshake_io)?;
                }
                info.size = be64(&b, 0);
                info.flags = be16(&b, 8);
                have_export = true;
                break;
            }
            r if r & proto::REP_FLAG_ERROR != 0 => {
                return Err(refused(&format!("export '{}'", uri.export), r, &data))
            }
            _ => {}
        }
    }
    if !have_export {
        return Err(NbdError::Protocol(
            "the server sent no export information".into(),
        ));
    }
    s.set_timeouts(sock_timeout(opts.request_timeout))
        .map_err(handshake_io)?;
    let writer = s.try_clone().map_err(handshake_io)?;
    let timed = |sock| Timed {
        sock,
        deadline: None,
        timeout: opts.request_timeout,
    };
    Ok((
        Conn {
            reader: BufReader::with_capacity(256 * 1024, timed(s)),
            writer: timed(writer),
            structured,
            next_cookie: 1,
            timeout: opts.request_timeout,
        },
        info,
    ))
}

struct Pool {
    idle: Vec<Conn>,
    open: usize,
    /// Since when the server has been unreachable: set when a connection breaks, cleared
    /// (with a "reconnected" event) when a new one is made.
    down_since: Option<Instant>,
    /// Reconnections that failed and connections that timed out so far, and the last
    /// one's error: a request that waited for a connection while one failed fails with it
    /// (rather than trying the same stalled server in its turn).
    failures: u64,
    last_failure: String,
}

/// What a client tells of its connections (for the serving process's log): the message and
/// whether it is a loss (`true`: a warning) rather than a recovery. See
/// [`NbdClient::on_event`].
pub type EventSink = Arc<dyn Fn(&str, bool) + Send + Sync>;

/// A connected NBD export (see the module documentation).
pub struct NbdClient {
    uri: NbdUri,
    opts: ClientOptions,
    tls: Option<TlsConfig>,
    info: ExportInfo,
    max_conns: usize,
    piece: usize,
    pool: Mutex<Pool>,
    freed: Condvar,
    /// Serialises read-modify-write of requests not aligned to the minimum block size.
    rmw: Mutex<()>,
    /// Told when a connection breaks, when a reconnection fails and when one succeeds.
    events: Mutex<Option<EventSink>>,
}

impl std::fmt::Debug for NbdClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NbdClient")
            .field("uri", &self.uri.text)
            .field("info", &self.info)
            .finish()
    }
}

impl NbdClient {
    /// Connect to the export `uri` names (one attempt: an unreachable server is an error at
    /// once) and negotiate it.
    pub fn connect(uri: &NbdUri, opts: ClientOptions) -> Result<NbdClient, NbdError> {
        #[cfg(not(feature = "tls"))]
        if uri.tls {
            return Err(NbdError::Tls(
                "this build has no TLS support (lukskit-nbd's `tls` feature)".into(),
            ));
        }
        #[cfg(not(feature = "tls"))]
        let tls = None;
        #[cfg(feature = "tls")]
        let tls = if uri.tls {
            Some(tls::client_config(
                uri.tls_certificates.as_deref(),
                uri.tls_verify_peer,
            )?)
        } else {
            None
        };
        let (conn, info) = negotiate(uri, tls.as_ref(), &opts)?;
        let max_conns = if info.flags & proto::TFLAG_CAN_MULTI_CONN != 0 {
            opts.connections.max(1)
        } else {
            1
        };
        let piece = (opts.request_size.min(info.max_block).max(info.min_block) / info.min_block
            * info.min_block) as usize;
        Ok(NbdClient {
            uri: uri.clone(),
            tls,
            info,
            max_conns,
            piece,
            pool: Mutex::new(Pool {
                idle: vec![conn],
                open: 1,
                down_since: None,
                failures: 0,
                last_failure: String::new(),
            }),
            freed: Condvar::new(),
            rmw: Mutex::new(()),
            events: Mutex::new(None),
            opts,
        })
    }

    /// Call `sink` from now on when the server is lost (the first connection that breaks,
    /// "lost the connection ...") and when a connection is made again after that
    /// ("reconnected ..."). A reconnection that fails is the error of the request that
    /// needed it ("...; reconnecting failed: ..."). Replaces an earlier sink.
    pub fn on_event(&self, sink: EventSink) {
        *self.events.lock().unwrap_or_else(|e| e.into_inner()) = Some(sink);
    }

    fn event(&self, message: &str, error: bool) {
        let sink = self
            .events
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        if let Some(sink) = sink {
            sink(message, error);
        }
    }

    /// The URI this client was opened with.
    pub fn uri(&self) -> &NbdUri {
        &self.uri
    }

    /// What the server said about the export.
    pub fn info(&self) -> ExportInfo {
        self.info
    }

    /// Export size in bytes.
    pub fn size(&self) -> u64 {
        self.info.size
    }

    /// Whether the export is read-only.
    pub fn read_only(&self) -> bool {
        self.info.flags & proto::TFLAG_READ_ONLY != 0
    }

    /// Most connections this client opens (1 unless the server allows multi-conn).
    pub fn max_connections(&self) -> usize {
        self.max_conns
    }

    /// Connections currently open.
    pub fn open_connections(&self) -> usize {
        self.lock().open
    }

    fn lock(&self) -> MutexGuard<'_, Pool> {
        self.pool.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// An idle connection, a new one if the limit allows, or wait for one.
    fn take(&self) -> Result<Conn, NbdError> {
        let mut p = self.lock();
        let failures = p.failures;
        loop {
            if let Some(c) = p.idle.pop() {
                return Ok(c);
            }
            if p.failures != failures {
                return Err(NbdError::Disconnected {
                    server: self.uri.server(),
                    during: "wait for a connection",
                    source: io::Error::new(io::ErrorKind::TimedOut, p.last_failure.clone()),
                });
            }
            if p.open < self.max_conns {
                p.open += 1;
                drop(p);
                return match self.reconnect() {
                    Ok(c) => {
                        let down = self.lock().down_since.take();
                        if let Some(t) = down {
                            self.event(
                                &format!(
                                    "reconnected to the NBD server {} ({:.1} s after the \
                                     connection broke)",
                                    self.uri.server(),
                                    t.elapsed().as_secs_f64()
                                ),
                                false,
                            );
                        }
                        Ok(c)
                    }
                    Err(e) => {
                        let mut p = self.lock();
                        p.open -= 1;
                        p.failures += 1;
                        p.last_failure = e.to_string();
                        drop(p);
                        self.freed.notify_all();
                        Err(e)
                    }
                };
            }
            p = self.freed.wait(p).unwrap_or_else(|e| e.into_inner());
        }
    }

    fn give(&self, c: Conn) {
        self.lock().idle.push(c);
        self.freed.notify_one();
    }

    /// A connection broke (`why`): drop it and every idle one (the server probably went
    /// away). A timeout also fails the requests waiting for a connection.
    fn lost(&self, why: &io::Error) {
        let (stale, first) = {
            let mut p = self.lock();
            if why.kind() == io::ErrorKind::TimedOut {
                p.failures += 1;
                p.last_failure = why.to_string();
            }
            let stale = std::mem::take(&mut p.idle);
            p.open -= 1 + stale.len();
            let first = p.down_since.is_none();
            if first {
                p.down_since = Some(Instant::now());
            }
            (stale, first)
        };
        if first {
            self.event(
                &format!(
                    "lost the connection to the NBD server {}: {why}; reconnecting",
                    self.uri.server()
                ),
                true,
            );
        }
        for c in stale {
            c.writer.sock.shutdown();
        }
        self.freed.notify_all();
    }

    /// Open a connection, retrying with backoff for up to the reconnect timeout.
    fn reconnect(&self) -> Result<Conn, NbdError> {
        let deadline = Instant::now() + self.opts.reconnect_timeout;
        let mut delay = Duration::from_millis(50);
        loop {
            match negotiate(&self.uri, self.tls.as_ref(), &self.opts) {
                Ok((c, info)) => {
                    if info.size != self.info.size {
                        return Err(NbdError::Protocol(format!(
                            "the export's size changed from {} to {} bytes",
                            self.info.size, info.size
                        )));
                    }
                    return Ok(c);
                }
                Err(e @ (NbdError::Connect { .. } | NbdError::Protocol(_)))
                    if Instant::now() + delay < deadline =>
                {
                    let _ = e;
                    std::thread::sleep(delay);
                    delay = (delay * 2).min(Duration::from_secs(2));
                }
                Err(e) => return Err(e),
            }
        }
    }

    fn op(&self, cmd: u16, flags: u16, offset: u64, mut data: Data<'_>) -> io::Result<()> {
        let attempts = if cmd == proto::CMD_READ { 2 } else { 1 };
        let during = match cmd {
            proto::CMD_READ => "read",
            proto::CMD_WRITE => "write",
            _ => "flush",
        };
        let mut attempt = 0;
        let mut lost: Option<io::Error> = None;
        loop {
            attempt += 1;
            let mut c = match (self.take(), lost.take()) {
                (Ok(c), _) => c,
                (Err(e), None) => return Err(e.into()),
                (Err(e), Some(source)) => {
                    return Err(NbdError::Disconnected {
                        server: self.uri.server(),
                        during,
                        source: io::Error::new(
                            source.kind(),
                            format!("{source}; reconnecting failed: {e}"),
                        ),
                    }
                    .into())
                }
            };
            let d = match &mut data {
                Data::Read(b) => Data::Read(b),
                Data::Write(b) => Data::Write(b),
                Data::None => Data::None,
            };
            match c.run(cmd, flags, offset, d, self.piece, self.opts.window.max(1)) {
                Ok(()) => {
                    self.give(c);
                    return Ok(());
                }
                Err(Fail::Req(e)) => {
                    self.give(c);
                    return Err(e.into());
                }
                Err(Fail::Conn(source)) => {
                    c.writer.sock.shutdown();
                    drop(c);
                    self.lost(&source);
                    if attempt >= attempts {
                        return Err(NbdError::Disconnected {
                            server: self.uri.server(),
                            during,
                            source,
                        }
                        .into());
                    }
                    lost = Some(source);
                }
            }
        }
    }

    fn check_range(&self, offset: u64, len: usize) -> io::Result<()> {
        match offset.checked_add(len as u64) {
            Some(e) if e <= self.info.size => Ok(()),
            _ => Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                format!(
                    "{} bytes at {offset} lie beyond the end of the NBD export ({} bytes)",
                    len, self.info.size
                ),
            )),
        }
    }

    /// The aligned span covering `[offset, offset + len)` when it is not aligned to the
    /// server's minimum block size.
    fn unaligned(&self, offset: u64, len: usize) -> Option<(u64, usize)> {
        let m = u64::from(self.info.min_block);
        if m == 1 || (offset.is_multiple_of(m) && (len as u64).is_multiple_of(m)) {
            return None;
        }
        let lo = offset / m * m;
        let hi = (offset + len as u64).div_ceil(m) * m;
        Some((lo, (hi - lo) as usize))
    }

    /// Read `buf.len()` bytes at `offset`.
    pub fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        self.check_range(offset, buf.len())?;
        if buf.is_empty() {
            return Ok(());
        }
        if let Some((lo, n)) = self.unaligned(offset, buf.len()) {
            let mut tmp = vec![0u8; n];
            self.op(proto::CMD_READ, 0, lo, Data::Read(&mut tmp))?;
            let s = (offset - lo) as usize;
            buf.copy_from_slice(&tmp[s..s + buf.len()]);
            return Ok(());
        }
        self.op(proto::CMD_READ, 0, offset, Data::Read(buf))
    }

    /// Write `buf` at `offset`; with `fua` the data is durable when this returns (the
    /// server's FUA flag, or a flush when it has none).
    pub fn write_at(&self, buf: &[u8], offset: u64, fua: bool) -> io::Result<()> {
        if self.read_only() {
            return Err(NbdError::ReadOnly.into());
        }
        self.check_range(offset, buf.len())?;
        if buf.is_empty() {
            return Ok(());
        }
        let has_fua = self.info.flags & proto::TFLAG_SEND_FUA != 0;
        let flags = if fua && has_fua {
            proto::CMD_FLAG_FUA
        } else {
            0
        };
        if let Some((lo, n)) = self.unaligned(offset, buf.len()) {
            let _g = self.rmw.lock().unwrap_or_else(|e| e.into_inner());
            let mut tmp = vec![0u8; n];
            self.op(proto::CMD_READ, 0, lo, Data::Read(&mut tmp))?;
            let s = (offset - lo) as usize;
            tmp[s..s + buf.len()].copy_from_slice(buf);
            self.op(proto::CMD_WRITE, flags, lo, Data::Write(&tmp))?;
        } else {
            self.op(proto::CMD_WRITE, flags, offset, Data::Write(buf))?;
        }
        if fua && !has_fua {
            self.flush()?;
        }
        Ok(())
    }

    /// Make every write acknowledged so far durable on the server (`NBD_CMD_FLUSH`; with
    /// multi-conn one flush covers all connections). A no-op on servers without flush.
    pub fn flush(&self) -> io::Result<()> {
        if self.info.flags & proto::TFLAG_SEND_FLUSH == 0 {
            return Ok(());
        }
        self.op(proto::CMD_FLUSH, 0, 0, Data::None)
    }
}

impl Drop for NbdClient {
    fn drop(&mut self) {
        let idle = std::mem::take(&mut self.lock().idle);
        for c in idle {
            c.disconnect();
        }
    }
}
