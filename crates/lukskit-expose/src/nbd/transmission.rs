//! The transmission phase of one connection: requests are read in order by whichever
//! worker holds the read half, executed in parallel, and answered with simple replies
//! written one at a time.

use super::proto::{self, Command, ExportLimits, Request};
use super::socket::Stream;
use crate::backend::BlockBackend;
use std::io::{self, Read, Write};
use std::net::Shutdown;
use std::sync::{Mutex, MutexGuard};

/// Requests of one connection executed at the same time.
pub(crate) const WORKERS_PER_CONNECTION: usize = 4;

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
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Serve requests on `stream` until the client disconnects, sends garbage or the server
/// shuts the read half down; requests already read are answered first.
pub(crate) fn serve(
    stream: Stream,
    backend: &dyn BlockBackend,
    limits: ExportLimits,
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
    };
    std::thread::scope(|scope| {
        for _ in 1..WORKERS_PER_CONNECTION {
            scope.spawn(|| worker(&conn));
        }
        worker(&conn);
    });
    Ok(())
}

/// What the reader got.
enum Next {
    /// A request; for writes the payload is in `buf[SIMPLE_REPLY_LEN..][..length]`.
    Request(Request),
    /// The connection is over (disconnect, error, hostile input).
    Stop,
}

fn worker(conn: &Connection<'_>) {
    let mut buf: Vec<u8> = Vec::new();
    loop {
        let req = match read_next(conn, &mut buf) {
            Next::Request(r) => r,
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
        if sent.is_err() {
            stop(conn);
            return;
        }
        if buf.capacity() > KEEP_BUFFER {
            buf = Vec::new();
        }
    }
}

/// Stop the connection at once (both directions): other workers' reads and writes fail.
fn stop(conn: &Connection<'_>) {
    conn.control.shutdown(Shutdown::Both);
}

/// Make `buf` hold at least the reply header and `len` bytes.
fn ensure(buf: &mut Vec<u8>, len: u32) {
    let need = proto::SIMPLE_REPLY_LEN + len as usize;
    if buf.len() < need {
        buf.resize(need, 0);
    }
}

fn read_next(conn: &Connection<'_>, buf: &mut Vec<u8>) -> Next {
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
    match req.command {
        Command::Disc => {
            r.done = true;
            Next::Stop
        }
        Command::Write => {
            if req.length > proto::MAX_PAYLOAD {
                // Refusing would mean reading the payload anyway: drop the connection.
                r.done = true;
                drop(r);
                stop(conn);
                return Next::Stop;
            }
            ensure(buf, req.length);
            let end = proto::SIMPLE_REPLY_LEN + req.length as usize;
            if (&r.stream)
                .read_exact(&mut buf[proto::SIMPLE_REPLY_LEN..end])
                .is_err()
            {
                r.done = true;
                return Next::Stop;
            }
            Next::Request(req)
        }
        _ => Next::Request(req),
    }
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
            ensure(buf, req.length);
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
