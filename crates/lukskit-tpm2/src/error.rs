//! The typed errors of the TPM client and of the systemd-tpm2 token.

use std::fmt;

/// A TPM 2.0 response code other than success (TCG TPM 2.0 Part 2, `TPM_RC`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ResponseCode(pub u32);

impl ResponseCode {
    /// `TPM_RC_INITIALIZE`: the TPM has not had `TPM2_Startup`.
    pub const INITIALIZE: u32 = 0x100;
    /// `TPM_RC_AUTH_FAIL` (format 1 code, without the session/parameter number).
    pub const AUTH_FAIL: u32 = 0x08E;
    /// `TPM_RC_BAD_AUTH` (format 1).
    pub const BAD_AUTH: u32 = 0x0A2;
    /// `TPM_RC_POLICY_FAIL` (format 1).
    pub const POLICY_FAIL: u32 = 0x099;
    /// `TPM_RC_INTEGRITY` (format 1): a blob that is not this TPM's (another parent).
    pub const INTEGRITY: u32 = 0x09F;
    /// `TPM_RC_LOCKOUT`: dictionary-attack lockout.
    pub const LOCKOUT: u32 = 0x921;
    /// `TPM_RC_RETRY`.
    pub const RETRY: u32 = 0x922;
    /// `TPM_RC_YIELDED`.
    pub const YIELDED: u32 = 0x908;
    /// `TPM_RC_TESTING`.
    pub const TESTING: u32 = 0x90A;
    /// `TPM_RC_PCR_CHANGED`: a PCR changed while a policy session was being built.
    pub const PCR_CHANGED: u32 = 0x928;

    /// The code without the handle/session/parameter number of format-1 codes.
    pub fn base(self) -> u32 {
        if self.0 & 0x80 != 0 {
            0x80 | (self.0 & 0x3F)
        } else {
            self.0
        }
    }

    /// A short name for the codes lukskit reacts to.
    pub fn name(self) -> Option<&'static str> {
        Some(match self.base() {
            Self::INITIALIZE => "TPM_RC_INITIALIZE",
            Self::AUTH_FAIL => "TPM_RC_AUTH_FAIL",
            Self::BAD_AUTH => "TPM_RC_BAD_AUTH",
            Self::POLICY_FAIL => "TPM_RC_POLICY_FAIL",
            Self::INTEGRITY => "TPM_RC_INTEGRITY",
            Self::LOCKOUT => "TPM_RC_LOCKOUT",
            Self::RETRY => "TPM_RC_RETRY",
            Self::YIELDED => "TPM_RC_YIELDED",
            Self::TESTING => "TPM_RC_TESTING",
            Self::PCR_CHANGED => "TPM_RC_PCR_CHANGED",
            0x084 => "TPM_RC_VALUE",
            0x08B => "TPM_RC_HANDLE",
            0x095 => "TPM_RC_SIZE",
            0x09A => "TPM_RC_CURVE",
            0x0A3 => "TPM_RC_NO_RESULT",
            0x143 => "TPM_RC_COMMAND_CODE",
            0x902 => "TPM_RC_OBJECT_MEMORY",
            0x903 => "TPM_RC_SESSION_MEMORY",
            0x904 => "TPM_RC_MEMORY",
            _ => return None,
        })
    }
}

impl fmt::Display for ResponseCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name() {
            Some(n) => write!(f, "{n} (0x{:x})", self.0),
            None => write!(f, "TPM error 0x{:x}", self.0),
        }
    }
}

/// What can go wrong talking to a TPM or unlocking a systemd-tpm2 token.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Tpm2Error {
    /// No TPM device (neither `/dev/tpmrm0` nor `/dev/tpm0`), or the named one is missing.
    #[error("no TPM2 device found ({0})")]
    NoDevice(String),
    /// The TPM device exists but is in use (`/dev/tpm0` without resource manager).
    #[error("TPM2 device {0} is busy")]
    Busy(String),
    /// A device name lukskit does not understand (`--tpm2-device`).
    #[error("unsupported TPM2 device name {0:?} (use a path, device:PATH, swtpm:path=SOCKET or swtpm:host=H,port=P)")]
    BadDeviceName(String),
    /// Reading from or writing to the TPM failed.
    #[error("TPM2 I/O on {device}: {source}")]
    Io {
        /// The device or socket.
        device: String,
        /// The error.
        #[source]
        source: std::io::Error,
    },
    /// The TPM did not answer in time.
    #[error("TPM2 device {0} did not answer in time")]
    Timeout(String),
    /// A response that does not parse (truncated, oversized, inconsistent).
    #[error("malformed TPM2 response: {0}")]
    BadResponse(&'static str),
    /// The response's HMAC does not verify: someone tampered with it, or a bug.
    #[error("the TPM2 response failed its integrity check")]
    ResponseIntegrity,
    /// The TPM refused a command.
    #[error("TPM2 command {command} failed: {rc}")]
    Command {
        /// The command's name.
        command: &'static str,
        /// The TPM's answer.
        rc: ResponseCode,
    },
    /// The TPM is in dictionary-attack lockout.
    #[error("the TPM2 is in dictionary-attack lockout")]
    Lockout,
    /// The PCR policy of the token does not match the current PCR values (the PCRs changed
    /// since enrollment). Nothing was tried against the sealed object.
    #[error(
        "the current PCR values do not match the token's policy (PCRs changed since enrollment)"
    )]
    PolicyMismatch,
    /// The PIN was wrong (the TPM's answer to the unseal).
    #[error("wrong TPM2 PIN")]
    BadPin,
    /// The token needs a PIN and none was given.
    #[error("the token needs a TPM2 PIN")]
    PinRequired,
    /// The token JSON is malformed.
    #[error("malformed systemd-tpm2 token: {0}")]
    BadToken(String),
    /// The token uses a feature lukskit does not support (yet).
    #[error("unsupported systemd-tpm2 token: {0}")]
    Unsupported(String),
    /// The `clevis.tpm2` header of a clevis `tpm2` pin is malformed.
    #[error("malformed clevis tpm2 pin: {0}")]
    BadClevisPin(String),
    /// A clevis `tpm2` pin with a setting lukskit does not support.
    #[error("unsupported clevis tpm2 pin: {0}")]
    UnsupportedClevisPin(String),
    /// The random number generator failed.
    #[error("random number generator failed")]
    Random,
    /// A key from the TPM that is not usable (bad curve point, bad modulus).
    #[error("unusable TPM2 key: {0}")]
    BadKey(&'static str),
}

/// Result alias of this crate.
pub type Result<T> = std::result::Result<T, Tpm2Error>;
