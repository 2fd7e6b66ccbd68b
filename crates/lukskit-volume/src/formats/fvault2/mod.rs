//! FileVault 2 (Core Storage) volumes, as cryptsetup 2.6.1's `lib/fvault2/fvault2.c` reads
//! them: the physical volume header ([`header`]), the disk label and the encrypted metadata
//! ([`metadata`], with its plist values read by [`plist`]), the passphrase → KEK → volume key
//! chain ([`keys`]), the `fvault2Dump` text ([`dump`]). The logical volume is AES-128-XTS
//! (`aes-xts-plain64`, 512-byte sectors, IV offset 0) from its byte offset on.

pub mod dump;
pub mod header;
pub mod keys;
pub mod metadata;
pub mod plist;

use super::{Description, OnDiskFormat, OtherFormatError, Probe, UnlockRequest, Unlocked};
use crate::device::{Access, Device};
use crate::error::Result;
use crate::segment::{CryptSegment, Segment, SegmentKind, SegmentTable};
use header::{DiskLabel, HeaderError, VolGroupsDescriptor, VolumeHeader, MD_BLOCK_SIZE};
use lukskit_crypto::spec::CipherSpec;
use lukskit_crypto::SecretBuf;
use lukskit_format::io::Storage;
use lukskit_format::VolumeType;
use metadata::{Collector, EncryptedMetadata, MetadataCipher, MetadataError};
use zeroize::Zeroize;

/// The cipher and mode of every FileVault 2 volume cryptsetup opens.
pub const CIPHER: &str = "aes";
/// The mode.
pub const CIPHER_MODE: &str = "xts-plain64";
/// The volume key's size (AES-128-XTS).
pub const VOLUME_KEY_SIZE: usize = 32;

/// FileVault 2.
pub struct Fvault2;

/// Everything cryptsetup's `FVAULT2_read_metadata` gives (its `struct fvault2_params`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Params {
    /// The physical volume UUID.
    pub ph_vol_uuid: [u8; 16],
    /// The encrypted metadata.
    pub metadata: EncryptedMetadata,
    /// The logical volume's byte offset on the device.
    pub log_vol_offset: u64,
}

impl Params {
    /// The family UUID as cryptsetup shows it (its `crypt_get_uuid`).
    pub fn family_uuid(&self) -> String {
        plist::format_uuid(&self.metadata.volume.family_uuid)
    }
}

/// Why reading the metadata failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReadError {
    /// A read beyond the device's end or an I/O error (where: a byte offset).
    Read(u64),
    /// The unencrypted structures.
    Header(HeaderError),
    /// The encrypted metadata.
    Metadata(MetadataError),
}

impl std::fmt::Display for ReadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ReadError::Read(off) => write!(f, "cannot read metadata at byte {off}"),
            ReadError::Header(e) => e.fmt(f),
            ReadError::Metadata(e) => e.fmt(f),
        }
    }
}

impl From<HeaderError> for ReadError {
    fn from(e: HeaderError) -> Self {
        ReadError::Header(e)
    }
}

impl From<MetadataError> for ReadError {
    fn from(e: MetadataError) -> Self {
        ReadError::Metadata(e)
    }
}

fn read(s: &dyn Storage, buf: &mut [u8], off: u64) -> std::result::Result<(), ReadError> {
    s.read_exact_at(buf, off).map_err(|_| ReadError::Read(off))
}

/// Read the metadata as cryptsetup's `FVAULT2_read_metadata`: volume header, disk label and
/// volume groups descriptor, then the encrypted metadata blocks (at most those that start
/// within the first GiB, as cryptsetup).
pub fn read_metadata(s: &dyn Storage) -> std::result::Result<Params, ReadError> {
    let mut vh = [0u8; header::VOLUME_HEADER_SIZE];
    read(s, &mut vh, 0)?;
    let vh = VolumeHeader::parse(&vh)?;
    let mut md_key = [0u8; 32];
    md_key[..16].copy_from_slice(&vh.key_data);
    md_key[16..].copy_from_slice(&vh.ph_vol_uuid);
    let cipher = MetadataCipher::new(&md_key);
    md_key.zeroize();

    let mut block = Box::new([0u8; MD_BLOCK_SIZE]);
    let label_off = vh.block_offset(vh.disklabel_block)?;
    read(s, &mut block[..], label_off)?;
    let label = DiskLabel::parse(&block)?;
    let desc_off = label_off
        .checked_add(u64::from(label.vol_groups_descriptor_offset))
        .filter(|&o| o <= header::MAX_OFFSET)
        .ok_or(HeaderError::Offset)?;
    let mut desc = [0u8; header::VOL_GROUPS_DESCRIPTOR_SIZE];
    read(s, &mut desc, desc_off)?;
    let desc = VolGroupsDescriptor::parse(&desc);

    let start = vh.block_offset(desc.enc_md_block)?;
    let mut found = Collector::default();
    for i in 0..desc.enc_md_blocks {
        let off = i
            .checked_mul(MD_BLOCK_SIZE as u64)
            .and_then(|o| o.checked_add(start))
            .filter(|&o| o <= header::MAX_OFFSET)
            .ok_or(HeaderError::Offset)?;
        read(s, &mut block[..], off)?;
        if !found.add(&cipher, i, &mut block)? {
            break;
        }
    }
    let metadata = found.finish()?;
    let log_vol_offset = u64::from(metadata.log_vol_block)
        .checked_mul(u64::from(vh.block_size))
        .ok_or(HeaderError::Offset)?;
    Ok(Params {
        ph_vol_uuid: vh.ph_vol_uuid,
        metadata,
        log_vol_offset,
    })
}

fn load(request: &UnlockRequest<'_>) -> Result<Params> {
    let path = request.header.unwrap_or(request.device);
    let dev = Device::open(path, Access::Read)?;
    // cryptsetup says only that the device is not a valid FVAULT2 device (the reason goes to
    // its debug log).
    read_metadata(&dev).map_err(|e| match e {
        ReadError::Header(HeaderError::Version(v)) => OtherFormatError::NotReadable {
            volume_type: VolumeType::Fvault2,
            path: request.device.to_string(),
            problem: format!("Unsupported FVAULT2 version {v}."),
        }
        .into(),
        // The one read cryptsetup names: the volume header of a device too small for it.
        ReadError::Read(0) => OtherFormatError::NotReadable {
            volume_type: VolumeType::Fvault2,
            path: request.device.to_string(),
            problem: format!(
                "Could not read {} bytes of volume header.",
                header::VOLUME_HEADER_SIZE
            ),
        }
        .into(),
        _ => not_valid(request.device),
    })
}

fn not_valid(path: &str) -> crate::VolumeError {
    OtherFormatError::NotThisFormat {
        volume_type: VolumeType::Fvault2,
        path: path.to_string(),
    }
    .into()
}

/// The data layout of an unlocked volume: one crypt segment over the logical volume
/// (cryptsetup's `_activate`: size `log_vol_size / 512` sectors, or the rest of the device when
/// that is 0; offset `log_vol_off / 512` sectors; IV offset 0; 512-byte sectors).
pub fn layout(params: &Params, key: &[u8], device_size: u64) -> Result<SegmentTable> {
    let offset = params.log_vol_offset / 512 * 512;
    let mut size = params.metadata.volume.size / 512 * 512;
    if size == 0 {
        size = device_size.saturating_sub(offset) / 512 * 512;
    }
    let cipher = CipherSpec::parse(&format!("{CIPHER}-{CIPHER_MODE}"))?;
    SegmentTable::new(vec![Segment {
        start: 0,
        len: size,
        kind: SegmentKind::Crypt(CryptSegment {
            cipher,
            key: SecretBuf::from_slice(key),
            sector_size: 512,
            iv_offset: 0,
            iv_large_sectors: false,
            device_offset: offset,
            digest: None,
        }),
    }])
}

impl OnDiskFormat for Fvault2 {
    fn metadata_without_secret(&self) -> bool {
        true
    }

    fn volume_type(&self) -> VolumeType {
        VolumeType::Fvault2
    }

    fn probe(&self, head: &[u8]) -> Probe {
        match head.get(..header::VOLUME_HEADER_SIZE) {
            Some(h)
                if &h[header::MAGIC_OFFSET..header::MAGIC_OFFSET + 2] == header::MAGIC
                    && header::crc_ok(h) =>
            {
                Probe::Mine
            }
            _ => Probe::NotMine,
        }
    }

    fn dump(&self, request: &UnlockRequest<'_>) -> Result<Box<dyn Description>> {
        let params = load(request)?;
        Ok(Box::new(dump::Fvault2Dump::new(request.device, &params)))
    }

    fn unlock(&self, request: &UnlockRequest<'_>) -> Result<Unlocked> {
        let params = load(request)?;
        let passphrase = match (request.passphrase, request.key_files.first()) {
            (Some(p), _) => p,
            (None, Some(k)) => k,
            (None, None) => {
                return Err(OtherFormatError::SecretMissing {
                    what: "A passphrase".into(),
                }
                .into())
            }
        };
        let volume_key = keys::volume_key(&params, passphrase.as_bytes())?;
        let size = super::device_size(request.device)?;
        let table = layout(&params, volume_key.as_bytes(), size)?;
        Ok(Unlocked {
            volume_type: VolumeType::Fvault2,
            // cryptsetup's FVAULT2 activation gives dm no UUID: CRYPT-FVAULT2-NAME.
            uuid: None,
            layers: vec![table],
            read_only: false,
            volume_key,
        })
    }
}
