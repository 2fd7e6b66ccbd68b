//! The unencrypted Core Storage structures: the physical volume header (first 512 bytes), the
//! disk label block (0x0011) and its volume groups descriptor, and the metadata block header
//! shared by every 8 KiB metadata block (cryptsetup's `struct volume_header`,
//! `metadata_block_0x0011`, `volume_groups_descriptor`, `metadata_block_header`).

/// Size of the physical volume header.
pub const VOLUME_HEADER_SIZE: usize = 512;
/// Size of one metadata block.
pub const MD_BLOCK_SIZE: usize = 8192;
/// cryptsetup reads no metadata block that starts past 1 GiB (`FVAULT2_MAX_OFF`).
pub const MAX_OFFSET: u64 = 1024 * 1024 * 1024;
/// Size of the volume groups descriptor.
pub const VOL_GROUPS_DESCRIPTOR_SIZE: usize = 40;
/// Byte offset of the big-endian Core Storage magic `CS` in the volume header.
pub const MAGIC_OFFSET: usize = 88;
/// The magic.
pub const MAGIC: &[u8; 2] = b"CS";

/// A little-endian `u16` at `off` of a buffer known to be long enough.
pub(crate) fn le16(b: &[u8], off: usize) -> u16 {
    u16::from_le_bytes([b[off], b[off + 1]])
}

/// A little-endian `u32` at `off` of a buffer known to be long enough.
pub(crate) fn le32(b: &[u8], off: usize) -> u32 {
    u32::from_le_bytes([b[off], b[off + 1], b[off + 2], b[off + 3]])
}

/// A little-endian `u64` at `off` of a buffer known to be long enough.
pub(crate) fn le64(b: &[u8], off: usize) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[off..off + 8]);
    u64::from_le_bytes(a)
}

use crate::formats::crc::crc32c;

/// Whether a block (at least 8 bytes) starts with a valid checksum of the rest: seed
/// 0xffffffff and the CRC-32C of the bytes after the 8-byte checksum (`_check_crc`).
pub fn crc_ok(block: &[u8]) -> bool {
    block.len() >= 8
        && le32(block, 4) == 0xffff_ffff
        && crc32c(0xffff_ffff, &block[8..]) == le32(block, 0)
}

/// Why the unencrypted metadata was refused (cryptsetup logs these only with `--debug`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HeaderError {
    /// A block's checksum (or its seed) is wrong.
    Crc(&'static str),
    /// The volume header's version is not 1 (cryptsetup: "Unsupported FVAULT2 version %u.").
    Version(u16),
    /// No Core Storage magic.
    Magic,
    /// The metadata key is not an AES-128 key.
    KeySize(u32),
    /// An offset past what cryptsetup reads, or one that overflows.
    Offset,
}

impl std::fmt::Display for HeaderError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            HeaderError::Crc(what) => write!(f, "CRC mismatch of the {what}"),
            HeaderError::Version(v) => write!(f, "Unsupported FVAULT2 version {v}."),
            HeaderError::Magic => f.write_str("invalid Core Storage magic bytes"),
            HeaderError::KeySize(s) => write!(f, "unsupported AES key size: {s} bytes"),
            HeaderError::Offset => f.write_str("device offset overflow"),
        }
    }
}

/// The physical volume header, as far as cryptsetup uses it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VolumeHeader {
    /// Size of a Core Storage block in bytes (block offsets are multiplied by it).
    pub block_size: u32,
    /// Block offset of the disk label block.
    pub disklabel_block: u64,
    /// AES-128 key of the encrypted metadata (the first half of its XTS key).
    pub key_data: [u8; 16],
    /// The physical volume UUID (binary; the second half of the metadata's XTS key).
    pub ph_vol_uuid: [u8; 16],
}

impl VolumeHeader {
    /// Parse and check the 512-byte volume header in cryptsetup's order: checksum, version,
    /// magic, key size.
    pub fn parse(b: &[u8; VOLUME_HEADER_SIZE]) -> Result<Self, HeaderError> {
        if !crc_ok(b) {
            return Err(HeaderError::Crc("volume header"));
        }
        let version = le16(b, 8);
        if version != 1 {
            return Err(HeaderError::Version(version));
        }
        if &b[MAGIC_OFFSET..MAGIC_OFFSET + 2] != MAGIC {
            return Err(HeaderError::Magic);
        }
        let key_size = le32(b, 168);
        if key_size != 16 {
            return Err(HeaderError::KeySize(key_size));
        }
        let mut key_data = [0u8; 16];
        key_data.copy_from_slice(&b[176..192]);
        let mut ph_vol_uuid = [0u8; 16];
        ph_vol_uuid.copy_from_slice(&b[304..320]);
        Ok(VolumeHeader {
            block_size: le32(b, 96),
            disklabel_block: le64(b, 104),
            key_data,
            ph_vol_uuid,
        })
    }

    /// Byte offset of a block number, refused past [`MAX_OFFSET`] or on overflow.
    pub fn block_offset(&self, block: u64) -> Result<u64, HeaderError> {
        block
            .checked_mul(u64::from(self.block_size))
            .filter(|&o| o <= MAX_OFFSET)
            .ok_or(HeaderError::Offset)
    }
}

/// The disk label block (type 0x0011): where its volume groups descriptor is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DiskLabel {
    /// Offset of the volume groups descriptor from the disk label block's start.
    pub vol_groups_descriptor_offset: u32,
}

impl DiskLabel {
    /// Parse the disk label block (checksum checked, as cryptsetup).
    pub fn parse(b: &[u8; MD_BLOCK_SIZE]) -> Result<Self, HeaderError> {
        if !crc_ok(b) {
            return Err(HeaderError::Crc("disk label"));
        }
        Ok(DiskLabel {
            vol_groups_descriptor_offset: le32(b, 220),
        })
    }
}

/// The volume groups descriptor: where the encrypted metadata is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VolGroupsDescriptor {
    /// Number of encrypted metadata blocks.
    pub enc_md_blocks: u64,
    /// Block offset of the encrypted metadata.
    pub enc_md_block: u64,
}

impl VolGroupsDescriptor {
    /// Parse the 40-byte descriptor.
    pub fn parse(b: &[u8; VOL_GROUPS_DESCRIPTOR_SIZE]) -> Self {
        VolGroupsDescriptor {
            enc_md_blocks: le64(b, 8),
            enc_md_block: le64(b, 32),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc32c_check_value() {
        // The CRC-32C check value of "123456789" (with the usual final inversion).
        assert_eq!(!crc32c(0xffff_ffff, b"123456789"), 0xE306_9283);
    }

    #[test]
    fn hostile_headers_are_refused_not_panicked_on() {
        let mut b = [0u8; VOLUME_HEADER_SIZE];
        assert_eq!(
            VolumeHeader::parse(&b),
            Err(HeaderError::Crc("volume header"))
        );
        let fix = |b: &mut [u8; VOLUME_HEADER_SIZE]| {
            b[4..8].copy_from_slice(&0xffff_ffffu32.to_le_bytes());
            let c = crc32c(0xffff_ffff, &b[8..]);
            b[0..4].copy_from_slice(&c.to_le_bytes());
        };
        fix(&mut b);
        assert_eq!(VolumeHeader::parse(&b), Err(HeaderError::Version(0)));
        b[8] = 1;
        fix(&mut b);
        assert_eq!(VolumeHeader::parse(&b), Err(HeaderError::Magic));
        b[88..90].copy_from_slice(b"CS");
        b[168] = 32;
        fix(&mut b);
        assert_eq!(VolumeHeader::parse(&b), Err(HeaderError::KeySize(32)));
        b[168] = 16;
        b[96..100].copy_from_slice(&u32::MAX.to_le_bytes());
        b[104..112].copy_from_slice(&u64::MAX.to_le_bytes());
        fix(&mut b);
        let h = VolumeHeader::parse(&b).unwrap();
        assert_eq!(h.block_offset(h.disklabel_block), Err(HeaderError::Offset));
        assert_eq!(h.block_offset(1), Err(HeaderError::Offset));
        assert_eq!(h.block_offset(0), Ok(0));
    }
}
