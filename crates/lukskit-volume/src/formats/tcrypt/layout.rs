//! The data layout of an unlocked volume, as cryptsetup maps it (`TCRYPT_get_data_offset`,
//! `TCRYPT_get_iv_offset`, `TCRYPT_activate`): where the data starts, the IV offset, the
//! size, and one table per cipher of the chain, the last cipher on the device and each
//! earlier one on the table below it (cryptsetup's `NAME_2`, `NAME_1`, `NAME`).

use super::ciphers::{layer_key, Mode};
use super::{Loaded, HIDDEN_OFFSET_OLD_FROM_END};
use crate::formats::OtherFormatError;
use crate::segment::{CryptSegment, Segment, SegmentKind, SegmentTable};
use crate::Result;
use lukskit_crypto::spec::CipherSpec;
use lukskit_format::VolumeType;

const SECTOR: u64 = 512;

fn invalid(why: String) -> crate::VolumeError {
    OtherFormatError::Invalid {
        volume_type: VolumeType::Tcrypt,
        why,
    }
    .into()
}

/// The hidden volume's start by TrueCrypt's old rule: the end of the device, less the hidden
/// volume, less the old hidden header area.
fn old_hidden_start(l: &Loaded) -> Result<u64> {
    l.metadata_size
        .checked_sub(l.header.hidden_volume_size)
        .and_then(|x| x.checked_sub(HIDDEN_OFFSET_OLD_FROM_END))
        .map(|x| x / SECTOR)
        .ok_or_else(|| {
            invalid(format!(
                "hidden volume size {} larger than the device",
                l.header.hidden_volume_size
            ))
        })
}

/// `TCRYPT_get_data_offset` in 512-byte sectors (system encryption given a partition:
/// 0, the partition is the data).
pub fn data_offset(l: &Loaded) -> Result<u64> {
    let h = &l.header;
    let o = &l.options;
    if o.system {
        // Given a partition, the mapping is of the partition itself.
        return Ok(match l.system_partition_start {
            Some(_) => 0,
            None => h.mk_offset / SECTOR,
        });
    }
    match l.cascade.mode {
        Mode::Xts => {
            if h.version < 3 {
                return Ok(1);
            }
            if o.hidden {
                if h.version > 3 {
                    return Ok(h.mk_offset / SECTOR);
                }
                return old_hidden_start(l);
            }
        }
        _ if o.hidden => return old_hidden_start(l),
        _ => {}
    }
    Ok(h.mk_offset / SECTOR)
}

/// `TCRYPT_get_iv_offset` in 512-byte sectors.
pub fn iv_offset(l: &Loaded) -> Result<u64> {
    let iv = match l.cascade.mode {
        Mode::Xts => data_offset(l)?,
        Mode::Lrw => 0,
        _ => l.header.mk_offset / SECTOR,
    };
    // System encryption counts from the whole disk's start.
    match (l.options.system, l.system_partition_start) {
        (true, Some(start)) => iv
            .checked_add(start)
            .ok_or_else(|| invalid(format!("IV offset {iv} + partition start {start}"))),
        _ => Ok(iv),
    }
}

/// The stacked tables, the one on the data device (`device`, of `device_size` bytes) first.
pub fn layers(l: &Loaded, device: &str, device_size: u64) -> Result<Vec<SegmentTable>> {
    let h = &l.header;
    let c = l.cascade;
    if !h.sector_size.is_multiple_of(512) {
        return Err(OtherFormatError::Unsupported(format!(
            "Activation is not supported for {} sector size.",
            h.sector_size
        ))
        .into());
    }
    match c.mode {
        Mode::CbciTcrypt | Mode::CbcTcrypt => {
            return Err(OtherFormatError::Unsupported(
                "Kernel does not support activation for this TCRYPT legacy mode.".into(),
            )
            .into())
        }
        Mode::Xts | Mode::Lrw | Mode::CbcTcw => {}
    }
    let offset = data_offset(l)?;
    let iv = iv_offset(l)?;
    let dev_sectors = device_size / SECTOR;
    let size = if l.options.system {
        0
    } else if l.options.hidden {
        h.hidden_volume_size / SECTOR
    } else {
        h.volume_size / SECTOR
    };
    // No size (system encryption, old headers without one): the rest of the device, as
    // cryptsetup's device_block_adjust makes it.
    let size = match size {
        0 => dev_sectors.saturating_sub(offset),
        s => s,
    };
    if offset.checked_add(size).is_none_or(|end| end > dev_sectors) {
        return Err(OtherFormatError::DeviceTooSmall {
            path: device.to_owned(),
        }
        .into());
    }
    if size == 0 {
        return Err(invalid("zero data size".into()));
    }
    let len = size * SECTOR;
    let mut tables = Vec::with_capacity(c.algs.len());
    for (i, alg) in c.algs.iter().enumerate().rev() {
        // TCRYPT_copy_key: XTS and LRW keys are the cipher's; tcw's dm-crypt key carries the
        // IV seed and the whitening after the cipher key (`key_extra`), as cryptsetup's
        // volume key of `key_size + key_extra_size` bytes.
        let key = layer_key(alg, c.mode, h.keys.as_bytes());
        let spec = CipherSpec::parse(&format!("{}-{}", alg.name, c.mode.name()))?;
        let bottom = i + 1 == c.algs.len();
        tables.push(SegmentTable::new(vec![Segment {
            start: 0,
            len,
            kind: SegmentKind::Crypt(CryptSegment {
                cipher: spec,
                key: lukskit_crypto::SecretBuf::from_slice(
                    &key.as_bytes()[..alg.key_size + alg.key_extra],
                ),
                sector_size: 512,
                iv_offset: iv,
                iv_large_sectors: false,
                device_offset: if bottom { offset * SECTOR } else { 0 },
                digest: None,
            }),
        }])?);
    }
    Ok(tables)
}
