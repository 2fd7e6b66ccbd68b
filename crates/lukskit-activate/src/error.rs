//! What can go wrong when a volume is made available, closed, suspended or resized. Typed:
//! the command line decides exit codes and wording from the variant, never from the text.

use lukskit_dm::DmError;
use lukskit_volume::VolumeError;
use std::io;

/// An error of the activation layer.
#[derive(Debug)]
#[non_exhaustive]
pub enum ActivateError {
    /// The mapping name is not usable (empty, a path, control characters, too long).
    InvalidName {
        /// The name as given.
        name: String,
    },
    /// A mapping (of either backend) of this name exists already.
    NameExists {
        /// The name.
        name: String,
    },
    /// No mapping of this name is active.
    NotActive {
        /// The name.
        name: String,
    },
    /// The backing device is in use: a mapping, a mount, a loop device or another exclusive
    /// user holds it.
    DeviceInUse {
        /// The device as it was given.
        device: String,
    },
    /// The backing device does not exist or cannot be accessed.
    DeviceMissing {
        /// The device as it was given.
        device: String,
    },
    /// The mapping is in use (mounted, held open) and cannot be closed now.
    MappingBusy {
        /// The name.
        name: String,
    },
    /// The mapping is suspended (a userspace mapping cannot be closed while suspended).
    Suspended {
        /// The name.
        name: String,
    },
    /// luksResume of a mapping that is not suspended.
    NotSuspended {
        /// The name.
        name: String,
    },
    /// luksSuspend of a mapping that is suspended already.
    AlreadySuspended {
        /// The name.
        name: String,
    },
    /// The request cannot be served as asked (conflicting options, bad sizes, ...).
    InvalidRequest(String),
    /// This backend or device type does not do that (yet).
    Unsupported(String),
    /// The kernel has no device-mapper with dm-crypt, but the kernel backend was asked for.
    NoDeviceMapper,
    /// The volume layer failed (opening or reading the data device, unlocking).
    Volume(VolumeError),
    /// The kernel's device-mapper refused an operation.
    Kernel(DmError),
    /// An operating-system error while doing `context`.
    Io {
        /// What was being done ("Cannot mount the FUSE file", ...).
        context: String,
        /// The OS error.
        source: io::Error,
    },
    /// The serving process did not start or answered something unexpected.
    Server(String),
    /// What was asked for needs root (a loop device, `/dev/mapper/NAME`, device-mapper);
    /// `what` names it.
    NeedsRoot {
        /// What needs root, in words ("a loop device and /dev/mapper/NAME").
        what: String,
    },
    /// A non-root user's state directory is not theirs alone (another owner, a symbolic
    /// link, access for others): nothing is put there.
    UnsafeStateDir {
        /// The directory.
        path: String,
    },
}

impl ActivateError {
    /// An I/O error with context.
    pub fn io(context: impl Into<String>, source: io::Error) -> Self {
        ActivateError::Io {
            context: context.into(),
            source,
        }
    }
}

impl std::fmt::Display for ActivateError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ActivateError::InvalidName { name } => write!(f, "invalid mapping name {name:?}"),
            ActivateError::NameExists { name } => write!(f, "mapping {name} exists already"),
            ActivateError::NotActive { name } => write!(f, "mapping {name} is not active"),
            ActivateError::DeviceInUse { device } => write!(f, "device {device} is in use"),
            ActivateError::DeviceMissing { device } => {
                write!(f, "device {device} does not exist or cannot be accessed")
            }
            ActivateError::MappingBusy { name } => write!(f, "mapping {name} is in use"),
            ActivateError::Suspended { name } => write!(f, "mapping {name} is suspended"),
            ActivateError::NotSuspended { name } => write!(f, "mapping {name} is not suspended"),
            ActivateError::AlreadySuspended { name } => {
                write!(f, "mapping {name} is suspended already")
            }
            ActivateError::InvalidRequest(m)
            | ActivateError::Unsupported(m)
            | ActivateError::Server(m) => f.write_str(m),
            ActivateError::NoDeviceMapper => {
                f.write_str("the kernel has no device-mapper with dm-crypt")
            }
            ActivateError::Volume(e) => write!(f, "{e}"),
            ActivateError::Kernel(e) => write!(f, "device-mapper: {e}"),
            ActivateError::Io { context, source } => write!(f, "{context}: {source}"),
            ActivateError::NeedsRoot { what } => write!(f, "{what} needs root"),
            ActivateError::UnsafeStateDir { path } => write!(
                f,
                "{path} is not a directory of this user's alone (mode 0700, not a link)"
            ),
        }
    }
}

impl std::error::Error for ActivateError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ActivateError::Volume(e) => Some(e),
            ActivateError::Kernel(e) => Some(e),
            ActivateError::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}

impl ActivateError {
    /// What a failed creation of `device`'s mapping means: the device is in use when the
    /// kernel says busy, otherwise the kernel's own error.
    pub(crate) fn from_create(device: &str, e: DmError) -> Self {
        if e.is_busy() {
            ActivateError::DeviceInUse {
                device: device.to_string(),
            }
        } else {
            ActivateError::Kernel(e)
        }
    }
}

impl From<DmError> for ActivateError {
    fn from(e: DmError) -> Self {
        ActivateError::Kernel(e)
    }
}

impl From<VolumeError> for ActivateError {
    fn from(e: VolumeError) -> Self {
        ActivateError::Volume(e)
    }
}

/// Result type of the activation layer.
pub type Result<T> = std::result::Result<T, ActivateError>;
