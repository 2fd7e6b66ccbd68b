//! The 4096-byte binary header of each LUKS2 metadata copy (`struct luks2_hdr_disk`).

use super::{BINARY_HEADER_SIZE, MAGIC_PRIMARY, MAGIC_SECONDARY, METADATA_SIZES};
use crate::{Luks2Error, NotLuks, Result};
use lukskit_crypto::hash::{ChecksumOnlyHash, HashAlg};

const OFF_MAGIC: usize = 0;
const OFF_VERSION: usize = 6;
const OFF_HDR_SIZE: usize = 8;
const OFF_SEQID: usize = 16;
const OFF_LABEL: usize = 24;
const LABEL_LEN: usize = 48;
const OFF_CSUM_ALG: usize = 72;
const CSUM_ALG_LEN: usize = 32;
const OFF_SALT: usize = 104;
const OFF_UUID: usize = 168;
const UUID_LEN: usize = 40;
const OFF_SUBSYSTEM: usize = 208;
const OFF_HDR_OFFSET: usize = 256;
/// Offset of the checksum field.
pub(crate) const OFF_CSUM: usize = 448;
const CSUM_LEN: usize = 64;

/// One binary header, decoded. Integers are big-endian on disk; strings are NUL-terminated
/// (their last byte is always forced to NUL, as `hdr_to_disk` does).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BinaryHeader {
    /// Format version, 2.
    pub version: u16,
    /// Size of one metadata copy (binary header + JSON area) in bytes.
    pub hdr_size: u64,
    /// Sequence id, increased on every update ("Epoch" in `luksDump`).
    pub seqid: u64,
    /// Label (at most 47 bytes).
    pub label: String,
    /// Hash used for the header checksum (`sha256`).
    pub checksum_alg: String,
    /// Per-copy random salt.
    pub salt: [u8; 64],
    /// Text UUID.
    pub uuid: String,
    /// Subsystem (secondary label, at most 47 bytes).
    pub subsystem: String,
    /// Offset of this copy on the device (0 or `hdr_size`).
    pub hdr_offset: u64,
    /// Header checksum, zero-padded after the digest length.
    pub csum: [u8; 64],
}

fn be_u64(b: &[u8], off: usize) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[off..off + 8]);
    u64::from_be_bytes(a)
}

/// A NUL-terminated string field of `len` bytes whose last byte is treated as NUL.
fn c_string(b: &[u8], off: usize, len: usize) -> String {
    let field = &b[off..off + len - 1];
    let end = field.iter().position(|&c| c == 0).unwrap_or(field.len());
    String::from_utf8_lossy(&field[..end]).into_owned()
}

/// Copy at most `len - 1` bytes of `s` into a zeroed field of `len` bytes.
fn put_c_string(out: &mut [u8], off: usize, len: usize, s: &str) {
    let b = s.as_bytes();
    let n = b.len().min(len - 1);
    out[off..off + n].copy_from_slice(&b[..n]);
}

impl BinaryHeader {
    /// Decode a binary header and run cryptsetup's pre-checksum sanity checks
    /// (`hdr_disk_sanity_check_pre`): magic of the expected copy, version 2, a header size
    /// between 16 KiB and 4 MiB, and `hdr_offset` 0 for the primary copy and equal to
    /// `hdr_size` for the secondary one. `bytes` must hold at least 512 bytes (the rest of the
    /// 4096-byte block is padding).
    pub fn parse(bytes: &[u8], secondary: bool) -> Result<Self> {
        if bytes.len() < 512 {
            return Err(Luks2Error::BinaryTruncated.into());
        }
        let magic = if secondary {
            MAGIC_SECONDARY
        } else {
            MAGIC_PRIMARY
        };
        if bytes[OFF_MAGIC..OFF_MAGIC + 6] != magic {
            return Err(NotLuks::NoLuks2Magic { secondary }.into());
        }
        let version = u16::from_be_bytes([bytes[OFF_VERSION], bytes[OFF_VERSION + 1]]);
        if version != 2 {
            return Err(Luks2Error::UnsupportedVersion { version }.into());
        }
        let hdr_size = be_u64(bytes, OFF_HDR_SIZE);
        let hdr_offset = be_u64(bytes, OFF_HDR_OFFSET);
        let expected_offset = if secondary { hdr_size } else { 0 };
        if hdr_offset != expected_offset {
            return Err(Luks2Error::OffsetMismatch {
                found: hdr_offset,
                expected: expected_offset,
            }
            .into());
        }
        if hdr_size < METADATA_SIZES[0] || hdr_size > METADATA_SIZES[8] {
            return Err(Luks2Error::BogusSize { size: hdr_size }.into());
        }
        let mut salt = [0u8; 64];
        salt.copy_from_slice(&bytes[OFF_SALT..OFF_SALT + 64]);
        let mut csum = [0u8; 64];
        csum.copy_from_slice(&bytes[OFF_CSUM..OFF_CSUM + CSUM_LEN]);
        Ok(BinaryHeader {
            version,
            hdr_size,
            seqid: be_u64(bytes, OFF_SEQID),
            label: c_string(bytes, OFF_LABEL, LABEL_LEN),
            checksum_alg: c_string(bytes, OFF_CSUM_ALG, CSUM_ALG_LEN),
            salt,
            uuid: c_string(bytes, OFF_UUID, UUID_LEN),
            subsystem: c_string(bytes, OFF_SUBSYSTEM, LABEL_LEN),
            hdr_offset,
            csum,
        })
    }

    /// Encode as the 4096-byte on-disk block with the magic of the primary or secondary
    /// copy (`hdr_to_disk`: zeroed block, strings truncated to leave a final NUL). The
    /// fields are written as they are, including `hdr_offset` and `csum`.
    pub fn to_bytes(&self, secondary: bool) -> Vec<u8> {
        let mut b = vec![0u8; BINARY_HEADER_SIZE];
        let magic = if secondary {
            MAGIC_SECONDARY
        } else {
            MAGIC_PRIMARY
        };
        b[OFF_MAGIC..OFF_MAGIC + 6].copy_from_slice(&magic);
        b[OFF_VERSION..OFF_VERSION + 2].copy_from_slice(&self.version.to_be_bytes());
        b[OFF_HDR_SIZE..OFF_HDR_SIZE + 8].copy_from_slice(&self.hdr_size.to_be_bytes());
        b[OFF_SEQID..OFF_SEQID + 8].copy_from_slice(&self.seqid.to_be_bytes());
        put_c_string(&mut b, OFF_LABEL, LABEL_LEN, &self.label);
        put_c_string(&mut b, OFF_CSUM_ALG, CSUM_ALG_LEN, &self.checksum_alg);
        b[OFF_SALT..OFF_SALT + 64].copy_from_slice(&self.salt);
        put_c_string(&mut b, OFF_UUID, UUID_LEN, &self.uuid);
        put_c_string(&mut b, OFF_SUBSYSTEM, LABEL_LEN, &self.subsystem);
        b[OFF_HDR_OFFSET..OFF_HDR_OFFSET + 8].copy_from_slice(&self.hdr_offset.to_be_bytes());
        b[OFF_CSUM..OFF_CSUM + CSUM_LEN].copy_from_slice(&self.csum);
        b
    }
}

/// A header's checksum algorithm (`checksum_alg`): any hash lukskit knows, or one of the
/// hashes cryptsetup takes from OpenSSL for this field only (md5, blake2b512).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ChecksumAlg {
    /// A hash of [`HashAlg`].
    Hash(HashAlg),
    /// md5 or blake2b512.
    ChecksumOnly(ChecksumOnlyHash),
}

impl ChecksumAlg {
    fn digest(self, parts: &[&[u8]]) -> Vec<u8> {
        match self {
            ChecksumAlg::Hash(h) => h.digest(parts),
            ChecksumAlg::ChecksumOnly(h) => h.digest(parts),
        }
    }

    fn digest_size(self) -> usize {
        match self {
            ChecksumAlg::Hash(h) => h.digest_size(),
            ChecksumAlg::ChecksumOnly(h) => h.digest_size(),
        }
    }
}

/// The checksum algorithm of a header, usable for `hdr_checksum_calculate`.
pub(crate) fn checksum_hash(alg: &str) -> Result<ChecksumAlg> {
    if let Ok(h) = HashAlg::from_name(alg) {
        return Ok(ChecksumAlg::Hash(h));
    }
    ChecksumOnlyHash::from_name(alg)
        .map(ChecksumAlg::ChecksumOnly)
        .ok_or_else(|| {
            Luks2Error::UnsupportedChecksum {
                alg: alg.to_owned(),
            }
            .into()
        })
}

/// `hdr_checksum_calculate`: hash of the 4096-byte binary header with the checksum field
/// zeroed, followed by the whole JSON area. Returns the 64-byte zero-padded field.
pub(crate) fn compute_checksum(alg: ChecksumAlg, bin: &[u8], json_area: &[u8]) -> [u8; 64] {
    let mut zeroed = bin[..BINARY_HEADER_SIZE].to_vec();
    zeroed[OFF_CSUM..OFF_CSUM + CSUM_LEN].fill(0);
    let d = alg.digest(&[&zeroed, json_area]);
    let mut out = [0u8; 64];
    out[..d.len()].copy_from_slice(&d);
    out
}

/// `hdr_checksum_check`: compare over the digest length only.
pub(crate) fn checksum_matches(alg: ChecksumAlg, bin: &[u8], json_area: &[u8]) -> bool {
    let want = compute_checksum(alg, bin, json_area);
    let n = alg.digest_size();
    subtle::ConstantTimeEq::ct_eq(&want[..n], &bin[OFF_CSUM..OFF_CSUM + n]).into()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> BinaryHeader {
        BinaryHeader {
            version: 2,
            hdr_size: 0x4000,
            seqid: 7,
            label: "lbl".into(),
            checksum_alg: "sha256".into(),
            salt: [0x5a; 64],
            uuid: "28632274-8c8a-493f-835b-da802e1c576b".into(),
            subsystem: "sub".into(),
            hdr_offset: 0,
            csum: [0; 64],
        }
    }

    #[test]
    fn layout_offsets_match_spec() {
        // Offsets from the LUKS2 on-disk format specification, Figure 2.
        let b = sample().to_bytes(false);
        assert_eq!(b.len(), 4096);
        assert_eq!(&b[0..6], b"LUKS\xba\xbe");
        assert_eq!(&b[6..8], &[0, 2]);
        assert_eq!(&b[8..16], &0x4000u64.to_be_bytes());
        assert_eq!(&b[16..24], &7u64.to_be_bytes());
        assert_eq!(&b[0x18..0x1b], b"lbl");
        assert_eq!(&b[0x48..0x4e], b"sha256");
        assert_eq!(&b[0x68..0xa8], &[0x5a; 64]);
        assert_eq!(&b[0xa8..0xcc], b"28632274-8c8a-493f-835b-da802e1c576b");
        assert_eq!(&b[0xd0..0xd3], b"sub");
        let mut s = sample();
        s.hdr_offset = 0x4000;
        let b2 = s.to_bytes(true);
        assert_eq!(&b2[0..6], b"SKUL\xba\xbe");
        assert_eq!(&b2[0x100..0x108], &0x4000u64.to_be_bytes());
        assert!(BinaryHeader::parse(&b2, true).is_ok());
        assert!(BinaryHeader::parse(&b2, false).is_err());
        assert_eq!(BinaryHeader::parse(&b, false).unwrap(), sample());
    }

    #[test]
    fn long_strings_are_truncated_with_nul() {
        let mut s = sample();
        s.label = "x".repeat(60);
        let b = s.to_bytes(false);
        assert_eq!(b[0x18 + 47], 0);
        assert_eq!(
            BinaryHeader::parse(&b, false).unwrap().label,
            "x".repeat(47)
        );
    }

    #[test]
    fn sanity_checks() {
        let mut s = sample();
        s.hdr_size = 0x2000;
        assert!(BinaryHeader::parse(&s.to_bytes(false), false).is_err());
        let mut s = sample();
        s.hdr_offset = 0x4000;
        assert!(BinaryHeader::parse(&s.to_bytes(false), false).is_err());
        let mut b = sample().to_bytes(false);
        b[7] = 1;
        assert!(BinaryHeader::parse(&b, false).is_err());
    }
}
