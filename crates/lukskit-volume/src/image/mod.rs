//! Offline conversion between a plaintext file and an encrypted image (`lukskit image
//! encrypt|decrypt`, what `qemu-img convert` with its LUKS driver and luksy do):
//!
//! * [`pipeline`] — the plaintext streamed through the sector engine on all cores (one
//!   reader, whole chunks per engine worker, one writer); decrypted output with holes for
//!   blocks of zeros;
//! * [`staging`] — nothing written under the final name until everything is: new files
//!   beside the target renamed into place at the end, a LUKS header on a block device
//!   hidden until the data behind it is complete;
//! * [`files`] — the two ends: a new image's data area sized, written from a plaintext
//!   stream and made durable; a data area decrypted into a plaintext file or device.
//!
//! Formatting the image and unlocking it are the callers' (with [`crate::format`],
//! [`crate::Volume`], [`crate::plain`]); so are prompts and progress output.

pub mod files;
pub mod pipeline;
pub mod staging;

/// What can go wrong converting an image; the messages are the command line's.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ImageError {
    /// The volume layer failed (a read, a write, the engine).
    #[error(transparent)]
    Volume(#[from] crate::VolumeError),
    /// An I/O operation (`op`: "Opening", "Reading", "Writing", "Syncing", "Resizing",
    /// "Creating") on `path` failed.
    #[error("{op} {path} failed: {source}.")]
    Io {
        /// What was done.
        op: &'static str,
        /// On which file.
        path: String,
        /// Why it failed.
        source: std::io::Error,
    },
    /// A new file could not be made (missing directory, no permission).
    #[error("Cannot create {path}: {source}.")]
    Create {
        /// The file it was to replace.
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// The path names no file (`/`, `..`).
    #[error("Cannot create {path}: not a file name.")]
    NotAFileName {
        /// The path.
        path: String,
    },
    /// SIGINT or SIGTERM (as the caller's interrupt check says) stopped the conversion.
    #[error(
        "Interrupted: the image was not completed (nothing was written under its name; a \
         block device keeps no valid header)."
    )]
    Interrupted,
    /// A thread of the pipeline stopped (a panic).
    #[error("Internal error: {0} stopped unexpectedly.")]
    Pipeline(&'static str),
    /// The plaintext is longer than the data area's fixed size (`--size`).
    #[error("The plaintext ({plain} bytes) does not fit the requested data size ({fixed} bytes).")]
    PlaintextTooLarge {
        /// The plaintext's length in bytes.
        plain: u64,
        /// The data area's size in bytes.
        fixed: u64,
    },
    /// A block device to write is smaller than what goes onto it.
    #[error("Device {path} is too small ({have} bytes, {need} needed).")]
    DeviceTooSmall {
        /// The device.
        path: String,
        /// Its size in bytes.
        have: u64,
        /// The bytes needed.
        need: u64,
    },
}

impl ImageError {
    /// An [`ImageError::Io`].
    pub fn io(op: &'static str, path: &str, source: std::io::Error) -> Self {
        ImageError::Io {
            op,
            path: path.to_string(),
            source,
        }
    }
}
