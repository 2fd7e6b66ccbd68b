//! From a secret to the FVEK, as cryptsetup 2.6.1's `BITLK_get_volume_key`: every VMK in
//! order is tried with the one secret it was given (a password, a recovery password, or the
//! contents of a `.BEK` startup key file); the first VMK that decrypts gives the FVEK.
//!
//! The outcome is cryptsetup's: its error code is that of the last VMK tried (so a wrong
//! password on a volume whose last VMK is a recovery password is "No key available", exit
//! 2, but where the password VMK comes last it is a silent failure, exit 1), and the messages
//! it prints on the way are collected in order.

use super::header::{
    entry_type, value_type, EncryptedKey, Guid, Metadata, Protection, Vmk, ENTRY_HEADER_LEN,
};
use lukskit_crypto::bitlk::{
    aes256_ccm_decrypt, password_initial, recovery_initial, stretch, CcmError,
};
use lukskit_crypto::SecretBuf;

/// cryptsetup's error codes on this path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Errno {
    /// EPERM: "No key available with this passphrase." (exit 2).
    Perm,
    /// EINVAL (exit 1).
    Inval,
    /// ENOTSUP (exit 1).
    NotSup,
    /// ENOMEM (exit 3).
    NoMem,
}

impl Errno {
    /// cryptsetup's exit code for it.
    pub fn exit_code(self) -> i32 {
        match self {
            Errno::Perm => 2,
            Errno::NoMem => 3,
            Errno::Inval | Errno::NotSup => 1,
        }
    }
}

/// A failed unlock: the last error, and the messages cryptsetup printed on the way.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyFailure {
    /// The error code.
    pub errno: Errno,
    /// cryptsetup's `log_err` lines, in order.
    pub messages: Vec<String>,
}

/// The size of the metadata before a decrypted key (`BITLK_OPEN_KEY_METADATA_LEN`).
const OPEN_KEY_METADATA_LEN: usize = 12;
/// A recovery password: 8 groups of 6 digits with dashes.
const RECOVERY_KEY_LEN: usize = 55;
/// The header of a `.BEK` file.
const BEK_HEADER_LEN: usize = 48;
/// The startup key entry's own header after the entry header.
const STARTUP_KEY_HEADER_LEN: usize = 24;

/// The FVEK (dm-crypt key) of the volume, from `secret`.
pub fn volume_key(md: &Metadata, secret: &[u8]) -> Result<SecretBuf, KeyFailure> {
    let mut messages = Vec::new();
    let Some(fvek) = &md.fvek else {
        return Err(KeyFailure {
            errno: Errno::Inval,
            messages: vec!["BITLK metadata has no FVEK entry.".into()],
        });
    };
    let mut r: Result<(), Errno> = Ok(());
    for vmk in &md.vmks {
        let dec_key = match vmk.protection {
            Protection::Passphrase => stretch(&password_initial(secret), &vmk.salt),
            Protection::RecoveryPassphrase => match recovery_key(secret) {
                Some(k) => stretch(&recovery_initial(k.as_bytes()), &vmk.salt),
                None => {
                    r = Err(Errno::Perm);
                    continue;
                }
            },
            Protection::StartupKey => match startup_key(secret, vmk, &md.guid, &mut messages) {
                Ok(k) => k,
                Err(e) => {
                    r = Err(e);
                    continue;
                }
            },
            _ => {
                if r.is_ok() {
                    r = Err(Errno::NotSup);
                }
                continue;
            }
        };
        let Some(first) = vmk.keys.first() else {
            // cryptsetup dereferences a missing key here; lukskit takes it as a VMK that
            // does not decrypt.
            r = Err(Errno::Inval);
            continue;
        };
        let enc = EncryptedKey {
            nonce: vmk.nonce,
            tag: vmk.tag,
            data: first.clone(),
        };
        let vmk_key = match decrypt_key(&enc, &dec_key, None, &mut messages) {
            Ok(k) => k,
            Err(e) => {
                r = Err(e);
                continue;
            }
        };
        let elephant_128 =
            (md.cipher.mode == "cbc-elephant" && md.cipher.key_bits == 256).then_some(());
        match decrypt_key(fvek, &vmk_key, elephant_128, &mut messages) {
            Ok(k) => return Ok(k),
            Err(e) => r = Err(e),
        }
    }
    Err(KeyFailure {
        errno: r.err().unwrap_or(Errno::Perm),
        messages,
    })
}

/// `decrypt_key`: AES-256-CCM with `key`, the size in the first two bytes checked, the
/// 12-byte metadata dropped. `elephant_128`: the FVEK of 128-bit AES-CBC with Elephant,
/// whose 64 bytes are CBC key, 16 unused, elephant key, 16 unused — the key is the two keys.
fn decrypt_key(
    enc: &EncryptedKey,
    key: &SecretBuf,
    elephant_128: Option<()>,
    messages: &mut Vec<String>,
) -> Result<SecretBuf, Errno> {
    if enc.data.is_empty() {
        // crypt_safe_alloc(0) fails.
        return Err(Errno::NoMem);
    }
    let out = match aes256_ccm_decrypt(key.as_bytes(), &enc.nonce, &enc.tag, &enc.data) {
        Ok(o) => o,
        Err(CcmError::Tag) | Err(CcmError::KeyLength) => return Err(Errno::Inval),
    };
    let b = out.as_bytes();
    let size = if b.len() >= 2 {
        usize::from(u16::from_le_bytes([b[0], b[1]]))
    } else {
        usize::MAX
    };
    if size != b.len() {
        messages.push("Unexpected key data size.".into());
        return Err(Errno::Inval);
    }
    let o = OPEN_KEY_METADATA_LEN;
    if elephant_128.is_some() {
        if b.len() < o + 48 {
            messages.push("Unexpected key data size.".into());
            return Err(Errno::Inval);
        }
        let mut k = SecretBuf::zeroed(32);
        k.as_mut_bytes()[..16].copy_from_slice(&b[o..o + 16]);
        k.as_mut_bytes()[16..].copy_from_slice(&b[o + 32..o + 48]);
        return Ok(k);
    }
    if b.len() < o {
        return Err(Errno::NoMem);
    }
    Ok(SecretBuf::from_slice(&b[o..]))
}

/// `get_recovery_key`: a recovery password (55 characters, one trailing newline allowed)
/// as its 16-byte key, each group of six read as C's `strtol` reads it and divided by 11;
/// `None` when it is not one.
fn recovery_key(password: &[u8]) -> Option<SecretBuf> {
    let p = match password.len() {
        RECOVERY_KEY_LEN => password,
        n if n == RECOVERY_KEY_LEN + 1 && password[n - 1] == b'\n' => &password[..n - 1],
        _ => return None,
    };
    if (6..p.len()).step_by(7).any(|i| p[i] != b'-') {
        return None;
    }
    let mut key = SecretBuf::zeroed(16);
    for (j, part) in p.chunks(7).enumerate() {
        let n = strtol(&part[..6]);
        if n % 11 != 0 {
            return None;
        }
        key.as_mut_bytes()[2 * j..2 * j + 2].copy_from_slice(&((n / 11) as u16).to_le_bytes());
    }
    Some(key)
}

/// C's `strtol(s, NULL, 10)` of a string of at most six bytes (cut at a NUL): leading
/// white space, a sign, digits; 0 when there are none.
fn strtol(s: &[u8]) -> i64 {
    let s = s.split(|&b| b == 0).next().unwrap_or(&[]);
    let mut i = 0;
    while i < s.len() && matches!(s[i], b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r') {
        i += 1;
    }
    let neg = match s.get(i) {
        Some(b'-') => {
            i += 1;
            true
        }
        Some(b'+') => {
            i += 1;
            false
        }
        _ => false,
    };
    let mut n = 0i64;
    while let Some(d) = s.get(i).filter(|b| b.is_ascii_digit()) {
        n = n * 10 + i64::from(d - b'0');
        i += 1;
    }
    if neg {
        -n
    } else {
        n
    }
}

/// `get_startup_key`: the external key of a `.BEK` file for `vmk`.
fn startup_key(
    bek: &[u8],
    vmk: &Vmk,
    volume_guid: &Guid,
    messages: &mut Vec<String>,
) -> Result<SecretBuf, Errno> {
    if bek.len() < BEK_HEADER_LEN + 6 {
        return Err(Errno::Perm);
    }
    let guid = Guid(bek[16..32].try_into().map_err(|_| Errno::Inval)?);
    if guid != vmk.guid {
        return Err(Errno::Perm);
    }
    let le32 = |at: usize| u32::from_le_bytes([bek[at], bek[at + 1], bek[at + 2], bek[at + 3]]);
    let version = le32(4);
    if version != 1 {
        messages.push(format!("Unsupported BEK metadata version {version}"));
        return Err(Errno::NotSup);
    }
    let size = le32(0);
    if u64::from(size) != bek.len() as u64 {
        messages.push(format!(
            "Unexpected BEK metadata size {size} does not match BEK file length"
        ));
        return Err(Errno::Inval);
    }
    let le16 = |at: usize| u16::from_le_bytes([bek[at], bek[at + 1]]);
    let h = BEK_HEADER_LEN;
    if usize::from(le16(h)) < ENTRY_HEADER_LEN {
        return Err(Errno::Inval);
    }
    if le16(h + 2) == entry_type::STARTUP_KEY && le16(h + 4) == value_type::EXTERNAL_KEY {
        external_key(
            bek,
            h + ENTRY_HEADER_LEN + STARTUP_KEY_HEADER_LEN,
            volume_guid,
            messages,
        )
    } else {
        messages.push("Unexpected metadata entry found when parsing startup key.".into());
        Err(Errno::Inval)
    }
}

/// `parse_external_key_entry`: the key property of a startup key's entries in
/// `data[start..]`.
fn external_key(
    data: &[u8],
    mut start: usize,
    volume_guid: &Guid,
    messages: &mut Vec<String>,
) -> Result<SecretBuf, Errno> {
    let end = data.len();
    let le16 = |at: usize| u16::from_le_bytes([data[at], data[at + 1]]);
    while end.saturating_sub(start) >= 6 {
        let size = usize::from(le16(start));
        if size == 0 {
            break;
        }
        if size > end - start {
            return Err(Errno::Inval);
        }
        let kind = le16(start + 2);
        let value = le16(start + 4);
        if kind != entry_type::PROPERTY && kind != entry_type::VOLUME_GUID {
            messages.push(format!(
                "Unexpected metadata entry type '{kind}' found when parsing external key."
            ));
            return Err(Errno::Inval);
        }
        match value {
            value_type::KEY => {
                if size < ENTRY_HEADER_LEN + 4 {
                    return Err(Errno::Inval);
                }
                return Ok(SecretBuf::from_slice(
                    &data[start + ENTRY_HEADER_LEN + 4..start + size],
                ));
            }
            value_type::STRING => {}
            value_type::GUID => {
                if end - start < ENTRY_HEADER_LEN + 16 {
                    return Err(Errno::Inval);
                }
                let at = start + ENTRY_HEADER_LEN;
                let g = Guid(data[at..at + 16].try_into().map_err(|_| Errno::Inval)?);
                if g != *volume_guid {
                    messages.push(format!(
                        "BEK file GUID '{g}' does not match GUID of the volume."
                    ));
                    return Err(Errno::Inval);
                }
            }
            other => {
                messages.push(format!(
                    "Unexpected metadata entry value '{other}' found when parsing external key."
                ));
                return Err(Errno::Inval);
            }
        }
        start += size;
    }
    Err(Errno::Inval)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recovery_passwords_as_cryptsetup_reads_them() {
        let rp = b"235818-357951-253979-013365-241120-245575-342914-591910";
        let k = recovery_key(rp).unwrap();
        assert_eq!(
            &k.as_bytes()[..2],
            &((235_818u32 / 11) as u16).to_le_bytes()
        );
        let mut nl = rp.to_vec();
        nl.push(b'\n');
        assert_eq!(recovery_key(&nl).unwrap().as_bytes(), k.as_bytes());
        // A group not divisible by 11, a missing dash, a wrong length: not a recovery key.
        assert!(recovery_key(b"235818-357951-253979-013365-241120-245575-342914-591911").is_none());
        assert!(recovery_key(b"235818 357951-253979-013365-241120-245575-342914-591910").is_none());
        assert!(recovery_key(&rp[..54]).is_none());
        // strtol: groups without digits are 0, a sign is read.
        let odd = b"abcdef-+00011-    11-000000-000000-000000-000000-00-011";
        let k = recovery_key(odd).unwrap();
        assert_eq!(&k.as_bytes()[..6], &[0, 0, 1, 0, 1, 0]);
        assert_eq!(strtol(b"-00011"), -11);
    }
}
