//! Open mappings on this machine: their state under `/run/lukskit/NAME/` and the control
//! socket their serving process listens on.
//!
//! Layout of `/run/lukskit/NAME/` (directory mode 0700, root):
//!
//! * `state.json` — what `status` prints: the mapping's parameters and how it is exposed
//!   (never a secret);
//! * `control` — a Unix stream socket (mode 0600) with a line protocol: a request
//!   `status` | `close` | `suspend` | `resume LEN` (followed by LEN raw key bytes) and one
//!   reply line, `ok [TEXT]` or `err CODE MESSAGE` where CODE is cryptsetup's exit code;
//! * `device` — the FUSE mount point: a regular file over which the plaintext is mounted.
//!
//! `/dev/mapper/NAME` is a symbolic link to the loop device on top of `device`.

use lukskit_volume::data::DataLayout;
use serde::{Deserialize, Serialize};
use std::io::{self, BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Where mappings keep their state.
pub const RUN_DIR: &str = "/run/lukskit";
/// Where the `/dev/mapper/NAME` links live.
pub const MAPPER_DIR: &str = "/dev/mapper";

/// An error with cryptsetup's exit code (1 parameters, 2 permission/passphrase, 4 device,
/// 5 busy or exists) and a message for the user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuntimeError {
    /// Exit code.
    pub code: i32,
    /// Message (never holds a secret).
    pub message: String,
}

impl RuntimeError {
    /// A new error.
    pub fn new(code: i32, message: impl Into<String>) -> Self {
        RuntimeError {
            code,
            message: message.into(),
        }
    }

    /// Exit code 1 for an I/O error, with context.
    pub fn io(what: &str, e: &io::Error) -> Self {
        let code = match e.raw_os_error() {
            Some(libc::EBUSY) | Some(libc::EEXIST) => 5,
            Some(libc::ENODEV) | Some(libc::ENXIO) => 4,
            Some(libc::EPERM) | Some(libc::EACCES) => 2,
            _ => 1,
        };
        RuntimeError::new(code, format!("{what}: {e}"))
    }
}

impl std::fmt::Display for RuntimeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for RuntimeError {}

/// A [`DataLayout`] in the state file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LayoutInfo {
    /// dm-crypt cipher specification.
    pub cipher: String,
    /// Data offset in bytes.
    pub offset: u64,
    /// Fixed data size in bytes, or the rest of the device.
    pub size: Option<u64>,
    /// Encryption sector size.
    pub sector_size: u32,
    /// IV offset in 512-byte sectors.
    pub iv_offset: u64,
    /// `iv_large_sectors`.
    pub iv_large_sectors: bool,
}

impl From<&DataLayout> for LayoutInfo {
    fn from(l: &DataLayout) -> Self {
        LayoutInfo {
            cipher: l.cipher.clone(),
            offset: l.offset,
            size: l.size,
            sector_size: l.sector_size,
            iv_offset: l.iv_offset,
            iv_large_sectors: l.iv_large_sectors,
        }
    }
}

impl From<&LayoutInfo> for DataLayout {
    fn from(l: &LayoutInfo) -> Self {
        DataLayout {
            cipher: l.cipher.clone(),
            offset: l.offset,
            size: l.size,
            sector_size: l.sector_size,
            iv_offset: l.iv_offset,
            iv_large_sectors: l.iv_large_sectors,
        }
    }
}

/// What `open` asks the serving process to set up (no secret: the key travels separately).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MappingConfig {
    /// Mapping name.
    pub name: String,
    /// `LUKS1`, `LUKS2` or `PLAIN`.
    pub kind: String,
    /// LUKS UUID.
    pub uuid: Option<String>,
    /// Data device (image file or block device).
    pub device: String,
    /// Detached header, if any.
    pub header: Option<String>,
    /// Data layout.
    pub layout: LayoutInfo,
    /// Volume key size in bits.
    pub key_bits: u32,
    /// Read-only mapping.
    pub read_only: bool,
    /// `--allow-discards`.
    pub allow_discards: bool,
    /// Attach a loop device and link `/dev/mapper/NAME` to it.
    pub use_loop: bool,
    /// Serve over NBD at this address (`unix:PATH`, `tcp:HOST:PORT`) instead of FUSE.
    pub nbd: Option<String>,
    /// Most NBD connections served at once (`--nbd-connections`); `None` for the server's
    /// default ([`crate::nbd::DEFAULT_MAX_CONNECTIONS`]).
    #[serde(default)]
    pub nbd_connections: Option<usize>,
}

/// The state file of an open mapping.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct State {
    /// The parameters the mapping was opened with.
    pub config: MappingConfig,
    /// Serving process.
    pub pid: u32,
    /// Plaintext size in bytes.
    pub size: u64,
    /// The FUSE plaintext file.
    pub fuse_file: Option<String>,
    /// The loop device on top of it.
    pub loop_device: Option<String>,
    /// Whether the loop device does direct I/O.
    pub loop_direct_io: bool,
    /// The NBD address served.
    pub nbd_address: Option<String>,
    /// The `/dev/mapper/NAME` link.
    pub mapper_link: Option<String>,
}

/// Check a mapping name (a single path component, as device-mapper requires).
pub fn check_name(name: &str) -> Result<(), RuntimeError> {
    let bad = name.is_empty()
        || name == "."
        || name == ".."
        || name.len() > 127
        || name.contains('/')
        || name.chars().any(|c| c.is_control() || c.is_whitespace());
    if bad {
        return Err(RuntimeError::new(
            1,
            format!("Device name {name:?} is not valid."),
        ));
    }
    Ok(())
}

/// `/run/lukskit/NAME`.
pub fn dir(name: &str) -> PathBuf {
    Path::new(RUN_DIR).join(name)
}

/// `/run/lukskit/NAME/state.json`.
pub fn state_path(name: &str) -> PathBuf {
    dir(name).join("state.json")
}

/// `/run/lukskit/NAME/control`.
pub fn control_path(name: &str) -> PathBuf {
    dir(name).join("control")
}

/// `/run/lukskit/NAME/device`: the FUSE plaintext file.
pub fn device_path(name: &str) -> PathBuf {
    dir(name).join("device")
}

/// `/dev/mapper/NAME`.
pub fn mapper_path(name: &str) -> PathBuf {
    Path::new(MAPPER_DIR).join(name)
}

/// Read the state of `name`, `None` when no such mapping exists.
pub fn read_state(name: &str) -> Result<Option<State>, RuntimeError> {
    let p = state_path(name);
    match std::fs::read(&p) {
        Ok(b) => serde_json::from_slice(&b).map(Some).map_err(|e| {
            RuntimeError::new(1, format!("Corrupted state file {}: {e}", p.display()))
        }),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(RuntimeError::io(
            &format!("Cannot read {}", p.display()),
            &e,
        )),
    }
}

/// Write the state file atomically (write + rename).
pub fn write_state(state: &State) -> io::Result<()> {
    let p = state_path(&state.config.name);
    let tmp = p.with_extension("json.tmp");
    let mut f = std::fs::File::create(&tmp)?;
    serde_json::to_writer_pretty(&mut f, state).map_err(io::Error::other)?;
    f.write_all(b"\n")?;
    f.sync_all()?;
    std::fs::rename(&tmp, &p)
}

/// Whether a mapping directory exists for `name` (open, or left by a dead server).
pub fn exists(name: &str) -> bool {
    dir(name).exists()
}

/// The reply of the serving process.
pub type Reply = Result<String, RuntimeError>;

/// Send one request to the serving process of `name`. `Ok(None)` means nobody listens (the
/// server died).
pub fn request(
    name: &str,
    line: &str,
    payload: &[u8],
    timeout: Option<Duration>,
) -> Result<Option<Reply>, RuntimeError> {
    let p = control_path(name);
    let mut s = match UnixStream::connect(&p) {
        Ok(s) => s,
        Err(e)
            if matches!(
                e.raw_os_error(),
                Some(libc::ECONNREFUSED) | Some(libc::ENOENT)
            ) =>
        {
            return Ok(None)
        }
        Err(e) => {
            return Err(RuntimeError::io(
                &format!("Cannot connect to {}", p.display()),
                &e,
            ))
        }
    };
    let _ = s.set_read_timeout(timeout);
    let send = |s: &mut UnixStream| -> io::Result<()> {
        s.write_all(line.as_bytes())?;
        s.write_all(b"\n")?;
        s.write_all(payload)?;
        s.flush()
    };
    if let Err(e) = send(&mut s) {
        if e.kind() == io::ErrorKind::BrokenPipe {
            return Ok(None);
        }
        return Err(RuntimeError::io("Cannot talk to the serving process", &e));
    }
    let mut reply = String::new();
    let mut r = BufReader::new(s);
    match r.read_line(&mut reply) {
        Ok(0) => return Ok(None),
        Ok(_) => {}
        Err(e) => return Err(RuntimeError::io("No answer from the serving process", &e)),
    }
    Ok(Some(parse_reply(reply.trim_end_matches('\n'))))
}

fn parse_reply(line: &str) -> Reply {
    if let Some(rest) = line.strip_prefix("ok") {
        return Ok(rest.trim_start().to_string());
    }
    if let Some(rest) = line.strip_prefix("err ") {
        let (code, msg) = rest.split_once(' ').unwrap_or((rest, ""));
        let code = code.parse().unwrap_or(1);
        return Err(RuntimeError::new(code, msg));
    }
    Err(RuntimeError::new(
        1,
        format!("Unexpected answer from the serving process: {line:?}"),
    ))
}

/// Format a reply line.
pub fn reply_line(r: &Reply) -> String {
    match r {
        Ok(t) if t.is_empty() => "ok\n".into(),
        Ok(t) => format!("ok {}\n", t.replace('\n', " ")),
        Err(e) => format!("err {} {}\n", e.code, e.message.replace('\n', " ")),
    }
}

/// A request as the server reads it.
pub enum Command {
    /// Report `{"suspended": bool}`.
    Status,
    /// Flush, detach, unmount and exit.
    Close,
    /// luksSuspend.
    Suspend,
    /// luksResume with this key.
    Resume(zeroize::Zeroizing<Vec<u8>>),
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
        Some(("resume", n)) => {
            let n: usize = n.parse().map_err(|_| bad())?;
            if n == 0 || n > 1024 {
                return Err(bad());
            }
            let mut key = zeroize::Zeroizing::new(vec![0u8; n]);
            r.read_exact(&mut key)?;
            Ok(Command::Resume(key))
        }
        _ => Err(bad()),
    }
}

/// Whether a process with this pid exists.
pub fn pid_alive(pid: u32) -> bool {
    let Ok(p) = libc::pid_t::try_from(pid) else {
        return false;
    };
    // SAFETY: kill with signal 0 only checks for existence and permission.
    unsafe { libc::kill(p, 0) == 0 }
}

/// Remove everything a mapping whose server died left behind: the `/dev/mapper` link, the
/// loop device (refused with exit 5 while it is in use), the FUSE mount (detached lazily)
/// and the state directory.
pub fn cleanup_dead(name: &str, state: Option<&State>) -> Result<(), RuntimeError> {
    let device = device_path(name);
    if let Some(st) = state {
        if let Some(l) = &st.loop_device {
            let l = Path::new(l);
            match crate::loopdev::detach_stale(l, &device) {
                Ok(()) => {}
                Err(e) if e.raw_os_error() == Some(libc::EBUSY) => {
                    return Err(RuntimeError::new(
                        5,
                        format!("Device {name} is still in use."),
                    ))
                }
                Err(e) => {
                    return Err(RuntimeError::io(
                        &format!("Cannot detach {}", l.display()),
                        &e,
                    ))
                }
            }
        }
    }
    remove_mapper_link(name, state.and_then(|s| s.loop_device.as_deref()));
    lazy_unmount(&device);
    remove_dir(name);
    Ok(())
}

/// Remove `/dev/mapper/NAME` if it is our link (to `target` when known).
pub fn remove_mapper_link(name: &str, target: Option<&str>) {
    let link = mapper_path(name);
    if let Ok(t) = std::fs::read_link(&link) {
        if target.is_none_or(|want| t == Path::new(want)) {
            let _ = std::fs::remove_file(&link);
        }
    }
}

/// `umount2(path, MNT_DETACH)`, ignoring "not mounted".
pub fn lazy_unmount(path: &Path) {
    let Ok(c) = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()) else {
        return;
    };
    // Unmount every layer (a crashed server may have left more than one).
    for _ in 0..8 {
        // SAFETY: umount2 with a valid NUL-terminated path.
        if unsafe { libc::umount2(c.as_ptr(), libc::MNT_DETACH) } != 0 {
            break;
        }
    }
}

/// Remove the state directory of `name` and what is in it.
pub fn remove_dir(name: &str) {
    let d = dir(name);
    for f in ["state.json", "state.json.tmp", "control", "device"] {
        let _ = std::fs::remove_file(d.join(f));
    }
    let _ = std::fs::remove_dir(&d);
}

/// Create the state directory of `name` (exit 5 when it exists).
pub fn create_dir(name: &str) -> Result<(), RuntimeError> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o755)
        .create(RUN_DIR)
        .map_err(|e| RuntimeError::io(&format!("Cannot create {RUN_DIR}"), &e))?;
    match std::fs::DirBuilder::new().mode(0o700).create(dir(name)) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Err(RuntimeError::new(
            5,
            format!("Device {name} already exists."),
        )),
        Err(e) => Err(RuntimeError::io(
            &format!("Cannot create {}", dir(name).display()),
            &e,
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        assert!(check_name("data").is_ok());
        assert!(check_name("a/b").is_err());
        assert!(check_name("..").is_err());
        assert!(check_name("").is_err());
    }

    #[test]
    fn replies_round_trip() {
        let ok: Reply = Ok("{\"suspended\":false}".into());
        assert_eq!(parse_reply(reply_line(&ok).trim_end()), ok);
        let err: Reply = Err(RuntimeError::new(5, "Device x is still in use."));
        assert_eq!(parse_reply(reply_line(&err).trim_end()), err);
    }

    #[test]
    fn commands_parse() {
        let mut r = io::Cursor::new(b"resume 3\nabc".to_vec());
        match read_command(&mut r).unwrap() {
            Command::Resume(k) => assert_eq!(&k[..], b"abc"),
            _ => panic!("wrong command"),
        }
        let mut r = io::Cursor::new(b"close\n".to_vec());
        assert!(matches!(read_command(&mut r).unwrap(), Command::Close));
        let mut r = io::Cursor::new(b"resume 0\n".to_vec());
        assert!(read_command(&mut r).is_err());
    }
}
