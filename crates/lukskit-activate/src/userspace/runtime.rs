//! Open mappings on this machine: their state under `/run/lukskit/NAME/` and the control
//! socket their serving process listens on.
//!
//! Root's mappings live under [`RUN_DIR`]; a user who is not root has their own
//! ([`run_dir`]): `$XDG_RUNTIME_DIR/lukskit/`, or `/tmp/lukskit-UID/` without
//! `XDG_RUNTIME_DIR` — a directory of theirs (mode 0700, not a symbolic link), checked each
//! time it is used.
//!
//! Layout of `/run/lukskit/NAME/` (directory mode 0700, root):
//!
//! * `state.json` — what `status` prints: the mapping's parameters and how it is exposed
//!   (never a secret);
//! * `control` — a Unix stream socket (mode 0600) speaking [`super::wire`]'s control
//!   protocol;
//! * `device` — the FUSE mount point: a regular file over which the plaintext is mounted;
//! * `log` — the serving process's log where there is no system log (`/dev/log`; see
//!   [`super::service_log`]), removed with the mapping.
//!
//! `/dev/mapper/NAME` is a symbolic link to the loop device on top of `device`.

use super::wire::{self, Command, Reply};
use crate::error::{ActivateError, Result};
pub use crate::request::{LayoutInfo, MappingConfig};
use serde::{Deserialize, Serialize};
use std::io::{self, BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Where mappings keep their state.
pub const RUN_DIR: &str = "/run/lukskit";
/// Where the `/dev/mapper/NAME` links live.
pub const MAPPER_DIR: &str = "/dev/mapper";

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
    /// The sector engine serving it (absent in state files of older serving processes).
    #[serde(default)]
    pub engine: Option<crate::status::EngineInUse>,
}

/// Check a mapping name (a single path component, as device-mapper requires).
pub fn check_name(name: &str) -> Result<()> {
    let bad = name.is_empty()
        || name == "."
        || name == ".."
        || name.len() > 127
        || name.contains('/')
        || name.chars().any(|c| c.is_control() || c.is_whitespace());
    if bad {
        return Err(ActivateError::InvalidName {
            name: name.to_string(),
        });
    }
    Ok(())
}

/// Whether this process runs as root (effective user id 0).
pub fn is_root() -> bool {
    // SAFETY: geteuid has no arguments and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

/// Where the mappings of the user running this process keep their state: [`RUN_DIR`] for
/// root; for anyone else `$XDG_RUNTIME_DIR/lukskit` (an absolute `XDG_RUNTIME_DIR`: the
/// user's own runtime directory, mode 0700, made by the login manager), else
/// `/tmp/lukskit-UID`.
pub fn run_dir() -> PathBuf {
    if is_root() {
        return PathBuf::from(RUN_DIR);
    }
    match std::env::var_os("XDG_RUNTIME_DIR").map(PathBuf::from) {
        Some(x) if x.is_absolute() => x.join("lukskit"),
        // SAFETY: geteuid has no arguments and cannot fail.
        _ => PathBuf::from(format!("/tmp/lukskit-{}", unsafe { libc::geteuid() })),
    }
}

/// `/run/lukskit/NAME` (under [`run_dir`]).
pub fn dir(name: &str) -> PathBuf {
    run_dir().join(name)
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
pub fn read_state(name: &str) -> Result<Option<State>> {
    let p = state_path(name);
    match std::fs::read(&p) {
        Ok(b) => serde_json::from_slice(&b).map(Some).map_err(|e| {
            ActivateError::Server(format!("corrupted state file {}: {e}", p.display()))
        }),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(ActivateError::io(format!("Cannot read {}", p.display()), e)),
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

/// Send one command to the serving process of `name`. `Ok(None)` means nobody listens (the
/// server died).
pub fn request(name: &str, cmd: &Command, timeout: Option<Duration>) -> Result<Option<Reply>> {
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
            return Err(ActivateError::io(
                format!("Cannot connect to {}", p.display()),
                e,
            ))
        }
    };
    let _ = s.set_read_timeout(timeout);
    let bytes = wire::command_bytes(cmd);
    if let Err(e) = s.write_all(&bytes).and_then(|()| s.flush()) {
        if e.kind() == io::ErrorKind::BrokenPipe {
            return Ok(None);
        }
        return Err(ActivateError::io("Cannot talk to the serving process", e));
    }
    let mut reply = String::new();
    let mut r = BufReader::new(s);
    match r.read_line(&mut reply) {
        Ok(0) => return Ok(None),
        Ok(_) => {}
        Err(e) => return Err(ActivateError::io("No answer from the serving process", e)),
    }
    Ok(Some(wire::parse_reply(reply.trim_end_matches('\n'))))
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
/// loop device (refused while it is in use), the FUSE mount (detached lazily)
/// and the state directory.
pub fn cleanup_dead(name: &str, state: Option<&State>) -> Result<()> {
    let device = device_path(name);
    if let Some(st) = state {
        if let Some(l) = &st.loop_device {
            let l = Path::new(l);
            match detach_retrying(l, &device) {
                Ok(()) => {}
                Err(e) if e.raw_os_error() == Some(libc::EBUSY) => {
                    return Err(ActivateError::MappingBusy {
                        name: name.to_string(),
                    })
                }
                Err(e) => {
                    return Err(ActivateError::io(
                        format!("Cannot detach {}", l.display()),
                        e,
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

/// How long a busy loop device is tried again, as the kernel path's removal retries (and
/// libdevmapper's `dm_task_retry_remove`): a probe that opened the device just after its
/// file system was unmounted lets go within moments.
const BUSY_RETRY: std::time::Duration = std::time::Duration::from_secs(2);

/// [`lukskit_expose::loopdev::detach_stale`], tried again while the device is busy for up to
/// [`BUSY_RETRY`].
fn detach_retrying(dev: &Path, backing: &Path) -> io::Result<()> {
    let deadline = std::time::Instant::now() + BUSY_RETRY;
    loop {
        match lukskit_expose::loopdev::detach_stale(dev, backing) {
            Err(e)
                if e.raw_os_error() == Some(libc::EBUSY)
                    && std::time::Instant::now() < deadline =>
            {
                std::thread::sleep(std::time::Duration::from_millis(100));
            }
            r => return r,
        }
    }
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

/// `umount2(path, MNT_DETACH)`, ignoring "not mounted". A user who is not root has the
/// setuid `fusermount3 -u -z` (or `fusermount`) do it.
pub fn lazy_unmount(path: &Path) {
    if !is_root() {
        for tool in ["fusermount3", "fusermount"] {
            let done = std::process::Command::new(tool)
                .args(["-u", "-z", "-q"])
                .arg(path)
                .stdin(std::process::Stdio::null())
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .status();
            if done.is_ok() {
                return;
            }
        }
        return;
    }
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
    for f in ["state.json", "state.json.tmp", "control", "device", "log"] {
        let _ = std::fs::remove_file(d.join(f));
    }
    let _ = std::fs::remove_dir(&d);
}

/// Make sure a non-root user's [`run_dir`] is theirs alone: created with mode 0700 where
/// it is missing, and refused unless it is a directory (not a symbolic link) owned by the
/// user with no access for anyone else. In a shared `/tmp` another user could have made
/// `/tmp/lukskit-UID` first; the sticky bit of `/tmp` keeps others from replacing it once
/// it is the user's.
fn check_user_run_dir(base: &Path) -> Result<()> {
    use std::os::unix::fs::{DirBuilderExt, MetadataExt};
    if let Some(parent) = base.parent() {
        if !parent.is_dir() {
            return Err(ActivateError::io(
                format!("Cannot create {}", base.display()),
                io::Error::from_raw_os_error(libc::ENOENT),
            ));
        }
    }
    match std::fs::DirBuilder::new().mode(0o700).create(base) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
        Err(e) => {
            return Err(ActivateError::io(
                format!("Cannot create {}", base.display()),
                e,
            ))
        }
    }
    let m = base
        .symlink_metadata()
        .map_err(|e| ActivateError::io(format!("Cannot create {}", base.display()), e))?;
    // SAFETY: geteuid has no arguments and cannot fail.
    let uid = unsafe { libc::geteuid() };
    if !m.file_type().is_dir() || m.uid() != uid || m.mode() & 0o077 != 0 {
        return Err(ActivateError::UnsafeStateDir {
            path: base.display().to_string(),
        });
    }
    Ok(())
}

/// For a user who is not root: make sure [`run_dir`] is usable (created, theirs alone), so
/// that `open` can say so before it asks for a passphrase. Nothing to do for root.
pub fn check_run_dir() -> Result<()> {
    if is_root() {
        return Ok(());
    }
    check_user_run_dir(&run_dir())
}

/// Create the state directory of `name` ([`ActivateError::NameExists`] when it exists).
pub fn create_dir(name: &str) -> Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    let base = run_dir();
    if is_root() {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o755)
            .create(&base)
            .map_err(|e| ActivateError::io(format!("Cannot create {}", base.display()), e))?;
    } else {
        check_user_run_dir(&base)?;
    }
    match std::fs::DirBuilder::new().mode(0o700).create(dir(name)) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Err(ActivateError::NameExists {
            name: name.to_string(),
        }),
        Err(e) => Err(ActivateError::io(
            format!("Cannot create {}", dir(name).display()),
            e,
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
}
