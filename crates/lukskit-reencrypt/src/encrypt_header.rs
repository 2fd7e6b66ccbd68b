//! The layout of the detached header that `reencrypt --encrypt --header FILE
//! --reduce-device-size SIZE` formats (cryptsetup 2.6.1's `encrypt_luks2_init` with a
//! detached header and a data shift): the header is sized to fill that much space, so that
//! it can later be restored over the head of the device in front of the data offset.

use crate::{ReencryptError, Result};

/// cryptsetup's default size of each LUKS2 metadata copy (16 KiB).
const DEFAULT_METADATA_SIZE: u64 = 0x4000;

/// The largest keyslots area cryptsetup makes by default (128 MiB).
const MAX_KEYSLOTS_SIZE: u64 = 128 << 20;

/// The metadata and keyslots area sizes of the header, in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HeaderLayout {
    /// The size of each metadata copy.
    pub metadata_size: u64,
    /// The size of the keyslots area.
    pub keyslots_size: u64,
}

/// The layout of a detached header for a data shift of `shift` bytes, with the metadata and
/// keyslots sizes asked for (`--luks2-metadata-size`, `--luks2-keyslots-size`) and the data
/// offset in 512-byte sectors (`--offset`). Without a keyslots size the keyslots area fills
/// the space up to the data offset (or the shift, when that is larger), at most 128 MiB, as
/// cryptsetup's. [`ReencryptError::MetadataLargerThanShift`] where the header does not fit.
pub fn shift_layout(
    shift: u64,
    metadata_size: Option<u64>,
    keyslots_size: Option<u64>,
    offset_sectors: Option<u64>,
) -> Result<HeaderLayout> {
    let md = metadata_size.unwrap_or(DEFAULT_METADATA_SIZE);
    if 2 * md + keyslots_size.unwrap_or(shift.saturating_sub(2 * md)) > shift {
        return Err(ReencryptError::MetadataLargerThanShift);
    }
    let off = offset_sectors.unwrap_or(0).saturating_mul(512);
    let ks = keyslots_size
        .unwrap_or_else(|| off.max(shift).saturating_sub(2 * md).min(MAX_KEYSLOTS_SIZE));
    Ok(HeaderLayout {
        metadata_size: md,
        keyslots_size: ks,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_keyslots_area_fills_the_shift() {
        let l = shift_layout(1 << 20, None, None, None).unwrap();
        assert_eq!(l.metadata_size, 0x4000);
        assert_eq!(l.keyslots_size, (1 << 20) - 0x8000);
    }

    #[test]
    fn the_keyslots_area_reaches_a_larger_data_offset_up_to_128_mib() {
        let l = shift_layout(1 << 20, None, None, Some(4096)).unwrap();
        assert_eq!(l.keyslots_size, 4096 * 512 - 0x8000);
        let l = shift_layout(1 << 20, None, None, Some(1 << 20)).unwrap();
        assert_eq!(l.keyslots_size, 128 << 20);
    }

    #[test]
    fn a_header_larger_than_the_shift_is_refused() {
        assert!(matches!(
            shift_layout(0x8000, Some(0x4000), Some(4096), None),
            Err(ReencryptError::MetadataLargerThanShift)
        ));
        assert!(matches!(
            shift_layout(0x4000, None, None, None),
            Err(ReencryptError::MetadataLargerThanShift)
        ));
    }
}
