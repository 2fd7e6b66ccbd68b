//! Block device numbers (`major:minor`), as device-mapper tables name devices.

use std::fmt;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::Path;
use std::str::FromStr;

use crate::error::{DmError, Result};

/// A device number. Displays and parses as `major:minor`, the form the kernel prints in tables.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct DevT {
    /// Major number.
    pub major: u32,
    /// Minor number.
    pub minor: u32,
}

impl DevT {
    /// `major:minor`.
    pub const fn new(major: u32, minor: u32) -> DevT {
        DevT { major, minor }
    }

    /// From the kernel's 64-bit encoding (`dm_ioctl.dev`, `st_rdev`).
    pub fn from_raw(raw: u64) -> DevT {
        DevT {
            major: libc::major(raw as libc::dev_t),
            minor: libc::minor(raw as libc::dev_t),
        }
    }

    /// The kernel's 64-bit encoding (for `mknod`, comparisons with `st_rdev`).
    pub fn to_raw(self) -> u64 {
        libc::makedev(self.major, self.minor) as u64
    }

    /// The device number of block device `path` (following symlinks).
    pub fn of_block_device(path: &Path) -> Result<DevT> {
        let md = std::fs::metadata(path).map_err(|source| DmError::Node {
            path: path.to_path_buf(),
            what: "stat",
            source,
        })?;
        if !md.file_type().is_block_device() {
            return Err(DmError::InvalidArgument(format!(
                "{} is not a block device",
                path.display()
            )));
        }
        Ok(DevT::from_raw(md.rdev()))
    }
}

impl fmt::Display for DevT {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.major, self.minor)
    }
}

impl FromStr for DevT {
    type Err = DmError;

    fn from_str(s: &str) -> Result<DevT> {
        let (ma, mi) = s
            .split_once(':')
            .ok_or_else(|| DmError::Parse("device is not major:minor".into()))?;
        let num = |t: &str| {
            t.parse::<u32>()
                .map_err(|_| DmError::Parse("device is not major:minor".into()))
        };
        Ok(DevT {
            major: num(ma)?,
            minor: num(mi)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raw_round_trip_matches_kernel_encoding() {
        // new_encode_dev: minor low 8 bits, major << 8, minor high bits << 12.
        let d = DevT::new(253, 0);
        assert_eq!(d.to_raw(), 253 << 8);
        let big = DevT::new(259, 300);
        assert_eq!(DevT::from_raw(big.to_raw()), big);
        assert_eq!(
            big.to_raw(),
            (300 & 0xff) | (259 << 8) | ((300 & !0xff) << 12)
        );
    }

    #[test]
    fn parse_and_display() {
        let d: DevT = "254:16".parse().unwrap();
        assert_eq!(d, DevT::new(254, 16));
        assert_eq!(d.to_string(), "254:16");
        assert!("254".parse::<DevT>().is_err());
        assert!("a:1".parse::<DevT>().is_err());
    }
}
