//! Recognising a LUKS header from its first bytes.

use crate::VolumeType;

/// The LUKS magic of a primary header (`LUKS\xba\xbe`).
pub const LUKS_MAGIC: [u8; 6] = *b"LUKS\xba\xbe";
/// The magic of a LUKS2 secondary header (`SKUL\xba\xbe`).
pub const LUKS2_SECONDARY_MAGIC: [u8; 6] = *b"SKUL\xba\xbe";

/// Inspect the first bytes of a device (at least 8) and tell which LUKS version the primary
/// header announces, if any. This checks only magic and version, not validity.
pub fn detect(first_bytes: &[u8]) -> Option<VolumeType> {
    if first_bytes.len() < 8 || first_bytes[..6] != LUKS_MAGIC {
        return None;
    }
    match u16::from_be_bytes([first_bytes[6], first_bytes[7]]) {
        1 => Some(VolumeType::Luks1),
        2 => Some(VolumeType::Luks2),
        _ => None,
    }
}

/// The version a primary header (LUKS magic) announces when cryptsetup 2.6.1 refuses the
/// device for it without a `--type`: anything but 1, 2 and 0 (cryptsetup reads a 0 as a
/// damaged LUKS2 primary and uses the secondary copy). cryptsetup then says
/// "Unsupported LUKS version N." even when the LUKS2 secondary copy is intact.
pub fn unsupported_version(first_bytes: &[u8]) -> Option<u16> {
    if first_bytes.len() < 8 || first_bytes[..6] != LUKS_MAGIC {
        return None;
    }
    match u16::from_be_bytes([first_bytes[6], first_bytes[7]]) {
        0..=2 => None,
        v => Some(v),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unsupported_versions() {
        assert_eq!(unsupported_version(b"LUKS\xba\xbe\x00\x03"), Some(3));
        assert_eq!(unsupported_version(b"LUKS\xba\xbe\xff\xff"), Some(0xffff));
        for ok in [0u8, 1, 2] {
            assert_eq!(
                unsupported_version(&[b'L', b'U', b'K', b'S', 0xba, 0xbe, 0, ok]),
                None
            );
        }
        assert_eq!(unsupported_version(b"SKUL\xba\xbe\x00\x03"), None);
        assert_eq!(unsupported_version(b"LUKS\xba\xbe\x00"), None);
    }

    #[test]
    fn detects_versions() {
        assert_eq!(detect(b"LUKS\xba\xbe\x00\x01"), Some(VolumeType::Luks1));
        assert_eq!(detect(b"LUKS\xba\xbe\x00\x02"), Some(VolumeType::Luks2));
        assert_eq!(detect(b"LUKS\xba\xbe\x00\x03"), None);
        assert_eq!(detect(b"SKUL\xba\xbe\x00\x02"), None);
        assert_eq!(detect(b"LUKS"), None);
    }
}
