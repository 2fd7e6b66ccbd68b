//! How commands reach a TPM: the kernel's TPM character device (`/dev/tpmrm0`, the resource
//! manager, or `/dev/tpm0`), or swtpm's command socket (what tpm2-tss's `swtpm` TCTI talks
//! to; Unix or TCP). Every wait is bounded.

use crate::error::{Result, Tpm2Error};
use std::io::{Read, Write};
use std::os::fd::AsRawFd;
use std::time::Duration;

/// The largest response lukskit reads (TPMs answer at most 4096 bytes: `MAX_RESPONSE_SIZE`).
pub const MAX_RESPONSE: usize = 8192;

/// The default time one command may take. RSA primary keys are generated inside the TPM
/// (seconds on slow chips); nothing lukskit sends needs more.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(90);

/// A channel to a TPM: send one command, get its response.
pub trait Transport {
    /// Send `command` (a complete TPM command) and return the complete response.
    fn transact(&mut self, command: &[u8]) -> Result<Vec<u8>>;
    /// What to call the TPM in messages.
    fn name(&self) -> &str;
}

/// A TPM that answers every command with the next recorded response: `data` is a sequence
/// of big-endian `u16` lengths, each followed by that many bytes (a shorter tail is cut).
/// For fuzzing and tests of the conversation with a hostile TPM; every response is still
/// checked as a frame ([`check_frame`]).
#[derive(Debug, Clone)]
pub struct Replay {
    data: Vec<u8>,
    pos: usize,
}

impl Replay {
    /// A replay of `data`.
    pub fn new(data: &[u8]) -> Replay {
        Replay {
            data: data.to_vec(),
            pos: 0,
        }
    }
}

impl Transport for Replay {
    fn transact(&mut self, _command: &[u8]) -> Result<Vec<u8>> {
        let rest = &self.data[self.pos..];
        if rest.len() < 2 {
            return Err(Tpm2Error::Timeout("replay".into()));
        }
        let n = usize::from(u16::from_be_bytes([rest[0], rest[1]])).min(rest.len() - 2);
        let out = rest[2..2 + n].to_vec();
        self.pos += 2 + n;
        check_frame(&out)?;
        Ok(out)
    }
    fn name(&self) -> &str {
        "replay"
    }
}

/// Where a TPM is, as `--tpm2-device` / crypttab's `tpm2-device=` name it.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum DeviceSpec {
    /// The first of `/dev/tpmrm0`, `/dev/tpm0` that exists (`auto`, or nothing given).
    Auto,
    /// A kernel TPM character device (`/dev/tpmrm0`, `device:/dev/tpm0`).
    Device(String),
    /// swtpm's command socket at a Unix path (`swtpm:path=SOCKET`).
    SwtpmUnix(String),
    /// swtpm's command socket over TCP (`swtpm:host=H,port=P`, default localhost:2321).
    SwtpmTcp(String, u16),
}

impl DeviceSpec {
    /// Parse a device name: `auto`, a path, `device:PATH`, `swtpm:path=SOCKET`,
    /// `swtpm:host=H,port=P` (tpm2-tss TCTI strings, as systemd accepts them).
    pub fn parse(s: &str) -> Result<DeviceSpec> {
        if s.is_empty() || s == "auto" {
            return Ok(DeviceSpec::Auto);
        }
        if s.starts_with('/') {
            return Ok(DeviceSpec::Device(s.to_string()));
        }
        if let Some(p) = s.strip_prefix("device:") {
            return Ok(if p.is_empty() {
                DeviceSpec::Device("/dev/tpm0".into())
            } else {
                DeviceSpec::Device(p.to_string())
            });
        }
        if let Some(conf) = s.strip_prefix("swtpm:").or((s == "swtpm").then_some("")) {
            let mut host = "localhost".to_string();
            let mut port = 2321u16;
            for kv in conf.split(',').filter(|k| !k.is_empty()) {
                match kv.split_once('=') {
                    Some(("path", p)) if !p.is_empty() => {
                        return Ok(DeviceSpec::SwtpmUnix(p.to_string()))
                    }
                    Some(("host", h)) if !h.is_empty() => host = h.to_string(),
                    Some(("port", p)) => {
                        port = p
                            .parse()
                            .map_err(|_| Tpm2Error::BadDeviceName(s.to_string()))?
                    }
                    _ => return Err(Tpm2Error::BadDeviceName(s.to_string())),
                }
            }
            return Ok(DeviceSpec::SwtpmTcp(host, port));
        }
        Err(Tpm2Error::BadDeviceName(s.to_string()))
    }

    /// Whether the TPM is there to be opened: its character device exists (`auto`: either
    /// kernel node), its swtpm socket accepts a connection. A TCP swtpm counts as there (a
    /// connection attempt to a host that is down can take long: [`DeviceSpec::open`] says).
    pub fn present(&self) -> bool {
        match self {
            DeviceSpec::Auto => ["/dev/tpmrm0", "/dev/tpm0"]
                .iter()
                .any(|p| std::path::Path::new(p).exists()),
            DeviceSpec::Device(p) => std::path::Path::new(p).exists(),
            DeviceSpec::SwtpmUnix(p) => std::os::unix::net::UnixStream::connect(p).is_ok(),
            DeviceSpec::SwtpmTcp(..) => true,
        }
    }

    /// Wait until the TPM is [`present`](DeviceSpec::present), looking every 100 ms, for at
    /// most `limit` (`Duration::MAX`: as long as it takes); whether it is there.
    pub fn wait_present(&self, limit: Duration) -> bool {
        let start = std::time::Instant::now();
        loop {
            if self.present() {
                return true;
            }
            if start.elapsed() >= limit {
                return false;
            }
            std::thread::sleep(Duration::from_millis(100).min(limit));
        }
    }

    /// Connect, with `timeout` for each command.
    pub fn open(&self, timeout: Duration) -> Result<Box<dyn Transport>> {
        match self {
            DeviceSpec::Auto => {
                for p in ["/dev/tpmrm0", "/dev/tpm0"] {
                    if std::path::Path::new(p).exists() {
                        return Ok(Box::new(DeviceTransport::open(p, timeout)?));
                    }
                }
                Err(Tpm2Error::NoDevice("no /dev/tpmrm0 or /dev/tpm0".into()))
            }
            DeviceSpec::Device(p) => Ok(Box::new(DeviceTransport::open(p, timeout)?)),
            DeviceSpec::SwtpmUnix(p) => {
                let s = std::os::unix::net::UnixStream::connect(p).map_err(|e| {
                    Tpm2Error::NoDevice(format!("cannot connect to swtpm socket {p}: {e}"))
                })?;
                let name = format!("swtpm:path={p}");
                set_timeouts(&s, timeout, &name, |s, t| {
                    s.set_read_timeout(t)?;
                    s.set_write_timeout(t)
                })?;
                Ok(Box::new(StreamTransport { stream: s, name }))
            }
            DeviceSpec::SwtpmTcp(h, port) => {
                use std::net::ToSocketAddrs;
                let name = format!("swtpm:host={h},port={port}");
                let addr = (h.as_str(), *port)
                    .to_socket_addrs()
                    .ok()
                    .and_then(|mut a| a.next())
                    .ok_or_else(|| Tpm2Error::NoDevice(format!("cannot resolve {h}")))?;
                let s = std::net::TcpStream::connect_timeout(
                    &addr,
                    timeout.min(Duration::from_secs(10)),
                )
                .map_err(|e| Tpm2Error::NoDevice(format!("cannot connect to {name}: {e}")))?;
                set_timeouts(&s, timeout, &name, |s, t| {
                    s.set_read_timeout(t)?;
                    s.set_write_timeout(t)
                })?;
                Ok(Box::new(StreamTransport { stream: s, name }))
            }
        }
    }
}

fn set_timeouts<S>(
    s: &S,
    t: Duration,
    name: &str,
    f: impl Fn(&S, Option<Duration>) -> std::io::Result<()>,
) -> Result<()> {
    f(s, Some(t)).map_err(|source| Tpm2Error::Io {
        device: name.to_string(),
        source,
    })
}

/// The kernel's TPM device: one `write` of the command, one `read` of the response, with a
/// `poll` bound on the wait.
pub struct DeviceTransport {
    file: std::fs::File,
    path: String,
    timeout: Duration,
}

impl DeviceTransport {
    /// Open `path` read-write.
    pub fn open(path: &str, timeout: Duration) -> Result<Self> {
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(path)
            .map_err(|e| match e.raw_os_error() {
                Some(libc::ENOENT) | Some(libc::ENXIO) | Some(libc::ENODEV) => {
                    Tpm2Error::NoDevice(format!("{path}: {e}"))
                }
                Some(libc::EBUSY) => Tpm2Error::Busy(path.to_string()),
                _ => Tpm2Error::Io {
                    device: path.to_string(),
                    source: e,
                },
            })?;
        Ok(DeviceTransport {
            file,
            path: path.to_string(),
            timeout,
        })
    }

    fn io(&self, source: std::io::Error) -> Tpm2Error {
        Tpm2Error::Io {
            device: self.path.clone(),
            source,
        }
    }
}

impl Transport for DeviceTransport {
    // The one `unsafe` call of this crate: poll(2) for the TPM's answer.
    #[allow(unsafe_code)]
    fn transact(&mut self, command: &[u8]) -> Result<Vec<u8>> {
        let n = self.file.write(command).map_err(|e| self.io(e))?;
        if n != command.len() {
            return Err(Tpm2Error::BadResponse("short write to the TPM device"));
        }
        let mut pfd = libc::pollfd {
            fd: self.file.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        let ms = i32::try_from(self.timeout.as_millis()).unwrap_or(i32::MAX);
        loop {
            // SAFETY: `pfd` is a valid pollfd for the duration of the call and we pass
            // a count of exactly one.
            let r = unsafe { libc::poll(&mut pfd, 1, ms) };
            if r < 0 {
                let e = std::io::Error::last_os_error();
                if e.kind() == std::io::ErrorKind::Interrupted {
                    continue;
                }
                return Err(self.io(e));
            }
            if r == 0 {
                return Err(Tpm2Error::Timeout(self.path.clone()));
            }
            break;
        }
        let mut buf = vec![0u8; MAX_RESPONSE];
        let n = self.file.read(&mut buf).map_err(|e| self.io(e))?;
        buf.truncate(n);
        check_frame(&buf)?;
        Ok(buf)
    }

    fn name(&self) -> &str {
        &self.path
    }
}

/// swtpm's command channel: raw TPM commands and responses over a stream socket.
struct StreamTransport<S: Read + Write> {
    stream: S,
    name: String,
}

impl<S: Read + Write> Transport for StreamTransport<S> {
    fn transact(&mut self, command: &[u8]) -> Result<Vec<u8>> {
        let map = |name: &str, e: std::io::Error| {
            if matches!(
                e.kind(),
                std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
            ) {
                Tpm2Error::Timeout(name.to_string())
            } else {
                Tpm2Error::Io {
                    device: name.to_string(),
                    source: e,
                }
            }
        };
        self.stream
            .write_all(command)
            .map_err(|e| map(&self.name, e))?;
        let mut hdr = [0u8; 10];
        self.stream
            .read_exact(&mut hdr)
            .map_err(|e| map(&self.name, e))?;
        let size = u32::from_be_bytes([hdr[2], hdr[3], hdr[4], hdr[5]]) as usize;
        if !(10..=MAX_RESPONSE).contains(&size) {
            return Err(Tpm2Error::BadResponse("response size out of range"));
        }
        let mut buf = vec![0u8; size];
        buf[..10].copy_from_slice(&hdr);
        self.stream
            .read_exact(&mut buf[10..])
            .map_err(|e| map(&self.name, e))?;
        Ok(buf)
    }

    fn name(&self) -> &str {
        &self.name
    }
}

/// Check that `buf` is one whole response: a header whose size is the length read.
pub fn check_frame(buf: &[u8]) -> Result<()> {
    if buf.len() < 10 {
        return Err(Tpm2Error::BadResponse("response shorter than its header"));
    }
    let size = u32::from_be_bytes([buf[2], buf[3], buf[4], buf[5]]) as usize;
    if size != buf.len() {
        return Err(Tpm2Error::BadResponse(
            "response size does not match its header",
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn device_names() {
        assert_eq!(DeviceSpec::parse("auto").unwrap(), DeviceSpec::Auto);
        assert_eq!(
            DeviceSpec::parse("/dev/tpmrm0").unwrap(),
            DeviceSpec::Device("/dev/tpmrm0".into())
        );
        assert_eq!(
            DeviceSpec::parse("device:/dev/tpm0").unwrap(),
            DeviceSpec::Device("/dev/tpm0".into())
        );
        assert_eq!(
            DeviceSpec::parse("swtpm:path=/run/s.sock").unwrap(),
            DeviceSpec::SwtpmUnix("/run/s.sock".into())
        );
        assert_eq!(
            DeviceSpec::parse("swtpm:host=127.0.0.1,port=2400").unwrap(),
            DeviceSpec::SwtpmTcp("127.0.0.1".into(), 2400)
        );
        assert_eq!(
            DeviceSpec::parse("swtpm:").unwrap(),
            DeviceSpec::SwtpmTcp("localhost".into(), 2321)
        );
        assert!(DeviceSpec::parse("mssim:").is_err());
        assert!(DeviceSpec::parse("swtpm:port=x").is_err());
        assert!(DeviceSpec::parse("swtpm:bogus=1").is_err());
    }

    #[test]
    fn frames() {
        assert!(check_frame(&[0x80, 1, 0, 0, 0, 10, 0, 0, 0, 0]).is_ok());
        assert!(check_frame(&[0x80, 1, 0, 0, 0, 11, 0, 0, 0, 0]).is_err());
        assert!(check_frame(&[0x80, 1, 0]).is_err());
    }
}
