//! Which file system or volume signature a device holds besides LUKS, by magic bytes (the
//! names are blkid's: `ext2`, `ext3`, `ext4`, `xfs`, `vfat`, `swap`, `LVM2_member`). Used to
//! warn before a format, and to refuse what cryptsetup refuses through blkid: auto-recovery of
//! a LUKS2 header from its secondary copy when the device also carries another signature, and
//! an encryption sector size larger than a file system's block size ([`block_size_bytes`]).

use crate::device::Device;
use lukskit_format::io::Storage;

/// How much of the start of a device is looked at.
pub const PROBE_BYTES: usize = 64 * 1024;

/// The blkid name of the signature in the first [`PROBE_BYTES`] of `dev`, if one is
/// recognised (LUKS itself is not looked for).
pub fn detect_on(dev: &Device) -> Option<&'static str> {
    let len = dev.size().ok()?.min(PROBE_BYTES as u64) as usize;
    let mut buf = vec![0u8; len];
    dev.read_exact_at(&mut buf, 0).ok()?;
    detect_bytes(&buf)
}

fn at(buf: &[u8], off: usize, magic: &[u8]) -> bool {
    buf.get(off..off + magic.len()) == Some(magic)
}

fn le32(buf: &[u8], off: usize) -> u32 {
    buf.get(off..off + 4)
        .map_or(0, |b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
}

/// The signature in the first bytes of a device (LUKS itself is not looked for).
pub fn detect_bytes(buf: &[u8]) -> Option<&'static str> {
    if at(buf, 0, b"XFSB") {
        return Some("xfs");
    }
    // ext2/3/4: superblock at 1024, magic 0xEF53 at offset 56; the kind follows the feature
    // flags as blkid reads them.
    if at(buf, 1024 + 56, &[0x53, 0xEF]) {
        let compat = le32(buf, 1024 + 0x5C);
        let incompat = le32(buf, 1024 + 0x60);
        let ro_compat = le32(buf, 1024 + 0x64);
        const HAS_JOURNAL: u32 = 0x4;
        const EXT3_INCOMPAT: u32 = 0x2 | 0x4 | 0x10;
        const EXT3_RO_COMPAT: u32 = 0x1 | 0x2 | 0x4;
        if incompat & 0x8 == 0 {
            return Some(
                if incompat & !EXT3_INCOMPAT != 0 || ro_compat & !EXT3_RO_COMPAT != 0 {
                    "ext4"
                } else if compat & HAS_JOURNAL != 0 {
                    "ext3"
                } else {
                    "ext2"
                },
            );
        }
    }
    for page in [4096usize, 8192, 16384, 65536] {
        if at(buf, page - 10, b"SWAPSPACE2") || at(buf, page - 10, b"SWAP-SPACE") {
            return Some("swap");
        }
    }
    for sector in 0..4 {
        let o = sector * 512;
        // The label names its own sector (`sector_xl`), as blkid checks.
        let sector_xl = buf
            .get(o + 8..o + 16)
            .map(|b| b.iter().rev().fold(0u64, |a, &x| a << 8 | u64::from(x)));
        if at(buf, o, b"LABELONE")
            && at(buf, o + 24, b"LVM2 001")
            && sector_xl == Some(sector as u64)
        {
            return Some("LVM2_member");
        }
    }
    let fat_name = at(buf, 54, b"FAT12   ")
        || at(buf, 54, b"FAT16   ")
        || at(buf, 54, b"FAT     ")
        || at(buf, 82, b"FAT32   ");
    let sector_size = buf
        .get(11..13)
        .map_or(0, |b| u16::from_le_bytes([b[0], b[1]]));
    if fat_name
        && at(buf, 510, &[0x55, 0xAA])
        && (512..=4096).contains(&sector_size)
        && sector_size.is_power_of_two()
    {
        return Some("vfat");
    }
    None
}

/// A file system found by [`block_size_bytes`]: blkid's name for it and the block size
/// blkid reports as its `BLOCK_SIZE` (the smallest unit it writes: for XFS its sector size,
/// not its larger file system block).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FsBlockSize {
    /// blkid's `TYPE` (`ext4`, `xfs`, `vfat`, ...).
    pub name: &'static str,
    /// blkid's `BLOCK_SIZE` in bytes.
    pub block_size: u32,
}

/// The file system in the first bytes of a device and its block size, as blkid reports
/// `BLOCK_SIZE`: ext2/3/4 `1024 << s_log_block_size`, XFS `sb_sectsize`, FAT its bytes per
/// sector. Implausible values (not a power of two from 512 to 64 KiB) are no block size.
pub fn block_size_bytes(buf: &[u8]) -> Option<FsBlockSize> {
    let name = detect_bytes(buf)?;
    let block_size = match name {
        "xfs" => buf
            .get(102..104)
            .map(|b| u32::from(u16::from_be_bytes([b[0], b[1]])))?,
        "ext2" | "ext3" | "ext4" => 1024u32.checked_shl(le32(buf, 1024 + 24))?,
        "vfat" => buf
            .get(11..13)
            .map(|b| u32::from(u16::from_le_bytes([b[0], b[1]])))?,
        _ => return None,
    };
    ((512..=65536).contains(&block_size) && block_size.is_power_of_two())
        .then_some(FsBlockSize { name, block_size })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nothing_on_zeros() {
        assert_eq!(detect_bytes(&[0u8; 8192]), None);
    }

    #[test]
    fn lvm_label_in_second_sector() {
        let mut b = vec![0u8; 4096];
        b[512..520].copy_from_slice(b"LABELONE");
        b[520] = 1;
        b[536..544].copy_from_slice(b"LVM2 001");
        assert_eq!(detect_bytes(&b), Some("LVM2_member"));
    }

    #[test]
    fn block_sizes_as_blkid_reads_them() {
        let mut xfs = vec![0u8; 4096];
        xfs[..4].copy_from_slice(b"XFSB");
        xfs[4..8].copy_from_slice(&4096u32.to_be_bytes());
        xfs[102..104].copy_from_slice(&512u16.to_be_bytes());
        assert_eq!(
            block_size_bytes(&xfs),
            Some(FsBlockSize {
                name: "xfs",
                block_size: 512
            })
        );
        let mut ext = vec![0u8; 4096];
        ext[1024 + 56..1024 + 58].copy_from_slice(&[0x53, 0xEF]);
        ext[1024 + 24] = 2;
        assert_eq!(block_size_bytes(&ext).map(|f| f.block_size), Some(4096));
        ext[1024 + 24] = 40;
        assert_eq!(block_size_bytes(&ext), None);
    }
}
