//! The mapping of a BitLocker volume, as cryptsetup 2.6.1's `_activate` builds its dm table:
//!
//! * zero segments over the three FVE metadata areas (64 KiB each) and over the encrypted
//!   copy of the original volume header;
//! * that copy decrypted at the start of the volume (a crypt segment from the volume
//!   header offset, IV sectors counted from there);
//! * crypt segments filling every gap, each with IV sector = its own offset (512-byte
//!   units, `iv_large_sectors` for 4096-byte sectors);
//!
//! sorted by offset. cryptsetup gives up past 10 segments; a table whose segments overlap
//! (hostile metadata) is refused by [`SegmentTable::new`] as the kernel refuses it.

use super::header::{Metadata, FVE_METADATA_SIZE};
use crate::formats::OtherFormatError;
use crate::segment::{CryptSegment, Segment, SegmentKind, SegmentTable};
use crate::Result;
use lukskit_crypto::spec::CipherSpec;
use lukskit_crypto::SecretBuf;
use lukskit_format::VolumeType;

/// cryptsetup's limit of segments (`MAX_BITLK_SEGMENTS`).
const MAX_SEGMENTS: usize = 10;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Seg {
    /// Start, in 512-byte sectors.
    offset: u64,
    /// Length, in 512-byte sectors.
    length: u64,
    /// IV offset (and device offset), in 512-byte sectors; `None`: a zero segment.
    crypt_from: Option<u64>,
}

fn invalid(why: impl Into<String>) -> crate::VolumeError {
    OtherFormatError::Invalid {
        volume_type: VolumeType::Bitlk,
        why: why.into(),
    }
    .into()
}

/// The segments (in 512-byte sectors) of a device of `dev_sectors` sectors.
fn segments(md: &Metadata, dev_sectors: u64) -> Result<Vec<Seg>> {
    let mut segs: Vec<Seg> = md
        .metadata_offsets
        .iter()
        .map(|o| Seg {
            offset: o / 512,
            length: FVE_METADATA_SIZE / 512,
            crypt_from: None,
        })
        .collect();
    let header_len = md.volume_header_size / 512;
    segs.push(Seg {
        offset: md.volume_header_offset / 512,
        length: header_len,
        crypt_from: None,
    });
    segs.push(Seg {
        offset: 0,
        length: header_len,
        crypt_from: Some(md.volume_header_offset / 512),
    });
    let end = |s: &Seg| {
        s.offset
            .checked_add(s.length)
            .ok_or_else(|| invalid("a metadata area reaches beyond any device"))
    };
    // Fill the gaps between the segments with crypt segments (cryptsetup's loop; it
    // would loop for ever on some hostile layouts, lukskit stops).
    let mut last = header_len;
    for _ in 0..4 * MAX_SEGMENTS {
        let mut next_start = dev_sectors;
        let mut next_end = dev_sectors;
        for s in &segs {
            let e = end(s)?;
            if e < next_start && e >= last {
                next_start = e;
            }
        }
        for s in &segs {
            if s.offset < next_end && s.offset >= next_start {
                next_end = s.offset;
            }
        }
        if next_end == next_start {
            last = next_end
                .checked_add(1)
                .ok_or_else(|| invalid("no room for data"))?;
            continue;
        }
        segs.push(Seg {
            offset: next_start,
            length: next_end - next_start,
            crypt_from: Some(next_start),
        });
        last = next_end;
        if next_end == dev_sectors {
            segs.sort_by_key(|s| s.offset);
            return Ok(segs);
        }
        if segs.len() == MAX_SEGMENTS {
            return Err(invalid(
                "Failed to calculate number of dm-crypt segments for open.",
            ));
        }
    }
    Err(invalid(
        "Failed to calculate number of dm-crypt segments for open.",
    ))
}

/// The segment table of the volume on a device of `dev_size` bytes, keyed with `fvek`.
pub fn table(md: &Metadata, fvek: &SecretBuf, dev_size: u64) -> Result<SegmentTable> {
    let cipher = CipherSpec::parse(&md.cipher.spec())?;
    let sector_size = u32::from(md.sector_size);
    let mut out = Vec::new();
    for s in segments(md, dev_size / 512)? {
        let start = s.offset * 512;
        let len = s
            .length
            .checked_mul(512)
            .ok_or_else(|| invalid("a segment is too large"))?;
        let kind = match s.crypt_from {
            None => SegmentKind::Zero,
            Some(from) => SegmentKind::Crypt(CryptSegment {
                cipher: cipher.clone(),
                key: fvek.clone(),
                sector_size,
                iv_offset: from,
                iv_large_sectors: sector_size != 512,
                device_offset: from
                    .checked_mul(512)
                    .ok_or_else(|| invalid("a segment is too large"))?,
                digest: None,
            }),
        };
        out.push(Segment { start, len, kind });
    }
    SegmentTable::new(out)
}

#[cfg(test)]
mod tests {
    use super::super::header::{DataCipher, EncryptionType, Guid};
    use super::*;

    fn md(offsets: [u64; 3], vh: (u64, u64)) -> Metadata {
        Metadata {
            togo: false,
            sector_size: 512,
            encryption_type: EncryptionType::Normal,
            metadata_offsets: offsets,
            state_normal: true,
            states: (4, 4),
            volume_size: 0,
            version: 2,
            cipher: DataCipher {
                mode: "xts-plain64",
                key_bits: 256,
            },
            guid: Guid([0; 16]),
            creation_time: 0,
            description: None,
            volume_header_offset: vh.0,
            volume_header_size: vh.1,
            vmks: vec![],
            fvek: None,
        }
    }

    /// The table of the shared aes-xts image as cryptsetup 2.6.1 maps it.
    #[test]
    fn table_of_a_windows_volume() {
        let m = md([35_213_312, 46_256_128, 57_909_248], (35_278_848, 8192));
        let s = segments(&m, 104_857_600 / 512).unwrap();
        let want = [
            (0, 16, Some(68_904)),
            (16, 68_760, Some(16)),
            (68_776, 128, None),
            (68_904, 16, None),
            (68_920, 21_424, Some(68_920)),
            (90_344, 128, None),
            (90_472, 22_632, Some(90_472)),
            (113_104, 128, None),
            (113_232, 91_568, Some(113_232)),
        ];
        let got: Vec<_> = s
            .iter()
            .map(|s| (s.offset, s.length, s.crypt_from))
            .collect();
        assert_eq!(got, want);
        let t = table(&m, &SecretBuf::zeroed(32), 104_857_600).unwrap();
        assert_eq!(t.size(), 104_857_600);
    }

    #[test]
    fn hostile_layouts_are_refused_not_looped() {
        // A metadata area at the very end, overlapping areas, offsets at u64::MAX.
        for (o, vh) in [
            ([104_857_600 - 65_536, 0, 0], (8192, 8192)),
            ([4096, 4096, 4096], (4096, 8192)),
            ([u64::MAX, u64::MAX, u64::MAX], (u64::MAX, u64::MAX)),
            ([0, 0, 0], (0, 0)),
        ] {
            let m = md(o, vh);
            assert!(
                table(&m, &SecretBuf::zeroed(32), 104_857_600).is_err(),
                "{o:?}"
            );
        }
    }
}
