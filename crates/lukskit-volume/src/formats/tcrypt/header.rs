//! The TrueCrypt/VeraCrypt volume header: a 512-byte sector of 64 bytes of salt and 448
//! encrypted bytes, and the typed parse of those bytes once decrypted (big-endian fields,
//! `struct tcrypt_phdr` of cryptsetup's lib/tcrypt/tcrypt.h).

use super::crc::crc32;
use super::{ENC_LEN, SALT_LEN};
use lukskit_crypto::SecretBuf;
use std::fmt;

/// Which tool wrote the header (the magic of the decrypted part).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Magic {
    /// `TRUE`.
    TrueCrypt,
    /// `VERA`.
    VeraCrypt,
}

impl Magic {
    /// The magic of decrypted header bytes: `TRUE` always counts, `VERA` only when VeraCrypt
    /// is not disabled.
    pub fn of(decrypted: &[u8], veracrypt: bool) -> Option<Magic> {
        match decrypted.get(..4) {
            Some(b"TRUE") => Some(Magic::TrueCrypt),
            Some(b"VERA") if veracrypt => Some(Magic::VeraCrypt),
            _ => None,
        }
    }
}

/// The raw header sector as read from the device.
pub struct RawHeader {
    /// The PBKDF2 salt.
    pub salt: [u8; SALT_LEN],
    /// The encrypted part.
    pub encrypted: [u8; ENC_LEN],
}

impl RawHeader {
    /// Split a 512-byte sector.
    pub fn from_sector(sector: &[u8; 512]) -> RawHeader {
        let mut salt = [0u8; SALT_LEN];
        let mut encrypted = [0u8; ENC_LEN];
        salt.copy_from_slice(&sector[..SALT_LEN]);
        encrypted.copy_from_slice(&sector[SALT_LEN..]);
        RawHeader { salt, encrypted }
    }
}

/// The decrypted header, typed. Zero `mk_offset` and `sector_size` are already replaced by
/// 512 as cryptsetup does.
pub struct Header {
    /// `TRUE` or `VERA`.
    pub magic: Magic,
    /// Header format version.
    pub version: u16,
    /// The program version required to open the volume (BCD-like, `Driver req.` of the dump).
    pub version_tc: u16,
    /// CRC-32 of the key area.
    pub keys_crc32: u32,
    /// Size of the hidden volume in bytes (0 without one).
    pub hidden_volume_size: u64,
    /// Size of the volume in bytes.
    pub volume_size: u64,
    /// Byte offset of the encrypted area (master-key scope).
    pub mk_offset: u64,
    /// Size of the encrypted area.
    pub mk_size: u64,
    /// Flags (bit 0 system encryption, bit 1 non-system in-place encrypted).
    pub flags: u32,
    /// Sector size in bytes.
    pub sector_size: u32,
    /// CRC-32 of the header fields (checked for version > 3).
    pub header_crc32: u32,
    /// The 256-byte key area (all layers' keys).
    pub keys: SecretBuf,
}

impl fmt::Debug for Header {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Header")
            .field("magic", &self.magic)
            .field("version", &self.version)
            .field("version_tc", &self.version_tc)
            .field("hidden_volume_size", &self.hidden_volume_size)
            .field("volume_size", &self.volume_size)
            .field("mk_offset", &self.mk_offset)
            .field("mk_size", &self.mk_size)
            .field("flags", &self.flags)
            .field("sector_size", &self.sector_size)
            .finish_non_exhaustive()
    }
}

/// Why decrypted bytes with a good magic are not a header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HeaderError {
    /// No `TRUE` (or allowed `VERA`) magic.
    Magic,
    /// The header CRC-32 does not match (version > 3).
    HeaderCrc,
    /// The key area's CRC-32 does not match.
    KeysCrc,
}

fn be16(b: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([b[at], b[at + 1]])
}

fn be32(b: &[u8], at: usize) -> u32 {
    let mut x = [0u8; 4];
    x.copy_from_slice(&b[at..at + 4]);
    u32::from_be_bytes(x)
}

fn be64(b: &[u8], at: usize) -> u64 {
    let mut x = [0u8; 8];
    x.copy_from_slice(&b[at..at + 8]);
    u64::from_be_bytes(x)
}

/// Offset of the header CRC (the bytes before it are what it covers).
const HEADER_CRC_AT: usize = 188;
/// Offset of the key area.
const KEYS_AT: usize = 192;

/// Set both CRC-32s of decrypted header bytes (the keys' and the header's), as TrueCrypt
/// writes them: for tests and fuzzing, which make headers that pass the checks.
pub fn seal(d: &mut [u8; ENC_LEN]) {
    let keys = crc32(&d[KEYS_AT..]);
    d[8..12].copy_from_slice(&keys.to_be_bytes());
    let header = crc32(&d[..HEADER_CRC_AT]);
    d[HEADER_CRC_AT..KEYS_AT].copy_from_slice(&header.to_be_bytes());
}

impl Header {
    /// Parse decrypted header bytes (`TCRYPT_hdr_from_disk`): the magic, the header CRC (for
    /// versions above 3) and the key-area CRC must hold.
    pub fn parse(d: &[u8; ENC_LEN], veracrypt: bool) -> Result<Header, HeaderError> {
        let magic = Magic::of(d, veracrypt).ok_or(HeaderError::Magic)?;
        let version = be16(d, 4);
        let header_crc32 = be32(d, HEADER_CRC_AT);
        if version > 3 && crc32(&d[..HEADER_CRC_AT]) != header_crc32 {
            return Err(HeaderError::HeaderCrc);
        }
        let keys_crc32 = be32(d, 8);
        if crc32(&d[KEYS_AT..]) != keys_crc32 {
            return Err(HeaderError::KeysCrc);
        }
        let mk_offset = match be64(d, 44) {
            0 => 512,
            o => o,
        };
        let sector_size = match be32(d, 64) {
            0 => 512,
            s => s,
        };
        Ok(Header {
            magic,
            version,
            version_tc: be16(d, 6),
            keys_crc32,
            hidden_volume_size: be64(d, 28),
            volume_size: be64(d, 36),
            mk_offset,
            mk_size: be64(d, 52),
            flags: be32(d, 60),
            sector_size,
            header_crc32,
            keys: SecretBuf::from_slice(&d[KEYS_AT..]),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn valid(version: u16) -> [u8; ENC_LEN] {
        let mut d = [0u8; ENC_LEN];
        d[..4].copy_from_slice(b"VERA");
        d[4..6].copy_from_slice(&version.to_be_bytes());
        for (i, b) in d[KEYS_AT..].iter_mut().enumerate() {
            *b = i as u8;
        }
        let k = crc32(&d[KEYS_AT..]);
        d[8..12].copy_from_slice(&k.to_be_bytes());
        let h = crc32(&d[..HEADER_CRC_AT]);
        d[HEADER_CRC_AT..KEYS_AT].copy_from_slice(&h.to_be_bytes());
        d
    }

    #[test]
    fn crcs_and_magic_are_checked() {
        let d = valid(5);
        let h = Header::parse(&d, true).unwrap();
        assert_eq!((h.version, h.mk_offset, h.sector_size), (5, 512, 512));
        assert_eq!(Header::parse(&d, false).unwrap_err(), HeaderError::Magic);
        let mut bad = d;
        bad[30] ^= 1;
        assert_eq!(
            Header::parse(&bad, true).unwrap_err(),
            HeaderError::HeaderCrc
        );
        let mut bad = d;
        bad[300] ^= 1;
        assert_eq!(Header::parse(&bad, true).unwrap_err(), HeaderError::KeysCrc);
        // Version 3 and below have no header CRC.
        let mut old = valid(3);
        old[30] ^= 1;
        assert!(Header::parse(&old, true).is_ok());
    }

    #[test]
    fn arbitrary_bytes_never_panic() {
        let mut x = 0x1234_5678u32;
        for _ in 0..2000 {
            let mut d = [0u8; ENC_LEN];
            for b in d.iter_mut() {
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                *b = x as u8;
            }
            d[..4].copy_from_slice(b"TRUE");
            let _ = Header::parse(&d, true);
        }
    }
}
