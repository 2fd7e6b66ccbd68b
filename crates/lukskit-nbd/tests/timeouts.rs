//! The client against servers that stop answering or stall the handshake: every call ends
//! (with an error) within its timeout plus a margin, and reconnection still works once the
//! server answers again. Each client call runs on its own thread and the test waits for it
//! at most [`BOUND`], so a regression fails the test instead of hanging it.

use lukskit_nbd::{ClientOptions, NbdClient, NbdUri};
use std::io::{self, Read, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

const OPT_REPLY_MAGIC: u64 = 0x0003_e889_0455_65a9;
/// Upper bound on any single client call in these tests (the timeouts are 1-2 s; the
/// margin is for a loaded machine).
const BOUND: Duration = Duration::from_secs(60);

fn opt_reply(s: &mut UnixStream, opt: u32, kind: u32, data: &[u8]) -> io::Result<()> {
    let mut b = OPT_REPLY_MAGIC.to_be_bytes().to_vec();
    b.extend_from_slice(&opt.to_be_bytes());
    b.extend_from_slice(&kind.to_be_bytes());
    b.extend_from_slice(&(data.len() as u32).to_be_bytes());
    b.extend_from_slice(data);
    s.write_all(&b)
}

fn greeting() -> Vec<u8> {
    let mut g = 0x4e42_444d_4147_4943u64.to_be_bytes().to_vec();
    g.extend_from_slice(&0x4948_4156_454f_5054u64.to_be_bytes());
    g.extend_from_slice(&3u16.to_be_bytes());
    g
}

/// Read one option: (option, payload).
fn option(s: &mut UnixStream) -> io::Result<u32> {
    let mut h = [0u8; 16];
    s.read_exact(&mut h)?;
    let opt = u32::from_be_bytes(h[8..12].try_into().unwrap());
    let len = u32::from_be_bytes(h[12..16].try_into().unwrap());
    let mut data = vec![0u8; len as usize];
    s.read_exact(&mut data)?;
    Ok(opt)
}

/// A full handshake: simple replies, a 1 MiB read-write export. With `flood`, GO is
/// answered with `NBD_REP_INFO` replies that never end.
fn handshake(s: &mut UnixStream, flood: bool) -> io::Result<()> {
    s.write_all(&greeting())?;
    let mut f = [0u8; 4];
    s.read_exact(&mut f)?;
    loop {
        match option(s)? {
            7 => {
                let mut info = 0u16.to_be_bytes().to_vec();
                info.extend_from_slice(&(1u64 << 20).to_be_bytes());
                info.extend_from_slice(&1u16.to_be_bytes());
                if flood {
                    loop {
                        opt_reply(s, 7, 3, &[0, 99, 1, 2])?;
                    }
                }
                opt_reply(s, 7, 3, &info)?;
                return opt_reply(s, 7, 1, &[]);
            }
            o => opt_reply(s, o, (1 << 31) | 1, &[])?,
        }
    }
}

/// Serve reads (zeros) on `s` while `answer` is set; otherwise read requests and never
/// answer.
fn transmission(mut s: UnixStream, answer: &AtomicBool) -> io::Result<()> {
    loop {
        let mut r = [0u8; 28];
        s.read_exact(&mut r)?;
        let cookie = &r[8..16];
        let len = u32::from_be_bytes(r[24..28].try_into().unwrap());
        if u16::from_be_bytes([r[6], r[7]]) == 2 {
            return Ok(());
        }
        if !answer.load(Ordering::SeqCst) {
            continue;
        }
        let mut b = 0x6744_6698u32.to_be_bytes().to_vec();
        b.extend_from_slice(&0u32.to_be_bytes());
        b.extend_from_slice(cookie);
        b.extend(std::iter::repeat_n(0u8, len as usize));
        s.write_all(&b)?;
    }
}

fn uri(sock: &Path) -> NbdUri {
    format!("nbd+unix:///?socket={}", sock.display())
        .parse()
        .unwrap()
}

/// Run `f` on a thread; its result, or a test failure after [`BOUND`].
fn bounded<T: Send + 'static>(what: &str, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(BOUND)
        .unwrap_or_else(|_| panic!("{what} did not return within {BOUND:?}"))
}

fn opts(secs: u64) -> ClientOptions {
    ClientOptions {
        request_timeout: Duration::from_secs(secs),
        handshake_timeout: Duration::from_secs(secs),
        reconnect_timeout: Duration::from_secs(secs),
        ..ClientOptions::default()
    }
}

#[test]
fn a_greeting_trickled_byte_by_byte_is_cut_at_the_handshake_deadline() {
    let d = tempfile::tempdir().unwrap();
    let sock = d.path().join("s");
    let l = UnixListener::bind(&sock).unwrap();
    std::thread::spawn(move || {
        if let Ok((mut s, _)) = l.accept() {
            // One byte every 2 s: each read gets a byte well within the per-step timeout
            // (10 s), the whole greeting takes 36 s.
            for b in greeting() {
                if s.write_all(&[b]).is_err() {
                    return;
                }
                std::thread::sleep(Duration::from_secs(2));
            }
            std::thread::sleep(BOUND);
        }
    });
    let u = uri(&sock);
    let t = Instant::now();
    let r = bounded("connect", move || {
        NbdClient::connect(&u, opts(2)).map(|_| ())
    });
    let e = r.expect_err("a trickled greeting was accepted");
    assert!(
        t.elapsed() < Duration::from_secs(2 + 20),
        "the handshake took {:?} (deadline 2 s)",
        t.elapsed()
    );
    assert!(e.to_string().contains("handshake timeout"), "{e}");
}

#[test]
fn a_flood_of_info_replies_is_cut() {
    let d = tempfile::tempdir().unwrap();
    let sock = d.path().join("s");
    let l = UnixListener::bind(&sock).unwrap();
    std::thread::spawn(move || {
        if let Ok((mut s, _)) = l.accept() {
            let _ = handshake(&mut s, true);
        }
    });
    let u = uri(&sock);
    // A long handshake timeout: the cap on replies must end it, not the deadline.
    let r = bounded("connect", move || {
        NbdClient::connect(&u, opts(3600)).map(|_| ())
    });
    let e = r.expect_err("an endless NBD_REP_INFO flood was accepted");
    assert!(e.to_string().contains("replies to NBD_OPT_GO"), "{e}");
}

#[test]
fn a_server_that_stops_answering_fails_requests_and_reconnection_works_when_it_is_back() {
    let d = tempfile::tempdir().unwrap();
    let sock = d.path().join("s");
    let l = UnixListener::bind(&sock).unwrap();
    let answer = Arc::new(AtomicBool::new(true));
    let a = Arc::clone(&answer);
    std::thread::spawn(move || {
        for s in l.incoming() {
            let Ok(mut s) = s else { return };
            let a = Arc::clone(&a);
            std::thread::spawn(move || {
                if handshake(&mut s, false).is_ok() {
                    let _ = transmission(s, &a);
                }
            });
        }
    });
    let c = Arc::new(NbdClient::connect(&uri(&sock), opts(2)).unwrap());
    let mut b = vec![1u8; 4096];
    c.read_at(&mut b, 0).unwrap();
    assert!(b.iter().all(|&x| x == 0));

    // The server stops answering: reads and writes fail with an I/O error in bounded time.
    answer.store(false, Ordering::SeqCst);
    for write in [false, true] {
        let c2 = Arc::clone(&c);
        let t = Instant::now();
        let r = bounded("a request to a stalled server", move || {
            let mut b = vec![0u8; 4096];
            if write {
                c2.write_at(&b, 4096, false)
            } else {
                c2.read_at(&mut b, 0)
            }
        });
        let e = r.expect_err("a request to a server that does not answer succeeded");
        // Read: request + reconnect/handshake + request again; write: one request.
        assert!(
            t.elapsed() < Duration::from_secs(3 * 2 + 20),
            "the request took {:?}",
            t.elapsed()
        );
        assert!(e.to_string().contains("request timeout"), "{e}");
    }
    // Concurrent requests all end too (none waits for the others' attempts in turn).
    let handles: Vec<_> = (0..6)
        .map(|i| {
            let c2 = Arc::clone(&c);
            std::thread::spawn(move || {
                let mut b = vec![0u8; 4096];
                c2.read_at(&mut b, i * 4096).is_err()
            })
        })
        .collect();
    let t = Instant::now();
    let all = bounded("concurrent requests to a stalled server", move || {
        handles.into_iter().all(|h| h.join().unwrap())
    });
    assert!(all, "a request to a stalled server succeeded");
    assert!(t.elapsed() < Duration::from_secs(40), "{:?}", t.elapsed());

    // The server answers again: the next request reconnects and succeeds.
    answer.store(true, Ordering::SeqCst);
    let c2 = Arc::clone(&c);
    bounded("a read after the server came back", move || {
        let mut b = vec![1u8; 4096];
        c2.read_at(&mut b, 8192)
    })
    .expect("no reconnection after the server came back");
}
