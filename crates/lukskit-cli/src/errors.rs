//! The one place that decides what the user sees when a command fails: cryptsetup's exit
//! code and cryptsetup's exact wording, for the command line's own errors and for every
//! typed error of the libraries (volume, activation).

use lukskit_activate::ActivateError;
use lukskit_volume::VolumeError;

/// cryptsetup's exit-code classes (its `translate_errno`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExitClass {
    /// Wrong or missing parameters, unusable header, inactive keyslot (exit 1).
    Invalid,
    /// No permission or bad passphrase (exit 2).
    Permission,
    /// Out of memory (exit 3).
    NoMemory,
    /// Wrong device or file specified (exit 4).
    Device,
    /// Device already exists or is busy (exit 5).
    Busy,
}

impl ExitClass {
    /// The process exit code.
    pub fn exit_code(self) -> i32 {
        match self {
            ExitClass::Invalid => 1,
            ExitClass::Permission => 2,
            ExitClass::NoMemory => 3,
            ExitClass::Device => 4,
            ExitClass::Busy => 5,
        }
    }

    /// The words of cryptsetup's "Command failed with code -N (...)." line.
    pub fn text(self) -> &'static str {
        match self {
            ExitClass::Invalid => "wrong or missing parameters",
            ExitClass::Permission => "no permission or bad passphrase",
            ExitClass::NoMemory => "out of memory",
            ExitClass::Device => "wrong device or file specified",
            ExitClass::Busy => "device already exists or device is busy",
        }
    }

    /// The class of an operating-system error, as cryptsetup's errno translation gives it
    /// for a failed device or file operation.
    pub fn of_io(e: &std::io::Error) -> Self {
        match e.raw_os_error() {
            Some(libc::ENOMEM) => ExitClass::NoMemory,
            Some(libc::EBUSY) | Some(libc::EEXIST) => ExitClass::Busy,
            Some(libc::EACCES) | Some(libc::EPERM) => ExitClass::Permission,
            _ => ExitClass::Device,
        }
    }
}

/// A failed command as the user sees it: an exit class and cryptsetup's message (one or
/// more lines, no trailing newline; empty when everything was printed already).
#[derive(Debug)]
pub struct CliError {
    /// The exit class.
    pub class: ExitClass,
    /// The message.
    pub message: String,
    /// Standard input ended before anything was read ("Nothing to read on input.").
    nothing_to_read: bool,
}

/// Result type of the command line.
pub type Result<T> = std::result::Result<T, CliError>;

impl CliError {
    /// A new error.
    pub fn new(class: ExitClass, message: impl Into<String>) -> Self {
        CliError {
            class,
            message: message.into(),
            nothing_to_read: false,
        }
    }
    /// Wrong or missing parameters (exit 1).
    pub fn invalid(message: impl Into<String>) -> Self {
        Self::new(ExitClass::Invalid, message)
    }
    /// No permission / bad passphrase (exit 2).
    pub fn permission(message: impl Into<String>) -> Self {
        Self::new(ExitClass::Permission, message)
    }
    /// Wrong device (exit 4).
    pub fn device(message: impl Into<String>) -> Self {
        Self::new(ExitClass::Device, message)
    }
    /// Busy or existing (exit 5).
    pub fn busy(message: impl Into<String>) -> Self {
        Self::new(ExitClass::Busy, message)
    }
    /// cryptsetup's "No key available with this passphrase." (exit 2).
    pub fn wrong_passphrase() -> Self {
        Self::permission(WRONG_PASSPHRASE)
    }
    /// An I/O error on `path` while doing `what` ("Opening", "Reading", ...).
    pub fn io(what: &str, path: &str, e: &std::io::Error) -> Self {
        Self::new(ExitClass::of_io(e), format!("{what} {path} failed: {e}."))
    }
    /// Standard input gave nothing (exit 1, "Nothing to read on input.").
    pub fn nothing_to_read() -> Self {
        CliError {
            nothing_to_read: true,
            ..Self::invalid("Nothing to read on input.")
        }
    }
    /// Whether standard input ended before anything was read.
    pub fn is_nothing_to_read(&self) -> bool {
        self.nothing_to_read
    }
    /// The same error, its message already printed.
    pub fn silenced(self) -> Self {
        CliError {
            message: String::new(),
            ..self
        }
    }
}

const WRONG_PASSPHRASE: &str = "No key available with this passphrase.";

impl From<VolumeError> for CliError {
    fn from(e: VolumeError) -> Self {
        volume(&e)
    }
}

/// Whether a volume error is a passphrase that opened no keyslot (the one error a
/// passphrase prompt asks again for).
pub fn is_wrong_passphrase(e: &VolumeError) -> bool {
    e.kind == lukskit_volume::ErrorKind::Permission
}

/// cryptsetup's exit class and words for an error of the volume layer.
pub fn volume(e: &VolumeError) -> CliError {
    {
        let class = match e.kind {
            lukskit_volume::ErrorKind::Invalid => ExitClass::Invalid,
            lukskit_volume::ErrorKind::Permission => ExitClass::Permission,
            lukskit_volume::ErrorKind::NoMemory => ExitClass::NoMemory,
            lukskit_volume::ErrorKind::Device => ExitClass::Device,
            lukskit_volume::ErrorKind::Busy => ExitClass::Busy,
        };
        CliError::new(class, e.message.clone())
    }
}

impl From<lukskit_crypto::CryptoError> for CliError {
    fn from(e: lukskit_crypto::CryptoError) -> Self {
        volume(&VolumeError::from(e))
    }
}

impl From<lukskit_format::FormatError> for CliError {
    fn from(e: lukskit_format::FormatError) -> Self {
        volume(&VolumeError::from(e))
    }
}

impl From<ActivateError> for CliError {
    fn from(e: ActivateError) -> Self {
        activation_error(e)
    }
}

/// cryptsetup's words and exit code for what the activation layer reports.
fn activation_error(e: ActivateError) -> CliError {
    match e {
        ActivateError::InvalidName { name } => {
            CliError::invalid(format!("Device name {name:?} is not valid."))
        }
        ActivateError::NameExists { name } => {
            CliError::busy(format!("Device {name} already exists."))
        }
        ActivateError::NotActive { name } => inactive(&name),
        ActivateError::DeviceInUse { device } => CliError::busy(format!(
            "Cannot use device {device} which is in use (already mapped or mounted)."
        )),
        ActivateError::DeviceMissing { device } => {
            CliError::device(format!("Device {device} does not exist or access denied."))
        }
        ActivateError::MappingBusy { name } => {
            CliError::busy(format!("Device {name} is still in use."))
        }
        ActivateError::Suspended { name } => CliError::busy(format!(
            "Device {name} is suspended; resume it before closing it."
        )),
        ActivateError::NotSuspended { name } => {
            CliError::invalid(format!("Volume {name} is not suspended."))
        }
        ActivateError::AlreadySuspended { name } => {
            CliError::invalid(format!("Volume {name} is already suspended."))
        }
        ActivateError::InvalidRequest(m) | ActivateError::Unsupported(m) => CliError::invalid(m),
        ActivateError::NoDeviceMapper => CliError::invalid(
            "The kernel has no device-mapper with dm-crypt (/dev/mapper/control, dm_crypt).",
        ),
        ActivateError::Volume(v) => v.into(),
        ActivateError::Io { context, source } => {
            let class = match source.raw_os_error() {
                Some(libc::EBUSY) | Some(libc::EEXIST) => ExitClass::Busy,
                Some(libc::ENODEV) | Some(libc::ENXIO) => ExitClass::Device,
                Some(libc::EPERM) | Some(libc::EACCES) => ExitClass::Permission,
                _ => ExitClass::Invalid,
            };
            CliError::new(class, format!("{context}: {source}"))
        }
        ActivateError::Kernel(k) => {
            let class = if k.is_busy() {
                ExitClass::Busy
            } else if k.is_not_found() {
                ExitClass::Device
            } else {
                ExitClass::Invalid
            };
            CliError::new(class, format!("device-mapper: {k}."))
        }
        other => CliError::invalid(sentence(&other.to_string())),
    }
}

/// cryptsetup's "Device NAME is not active." (exit 4).
pub fn inactive(name: &str) -> CliError {
    CliError::device(format!("Device {name} is not active."))
}

/// `s` with a capital first letter and a final period.
fn sentence(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_uppercase().collect::<String>() + c.as_str() + ".",
        None => String::new(),
    }
}
