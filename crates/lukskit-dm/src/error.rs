//! The errors of this crate.
//!
//! Every failing device-mapper ioctl is classified by its OS error into one of a few kinds a
//! caller acts on (busy, not found, exists, permission); the OS error itself is kept as the
//! `source`. No message ever contains key material: table parse errors name the field, never
//! the line.

use std::io;
use std::path::PathBuf;

/// Result type of this crate.
pub type Result<T> = std::result::Result<T, DmError>;

/// What went wrong talking to the kernel's device-mapper, keyring or `/dev`.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DmError {
    /// The device is busy (`EBUSY`): open, mounted, or a remove/suspend raced with a user.
    #[error("device-mapper {op} {name}: device or resource busy")]
    Busy {
        /// The DM command (`remove`, `suspend`, ...).
        op: &'static str,
        /// The mapping name.
        name: String,
        /// The OS error.
        source: io::Error,
    },
    /// No mapping of that name (`ENXIO`, `ENODEV`).
    #[error("device-mapper {op} {name}: no such device")]
    NotFound {
        /// The DM command.
        op: &'static str,
        /// The mapping name.
        name: String,
        /// The OS error.
        source: io::Error,
    },
    /// A mapping with that name or DM UUID already exists (`EEXIST`).
    #[error("device-mapper {op} {name}: device already exists")]
    Exists {
        /// The DM command.
        op: &'static str,
        /// The mapping name.
        name: String,
        /// The OS error.
        source: io::Error,
    },
    /// Not allowed (`EPERM`, `EACCES`): device-mapper needs `CAP_SYS_ADMIN`.
    #[error("device-mapper {op} {name}: permission denied")]
    Permission {
        /// The DM command.
        op: &'static str,
        /// The mapping name (empty for global commands).
        name: String,
        /// The OS error.
        source: io::Error,
    },
    /// Any other OS error of a DM ioctl (`EINVAL` for a table the target refuses, ...).
    #[error("device-mapper {op} {name} failed")]
    Os {
        /// The DM command.
        op: &'static str,
        /// The mapping name (empty for global commands).
        name: String,
        /// The OS error.
        source: io::Error,
    },
    /// `/dev/mapper/control` cannot be opened: no device-mapper in this kernel, or no node.
    #[error("device-mapper is not available ({path})")]
    Unavailable {
        /// The control node tried.
        path: PathBuf,
        /// The OS error.
        source: io::Error,
    },
    /// A name, DM UUID or argument the kernel would refuse (too long, `/` in a name, ...).
    #[error("invalid device-mapper argument: {0}")]
    InvalidArgument(String),
    /// A table line or status reply that does not parse. The text names the field only.
    #[error("cannot parse device-mapper table: {0}")]
    Parse(String),
    /// The kernel's reply did not fit even the largest buffer we are willing to allocate.
    #[error("device-mapper {op} {name}: reply larger than {limit} bytes")]
    ReplyTooLarge {
        /// The DM command.
        op: &'static str,
        /// The mapping name.
        name: String,
        /// The buffer size limit in bytes.
        limit: usize,
    },
    /// The kernel replied with a malformed buffer (offsets out of range, no terminator).
    #[error("device-mapper {op}: malformed reply from the kernel ({what})")]
    BadReply {
        /// The DM command.
        op: &'static str,
        /// What was wrong.
        what: &'static str,
    },
    /// A kernel keyring syscall failed.
    #[error("kernel keyring {op} failed")]
    Keyring {
        /// `add_key`, `revoke`, `unlink`, ...
        op: &'static str,
        /// The OS error.
        source: io::Error,
    },
    /// Creating, checking or removing a device node failed.
    #[error("device node {path}: {what}")]
    Node {
        /// The node's path.
        path: PathBuf,
        /// What we tried.
        what: &'static str,
        /// The OS error.
        source: io::Error,
    },
}

impl DmError {
    /// Classify the OS error `source` of DM command `op` on mapping `name`.
    pub(crate) fn from_os(op: &'static str, name: &str, source: io::Error) -> DmError {
        let name = name.to_string();
        match source.raw_os_error() {
            Some(libc::EBUSY) => DmError::Busy { op, name, source },
            Some(libc::ENXIO) | Some(libc::ENODEV) => DmError::NotFound { op, name, source },
            Some(libc::EEXIST) => DmError::Exists { op, name, source },
            Some(libc::EPERM) | Some(libc::EACCES) => DmError::Permission { op, name, source },
            _ => DmError::Os { op, name, source },
        }
    }

    /// The OS error number behind this error, when there is one (for exit-code mapping).
    pub fn raw_os_error(&self) -> Option<i32> {
        match self {
            DmError::Busy { source, .. }
            | DmError::NotFound { source, .. }
            | DmError::Exists { source, .. }
            | DmError::Permission { source, .. }
            | DmError::Os { source, .. }
            | DmError::Unavailable { source, .. }
            | DmError::Keyring { source, .. }
            | DmError::Node { source, .. } => source.raw_os_error(),
            _ => None,
        }
    }

    /// True for [`DmError::NotFound`].
    pub fn is_not_found(&self) -> bool {
        matches!(self, DmError::NotFound { .. })
    }

    /// True for [`DmError::Busy`].
    pub fn is_busy(&self) -> bool {
        matches!(self, DmError::Busy { .. })
    }
}
