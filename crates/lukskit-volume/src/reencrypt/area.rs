//! The `reencrypt` keyslot area: the resilience asked for and the protection it gives the
//! area, and where in the keyslots area a new one fits.

use crate::error::{KeyslotError, Result};
use lukskit_format::luks2::edit::AreaProtection;
use lukskit_format::luks2::Luks2Header;

/// Resilience requested when initializing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ResilienceChoice {
    /// `checksum` with this hash (`sha256` by default).
    Checksum(String),
    /// `journal`.
    Journal,
    /// `none`.
    None,
    /// `datashift` by this many bytes (mode
    /// [`Mode::Reencrypt`](super::context::Mode::Reencrypt) with `--reduce-device-size`, as
    /// cryptsetup's `reencrypt_luks2_init` with a negative data shift): the new data offset
    /// lies this much further, the last bytes of the data are given up, and the run goes
    /// backward in hot zones of the shift, each written where it was not read.
    Datashift(u64),
}

/// The protection of a `reencrypt` keyslot area for `choice`: its type, the checksums'
/// hash and block (`alignment`), and the data shift's `shift_size`.
pub(super) fn area_protection(
    choice: &ResilienceChoice,
    alignment: u64,
) -> Result<(AreaProtection, Option<u64>)> {
    Ok(match choice {
        ResilienceChoice::Checksum(h) => {
            let alg = lukskit_crypto::hash::HashAlg::from_name(h)?;
            let protection = AreaProtection::Checksum {
                hash: alg.name().into(),
                sector_size: alignment,
            };
            (protection, None)
        }
        ResilienceChoice::Journal => (AreaProtection::Journal, None),
        ResilienceChoice::None => (AreaProtection::None, None),
        ResilienceChoice::Datashift(shift) => (AreaProtection::Datashift, Some(*shift)),
    })
}

/// The free gaps of the keyslots area between the keyslots' areas, in order: (offset,
/// length), zero-length ones included (where two areas touch).
fn area_gaps(hdr: &Luks2Header) -> Result<Vec<(u64, u64)>> {
    let start = 2 * hdr.metadata_size();
    let end = start + hdr.keyslots_size()?;
    let mut used: Vec<(u64, u64)> = hdr
        .keyslots()?
        .iter()
        .map(|k| (k.area_offset, k.area_offset + k.area_size))
        .collect();
    used.sort();
    let mut gaps = Vec::with_capacity(used.len() + 1);
    let mut pos = start;
    for (a, b) in used {
        if a >= pos {
            gaps.push((pos, a - pos));
        }
        pos = pos.max(b);
    }
    if end >= pos {
        gaps.push((pos, end - pos));
    }
    Ok(gaps)
}

/// The largest free gap in the keyslots area, the first of equal ones
/// (`LUKS2_find_area_max_gap`).
pub(super) fn max_area_gap(hdr: &Luks2Header) -> Result<(u64, u64)> {
    let mut best = (0u64, 0u64);
    for gap in area_gaps(hdr)? {
        if gap.1 > best.1 {
            best = gap;
        }
    }
    if best.1 == 0 {
        return Err(KeyslotError::NoSpace.into());
    }
    Ok(best)
}

/// The first gap of the keyslots area that holds `len` bytes (`LUKS2_find_area_gap`).
pub(super) fn area_gap(hdr: &Luks2Header, len: u64) -> Result<u64> {
    area_gaps(hdr)?
        .into_iter()
        .find(|&(_, n)| n >= len)
        .map(|(pos, _)| pos)
        .ok_or_else(|| KeyslotError::NoSpace.into())
}
