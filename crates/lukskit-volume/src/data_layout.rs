//! Where the ciphertext of a volume lives and how it is numbered: a [`DataLayout`], what a
//! dm-crypt table line says (cipher, data offset, length, sector size, IV offset,
//! `iv_large_sectors`), read from a LUKS header or given for plain mode. The data path
//! ([`crate::data`]) and the segment tables ([`crate::segment`]) both build on it.

use crate::error::{DataError, ParamError, RequirementsError, Result, VolumeError};
use crate::volume::{Header, Volume};
use lukskit_crypto::spec::CipherSpec;

/// Where and how the ciphertext of a volume is laid out: the parameters of its dm-crypt
/// mapping.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DataLayout {
    /// dm-crypt cipher specification (`aes-xts-plain64`).
    pub cipher: String,
    /// Byte offset of the first ciphertext sector on the data device.
    pub offset: u64,
    /// Length of the data area in bytes; `None` = up to the end of the device.
    pub size: Option<u64>,
    /// Encryption sector size in bytes (512..=4096, a power of two).
    pub sector_size: u32,
    /// dm-crypt `iv_offset` in 512-byte sectors (LUKS2 `iv_tweak`, plain `--skip`).
    pub iv_offset: u64,
    /// dm-crypt's `iv_large_sectors` flag (IV counts encryption sectors, not 512-byte ones).
    pub iv_large_sectors: bool,
}

impl DataLayout {
    /// The layout of an opened LUKS volume.
    ///
    /// LUKS2 headers with requirements (online reencryption, …), several data segments or an
    /// integrity section are refused with a clear message.
    pub fn from_volume(vol: &Volume) -> Result<Self> {
        match Self::from_volume_with_integrity(vol)? {
            (_, Some(_)) => Err(DataError::Integrity.into()),
            (l, None) => Ok(l),
        }
    }

    /// [`DataLayout::from_volume`] that also takes a LUKS2 segment with an `integrity` object
    /// (authenticated encryption, which only the kernel's dm-integrity can open): the layout
    /// and the integrity type (`hmac(sha256)`, `aead`, ...).
    pub fn from_volume_with_integrity(vol: &Volume) -> Result<(Self, Option<String>)> {
        match vol.header() {
            Header::Luks1(h) => Ok((
                DataLayout {
                    cipher: format!("{}-{}", h.cipher_name, h.cipher_mode),
                    offset: u64::from(h.payload_offset) * 512,
                    size: None,
                    sector_size: 512,
                    iv_offset: 0,
                    iv_large_sectors: false,
                },
                None,
            )),
            Header::Luks2(h) => {
                let reqs = h.requirements();
                if !reqs.is_empty() {
                    return Err(RequirementsError::DataAccess(reqs).into());
                }
                let crypt: Vec<_> = h
                    .segments()?
                    .into_iter()
                    .filter(|s| !s.flags.iter().any(|f| f.starts_with("backup-")))
                    .collect();
                let seg = match crypt.as_slice() {
                    [s] if s.kind == lukskit_format::luks2::SegmentType::Crypt => s,
                    [s] => {
                        return Err(DataError::SegmentType {
                            kind: s.kind.to_string(),
                        }
                        .into())
                    }
                    [] => return Err(DataError::NoSegment.into()),
                    _ => return Err(DataError::SeveralSegments.into()),
                };
                let integrity = if seg.has_integrity {
                    Some(
                        h.segment_integrity(seg.id)
                            .ok_or(VolumeError::from(DataError::Integrity))?,
                    )
                } else {
                    None
                };
                Ok((
                    DataLayout {
                        cipher: seg.encryption.clone(),
                        offset: seg.offset,
                        size: seg.size,
                        sector_size: seg.sector_size,
                        iv_offset: seg.iv_tweak,
                        iv_large_sectors: false,
                    },
                    integrity,
                ))
            }
        }
    }

    /// Check the parameters that do not depend on the key or the device: cipher syntax,
    /// sector size, alignment of offset, IV offset and size.
    pub fn validate(&self) -> Result<()> {
        let ss = self.sector_size;
        if !(512..=4096).contains(&ss) || !ss.is_power_of_two() {
            return Err(ParamError::SectorSize.into());
        }
        CipherSpec::parse(&self.cipher)?;
        let step = u64::from(ss / 512);
        if !self.iv_offset.is_multiple_of(step) {
            return Err(DataError::IvOffsetAlignment {
                iv_offset: self.iv_offset,
                sector_size: ss,
            }
            .into());
        }
        if !self.offset.is_multiple_of(512) {
            return Err(DataError::OffsetAlignment.into());
        }
        if let Some(size) = self.size {
            if !size.is_multiple_of(u64::from(ss)) {
                return Err(DataError::SizeAlignment.into());
            }
        }
        Ok(())
    }

    /// The length of the data area on a device of `device_size` bytes: the fixed size (which
    /// must fit), or everything after the offset in whole 512-byte sectors, which must then
    /// be a multiple of the sector size (as the kernel requires).
    pub fn resolve_size(&self, device_size: u64) -> Result<u64> {
        let avail = device_size
            .checked_sub(self.offset)
            .ok_or(DataError::NoData)?
            / 512
            * 512;
        match self.size {
            Some(s) if s > avail => Err(DataError::TooSmall {
                needed: s,
                offset: self.offset,
                available: avail,
            }
            .into()),
            Some(s) => Ok(s),
            None if avail.is_multiple_of(u64::from(self.sector_size)) => Ok(avail),
            None => Err(DataError::SizeAlignment.into()),
        }
    }
}
