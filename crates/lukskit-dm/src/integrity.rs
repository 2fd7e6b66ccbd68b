//! LUKS2 authenticated encryption: the dm-integrity target under a dm-crypt mapping, as
//! cryptsetup 2.6.1 stacks them.
//!
//! A LUKS2 segment with an `integrity` object (`hmac(sha256)`, `aead`, `poly1305`) is opened
//! as two mappings: `NAME_dif`, a dm-integrity target in external-tag mode over the data
//! device (its superblock and tags at the data offset), and `NAME`, dm-crypt over `NAME_dif`
//! with a kernel crypto API cipher (`capi:authenc(hmac(sha256),xts(aes))-plain64`,
//! `capi:gcm(aes)-random`, ...) and the option `integrity:<tag size>:aead`, so dm-crypt puts
//! the IV (for `random` IVs) and the authentication tag of each sector into dm-integrity's
//! per-sector tags. Observed with cryptsetup 2.6.1 on Linux 6.1 (`dmsetup table`):
//!
//! ```text
//! t:     0 52800 crypt capi:authenc(hmac(sha256),xts(aes))-plain64 :64:logon:... 0 253:0 0 1 integrity:32:aead
//! t_dif: 0 52800 integrity 254:0 8192 32 J 6 journal_sectors:440 ... fix_padding
//! ```
//!
//! The functions here are pure: the cipher and tag-size rules, the integrity table line and
//! the on-disk dm-integrity superblock the kernel writes.

use crate::devt::DevT;
use crate::error::{DmError, Result};
use crate::table::Target;
use zeroize::Zeroizing;

/// The integrity key size in bytes of LUKS2 integrity type `integrity` (the part of the volume
/// key after the cipher key): `hmac(sha1)` 20, `hmac(sha256)` 32, `hmac(sha512)` 64; 0 for
/// `aead` and `poly1305` (the cipher authenticates with its own key). `None` for a type
/// cryptsetup 2.6.1 does not know.
pub fn integrity_key_bytes(integrity: &str) -> Option<usize> {
    Some(match integrity {
        "aead" | "poly1305" | "none" => 0,
        "hmac(sha1)" => 20,
        "hmac(sha256)" => 32,
        "hmac(sha512)" => 64,
        _ => return None,
    })
}

/// A LUKS cipher spec split as cryptsetup splits it: `aes-xts-plain64` is `aes`, `xts`,
/// `plain64`; `aegis128-random` is `aegis128`, no mode, `random`.
fn split_cipher(cipher: &str) -> Option<(&str, &str, &str)> {
    let (name, rest) = cipher.split_once('-')?;
    let (mode, iv) = match rest.split_once('-') {
        Some((m, iv)) => (m, iv),
        None => ("", rest),
    };
    if name.is_empty() || iv.is_empty() {
        return None;
    }
    Some((name, mode, iv))
}

/// The per-sector tag size in bytes dm-crypt asks of dm-integrity for cipher `cipher` with
/// integrity type `integrity` (cryptsetup's rule): the IV for `random` IVs (16 bytes, 12 for
/// GCM and for ChaCha20-Poly1305, 8 for CCM) plus the authentication tag (16 for AEAD modes
/// and Poly1305, the hash size for HMAC). `None` for an unknown integrity type or a cipher
/// spec that is not `name-[mode-]iv`.
pub fn tag_size(cipher: &str, integrity: &str) -> Option<u32> {
    let (_, mode, iv) = split_cipher(cipher)?;
    let mut iv_tag = match (mode, iv) {
        (_, "random") if mode == "xts" || mode == "ctr" => 16,
        ("gcm", "random") => 12,
        ("ccm", "random") => 8,
        ("", "random") => 16,
        _ => 0,
    };
    let auth = match integrity {
        "aead" => 16,
        "poly1305" => {
            if iv_tag != 0 {
                iv_tag = 12;
            }
            16
        }
        "hmac(sha1)" => 20,
        "hmac(sha256)" => 32,
        "hmac(sha512)" => 64,
        _ => return None,
    };
    Some(iv_tag + auth)
}

/// The dm-crypt cipher field for LUKS cipher `cipher` with integrity type `integrity`, in the
/// kernel crypto API form cryptsetup 2.6.1 loads: HMAC through `authenc(hmac(H),mode(name))`,
/// CCM as `rfc4309(ccm(aes))`, ChaCha20 with Poly1305 as `rfc7539(chacha20,poly1305)`, other
/// AEADs (`gcm(aes)`, `aegis128`) as they are; then `-<iv>`.
pub fn dm_cipher(cipher: &str, integrity: &str) -> Option<String> {
    let (name, mode, iv) = split_cipher(cipher)?;
    let inner = if mode.is_empty() {
        name.to_string()
    } else {
        format!("{mode}({name})")
    };
    let capi = match integrity {
        "aead" if mode == "ccm" => format!("rfc4309({inner})"),
        "aead" => inner,
        "poly1305" if mode.is_empty() => format!("rfc7539({name},poly1305)"),
        "poly1305" => return None,
        i if integrity_key_bytes(i).is_some_and(|k| k > 0) => format!("authenc({i},{inner})"),
        _ => return None,
    };
    Some(format!("capi:{capi}-{iv}"))
}

/// The dm-crypt optional argument for a tag of `tag_size` bytes (`integrity:32:aead`:
/// cryptsetup always names the type `aead`, `authenc` included).
pub fn crypt_integrity_option(tag_size: u32) -> String {
    format!("integrity:{tag_size}:aead")
}

/// Split `s` at its first comma outside parentheses.
fn split_top_comma(s: &str) -> Option<(&str, &str)> {
    let mut depth = 0i32;
    for (i, c) in s.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => return Some((&s[..i], &s[i + 1..])),
            _ => {}
        }
    }
    None
}

/// `mode(name)` or `name`.
fn mode_name(s: &str) -> (String, String) {
    match s.strip_suffix(')').and_then(|s| s.split_once('(')) {
        Some((mode, name)) => (name.to_string(), mode.to_string()),
        None => (s.to_string(), String::new()),
    }
}

/// The LUKS cipher and integrity type of a dm-crypt cipher field [`dm_cipher`] made (read back
/// from the kernel for `status`): `capi:authenc(hmac(sha256),xts(aes))-plain64` is
/// (`aes-xts-plain64`, `hmac(sha256)`). `None` for anything else (plain `aes-xts-plain64`,
/// other `capi:` forms).
pub fn parse_dm_cipher(field: &str) -> Option<(String, String)> {
    let rest = field.strip_prefix("capi:")?;
    let (capi, iv) = match rest.rfind(')') {
        Some(p) => (&rest[..=p], rest[p + 1..].strip_prefix('-')?),
        None => rest.split_once('-')?,
    };
    let (name, mode, integrity) = if let Some(inner) = capi
        .strip_prefix("authenc(")
        .and_then(|s| s.strip_suffix(')'))
    {
        let (i, c) = split_top_comma(inner)?;
        let (name, mode) = mode_name(c);
        (name, mode, i.to_string())
    } else if let Some(inner) = capi
        .strip_prefix("rfc4309(")
        .and_then(|s| s.strip_suffix(')'))
    {
        let (name, mode) = mode_name(inner);
        (name, mode, "aead".to_string())
    } else if let Some(inner) = capi
        .strip_prefix("rfc7539(")
        .and_then(|s| s.strip_suffix(",poly1305)"))
    {
        (inner.to_string(), String::new(), "poly1305".to_string())
    } else {
        let (name, mode) = mode_name(capi);
        (name, mode, "aead".to_string())
    };
    if name.is_empty() || iv.is_empty() {
        return None;
    }
    let cipher = if mode.is_empty() {
        format!("{name}-{iv}")
    } else {
        format!("{name}-{mode}-{iv}")
    };
    Some((cipher, integrity))
}

/// dm-integrity's superblock flag: the metadata padding is the fixed one (`fix_padding`).
pub const SB_FLAG_FIXED_PADDING: u32 = 1 << 3;

/// The dm-integrity superblock the kernel writes at the start of its area (the LUKS2 data
/// offset): the fields cryptsetup reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Superblock {
    /// Format version (1..=5 in Linux 6.1; 1 for the legacy padding, 4 with `fix_padding`).
    pub version: u8,
    /// Bytes of tag per sector.
    pub tag_size: u16,
    /// Journal sections.
    pub journal_sections: u32,
    /// The data sectors (512 bytes) the device provides: the size of the integrity mapping.
    pub provided_data_sectors: u64,
    /// `SB_FLAG_*`.
    pub flags: u32,
    /// log2 of the block size in 512-byte sectors.
    pub log2_sectors_per_block: u8,
}

impl Superblock {
    /// Bytes of the superblock cryptsetup reads.
    pub const SIZE: usize = 40;

    /// Parse the first bytes of the integrity area: `None` without the `integrt` magic or
    /// with a version this does not know (cryptsetup 2.6.1 takes 1..=5).
    pub fn parse(b: &[u8]) -> Option<Superblock> {
        if b.len() < Self::SIZE || &b[..8] != b"integrt\0" {
            return None;
        }
        let version = b[8];
        if !(1..=5).contains(&version) {
            return None;
        }
        let u16_at = |o: usize| u16::from_le_bytes([b[o], b[o + 1]]);
        let u32_at = |o: usize| u32::from_le_bytes(b[o..o + 4].try_into().expect("4 bytes"));
        let u64_at = |o: usize| u64::from_le_bytes(b[o..o + 8].try_into().expect("8 bytes"));
        Some(Superblock {
            version,
            tag_size: u16_at(10),
            journal_sections: u32_at(12),
            provided_data_sectors: u64_at(16),
            flags: u32_at(24),
            log2_sectors_per_block: b[28],
        })
    }

    /// Whether the metadata uses the fixed padding (`fix_padding` must be passed again).
    pub fn fixed_padding(&self) -> bool {
        self.flags & SB_FLAG_FIXED_PADDING != 0
    }

    /// The block size in bytes.
    pub fn block_size(&self) -> u32 {
        512u32 << self.log2_sectors_per_block.min(3)
    }
}

/// dm-integrity's modes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IntegrityMode {
    /// `J`: writes go through the journal (cryptsetup's default).
    Journal,
    /// `D`: direct writes, no journal (`--integrity-no-journal`, and luksFormat's wipe).
    Direct,
}

/// A dm-integrity target in external-tag mode (the tags are dm-crypt's), as cryptsetup 2.6.1
/// loads it for LUKS2: `<device> <offset> <tag size> <mode> <#opts> block_size:<n>
/// [fix_padding]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IntegrityTarget {
    /// First sector in the mapping.
    pub start: u64,
    /// Length in 512-byte sectors (the superblock's `provided_data_sectors`; 8 when the
    /// target is loaded only to have the kernel write the superblock).
    pub sectors: u64,
    /// The data device.
    pub device: DevT,
    /// The integrity area's start on the device (the LUKS2 data offset), in 512-byte
    /// sectors.
    pub offset: u64,
    /// Tag bytes per sector.
    pub tag_size: u32,
    /// Journal or direct.
    pub mode: IntegrityMode,
    /// Block size in bytes (the encryption sector size).
    pub block_size: u32,
    /// `fix_padding`: new volumes, and volumes whose superblock has the fixed padding.
    pub fix_padding: bool,
}

impl IntegrityTarget {
    /// The target type name.
    pub const TARGET_TYPE: &'static str = "integrity";

    /// The parameter string.
    pub fn params(&self) -> String {
        let mut opts = vec![format!("block_size:{}", self.block_size)];
        if self.fix_padding {
            opts.push("fix_padding".into());
        }
        format!(
            "{} {} {} {} {} {}",
            self.device,
            self.offset,
            self.tag_size,
            match self.mode {
                IntegrityMode::Journal => 'J',
                IntegrityMode::Direct => 'D',
            },
            opts.len(),
            opts.join(" ")
        )
    }

    /// As a table target.
    pub fn to_target(&self) -> Target {
        Target::Other {
            start: self.start,
            sectors: self.sectors,
            target_type: Self::TARGET_TYPE.into(),
            params: Zeroizing::new(self.params()),
        }
    }

    /// The data device, offset and tag size of an `integrity` target read back from the
    /// kernel (`None` for another target type).
    pub fn parse_device(t: &Target) -> Result<Option<(DevT, u64, u32)>> {
        let Target::Other {
            target_type,
            params,
            ..
        } = t
        else {
            return Ok(None);
        };
        if target_type != Self::TARGET_TYPE {
            return Ok(None);
        }
        let mut w = params.split_whitespace();
        let bad = || DmError::Parse("integrity target".into());
        let device: DevT = w.next().ok_or_else(bad)?.parse()?;
        let offset = w.next().and_then(|o| o.parse().ok()).ok_or_else(bad)?;
        let tag = w.next().and_then(|o| o.parse().ok()).ok_or_else(bad)?;
        Ok(Some((device, offset, tag)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The cipher fields, tags and options cryptsetup 2.6.1 loaded on Linux 6.1 (read back
    /// with `dmsetup table` in the reference VM), for the ciphers of luks2-integrity-test.
    #[test]
    fn cipher_fields_as_cryptsetup_loads_them() {
        let cases = [
            (
                "aes-xts-plain64",
                "hmac(sha256)",
                "capi:authenc(hmac(sha256),xts(aes))-plain64",
                32,
            ),
            (
                "aes-xts-random",
                "hmac(sha256)",
                "capi:authenc(hmac(sha256),xts(aes))-random",
                48,
            ),
            (
                "aes-cbc-essiv:sha256",
                "hmac(sha1)",
                "capi:authenc(hmac(sha1),cbc(aes))-essiv:sha256",
                20,
            ),
            (
                "aes-xts-plain64",
                "hmac(sha512)",
                "capi:authenc(hmac(sha512),xts(aes))-plain64",
                64,
            ),
            ("aes-gcm-random", "aead", "capi:gcm(aes)-random", 28),
            (
                "aes-ccm-random",
                "aead",
                "capi:rfc4309(ccm(aes))-random",
                24,
            ),
            (
                "chacha20-plain64",
                "poly1305",
                "capi:rfc7539(chacha20,poly1305)-plain64",
                16,
            ),
            (
                "chacha20-random",
                "poly1305",
                "capi:rfc7539(chacha20,poly1305)-random",
                28,
            ),
            ("aegis128-random", "aead", "capi:aegis128-random", 32),
        ];
        for (cipher, integrity, field, tag) in cases {
            assert_eq!(
                dm_cipher(cipher, integrity).as_deref(),
                Some(field),
                "{cipher}"
            );
            assert_eq!(
                tag_size(cipher, integrity),
                Some(tag),
                "{cipher} {integrity}"
            );
            assert_eq!(
                parse_dm_cipher(field),
                Some((cipher.to_string(), integrity.to_string())),
                "{field}"
            );
        }
        assert_eq!(crypt_integrity_option(48), "integrity:48:aead");
        assert_eq!(parse_dm_cipher("aes-xts-plain64"), None);
        assert_eq!(dm_cipher("aes-xts-plain64", "crc32"), None);
        assert_eq!(integrity_key_bytes("hmac(sha1)"), Some(20));
        assert_eq!(integrity_key_bytes("aead"), Some(0));
    }

    /// Superblocks the kernel wrote for cryptsetup 2.6.1 (first 32 bytes at the data offset).
    #[test]
    fn superblocks_written_by_the_kernel() {
        let mut legacy = [0u8; 40];
        legacy[..32].copy_from_slice(&[
            0x69, 0x6e, 0x74, 0x65, 0x67, 0x72, 0x74, 0x00, 0x01, 0x0f, 0x20, 0x00, 0x05, 0, 0, 0,
            0x40, 0xce, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x00, 0x0f, 0, 0,
        ]);
        let sb = Superblock::parse(&legacy).unwrap();
        assert_eq!(sb.version, 1);
        assert_eq!(sb.tag_size, 32);
        assert_eq!(sb.provided_data_sectors, 52800);
        assert!(!sb.fixed_padding());
        assert_eq!(sb.block_size(), 512);
        let mut fixed = [0u8; 40];
        fixed[..32].copy_from_slice(&[
            0x69, 0x6e, 0x74, 0x65, 0x67, 0x72, 0x74, 0x00, 0x04, 0x0f, 0x30, 0x00, 0x01, 0, 0, 0,
            0xf0, 0xdb, 0, 0, 0, 0, 0, 0, 0x08, 0, 0, 0, 0x03, 0x0c, 0, 0,
        ]);
        let sb = Superblock::parse(&fixed).unwrap();
        assert_eq!((sb.version, sb.tag_size), (4, 48));
        assert_eq!(sb.provided_data_sectors, 56304);
        assert!(sb.fixed_padding());
        assert_eq!(sb.block_size(), 4096);
        assert_eq!(Superblock::parse(&[0u8; 40]), None);
    }

    #[test]
    fn integrity_target_line() {
        let t = IntegrityTarget {
            start: 0,
            sectors: 8,
            device: DevT::new(254, 0),
            offset: 8192,
            tag_size: 48,
            mode: IntegrityMode::Journal,
            block_size: 4096,
            fix_padding: true,
        };
        assert_eq!(
            t.to_target().to_line().as_str(),
            "0 8 integrity 254:0 8192 48 J 2 block_size:4096 fix_padding"
        );
        let back = IntegrityTarget::parse_device(&t.to_target()).unwrap();
        assert_eq!(back, Some((DevT::new(254, 0), 8192, 48)));
    }
}
