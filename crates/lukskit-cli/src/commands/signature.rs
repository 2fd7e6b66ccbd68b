//! Which file system or volume signature a device already holds, by magic bytes, so that
//! luksFormat can warn as cryptsetup (through blkid) does: "WARNING: Device X already contains
//! a 'ext4' superblock signature.". Names are blkid's ([`lukskit_volume::signature`]).

use std::io::Read;

/// The blkid name of the signature at the start of `path`, if lukskit recognises one:
/// `crypto_LUKS`, `ext2`, `ext3`, `ext4`, `xfs`, `vfat`, `swap` or `LVM2_member`.
pub fn detect(path: &str) -> Option<&'static str> {
    if matches!(lukskit_volume::volume::probe(path), Ok(Some(_))) {
        return Some("crypto_LUKS");
    }
    let mut buf = Vec::with_capacity(lukskit_volume::signature::PROBE_BYTES);
    std::fs::File::open(path)
        .ok()?
        .take(lukskit_volume::signature::PROBE_BYTES as u64)
        .read_to_end(&mut buf)
        .ok()?;
    lukskit_volume::signature::detect_bytes(&buf)
}
