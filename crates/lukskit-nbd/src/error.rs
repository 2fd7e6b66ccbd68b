//! The errors of the NBD client and the TLS layer.

use std::fmt;
use std::io;

/// Why an NBD operation failed.
#[derive(Debug)]
#[non_exhaustive]
pub enum NbdError {
    /// The NBD URI is malformed or asks for something unsupported.
    Uri(String),
    /// The server could not be reached (after retrying with backoff).
    Connect {
        /// The server, as `host:port` or a socket path.
        server: String,
        /// The last error.
        source: io::Error,
    },
    /// The server broke the protocol (bad magic, unknown cookie, impossible lengths).
    Protocol(String),
    /// The server refused an option during the handshake.
    Refused(String),
    /// TLS set-up or credentials failed.
    Tls(String),
    /// A credentials file that the asked TLS set-up needs does not exist.
    MissingCredential {
        /// The missing file.
        path: std::path::PathBuf,
        /// What it is needed for.
        needed_for: &'static str,
    },
    /// The connection went away while requests were in flight; they failed.
    Disconnected {
        /// The server.
        server: String,
        /// What was going on (`read`, `write`, `flush`).
        during: &'static str,
        /// The underlying error.
        source: io::Error,
    },
    /// The server answered a request with an NBD error.
    Server {
        /// What the request was.
        during: &'static str,
        /// The NBD error number.
        errno: u32,
        /// The server's message, if it sent one (structured replies).
        message: String,
    },
    /// The export is read-only and a write was asked for.
    ReadOnly,
}

impl fmt::Display for NbdError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NbdError::Uri(m) => write!(f, "invalid NBD URI: {m}"),
            NbdError::Connect { server, source } => {
                write!(f, "cannot connect to NBD server {server}: {source}")
            }
            NbdError::Protocol(m) => write!(f, "NBD protocol error: {m}"),
            NbdError::Refused(m) => write!(f, "NBD server refused: {m}"),
            NbdError::Tls(m) => write!(f, "NBD TLS: {m}"),
            NbdError::MissingCredential { path, needed_for } => write!(
                f,
                "NBD TLS: {} is missing: it is needed {needed_for}",
                path.display()
            ),
            NbdError::Disconnected {
                server,
                during,
                source,
            } => write!(
                f,
                "NBD server {server} went away during a {during} ({source}); the request \
                 failed and nothing was assumed written"
            ),
            NbdError::Server {
                during,
                errno,
                message,
            } => {
                write!(
                    f,
                    "NBD server error {} during a {during}",
                    errno_name(*errno)
                )?;
                if !message.is_empty() {
                    write!(f, ": {message}")?;
                }
                Ok(())
            }
            NbdError::ReadOnly => f.write_str("the NBD export is read-only"),
        }
    }
}

impl std::error::Error for NbdError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            NbdError::Connect { source, .. } | NbdError::Disconnected { source, .. } => {
                Some(source)
            }
            _ => None,
        }
    }
}

/// The name of an NBD error number.
fn errno_name(e: u32) -> String {
    match e {
        1 => "EPERM".into(),
        5 => "EIO".into(),
        12 => "ENOMEM".into(),
        22 => "EINVAL".into(),
        28 => "ENOSPC (beyond the end of the export, or the server's storage is full)".into(),
        75 => "EOVERFLOW".into(),
        95 => "ENOTSUP".into(),
        108 => "ESHUTDOWN (the server is shutting down)".into(),
        n => format!("{n}"),
    }
}

impl From<NbdError> for io::Error {
    fn from(e: NbdError) -> io::Error {
        let kind = match &e {
            NbdError::Uri(_) => io::ErrorKind::InvalidInput,
            NbdError::MissingCredential { .. } => io::ErrorKind::NotFound,
            NbdError::ReadOnly => io::ErrorKind::PermissionDenied,
            NbdError::Server { errno: 1, .. } => io::ErrorKind::PermissionDenied,
            NbdError::Server { errno: 95, .. } => io::ErrorKind::Unsupported,
            NbdError::Connect { source, .. } => source.kind(),
            _ => io::ErrorKind::Other,
        };
        io::Error::new(kind, e)
    }
}
