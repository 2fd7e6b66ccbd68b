//! What can go wrong reading a table or preparing an entry's open.

use crate::table::{DeviceSpec, FileRef, MAX_TABLE_BYTES};

/// A failure of this crate; the messages are the command line's.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CrypttabError {
    /// The table (or a directory needed for a mount) could not be read.
    #[error("Cannot read {path}: {source}.")]
    Read {
        /// The file.
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// The table is longer than [`MAX_TABLE_BYTES`].
    #[error("{path} is larger than {MAX_TABLE_BYTES} bytes.")]
    TooLarge {
        /// The file.
        path: String,
    },
    /// The entry has an option lukskit refuses (it changes what would be set up).
    #[error("option '{option}' is not supported: {reason}; not opened.")]
    Refused {
        /// The option as written.
        option: String,
        /// Why it is refused.
        reason: String,
    },
    /// The entry's device was not found.
    #[error("Device {0} not found.")]
    DeviceNotFound(DeviceSpec),
    /// The device holding a key file or header was not found.
    #[error("Device {device} holding {path} not found.")]
    FileDeviceNotFound {
        /// The device named after the `:`.
        device: DeviceSpec,
        /// The file on it.
        path: String,
    },
    /// A file on another device names `..`.
    #[error("{0}: a file on another device may not name a parent directory (..).")]
    ParentDirectory(FileRef),
    /// The mount point could not be made.
    #[error("Cannot create {path}: {source}.")]
    CreateDirectory {
        /// The directory.
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// A path holds a NUL byte (`what`: "Device" or "Directory").
    #[error("{what} path contains NUL.")]
    NulInPath {
        /// Which path.
        what: &'static str,
    },
    /// No file system the kernel has mounted the device.
    #[error("Cannot mount {device} read-only to read a key file from it.")]
    Mount {
        /// The device.
        device: String,
    },
}
