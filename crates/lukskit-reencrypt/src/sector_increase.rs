//! A re-encryption that raises the encryption sector size, which cryptsetup 2.6.1 (with
//! blkid) allows only where it can read the file system's block size through the volume's
//! active mapping, or with `--force-offline-reencrypt`: a file system whose blocks are
//! smaller than the new sectors would see writes torn differently after a crash
//! (luks2-reencryption-test \[31\]).

use crate::initialize::data_sector_size;
use crate::{ReencryptError, ReencryptRequest, Result};
use lukskit_format::luks2::Luks2Header;

/// A raise of the encryption sector size to `new`, to be checked on the file system of
/// the volume's active mapping (`on`, the mapping's device), if there is one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SectorIncrease {
    /// The new encryption sector size.
    pub new: u32,
    /// The device of the volume's active mapping, whose file system must take it.
    pub on: Option<String>,
}

impl SectorIncrease {
    /// The device whose file system must take the new sector size;
    /// [`ReencryptError::SectorIncreaseOffline`] without an active mapping.
    pub fn probe_device(&self) -> Result<&str> {
        self.on
            .as_deref()
            .ok_or(ReencryptError::SectorIncreaseOffline)
    }
}

/// The new encryption sector size of a new re-encryption of the volume of header `hdr`
/// when it is larger than the old one and is to be checked (`None`: it does not grow, or
/// `--force-offline-reencrypt` bypasses the check).
pub fn raised_sector_size(hdr: &Luks2Header, req: &ReencryptRequest) -> Result<Option<u32>> {
    let old = data_sector_size(hdr)?;
    Ok(req
        .sector_size
        .filter(|n| *n > old)
        .filter(|_| !req.force_offline))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_a_mapping_the_raise_is_refused() {
        let i = SectorIncrease {
            new: 4096,
            on: None,
        };
        assert!(matches!(
            i.probe_device(),
            Err(ReencryptError::SectorIncreaseOffline)
        ));
        let i = SectorIncrease {
            new: 4096,
            on: Some("/dev/mapper/x".into()),
        };
        assert_eq!(i.probe_device().unwrap(), "/dev/mapper/x");
    }
}
