//! Listening sockets and connections, Unix or TCP, behind one type each.

use super::NbdAddress;
use std::io::{self, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// A Unix socket path this server created, identified by device and inode so that it is
/// only removed while it is still ours.
#[derive(Debug, Clone)]
pub(crate) struct OwnedSocketPath {
    path: PathBuf,
    dev: u64,
    ino: u64,
}

impl OwnedSocketPath {
    /// Remove the socket file if it is still the one this server bound.
    pub(crate) fn remove(&self) {
        if let Ok(m) = std::fs::symlink_metadata(&self.path) {
            if m.dev() == self.dev && m.ino() == self.ino {
                let _ = std::fs::remove_file(&self.path);
            }
        }
    }
}

/// A listening socket.
pub(crate) enum Listener {
    Unix(UnixListener, OwnedSocketPath),
    Tcp(TcpListener),
}

impl Listener {
    /// Bind `addr` (see [`super::NbdServer::bind`] for the rules about existing files).
    pub(crate) fn bind(addr: &NbdAddress) -> io::Result<Listener> {
        let listener = match addr {
            NbdAddress::Tcp(hp) => Listener::Tcp(TcpListener::bind(hp.as_str()).map_err(|e| {
                io::Error::new(e.kind(), format!("cannot listen on tcp:{hp}: {e}"))
            })?),
            NbdAddress::Unix(path) => {
                clear_stale_socket(path)?;
                let l = bind_private_unix(path).map_err(|e| {
                    io::Error::new(
                        e.kind(),
                        format!("cannot listen on unix:{}: {e}", path.display()),
                    )
                })?;
                let m = std::fs::symlink_metadata(path)?;
                Listener::Unix(
                    l,
                    OwnedSocketPath {
                        path: path.clone(),
                        dev: m.dev(),
                        ino: m.ino(),
                    },
                )
            }
        };
        listener.set_nonblocking()?;
        Ok(listener)
    }

    fn set_nonblocking(&self) -> io::Result<()> {
        match self {
            Listener::Unix(l, _) => l.set_nonblocking(true),
            Listener::Tcp(l) => l.set_nonblocking(true),
        }
    }

    /// The address listened on, in [`NbdAddress`] form.
    pub(crate) fn address(&self) -> String {
        match self {
            Listener::Unix(_, p) => format!("unix:{}", p.path.display()),
            Listener::Tcp(l) => match l.local_addr() {
                Ok(a) => format!("tcp:{a}"),
                Err(_) => "tcp:?".to_string(),
            },
        }
    }

    /// The Unix socket path, if any.
    pub(crate) fn socket_path(&self) -> Option<&OwnedSocketPath> {
        match self {
            Listener::Unix(_, p) => Some(p),
            Listener::Tcp(_) => None,
        }
    }

    /// Accept one connection (`WouldBlock` when none is pending). The connection is
    /// blocking.
    pub(crate) fn accept(&self) -> io::Result<Stream> {
        let s = match self {
            Listener::Unix(l, _) => Stream::Unix(l.accept()?.0),
            Listener::Tcp(l) => {
                let s = l.accept()?.0;
                s.set_nodelay(true)?;
                Stream::Tcp(s)
            }
        };
        s.set_nonblocking(false)?;
        Ok(s)
    }
}

impl AsFd for Listener {
    fn as_fd(&self) -> BorrowedFd<'_> {
        match self {
            Listener::Unix(l, _) => l.as_fd(),
            Listener::Tcp(l) => l.as_fd(),
        }
    }
}

/// Mode of the Unix socket file: the export is the plaintext of an encrypted volume, so
/// only the owner may connect.
const SOCKET_MODE: libc::mode_t = 0o600;

/// Create a listening Unix socket at `path` whose file has mode [`SOCKET_MODE`] (or less,
/// under the umask) from the instant it exists.
///
/// `bind` creates the socket file with the mode of the socket's own inode minus the umask
/// (Linux's `unix_bind`: `SOCK_INODE(sock)->i_mode & ~current_umask()`), and a new socket's
/// inode has mode 0777. Binding first and chmod'ing afterwards leaves a window in which,
/// under a permissive umask, any user can connect and keep the connection; setting the
/// umask around `bind` changes it for every thread of the process. Instead the socket's
/// inode gets its final mode with `fchmod` before `bind`, so the file is created with it:
/// there is no window and no process-wide state.
fn bind_private_unix(path: &Path) -> io::Result<UnixListener> {
    // SAFETY: sockaddr_un is plain old data; all zeroes is a valid (empty) value.
    let mut addr: libc::sockaddr_un = unsafe { std::mem::zeroed() };
    let bytes = path.as_os_str().as_bytes();
    if bytes.contains(&0) || bytes.len() >= addr.sun_path.len() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "socket path longer than {} bytes or containing NUL",
                addr.sun_path.len() - 1
            ),
        ));
    }
    addr.sun_family = libc::AF_UNIX as libc::sa_family_t;
    for (d, &b) in addr.sun_path.iter_mut().zip(bytes) {
        *d = b as libc::c_char;
    }
    let len = std::mem::offset_of!(libc::sockaddr_un, sun_path) + bytes.len() + 1;
    // SAFETY: socket() with constant arguments has no memory preconditions.
    let raw = unsafe { libc::socket(libc::AF_UNIX, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0) };
    if raw < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `raw` is a descriptor socket() just returned; nothing else owns it.
    let fd = unsafe { OwnedFd::from_raw_fd(raw) };
    // SAFETY: fchmod on a descriptor we own.
    if unsafe { libc::fchmod(fd.as_raw_fd(), SOCKET_MODE) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `addr` is an initialised sockaddr_un that outlives the call, and `len` (the
    // path, its NUL and the fields before it) is within its size.
    let bound = unsafe {
        libc::bind(
            fd.as_raw_fd(),
            std::ptr::addr_of!(addr).cast::<libc::sockaddr>(),
            len as libc::socklen_t,
        )
    };
    if bound != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: listen on a bound socket we own.
    if unsafe { libc::listen(fd.as_raw_fd(), libc::SOMAXCONN) } != 0 {
        let e = io::Error::last_os_error();
        let _ = std::fs::remove_file(path);
        return Err(e);
    }
    Ok(UnixListener::from(fd))
}

/// Remove a stale socket at `path` (one nobody listens on); refuse to touch anything
/// else.
fn clear_stale_socket(path: &Path) -> io::Result<()> {
    let m = match std::fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e),
    };
    if !m.file_type().is_socket() {
        return Err(io::Error::new(
            io::ErrorKind::AlreadyExists,
            format!(
                "refusing to replace {}: it exists and is not a socket",
                path.display()
            ),
        ));
    }
    match UnixStream::connect(path) {
        Ok(_) => Err(io::Error::new(
            io::ErrorKind::AddrInUse,
            format!("{}: another server is listening there", path.display()),
        )),
        Err(_) => match std::fs::remove_file(path) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
            _ => Ok(()),
        },
    }
}

/// One client connection.
pub(crate) enum Stream {
    Unix(UnixStream),
    Tcp(TcpStream),
}

impl Stream {
    pub(crate) fn try_clone(&self) -> io::Result<Stream> {
        Ok(match self {
            Stream::Unix(s) => Stream::Unix(s.try_clone()?),
            Stream::Tcp(s) => Stream::Tcp(s.try_clone()?),
        })
    }

    pub(crate) fn shutdown(&self, how: Shutdown) {
        let _ = match self {
            Stream::Unix(s) => s.shutdown(how),
            Stream::Tcp(s) => s.shutdown(how),
        };
    }

    pub(crate) fn set_read_timeout(&self, t: Option<Duration>) -> io::Result<()> {
        match self {
            Stream::Unix(s) => s.set_read_timeout(t),
            Stream::Tcp(s) => s.set_read_timeout(t),
        }
    }

    pub(crate) fn set_write_timeout(&self, t: Option<Duration>) -> io::Result<()> {
        match self {
            Stream::Unix(s) => s.set_write_timeout(t),
            Stream::Tcp(s) => s.set_write_timeout(t),
        }
    }

    fn set_nonblocking(&self, on: bool) -> io::Result<()> {
        match self {
            Stream::Unix(s) => s.set_nonblocking(on),
            Stream::Tcp(s) => s.set_nonblocking(on),
        }
    }
}

impl Read for &Stream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Stream::Unix(s) => (&*s).read(buf),
            Stream::Tcp(s) => (&*s).read(buf),
        }
    }
}

impl Write for &Stream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Stream::Unix(s) => (&*s).write(buf),
            Stream::Tcp(s) => (&*s).write(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Wait until `a` or `b` is readable (or has hung up), or `timeout` (if any) has passed.
/// Returns `(a_ready, b_ready)`.
pub(crate) fn wait_readable(
    a: BorrowedFd<'_>,
    b: BorrowedFd<'_>,
    timeout: Option<Duration>,
) -> io::Result<(bool, bool)> {
    // Rounded up, so that a deadline a fraction of a millisecond away is not spun on.
    let ms = timeout.map_or(-1, |t| {
        i32::try_from(t.as_nanos().div_ceil(1_000_000)).unwrap_or(i32::MAX)
    });
    let mut fds = [
        libc::pollfd {
            fd: a.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        },
        libc::pollfd {
            fd: b.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        },
    ];
    loop {
        // SAFETY: `fds` is a valid array of two initialised pollfd structures that lives
        // across the call, and both descriptors are borrowed (open) for its duration.
        let r = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, ms) };
        if r >= 0 {
            return Ok((fds[0].revents != 0, fds[1].revents != 0));
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}
