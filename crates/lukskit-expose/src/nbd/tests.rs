//! Thread starts refused by the system (through the [`Threads`] seam): only the connection
//! concerned is affected, and the server never panics.

use super::proto::{self, Command, InfoRequest, Request};
use super::{NbdAddress, NbdOptions, NbdServer};
use crate::backend::{BlockBackend, MemBackend};
use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

/// Connect and read the greeting; `None` when the server closed the connection instead.
fn greet(path: &Path) -> Option<UnixStream> {
    let mut s = UnixStream::connect(path).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut g = [0u8; 18];
    s.read_exact(&mut g).ok()?;
    assert_eq!(g, proto::encode_greeting());
    Some(s)
}

/// Client flags and `NBD_OPT_GO` for the default export, up to the final ACK.
fn go(s: &mut UnixStream) {
    s.write_all(&(proto::FLAG_C_FIXED_NEWSTYLE | proto::FLAG_C_NO_ZEROES).to_be_bytes())
        .unwrap();
    let data = proto::encode_info_request(&InfoRequest {
        name: String::new(),
        requests: vec![],
    });
    let mut opt = Vec::new();
    opt.extend_from_slice(&proto::IHAVEOPT.to_be_bytes());
    opt.extend_from_slice(&proto::OPT_GO.to_be_bytes());
    opt.extend_from_slice(&(data.len() as u32).to_be_bytes());
    opt.extend_from_slice(&data);
    s.write_all(&opt).unwrap();
    loop {
        let mut h = [0u8; 20];
        s.read_exact(&mut h).unwrap();
        let reply = u32::from_be_bytes(h[12..16].try_into().unwrap());
        let len = u32::from_be_bytes(h[16..20].try_into().unwrap());
        let mut d = vec![0u8; len as usize];
        s.read_exact(&mut d).unwrap();
        match reply {
            proto::REP_ACK => return,
            proto::REP_INFO => {}
            other => panic!("NBD_OPT_GO refused: {other:#x}"),
        }
    }
}

/// Send `n` reads of `len` bytes at offset 0 at once, then collect every reply.
fn pipelined_reads(s: &mut UnixStream, n: u64, len: u32, expect: &[u8]) {
    for handle in 0..n {
        let req = Request {
            flags: 0,
            command: Command::Read,
            handle,
            offset: 0,
            length: len,
        };
        s.write_all(&proto::encode_request(&req)).unwrap();
    }
    let mut seen = vec![false; n as usize];
    for _ in 0..n {
        let mut h = [0u8; proto::SIMPLE_REPLY_LEN];
        s.read_exact(&mut h).unwrap();
        assert_eq!(u32::from_be_bytes(h[4..8].try_into().unwrap()), 0, "error");
        let handle = u64::from_be_bytes(h[8..16].try_into().unwrap());
        assert!(!std::mem::replace(&mut seen[handle as usize], true));
        let mut d = vec![0u8; len as usize];
        s.read_exact(&mut d).unwrap();
        assert!(d == expect[..len as usize]);
    }
}

struct Server {
    _dir: tempfile::TempDir,
    path: std::path::PathBuf,
    server: Arc<NbdServer>,
    thread: Option<std::thread::JoinHandle<std::io::Result<()>>>,
}

impl Server {
    fn start(backend: Arc<dyn BlockBackend>) -> Server {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("nbd.sock");
        let server = Arc::new(
            NbdServer::bind(&NbdAddress::Unix(path.clone()), NbdOptions::default()).unwrap(),
        );
        let s = Arc::clone(&server);
        let thread = Some(std::thread::spawn(move || s.serve(backend)));
        Server {
            _dir: dir,
            path,
            server,
            thread,
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.server.shutdown_handle().shutdown();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn backend() -> (Arc<MemBackend>, Vec<u8>) {
    let data: Vec<u8> = (0..1 << 20).map(|i: u32| (i % 251) as u8).collect();
    let b = MemBackend::new(data.len(), 512, false);
    b.write_at(&data, 0).unwrap();
    (Arc::new(b), data)
}

#[test]
fn refused_connection_thread_closes_only_that_connection() {
    let (b, data) = backend();
    let srv = Server::start(b);
    srv.server.shared.threads.fail_next(1);
    assert!(
        greet(&srv.path).is_none(),
        "a connection without a thread was greeted"
    );
    // The slot it took is free again and the server serves the next client.
    for _ in 0..super::DEFAULT_MAX_CONNECTIONS {
        let mut s = greet(&srv.path).expect("server no longer greets");
        go(&mut s);
        pipelined_reads(&mut s, 4, 4096, &data);
    }
    assert!(srv.thread.as_ref().is_some_and(|t| !t.is_finished()));
}

#[test]
fn refused_worker_threads_leave_the_connection_served_by_its_own_thread() {
    let (b, data) = backend();
    let srv = Server::start(b);
    let mut s = greet(&srv.path).unwrap();
    // The connection thread runs; its extra workers start after NBD_OPT_GO: refuse them.
    srv.server
        .shared
        .threads
        .fail_next(super::transmission::WORKERS_PER_CONNECTION - 1);
    go(&mut s);
    pipelined_reads(&mut s, 32, 65536, &data);
    // (After the first refusal no further worker is tried: clear what is left.)
    srv.server.shared.threads.fail_next(0);
    // Another connection, with its threads, is unaffected.
    let mut t = greet(&srv.path).unwrap();
    go(&mut t);
    pipelined_reads(&mut t, 32, 65536, &data);
    pipelined_reads(&mut s, 2, 512, &data);
}
