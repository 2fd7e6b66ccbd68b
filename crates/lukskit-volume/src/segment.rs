//! The segment table of a volume's data area: which plaintext bytes are encrypted with which
//! key and cipher, which pass through unencrypted, and which read as zeros.
//!
//! A [`SegmentTable`] is an ordered list of [`Segment`]s that covers plaintext bytes
//! `[0, size)` without gaps or overlaps, each of one kind:
//!
//! * **crypt** ([`CryptSegment`]): dm-crypt with a parsed cipher spec, its key, sector size,
//!   IV offset and `iv_large_sectors`, from a byte offset of the data device on;
//! * **linear**: the data device's bytes from an offset on, unencrypted (dm-linear);
//! * **zero**: reads give zeros, writes are accepted and dropped (dm-zero).
//!
//! It is what a device-mapper table says, and the kernel backend renders its table from it
//! (one target per segment) while [`crate::data::DataVolume`] dispatches I/O on it. A LUKS1
//! volume, a plain-mode volume and an ordinary LUKS2 volume have one crypt segment; a LUKS2
//! header in online re-encryption describes several (a hot zone under the new key, the rest
//! under the old key or unencrypted), which is why segments carry their own key.
//!
//! The table is checked once, when it is built ([`SegmentTable::new`]): segments contiguous
//! from 0, every boundary aligned to the largest encryption sector size of the table (the
//! logical block size the kernel gives the mapping, to which it requires every target to be
//! aligned), sector sizes, IV offsets and device offsets aligned. Code that holds a
//! `SegmentTable` can rely on all of that.

use crate::data_layout::DataLayout;
use crate::error::{DataError, ParamError, Result, SegmentError, VolumeError};
use crate::volume::Volume;
use lukskit_crypto::spec::CipherSpec;
use lukskit_crypto::SecretBuf;
use lukskit_format::luks2::Segment as Luks2Segment;

/// An encrypted segment: dm-crypt's parameters and the key.
#[derive(Debug, Clone)]
pub struct CryptSegment {
    /// The cipher (`aes-xts-plain64`).
    pub cipher: CipherSpec,
    /// The key (for XTS both halves).
    pub key: SecretBuf,
    /// Encryption sector size in bytes (512..=4096, a power of two).
    pub sector_size: u32,
    /// dm-crypt `iv_offset` in 512-byte sectors: the IV sector number of the segment's first
    /// byte (LUKS2 `iv_tweak`, plain `--skip`).
    pub iv_offset: u64,
    /// dm-crypt's `iv_large_sectors` (IVs count encryption sectors, not 512-byte ones).
    pub iv_large_sectors: bool,
    /// Byte offset of the segment's first ciphertext byte on the data device.
    pub device_offset: u64,
    /// LUKS2: the digest that verifies this segment's key (it names the key in the kernel
    /// keyring, `cryptsetup:<uuid>-d<digest>`); `None` for LUKS1, plain mode or unknown.
    pub digest: Option<u32>,
}

/// What a segment does with its bytes.
#[derive(Debug, Clone)]
pub enum SegmentKind {
    /// Encrypted (dm-crypt).
    Crypt(CryptSegment),
    /// Passed through unencrypted to the data device from `device_offset` (bytes) on
    /// (dm-linear).
    Linear {
        /// Byte offset on the data device.
        device_offset: u64,
    },
    /// Reads give zeros; writes and discards are accepted and dropped (dm-zero).
    Zero,
}

/// One segment: plaintext bytes `[start, start + len)` of the volume.
#[derive(Debug, Clone)]
pub struct Segment {
    /// First plaintext byte.
    pub start: u64,
    /// Length in bytes.
    pub len: u64,
    /// What the segment does.
    pub kind: SegmentKind,
}

impl Segment {
    /// One past the last plaintext byte.
    pub fn end(&self) -> u64 {
        self.start + self.len
    }

    /// The segment's device bytes as `(offset, len)`; `None` for a zero segment.
    pub fn device_extent(&self) -> Option<(u64, u64)> {
        match &self.kind {
            SegmentKind::Crypt(c) => Some((c.device_offset, self.len)),
            SegmentKind::Linear { device_offset } => Some((*device_offset, self.len)),
            SegmentKind::Zero => None,
        }
    }
}

/// A checked segment table (see the module documentation for what is checked).
#[derive(Debug, Clone)]
pub struct SegmentTable {
    segments: Vec<Segment>,
    size: u64,
    block_size: u32,
}

impl SegmentTable {
    /// Check `segments` and make them a table: at least one segment, the first starting at
    /// 0, each starting where the previous ends (a gap or an overlap is refused), none
    /// empty (but for a table of one segment: an empty data area), every boundary a multiple
    /// of the table's block size (the largest crypt sector size, at least 512), and for
    /// crypt segments a valid sector size and an IV offset that is a multiple of it (in
    /// 512-byte units); device offsets must be multiples of 512.
    /// Whether lukskit's engine can run a cipher with its key is decided where the data
    /// path keys it ([`crate::data::DataVolume`]): the kernel may map ciphers it cannot.
    pub fn new(segments: Vec<Segment>) -> Result<Self> {
        if segments.is_empty() {
            return Err(SegmentError::Empty.into());
        }
        let mut block = 512u32;
        for (i, s) in segments.iter().enumerate() {
            match &s.kind {
                SegmentKind::Crypt(c) => {
                    let ss = c.sector_size;
                    if !(512..=4096).contains(&ss) || !ss.is_power_of_two() {
                        return Err(ParamError::SectorSize.into());
                    }
                    if !c.iv_offset.is_multiple_of(u64::from(ss / 512)) {
                        return Err(SegmentError::IvOffsetAlignment {
                            index: i,
                            iv_offset: c.iv_offset,
                            sector_size: ss,
                        }
                        .into());
                    }
                    if !c.device_offset.is_multiple_of(512) {
                        return Err(DataError::OffsetAlignment.into());
                    }
                    block = block.max(ss);
                }
                SegmentKind::Linear { device_offset } => {
                    if !device_offset.is_multiple_of(512) {
                        return Err(DataError::OffsetAlignment.into());
                    }
                }
                SegmentKind::Zero => {}
            }
        }
        let mut next = 0u64;
        for (i, s) in segments.iter().enumerate() {
            if s.start > next {
                return Err(SegmentError::Gap {
                    index: i,
                    start: s.start,
                    expected: next,
                }
                .into());
            }
            if s.start < next {
                return Err(SegmentError::Overlap {
                    index: i,
                    start: s.start,
                    expected: next,
                }
                .into());
            }
            // An empty data area (an image that is only a header) is one empty segment.
            if s.len == 0 && segments.len() > 1 {
                return Err(SegmentError::EmptySegment { index: i }.into());
            }
            if !s.start.is_multiple_of(u64::from(block)) || !s.len.is_multiple_of(u64::from(block))
            {
                return Err(SegmentError::Unaligned {
                    index: i,
                    len: s.len,
                    start: s.start,
                    block,
                }
                .into());
            }
            if s.device_extent()
                .is_some_and(|(o, l)| o.checked_add(l).is_none())
            {
                return Err(SegmentError::BeyondAnyDevice { index: i }.into());
            }
            next = s.start.checked_add(s.len).ok_or(SegmentError::TooLarge)?;
        }
        Ok(SegmentTable {
            segments,
            size: next,
            block_size: block,
        })
    }

    /// The table of one crypt segment described by `layout` (LUKS1, plain mode, a LUKS2
    /// volume with one segment), on a data device of `device_size` bytes (which decides the
    /// size of a dynamic data area).
    pub fn from_layout(layout: &DataLayout, key: &[u8], device_size: u64) -> Result<Self> {
        layout.validate()?;
        let size = layout.resolve_size(device_size)?;
        SegmentTable::new(vec![Segment {
            start: 0,
            len: size,
            kind: SegmentKind::Crypt(CryptSegment {
                cipher: CipherSpec::parse(&layout.cipher)?,
                key: SecretBuf::from_slice(key),
                sector_size: layout.sector_size,
                iv_offset: layout.iv_offset,
                iv_large_sectors: layout.iv_large_sectors,
                device_offset: layout.offset,
                digest: None,
            }),
        }])
    }

    /// The table of a LUKS2 header's segments: every segment that is not a backup
    /// (`backup-*` flags), in the order of their numbers, each starting where the previous
    /// one ends (as cryptsetup lays them out in its dm table). `crypt` segments get the key
    /// `key_for(digest)` returns for the digest bound to them (`digests`: `(digest id,
    /// segment ids)`), `linear` segments pass through; a dynamic size (`None`) is the rest of
    /// the `device_size`-byte device (only the last segment may have one). Integrity
    /// protection and other segment types are refused.
    pub fn from_luks2(
        segments: &[Luks2Segment],
        digests: &[(u32, Vec<u32>)],
        mut key_for: impl FnMut(u32) -> Result<SecretBuf>,
        device_size: u64,
    ) -> Result<Self> {
        let live: Vec<&Luks2Segment> = segments
            .iter()
            .filter(|s| !s.flags.iter().any(|f| f.starts_with("backup-")))
            .collect();
        if live.is_empty() {
            return Err(DataError::NoSegment.into());
        }
        let mut out = Vec::with_capacity(live.len());
        let mut start = 0u64;
        for (n, s) in live.iter().enumerate() {
            let len = match s.size {
                Some(l) => l,
                None if n + 1 == live.len() => {
                    let avail = device_size
                        .checked_sub(s.offset)
                        .ok_or_else(|| VolumeError::from(DataError::NoData))?;
                    let block = u64::from(s.sector_size.max(512));
                    if !(avail / 512 * 512).is_multiple_of(block) {
                        return Err(DataError::SizeAlignment.into());
                    }
                    avail / 512 * 512
                }
                None => return Err(SegmentError::DynamicNotLast { id: s.id }.into()),
            };
            let kind = match s.kind.as_str() {
                "crypt" => {
                    if s.has_integrity {
                        return Err(DataError::Integrity.into());
                    }
                    let digest = digests
                        .iter()
                        .find(|(_, segs)| segs.contains(&s.id))
                        .map(|(d, _)| *d)
                        .ok_or(SegmentError::NoDigest { id: s.id })?;
                    SegmentKind::Crypt(CryptSegment {
                        cipher: CipherSpec::parse(&s.encryption)?,
                        key: key_for(digest)?,
                        sector_size: s.sector_size,
                        iv_offset: s.iv_tweak,
                        iv_large_sectors: false,
                        device_offset: s.offset,
                        digest: Some(digest),
                    })
                }
                "linear" => SegmentKind::Linear {
                    device_offset: s.offset,
                },
                other => {
                    return Err(DataError::SegmentType {
                        kind: other.to_string(),
                    }
                    .into())
                }
            };
            out.push(Segment { start, len, kind });
            start = start.checked_add(len).ok_or(SegmentError::TooLarge)?;
        }
        SegmentTable::new(out)
    }

    /// The table of an opened LUKS volume whose data device has `device_size` bytes, every
    /// crypt segment keyed with `key` (the volume key). A LUKS2 header with requirements
    /// (online re-encryption, …) is refused, as for [`DataLayout::from_volume`]; so a header
    /// with segments under two keys never gets here (its table is built with
    /// [`SegmentTable::from_luks2`] and the key of each digest).
    pub fn from_volume(vol: &Volume, key: &[u8], device_size: u64) -> Result<Self> {
        if let Some(h) = vol.luks2() {
            let live = h
                .segments()?
                .into_iter()
                .filter(|s| !s.flags.iter().any(|f| f.starts_with("backup-")))
                .count();
            if live > 1 && h.requirements().is_empty() {
                let digests: Vec<(u32, Vec<u32>)> = h
                    .digests()?
                    .into_iter()
                    .map(|d| (d.id, d.segments))
                    .collect();
                return Self::from_luks2(
                    &h.segments()?,
                    &digests,
                    |_| Ok(SecretBuf::from_slice(key)),
                    device_size,
                );
            }
        }
        Self::from_layout(&DataLayout::from_volume(vol)?, key, device_size)
    }

    /// The table cut to its first `size` bytes (segments starting at or after `size` go,
    /// the last one kept ends at `size`); a table no larger is returned as it is. The
    /// mapping of a decryption with a moved segment keeps the size of the old ciphertext
    /// while its last (dynamic) segment would reach the end of the device.
    pub fn truncated(self, size: u64) -> Result<Self> {
        if size >= self.size {
            return Ok(self);
        }
        let mut segments: Vec<Segment> = self
            .segments
            .into_iter()
            .filter(|s| s.start < size)
            .collect();
        if let Some(last) = segments.last_mut() {
            last.len = size - last.start;
        }
        SegmentTable::new(segments)
    }

    /// The segments, in order.
    pub fn segments(&self) -> &[Segment] {
        &self.segments
    }

    /// Plaintext size in bytes (the end of the last segment).
    pub fn size(&self) -> u64 {
        self.size
    }

    /// The table's block size: the largest crypt sector size (512 without crypt segments).
    /// Every segment boundary is a multiple of it; it is the logical block size of the
    /// kernel's mapping.
    pub fn block_size(&self) -> u32 {
        self.block_size
    }

    /// Check that every segment's device bytes lie inside a device of `device_size` bytes.
    pub fn check_device(&self, device_size: u64) -> Result<()> {
        for s in &self.segments {
            if let Some((o, l)) = s.device_extent() {
                if o + l > device_size {
                    return Err(SegmentError::BeyondDevice {
                        offset: o,
                        len: l,
                        device_size,
                    }
                    .into());
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn crypt(start: u64, len: u64, ss: u32, iv_offset: u64, key_len: usize) -> Segment {
        Segment {
            start,
            len,
            kind: SegmentKind::Crypt(CryptSegment {
                cipher: CipherSpec::parse("aes-xts-plain64").unwrap(),
                key: SecretBuf::from_vec(vec![7; key_len]),
                sector_size: ss,
                iv_offset,
                iv_large_sectors: false,
                device_offset: 1 << 20,
                digest: None,
            }),
        }
    }

    fn linear(start: u64, len: u64, device_offset: u64) -> Segment {
        Segment {
            start,
            len,
            kind: SegmentKind::Linear { device_offset },
        }
    }

    fn zero(start: u64, len: u64) -> Segment {
        Segment {
            start,
            len,
            kind: SegmentKind::Zero,
        }
    }

    fn err(segments: Vec<Segment>) -> String {
        SegmentTable::new(segments).unwrap_err().to_string()
    }

    #[test]
    fn truncated_keeps_the_first_bytes() {
        // A decryption with a moved segment at its end: the linear plaintext from 0 would
        // reach the end of the device; the mapping keeps the old ciphertext's size.
        let t = SegmentTable::new(vec![
            linear(0, 1 << 20, 0),
            linear(1 << 20, 9 << 20, 1 << 20),
        ])
        .unwrap()
        .truncated(6 << 20)
        .unwrap();
        assert_eq!(t.size(), 6 << 20);
        assert_eq!(t.segments().len(), 2);
        assert_eq!(t.segments()[1].len, 5 << 20);
        // Segments past the size go.
        let t = SegmentTable::new(vec![
            crypt(0, 1 << 20, 512, 0, 64),
            linear(1 << 20, 4 << 20, 0),
        ])
        .unwrap()
        .truncated(1 << 20)
        .unwrap();
        assert_eq!(t.segments().len(), 1);
        assert_eq!(t.size(), 1 << 20);
        // A table no larger is left as it is.
        let t = SegmentTable::new(vec![zero(0, 4096)])
            .unwrap()
            .truncated(8192)
            .unwrap();
        assert_eq!(t.size(), 4096);
    }

    #[test]
    fn contiguous_aligned_tables_are_accepted() {
        let t = SegmentTable::new(vec![
            crypt(0, 8192, 4096, 8, 64),
            linear(8192, 4096, 512),
            zero(12288, 4096),
            crypt(16384, 4096, 512, 3, 32),
        ])
        .unwrap();
        assert_eq!(t.size(), 20480);
        assert_eq!(t.block_size(), 4096);
        assert_eq!(t.segments().len(), 4);
        let z = SegmentTable::new(vec![zero(0, 512), linear(512, 512, 0)]).unwrap();
        assert_eq!((z.size(), z.block_size()), (1024, 512));
        assert!(t.check_device(2 << 20).is_ok());
        assert!(
            t.check_device((1 << 20) + 4096).is_err(),
            "crypt data past the end"
        );
    }

    #[test]
    fn gaps_overlaps_and_misalignment_are_refused() {
        assert!(err(vec![]).contains("at least one"));
        assert!(
            err(vec![zero(512, 512)]).contains("gap"),
            "not starting at 0"
        );
        assert!(err(vec![zero(0, 512), zero(1024, 512)]).contains("gap"));
        assert!(err(vec![zero(0, 1024), zero(512, 512)]).contains("overlapping"));
        assert!(err(vec![zero(0, 512), zero(512, 0)]).contains("empty"));
        assert_eq!(SegmentTable::new(vec![zero(0, 0)]).unwrap().size(), 0);
        // A 4096-byte crypt segment makes every boundary a multiple of 4096.
        assert!(err(vec![crypt(0, 4096, 4096, 0, 64), zero(4096, 512)]).contains("aligned"));
        assert!(err(vec![zero(0, 512), crypt(512, 4096, 4096, 0, 64)]).contains("aligned"));
        assert!(err(vec![zero(0, 1000)]).contains("aligned"));
        assert!(err(vec![crypt(0, 4096, 4096, 1, 64)]).contains("IV offset"));
        assert!(err(vec![crypt(0, 4096, 1000, 0, 64)]).contains("sector size"));
        assert!(err(vec![linear(0, 512, 100)]).contains("multiple of 512"));
        assert!(err(vec![linear(0, 1024, u64::MAX - 511)]).contains("beyond"));
    }

    fn luks2_seg(
        id: u32,
        kind: &str,
        offset: u64,
        size: Option<u64>,
        flags: &[&str],
    ) -> Luks2Segment {
        Luks2Segment {
            id,
            kind: lukskit_format::luks2::SegmentType::parse(kind),
            offset,
            size,
            iv_tweak: if kind == "crypt" {
                u64::from(id) * 8
            } else {
                0
            },
            encryption: if kind == "crypt" {
                "aes-xts-plain64".into()
            } else {
                String::new()
            },
            sector_size: if kind == "crypt" { 4096 } else { 0 },
            flags: flags.iter().map(|s| s.to_string()).collect(),
            has_integrity: false,
        }
    }

    /// A hot-zone layout (new key / old key / unencrypted) with a backup segment left out,
    /// each crypt segment keyed through its digest.
    #[test]
    fn luks2_segments_in_order_with_their_keys() {
        let segs = vec![
            luks2_seg(0, "crypt", 16 << 20, Some(1 << 20), &["in-reencryption"]),
            luks2_seg(1, "crypt", 17 << 20, Some(2 << 20), &[]),
            luks2_seg(2, "linear", 19 << 20, None, &[]),
            luks2_seg(3, "crypt", 16 << 20, None, &["backup-final"]),
        ];
        let digests = vec![(0u32, vec![1u32]), (1, vec![0, 3])];
        let t = SegmentTable::from_luks2(
            &segs,
            &digests,
            |d| Ok(SecretBuf::from_vec(vec![d as u8 + 1; 64])),
            20 << 20,
        )
        .unwrap();
        let s = t.segments();
        assert_eq!(s.len(), 3);
        assert_eq!((s[0].start, s[0].len), (0, 1 << 20));
        assert_eq!((s[1].start, s[1].len), (1 << 20, 2 << 20));
        assert_eq!((s[2].start, s[2].len), (3 << 20, 1 << 20));
        let SegmentKind::Crypt(c0) = &s[0].kind else {
            panic!("crypt")
        };
        let SegmentKind::Crypt(c1) = &s[1].kind else {
            panic!("crypt")
        };
        assert_eq!((c0.digest, c0.key.as_bytes()[0]), (Some(1), 2));
        assert_eq!((c1.digest, c1.key.as_bytes()[0]), (Some(0), 1));
        assert_eq!((c1.device_offset, c1.iv_offset), (17 << 20, 8));
        assert!(matches!(
            s[2].kind,
            SegmentKind::Linear {
                device_offset: 0x130_0000
            }
        ));
        // A dynamic segment that is not the last one, and unknown types, are refused.
        let bad = vec![
            luks2_seg(0, "crypt", 16 << 20, None, &[]),
            luks2_seg(1, "linear", 0, Some(4096), &[]),
        ];
        assert!(SegmentTable::from_luks2(&bad, &digests, |_| unreachable!(), 20 << 20).is_err());
        let odd = vec![luks2_seg(0, "striped", 0, Some(4096), &[])];
        assert!(SegmentTable::from_luks2(&odd, &digests, |_| unreachable!(), 20 << 20).is_err());
    }
}
