//! Writing a new re-encryption's metadata.

use crate::{online, ReencryptError, Result};
use lukskit_format::luks2::Luks2Header;
use lukskit_volume::reencrypt::{self, InitParams, Keys};
use lukskit_volume::Volume;

/// Write the re-encryption metadata (`params`, `keys`) of a re-encryption or decryption of
/// `size` bytes of data on a device of logical block size `block`. When the run goes on
/// under kernel mapping `online`, that mapping must first match the metadata about to be
/// written, as cryptsetup 2.6.1's `reencrypt_init` checks it (`crypt_compare_dm_devices`).
/// On any failure nothing is written: [`ReencryptError::InitFailedBecause`] with the reason
/// (a metadata already in re-encryption is reported as it is).
pub fn commit(
    vol: &mut Volume,
    (size, block): (u64, u64),
    params: &InitParams,
    keys: &Keys,
    online: Option<&str>,
) -> Result<()> {
    let uuid = vol.uuid().to_string();
    let mut failed = None;
    let mut check = |h: &Luks2Header, k: &Keys| -> lukskit_volume::Result<()> {
        let Some(name) = online else {
            return Ok(());
        };
        online::check_before_init(name, &uuid, h, k, size).map_err(|e| {
            let m = e.to_string();
            failed = Some(e);
            lukskit_volume::ReencryptError::Online(m).into()
        })
    };
    let Some((vol_dev, h)) = vol.luks2_edit() else {
        return Err(ReencryptError::NotLuks2);
    };
    let r = reencrypt::init_checked(vol_dev, size, block, h, params, keys, &mut check);
    let e = match r {
        Ok(_) => return Ok(()),
        Err(
            e @ lukskit_volume::VolumeError::Reencrypt(
                lukskit_volume::ReencryptError::AlreadyInitialized,
            ),
        ) => return Err(e.into()),
        Err(e) => failed.unwrap_or_else(|| e.into()),
    };
    Err(ReencryptError::InitFailedBecause(Box::new(e)))
}
