//! The NBD client against real servers: Debian's nbdkit (memory and file plugins, TLS with
//! and without client certificates) and qemu-nbd (plain and TLS), with pipelining,
//! multi-conn, a server that dies mid-I/O and one that comes back.

use lukskit_nbd::{ClientOptions, NbdClient, NbdUri};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn have(tool: &str, test: &str) -> bool {
    let ok = Command::new("sh")
        .arg("-c")
        .arg(format!("command -v {tool}"))
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        lukskit_testkit::skip_or_fail(
            test,
            &format!("{tool} is not installed (scripts/test.sh installs it)"),
        );
    }
    ok
}

/// A server process, killed on drop.
struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn wait_for(path: &Path) {
    let t = Instant::now();
    while !path.exists() {
        assert!(
            t.elapsed() < Duration::from_secs(20),
            "{} never appeared",
            path.display()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn nbdkit(sock: &Path, args: &[&str]) -> Server {
    let _ = std::fs::remove_file(sock);
    let child = Command::new("nbdkit")
        .arg("-f")
        .arg("-U")
        .arg(sock)
        .args(args)
        .spawn()
        .expect("start nbdkit");
    wait_for(sock);
    Server(child)
}

fn uri(sock: &Path, extra: &str) -> NbdUri {
    format!("nbd+unix:///?socket={}{extra}", sock.display())
        .parse()
        .unwrap()
}

fn pattern(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

fn certs(dir: &Path) {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/nbd-tls-certs.sh");
    let st = Command::new(script).arg(dir).status().unwrap();
    assert!(st.success(), "certificate generation failed");
}

#[test]
fn nbdkit_file_plugin_round_trip_with_pipelining_and_multi_conn() {
    if !have("nbdkit", "nbdkit_file_plugin_round_trip") {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let img = d.path().join("disk.img");
    std::fs::write(&img, vec![0u8; 8 << 20]).unwrap();
    let sock = d.path().join("s");
    let _srv = nbdkit(&sock, &["file", img.to_str().unwrap()]);
    let opts = ClientOptions {
        request_size: 64 * 1024,
        window: 8,
        ..ClientOptions::default()
    };
    let c = Arc::new(NbdClient::connect(&uri(&sock, ""), opts).unwrap());
    assert_eq!(c.size(), 8 << 20);
    assert!(!c.read_only());
    // The file plugin allows multi-conn.
    assert_eq!(c.max_connections(), 4);
    // 3 MiB in 48 pipelined pieces, at an odd offset.
    let data = pattern(3 << 20, 7);
    c.write_at(&data, 12345, false).unwrap();
    c.flush().unwrap();
    let on_disk = std::fs::read(&img).unwrap();
    assert_eq!(&on_disk[12345..12345 + data.len()], &data[..]);
    let mut back = vec![0u8; data.len()];
    c.read_at(&mut back, 12345).unwrap();
    assert_eq!(back, data);
    // Concurrent callers get connections of their own.
    let threads: Vec<_> = (0..4u64)
        .map(|i| {
            let c = Arc::clone(&c);
            std::thread::spawn(move || {
                let d = pattern(1 << 20, 100 + i);
                let at = (4 << 20) + i * (1 << 20);
                for _ in 0..5 {
                    c.write_at(&d, at, true).unwrap();
                    let mut b = vec![0u8; d.len()];
                    c.read_at(&mut b, at).unwrap();
                    assert_eq!(b, d);
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    assert!(c.open_connections() > 1, "no second connection was opened");
    assert!(c.open_connections() <= 4);
    // Out of range is refused locally.
    let mut b = [0u8; 2];
    assert!(c.read_at(&mut b, (8 << 20) - 1).is_err());
}

#[test]
fn nbdkit_memory_reads_holes_as_zeroes_and_errors_are_reported() {
    if !have("nbdkit", "nbdkit_memory") {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let sock = d.path().join("s");
    // The error filter fails every read of the second MiB with EIO.
    let _srv = nbdkit(
        &sock,
        &[
            "--filter=error",
            "memory",
            "4M",
            "error=EIO",
            "error-pread-rate=0",
            "error-pwrite-rate=1",
        ],
    );
    let c = NbdClient::connect(&uri(&sock, ""), ClientOptions::default()).unwrap();
    let mut b = vec![0xffu8; 1 << 20];
    // Unwritten memory is sent as holes (structured replies) or zeroes.
    c.read_at(&mut b, 4096).unwrap();
    assert!(b.iter().all(|&x| x == 0));
    let e = c.write_at(&[1u8; 4096], 0, false).unwrap_err();
    assert!(e.to_string().contains("EIO"), "{e}");
    // The connection survived the error.
    c.read_at(&mut b[..512], 0).unwrap();
}

#[test]
fn server_that_goes_away_gives_io_errors_then_reconnects() {
    if !have("nbdkit", "server_that_goes_away") {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let img = d.path().join("disk.img");
    let content = pattern(4 << 20, 3);
    std::fs::write(&img, &content).unwrap();
    let sock = d.path().join("s");
    // Every read takes 2 s, so the server can be killed while one is in flight.
    let srv = nbdkit(
        &sock,
        &["--filter=delay", "file", img.to_str().unwrap(), "rdelay=2"],
    );
    let opts = ClientOptions {
        reconnect_timeout: Duration::from_millis(600),
        ..ClientOptions::default()
    };
    let c = Arc::new(NbdClient::connect(&uri(&sock, ""), opts).unwrap());
    let reader = {
        let c = Arc::clone(&c);
        std::thread::spawn(move || {
            let mut b = vec![0u8; 1 << 20];
            c.read_at(&mut b, 0).map(|()| b)
        })
    };
    std::thread::sleep(Duration::from_millis(500));
    drop(srv);
    let err = reader.join().unwrap().unwrap_err();
    let msg = err.to_string();
    assert!(msg.contains("went away during a read"), "{msg}");
    // Writes fail too while it is down (reconnecting gives up after the timeout).
    assert!(c.write_at(&[9u8; 512], 0, false).is_err());
    assert_eq!(
        std::fs::read(&img).unwrap(),
        content,
        "nothing may be written"
    );
    // The server comes back a little later: the next read reconnects (with backoff). The
    // server is started from this thread (nbdkit ends with the thread that started it).
    let c2 = Arc::clone(&c);
    let reader = std::thread::spawn(move || {
        let mut b = vec![0u8; 1 << 20];
        let t = Instant::now();
        loop {
            match c2.read_at(&mut b, 1 << 20) {
                Ok(()) => return b,
                Err(e) => assert!(
                    t.elapsed() < Duration::from_secs(20),
                    "never reconnected: {e}"
                ),
            }
        }
    });
    std::thread::sleep(Duration::from_millis(200));
    let _srv2 = nbdkit(&sock, &["file", img.to_str().unwrap()]);
    let b = reader.join().unwrap();
    assert_eq!(&b[..], &content[1 << 20..2 << 20]);
}

fn tls_nbdkit(dir: &Path, sock: &Path, verify_peer: bool) -> Server {
    let mut args = vec!["--tls=require", "--tls-certificates", dir.to_str().unwrap()];
    if verify_peer {
        args.push("--tls-verify-peer");
    }
    args.extend(["memory", "1M"]);
    nbdkit(sock, &args)
}

#[test]
fn tls_with_nbdkit_and_client_certificates() {
    if !have("nbdkit", "tls_with_nbdkit") || !have("certtool", "tls_with_nbdkit") {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let pki = d.path().join("pki");
    certs(&pki);
    let sock = d.path().join("s");
    let _srv = tls_nbdkit(&pki, &sock, true);
    let creds = format!("&tls-certificates={}", pki.display());
    // Plain NBD is refused: the server requires TLS.
    let e = NbdClient::connect(&uri(&sock, ""), ClientOptions::default()).unwrap_err();
    assert!(e.to_string().contains("requires TLS"), "{e}");
    // TLS with the client certificate works.
    let tls: NbdUri = format!("nbds+unix:///?socket={}{creds}", sock.display())
        .parse()
        .unwrap();
    let c = NbdClient::connect(&tls, ClientOptions::default()).unwrap();
    let data = pattern(300_000, 5);
    c.write_at(&data, 1000, false).unwrap();
    let mut b = vec![0u8; data.len()];
    c.read_at(&mut b, 1000).unwrap();
    assert_eq!(b, data);
    drop(c);
    // Without the client certificate the server refuses the session.
    let nocert = d.path().join("nocert");
    std::fs::create_dir(&nocert).unwrap();
    std::fs::copy(pki.join("ca-cert.pem"), nocert.join("ca-cert.pem")).unwrap();
    let u: NbdUri = format!(
        "nbds+unix:///?socket={}&tls-certificates={}",
        sock.display(),
        nocert.display()
    )
    .parse()
    .unwrap();
    let r = NbdClient::connect(&u, ClientOptions::default());
    assert!(
        r.is_err(),
        "a session without client certificate was accepted"
    );
    // A server certificate from another CA is refused by the client.
    let other = d.path().join("other");
    certs(&other);
    let u: NbdUri = format!(
        "nbds+unix:///?socket={}&tls-certificates={}",
        sock.display(),
        other.display()
    )
    .parse()
    .unwrap();
    let e = NbdClient::connect(&u, ClientOptions::default()).unwrap_err();
    assert!(e.to_string().contains("certificate"), "{e}");
}

fn qemu_nbd(sock: &Path, args: &[&str]) -> Server {
    let _ = std::fs::remove_file(sock);
    let child = Command::new("qemu-nbd")
        .arg("--socket")
        .arg(sock)
        .args(args)
        .spawn()
        .expect("start qemu-nbd");
    wait_for(sock);
    Server(child)
}

#[test]
fn qemu_nbd_plain_and_tls() {
    if !have("qemu-nbd", "qemu_nbd_plain_and_tls") || !have("certtool", "qemu_nbd_plain_and_tls") {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let img = d.path().join("disk.img");
    std::fs::write(&img, vec![0u8; 4 << 20]).unwrap();
    let sock = d.path().join("s");
    let data = pattern(1 << 20, 11);
    {
        let _srv = qemu_nbd(
            &sock,
            &["-f", "raw", "-e", "4", "-t", img.to_str().unwrap()],
        );
        let c = NbdClient::connect(&uri(&sock, ""), ClientOptions::default()).unwrap();
        assert_eq!(c.size(), 4 << 20);
        c.write_at(&data, 4096, true).unwrap();
        let mut b = vec![0u8; data.len()];
        c.read_at(&mut b, 4096).unwrap();
        assert_eq!(b, data);
    }
    assert_eq!(
        &std::fs::read(&img).unwrap()[4096..4096 + data.len()],
        &data[..]
    );
    let pki = d.path().join("pki");
    certs(&pki);
    let obj = format!(
        "tls-creds-x509,id=tls0,endpoint=server,dir={},verify-peer=on",
        pki.display()
    );
    let _srv = qemu_nbd(
        &sock,
        &[
            "-f",
            "raw",
            "-t",
            "--object",
            &obj,
            "--tls-creds",
            "tls0",
            img.to_str().unwrap(),
        ],
    );
    assert!(NbdClient::connect(&uri(&sock, ""), ClientOptions::default()).is_err());
    let u: NbdUri = format!(
        "nbds+unix:///?socket={}&tls-certificates={}",
        sock.display(),
        pki.display()
    )
    .parse()
    .unwrap();
    let c = NbdClient::connect(&u, ClientOptions::default()).unwrap();
    let mut b = vec![0u8; data.len()];
    c.read_at(&mut b, 4096).unwrap();
    assert_eq!(b, data);
}

#[test]
fn server_minimum_block_size_is_honoured_by_read_modify_write() {
    if !have("nbdkit", "minimum_block_size") {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let img = d.path().join("disk.img");
    let content = pattern(1 << 20, 21);
    std::fs::write(&img, &content).unwrap();
    let sock = d.path().join("s");
    // The server advertises 4096-byte minimum blocks and fails unaligned requests.
    let _srv = nbdkit(
        &sock,
        &[
            "--filter=blocksize-policy",
            "file",
            img.to_str().unwrap(),
            "blocksize-minimum=4096",
            "blocksize-preferred=4096",
            "blocksize-error-policy=error",
        ],
    );
    let c = NbdClient::connect(&uri(&sock, ""), ClientOptions::default()).unwrap();
    assert_eq!(c.info().min_block, 4096);
    let mut b = vec![0u8; 1000];
    c.read_at(&mut b, 5000).unwrap();
    assert_eq!(&b[..], &content[5000..6000]);
    let new = pattern(10_000, 22);
    c.write_at(&new, 3333, false).unwrap();
    c.flush().unwrap();
    let mut expect = content.clone();
    expect[3333..13_333].copy_from_slice(&new);
    assert_eq!(std::fs::read(&img).unwrap(), expect);
}

/// certtool writes ECDSA private keys whose scalar has its top bit set with a leading zero
/// byte (33 bytes for P-256), which ring refuses as such: they must load all the same (and
/// match their certificate, which rustls checks).
#[test]
fn certtool_ecdsa_keys_with_a_leading_zero_byte_load() {
    if !have("certtool", "certtool_ecdsa_keys") || !have("openssl", "certtool_ecdsa_keys") {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let pki = d.path().join("pki");
    certs(&pki);
    let key = pki.join("server-key.pem");
    let mut found = false;
    for _ in 0..40 {
        let st = Command::new("certtool")
            .args(["--generate-privkey", "--key-type=ecdsa", "--outfile"])
            .arg(&key)
            .stderr(Stdio::null())
            .stdout(Stdio::null())
            .status()
            .unwrap();
        assert!(st.success());
        let asn1 = Command::new("sh")
            .arg("-c")
            .arg(format!(
                "sed -n '/BEGIN/,/END/p' {} | openssl asn1parse",
                key.display()
            ))
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&asn1.stdout);
        if text.lines().nth(2).is_some_and(|l| l.contains("l=  33")) {
            found = true;
            break;
        }
    }
    assert!(found, "certtool never wrote a 33-byte scalar in 40 keys");
    let info = d.path().join("s.info");
    std::fs::write(
        &info,
        "cn = localhost\ndns_name = localhost\ntls_www_server\nsigning_key\n",
    )
    .unwrap();
    let st = Command::new("certtool")
        .args(["--generate-certificate", "--load-privkey"])
        .arg(&key)
        .arg("--load-ca-certificate")
        .arg(pki.join("ca-cert.pem"))
        .arg("--load-ca-privkey")
        .arg(pki.join("ca-key.pem"))
        .arg("--template")
        .arg(&info)
        .arg("--outfile")
        .arg(pki.join("server-cert.pem"))
        .stderr(Stdio::null())
        .stdout(Stdio::null())
        .status()
        .unwrap();
    assert!(st.success());
    lukskit_nbd::tls::server_config(&pki, true).unwrap();
    // The same key as a client key.
    std::fs::copy(&key, pki.join("client-key.pem")).unwrap();
    std::fs::copy(pki.join("server-cert.pem"), pki.join("client-cert.pem")).unwrap();
    lukskit_nbd::tls::client_config(Some(&pki), true).unwrap();
}
