//! `fvault2Dump`: cryptsetup 2.6.1's `FVAULT2_dump` text.

use super::{Params, CIPHER, CIPHER_MODE};
use crate::formats::Description;
use std::fmt;

/// What `fvault2Dump` shows.
#[derive(Debug, Clone)]
pub struct Fvault2Dump {
    /// The device as named on the command line.
    pub device: String,
    /// The physical volume UUID.
    pub ph_vol_uuid: String,
    /// The logical volume family UUID.
    pub family_uuid: String,
    /// The logical volume's offset in bytes.
    pub log_vol_offset: u64,
    /// The logical volume's size in bytes.
    pub log_vol_size: u64,
    /// PBKDF2 iterations.
    pub pbkdf2_iterations: u32,
    /// PBKDF2 salt.
    pub pbkdf2_salt: [u8; 16],
}

impl Fvault2Dump {
    /// The description of `params` read from `device`.
    pub fn new(device: &str, params: &Params) -> Self {
        Fvault2Dump {
            device: device.to_string(),
            ph_vol_uuid: super::plist::format_uuid(&params.ph_vol_uuid),
            family_uuid: params.family_uuid(),
            log_vol_offset: params.log_vol_offset,
            log_vol_size: params.metadata.volume.size,
            pbkdf2_iterations: params.metadata.keys.pbkdf2_iterations,
            pbkdf2_salt: params.metadata.keys.pbkdf2_salt,
        }
    }
}

impl fmt::Display for Fvault2Dump {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "Header information for FVAULT2 device {}.", self.device)?;
        writeln!(f, "Physical volume UUID: \t{}", self.ph_vol_uuid)?;
        writeln!(f, "Family UUID:          \t{}", self.family_uuid)?;
        writeln!(f, "Logical volume offset:\t{} [bytes]", self.log_vol_offset)?;
        writeln!(f, "Logical volume size:  \t{} [bytes]", self.log_vol_size)?;
        writeln!(f, "Cipher:               \t{CIPHER}")?;
        writeln!(f, "Cipher mode:          \t{CIPHER_MODE}")?;
        writeln!(f, "PBKDF2 iterations:    \t{}", self.pbkdf2_iterations)?;
        write!(f, "PBKDF2 salt:          \t")?;
        for b in self.pbkdf2_salt {
            write!(f, "{b:02x} ")?;
        }
        writeln!(f)
    }
}

impl Description for Fvault2Dump {}
