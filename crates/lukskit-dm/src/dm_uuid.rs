//! DM UUIDs in cryptsetup's form: `CRYPT-<TYPE>-[<uuid without dashes>-]<name>`.
//!
//! Observed with cryptsetup 2.6.1 on Debian 12 (`dmsetup info -c -o name,uuid,attr`):
//! `CRYPT-LUKS2-11111111222233334444555555555555-l2`,
//! `CRYPT-LUKS1-11111111222233334444555555555557-l1`, `CRYPT-PLAIN-pl`. lsblk, systemd and
//! Debian's initramfs scripts parse this form, and cryptsetup's `status`/`close` recognise
//! their devices by it.

use crate::error::{DmError, Result};
use crate::ioctl::UUID_LEN;

/// The prefix of every cryptsetup-managed DM UUID.
pub const PREFIX: &str = "CRYPT-";

/// The DM UUID cryptsetup gives mapping `name` of a device of `crypt_type` (`LUKS1`,
/// `LUKS2`, `PLAIN`, `TCRYPT`, `BITLK`, ...) with on-disk UUID `uuid` (LUKS; `None` for
/// PLAIN). `uuid` must be a canonical 36-character UUID; its dashes are dropped, its case
/// kept. Fails where cryptsetup would (a malformed UUID) or where the kernel would (longer
/// than 128 bytes).
pub fn crypt_dm_uuid(crypt_type: &str, uuid: Option<&str>, name: &str) -> Result<String> {
    if crypt_type.is_empty() || crypt_type.contains('-') {
        return Err(DmError::InvalidArgument(format!(
            "device type {crypt_type:?} for a DM UUID"
        )));
    }
    let mut s = format!("{PREFIX}{crypt_type}-");
    if let Some(u) = uuid {
        if !is_canonical_uuid(u) {
            return Err(DmError::InvalidArgument(format!(
                "UUID {u:?} has invalid format"
            )));
        }
        s.extend(u.chars().filter(|&c| c != '-'));
        s.push('-');
    }
    s.push_str(name);
    if s.len() >= UUID_LEN {
        return Err(DmError::InvalidArgument(format!(
            "DM UUID for device {name} would be truncated"
        )));
    }
    Ok(s)
}

/// A parsed cryptsetup DM UUID.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CryptDmUuid {
    /// The device type (`LUKS2`, `PLAIN`, ...).
    pub crypt_type: String,
    /// The on-disk UUID without dashes (32 hex digits), when present.
    pub uuid_hex: Option<String>,
    /// The mapping name part.
    pub name: String,
}

/// Parse a DM UUID made by [`crypt_dm_uuid`] (or cryptsetup); `None` when it is not one.
/// The UUID part is recognised as 32 hex digits followed by `-` (never for `PLAIN`).
pub fn parse_crypt_dm_uuid(dm_uuid: &str) -> Option<CryptDmUuid> {
    let rest = dm_uuid.strip_prefix(PREFIX)?;
    let (ty, rest) = rest.split_once('-')?;
    if ty.is_empty() {
        return None;
    }
    let b = rest.as_bytes();
    if ty != "PLAIN" && b.len() > 33 && b[32] == b'-' && b[..32].iter().all(u8::is_ascii_hexdigit) {
        return Some(CryptDmUuid {
            crypt_type: ty.to_string(),
            uuid_hex: Some(rest[..32].to_string()),
            name: rest[33..].to_string(),
        });
    }
    Some(CryptDmUuid {
        crypt_type: ty.to_string(),
        uuid_hex: None,
        name: rest.to_string(),
    })
}

/// `xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx` with hex digits (what libuuid's parser accepts).
fn is_canonical_uuid(u: &str) -> bool {
    let b = u.as_bytes();
    b.len() == 36
        && b.iter().enumerate().all(|(i, c)| match i {
            8 | 13 | 18 | 23 => *c == b'-',
            _ => c.is_ascii_hexdigit(),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    // Strings observed in the reference VM with cryptsetup 2.6.1 (Debian 12, Linux 6.1):
    // `cryptsetup --debug open` printed "DM-UUID is ..." and `dmsetup info -c -o
    // name,uuid,attr` showed the same UUID for the mappings below.
    #[test]
    fn matches_cryptsetup_2_6_1() {
        assert_eq!(
            crypt_dm_uuid("LUKS2", Some("11111111-2222-3333-4444-555555555555"), "l2").unwrap(),
            "CRYPT-LUKS2-11111111222233334444555555555555-l2"
        );
        assert_eq!(
            crypt_dm_uuid("LUKS1", Some("11111111-2222-3333-4444-555555555557"), "l1").unwrap(),
            "CRYPT-LUKS1-11111111222233334444555555555557-l1"
        );
        assert_eq!(
            crypt_dm_uuid("PLAIN", None, "pl").unwrap(),
            "CRYPT-PLAIN-pl"
        );
    }

    #[test]
    fn refuses_bad_uuid_and_overlong_result() {
        assert!(crypt_dm_uuid("LUKS2", Some("1111"), "x").is_err());
        assert!(crypt_dm_uuid("LUKS2", Some("11111111-2222-3333-4444-55555555555g"), "x").is_err());
        // The kernel takes up to 128 bytes (DM_UUID_LEN 129 with the NUL).
        let name = "n".repeat(128 - "CRYPT-PLAIN-".len());
        assert!(crypt_dm_uuid("PLAIN", None, &name).is_ok());
        assert!(crypt_dm_uuid("PLAIN", None, &format!("{name}x")).is_err());
    }

    #[test]
    fn parse_back() {
        let p = parse_crypt_dm_uuid("CRYPT-LUKS2-11111111222233334444555555555555-my-vol").unwrap();
        assert_eq!(p.crypt_type, "LUKS2");
        assert_eq!(
            p.uuid_hex.as_deref(),
            Some("11111111222233334444555555555555")
        );
        assert_eq!(p.name, "my-vol");
        let p = parse_crypt_dm_uuid("CRYPT-PLAIN-pl").unwrap();
        assert_eq!(
            (p.crypt_type.as_str(), p.uuid_hex, p.name.as_str()),
            ("PLAIN", None, "pl")
        );
        assert!(parse_crypt_dm_uuid("LVM-abc").is_none());
    }
}
