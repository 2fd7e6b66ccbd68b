//! The NBD server against real NBD clients (libnbd's `nbdinfo`/`nbdcopy`, qemu's
//! `qemu-img`/`qemu-io`), plus hostile-client tests over a raw socket.
//!
//! A test whose tool is missing fails, unless `LUKSKIT_ALLOW_SKIP=1` lets it print
//! `SKIP: ...` and return.

use lukskit_expose::backend::{BlockBackend, Discards, MemBackend, VolumeBackend};
use lukskit_expose::nbd::proto::{self, Command, InfoRequest, Request};
use lukskit_expose::nbd::{
    NbdAddress, NbdOptions, NbdServer, NbdShutdown, DEFAULT_MAX_CONNECTIONS, MAX_BYTES_IN_FLIGHT,
};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Command as Process, Output};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

// ---------------------------------------------------------------- helpers

fn have(tool: &str) -> bool {
    Process::new(tool)
        .arg("--version")
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false)
}

/// True (after [`lukskit_testkit::skip_or_fail`]) when one of `tools` is missing.
fn skip_without(test: &str, tools: &[&str]) -> bool {
    for t in tools {
        if !have(t) {
            let package = if t.starts_with("qemu") {
                "qemu-utils"
            } else {
                "libnbd-bin"
            };
            lukskit_testkit::skip_or_fail(
                test,
                &format!("`{t}` is not installed (apt-get install {package})"),
            );
            return true;
        }
    }
    false
}

fn random_bytes(n: usize) -> Vec<u8> {
    let mut v = vec![0u8; n];
    getrandom::fill(&mut v).expect("getrandom");
    v
}

fn run(cmd: &mut Process) -> Output {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"));
    out
}

fn run_ok(cmd: &mut Process) -> Output {
    let out = run(cmd);
    assert!(
        out.status.success(),
        "{cmd:?} failed: {}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn opts(name: &str) -> NbdOptions {
    NbdOptions {
        export_name: name.to_string(),
        read_only: false,
        allow_trim: false,
        max_connections: 0,
        ..NbdOptions::default()
    }
}

/// A server running on its own thread; shut down and joined on drop.
struct Running {
    address: String,
    stop: NbdShutdown,
    thread: Option<JoinHandle<std::io::Result<()>>>,
    _dir: Option<tempfile::TempDir>,
}

impl Running {
    fn start(addr: NbdAddress, o: NbdOptions, backend: Arc<dyn BlockBackend>) -> Running {
        let server = NbdServer::bind(&addr, o).expect("bind");
        let address = server.address();
        let stop = server.shutdown_handle();
        let thread = std::thread::spawn(move || server.serve(backend));
        Running {
            address,
            stop,
            thread: Some(thread),
            _dir: None,
        }
    }

    /// On a Unix socket in a new temporary directory.
    fn unix(o: NbdOptions, backend: Arc<dyn BlockBackend>) -> Running {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("nbd.sock");
        let mut r = Running::start(NbdAddress::Unix(path), o, backend);
        r._dir = Some(dir);
        r
    }

    fn tcp(o: NbdOptions, backend: Arc<dyn BlockBackend>) -> Running {
        Running::start(NbdAddress::Tcp("127.0.0.1:0".into()), o, backend)
    }

    fn socket_path(&self) -> Option<PathBuf> {
        self.address.strip_prefix("unix:").map(PathBuf::from)
    }

    /// The NBD URI of export `name`.
    fn uri(&self, name: &str) -> String {
        match self.socket_path() {
            Some(p) => format!("nbd+unix:///{name}?socket={}", p.display()),
            None => format!(
                "nbd://{}/{name}",
                self.address.strip_prefix("tcp:").unwrap()
            ),
        }
    }

    /// Stop and wait for `serve` to return.
    fn finish(mut self) -> std::io::Result<()> {
        self.stop.shutdown();
        self.thread.take().unwrap().join().unwrap()
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

fn mem(size: usize, block: u32, read_only: bool, fill: Option<&[u8]>) -> Arc<MemBackend> {
    let m = MemBackend::new(size, block, false);
    if let Some(data) = fill {
        m.write_at(data, 0).unwrap();
    }
    if read_only {
        let ro = MemBackend::new(size, block, true);
        // MemBackend has no "make read-only"; read-only ones stay zero unless filled here.
        assert!(
            fill.is_none(),
            "read-only backends are zero-filled in these tests"
        );
        return Arc::new(ro);
    }
    Arc::new(m)
}

fn json(out: &Output) -> serde_json::Value {
    serde_json::from_slice(&out.stdout).expect("nbdinfo --json output")
}

// ---------------------------------------------------------------- real clients

fn check_nbdinfo(r: &Running, size: u64) {
    let out = run_ok(Process::new("nbdinfo").args(["--json", &r.uri("")]));
    let v = json(&out);
    let e = &v["exports"][0];
    assert_eq!(v["protocol"], "newstyle-fixed");
    assert_eq!(e["export-size"], size);
    assert_eq!(e["block_size_minimum"], 1);
    assert_eq!(e["block_size_preferred"], 4096);
    assert_eq!(e["block_size_maximum"], 32 * 1024 * 1024);
    assert_eq!(e["is_read_only"], false);
    assert_eq!(e["can_flush"], true);
    assert_eq!(e["can_fua"], true);
    assert_eq!(e["can_zero"], true);
    assert_eq!(e["can_multi_conn"], true);
    assert_eq!(e["can_trim"], false);
    assert_eq!(e["export-name"], "vol");
}

#[test]
fn nbdinfo_shows_size_block_sizes_and_flags_unix_and_tcp() {
    if skip_without("nbdinfo", &["nbdinfo"]) {
        return;
    }
    let size = 3 * 1024 * 1024 + 512;
    let b = mem(size, 512, false, None);
    let r = Running::unix(opts("vol"), b.clone());
    check_nbdinfo(&r, size as u64);
    let t = Running::tcp(opts("vol"), b);
    assert!(t.address.starts_with("tcp:127.0.0.1:"));
    assert!(!t.address.ends_with(":0"), "{}", t.address);
    check_nbdinfo(&t, size as u64);

    // Read-only and trim flags.
    let ro = Running::unix(
        NbdOptions {
            read_only: true,
            allow_trim: true,
            ..opts("vol")
        },
        mem(4096, 4096, false, None),
    );
    let v = json(&run_ok(
        Process::new("nbdinfo").args(["--json", &ro.uri("vol")]),
    ));
    assert_eq!(v["exports"][0]["is_read_only"], true);
    assert_eq!(v["exports"][0]["can_trim"], true);
    // A backend with 4096-byte sectors still prefers 4096.
    assert_eq!(v["exports"][0]["block_size_preferred"], 4096);

    // --list shows the one export.
    let out = run_ok(Process::new("nbdinfo").args(["--list", "--json", &r.uri("")]));
    let v = json(&out);
    assert_eq!(v["exports"].as_array().unwrap().len(), 1);
    assert_eq!(v["exports"][0]["export-name"], "vol");
}

#[test]
fn unknown_export_name_is_refused() {
    if skip_without("unknown export", &["nbdinfo", "qemu-img"]) {
        return;
    }
    let r = Running::unix(opts("vol"), mem(65536, 512, false, None));
    let out = run(Process::new("nbdinfo").arg(r.uri("other")));
    assert!(!out.status.success(), "nbdinfo accepted an unknown export");
    // qemu uses NBD_OPT_GO as well; the name it asks for must be known too.
    let out = run(Process::new("qemu-img").args(["info", "-f", "raw", &r.uri("other")]));
    assert!(!out.status.success(), "qemu-img accepted an unknown export");
    // The right name and the default name work.
    run_ok(Process::new("nbdinfo").arg(r.uri("vol")));
    run_ok(Process::new("qemu-img").args(["info", "-f", "raw", &r.uri("")]));
}

#[test]
fn qemu_img_convert_reads_the_backend() {
    if skip_without("qemu-img convert", &["qemu-img"]) {
        return;
    }
    let size = 5 * 1024 * 1024 + 1536;
    let data = random_bytes(size);
    for tcp in [false, true] {
        let b = mem(size, 512, false, Some(&data));
        let r = if tcp {
            Running::tcp(opts("vol"), b)
        } else {
            Running::unix(opts("vol"), b)
        };
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out.raw");
        run_ok(Process::new("qemu-img").args([
            "convert",
            "-f",
            "raw",
            "-O",
            "raw",
            &r.uri(""),
            out.to_str().unwrap(),
        ]));
        assert!(
            std::fs::read(&out).unwrap() == data,
            "tcp={tcp}: copy differs"
        );
    }
}

#[test]
fn nbdcopy_writes_reach_the_backend_with_several_connections() {
    if skip_without("nbdcopy", &["nbdcopy"]) {
        return;
    }
    let size = 8 * 1024 * 1024 + 4096;
    let data = random_bytes(size);
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.raw");
    std::fs::write(&input, &data).unwrap();
    for (tcp, conns) in [(false, "1"), (false, "4"), (true, "4")] {
        let b = mem(size, 512, false, None);
        let r = if tcp {
            Running::tcp(opts("vol"), b.clone())
        } else {
            Running::unix(opts("vol"), b.clone())
        };
        run_ok(Process::new("nbdcopy").args([
            &format!("--connections={conns}"),
            "--requests=16",
            input.to_str().unwrap(),
            &r.uri(""),
        ]));
        r.finish().unwrap();
        assert!(
            b.contents() == data,
            "tcp={tcp} connections={conns}: data differs"
        );
        assert!(
            b.flushes() >= 1,
            "nbdcopy's flush did not reach the backend"
        );
    }
}

#[test]
fn qemu_io_unaligned_writes_zeroes_and_flushes() {
    if skip_without("qemu-io", &["qemu-io"]) {
        return;
    }
    let size = 1024 * 1024;
    let data = random_bytes(size);
    let b = mem(size, 512, false, Some(&data));
    let r = Running::unix(opts("vol"), b.clone());
    run_ok(Process::new("qemu-io").args([
        "-f",
        "raw",
        "-c",
        "write -P 0xab 1000 5000",
        "-c",
        "write -z 7001 3000",
        "-c",
        "write -z -u 20000 9000",
        "-c",
        "flush",
        &r.uri(""),
    ]));
    let mut expect = data.clone();
    expect[1000..6000].fill(0xab);
    expect[7001..10001].fill(0);
    expect[20000..29000].fill(0);
    let got = b.contents();
    assert!(got == expect, "qemu-io writes not as expected");
    assert!(b.flushes() >= 1, "flush did not reach the backend");

    // FUA writes (qemu-io -f) are carried out (qemu's own flush on close hides whether
    // FUA itself flushed; the raw-client test below counts that).
    run_ok(Process::new("qemu-io").args([
        "-f",
        "raw",
        "-c",
        "write -f -P 0x5a 123457 777",
        &r.uri(""),
    ]));
    expect[123457..123457 + 777].fill(0x5a);
    assert!(b.contents() == expect);

    // Reads at odd offsets through qemu-io compare against the pattern.
    run_ok(Process::new("qemu-io").args([
        "-f",
        "raw",
        "-c",
        "read -P 0xab 1001 4999",
        "-c",
        "read -P 0 7001 3000",
        &r.uri(""),
    ]));
}

#[test]
fn read_only_export_refuses_writes() {
    if skip_without("read-only export", &["qemu-io"]) {
        return;
    }
    let b = mem(65536, 512, false, None);
    let r = Running::unix(
        NbdOptions {
            read_only: true,
            ..opts("vol")
        },
        b.clone(),
    );
    let out =
        run(Process::new("qemu-io").args(["-f", "raw", "-c", "write -P 0xab 0 4096", &r.uri("")]));
    let text =
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success()
            || text.contains("denied")
            || text.contains("read-only")
            || text.contains("failed"),
        "write to a read-only export looked successful: {text}"
    );
    assert!(
        b.contents().iter().all(|&x| x == 0),
        "read-only export was written"
    );
    // A read-only backend makes the export read-only even without the option.
    let ro = Running::unix(opts("vol"), mem(65536, 512, true, None));
    let mut c = RawClient::connect(&ro, "");
    assert_ne!(c.flags & proto::TFLAG_READ_ONLY, 0);
    assert_eq!(c.write(0, &[1u8; 512], 0), proto::EPERM);
}

// ---------------------------------------------------------------- encrypted volume

/// What dm-crypt writes for aes-xts-plain64 with 512-byte sectors: AES-256-XTS per sector,
/// IV = little-endian sector number (16 bytes).
fn xts_encrypt_reference(key: &[u8], plain: &[u8]) -> Vec<u8> {
    use openssl::symm::{Cipher, Crypter, Mode};
    let mut out = vec![0u8; plain.len()];
    for (n, (p, c)) in plain.chunks(512).zip(out.chunks_mut(512)).enumerate() {
        let mut iv = [0u8; 16];
        iv[..8].copy_from_slice(&(n as u64).to_le_bytes());
        let mut cr = Crypter::new(Cipher::aes_256_xts(), Mode::Encrypt, key, Some(&iv)).unwrap();
        cr.pad(false);
        let mut tmp = vec![0u8; 512 + 16];
        let k = cr.update(p, &mut tmp).unwrap();
        let k2 = cr.finalize(&mut tmp[k..]).unwrap();
        assert_eq!(k + k2, 512);
        c.copy_from_slice(&tmp[..512]);
    }
    out
}

#[test]
fn encrypted_volume_written_through_nbdcopy_matches_dm_crypt_ciphertext() {
    use lukskit_volume::data::{DataLayout, DataVolume};
    if skip_without("encrypted volume", &["nbdcopy", "qemu-io"]) {
        return;
    }
    let size = 4 * 1024 * 1024;
    let dir = tempfile::tempdir().unwrap();
    let image = dir.path().join("disk.img");
    std::fs::write(&image, vec![0u8; size]).unwrap();
    let key = zeroize::Zeroizing::new(random_bytes(64));
    let layout = DataLayout {
        cipher: "aes-xts-plain64".into(),
        offset: 0,
        size: None,
        sector_size: 512,
        iv_offset: 0,
        iv_large_sectors: false,
    };
    let volume = DataVolume::open(image.to_str().unwrap(), layout, &key, true).unwrap();
    let backend = Arc::new(VolumeBackend::new(volume, true, Discards::Refuse));
    let r = Running::unix(opts("vol"), backend.clone());
    let plain = random_bytes(size);
    let input = dir.path().join("plain.raw");
    std::fs::write(&input, &plain).unwrap();
    run_ok(Process::new("nbdcopy").args(["--connections=2", input.to_str().unwrap(), &r.uri("")]));
    // An unaligned overwrite (read-modify-write of partial sectors).
    run_ok(Process::new("qemu-io").args([
        "-f",
        "raw",
        "-c",
        "write -P 0x77 1000 3333",
        &r.uri(""),
    ]));
    r.finish().unwrap();
    let mut expect_plain = plain;
    expect_plain[1000..4333].fill(0x77);
    let on_disk = std::fs::read(&image).unwrap();
    let reference = xts_encrypt_reference(&key, &expect_plain);
    assert!(
        on_disk == reference,
        "ciphertext differs from AES-256-XTS (plain64) of the data written"
    );
}

// ---------------------------------------------------------------- hostile clients

/// A client connection, Unix or TCP.
trait Sock: Read + Write + Send {}
impl Sock for UnixStream {}
impl Sock for TcpStream {}

/// Connect to a server address (`unix:PATH` or `tcp:HOST:PORT`), with a 10 s read timeout.
fn dial(address: &str) -> Box<dyn Sock> {
    let t = Some(Duration::from_secs(10));
    if let Some(p) = address.strip_prefix("unix:") {
        let s = UnixStream::connect(p).unwrap();
        s.set_read_timeout(t).unwrap();
        Box::new(s)
    } else {
        let s = TcpStream::connect(address.strip_prefix("tcp:").unwrap()).unwrap();
        s.set_read_timeout(t).unwrap();
        Box::new(s)
    }
}

/// A minimal NBD client speaking raw protocol over a Unix or TCP socket.
struct RawClient {
    s: Box<dyn Sock>,
    size: u64,
    flags: u16,
    handle: u64,
}

impl RawClient {
    fn greet(path: &Path) -> Box<dyn Sock> {
        Self::greet_at(&format!("unix:{}", path.display()))
    }

    fn greet_at(address: &str) -> Box<dyn Sock> {
        let mut s = dial(address);
        let mut g = [0u8; 18];
        s.read_exact(&mut g).unwrap();
        assert_eq!(g, proto::encode_greeting());
        s.write_all(&(proto::FLAG_C_FIXED_NEWSTYLE | proto::FLAG_C_NO_ZEROES).to_be_bytes())
            .unwrap();
        s
    }

    fn send_option(s: &mut impl Write, option: u32, data: &[u8]) {
        let mut h = Vec::new();
        h.extend_from_slice(&proto::IHAVEOPT.to_be_bytes());
        h.extend_from_slice(&option.to_be_bytes());
        h.extend_from_slice(&(data.len() as u32).to_be_bytes());
        h.extend_from_slice(data);
        s.write_all(&h).unwrap();
    }

    /// One option reply: (reply type, data).
    fn option_reply(s: &mut impl Read, option: u32) -> (u32, Vec<u8>) {
        let mut h = [0u8; 20];
        s.read_exact(&mut h).unwrap();
        assert_eq!(
            u64::from_be_bytes(h[0..8].try_into().unwrap()),
            proto::OPTION_REPLY_MAGIC
        );
        assert_eq!(u32::from_be_bytes(h[8..12].try_into().unwrap()), option);
        let t = u32::from_be_bytes(h[12..16].try_into().unwrap());
        let n = u32::from_be_bytes(h[16..20].try_into().unwrap());
        let mut d = vec![0u8; n as usize];
        s.read_exact(&mut d).unwrap();
        (t, d)
    }

    fn connect(r: &Running, name: &str) -> RawClient {
        Self::connect_at(&r.address, name)
    }

    /// Handshake (`NBD_OPT_GO`) with the server at `address`.
    fn connect_at(address: &str, name: &str) -> RawClient {
        let mut s = Self::greet_at(address);
        let req = InfoRequest {
            name: name.into(),
            requests: vec![proto::INFO_BLOCK_SIZE],
        };
        Self::send_option(&mut s, proto::OPT_GO, &proto::encode_info_request(&req));
        let (mut size, mut flags) = (0, 0);
        loop {
            let (t, d) = Self::option_reply(&mut s, proto::OPT_GO);
            match t {
                proto::REP_INFO if d[..2] == [0, 0] => {
                    size = u64::from_be_bytes(d[2..10].try_into().unwrap());
                    flags = u16::from_be_bytes(d[10..12].try_into().unwrap());
                }
                proto::REP_INFO => {}
                proto::REP_ACK => break,
                other => panic!("NBD_OPT_GO failed: {other:#x}"),
            }
        }
        RawClient {
            s,
            size,
            flags,
            handle: 1,
        }
    }

    fn send(&mut self, command: Command, flags: u16, offset: u64, length: u32) -> u64 {
        self.handle += 1;
        let req = Request {
            flags,
            command,
            handle: self.handle,
            offset,
            length,
        };
        self.s.write_all(&proto::encode_request(&req)).unwrap();
        self.handle
    }

    /// Read one simple reply: (error, handle).
    fn reply(&mut self) -> (u32, u64) {
        let mut h = [0u8; 16];
        self.s.read_exact(&mut h).unwrap();
        assert_eq!(
            u32::from_be_bytes(h[0..4].try_into().unwrap()),
            proto::SIMPLE_REPLY_MAGIC
        );
        (
            u32::from_be_bytes(h[4..8].try_into().unwrap()),
            u64::from_be_bytes(h[8..16].try_into().unwrap()),
        )
    }

    fn write(&mut self, offset: u64, data: &[u8], flags: u16) -> u32 {
        let h = self.send(Command::Write, flags, offset, data.len() as u32);
        self.s.write_all(data).unwrap();
        let (e, got) = self.reply();
        assert_eq!(got, h);
        e
    }

    fn read(&mut self, offset: u64, len: u32) -> Result<Vec<u8>, u32> {
        let h = self.send(Command::Read, 0, offset, len);
        let (e, got) = self.reply();
        assert_eq!(got, h);
        if e != 0 {
            return Err(e);
        }
        let mut d = vec![0u8; len as usize];
        self.s.read_exact(&mut d).unwrap();
        Ok(d)
    }

    fn simple(&mut self, command: Command, flags: u16, offset: u64, length: u32) -> u32 {
        let h = self.send(command, flags, offset, length);
        let (e, got) = self.reply();
        assert_eq!(got, h);
        e
    }

    /// True when the server closed the connection.
    fn closed(&mut self) -> bool {
        let mut b = [0u8; 1];
        matches!(self.s.read(&mut b), Ok(0) | Err(_))
    }
}

#[test]
fn hostile_requests_get_errors_not_crashes() {
    let size = 1024 * 1024;
    let b = mem(size, 512, false, None);
    let r = Running::unix(opts("vol"), b.clone());
    let mut c = RawClient::connect(&r, "vol");
    assert_eq!(c.size, size as u64);
    let big = proto::MAX_PAYLOAD + 1;
    assert_eq!(c.read(0, big), Err(proto::EINVAL));
    assert_eq!(c.read(size as u64 - 10, 11), Err(proto::EINVAL));
    assert_eq!(c.read(u64::MAX - 5, 10), Err(proto::EINVAL));
    assert_eq!(c.write(size as u64 - 10, &[7u8; 11], 0), proto::ENOSPC);
    assert_eq!(
        c.simple(Command::WriteZeroes, 0, size as u64, 1),
        proto::ENOSPC
    );
    assert_eq!(c.simple(Command::Other(99), 0, 0, 0), proto::EINVAL);
    assert_eq!(c.simple(Command::Other(5), 0, 0, 512), proto::EINVAL); // CACHE: not offered
    assert_eq!(c.simple(Command::Trim, 0, 0, 512), proto::EINVAL); // TRIM: not offered
    assert_eq!(c.simple(Command::Read, 1 << 7, 0, 0), proto::EINVAL); // unknown flag
    assert_eq!(
        c.simple(Command::Write, proto::CMD_FLAG_NO_HOLE, 0, 0),
        proto::EINVAL
    );
    // Still in sync: a good write and read at the very end.
    assert_eq!(c.write(size as u64 - 3, b"end", proto::CMD_FLAG_FUA), 0);
    assert_eq!(c.read(size as u64 - 4, 4).unwrap(), b"\0end");
    assert!(b.contents().ends_with(b"end"));
    // A write announcing an oversized payload ends the connection (nothing allocated).
    c.send(Command::Write, 0, 0, u32::MAX);
    assert!(c.closed(), "connection kept after an oversized write");
    // Garbage instead of a request magic ends it too.
    let mut c = RawClient::connect(&r, "");
    c.s.write_all(&[0x55; 28]).unwrap();
    assert!(c.closed());
    // The server still serves others.
    let mut c = RawClient::connect(&r, "");
    assert_eq!(c.read(0, 512).unwrap(), vec![0u8; 512]);
}

#[test]
fn hostile_options_are_refused() {
    let r = Running::unix(opts("vol"), mem(65536, 512, false, None));
    let path = r.socket_path().unwrap();
    // Unknown option, structured replies, malformed GO, unknown name: error replies, and
    // the connection stays usable.
    let mut s = RawClient::greet(&path);
    RawClient::send_option(&mut s, 4242, b"whatever");
    assert_eq!(
        RawClient::option_reply(&mut s, 4242).0,
        proto::REP_ERR_UNSUP
    );
    RawClient::send_option(&mut s, proto::OPT_STRUCTURED_REPLY, &[]);
    assert_eq!(
        RawClient::option_reply(&mut s, proto::OPT_STRUCTURED_REPLY).0,
        proto::REP_ERR_UNSUP
    );
    RawClient::send_option(&mut s, proto::OPT_GO, &[0, 0, 0, 9, b'x']);
    assert_eq!(
        RawClient::option_reply(&mut s, proto::OPT_GO).0,
        proto::REP_ERR_INVALID
    );
    RawClient::send_option(&mut s, proto::OPT_LIST, b"x");
    assert_eq!(
        RawClient::option_reply(&mut s, proto::OPT_LIST).0,
        proto::REP_ERR_INVALID
    );
    let req = InfoRequest {
        name: "nope".into(),
        requests: vec![],
    };
    RawClient::send_option(&mut s, proto::OPT_INFO, &proto::encode_info_request(&req));
    assert_eq!(
        RawClient::option_reply(&mut s, proto::OPT_INFO).0,
        proto::REP_ERR_UNKNOWN
    );
    RawClient::send_option(&mut s, proto::OPT_ABORT, &[]);
    assert_eq!(
        RawClient::option_reply(&mut s, proto::OPT_ABORT).0,
        proto::REP_ACK
    );

    // NBD_OPT_EXPORT_NAME with an unknown name: hard disconnect, as the protocol says.
    let mut s = RawClient::greet(&path);
    RawClient::send_option(&mut s, proto::OPT_EXPORT_NAME, b"nope");
    let mut b = [0u8; 1];
    assert!(matches!(s.read(&mut b), Ok(0) | Err(_)));

    // NBD_OPT_EXPORT_NAME with the right name: size, flags, no zeroes (negotiated).
    let mut s = RawClient::greet(&path);
    RawClient::send_option(&mut s, proto::OPT_EXPORT_NAME, b"vol");
    let mut rep = [0u8; 10];
    s.read_exact(&mut rep).unwrap();
    assert_eq!(u64::from_be_bytes(rep[..8].try_into().unwrap()), 65536);

    // An option announcing more than 64 KiB: disconnect without reading it.
    let mut s = RawClient::greet(&path);
    let mut h = Vec::new();
    h.extend_from_slice(&proto::IHAVEOPT.to_be_bytes());
    h.extend_from_slice(&proto::OPT_GO.to_be_bytes());
    h.extend_from_slice(&(u32::MAX).to_be_bytes());
    s.write_all(&h).unwrap();
    assert!(matches!(s.read(&mut b), Ok(0) | Err(_)));

    // Unknown client flags: disconnect.
    let mut s = UnixStream::connect(&path).unwrap();
    let mut g = [0u8; 18];
    s.read_exact(&mut g).unwrap();
    s.write_all(&0x8000_0000u32.to_be_bytes()).unwrap();
    assert!(matches!(s.read(&mut b), Ok(0) | Err(_)));
}

#[test]
fn fua_and_flush_flush_the_backend_before_the_reply() {
    let b = mem(65536, 512, false, None);
    let r = Running::unix(opts("vol"), b.clone());
    let mut c = RawClient::connect(&r, "");
    assert_eq!(c.write(100, b"plain", 0), 0);
    assert_eq!(b.flushes(), 0, "a plain write flushed");
    assert_eq!(c.write(200, b"fua", proto::CMD_FLAG_FUA), 0);
    assert_eq!(b.flushes(), 1, "FUA write did not flush before its reply");
    assert_eq!(
        c.simple(
            Command::WriteZeroes,
            proto::CMD_FLAG_FUA | proto::CMD_FLAG_NO_HOLE,
            200,
            2
        ),
        0
    );
    assert_eq!(b.flushes(), 2, "FUA write-zeroes did not flush");
    assert_eq!(c.simple(Command::Flush, 0, 0, 0), 0);
    assert_eq!(b.flushes(), 3, "NBD_CMD_FLUSH did not flush");
    assert_eq!(&b.contents()[200..203], b"\0\0a");
}

#[test]
fn requests_in_flight_are_answered_out_of_order_safely() {
    // Many requests sent before reading any reply: every handle answered exactly once.
    let size = 4 * 1024 * 1024;
    let data = random_bytes(size);
    let b = mem(size, 512, false, Some(&data));
    let r = Running::unix(opts("vol"), b);
    let mut c = RawClient::connect(&r, "");
    let mut sent = std::collections::HashMap::new();
    for i in 0..64u64 {
        let off = i * 65536 + i;
        let h = c.send(Command::Read, 0, off, 60000);
        sent.insert(h, off as usize);
    }
    for _ in 0..64 {
        let (e, h) = c.reply();
        assert_eq!(e, 0);
        let off = sent.remove(&h).expect("unknown or repeated handle");
        let mut d = vec![0u8; 60000];
        c.s.read_exact(&mut d).unwrap();
        assert!(d == data[off..off + 60000]);
    }
    // NBD_CMD_DISC: the server closes after answering what was in flight.
    c.send(Command::Disc, 0, 0, 0);
    assert!(c.closed());
}

#[test]
fn max_connections_limits_clients() {
    let r = Running::unix(
        NbdOptions {
            max_connections: 1,
            ..opts("vol")
        },
        mem(65536, 512, false, None),
    );
    let mut first = RawClient::connect(&r, "");
    let mut second = UnixStream::connect(r.socket_path().unwrap()).unwrap();
    second
        .set_read_timeout(Some(std::time::Duration::from_secs(10)))
        .unwrap();
    let mut b = [0u8; 18];
    assert!(
        matches!(second.read(&mut b), Ok(0) | Err(_)),
        "second client served"
    );
    assert_eq!(first.read(0, 16).unwrap(), vec![0u8; 16]);
    first.send(Command::Disc, 0, 0, 0);
    assert!(first.closed());
    // The slot is free again (the first connection's thread may need a moment to end).
    let mut ok = false;
    for _ in 0..100 {
        let mut s = UnixStream::connect(r.socket_path().unwrap()).unwrap();
        if s.read(&mut b).map(|n| n > 0).unwrap_or(false) {
            ok = true;
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert!(ok, "no connection accepted after the first one ended");
}

// ---------------------------------------------------------------- resource limits

/// An attacker on a TCP export: the connection after the default limit is closed before
/// the greeting, and the server goes on serving the others.
#[test]
fn default_connection_limit_refuses_the_next_client_and_keeps_serving() {
    let n = DEFAULT_MAX_CONNECTIONS;
    assert_eq!(NbdOptions::default().max_connections, n);
    assert!(n >= 4, "a multi-connection client (nbdcopy: 4) must fit");
    let r = Running::tcp(
        NbdOptions {
            export_name: "vol".into(),
            ..NbdOptions::default()
        },
        mem(65536, 512, false, None),
    );
    let mut clients: Vec<RawClient> = (0..n).map(|_| RawClient::connect(&r, "")).collect();
    let mut extra = dial(&r.address);
    let mut b = [0u8; 18];
    assert!(
        matches!(extra.read(&mut b), Ok(0) | Err(_)),
        "connection {} of a server limited to {n} was served",
        n + 1
    );
    for c in &mut clients {
        assert_eq!(c.read(0, 512).unwrap(), vec![0u8; 512]);
    }
    // One leaves: its slot is free again (its thread may need a moment to end).
    let mut gone = clients.pop().unwrap();
    gone.send(Command::Disc, 0, 0, 0);
    assert!(gone.closed());
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let mut s = dial(&r.address);
        if s.read(&mut b).map(|k| k > 0).unwrap_or(false) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "no slot freed after a client left"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(clients[0].read(0, 16).unwrap(), vec![0u8; 16]);
}

/// Resident memory of process `pid` in bytes (`VmRSS`).
fn rss_of(pid: u32) -> u64 {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let kb: u64 = s
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().strip_suffix("kB"))
        .map(|v| v.trim().parse().unwrap())
        .expect("VmRSS in /proc/PID/status");
    kb * 1024
}

/// Kills and reaps a child process on drop.
struct Child(std::process::Child);

impl Drop for Child {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The environment variable naming the socket of [`memory_test_server_process`].
const MEMORY_SERVER_SOCKET: &str = "LUKSKIT_TEST_NBD_MEMORY_SOCKET";
/// Size of the export of [`memory_test_server_process`].
const MEMORY_EXPORT_SIZE: usize = 40 << 20;

/// Not a test on its own: the server process of
/// `clients_that_never_collect_replies_do_not_grow_server_memory`, which starts this
/// binary again to run only this (so that the memory measured is the server's alone).
#[test]
#[ignore = "server process of clients_that_never_collect_replies_do_not_grow_server_memory"]
fn memory_test_server_process() {
    let path = std::env::var(MEMORY_SERVER_SOCKET)
        .expect("run by clients_that_never_collect_replies_do_not_grow_server_memory");
    let b = MemBackend::new(MEMORY_EXPORT_SIZE, 512, false);
    // Touch the whole export first, so that reading it adds nothing to the resident set.
    let data: Vec<u8> = (0..MEMORY_EXPORT_SIZE).map(|i| (i / 512) as u8).collect();
    b.write_at(&data, 0).unwrap();
    drop(data);
    let server = NbdServer::bind(
        &NbdAddress::Unix(path.into()),
        NbdOptions {
            export_name: "vol".into(),
            ..NbdOptions::default()
        },
    )
    .unwrap();
    server.serve(Arc::new(b)).unwrap();
}

/// Clients that send many large reads and never collect the replies: the server stops
/// reading their requests once a bounded amount is in flight, so its memory does not grow
/// by more than that per connection (without the bound each connection held a 32 MiB
/// buffer per worker, and nothing stopped more connections from doing the same).
#[test]
fn clients_that_never_collect_replies_do_not_grow_server_memory() {
    let dir = tempfile::tempdir().unwrap();
    let sock = dir.path().join("mem.sock");
    let child = Process::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "memory_test_server_process",
            "--ignored",
            "--test-threads=1",
        ])
        .env(MEMORY_SERVER_SOCKET, &sock)
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let child = Child(child);
    let pid = child.0.id();
    let address = format!("unix:{}", sock.display());
    let deadline = Instant::now() + Duration::from_secs(30);
    while UnixStream::connect(&sock).is_err() {
        assert!(Instant::now() < deadline, "server process did not start");
        std::thread::sleep(Duration::from_millis(20));
    }
    // Warm up (threads, buffers of a small request), then take the baseline.
    let mut probe = RawClient::connect_at(&address, "");
    assert_eq!(probe.read(4096, 512).unwrap(), vec![8u8; 512]);
    std::thread::sleep(Duration::from_millis(200));
    let base = rss_of(pid);

    const CLIENTS: usize = 4;
    const READS: u32 = 16;
    let len = proto::MAX_PAYLOAD;
    let mut stuck: Vec<RawClient> = (0..CLIENTS)
        .map(|_| RawClient::connect_at(&address, ""))
        .collect();
    for c in &mut stuck {
        for _ in 0..READS {
            c.send(Command::Read, 0, 0, len);
        }
    }
    // Let the server read and execute whatever it is going to, and watch its memory.
    let mut peak = 0;
    let until = Instant::now() + Duration::from_secs(3);
    while Instant::now() < until {
        peak = peak.max(rss_of(pid));
        std::thread::sleep(Duration::from_millis(10));
    }
    let growth = peak.saturating_sub(base);
    eprintln!(
        "server grew by {} MiB with {CLIENTS} stuck clients",
        growth >> 20
    );
    // Per connection: its budget of bytes in flight (one maximal request), plus the
    // buffers its workers keep between requests (4 x 4 MiB) and thread stacks; a little
    // more for the process as a whole.
    let allowed = CLIENTS as u64 * (MAX_BYTES_IN_FLIGHT as u64 + (16 << 20)) + (32 << 20);
    assert!(
        growth <= allowed,
        "server grew by {} MiB with {CLIENTS} clients not reading (allowed {} MiB)",
        growth >> 20,
        allowed >> 20
    );
    // The server still answers others...
    assert_eq!(probe.read(0, 512).unwrap(), vec![0u8; 512]);
    // ...and a stuck client that starts reading gets every reply, in full.
    let c = &mut stuck[0];
    let mut d = vec![0u8; len as usize];
    for _ in 0..READS {
        let (e, _) = c.reply();
        assert_eq!(e, 0);
        c.s.read_exact(&mut d).unwrap();
        assert!(d[..512].iter().all(|&x| x == 0) && d[512..1024].iter().all(|&x| x == 1));
    }
}

/// Shutdown (what `lukskit close` does) ends within a bounded time even while a client
/// has replies in flight and reads none of them: after a grace period its socket is shut
/// down in both directions, which wakes the blocked writer.
#[test]
fn shutdown_is_bounded_while_a_client_reads_no_replies() {
    let grace = Duration::from_secs(1);
    for tcp in [false, true] {
        let o = NbdOptions {
            export_name: "vol".into(),
            shutdown_grace: grace,
            ..NbdOptions::default()
        };
        let b = mem(1 << 20, 512, false, None);
        let r = if tcp {
            Running::tcp(o, b)
        } else {
            Running::unix(o, b)
        };
        let mut c = RawClient::connect(&r, "");
        for _ in 0..64 {
            c.send(Command::Read, 0, 0, 1 << 20);
        }
        std::thread::sleep(Duration::from_millis(300));
        let (tx, rx) = std::sync::mpsc::channel();
        let started = Instant::now();
        std::thread::spawn(move || {
            let _ = tx.send(r.finish());
        });
        let limit = grace + Duration::from_secs(10);
        let done = rx.recv_timeout(limit);
        assert!(
            done.is_ok(),
            "tcp={tcp}: shutdown still blocked after {limit:?} by a client that reads nothing"
        );
        done.unwrap().unwrap();
        let took = started.elapsed();
        assert!(took >= grace, "tcp={tcp}: no grace period ({took:?})");
        // The client's connection was closed: reading drains what was sent, then ends.
        let mut sink = vec![0u8; 1 << 20];
        let mut total = 0u64;
        loop {
            match c.s.read(&mut sink) {
                Ok(0) | Err(_) => break,
                Ok(n) => total += n as u64,
            }
        }
        assert!(total < 64 * (1 << 20), "tcp={tcp}: every reply was sent");
        eprintln!("tcp={tcp}: shutdown took {took:?}");
    }
}

/// Under umask 0, binding a Unix socket creates it with mode 0777: the socket must never
/// be seen with more than 0600 (another user could connect in that window).
#[test]
fn unix_socket_is_never_visible_with_a_wider_mode_than_0600() {
    use std::os::unix::fs::MetadataExt;
    use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
    struct Umask(libc::mode_t);
    impl Drop for Umask {
        fn drop(&mut self) {
            // SAFETY: umask only changes this process's file creation mask.
            unsafe { libc::umask(self.0) };
        }
    }
    // SAFETY: as above.
    let _restore = Umask(unsafe { libc::umask(0) });
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("nbd.sock");
    let stop = Arc::new(AtomicBool::new(false));
    let wide = Arc::new(AtomicU32::new(0));
    let seen = Arc::new(AtomicU64::new(0));
    let watcher = {
        let (stop, wide, seen, path) = (stop.clone(), wide.clone(), seen.clone(), path.clone());
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                if let Ok(m) = std::fs::symlink_metadata(&path) {
                    seen.fetch_add(1, Ordering::Relaxed);
                    if m.mode() & 0o077 != 0 {
                        wide.store(m.mode() & 0o7777, Ordering::Relaxed);
                    }
                }
            }
        })
    };
    // At least 400 binds, and on until the watcher has seen the socket many times: on a
    // loaded machine the watcher thread may not run at all during the first 400 (CI saw
    // that), which would prove nothing. Bounded by 60 s.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let mut binds = 0u32;
    while binds < 400
        || (seen.load(Ordering::Relaxed) < 100 && std::time::Instant::now() < deadline)
    {
        let s = NbdServer::bind(&NbdAddress::Unix(path.clone()), opts("")).unwrap();
        let m = std::fs::symlink_metadata(&path).unwrap();
        assert_eq!(m.mode() & 0o7777, 0o600);
        if binds >= 400 {
            // Give the watcher the CPU while the socket exists.
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        drop(s);
        binds += 1;
        if wide.load(Ordering::Relaxed) != 0 {
            break;
        }
    }
    stop.store(true, Ordering::Relaxed);
    watcher.join().unwrap();
    assert_eq!(
        wide.load(Ordering::Relaxed),
        0,
        "socket seen with mode {:o}",
        wide.load(Ordering::Relaxed)
    );
    assert!(
        seen.load(Ordering::Relaxed) > 0,
        "the watcher never saw the socket"
    );
}

// ---------------------------------------------------------------- lifecycle

#[test]
fn shutdown_closes_connections_flushes_and_removes_the_socket() {
    let b = mem(65536, 512, false, None);
    let r = Running::unix(opts("vol"), b.clone());
    let path = r.socket_path().unwrap();
    assert!(path.exists());
    let mut c = RawClient::connect(&r, "");
    assert_eq!(c.write(0, b"abc", 0), 0);
    r.finish().unwrap();
    assert!(!path.exists(), "socket left behind");
    assert!(c.closed(), "client connection not closed by shutdown");
    assert!(b.flushes() >= 1, "backend not flushed at shutdown");
    assert_eq!(&b.contents()[..3], b"abc");
}

#[test]
fn bind_refuses_other_files_and_replaces_stale_sockets() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("file");
    std::fs::write(&file, b"keep me").unwrap();
    let e = NbdServer::bind(&NbdAddress::Unix(file.clone()), opts(""))
        .err()
        .expect("bound over a regular file");
    assert!(e.to_string().contains("not a socket"), "{e}");
    assert_eq!(std::fs::read(&file).unwrap(), b"keep me");

    // A stale socket (nobody listening) is replaced.
    let stale = dir.path().join("stale.sock");
    drop(std::os::unix::net::UnixListener::bind(&stale).unwrap());
    assert!(stale.exists());
    // Other tests of this binary spawn processes: a child forked in the instant the
    // listener was open holds a copy until its exec, so allow a moment for that.
    let mut tries = 0;
    let s = loop {
        match NbdServer::bind(&NbdAddress::Unix(stale.clone()), opts("")) {
            Ok(s) => break s,
            Err(e) if e.kind() == std::io::ErrorKind::AddrInUse && tries < 40 => {
                tries += 1;
                std::thread::sleep(std::time::Duration::from_millis(50));
            }
            Err(e) => panic!("stale socket not replaced: {e}"),
        }
    };
    assert_eq!(s.address(), format!("unix:{}", stale.display()));
    // A live one is not.
    let e = NbdServer::bind(&NbdAddress::Unix(stale.clone()), opts(""))
        .err()
        .expect("bound over a live socket");
    assert_eq!(e.kind(), std::io::ErrorKind::AddrInUse);
    drop(s);
    assert!(!stale.exists(), "dropping the server left the socket");
}

#[test]
fn addresses_parse_and_print() {
    let cases = [
        ("unix:/run/x.sock", NbdAddress::Unix("/run/x.sock".into())),
        (
            "tcp:127.0.0.1:10809",
            NbdAddress::Tcp("127.0.0.1:10809".into()),
        ),
        ("tcp:localhost:0", NbdAddress::Tcp("localhost:0".into())),
        ("tcp:[::1]:10809", NbdAddress::Tcp("[::1]:10809".into())),
    ];
    for (s, a) in cases {
        assert_eq!(s.parse::<NbdAddress>().unwrap(), a);
        assert_eq!(a.to_string(), s);
    }
    for bad in [
        "",
        "unix:",
        "tcp:",
        "tcp:host",
        "tcp::10809",
        "tcp:host:99999",
        "tcp:::1:10809",
        "tcp:[::1:10809",
        "nbd://x",
        "/run/x.sock",
    ] {
        let e = bad.parse::<NbdAddress>().unwrap_err();
        assert!(e.contains("invalid NBD address"), "{bad}: {e}");
    }
}
