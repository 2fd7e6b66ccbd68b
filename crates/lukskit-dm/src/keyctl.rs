//! Keys that users name, in the keyrings they choose: what cryptsetup 2.7's
//! `--link-vk-to-keyring` and `--volume-key-keyring` and Debian's `decrypt_keyctl` keyscript
//! (a passphrase cache) do with the kernel keyring, through the `add_key(2)`,
//! `request_key(2)` and `keyctl(2)` system calls (no libkeyutils: the static builds stay free
//! of C libraries).
//!
//! Names follow keyctl(1)'s KEY IDENTIFIERS, as cryptsetup 2.7 reads them
//! (lib/utils_keyring.c, `keyring_find_key_id_by_name`): a number is a key's serial; `@t`,
//! `@p`, `@s`, `@u`, `@us`, `@g` are the special keyrings of the calling process; `%TYPE:DESC`
//! is the key of that type and description the process can find (`%:DESC` is a keyring).
//!
//! Payloads read back land straight in [`SecretBuf`]s; payloads added are copied by the
//! kernel, the caller keeps (and wipes) its own.

use std::ffi::{CStr, CString};
use std::io;

use lukskit_crypto::SecretBuf;

use crate::error::{DmError, Result};

const KEYCTL_UNLINK: libc::c_long = 9;
const KEYCTL_SEARCH: libc::c_long = 10;
const KEYCTL_READ: libc::c_long = 11;
const KEYCTL_SET_TIMEOUT: libc::c_long = 15;

/// `KEY_SPEC_THREAD_KEYRING` (`@t`).
pub const KEY_SPEC_THREAD_KEYRING: i32 = -1;
/// `KEY_SPEC_PROCESS_KEYRING` (`@p`).
pub const KEY_SPEC_PROCESS_KEYRING: i32 = -2;
/// `KEY_SPEC_SESSION_KEYRING` (`@s`).
pub const KEY_SPEC_SESSION_KEYRING: i32 = -3;
/// `KEY_SPEC_USER_KEYRING` (`@u`).
pub const KEY_SPEC_USER_KEYRING: i32 = -4;
/// `KEY_SPEC_USER_SESSION_KEYRING` (`@us`).
const KEY_SPEC_USER_SESSION_KEYRING: i32 = -5;
/// `KEY_SPEC_GROUP_KEYRING` (`@g`).
const KEY_SPEC_GROUP_KEYRING: i32 = -6;

/// The largest `user` key payload the kernel stores (32767 bytes); a larger answer from
/// `KEYCTL_READ` is refused rather than allocated.
pub const MAX_USER_KEY_SIZE: usize = 32767;

/// The largest payload read back (a `user` key holds at most 32767 bytes).
const MAX_PAYLOAD: usize = MAX_USER_KEY_SIZE;

fn os_err(op: &'static str) -> DmError {
    DmError::Keyring {
        op,
        source: io::Error::last_os_error(),
    }
}

fn cstring(s: &str) -> Result<CString> {
    CString::new(s).map_err(|_| DmError::InvalidArgument("NUL in a key name".into()))
}

/// The serial of the key of type `ty` described `desc` that this process possesses, found
/// with `request_key(2)` through the thread, process and session keyrings without an upcall.
pub(crate) fn request_key(ty: &CStr, desc: &CStr) -> Result<i32> {
    // SAFETY: request_key(2) with two valid NUL-terminated strings, a null callout (no
    // upcall) and no destination keyring; it reads only the strings.
    let r = unsafe {
        libc::syscall(
            libc::SYS_request_key,
            ty.as_ptr(),
            desc.as_ptr(),
            std::ptr::null::<libc::c_char>(),
            0 as libc::c_long,
        )
    };
    if r < 0 {
        return Err(os_err("request_key"));
    }
    // A key serial number is a positive 32-bit integer (key_serial_t).
    i32::try_from(r)
        .map_err(|_| DmError::InvalidArgument(format!("request_key returned serial {r}")))
}

/// A key or keyring as keyctl(1) names it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum KeyName {
    /// A serial number, or one of the special keyrings (negative `KEY_SPEC_*` values).
    Id(i32),
    /// `%TYPE:DESC`: the key of `kind` described `description` the process can find.
    Typed {
        /// The key type (`user`, `logon`, `keyring`, …).
        kind: String,
        /// Its description.
        description: String,
    },
}

impl KeyName {
    /// Parse a keyctl(1) key identifier; `None` for one that is not (an unknown `@x`, an
    /// empty type or description, a number out of range).
    pub fn parse(s: &str) -> Option<KeyName> {
        if let Some(special) = s.strip_prefix('@') {
            return Some(KeyName::Id(match special {
                "t" => KEY_SPEC_THREAD_KEYRING,
                "p" => KEY_SPEC_PROCESS_KEYRING,
                "s" => KEY_SPEC_SESSION_KEYRING,
                "u" => KEY_SPEC_USER_KEYRING,
                "us" => KEY_SPEC_USER_SESSION_KEYRING,
                "g" => KEY_SPEC_GROUP_KEYRING,
                _ => return None,
            }));
        }
        if let Some(rest) = s.strip_prefix('%') {
            let (kind, description) = rest.split_once(':')?;
            let kind = if kind.is_empty() { "keyring" } else { kind };
            if description.is_empty() {
                return None;
            }
            return Some(KeyName::Typed {
                kind: kind.into(),
                description: description.into(),
            });
        }
        let n = if let Some(hex) = s.strip_prefix("0x") {
            i64::from_str_radix(hex, 16).ok()?
        } else {
            s.parse::<i64>().ok()?
        };
        i32::try_from(n).ok().filter(|&n| n > 0).map(KeyName::Id)
    }

    /// The serial number this name stands for (special keyrings stay their `KEY_SPEC_*`
    /// value, which the system calls accept). A typed name is looked up with
    /// `request_key(2)` without an upcall: in the thread, process and session keyrings.
    pub fn resolve(&self) -> Result<i32> {
        match self {
            KeyName::Id(n) => Ok(*n),
            KeyName::Typed { kind, description } => {
                request_key(&cstring(kind)?, &cstring(description)?)
            }
        }
    }
}

/// Add (or update: a key of the same type and description in `keyring` is replaced) a key
/// of type `kind` (`user` or `logon`) described `description` with `payload` to `keyring`
/// (a serial or `KEY_SPEC_*`); its serial.
pub fn add(kind: &str, description: &str, payload: &[u8], keyring: i32) -> Result<i32> {
    let ty = cstring(kind)?;
    let desc = cstring(description)?;
    // SAFETY: add_key(2) reads the two NUL-terminated strings and `payload.len()` bytes at
    // `payload.as_ptr()`, all valid for the duration of the call.
    let r = unsafe {
        libc::syscall(
            libc::SYS_add_key,
            ty.as_ptr(),
            desc.as_ptr(),
            payload.as_ptr(),
            payload.len(),
            keyring as libc::c_long,
        )
    };
    if r < 0 {
        return Err(os_err("add_key"));
    }
    Ok(r as i32)
}

/// The key of type `kind` described `description` in `keyring` (searched recursively, as
/// `keyctl search`), or `None` when there is none (or it expired or was revoked).
pub fn search(keyring: i32, kind: &str, description: &str) -> Result<Option<i32>> {
    let ty = cstring(kind)?;
    let desc = cstring(description)?;
    // SAFETY: keyctl(KEYCTL_SEARCH, keyring, type, description, dest) reads the two
    // NUL-terminated strings; dest 0 links the key nowhere.
    let r = unsafe {
        libc::syscall(
            libc::SYS_keyctl,
            KEYCTL_SEARCH,
            keyring as libc::c_long,
            ty.as_ptr(),
            desc.as_ptr(),
            0 as libc::c_long,
        )
    };
    if r < 0 {
        let e = io::Error::last_os_error();
        return match e.raw_os_error() {
            Some(libc::ENOKEY) | Some(libc::EKEYEXPIRED) | Some(libc::EKEYREVOKED) => Ok(None),
            _ => Err(DmError::Keyring {
                op: "search",
                source: e,
            }),
        };
    }
    Ok(Some(r as i32))
}

/// The payload of key `serial` (`keyctl pipe`), at most `MAX_PAYLOAD` bytes. A `logon`
/// key's payload cannot be read (`EOPNOTSUPP`).
pub fn read(serial: i32) -> Result<SecretBuf> {
    let mut size = 0usize;
    loop {
        let mut buf = SecretBuf::zeroed(size.max(1));
        // SAFETY: keyctl(KEYCTL_READ, serial, buf, len) writes at most len bytes to buf,
        // which is valid for len bytes; with len 0 it only reports the payload's length.
        let r = unsafe {
            libc::syscall(
                libc::SYS_keyctl,
                KEYCTL_READ,
                serial as libc::c_long,
                buf.as_mut_bytes().as_mut_ptr(),
                size,
            )
        };
        if r < 0 {
            return Err(os_err("read"));
        }
        let len = r as usize;
        if len > MAX_PAYLOAD {
            return Err(DmError::InvalidArgument(format!(
                "a kernel key of {len} bytes is larger than lukskit reads"
            )));
        }
        if len <= size {
            return Ok(SecretBuf::from_slice(&buf.as_bytes()[..len]));
        }
        // The payload grew (or this was the size query): read again with room for it.
        size = len;
    }
}

/// Let key `serial` expire `seconds` from now (`keyctl timeout`; 0 clears the timeout).
pub fn set_timeout(serial: i32, seconds: u32) -> Result<()> {
    // SAFETY: keyctl(KEYCTL_SET_TIMEOUT, serial, seconds) takes only integers.
    let r = unsafe {
        libc::syscall(
            libc::SYS_keyctl,
            KEYCTL_SET_TIMEOUT,
            serial as libc::c_long,
            seconds as libc::c_long,
        )
    };
    if r < 0 {
        return Err(os_err("timeout"));
    }
    Ok(())
}

/// Unlink key `serial` from `keyring` (`keyctl unlink`).
pub fn unlink(serial: i32, keyring: i32) -> Result<()> {
    // SAFETY: keyctl(KEYCTL_UNLINK, serial, keyring) takes only integers.
    let r = unsafe {
        libc::syscall(
            libc::SYS_keyctl,
            KEYCTL_UNLINK,
            serial as libc::c_long,
            keyring as libc::c_long,
        )
    };
    if r < 0 {
        return Err(os_err("unlink"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_as_keyctl_reads_them() {
        assert_eq!(KeyName::parse("@u"), Some(KeyName::Id(-4)));
        assert_eq!(KeyName::parse("@us"), Some(KeyName::Id(-5)));
        assert_eq!(KeyName::parse("@a"), None);
        assert_eq!(KeyName::parse("123"), Some(KeyName::Id(123)));
        assert_eq!(KeyName::parse("0x10"), Some(KeyName::Id(16)));
        assert_eq!(KeyName::parse("0"), None);
        assert_eq!(KeyName::parse("99999999999"), None);
        assert_eq!(
            KeyName::parse("%:ring"),
            Some(KeyName::Typed {
                kind: "keyring".into(),
                description: "ring".into()
            })
        );
        assert_eq!(
            KeyName::parse("%user:a:b"),
            Some(KeyName::Typed {
                kind: "user".into(),
                description: "a:b".into()
            })
        );
        assert_eq!(KeyName::parse("%user:"), None);
        assert_eq!(KeyName::parse("%user"), None);
        assert_eq!(KeyName::parse("name"), None);
    }
}
