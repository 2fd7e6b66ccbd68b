//! The one codec between `lukskit` and its serving processes.
//!
//! * **Launch** (the parent writes to the child's standard input, once): a little-endian
//!   `u32` length and the JSON [`MappingConfig`], then a `u32` length and the raw volume key.
//!   The child answers one [`Reply`] line on its standard output when the device is usable
//!   (or not).
//! * **Control** (a connection to `/run/lukskit/NAME/control`): one [`Command`] line — `status`,
//!   `close`, `suspend`, `resume LEN` followed by LEN raw key bytes, `resize [BYTES]`, and
//!   for online re-encryption `hold`, `release` and `reload JSON_LEN KEYS` followed by the
//!   JSON segment list ([`WireSegment`]) and KEYS keys, each a little-endian `u32` length and
//!   the raw key, and `progress PHASE DONE TOTAL` ([`Progress`], for the log) — and one reply
//!   line.
//! * **Replies**: `ok [TEXT]`, or `err KIND DETAIL` where KIND names the [`ActivateError`]
//!   variant, so errors cross the process boundary typed.

use crate::error::ActivateError;
use crate::request::MappingConfig;
use lukskit_crypto::spec::CipherSpec;
use lukskit_crypto::{CryptoError, SecretBuf};
use lukskit_volume::segment::{CryptSegment, Segment, SegmentKind, SegmentTable};
use lukskit_volume::{DataError, IoOp, ParamError, VolumeError};
use serde::{Deserialize, Serialize};
use std::io::{self, BufRead, Read, Write};
use zeroize::Zeroizing;

/// Most bytes of mapping parameters a serving process accepts.
const MAX_CONFIG: usize = 1 << 20;
/// Most bytes of a volume key: loop-AES's multi-key mappings carry 64 keys and the lmk seed
/// (65 × 32 bytes for AES-256), so 65 keys of 64 bytes at most.
const MAX_KEY: usize = 65 * 64;
/// Most keys of a `reload` (a re-encryption has two: the old and the new one).
const MAX_RELOAD_KEYS: usize = 2;
/// Most segments of a `reload` or a launch table (cryptsetup's hot-zone tables have at most
/// three, its BitLocker tables at most ten: `MAX_BITLK_SEGMENTS`).
const MAX_RELOAD_SEGMENTS: usize = 10;

/// One segment of the table a `reload` installs. Keys travel after the JSON, raw, and are
/// named here by their index.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WireSegment {
    /// First plaintext byte.
    pub start: u64,
    /// Length in bytes.
    pub len: u64,
    /// `crypt` or `linear`.
    pub kind: String,
    /// Byte offset of its first stored byte on the data device.
    pub device_offset: u64,
    /// Cipher spec (crypt).
    #[serde(default)]
    pub cipher: String,
    /// Encryption sector size (crypt).
    #[serde(default)]
    pub sector_size: u32,
    /// IV offset in 512-byte sectors (crypt).
    #[serde(default)]
    pub iv_offset: u64,
    /// dm-crypt `iv_large_sectors` (crypt).
    #[serde(default)]
    pub iv_large_sectors: bool,
    /// Index of its key among the request's keys (crypt).
    #[serde(default)]
    pub key: Option<usize>,
    /// LUKS2 digest of its key.
    #[serde(default)]
    pub digest: Option<u32>,
}

/// A segment table with its keys, as a `reload` carries it.
pub struct Reload {
    /// The segments.
    pub segments: Vec<WireSegment>,
    /// Their keys.
    pub keys: Vec<Zeroizing<Vec<u8>>>,
}

impl Reload {
    /// The wire form of `table` (each distinct key once).
    pub fn from_table(table: &SegmentTable) -> Self {
        let mut keys: Vec<Zeroizing<Vec<u8>>> = Vec::new();
        let mut segments = Vec::new();
        for s in table.segments() {
            let mut w = WireSegment {
                start: s.start,
                len: s.len,
                kind: String::new(),
                device_offset: 0,
                cipher: String::new(),
                sector_size: 0,
                iv_offset: 0,
                iv_large_sectors: false,
                key: None,
                digest: None,
            };
            match &s.kind {
                SegmentKind::Crypt(c) => {
                    let k = c.key.as_bytes();
                    let idx = match keys.iter().position(|x| x[..] == *k) {
                        Some(i) => i,
                        None => {
                            keys.push(Zeroizing::new(k.to_vec()));
                            keys.len() - 1
                        }
                    };
                    w.kind = "crypt".into();
                    w.device_offset = c.device_offset;
                    w.cipher = c.cipher.to_string();
                    w.sector_size = c.sector_size;
                    w.iv_offset = c.iv_offset;
                    w.iv_large_sectors = c.iv_large_sectors;
                    w.key = Some(idx);
                    w.digest = c.digest;
                }
                SegmentKind::Linear { device_offset } => {
                    w.kind = "linear".into();
                    w.device_offset = *device_offset;
                }
                SegmentKind::Zero => w.kind = "zero".into(),
            }
            segments.push(w);
        }
        Reload { segments, keys }
    }

    /// The checked segment table (keys copied into locked, zeroizing memory).
    pub fn to_table(&self) -> Result<SegmentTable, ActivateError> {
        let bad = |m: &str| ActivateError::InvalidRequest(format!("bad segment table: {m}"));
        if self.segments.is_empty() || self.segments.len() > MAX_RELOAD_SEGMENTS {
            return Err(bad("segment count"));
        }
        let mut out = Vec::with_capacity(self.segments.len());
        for w in &self.segments {
            let kind = match w.kind.as_str() {
                "crypt" => {
                    let key = w
                        .key
                        .and_then(|i| self.keys.get(i))
                        .ok_or_else(|| bad("key index"))?;
                    SegmentKind::Crypt(CryptSegment {
                        cipher: CipherSpec::parse(&w.cipher)
                            .map_err(|e| ActivateError::Volume(e.into()))?,
                        key: SecretBuf::from_slice(key),
                        sector_size: w.sector_size,
                        iv_offset: w.iv_offset,
                        iv_large_sectors: w.iv_large_sectors,
                        device_offset: w.device_offset,
                        digest: w.digest,
                    })
                }
                "linear" => SegmentKind::Linear {
                    device_offset: w.device_offset,
                },
                "zero" => SegmentKind::Zero,
                _ => return Err(bad("segment type")),
            };
            out.push(Segment {
                start: w.start,
                len: w.len,
                kind,
            });
        }
        SegmentTable::new(out).map_err(ActivateError::Volume)
    }
}

/// An answer of the serving process.
pub type Reply = Result<String, ActivateError>;

/// Write the launch message: parameters, then the key.
pub fn write_launch(w: &mut impl Write, config: &MappingConfig, key: &[u8]) -> io::Result<()> {
    let json = serde_json::to_vec(config).map_err(io::Error::other)?;
    w.write_all(&(json.len() as u32).to_le_bytes())?;
    w.write_all(&json)?;
    w.write_all(&(key.len() as u32).to_le_bytes())?;
    w.write_all(key)?;
    w.flush()
}

/// Write the launch message of a mapping with its own segment table (`config.segments`
/// set): parameters, the first key of `table` (the launch's key; empty when no segment is
/// encrypted, as at the start of an encryption), then the table as a `reload` carries it (a
/// `u32` length and the JSON segments, a `u32` key count and the keys).
pub fn write_launch_table(
    w: &mut impl Write,
    config: &MappingConfig,
    table: &Reload,
) -> io::Result<()> {
    let first: &[u8] = table.keys.first().map_or(&[], |k| k.as_slice());
    let json = serde_json::to_vec(config).map_err(io::Error::other)?;
    w.write_all(&(json.len() as u32).to_le_bytes())?;
    w.write_all(&json)?;
    w.write_all(&(first.len() as u32).to_le_bytes())?;
    w.write_all(first)?;
    let segs = serde_json::to_vec(&table.segments).map_err(io::Error::other)?;
    w.write_all(&(segs.len() as u32).to_le_bytes())?;
    w.write_all(&segs)?;
    w.write_all(&(table.keys.len() as u32).to_le_bytes())?;
    for k in &table.keys {
        w.write_all(&(k.len() as u32).to_le_bytes())?;
        w.write_all(k)?;
    }
    w.flush()
}

/// What a launch message carries: parameters, key, and the segment table of a mapping
/// with `segments` set.
pub type Launch = (MappingConfig, Zeroizing<Vec<u8>>, Option<Reload>);

/// Read the launch message (bounded sizes; the keys land in zeroizing memory).
pub fn read_launch(r: &mut impl Read) -> io::Result<Launch> {
    let mut n = [0u8; 4];
    r.read_exact(&mut n)?;
    let len = u32::from_le_bytes(n) as usize;
    if len > MAX_CONFIG {
        return Err(io::Error::other("mapping parameters too long"));
    }
    let mut json = vec![0u8; len];
    r.read_exact(&mut json)?;
    let config: MappingConfig = serde_json::from_slice(&json).map_err(io::Error::other)?;
    r.read_exact(&mut n)?;
    let klen = u32::from_le_bytes(n) as usize;
    // A segment table may have no encrypted segment (an encryption that has not started).
    if (klen == 0 && !config.segments) || klen > MAX_KEY {
        return Err(io::Error::other("bad key length"));
    }
    let mut key = Zeroizing::new(vec![0u8; klen]);
    r.read_exact(&mut key)?;
    if !config.segments {
        return Ok((config, key, None));
    }
    r.read_exact(&mut n)?;
    let slen = u32::from_le_bytes(n) as usize;
    if slen == 0 || slen > MAX_CONFIG {
        return Err(io::Error::other("bad segment table length"));
    }
    let mut json = vec![0u8; slen];
    r.read_exact(&mut json)?;
    let segments: Vec<WireSegment> = serde_json::from_slice(&json).map_err(io::Error::other)?;
    if segments.is_empty() || segments.len() > MAX_RELOAD_SEGMENTS {
        return Err(io::Error::other("bad segment count"));
    }
    r.read_exact(&mut n)?;
    let count = u32::from_le_bytes(n) as usize;
    if count > MAX_RELOAD_KEYS {
        return Err(io::Error::other("bad key count"));
    }
    let mut keys = Vec::with_capacity(count);
    for _ in 0..count {
        r.read_exact(&mut n)?;
        let klen = u32::from_le_bytes(n) as usize;
        if klen == 0 || klen > MAX_KEY {
            return Err(io::Error::other("bad key length"));
        }
        let mut k = Zeroizing::new(vec![0u8; klen]);
        r.read_exact(&mut k)?;
        keys.push(k);
    }
    Ok((config, key, Some(Reload { segments, keys })))
}

/// Where an online re-encryption is, as its process tells the serving process (for the
/// mapping's log).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProgressPhase {
    /// The run starts (or resumes) with `done` bytes already re-encrypted.
    Start,
    /// A hot zone is done.
    Step,
    /// The whole device is re-encrypted.
    Finished,
    /// The run stopped at a safe point (SIGINT): `--resume-only` goes on.
    Stopped,
    /// The run failed.
    Failed,
}

impl ProgressPhase {
    const NAMES: [(ProgressPhase, &'static str); 5] = [
        (ProgressPhase::Start, "start"),
        (ProgressPhase::Step, "step"),
        (ProgressPhase::Finished, "finished"),
        (ProgressPhase::Stopped, "stopped"),
        (ProgressPhase::Failed, "failed"),
    ];

    fn name(self) -> &'static str {
        Self::NAMES
            .iter()
            .find(|(p, _)| *p == self)
            .map_or("step", |(_, n)| n)
    }

    fn parse(s: &str) -> Option<Self> {
        Self::NAMES.iter().find(|(_, n)| *n == s).map(|(p, _)| *p)
    }
}

/// A `progress` request: `done` of `total` bytes re-encrypted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Progress {
    /// What happened.
    pub phase: ProgressPhase,
    /// Bytes re-encrypted so far.
    pub done: u64,
    /// Bytes to re-encrypt in all.
    pub total: u64,
}

/// A control request as the server reads it.
pub enum Command {
    /// Report `{"suspended": bool}`.
    Status,
    /// Flush, detach, unmount and exit.
    Close,
    /// luksSuspend.
    Suspend,
    /// luksResume with this key.
    Resume(Zeroizing<Vec<u8>>),
    /// Change the size to this many bytes (`None`: all of the device after the offset).
    Resize(Option<u64>),
    /// Hold all I/O (an online re-encryption step is about to move the hot zone).
    Hold,
    /// Let held I/O proceed unchanged.
    Release,
    /// Install this segment table (held I/O then proceeds with it).
    Reload(Reload),
    /// Where an online re-encryption is (logged by the serving process).
    Progress(Progress),
}

/// The request line (and payload) of a command.
pub fn command_bytes(cmd: &Command) -> Zeroizing<Vec<u8>> {
    let mut out = Zeroizing::new(Vec::new());
    match cmd {
        Command::Status => out.extend_from_slice(b"status\n"),
        Command::Close => out.extend_from_slice(b"close\n"),
        Command::Suspend => out.extend_from_slice(b"suspend\n"),
        Command::Resume(key) => {
            out.extend_from_slice(format!("resume {}\n", key.len()).as_bytes());
            out.extend_from_slice(key);
        }
        Command::Resize(None) => out.extend_from_slice(b"resize\n"),
        Command::Resize(Some(n)) => out.extend_from_slice(format!("resize {n}\n").as_bytes()),
        Command::Hold => out.extend_from_slice(b"hold\n"),
        Command::Progress(p) => out.extend_from_slice(
            format!("progress {} {} {}\n", p.phase.name(), p.done, p.total).as_bytes(),
        ),
        Command::Release => out.extend_from_slice(b"release\n"),
        Command::Reload(r) => {
            let json = serde_json::to_vec(&r.segments).unwrap_or_default();
            out.extend_from_slice(format!("reload {} {}\n", json.len(), r.keys.len()).as_bytes());
            out.extend_from_slice(&json);
            for k in &r.keys {
                out.extend_from_slice(&(k.len() as u32).to_le_bytes());
                out.extend_from_slice(k);
            }
        }
    }
    out
}

/// Read one request from a control connection.
pub fn read_command(r: &mut impl BufRead) -> io::Result<Command> {
    let mut line = String::new();
    r.read_line(&mut line)?;
    let line = line.trim_end_matches('\n');
    let bad = || io::Error::new(io::ErrorKind::InvalidData, "bad request");
    match line.split_once(' ') {
        None if line == "status" => Ok(Command::Status),
        None if line == "close" => Ok(Command::Close),
        None if line == "suspend" => Ok(Command::Suspend),
        None if line == "resize" => Ok(Command::Resize(None)),
        None if line == "hold" => Ok(Command::Hold),
        None if line == "release" => Ok(Command::Release),
        Some(("resize", n)) => Ok(Command::Resize(Some(n.parse().map_err(|_| bad())?))),
        Some(("progress", rest)) => {
            let mut w = rest.split(' ');
            let phase = w.next().and_then(ProgressPhase::parse).ok_or_else(bad)?;
            let done: u64 = w.next().and_then(|x| x.parse().ok()).ok_or_else(bad)?;
            let total: u64 = w.next().and_then(|x| x.parse().ok()).ok_or_else(bad)?;
            if w.next().is_some() {
                return Err(bad());
            }
            Ok(Command::Progress(Progress { phase, done, total }))
        }
        Some(("reload", rest)) => {
            let (j, k) = rest.split_once(' ').ok_or_else(bad)?;
            let j: usize = j.parse().map_err(|_| bad())?;
            let k: usize = k.parse().map_err(|_| bad())?;
            if j == 0 || j > MAX_CONFIG || k > MAX_RELOAD_KEYS {
                return Err(bad());
            }
            let mut json = vec![0u8; j];
            r.read_exact(&mut json)?;
            let segments: Vec<WireSegment> = serde_json::from_slice(&json).map_err(|_| bad())?;
            if segments.is_empty() || segments.len() > MAX_RELOAD_SEGMENTS {
                return Err(bad());
            }
            let mut keys = Vec::with_capacity(k);
            for _ in 0..k {
                let mut n = [0u8; 4];
                r.read_exact(&mut n)?;
                let n = u32::from_le_bytes(n) as usize;
                if n == 0 || n > MAX_KEY {
                    return Err(bad());
                }
                let mut key = Zeroizing::new(vec![0u8; n]);
                r.read_exact(&mut key)?;
                keys.push(key);
            }
            Ok(Command::Reload(Reload { segments, keys }))
        }
        Some(("resume", n)) => {
            let n: usize = n.parse().map_err(|_| bad())?;
            if n == 0 || n > MAX_KEY {
                return Err(bad());
            }
            let mut key = Zeroizing::new(vec![0u8; n]);
            r.read_exact(&mut key)?;
            Ok(Command::Resume(key))
        }
        _ => Err(bad()),
    }
}

/// Format a reply line.
pub fn reply_line(r: &Reply) -> String {
    match r {
        Ok(t) if t.is_empty() => "ok\n".into(),
        Ok(t) => format!("ok {}\n", t.replace('\n', " ")),
        Err(e) => {
            let (kind, detail) = encode_error(e);
            format!("err {kind} {}\n", detail.replace('\n', " "))
        }
    }
}

/// Parse a reply line.
pub fn parse_reply(line: &str) -> Reply {
    if let Some(rest) = line.strip_prefix("ok") {
        return Ok(rest.trim_start().to_string());
    }
    if let Some(rest) = line.strip_prefix("err ") {
        let (kind, detail) = rest.split_once(' ').unwrap_or((rest, ""));
        return Err(decode_error(kind, detail));
    }
    Err(ActivateError::Server(format!(
        "unexpected answer from the serving process: {line:?}"
    )))
}

/// The names of the I/O operations on the wire.
const IO_OPS: [(IoOp, &str); 11] = [
    (IoOp::Open, "open"),
    (IoOp::Create, "create"),
    (IoOp::Read, "read"),
    (IoOp::Write, "write"),
    (IoOp::Resize, "resize"),
    (IoOp::Lock, "lock"),
    (IoOp::Sync, "sync"),
    (IoOp::Discard, "discard"),
    (IoOp::ReadSize, "read-size"),
    (IoOp::CreateBackup, "create-backup"),
    (IoOp::WriteBackup, "write-backup"),
];

/// A volume error as (KIND, DETAIL). The serving process only opens the data device
/// (`DataVolume::open`), so the errors that can happen there cross typed: a missing device,
/// an OS error with its errno, a layout the device cannot hold, an unusable cipher or key.
/// Any other volume error (none is reachable there) crosses as [`ActivateError::Server`]
/// with its description.
fn encode_volume(v: &VolumeError) -> (String, String) {
    let s = |k: &str, d: &str| (format!("volume:{k}"), d.to_string());
    match v {
        VolumeError::NotFound { path } => s("not-found", path),
        VolumeError::Io { op, path, source } => {
            if let Some((_, name)) = IO_OPS.iter().find(|(o, _)| o == op) {
                let errno = source.raw_os_error().unwrap_or(0);
                return s(&format!("io:{name}:{errno}"), path);
            }
            ("server".into(), v.to_string())
        }
        VolumeError::Param(ParamError::SectorSize) => s("sector-size", ""),
        VolumeError::Data(DataError::NoData) => s("no-data", ""),
        VolumeError::Data(DataError::OffsetAlignment) => s("offset-alignment", ""),
        VolumeError::Data(DataError::SizeAlignment) => s("size-alignment", ""),
        VolumeError::Data(DataError::IvOffsetAlignment {
            iv_offset,
            sector_size,
        }) => s(
            &format!("iv-offset-alignment:{iv_offset}:{sector_size}"),
            "",
        ),
        VolumeError::Data(DataError::TooSmall {
            needed,
            offset,
            available,
        }) => s(&format!("too-small:{needed}:{offset}:{available}"), ""),
        VolumeError::Crypto(c) => match c {
            CryptoError::Unsupported(m) => s("crypto:unsupported", m),
            CryptoError::InvalidKey(m) => s("crypto:invalid-key", m),
            CryptoError::InvalidInput(m) => s("crypto:invalid-input", m),
            CryptoError::Limit(m) => s("crypto:limit", m),
            CryptoError::Random => s("crypto:random", ""),
        },
        other => ("server".into(), other.to_string()),
    }
}

/// The inverse of [`encode_volume`] (`kind` without its `volume:` prefix).
fn decode_volume(kind: &str, detail: String) -> Option<VolumeError> {
    let mut f = kind.split(':');
    let num = |x: Option<&str>| x.and_then(|n| n.parse::<u64>().ok());
    Some(match f.next()? {
        "not-found" => VolumeError::NotFound { path: detail },
        "io" => {
            let name = f.next()?;
            let op = IO_OPS.iter().find(|(_, n)| *n == name)?.0;
            let errno = f.next()?.parse().ok()?;
            VolumeError::Io {
                op,
                path: detail,
                source: io::Error::from_raw_os_error(errno),
            }
        }
        "sector-size" => ParamError::SectorSize.into(),
        "no-data" => DataError::NoData.into(),
        "offset-alignment" => DataError::OffsetAlignment.into(),
        "size-alignment" => DataError::SizeAlignment.into(),
        "iv-offset-alignment" => DataError::IvOffsetAlignment {
            iv_offset: num(f.next())?,
            sector_size: u32::try_from(num(f.next())?).ok()?,
        }
        .into(),
        "too-small" => DataError::TooSmall {
            needed: num(f.next())?,
            offset: num(f.next())?,
            available: num(f.next())?,
        }
        .into(),
        "crypto" => VolumeError::Crypto(match f.next()? {
            "unsupported" => CryptoError::Unsupported(detail),
            "invalid-key" => CryptoError::InvalidKey(detail),
            "invalid-input" => CryptoError::InvalidInput(detail),
            "limit" => CryptoError::Limit(detail),
            "random" => CryptoError::Random,
            _ => return None,
        }),
        _ => return None,
    })
}

fn encode_error(e: &ActivateError) -> (String, String) {
    let s = |k: &str, d: &str| (k.to_string(), d.to_string());
    match e {
        ActivateError::InvalidName { name } => s("invalid-name", name),
        ActivateError::NameExists { name } => s("name-exists", name),
        ActivateError::NotActive { name } => s("not-active", name),
        ActivateError::DeviceInUse { device } => s("device-in-use", device),
        ActivateError::DeviceMissing { device } => s("device-missing", device),
        ActivateError::MappingBusy { name } => s("mapping-busy", name),
        ActivateError::Suspended { name } => s("suspended", name),
        ActivateError::NotSuspended { name } => s("not-suspended", name),
        ActivateError::AlreadySuspended { name } => s("already-suspended", name),
        ActivateError::InvalidRequest(m) => s("invalid", m),
        ActivateError::Unsupported(m) => s("unsupported", m),
        ActivateError::NoDeviceMapper => s("no-device-mapper", ""),
        ActivateError::Volume(v) => encode_volume(v),
        ActivateError::Io { context, source } => (
            format!(
                "io:{}",
                source
                    .raw_os_error()
                    .unwrap_or_else(|| errno_of(source.kind()))
            ),
            context.clone(),
        ),
        ActivateError::Kernel(k) => s("server", &format!("device-mapper: {k}")),
        ActivateError::Server(m) => s("server", m),
        ActivateError::NeedsRoot { what } => s("needs-root", what),
        ActivateError::UnsafeStateDir { path } => s("unsafe-state-dir", path),
    }
}

/// The errno of an I/O error made without one (a message wrapped around an OS error keeps
/// only its kind): the wire carries errnos, and 0 would read "Success".
fn errno_of(kind: io::ErrorKind) -> i32 {
    use io::ErrorKind as K;
    match kind {
        K::PermissionDenied => libc::EACCES,
        K::NotFound => libc::ENOENT,
        K::AlreadyExists => libc::EEXIST,
        K::AddrInUse => libc::EADDRINUSE,
        K::AddrNotAvailable => libc::EADDRNOTAVAIL,
        K::InvalidInput => libc::EINVAL,
        K::Unsupported => libc::EOPNOTSUPP,
        _ => libc::EIO,
    }
}

fn decode_error(kind: &str, detail: &str) -> ActivateError {
    let d = detail.to_string();
    match kind {
        "invalid-name" => ActivateError::InvalidName { name: d },
        "name-exists" => ActivateError::NameExists { name: d },
        "not-active" => ActivateError::NotActive { name: d },
        "device-in-use" => ActivateError::DeviceInUse { device: d },
        "device-missing" => ActivateError::DeviceMissing { device: d },
        "mapping-busy" => ActivateError::MappingBusy { name: d },
        "suspended" => ActivateError::Suspended { name: d },
        "not-suspended" => ActivateError::NotSuspended { name: d },
        "already-suspended" => ActivateError::AlreadySuspended { name: d },
        "invalid" => ActivateError::InvalidRequest(d),
        "unsupported" => ActivateError::Unsupported(d),
        "no-device-mapper" => ActivateError::NoDeviceMapper,
        "needs-root" => ActivateError::NeedsRoot { what: d },
        "unsafe-state-dir" => ActivateError::UnsafeStateDir { path: d },
        k => {
            if let Some(v) = k.strip_prefix("volume:") {
                return match decode_volume(v, d.clone()) {
                    Some(v) => ActivateError::Volume(v),
                    None => ActivateError::Server(d),
                };
            }
            if let Some(errno) = k.strip_prefix("io:") {
                let errno = errno.parse().unwrap_or(0);
                return ActivateError::io(d, io::Error::from_raw_os_error(errno));
            }
            ActivateError::Server(d)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(e: ActivateError) -> ActivateError {
        let line = reply_line(&Err(e));
        parse_reply(line.trim_end_matches('\n')).unwrap_err()
    }

    #[test]
    fn errors_cross_the_wire_typed() {
        assert!(matches!(
            round_trip(ActivateError::DeviceInUse { device: "/dev/vda".into() }),
            ActivateError::DeviceInUse { device } if device == "/dev/vda"
        ));
        assert!(matches!(
            round_trip(ActivateError::MappingBusy { name: "x".into() }),
            ActivateError::MappingBusy { name } if name == "x"
        ));
        let io = round_trip(ActivateError::io(
            "Cannot mount",
            io::Error::from_raw_os_error(libc::ENODEV),
        ));
        assert!(matches!(&io, ActivateError::Io { context, source }
            if context == "Cannot mount" && source.raw_os_error() == Some(libc::ENODEV)));
        // An OS error wrapped in a message keeps its kind only: not "Success" at the other end.
        let wrapped = round_trip(ActivateError::io(
            "Cannot listen on unix:/run/x.sock",
            io::Error::new(io::ErrorKind::PermissionDenied, "cannot listen"),
        ));
        assert!(matches!(&wrapped, ActivateError::Io { source, .. }
            if source.raw_os_error() == Some(libc::EACCES)));
        let v = round_trip(ActivateError::Volume(VolumeError::NotFound {
            path: "/dev/vdb x".into(),
        }));
        assert!(
            matches!(&v, ActivateError::Volume(VolumeError::NotFound { path })
            if path == "/dev/vdb x")
        );
        let v = round_trip(ActivateError::Volume(VolumeError::io(
            IoOp::Read,
            "/img",
            io::Error::from_raw_os_error(libc::EIO),
        )));
        assert!(
            matches!(&v, ActivateError::Volume(VolumeError::Io { op: IoOp::Read, path, source })
            if path == "/img" && source.raw_os_error() == Some(libc::EIO))
        );
        let v = round_trip(ActivateError::Volume(
            DataError::TooSmall {
                needed: 4096,
                offset: 512,
                available: 1024,
            }
            .into(),
        ));
        assert!(matches!(
            &v,
            ActivateError::Volume(VolumeError::Data(DataError::TooSmall {
                needed: 4096,
                offset: 512,
                available: 1024
            }))
        ));
        let v = round_trip(ActivateError::Volume(VolumeError::Crypto(
            CryptoError::Unsupported("cipher foo".into()),
        )));
        assert!(
            matches!(&v, ActivateError::Volume(VolumeError::Crypto(CryptoError::Unsupported(m)))
            if m == "cipher foo")
        );
        assert_eq!(parse_reply("ok {\"a\":1}").unwrap(), "{\"a\":1}");
        assert!(matches!(parse_reply("what"), Err(ActivateError::Server(_))));
    }

    #[test]
    fn launch_message_round_trips_and_is_bounded() {
        let config: MappingConfig = serde_json::from_str(
            r#"{"name":"n","kind":"PLAIN","uuid":null,"device":"/d","header":null,
               "layout":{"cipher":"aes-xts-plain64","offset":0,"size":null,"sector_size":512,
               "iv_offset":0,"iv_large_sectors":false},"key_bits":512,"read_only":false,
               "allow_discards":false,"use_loop":true,"nbd":null}"#,
        )
        .unwrap();
        let mut buf = Vec::new();
        write_launch(&mut buf, &config, &[7u8; 64]).unwrap();
        let (c, k, _) = read_launch(&mut buf.as_slice()).unwrap();
        assert_eq!(c, config);
        assert_eq!(&k[..], &[7u8; 64]);
        let mut huge = Vec::new();
        huge.extend_from_slice(&((MAX_CONFIG as u32) + 1).to_le_bytes());
        assert!(read_launch(&mut huge.as_slice()).is_err());
    }

    #[test]
    fn reload_and_resize_round_trip_and_are_bounded() {
        use lukskit_volume::data::DataLayout;
        let layout = DataLayout {
            cipher: "aes-xts-plain64".into(),
            offset: 1 << 20,
            size: None,
            sector_size: 4096,
            iv_offset: 0,
            iv_large_sectors: false,
        };
        let table = SegmentTable::from_layout(&layout, &[5u8; 64], 3 << 20).unwrap();
        let bytes = command_bytes(&Command::Reload(Reload::from_table(&table)));
        let mut r = std::io::BufReader::new(&bytes[..]);
        let Command::Reload(back) = read_command(&mut r).unwrap() else {
            panic!("not a reload")
        };
        assert_eq!(back.keys.len(), 1);
        assert_eq!(&back.keys[0][..], &[5u8; 64]);
        let t = back.to_table().unwrap();
        assert_eq!(t.size(), 2 << 20);
        assert_eq!(t.block_size(), 4096);
        // A key index that does not exist, too many keys, an oversized key: refused.
        let mut bad = Reload::from_table(&table);
        bad.segments[0].key = Some(3);
        assert!(bad.to_table().is_err());
        let mut r = std::io::BufReader::new(&b"reload 10 3\n"[..]);
        assert!(read_command(&mut r).is_err());
        let json = serde_json::to_vec(&Reload::from_table(&table).segments).unwrap();
        let mut msg = format!("reload {} 1\n", json.len()).into_bytes();
        msg.extend_from_slice(&json);
        let mut ok = msg.clone();
        ok.extend_from_slice(&64u32.to_le_bytes());
        ok.extend_from_slice(&[5u8; 64]);
        let mut r = std::io::BufReader::new(&ok[..]);
        assert!(read_command(&mut r).is_ok());
        msg.extend_from_slice(&((MAX_KEY as u32) + 1).to_le_bytes());
        let mut r = std::io::BufReader::new(&msg[..]);
        assert!(read_command(&mut r).is_err());
        for (cmd, want) in [
            (Command::Resize(None), None),
            (Command::Resize(Some(4096)), Some(4096)),
        ] {
            let bytes = command_bytes(&cmd);
            let mut r = std::io::BufReader::new(&bytes[..]);
            assert!(matches!(read_command(&mut r).unwrap(), Command::Resize(n) if n == want));
        }
        let mut r = std::io::BufReader::new(&b"resize -1\n"[..]);
        assert!(read_command(&mut r).is_err());
    }

    #[test]
    fn commands_round_trip() {
        let bytes = command_bytes(&Command::Resume(Zeroizing::new(vec![1, 2, 3])));
        let mut r = std::io::BufReader::new(&bytes[..]);
        assert!(matches!(read_command(&mut r).unwrap(), Command::Resume(k) if k[..] == [1, 2, 3]));
        let bytes = command_bytes(&Command::Close);
        let mut r = std::io::BufReader::new(&bytes[..]);
        assert!(matches!(read_command(&mut r).unwrap(), Command::Close));
        for phase in ProgressPhase::NAMES.map(|(p, _)| p) {
            let p = Progress {
                phase,
                done: 7 << 20,
                total: 48 << 20,
            };
            let bytes = command_bytes(&Command::Progress(p));
            let mut r = std::io::BufReader::new(&bytes[..]);
            assert!(matches!(read_command(&mut r).unwrap(), Command::Progress(q) if q == p));
        }
        for bad in [
            &b"progress\n"[..],
            b"progress start 1\n",
            b"progress begun 1 2\n",
            b"progress step 1 2 3\n",
            b"progress step -1 2\n",
        ] {
            let mut r = std::io::BufReader::new(bad);
            assert!(
                read_command(&mut r).is_err(),
                "{:?}",
                String::from_utf8_lossy(bad)
            );
        }
    }
}
