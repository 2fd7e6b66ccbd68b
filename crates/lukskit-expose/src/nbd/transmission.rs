//! The transmission phase of one connection: requests are read in order by whichever
//! worker holds the read half, executed in parallel, and answered with simple replies
//! written one at a time.
//!
//! Memory per connection is bounded whatever the client does: a request is only read once
//! it fits in the connection's budget of bytes in flight ([`MAX_BYTES_IN_FLIGHT`]: read
//! but not yet answered, payloads and reply buffers included). A client that sends
//! requests without collecting the replies therefore stops being read (backpressure: its
//! requests wait in the socket) until replies drain.

use super::proto::{self, Command, ExportLimits, Request};
use super::socket::Stream;
use super::threads::Threads;
use crate::backend::BlockBackend;
use std::io::{self, Read, Write};
use std::net::Shutdown;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard};

/// Requests of one connection executed at the same time.
pub(crate) const WORKERS_PER_CONNECTION: usize = 4;

/// Most bytes a connection has in flight: one request of the largest size, or several
/// smaller ones adding up to as much. A request is counted from when it is read until its
/// reply has been sent, with its payload or reply data and its reply header.
pub const MAX_BYTES_IN_FLIGHT: usize = proto::SIMPLE_REPLY_LEN + proto::MAX_PAYLOAD as usize;

/// A worker keeps at most this much buffer between requests (larger ones are freed).
const KEEP_BUFFER: usize = 4 * 1024 * 1024;

struct ReadHalf {
    stream: Stream,
    done: bool,
}

struct Connection<'a> {
    reader: Mutex<ReadHalf>,
    writer: Mutex<Stream>,
    /// A third handle on the socket, to shut it down without taking a lock.
    control: Stream,
    backend: &'a dyn BlockBackend,
    limits: ExportLimits,
    /// Bytes of the requests read and not yet answered.
    in_flight: Mutex<usize>,
    /// Signalled when `in_flight` drops or the connection stops.
    drained: Condvar,
    /// The connection is being torn down: nothing more is read.
    stopped: AtomicBool,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Serve requests on `stream` until the client disconnects, sends garbage or the server
/// shuts the read half down; requests already read are answered first.
///
/// The calling thread is one worker; the others are started through `threads`. When the
/// system refuses some of them, the connection is served by those that did start.
pub(crate) fn serve(
    stream: Stream,
    backend: &dyn BlockBackend,
    limits: ExportLimits,
    threads: &Threads,
) -> io::Result<()> {
    let writer = stream.try_clone()?;
    let control = stream.try_clone()?;
    let conn = Connection {
        reader: Mutex::new(ReadHalf {
            stream,
            done: false,
        }),
        writer: Mutex::new(writer),
        control,
        backend,
        limits,
        in_flight: Mutex::new(0),
        drained: Condvar::new(),
        stopped: AtomicBool::new(false),
    };
    std::thread::scope(|scope| {
        for _ in 1..WORKERS_PER_CONNECTION {
            if threads
                .spawn_scoped(scope, "nbd-worker", || worker(&conn))
                .is_err()
            {
                // Out of threads: fewer workers only means fewer requests in parallel.
                break;
            }
        }
        worker(&conn);
    });
    Ok(())
}

/// A request's share of the connection's budget, returned when dropped (after its reply
/// was sent or failed).
struct Admitted<'c, 'a> {
    conn: &'c Connection<'a>,
    bytes: usize,
}

impl Drop for Admitted<'_, '_> {
    fn drop(&mut self) {
        *lock(&self.conn.in_flight) -= self.bytes;
        self.conn.drained.notify_all();
    }
}

/// Bytes `req` holds while in flight.
fn cost(req: &Request) -> usize {
    let data = match req.command {
        Command::Read | Command::Write if req.length <= proto::MAX_PAYLOAD => req.length as usize,
        _ => 0,
    };
    proto::SIMPLE_REPLY_LEN + data
}

/// Wait until `bytes` more fit in the connection's budget (always true when nothing is in
/// flight), and take them; `None` once the connection stops.
fn admit<'c, 'a>(conn: &'c Connection<'a>, bytes: usize) -> Option<Admitted<'c, 'a>> {
    let mut in_flight = lock(&conn.in_flight);
    loop {
        if conn.stopped.load(Ordering::SeqCst) {
            return None;
        }
        if *in_flight == 0 || *in_flight + bytes <= MAX_BYTES_IN_FLIGHT {
            *in_flight += bytes;
            return Some(Admitted { conn, bytes });
        }
        in_flight = conn
            .drained
            .wait(in_flight)
            .unwrap_or_else(|e| e.into_inner());
    }
}

/// What the reader got.
enum Next<'c, 'a> {
    /// A request and its share of the budget; for writes the payload is in
    /// `buf[SIMPLE_REPLY_LEN..][..length]`.
    Request(Request, Admitted<'c, 'a>),
    /// The connection is over (disconnect, error, hostile input).
    Stop,
}

fn worker(conn: &Connection<'_>) {
    let mut buf: Vec<u8> = Vec::new();
    loop {
        let (req, admitted) = match read_next(conn, &mut buf) {
            Next::Request(r, a) => (r, a),
            Next::Stop => return,
        };
        let error = execute(conn, &req, &mut buf);
        let header = proto::encode_simple_reply(error, req.handle);
        let sent = if error == 0 && req.command == Command::Read {
            let end = proto::SIMPLE_REPLY_LEN + req.length as usize;
            buf[..proto::SIMPLE_REPLY_LEN].copy_from_slice(&header);
            (&*lock(&conn.writer)).write_all(&buf[..end])
        } else {
            (&*lock(&conn.writer)).write_all(&header)
        };
        drop(admitted);
        if sent.is_err() {
            stop(conn);
            return;
        }
        if buf.capacity() > KEEP_BUFFER {
            buf = Vec::new();
        }
    }
}

/// Stop the connection at once (both directions): other workers' reads and writes fail,
/// and a worker waiting for budget gives up.
fn stop(conn: &Connection<'_>) {
    {
        let _in_flight = lock(&conn.in_flight);
        conn.stopped.store(true, Ordering::SeqCst);
    }
    conn.drained.notify_all();
    conn.control.shutdown(Shutdown::Both);
}

/// Make `buf` hold at least the reply header and `len` bytes; false when the memory cannot
/// be had (the allocation failed instead of aborting the process).
fn ensure(buf: &mut Vec<u8>, len: u32) -> bool {
    let need = proto::SIMPLE_REPLY_LEN + len as usize;
    if buf.len() < need {
        if buf.try_reserve_exact(need - buf.len()).is_err() {
            return false;
        }
        buf.resize(need, 0);
    }
    true
}

fn read_next<'c, 'a>(conn: &'c Connection<'a>, buf: &mut Vec<u8>) -> Next<'c, 'a> {
    let mut r = lock(&conn.reader);
    if r.done {
        return Next::Stop;
    }
    let mut header = [0u8; proto::REQUEST_LEN];
    let req = match (&r.stream)
        .read_exact(&mut header)
        .ok()
        .and_then(|_| proto::parse_request(&header).ok())
    {
        Some(req) => req,
        None => {
            // End of stream, read error or bad magic: nothing more can be trusted.
            r.done = true;
            return Next::Stop;
        }
    };
    if req.command == Command::Disc {
        r.done = true;
        return Next::Stop;
    }
    if req.command == Command::Write && req.length > proto::MAX_PAYLOAD {
        // Refusing would mean reading the payload anyway: drop the connection.
        r.done = true;
        drop(r);
        stop(conn);
        return Next::Stop;
    }
    // Backpressure: the read half stays locked while the budget is short, so nothing more
    // is read from this client until replies in flight have been sent.
    let Some(admitted) = admit(conn, cost(&req)) else {
        r.done = true;
        return Next::Stop;
    };
    if req.command == Command::Write {
        if !ensure(buf, req.length) {
            // Out of memory for the payload: it cannot be skipped cheaply, so end here.
            r.done = true;
            drop(r);
            drop(admitted);
            stop(conn);
            return Next::Stop;
        }
        let end = proto::SIMPLE_REPLY_LEN + req.length as usize;
        if (&r.stream)
            .read_exact(&mut buf[proto::SIMPLE_REPLY_LEN..end])
            .is_err()
        {
            r.done = true;
            return Next::Stop;
        }
    }
    Next::Request(req, admitted)
}

/// Run a checked request; returns the NBD error (0 for success). For reads the data is
/// left in `buf[SIMPLE_REPLY_LEN..][..length]`.
fn execute(conn: &Connection<'_>, req: &Request, buf: &mut Vec<u8>) -> u32 {
    if let Err(e) = proto::check_request(req, &conn.limits) {
        return e;
    }
    let b = conn.backend;
    let fua = req.flags & proto::CMD_FLAG_FUA != 0;
    let data = proto::SIMPLE_REPLY_LEN..proto::SIMPLE_REPLY_LEN + req.length as usize;
    let result = match req.command {
        Command::Read => {
            if !ensure(buf, req.length) {
                return proto::ENOMEM;
            }
            b.read_at(&mut buf[data], req.offset)
        }
        Command::Write => b.write_at(&buf[data], req.offset),
        Command::Flush => b.flush(),
        Command::Trim => match b.discard(req.offset, req.length.into()) {
            // TRIM is a hint; a backend that cannot discard simply keeps the data.
            Err(e) if proto::errno_of(&e) == proto::ENOTSUP => Ok(()),
            other => other,
        },
        // Never punches holes (NBD_CMD_FLAG_NO_HOLE is always honoured): the zeroes are
        // written, so they read back as zeroes through the encryption.
        Command::WriteZeroes => b.write_zeroes(req.offset, req.length.into()),
        Command::Disc | Command::Other(_) => Ok(()),
    };
    let result = match result {
        Ok(()) if fua && req.command != Command::Read && req.command != Command::Flush => b.flush(),
        other => other,
    };
    match result {
        Ok(()) => 0,
        Err(e) => proto::errno_of(&e),
    }
}
