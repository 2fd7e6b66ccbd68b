//! loop-AES (cryptsetup's `lib/loopaes/loopaes.c`): no metadata on the device; the keys come
//! from a key file ([`keyfile`]). One key: `aes-cbc-plain64`; 64 keys: `aes:64-cbc-lmk`; 65
//! keys: the same, the 65th key being the `lmk` IV seed. Data from `--offset` (512-byte
//! sectors) to the device's end, IVs from `--skip` on, 512-byte sectors.

pub mod keyfile;

use super::{Description, OnDiskFormat, OtherFormatError, Probe, UnlockRequest, Unlocked};
use crate::error::Result;
use crate::segment::{CryptSegment, Segment, SegmentKind, SegmentTable};
use lukskit_crypto::spec::CipherSpec;
use lukskit_format::VolumeType;

/// loop-AES.
pub struct Loopaes;

/// cryptsetup's default base cipher (`DEFAULT_LOOPAES_CIPHER`).
pub const DEFAULT_CIPHER: &str = "aes";

/// cryptsetup's default key size (`DEFAULT_LOOPAES_KEYBITS`).
pub const DEFAULT_KEY_BITS: u32 = 128;

/// The dm-crypt cipher of a key file with `count` keys of base cipher `cipher`.
pub fn cipher_spec(cipher: &str, count: usize) -> String {
    if count == 1 {
        format!("{cipher}-cbc-plain64")
    } else {
        format!("{cipher}:64-cbc-lmk")
    }
}

/// The layout: one crypt segment from `offset` sectors to the end of a `device_size`-byte
/// device, IV offset `skip`.
pub fn layout(
    spec: &str,
    key: &[u8],
    offset: u64,
    skip: u64,
    device_size: u64,
) -> Result<SegmentTable> {
    let start = offset
        .checked_mul(512)
        .filter(|&s| s < device_size)
        .ok_or_else(|| {
            OtherFormatError::Unsupported("Requested offset is beyond real size of device.".into())
        })?;
    let len = (device_size - start) / 512 * 512;
    SegmentTable::new(vec![Segment {
        start: 0,
        len,
        kind: SegmentKind::Crypt(CryptSegment {
            cipher: CipherSpec::parse(spec)?,
            key: lukskit_crypto::SecretBuf::from_slice(key),
            sector_size: 512,
            iv_offset: skip,
            iv_large_sectors: false,
            device_offset: start,
            digest: None,
        }),
    }])
}

impl OnDiskFormat for Loopaes {
    fn volume_type(&self) -> VolumeType {
        VolumeType::Loopaes
    }

    fn probe(&self, _head: &[u8]) -> Probe {
        Probe::CannotTell
    }

    fn dump(&self, _request: &UnlockRequest<'_>) -> Result<Box<dyn Description>> {
        // cryptsetup has no dump of loop-AES: there is no metadata.
        Err(OtherFormatError::Unsupported("loop-AES has no metadata to dump.".into()).into())
    }

    fn unlock(&self, request: &UnlockRequest<'_>) -> Result<Unlocked> {
        let o = &request.options.loopaes;
        let Some(file) = request.key_files.first() else {
            return Err(OtherFormatError::SecretMissing {
                what: "Option --key-file".into(),
            }
            .into());
        };
        let bits = o.key_bits.unwrap_or(DEFAULT_KEY_BITS);
        if bits == 0 || !bits.is_multiple_of(8) || bits / 8 > 1024 {
            return Err(OtherFormatError::Unsupported("Invalid key size.".into()).into());
        }
        let keys = keyfile::parse(file.as_bytes(), (bits / 8) as usize, o.hash.as_deref())
            .map_err(|e| OtherFormatError::Unsupported(e.to_string()))?;
        let spec = cipher_spec(o.cipher.as_deref().unwrap_or(DEFAULT_CIPHER), keys.count);
        let size = super::device_size(request.device)?;
        let table = layout(&spec, keys.keys.as_bytes(), o.offset, o.skip, size)?;
        Ok(Unlocked {
            volume_type: VolumeType::Loopaes,
            uuid: None,
            layers: vec![table],
            read_only: false,
            volume_key: keys.keys,
        })
    }
}
