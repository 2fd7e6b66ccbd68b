//! The segment table of a LUKS2 header in re-encryption, or just after one: every live
//! segment of the header over the data device, each crypt segment with the key of its
//! digest. What a mapping of the volume (kernel or userspace) is made from.

use crate::Result;
use lukskit_format::luks2::Luks2Header;
use lukskit_volume::reencrypt::{Context, Keys};
use lukskit_volume::segment::SegmentTable;
use lukskit_volume::{ReencryptError as EngineError, VolumeError};

/// The live segments of `hdr` over a data device of `device_size` bytes, each crypt segment
/// with the key of its digest: the new key for the new digest, the old key for the old one.
/// A header whose re-encryption has finished (no re-encryption metadata left) has one
/// digest, whose key is the one of `keys` there is (the new one after a re-encryption or an
/// encryption). A crypt segment whose key is not in `keys` fails with the engine's
/// `KeysMissing`.
pub fn table(hdr: &Luks2Header, keys: &Keys, device_size: u64) -> Result<SegmentTable> {
    let ctx = Context::load(hdr).ok();
    let digests: Vec<(u32, Vec<u32>)> = hdr
        .digests()
        .map_err(VolumeError::from)?
        .into_iter()
        .map(|d| (d.id, d.segments))
        .collect();
    let key_for = |d: u32| {
        let k = match &ctx {
            Some(c) if c.digest_new == Some(d) => keys.new.as_ref(),
            Some(c) if c.digest_old == Some(d) => keys.old.as_ref(),
            Some(_) => None,
            None => keys.new.as_ref().or(keys.old.as_ref()),
        };
        k.cloned()
            .ok_or_else(|| VolumeError::from(EngineError::KeysMissing))
    };
    Ok(SegmentTable::from_luks2(
        &hdr.segments().map_err(VolumeError::from)?,
        &digests,
        key_for,
        device_size,
    )?)
}
