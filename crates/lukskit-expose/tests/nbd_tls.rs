//! NBD over TLS on lukskit's export, against libnbd's `nbdinfo`/`nbdcopy` (GnuTLS),
//! qemu's `qemu-img` (GnuTLS) and lukskit's own client (rustls): certificates made at test
//! time by `scripts/nbd-tls-certs.sh` (certtool), client certificates required or not,
//! plain clients refused when TLS is required.

use lukskit_expose::backend::{BlockBackend, MemBackend};
use lukskit_expose::nbd::{NbdAddress, NbdOptions, NbdServer, NbdShutdown, NbdTls};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

fn have(tool: &str, test: &str) -> bool {
    let ok = Command::new("sh")
        .arg("-c")
        .arg(format!("command -v {tool}"))
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        lukskit_testkit::skip_or_fail(
            test,
            &format!("`{tool}` is not installed (scripts/test.sh installs it)"),
        );
    }
    ok
}

fn certs(dir: &Path) {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/nbd-tls-certs.sh");
    let st = Command::new(script).arg(dir).status().unwrap();
    assert!(st.success(), "certificate generation failed");
}

/// A directory with only the CA certificate: enough to verify the server, no client
/// certificate to present.
fn ca_only(pki: &Path, at: &Path) -> PathBuf {
    std::fs::create_dir_all(at).unwrap();
    std::fs::copy(pki.join("ca-cert.pem"), at.join("ca-cert.pem")).unwrap();
    at.to_path_buf()
}

fn random(n: usize) -> Vec<u8> {
    let mut v = vec![0u8; n];
    getrandom::fill(&mut v).unwrap();
    v
}

struct Running {
    port: u16,
    stop: NbdShutdown,
    thread: Option<JoinHandle<std::io::Result<()>>>,
}

impl Running {
    fn tcp(
        pki: &Path,
        required: bool,
        verify_peer: bool,
        backend: Arc<dyn BlockBackend>,
    ) -> Running {
        let tls = NbdTls {
            config: lukskit_nbd::tls::server_config(pki, verify_peer).unwrap(),
            required,
        };
        let opts = NbdOptions {
            export_name: "vol".into(),
            max_connections: 0,
            tls: Some(tls),
            ..NbdOptions::default()
        };
        Running::start(opts, backend)
    }

    /// A server with `opts` on a free TCP port of 127.0.0.1.
    fn start(opts: NbdOptions, backend: Arc<dyn BlockBackend>) -> Running {
        let server = NbdServer::bind(&NbdAddress::Tcp("127.0.0.1:0".into()), opts).unwrap();
        let port = server
            .address()
            .rsplit_once(':')
            .unwrap()
            .1
            .parse()
            .unwrap();
        let stop = server.shutdown_handle();
        let thread = std::thread::spawn(move || server.serve(backend));
        Running {
            port,
            stop,
            thread: Some(thread),
        }
    }

    fn uri(&self, tls: bool, creds: Option<&Path>) -> String {
        let mut u = format!(
            "{}://127.0.0.1:{}/vol",
            if tls { "nbds" } else { "nbd" },
            self.port
        );
        if let Some(c) = creds {
            u += &format!("?tls-certificates={}", c.display());
        }
        u
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.stop.shutdown();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn run(cmd: &mut Command) -> Output {
    cmd.output()
        .unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"))
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn nbdcopy_reads_and_writes_a_tls_export_with_certificates_and_is_refused_without() {
    let t = "nbdcopy_tls";
    if !have("nbdcopy", t) || !have("certtool", t) {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let pki = d.path().join("pki");
    certs(&pki);
    let data = random(8 << 20);
    let backend = Arc::new(MemBackend::new(data.len(), 512, false));
    backend.write_at(&data, 0).unwrap();
    let srv = Running::tcp(&pki, true, true, backend.clone());

    // With the certificates: the whole export, over 4 connections (multi-conn).
    let out = d.path().join("out.bin");
    let o = run(Command::new("nbdcopy")
        .arg("--connections=4")
        .arg(srv.uri(true, Some(&pki)))
        .arg(&out));
    assert!(
        o.status.success(),
        "nbdcopy over TLS failed: {}",
        stderr(&o)
    );
    assert!(
        std::fs::read(&out).unwrap() == data,
        "nbdcopy read other bytes"
    );

    // Writes through TLS reach the backend.
    let new = random(8 << 20);
    let src = d.path().join("new.bin");
    std::fs::write(&src, &new).unwrap();
    let o = run(Command::new("nbdcopy")
        .arg(&src)
        .arg(srv.uri(true, Some(&pki))));
    assert!(
        o.status.success(),
        "nbdcopy write over TLS failed: {}",
        stderr(&o)
    );
    let mut back = vec![0u8; new.len()];
    backend.read_at(&mut back, 0).unwrap();
    assert!(back == new, "writes over TLS did not reach the backend");

    // Plain NBD: refused (TLS required).
    let o = run(Command::new("nbdcopy").arg(srv.uri(false, None)).arg(&out));
    assert!(!o.status.success(), "a plain client was served");
    assert!(stderr(&o).contains("TLS"), "{}", stderr(&o));

    // TLS without a client certificate: refused (client certificates required).
    let nocert = ca_only(&pki, &d.path().join("nocert"));
    let o = run(Command::new("nbdcopy")
        .arg(srv.uri(true, Some(&nocert)))
        .arg(&out));
    assert!(
        !o.status.success(),
        "a client without certificate was served"
    );

    // A client certificate from another CA: refused.
    let other = d.path().join("other");
    certs(&other);
    let mixed = d.path().join("mixed");
    ca_only(&pki, &mixed);
    std::fs::copy(other.join("client-cert.pem"), mixed.join("client-cert.pem")).unwrap();
    std::fs::copy(other.join("client-key.pem"), mixed.join("client-key.pem")).unwrap();
    let o = run(Command::new("nbdcopy")
        .arg(srv.uri(true, Some(&mixed)))
        .arg(&out));
    assert!(
        !o.status.success(),
        "a client certificate of another CA was accepted"
    );
}

#[test]
fn tls_without_client_certificates_and_optional_tls() {
    let t = "tls_optional";
    if !have("nbdinfo", t) || !have("certtool", t) {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let pki = d.path().join("pki");
    certs(&pki);
    let nocert = ca_only(&pki, &d.path().join("nocert"));
    // TLS required, client certificates not: a client with only the CA is served.
    let srv = Running::tcp(
        &pki,
        true,
        false,
        Arc::new(MemBackend::new(1 << 20, 512, false)),
    );
    let o = run(Command::new("nbdinfo")
        .arg("--size")
        .arg(srv.uri(true, Some(&nocert))));
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(String::from_utf8_lossy(&o.stdout).trim(), "1048576");
    // A client that does not trust our CA refuses the server.
    let other = d.path().join("other");
    certs(&other);
    let o = run(Command::new("nbdinfo")
        .arg("--size")
        .arg(srv.uri(true, Some(&other))));
    assert!(
        !o.status.success(),
        "nbdinfo accepted a server certificate of another CA"
    );
    drop(srv);
    // TLS offered (--tls=on): plain and TLS clients are both served.
    let srv = Running::tcp(
        &pki,
        false,
        false,
        Arc::new(MemBackend::new(1 << 20, 512, false)),
    );
    for u in [srv.uri(false, None), srv.uri(true, Some(&nocert))] {
        let o = run(Command::new("nbdinfo").arg("--size").arg(&u));
        assert!(o.status.success(), "{u}: {}", stderr(&o));
    }
}

#[test]
fn lukskit_client_and_qemu_img_against_the_tls_export() {
    let t = "lukskit_client_tls";
    if !have("certtool", t) {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let pki = d.path().join("pki");
    certs(&pki);
    let data = random(4 << 20);
    let backend = Arc::new(MemBackend::new(data.len(), 512, false));
    backend.write_at(&data, 0).unwrap();
    let srv = Running::tcp(&pki, true, true, backend.clone());
    let uri: lukskit_nbd::NbdUri = srv.uri(true, Some(&pki)).parse().unwrap();
    // Several clients with several connections each, at the same time.
    let clients: Vec<_> = (0..3)
        .map(|_| {
            let uri = uri.clone();
            let data = data.clone();
            std::thread::spawn(move || {
                let c = Arc::new(
                    lukskit_nbd::NbdClient::connect(&uri, lukskit_nbd::ClientOptions::default())
                        .unwrap(),
                );
                let workers: Vec<_> = (0..4)
                    .map(|i| {
                        let c = Arc::clone(&c);
                        let data = data.clone();
                        std::thread::spawn(move || {
                            let at = i * (1 << 20);
                            let mut b = vec![0u8; 1 << 20];
                            c.read_at(&mut b, at as u64).unwrap();
                            assert!(b[..] == data[at..at + (1 << 20)]);
                        })
                    })
                    .collect();
                for w in workers {
                    w.join().unwrap();
                }
            })
        })
        .collect();
    for c in clients {
        c.join().unwrap();
    }
    if !have("qemu-img", t) {
        return;
    }
    let obj = format!(
        "tls-creds-x509,id=tls0,endpoint=client,dir={}",
        pki.display()
    );
    let opts = format!(
        "driver=nbd,host=127.0.0.1,port={},export=vol,tls-creds=tls0",
        srv.port
    );
    let out = d.path().join("q.raw");
    let o = run(Command::new("qemu-img")
        .args([
            "convert",
            "-O",
            "raw",
            "--object",
            &obj,
            "--image-opts",
            &opts,
        ])
        .arg(&out));
    assert!(
        o.status.success(),
        "qemu-img over TLS failed: {}",
        stderr(&o)
    );
    assert!(std::fs::read(&out).unwrap() == data);
}

/// How a peer that never finishes its handshake spends it.
#[derive(Clone, Copy, Debug)]
enum Slow {
    /// Sends an option (`NBD_OPT_LIST`, refused before TLS) every quarter second.
    Options,
    /// Negotiates `NBD_OPT_STARTTLS`, then sends its TLS ClientHello a byte a quarter
    /// second.
    Tls,
}

/// What happened to a slow peer.
#[derive(Debug)]
enum SlowEnd {
    /// Closed before the greeting (over a limit).
    RefusedAtOnce,
    /// Served a greeting, then cut this long after it connected.
    Cut(Duration),
    /// Still connected when it gave up, this long after it connected.
    NotCut,
}

/// A peer of kind `kind` that connects to `port` now and trickles its handshake, each step
/// far quicker than any per-step timeout, until the server cuts it or `give_up` has passed.
/// Returns once it got the greeting (or was refused), with the thread that goes on.
fn slow_peer(port: u16, kind: Slow, give_up: Duration) -> JoinHandle<SlowEnd> {
    use lukskit_expose::nbd::proto;
    let (tx, rx) = std::sync::mpsc::channel();
    let t = std::thread::spawn(move || {
        let start = Instant::now();
        let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let mut greeting = [0u8; 18];
        if s.read_exact(&mut greeting).is_err() {
            let _ = tx.send(());
            return SlowEnd::RefusedAtOnce;
        }
        let _ = tx.send(());
        let option = |o: u32| {
            let mut v = proto::IHAVEOPT.to_be_bytes().to_vec();
            v.extend_from_slice(&o.to_be_bytes());
            v.extend_from_slice(&0u32.to_be_bytes());
            v
        };
        let flags = proto::FLAG_C_FIXED_NEWSTYLE.to_be_bytes();
        if s.write_all(&flags).is_err() {
            return SlowEnd::Cut(start.elapsed());
        }
        if let Slow::Tls = kind {
            // STARTTLS and its ACK (a 20-byte reply header, no data).
            let mut reply = [0u8; 20];
            if s.write_all(&option(proto::OPT_STARTTLS)).is_err()
                || s.read_exact(&mut reply).is_err()
            {
                return SlowEnd::Cut(start.elapsed());
            }
            // A TLS handshake record of 512 bytes, never complete.
            if s.write_all(&[0x16, 0x03, 0x01, 0x02, 0x00]).is_err() {
                return SlowEnd::Cut(start.elapsed());
            }
        }
        s.set_read_timeout(Some(Duration::from_millis(250)))
            .unwrap();
        let mut buf = [0u8; 4096];
        while start.elapsed() < give_up {
            let sent = match kind {
                Slow::Options => s.write_all(&option(proto::OPT_LIST)),
                Slow::Tls => s.write_all(&[0]),
            };
            if sent.is_err() {
                return SlowEnd::Cut(start.elapsed());
            }
            match s.read(&mut buf) {
                Ok(0) => return SlowEnd::Cut(start.elapsed()),
                // A refusal of the option: pace the next one.
                Ok(_) => std::thread::sleep(Duration::from_millis(250)),
                Err(e)
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                    ) => {}
                Err(_) => return SlowEnd::Cut(start.elapsed()),
            }
        }
        SlowEnd::NotCut
    });
    let _ = rx.recv_timeout(Duration::from_secs(30));
    t
}

/// Issue 36 item 3: peers without certificates that keep their handshake going (options or
/// a TLS handshake a little at a time, never slower than a per-step timeout) are cut at the
/// whole-handshake deadline; while they are in the handshake they cannot take every slot
/// (those over [`NbdOptions::max_handshakes`] are closed at once), an established client
/// keeps working, and a client with a valid certificate gets in (at the latest when the
/// deadline freed the slots). Bounds are generous: "cut within deadline + 10 s".
#[test]
fn slow_handshakes_are_cut_at_the_deadline_and_never_hold_every_slot() {
    let t = "tls_slow_handshakes";
    if !have("nbdinfo", t) || !have("certtool", t) {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let pki = d.path().join("pki");
    certs(&pki);
    let deadline = Duration::from_millis(1500);
    let slack = Duration::from_secs(10);
    let opts = NbdOptions {
        export_name: "vol".into(),
        max_connections: 4,
        handshake_deadline: deadline,
        tls: Some(NbdTls {
            config: lukskit_nbd::tls::server_config(&pki, true).unwrap(),
            required: true,
        }),
        ..NbdOptions::default()
    };
    assert_eq!(opts.max_handshakes(), 2);
    let data = random(1 << 20);
    let backend = Arc::new(MemBackend::new(data.len(), 512, false));
    backend.write_at(&data, 0).unwrap();
    let srv = Running::start(opts, backend);

    // A client with a certificate, connected before the slow peers: one slot.
    let uri: lukskit_nbd::NbdUri = srv.uri(true, Some(&pki)).parse().unwrap();
    let one_connection = lukskit_nbd::ClientOptions {
        connections: 1,
        ..lukskit_nbd::ClientOptions::default()
    };
    let established = lukskit_nbd::NbdClient::connect(&uri, one_connection).unwrap();

    // Six slow peers, one after the other: with the old per-step timeout the first three
    // took every free slot for as long as they liked.
    let kinds = [
        Slow::Options,
        Slow::Tls,
        Slow::Options,
        Slow::Tls,
        Slow::Options,
        Slow::Tls,
    ];
    let peers: Vec<_> = kinds
        .iter()
        .map(|&k| (k, slow_peer(srv.port, k, deadline + slack)))
        .collect();

    // The established client keeps its slot while they are in the handshake.
    let mut b = vec![0u8; 4096];
    established.read_at(&mut b, 0).unwrap();
    assert!(b[..] == data[..4096]);

    // A client with a certificate gets in (at the latest once the deadline has cut them).
    let start = Instant::now();
    let mut last = String::new();
    let served = loop {
        let o = run(Command::new("nbdinfo")
            .arg("--size")
            .arg(srv.uri(true, Some(&pki))));
        if o.status.success() {
            break true;
        }
        last = stderr(&o);
        if start.elapsed() > deadline + slack {
            break false;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    assert!(
        served,
        "no client with a certificate got in while slow peers were in the handshake \
         ({:?}); last error: {last}",
        start.elapsed()
    );

    let ends: Vec<(Slow, SlowEnd)> = peers
        .into_iter()
        .map(|(k, p)| (k, p.join().unwrap()))
        .collect();
    let admitted = ends
        .iter()
        .filter(|(_, e)| !matches!(e, SlowEnd::RefusedAtOnce))
        .count();
    assert!(
        admitted <= 2,
        "more slow peers than max_handshakes (2) got a greeting: {ends:?}"
    );
    for (kind, end) in &ends {
        match end {
            SlowEnd::RefusedAtOnce => {}
            SlowEnd::Cut(after) => assert!(
                *after <= deadline + slack,
                "a slow {kind:?} peer was cut only after {after:?}"
            ),
            SlowEnd::NotCut => panic!(
                "a slow {kind:?} peer was still in the handshake {:?} after it connected",
                deadline + slack
            ),
        }
    }
    // The established client is still served.
    established.read_at(&mut b, 4096).unwrap();
    assert!(b[..] == data[4096..8192]);
}
