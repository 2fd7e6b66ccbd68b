//! The encrypted metadata: 8 KiB blocks under AES-128-XTS (key: the volume header's key data
//! and the physical volume UUID; tweak: the block's index), each with a checksum and a type.
//! cryptsetup reads three of them (`_read_encrypted_metadata`): 0x0019 (the passphrase
//! wrapped KEK and the KEK wrapped volume key, in a plist), 0x001A (the logical volume's size
//! and family UUID, in a plist) and 0x0305 (the logical volume's block offset).

use super::header::{le32, MD_BLOCK_SIZE};
use super::plist;
use aes::cipher::{Array, BlockCipherDecrypt, BlockCipherEncrypt, KeyInit};
use zeroize::Zeroize;

/// Size of the PBKDF2 salt.
pub const SALT_SIZE: usize = 16;
/// Size of an AES-wrapped 128-bit key.
pub const WRAPPED_KEY_SIZE: usize = 24;
/// Decoded size of `PassphraseWrappedKEKStruct`.
const PWK_SIZE: usize = 284;
/// Decoded size of `KEKWrappedVolumeKeyStruct`.
const KWVK_SIZE: usize = 256;

/// Why the encrypted metadata was refused (cryptsetup says only "not a valid FVAULT2 device").
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MetadataError {
    /// A decrypted block's checksum is wrong (a wrong metadata key or a damaged block).
    Crc(u64),
    /// A plist's offset and size leave the block.
    XmlBounds(u16),
    /// A property is missing or is not what cryptsetup accepts.
    Property(&'static str),
    /// Not all three blocks cryptsetup needs were found.
    Incomplete,
}

impl std::fmt::Display for MetadataError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            MetadataError::Crc(i) => write!(f, "CRC mismatch of encrypted metadata block {i}"),
            MetadataError::XmlBounds(t) => {
                write!(
                    f,
                    "the plist of metadata block type 0x{t:04x} leaves the block"
                )
            }
            MetadataError::Property(p) => write!(f, "property {p} missing or invalid"),
            MetadataError::Incomplete => f.write_str("necessary FVAULT2 metadata blocks not found"),
        }
    }
}

/// AES-128-XTS over one whole 8 KiB block (one XTS data unit), decrypting in place.
pub struct MetadataCipher {
    k1: aes::Aes128,
    k2: aes::Aes128,
}

impl MetadataCipher {
    /// The cipher of the 32-byte XTS key (the volume header's key data, then the physical
    /// volume UUID).
    pub fn new(key: &[u8; 32]) -> Self {
        MetadataCipher {
            k1: aes::Aes128::new(&Array::from(
                <[u8; 16]>::try_from(&key[..16]).unwrap_or_default(),
            )),
            k2: aes::Aes128::new(&Array::from(
                <[u8; 16]>::try_from(&key[16..]).unwrap_or_default(),
            )),
        }
    }

    /// Decrypt a block whose tweak is `index` (as a little-endian 64-bit number).
    pub fn decrypt(&self, block: &mut [u8; MD_BLOCK_SIZE], index: u64) {
        let mut t = [0u8; 16];
        t[..8].copy_from_slice(&index.to_le_bytes());
        let mut tb = Array::from(t);
        self.k2.encrypt_block(&mut tb);
        let mut tweak = u128::from_le_bytes(tb.into());
        for chunk in block.chunks_exact_mut(16) {
            let tw = tweak.to_le_bytes();
            let mut b = [0u8; 16];
            for j in 0..16 {
                b[j] = chunk[j] ^ tw[j];
            }
            let mut ab = Array::from(b);
            self.k1.decrypt_block(&mut ab);
            for j in 0..16 {
                chunk[j] = ab[j] ^ tw[j];
            }
            b.zeroize();
            tweak = (tweak << 1) ^ ((tweak >> 127) * 0x87);
        }
        tweak.zeroize();
    }
}

/// What block 0x0019 gives: the passphrase's PBKDF2 parameters and the two wrapped keys.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WrappedKeys {
    /// PBKDF2-SHA256 iterations.
    pub pbkdf2_iterations: u32,
    /// PBKDF2 salt.
    pub pbkdf2_salt: [u8; SALT_SIZE],
    /// The KEK, wrapped with the passphrase's key.
    pub wrapped_kek: [u8; WRAPPED_KEY_SIZE],
    /// The volume key's first half, wrapped with the KEK.
    pub wrapped_vk: [u8; WRAPPED_KEY_SIZE],
}

/// What block 0x001A gives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogicalVolume {
    /// Size in bytes.
    pub size: u64,
    /// The family UUID (binary).
    pub family_uuid: [u8; 16],
}

/// Everything cryptsetup takes from the encrypted metadata.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EncryptedMetadata {
    /// Block 0x0019.
    pub keys: WrappedKeys,
    /// Block 0x001A.
    pub volume: LogicalVolume,
    /// Block 0x0305: the logical volume's block offset.
    pub log_vol_block: u32,
}

/// The plist of a block: `size` bytes at `off`, refused when they leave the block.
fn xml(block: &[u8; MD_BLOCK_SIZE], off_at: usize, ty: u16) -> Result<&[u8], MetadataError> {
    let off = le32(block, off_at) as usize;
    let size = le32(block, off_at + 4) as usize;
    off.checked_add(size)
        .filter(|&end| end <= MD_BLOCK_SIZE)
        .map(|end| &block[off..end])
        .ok_or(MetadataError::XmlBounds(ty))
}

fn parse_0x0019(block: &[u8; MD_BLOCK_SIZE]) -> Result<WrappedKeys, MetadataError> {
    let xml = xml(block, 112, 0x0019)?;
    let decode = |key: &'static str, size: usize| {
        plist::search(xml, key, "data")
            .and_then(plist::base64_decode)
            .filter(|d| d.len() == size)
            .ok_or(MetadataError::Property(key))
    };
    let mut pwk = decode("PassphraseWrappedKEKStruct", PWK_SIZE)?;
    let mut kwvk = decode("KEKWrappedVolumeKeyStruct", KWVK_SIZE)?;
    let mut keys = WrappedKeys {
        pbkdf2_iterations: le32(&pwk, 168),
        pbkdf2_salt: [0; SALT_SIZE],
        wrapped_kek: [0; WRAPPED_KEY_SIZE],
        wrapped_vk: [0; WRAPPED_KEY_SIZE],
    };
    keys.pbkdf2_salt.copy_from_slice(&pwk[8..24]);
    keys.wrapped_kek.copy_from_slice(&pwk[32..56]);
    keys.wrapped_vk.copy_from_slice(&kwvk[8..32]);
    pwk.zeroize();
    kwvk.zeroize();
    Ok(keys)
}

fn parse_0x001a(block: &[u8; MD_BLOCK_SIZE]) -> Result<LogicalVolume, MetadataError> {
    const SIZE: &str = "com.apple.corestorage.lv.size";
    const FAMILY: &str = "com.apple.corestorage.lv.familyUUID";
    let xml = xml(block, 128, 0x001A)?;
    let size = plist::search(xml, SIZE, "integer")
        .map(plist::strtoull_hex)
        .filter(|&s| s != 0 && s != u64::MAX)
        .ok_or(MetadataError::Property(SIZE))?;
    let family_uuid = plist::search(xml, FAMILY, "string")
        .and_then(plist::parse_uuid)
        .ok_or(MetadataError::Property(FAMILY))?;
    Ok(LogicalVolume { size, family_uuid })
}

/// What one decrypted metadata block says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Block {
    /// Type 0x0019.
    Keys(WrappedKeys),
    /// Type 0x001A.
    Volume(LogicalVolume),
    /// Type 0x0305: the logical volume's block offset.
    LogicalVolumeBlock(u32),
    /// Another type (skipped).
    Other(u16),
}

/// Parse a decrypted block by its type (its checksum is the caller's: [`Collector::add`]).
pub fn parse_block(block: &[u8; MD_BLOCK_SIZE]) -> Result<Block, MetadataError> {
    Ok(match super::header::le16(&block[..], 10) {
        0x0019 => Block::Keys(parse_0x0019(block)?),
        0x001A => Block::Volume(parse_0x001a(block)?),
        0x0305 => Block::LogicalVolumeBlock(le32(&block[..], 104)),
        other => Block::Other(other),
    })
}

/// The blocks read so far (cryptsetup's loop over the encrypted metadata, one
/// [`Collector::add`] per block in order, then [`Collector::finish`]).
#[derive(Default)]
pub struct Collector {
    keys: Option<WrappedKeys>,
    volume: Option<LogicalVolume>,
    log_vol_block: Option<u32>,
}

impl Collector {
    /// Take block `index` (still encrypted): `Ok(false)` when it is all zeros, which ends
    /// the list. Each block must carry a valid checksum once decrypted; of each needed type
    /// the last block counts; other types are skipped. The block is wiped.
    pub fn add(
        &mut self,
        cipher: &MetadataCipher,
        index: u64,
        block: &mut [u8; MD_BLOCK_SIZE],
    ) -> Result<bool, MetadataError> {
        if block.iter().all(|&b| b == 0) {
            return Ok(false);
        }
        cipher.decrypt(block, index);
        let r = if !super::header::crc_ok(&block[..]) {
            Err(MetadataError::Crc(index))
        } else {
            parse_block(block).map(|b| match b {
                Block::Keys(k) => self.keys = Some(k),
                Block::Volume(v) => self.volume = Some(v),
                Block::LogicalVolumeBlock(b) => self.log_vol_block = Some(b),
                Block::Other(_) => {}
            })
        };
        block.zeroize();
        r.map(|()| true)
    }

    /// All three blocks, or [`MetadataError::Incomplete`].
    pub fn finish(self) -> Result<EncryptedMetadata, MetadataError> {
        match (self.keys, self.volume, self.log_vol_block) {
            (Some(keys), Some(volume), Some(log_vol_block)) => Ok(EncryptedMetadata {
                keys,
                volume,
                log_vol_block,
            }),
            _ => Err(MetadataError::Incomplete),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn block(ty: u16, off_at: usize, xml: &[u8], off: u32, size: u32) -> Box<[u8; MD_BLOCK_SIZE]> {
        let mut b = Box::new([0u8; MD_BLOCK_SIZE]);
        b[10..12].copy_from_slice(&ty.to_le_bytes());
        b[off_at..off_at + 4].copy_from_slice(&off.to_le_bytes());
        b[off_at + 4..off_at + 8].copy_from_slice(&size.to_le_bytes());
        let n = xml.len().min(MD_BLOCK_SIZE - 512);
        b[512..512 + n].copy_from_slice(&xml[..n]);
        b
    }

    #[test]
    fn logical_volume_block() {
        let xml = b"<dict><key>com.apple.corestorage.lv.size</key><integer>0xa000000</integer>\
<key>com.apple.corestorage.lv.familyUUID</key><string>33A76CAA-1481-4BC5-8D04-1AC1707C19C0</string>";
        let b = block(0x001A, 128, xml, 512, xml.len() as u32);
        let Block::Volume(v) = parse_block(&b).unwrap() else {
            panic!("not a volume block");
        };
        assert_eq!(v.size, 0xa00_0000);
        assert_eq!(v.family_uuid[0], 0x33);
        // The plist cut short by its size: the UUID is gone.
        let b = block(0x001A, 128, xml, 512, 80);
        assert!(parse_block(&b).is_err());
    }

    #[test]
    fn hostile_blocks_are_refused_not_panicked_on() {
        let x = b"<key>PassphraseWrappedKEKStruct</key><data>AAAA</data>";
        for (ty, at) in [(0x0019u16, 112usize), (0x001A, 128)] {
            for (off, size) in [
                (u32::MAX, 2),
                (2, u32::MAX),
                (u32::MAX, u32::MAX),
                (8192, 1),
                (8191, 1),
                (0, 8192),
                (0, 0),
            ] {
                let b = block(ty, at, x, off, size);
                assert!(parse_block(&b).is_err(), "{ty:#x} {off} {size}");
            }
        }
        // Wrong decoded sizes of the key structures.
        let b = block(0x0019, 112, x, 512, x.len() as u32);
        assert_eq!(
            parse_block(&b),
            Err(MetadataError::Property("PassphraseWrappedKEKStruct"))
        );
        assert_eq!(
            parse_block(&block(0x1234, 112, x, 0, 0)),
            Ok(Block::Other(0x1234))
        );
        assert_eq!(
            Collector::default().finish(),
            Err(MetadataError::Incomplete)
        );
    }
}
