//! NBD over TLS: X.509 credentials in the directory layout of qemu-nbd's `--object
//! tls-creds-x509,dir=DIR` and nbdkit's `--tls-certificates DIR`, and the TLS session that
//! carries an NBD connection once `NBD_OPT_STARTTLS` was acknowledged.
//!
//! | file | used by |
//! | --- | --- |
//! | `ca-cert.pem` | clients, to verify the server; servers, to verify client certificates |
//! | `server-cert.pem`, `server-key.pem` | servers |
//! | `client-cert.pem`, `client-key.pem` | clients (optional unless the server requires them) |
//!
//! After the handshake, a thread ([`start_pump`]) moves bytes between the TLS session and
//! one end of a Unix socket pair; the NBD code uses the other end like any plain socket
//! (clonable, usable for reading and writing from different threads).

use crate::error::NbdError;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{verify_tls12_signature, verify_tls13_signature, CryptoProvider};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::server::WebPkiClientVerifier;
use rustls::{ClientConfig, ClientConnection, DigitallySignedStruct, RootCertStore, ServerConfig};
use rustls::{Connection, ServerConnection, SignatureScheme};
use std::io::{self, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

pub use rustls::ServerConfig as ServerTlsConfig;

/// CA certificate file name.
pub const CA_CERT: &str = "ca-cert.pem";
/// Server certificate file name.
pub const SERVER_CERT: &str = "server-cert.pem";
/// Server key file name.
pub const SERVER_KEY: &str = "server-key.pem";
/// Client certificate file name.
pub const CLIENT_CERT: &str = "client-cert.pem";
/// Client key file name.
pub const CLIENT_KEY: &str = "client-key.pem";

/// Longest a TLS handshake may take.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(30);

fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

fn tls_err(what: impl std::fmt::Display) -> NbdError {
    NbdError::Tls(what.to_string())
}

fn certs(path: &Path) -> Result<Vec<CertificateDer<'static>>, NbdError> {
    let certs: Vec<_> = CertificateDer::pem_file_iter(path)
        .map_err(|e| tls_err(format_args!("{}: {e}", path.display())))?
        .collect::<Result<_, _>>()
        .map_err(|e| tls_err(format_args!("{}: {e}", path.display())))?;
    if certs.is_empty() {
        return Err(tls_err(format_args!(
            "{}: no certificate found",
            path.display()
        )));
    }
    Ok(certs)
}

fn key(path: &Path) -> Result<PrivateKeyDer<'static>, NbdError> {
    let key = PrivateKeyDer::from_pem_file(path)
        .map_err(|e| tls_err(format_args!("{}: {e}", path.display())))?;
    Ok(match &key {
        PrivateKeyDer::Sec1(k) => match sec1_without_leading_zero(k.secret_sec1_der()) {
            Some(fixed) => PrivateKeyDer::Sec1(fixed.into()),
            None => key,
        },
        _ => key,
    })
}

/// A DER header (tag, content length) at the start of `b`: (tag, header length, content
/// length).
fn der_header(b: &[u8]) -> Option<(u8, usize, usize)> {
    let tag = *b.first()?;
    let first = *b.get(1)?;
    if first < 0x80 {
        return Some((tag, 2, usize::from(first)));
    }
    let n = usize::from(first & 0x7f);
    if n == 0 || n > 3 {
        return None;
    }
    let len = b
        .get(2..2 + n)?
        .iter()
        .fold(0usize, |a, &x| (a << 8) | usize::from(x));
    Some((tag, 2 + n, len))
}

fn der_len(out: &mut Vec<u8>, len: usize) {
    match len {
        0..=0x7f => out.push(len as u8),
        0x80..=0xff => out.extend_from_slice(&[0x81, len as u8]),
        _ => out.extend_from_slice(&[0x82, (len >> 8) as u8, len as u8]),
    }
}

/// GnuTLS (certtool) writes the private scalar of an ECDSA key in SEC1 form with a leading
/// zero byte when its top bit is set (33 bytes for P-256), which ring refuses. The same key
/// without that byte, or `None` when there is nothing to fix.
fn sec1_without_leading_zero(der: &[u8]) -> Option<Vec<u8>> {
    let (tag, hl, len) = der_header(der)?;
    if tag != 0x30 || hl + len != der.len() {
        return None;
    }
    let body = &der[hl..];
    let (vtag, vhl, vlen) = der_header(body)?;
    if vtag != 0x02 {
        return None;
    }
    let version = body.get(..vhl + vlen)?;
    let rest = &body[vhl + vlen..];
    let (otag, ohl, olen) = der_header(rest)?;
    let scalar = rest.get(ohl..ohl + olen)?;
    if otag != 0x04 || !matches!(olen, 33 | 49 | 67) || scalar[0] != 0 {
        return None;
    }
    let after = &rest[ohl + olen..];
    let mut inner = version.to_vec();
    inner.push(0x04);
    der_len(&mut inner, olen - 1);
    inner.extend_from_slice(&scalar[1..]);
    inner.extend_from_slice(after);
    let mut out = vec![0x30];
    der_len(&mut out, inner.len());
    out.extend_from_slice(&inner);
    Some(out)
}

/// Check that `key` can sign; an ECDSA key in SEC1 form that the crypto provider refuses
/// (certtool writes the curve parameters inside it) gets a hint.
fn usable(key: PrivateKeyDer<'static>, path: &Path) -> Result<PrivateKeyDer<'static>, NbdError> {
    let sec1 = matches!(key, PrivateKeyDer::Sec1(_));
    match provider().key_provider.load_private_key(key.clone_key()) {
        Ok(_) => Ok(key),
        Err(e) if sec1 => Err(tls_err(format_args!(
            "{}: {e}; convert this SEC1 \"EC PRIVATE KEY\" to PKCS#8: openssl pkcs8 -topk8 \
             -nocrypt -in {0} -out {0}.p8 && mv {0}.p8 {0}",
            path.display()
        ))),
        Err(e) => Err(tls_err(format_args!("{}: {e}", path.display()))),
    }
}

fn roots(dir: &Path) -> Result<Arc<RootCertStore>, NbdError> {
    let mut store = RootCertStore::empty();
    let path = dir.join(CA_CERT);
    for c in certs(&path)? {
        store
            .add(c)
            .map_err(|e| tls_err(format_args!("{}: {e}", path.display())))?;
    }
    Ok(Arc::new(store))
}

/// The TLS configuration of an NBD server from the credentials in `dir`
/// (`server-cert.pem`, `server-key.pem`). With `verify_peer` (what qemu-nbd's
/// `tls-creds-x509` object does by default, `verify-peer=on`, and nbdkit's
/// `--tls-verify-peer`), clients must present a certificate signed by `ca-cert.pem`, and
/// a `dir` without `ca-cert.pem` is [`NbdError::MissingCredential`]. Without it, any
/// client that can connect gets the export: the session is encrypted but nobody is
/// authenticated.
pub fn server_config(dir: &Path, verify_peer: bool) -> Result<Arc<ServerConfig>, NbdError> {
    let builder = ServerConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(tls_err)?;
    let ca = dir.join(CA_CERT);
    if verify_peer && !ca.exists() {
        return Err(NbdError::MissingCredential {
            path: ca,
            needed_for: "to verify the certificates of clients (the CA certificate \
                         that signed them)",
        });
    }
    let builder = if verify_peer {
        let v = WebPkiClientVerifier::builder_with_provider(roots(dir)?, provider())
            .build()
            .map_err(tls_err)?;
        builder.with_client_cert_verifier(v)
    } else {
        builder.with_no_client_auth()
    };
    let config = builder
        .with_single_cert(
            certs(&dir.join(SERVER_CERT))?,
            usable(key(&dir.join(SERVER_KEY))?, &dir.join(SERVER_KEY))?,
        )
        .map_err(tls_err)?;
    Ok(Arc::new(config))
}

/// Where libnbd looks for client credentials when the URI names none.
fn default_client_dir() -> Option<PathBuf> {
    let home = std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".pki/libnbd"));
    home.into_iter()
        .chain([PathBuf::from("/etc/pki/libnbd")])
        .find(|d| d.join(CA_CERT).exists())
}

/// The TLS configuration of an NBD client. `dir` (or libnbd's defaults `~/.pki/libnbd`,
/// `/etc/pki/libnbd`) holds `ca-cert.pem`, which the server's certificate must chain to
/// (unless `verify_peer` is false), and optionally `client-cert.pem` with
/// `client-key.pem`, presented to servers that ask.
pub fn client_config(dir: Option<&Path>, verify_peer: bool) -> Result<Arc<ClientConfig>, NbdError> {
    let dir = dir.map(Path::to_path_buf).or_else(default_client_dir);
    let builder = ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(tls_err)?;
    let builder = if verify_peer {
        let Some(d) = &dir else {
            return Err(tls_err(
                "no CA certificate to verify the server: add ?tls-certificates=DIR (a directory \
                 with ca-cert.pem) to the URI, or tls-verify-peer=false",
            ));
        };
        builder.with_root_certificates(roots(d)?)
    } else {
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(NoVerify(provider())))
    };
    let client_pair = dir
        .as_ref()
        .map(|d| (d.join(CLIENT_CERT), d.join(CLIENT_KEY)))
        .filter(|(c, k)| c.exists() && k.exists());
    let config = match client_pair {
        Some((c, k)) => builder
            .with_client_auth_cert(certs(&c)?, usable(key(&k)?, &k)?)
            .map_err(tls_err)?,
        None => builder.with_no_client_auth(),
    };
    Ok(Arc::new(config))
}

/// Accepts any server certificate (`tls-verify-peer=false`); signatures are still checked,
/// so the session is encrypted, just not authenticated.
#[derive(Debug)]
struct NoVerify(Arc<CryptoProvider>);

impl ServerCertVerifier for NoVerify {
    fn verify_server_cert(
        &self,
        _: &CertificateDer<'_>,
        _: &[CertificateDer<'_>],
        _: &ServerName<'_>,
        _: &[u8],
        _: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }
    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }
    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }
    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// A connected network socket a TLS session can run over.
pub trait NetSocket: Read + Write + AsRawFd + Send + 'static {
    /// Switch non-blocking mode.
    fn set_nonblocking(&self, on: bool) -> io::Result<()>;
    /// Set read and write timeouts.
    fn set_timeouts(&self, t: Option<Duration>) -> io::Result<()>;
    /// Shut the socket down in both directions.
    fn shutdown_both(&self);
}

impl NetSocket for TcpStream {
    fn set_nonblocking(&self, on: bool) -> io::Result<()> {
        TcpStream::set_nonblocking(self, on)
    }
    fn set_timeouts(&self, t: Option<Duration>) -> io::Result<()> {
        self.set_read_timeout(t)?;
        self.set_write_timeout(t)
    }
    fn shutdown_both(&self) {
        let _ = self.shutdown(Shutdown::Both);
    }
}

impl NetSocket for UnixStream {
    fn set_nonblocking(&self, on: bool) -> io::Result<()> {
        UnixStream::set_nonblocking(self, on)
    }
    fn set_timeouts(&self, t: Option<Duration>) -> io::Result<()> {
        self.set_read_timeout(t)?;
        self.set_write_timeout(t)
    }
    fn shutdown_both(&self) {
        let _ = self.shutdown(Shutdown::Both);
    }
}

fn handshake<S: NetSocket>(conn: &mut Connection, sock: &mut S) -> Result<(), NbdError> {
    sock.set_timeouts(Some(HANDSHAKE_TIMEOUT))
        .map_err(|e| tls_err(format_args!("handshake: {e}")))?;
    while conn.is_handshaking() {
        if let Err(e) = conn.complete_io(sock) {
            // Send the alert rustls queued (if any) so the peer learns why.
            let _ = conn.write_tls(sock);
            return Err(tls_err(format_args!("handshake failed: {e}")));
        }
    }
    // TLS 1.3 servers may send tickets right after; they are read by the pump.
    sock.set_timeouts(None)
        .map_err(|e| tls_err(format_args!("handshake: {e}")))?;
    Ok(())
}

/// Run the client side of a TLS handshake over `sock` (right after the server
/// acknowledged `NBD_OPT_STARTTLS`), checking the server's certificate against
/// `server_name`. Returns the plaintext end of the session.
pub fn connect<S: NetSocket>(
    mut sock: S,
    config: Arc<ClientConfig>,
    server_name: &str,
) -> Result<UnixStream, NbdError> {
    let name = ServerName::try_from(server_name.to_string())
        .map_err(|e| tls_err(format_args!("server name '{server_name}': {e}")))?;
    let mut conn: Connection = ClientConnection::new(config, name).map_err(tls_err)?.into();
    handshake(&mut conn, &mut sock)?;
    start_pump(conn, sock).map_err(|e| tls_err(format_args!("cannot start TLS thread: {e}")))
}

/// Run the server side of a TLS handshake over `sock` (after acknowledging
/// `NBD_OPT_STARTTLS`). Returns the plaintext end of the session.
pub fn accept<S: NetSocket>(
    mut sock: S,
    config: Arc<ServerConfig>,
) -> Result<UnixStream, NbdError> {
    let mut conn: Connection = ServerConnection::new(config).map_err(tls_err)?.into();
    handshake(&mut conn, &mut sock)?;
    start_pump(conn, sock).map_err(|e| tls_err(format_args!("cannot start TLS thread: {e}")))
}

/// Most decrypted bytes held for the plaintext side before the network is read further.
const PUMP_LIMIT: usize = 4 * 1024 * 1024;

/// Start the thread that moves bytes between an established TLS session on `net` and a
/// new Unix socket pair; returns the plaintext end. The thread ends when either side
/// closes (a closed plaintext end sends `close_notify` to the peer).
pub fn start_pump<S: NetSocket>(conn: Connection, net: S) -> io::Result<UnixStream> {
    let (ours, theirs) = UnixStream::pair()?;
    std::thread::Builder::new()
        .name("nbd-tls".into())
        .spawn(move || {
            let _ = pump(conn, net, ours);
        })?;
    Ok(theirs)
}

/// poll(2) on two descriptors (the one `unsafe` call of this crate).
#[allow(unsafe_code)]
fn poll2(a: i32, ea: i16, b: i32, eb: i16) -> io::Result<(i16, i16)> {
    let mut fds = [
        libc::pollfd {
            fd: a,
            events: ea,
            revents: 0,
        },
        libc::pollfd {
            fd: b,
            events: eb,
            revents: 0,
        },
    ];
    loop {
        // SAFETY: `fds` is a valid array of two initialised pollfd structures that lives
        // across the call; the descriptors are owned by the caller and open.
        let r = unsafe { libc::poll(fds.as_mut_ptr(), 2, -1) };
        if r >= 0 {
            return Ok((fds[0].revents, fds[1].revents));
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

fn would_block(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted
    )
}

/// Move every decrypted byte rustls holds to `to_local`; end of stream sets `eof`.
fn drain_plaintext(conn: &mut Connection, buf: &mut [u8], to_local: &mut Vec<u8>, eof: &mut bool) {
    loop {
        match conn.reader().read(buf) {
            Ok(0) => {
                *eof = true;
                return;
            }
            Ok(n) => to_local.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
            Err(_) => {
                *eof = true;
                return;
            }
        }
    }
}

fn pump<S: NetSocket>(mut conn: Connection, mut net: S, mut local: UnixStream) -> io::Result<()> {
    net.set_nonblocking(true)?;
    local.set_nonblocking(true)?;
    conn.set_buffer_limit(None);
    let mut to_local: Vec<u8> = Vec::new();
    let mut buf = vec![0u8; 64 * 1024];
    let mut net_eof = false;
    // The handshake may have read application data along with its last flight: it is
    // already decrypted and would never be announced by the socket.
    drain_plaintext(&mut conn, &mut buf, &mut to_local, &mut net_eof);
    let result = loop {
        // Send what TLS has queued.
        let mut net_failed = false;
        while conn.wants_write() {
            match conn.write_tls(&mut net) {
                Ok(_) => {}
                Err(e) if would_block(&e) => break,
                Err(_) => {
                    net_failed = true;
                    break;
                }
            }
        }
        if net_failed {
            break Ok(());
        }
        // Hand decrypted bytes to the plaintext side.
        while !to_local.is_empty() {
            match local.write(&to_local) {
                Ok(n) => {
                    to_local.drain(..n);
                }
                Err(e) if would_block(&e) => break,
                Err(_) => break,
            }
        }
        if net_eof && to_local.is_empty() {
            // The peer closed: the plaintext side sees end-of-stream.
            break Ok(());
        }
        let net_events = (if !net_eof && to_local.len() < PUMP_LIMIT {
            libc::POLLIN
        } else {
            0
        }) | (if conn.wants_write() { libc::POLLOUT } else { 0 });
        let local_events = (if !conn.wants_write() { libc::POLLIN } else { 0 })
            | (if to_local.is_empty() {
                0
            } else {
                libc::POLLOUT
            });
        let (nr, lr) = match poll2(net.as_raw_fd(), net_events, local.as_raw_fd(), local_events) {
            Ok(r) => r,
            Err(e) => break Err(e),
        };
        if nr & (libc::POLLIN | libc::POLLHUP | libc::POLLERR) != 0 && !net_eof {
            match conn.read_tls(&mut net) {
                Ok(0) => net_eof = true,
                Ok(_) => {}
                Err(e) if would_block(&e) => {}
                Err(_) => net_eof = true,
            }
            if let Err(e) = conn.process_new_packets() {
                // Send the alert, then give up on the session.
                let _ = conn.write_tls(&mut net);
                break Err(io::Error::other(e));
            }
            drain_plaintext(&mut conn, &mut buf, &mut to_local, &mut net_eof);
        }
        if lr & (libc::POLLIN | libc::POLLHUP | libc::POLLERR) != 0 && !conn.wants_write() {
            match local.read(&mut buf) {
                Ok(0) => {
                    // The NBD side is done: say goodbye properly.
                    conn.send_close_notify();
                    let _ = net.set_nonblocking(false);
                    let _ = net.set_timeouts(Some(Duration::from_secs(5)));
                    while conn.wants_write() {
                        if conn.write_tls(&mut net).is_err() {
                            break;
                        }
                    }
                    break Ok(());
                }
                Ok(n) => {
                    if conn.writer().write_all(&buf[..n]).is_err() {
                        break Ok(());
                    }
                }
                Err(e) if would_block(&e) => {}
                Err(_) => break Ok(()),
            }
        }
    };
    let _ = local.shutdown(Shutdown::Both);
    net.shutdown_both();
    result
}
