//! The dm-crypt target: its table line, rendered as cryptsetup 2.6.1 renders it and parsed
//! back from what the kernel reports.
//!
//! ```text
//! <cipher> <key> <iv_offset> <device> <offset> [<#opts> <opts>...]
//! ```
//!
//! * `<key>` is the key in hex, `:<bytes>:<type>:<description>` for a key in the kernel
//!   keyring (cryptsetup: `:64:logon:cryptsetup:<uuid>-d0` for LUKS2), or `-` for an empty key
//!   (`cipher_null`).
//! * `<device>` is rendered as `major:minor`, which is also what the kernel prints back
//!   (cryptsetup loads a path, `/dev/vda`, and the kernel reports `254:0`).
//! * The optional arguments are rendered in cryptsetup's order (`get_dm_crypt_params` in
//!   lib/libdevmapper.c): `allow_discards same_cpu_crypt submit_from_crypt_cpus
//!   no_read_workqueue no_write_workqueue iv_large_sectors high_priority sector_size:<n>`
//!   then anything else (`integrity:...`), with `sector_size` omitted at 512. The kernel
//!   prints its own order, which differs only in that `sector_size:<n>` comes before
//!   `iv_large_sectors` (observed on Debian 12's 6.1: `4 allow_discards no_read_workqueue
//!   sector_size:4096 iv_large_sectors`); the parser accepts any order.

use std::fmt::Write as _;

use lukskit_crypto::SecretBuf;
use zeroize::Zeroizing;

use crate::devt::DevT;
use crate::error::{DmError, Result};

/// The kernel key types dm-crypt accepts for `:<size>:<type>:<description>` keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum KeyType {
    /// `logon`: the payload can never be read back from userspace (what cryptsetup uses).
    Logon,
    /// `user`: readable by its possessor.
    User,
    /// `encrypted` (kernel encrypted keys).
    Encrypted,
    /// `trusted` (TPM-sealed keys).
    Trusted,
}

impl KeyType {
    /// The kernel's name of the type.
    pub fn as_str(self) -> &'static str {
        match self {
            KeyType::Logon => "logon",
            KeyType::User => "user",
            KeyType::Encrypted => "encrypted",
            KeyType::Trusted => "trusted",
        }
    }

    fn parse(s: &str) -> Result<KeyType> {
        Ok(match s {
            "logon" => KeyType::Logon,
            "user" => KeyType::User,
            "encrypted" => KeyType::Encrypted,
            "trusted" => KeyType::Trusted,
            _ => return Err(DmError::Parse("unknown keyring key type".into())),
        })
    }
}

/// A key in the kernel keyring, referenced by a crypt table instead of the key itself.
#[derive(Debug, Clone)]
pub struct KeyringKey {
    /// Key size in bytes.
    pub size: usize,
    /// The key's type.
    pub key_type: KeyType,
    /// The key's description (cryptsetup: `cryptsetup:<uuid>-d<digest>`, see
    /// [`crate::keyring::luks2_key_description`]).
    pub description: String,
    /// The key itself, when [`crate::mapping::DeviceMapper`] should put it into the thread
    /// keyring while it loads the table (and revoke it right after, as the kernel keeps its
    /// own copy). `None` when the caller placed the key in a keyring itself, and always
    /// `None` for a parsed table.
    pub payload: Option<SecretBuf>,
}

/// The `<key>` field of a crypt table.
#[derive(Debug, Clone)]
pub enum CryptKey {
    /// The key itself, rendered in lower-case hex.
    Hex(SecretBuf),
    /// A key in the kernel keyring.
    Keyring(KeyringKey),
    /// No key: `-` (cipher_null).
    Empty,
    /// A key of `size` bytes that was not read (a table read without keys). Renders as
    /// zeros like `dmsetup table` without `--showkeys`; refused by table loads and messages.
    Redacted {
        /// Key size in bytes.
        size: usize,
    },
}

impl CryptKey {
    /// The key a crypt table should carry for volume key `vk`: a `logon` keyring reference
    /// with `description` when `keyring` (the kernel supports it, see
    /// [`crate::mapping::CryptFeatures::keyring`]) and a description is given, else hex;
    /// `Empty` for an empty key.
    pub fn for_volume_key(vk: &SecretBuf, description: Option<&str>, keyring: bool) -> CryptKey {
        if vk.is_empty() {
            return CryptKey::Empty;
        }
        match description {
            Some(d) if keyring => CryptKey::Keyring(KeyringKey {
                size: vk.len(),
                key_type: KeyType::Logon,
                description: d.to_string(),
                payload: Some(vk.clone()),
            }),
            _ => CryptKey::Hex(vk.clone()),
        }
    }

    /// Key size in bytes (0 for `Empty`).
    pub fn size(&self) -> usize {
        match self {
            CryptKey::Hex(k) => k.len(),
            CryptKey::Keyring(k) => k.size,
            CryptKey::Empty => 0,
            CryptKey::Redacted { size } => *size,
        }
    }

    /// True when the key lives in the kernel keyring (cryptsetup's `key location: keyring`).
    pub fn in_keyring(&self) -> bool {
        matches!(self, CryptKey::Keyring(_))
    }

    /// Append the key field to `out`.
    pub(crate) fn render_into(&self, out: &mut String) {
        match self {
            CryptKey::Hex(k) => {
                let mut h = Zeroizing::new(vec![0u8; k.len() * 2]);
                // Encoding into a buffer of exactly twice the length cannot fail.
                hex::encode_to_slice(k.as_bytes(), &mut h).expect("hex buffer size");
                out.push_str(std::str::from_utf8(&h).expect("hex is ASCII"));
            }
            CryptKey::Keyring(k) => {
                let _ = write!(out, ":{}:{}:{}", k.size, k.key_type.as_str(), k.description);
            }
            CryptKey::Empty => out.push('-'),
            CryptKey::Redacted { size } => {
                for _ in 0..*size {
                    out.push_str("00");
                }
            }
        }
    }

    /// The key field alone (for `key set <key>` messages), in a zeroizing string.
    pub fn render(&self) -> Zeroizing<String> {
        let mut s = Zeroizing::new(String::with_capacity(self.size() * 2 + 2));
        self.render_into(&mut s);
        s
    }

    /// Parse a key field. `with_key = false` turns a hex key into [`CryptKey::Redacted`].
    pub fn parse(field: &str, with_key: bool) -> Result<CryptKey> {
        if field == "-" {
            return Ok(CryptKey::Empty);
        }
        if let Some(rest) = field.strip_prefix(':') {
            let mut it = rest.splitn(3, ':');
            let size = it
                .next()
                .and_then(|s| s.parse::<usize>().ok())
                .ok_or_else(|| DmError::Parse("keyring key size".into()))?;
            let key_type = KeyType::parse(it.next().unwrap_or(""))?;
            let description = it
                .next()
                .filter(|d| !d.is_empty())
                .ok_or_else(|| DmError::Parse("keyring key description".into()))?;
            return Ok(CryptKey::Keyring(KeyringKey {
                size,
                key_type,
                description: description.to_string(),
                payload: None,
            }));
        }
        if field.is_empty() || !field.len().is_multiple_of(2) {
            return Err(DmError::Parse("hex key of odd length".into()));
        }
        if !with_key {
            if !field.bytes().all(|c| c.is_ascii_hexdigit()) {
                return Err(DmError::Parse("hex key".into()));
            }
            return Ok(CryptKey::Redacted {
                size: field.len() / 2,
            });
        }
        let mut k = SecretBuf::zeroed(field.len() / 2);
        hex::decode_to_slice(field, k.as_mut_bytes())
            .map_err(|_| DmError::Parse("hex key".into()))?;
        Ok(CryptKey::Hex(k))
    }
}

/// The optional boolean arguments of a crypt target.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CryptFlags {
    /// `allow_discards` (cryptsetup `--allow-discards`).
    pub allow_discards: bool,
    /// `same_cpu_crypt` (`--perf-same_cpu_crypt`).
    pub same_cpu_crypt: bool,
    /// `submit_from_crypt_cpus` (`--perf-submit_from_crypt_cpus`).
    pub submit_from_crypt_cpus: bool,
    /// `no_read_workqueue` (`--perf-no_read_workqueue`, dm-crypt >= 1.22).
    pub no_read_workqueue: bool,
    /// `no_write_workqueue` (`--perf-no_write_workqueue`, dm-crypt >= 1.22).
    pub no_write_workqueue: bool,
    /// `iv_large_sectors`: IVs count `sector_size` units, not 512-byte sectors (plain mode
    /// `--iv-large-sectors`, BITLK; never LUKS2).
    pub iv_large_sectors: bool,
    /// `high_priority` (dm-crypt >= 1.26, cryptsetup >= 2.7; not in Linux 6.1).
    pub high_priority: bool,
}

/// A dm-crypt target: one line of a crypt table.
#[derive(Debug, Clone)]
pub struct CryptTarget {
    /// First sector of the target in the mapping (512-byte sectors).
    pub start: u64,
    /// Length in 512-byte sectors (a multiple of `sector_size / 512`).
    pub sectors: u64,
    /// The cipher as dm-crypt takes it: `aes-xts-plain64`, `aes-cbc-essiv:sha256`,
    /// `capi:xts(aes)-plain64`, `cipher_null-ecb`.
    pub cipher: String,
    /// The key field.
    pub key: CryptKey,
    /// IV offset in 512-byte sectors (LUKS2 `iv_tweak`, plain `--skip`).
    pub iv_offset: u64,
    /// The backing device.
    pub device: DevT,
    /// Where the encrypted data starts on the device, in 512-byte sectors.
    pub offset: u64,
    /// Optional boolean arguments.
    pub flags: CryptFlags,
    /// Encryption sector size in bytes (512..4096, a power of two; omitted at 512).
    pub sector_size: u32,
    /// Other optional arguments, kept verbatim (`integrity:<n>:<type>`, ...), rendered last.
    pub extra_options: Vec<String>,
}

impl CryptTarget {
    /// The target type name.
    pub const TARGET_TYPE: &'static str = "crypt";

    /// A target with no optional arguments and 512-byte sectors.
    pub fn new(
        sectors: u64,
        cipher: &str,
        key: CryptKey,
        device: DevT,
        offset: u64,
    ) -> CryptTarget {
        CryptTarget {
            start: 0,
            sectors,
            cipher: cipher.to_string(),
            key,
            iv_offset: 0,
            device,
            offset,
            flags: CryptFlags::default(),
            sector_size: 512,
            extra_options: Vec::new(),
        }
    }

    /// The optional arguments, in cryptsetup 2.6.1's order.
    fn options(&self) -> Vec<String> {
        let f = &self.flags;
        let mut o: Vec<String> = [
            (f.allow_discards, "allow_discards"),
            (f.same_cpu_crypt, "same_cpu_crypt"),
            (f.submit_from_crypt_cpus, "submit_from_crypt_cpus"),
            (f.no_read_workqueue, "no_read_workqueue"),
            (f.no_write_workqueue, "no_write_workqueue"),
            (f.iv_large_sectors, "iv_large_sectors"),
            (f.high_priority, "high_priority"),
        ]
        .iter()
        .filter(|(on, _)| *on)
        .map(|(_, n)| n.to_string())
        .collect();
        if self.sector_size != 512 {
            o.push(format!("sector_size:{}", self.sector_size));
        }
        o.extend(self.extra_options.iter().cloned());
        o
    }

    /// Check what the kernel would refuse anyway, so the caller gets a clear error.
    pub fn validate(&self) -> Result<()> {
        let bad = |m: &str| Err(DmError::InvalidArgument(format!("crypt target: {m}")));
        if self.cipher.is_empty() || self.cipher.contains(char::is_whitespace) {
            return bad("cipher must be one word");
        }
        if !(512..=4096).contains(&self.sector_size) || !self.sector_size.is_power_of_two() {
            return bad("sector_size must be a power of two in 512..4096");
        }
        let unit = u64::from(self.sector_size / 512);
        if self.sectors == 0 || !self.sectors.is_multiple_of(unit) {
            return bad("length must be a non-zero multiple of the sector size");
        }
        if !self.iv_offset.is_multiple_of(unit) {
            return bad("iv_offset must be a multiple of the sector size");
        }
        match &self.key {
            CryptKey::Redacted { .. } => return bad("the key was not read (redacted)"),
            CryptKey::Keyring(k) => {
                if k.description.is_empty() || k.description.contains(char::is_whitespace) {
                    return bad("keyring description must be one non-empty word");
                }
                if let Some(p) = &k.payload {
                    if p.len() != k.size {
                        return bad("keyring payload size differs from the key size");
                    }
                }
            }
            _ => {}
        }
        if self
            .extra_options
            .iter()
            .any(|o| o.is_empty() || o.contains(char::is_whitespace))
        {
            return bad("optional arguments must be single words");
        }
        Ok(())
    }

    /// The parameter string (everything after `crypt` in a table line), in a zeroizing
    /// string as it may hold the key.
    pub fn params(&self) -> Zeroizing<String> {
        let mut s = Zeroizing::new(String::with_capacity(256 + self.key.size() * 2));
        s.push_str(&self.cipher);
        s.push(' ');
        self.key.render_into(&mut s);
        let _ = write!(s, " {} {} {}", self.iv_offset, self.device, self.offset);
        let opts = self.options();
        if !opts.is_empty() {
            let _ = write!(s, " {}", opts.len());
            for o in &opts {
                s.push(' ');
                s.push_str(o);
            }
        }
        s
    }

    /// Parse a crypt parameter string. `with_key = false` leaves a hex key
    /// [`CryptKey::Redacted`] (the key bytes are never copied out).
    pub fn parse_params(start: u64, sectors: u64, params: &str, with_key: bool) -> Result<Self> {
        let mut w = params.split(' ').filter(|w| !w.is_empty());
        let mut field = |what: &str| {
            w.next()
                .ok_or_else(|| DmError::Parse(format!("crypt target: missing {what}")))
        };
        let cipher = field("cipher")?.to_string();
        let key = CryptKey::parse(field("key")?, with_key)?;
        let num = |s: &str, what: &str| {
            s.parse::<u64>()
                .map_err(|_| DmError::Parse(format!("crypt target: {what}")))
        };
        let iv_offset = num(field("iv_offset")?, "iv_offset")?;
        let device: DevT = field("device")?.parse()?;
        let offset = num(field("offset")?, "offset")?;
        let mut t = CryptTarget {
            start,
            sectors,
            cipher,
            key,
            iv_offset,
            device,
            offset,
            flags: CryptFlags::default(),
            sector_size: 512,
            extra_options: Vec::new(),
        };
        let Some(count) = w.next() else {
            return Ok(t);
        };
        let count = num(count, "optional argument count")?;
        let opts: Vec<&str> = w.collect();
        if opts.len() as u64 != count {
            return Err(DmError::Parse(
                "crypt target: optional argument count".into(),
            ));
        }
        for o in opts {
            let f = &mut t.flags;
            match o {
                "allow_discards" => f.allow_discards = true,
                "same_cpu_crypt" => f.same_cpu_crypt = true,
                "submit_from_crypt_cpus" => f.submit_from_crypt_cpus = true,
                "no_read_workqueue" => f.no_read_workqueue = true,
                "no_write_workqueue" => f.no_write_workqueue = true,
                "iv_large_sectors" => f.iv_large_sectors = true,
                "high_priority" => f.high_priority = true,
                _ => {
                    if let Some(n) = o.strip_prefix("sector_size:") {
                        t.sector_size = n
                            .parse()
                            .map_err(|_| DmError::Parse("crypt target: sector_size".into()))?;
                    } else {
                        t.extra_options.push(o.to_string());
                    }
                }
            }
        }
        Ok(t)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_key_renders_lower_case_and_parses_back() {
        let k = CryptKey::Hex(SecretBuf::from_slice(&[0xde, 0xad, 0x0b, 0xef]));
        assert_eq!(k.render().as_str(), "dead0bef");
        match CryptKey::parse("DEAD0bef", true).unwrap() {
            CryptKey::Hex(b) => assert_eq!(b.as_bytes(), &[0xde, 0xad, 0x0b, 0xef]),
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            CryptKey::parse("dead0bef", false).unwrap(),
            CryptKey::Redacted { size: 4 }
        ));
        assert!(CryptKey::parse("abc", true).is_err());
        assert!(CryptKey::parse("zz", true).is_err());
    }

    #[test]
    fn keyring_key_description_may_hold_colons() {
        let k = CryptKey::parse(":32:user:a:b:c", true).unwrap();
        match &k {
            CryptKey::Keyring(r) => {
                assert_eq!(r.size, 32);
                assert_eq!(r.key_type, KeyType::User);
                assert_eq!(r.description, "a:b:c");
                assert!(r.payload.is_none());
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(k.render().as_str(), ":32:user:a:b:c");
        assert!(CryptKey::parse(":32:bogus:x", true).is_err());
        assert!(CryptKey::parse(":x:logon:x", true).is_err());
        assert!(CryptKey::parse(":32:logon:", true).is_err());
    }

    #[test]
    fn for_volume_key_picks_keyring_hex_or_empty() {
        let vk = SecretBuf::from_slice(&[1u8; 64]);
        assert!(CryptKey::for_volume_key(&vk, Some("cryptsetup:u-d0"), true).in_keyring());
        assert!(matches!(
            CryptKey::for_volume_key(&vk, Some("cryptsetup:u-d0"), false),
            CryptKey::Hex(_)
        ));
        assert!(matches!(
            CryptKey::for_volume_key(&vk, None, true),
            CryptKey::Hex(_)
        ));
        assert!(matches!(
            CryptKey::for_volume_key(&SecretBuf::zeroed(0), Some("d"), true),
            CryptKey::Empty
        ));
    }

    #[test]
    fn options_in_cryptsetup_order_with_count() {
        let mut t = CryptTarget::new(
            163840,
            "aes-xts-plain64",
            CryptKey::Empty,
            DevT::new(254, 0),
            0,
        );
        t.flags = CryptFlags {
            allow_discards: true,
            same_cpu_crypt: true,
            submit_from_crypt_cpus: true,
            no_read_workqueue: true,
            no_write_workqueue: true,
            iv_large_sectors: true,
            high_priority: false,
        };
        t.sector_size = 4096;
        assert_eq!(
            t.params().as_str(),
            "aes-xts-plain64 - 0 254:0 0 7 allow_discards same_cpu_crypt \
             submit_from_crypt_cpus no_read_workqueue no_write_workqueue iv_large_sectors \
             sector_size:4096"
        );
    }

    #[test]
    fn validate_refuses_what_the_kernel_refuses() {
        let mut t = CryptTarget::new(8, "aes-xts-plain64", CryptKey::Empty, DevT::new(1, 2), 0);
        t.validate().unwrap();
        t.sector_size = 1000;
        assert!(t.validate().is_err());
        t.sector_size = 4096;
        t.sectors = 12;
        assert!(t.validate().is_err());
        t.sectors = 16;
        t.validate().unwrap();
        t.iv_offset = 3;
        assert!(t.validate().is_err());
        t.iv_offset = 8;
        t.key = CryptKey::Redacted { size: 64 };
        assert!(t.validate().is_err());
    }

    #[test]
    fn parse_rejects_wrong_option_count_and_short_lines() {
        assert!(CryptTarget::parse_params(
            0,
            8,
            "aes-xts-plain64 - 0 254:0 0 2 allow_discards",
            true
        )
        .is_err());
        assert!(CryptTarget::parse_params(0, 8, "aes-xts-plain64 - 0 254:0", true).is_err());
        assert!(CryptTarget::parse_params(0, 8, "aes-xts-plain64 - x 254:0 0", true).is_err());
    }

    #[test]
    fn parse_errors_never_show_the_key() {
        let line = "aes-xts-plain64 0123456789abcdef0123456789abcdef 0 nodevice 0";
        let e = CryptTarget::parse_params(0, 8, line, true)
            .unwrap_err()
            .to_string();
        assert!(!e.contains("0123456789abcdef"), "{e}");
    }
}
