//! The kernel keyring, for dm-crypt keys passed by reference.
//!
//! cryptsetup 2.6.1 (lib/utils_keyring.c, lib/setup.c) puts a LUKS2 volume key into the
//! calling thread's keyring (`KEY_SPEC_THREAD_KEYRING`, `@t`) as a `logon` key (its payload can
//! never be read back from userspace) described `cryptsetup:<uuid>-d<digest>`, then loads a
//! table whose key field is `:<bytes>:logon:<description>`; dm-crypt looks the key up while
//! the table is loaded, in the context of the loading thread, and keeps its own copy. The
//! thread keyring dies with the thread; cryptsetup revokes and unlinks the key on failure
//! (`keyring_revoke_and_unlink_key`). [`ThreadKey`] does the same, and revokes it when dropped,
//! which the mapping layer does right after the load (or `key set` message).
//!
//! Observed in the reference VM (Debian 12, cryptsetup 2.6.1, `--debug`): "Loading key (64
//! bytes, type logon) in thread keyring." and the table key
//! `:64:logon:cryptsetup:11111111-2222-3333-4444-555555555555-d0`.

use std::ffi::CString;
use std::io;
use std::marker::PhantomData;

use lukskit_crypto::SecretBuf;

use crate::crypt::KeyType;
use crate::error::{DmError, Result};

// The special keyrings and the payload limit belong to the keyctl(2) layer; kept here too.
pub use crate::keyctl::{
    KEY_SPEC_PROCESS_KEYRING, KEY_SPEC_SESSION_KEYRING, KEY_SPEC_THREAD_KEYRING,
    KEY_SPEC_USER_KEYRING, MAX_USER_KEY_SIZE,
};

const KEYCTL_REVOKE: libc::c_long = 3;
const KEYCTL_UNLINK: libc::c_long = 9;

/// The description cryptsetup gives a LUKS2 volume key in the keyring:
/// `cryptsetup:<uuid>-d<digest>` (lib/luks2/luks2_digest.c), e.g.
/// `cryptsetup:11111111-2222-3333-4444-555555555555-d0`. The UUID is the header's, dashes
/// kept.
pub fn luks2_key_description(uuid: &str, digest: u32) -> String {
    format!("cryptsetup:{uuid}-d{digest}")
}

/// Whether the kernel has a keyring at all (cryptsetup's `keyring_check`: `request_key` of a
/// malformed `logon` description fails with anything but `ENOSYS`).
pub fn kernel_keyring_available() -> bool {
    matches!(
        crate::keyctl::request_key(c"logon", c"dummy"),
        Err(DmError::Keyring { source, .. }) if source.raw_os_error() != Some(libc::ENOSYS)
    )
}

/// Read the payload of the `user` key described `description` that this process possesses
/// (found with `request_key(2)` through the thread, process and session keyrings, without an
/// upcall), as cryptsetup's `luks2-keyring` token does (`keyring_get_passphrase`, which reads
/// a `user` key). The payload lands straight in a zeroizing locked buffer.
///
/// Errors: [`DmError::Keyring`] with the OS error — `ENOKEY` for no such key, `ENOSYS` when
/// the kernel has no keyring, `EACCES` when the key may not be read.
pub fn read_user_key(description: &str) -> Result<SecretBuf> {
    let ty = c"user";
    let desc = CString::new(description)
        .map_err(|_| DmError::InvalidArgument("NUL in a key description".into()))?;
    let serial = crate::keyctl::request_key(ty, &desc)?;
    crate::keyctl::read(serial)
}

/// A key this thread added to its thread keyring. Revoked and unlinked when dropped (or by
/// [`ThreadKey::revoke`]); bound to the thread that made it (it is neither `Send` nor
/// `Sync`), because only that thread possesses its thread keyring.
#[derive(Debug)]
pub struct ThreadKey {
    serial: i32,
    revoked: bool,
    _not_send: PhantomData<*const ()>,
}

impl ThreadKey {
    /// Add `payload` as a key of `key_type` described `description` to the calling thread's
    /// keyring. The kernel copies the payload; the caller keeps (and wipes) its own.
    pub fn add(key_type: KeyType, description: &str, payload: &[u8]) -> Result<ThreadKey> {
        let ty = CString::new(key_type.as_str()).expect("key type names have no NUL");
        let desc = CString::new(description)
            .map_err(|_| DmError::InvalidArgument("NUL in a key description".into()))?;
        // SAFETY: add_key(2) reads the two NUL-terminated strings and `payload.len()` bytes
        // at `payload.as_ptr()`, all valid for the duration of the call.
        let r = unsafe {
            libc::syscall(
                libc::SYS_add_key,
                ty.as_ptr(),
                desc.as_ptr(),
                payload.as_ptr(),
                payload.len(),
                KEY_SPEC_THREAD_KEYRING as libc::c_long,
            )
        };
        if r < 0 {
            return Err(DmError::Keyring {
                op: "add_key",
                source: io::Error::last_os_error(),
            });
        }
        Ok(ThreadKey {
            serial: r as i32,
            revoked: false,
            _not_send: PhantomData,
        })
    }

    /// The key's serial number.
    pub fn serial(&self) -> i32 {
        self.serial
    }

    /// Revoke the key (its payload becomes inaccessible at once) and unlink it from the
    /// thread keyring. A key already gone counts as revoked.
    pub fn revoke(mut self) -> Result<()> {
        self.revoke_inner()
    }

    fn revoke_inner(&mut self) -> Result<()> {
        if self.revoked {
            return Ok(());
        }
        self.revoked = true;
        // SAFETY: keyctl(KEYCTL_REVOKE, serial) takes only integers.
        let r =
            unsafe { libc::syscall(libc::SYS_keyctl, KEYCTL_REVOKE, self.serial as libc::c_long) };
        let revoke_err = (r < 0).then(io::Error::last_os_error);
        // SAFETY: keyctl(KEYCTL_UNLINK, serial, keyring) takes only integers. Best effort,
        // as in cryptsetup: a revoked key is useless even while still linked.
        unsafe {
            libc::syscall(
                libc::SYS_keyctl,
                KEYCTL_UNLINK,
                self.serial as libc::c_long,
                KEY_SPEC_THREAD_KEYRING as libc::c_long,
            );
        }
        match revoke_err {
            Some(e)
                if !matches!(
                    e.raw_os_error(),
                    Some(libc::ENOKEY) | Some(libc::EKEYREVOKED) | Some(libc::EKEYEXPIRED)
                ) =>
            {
                Err(DmError::Keyring {
                    op: "revoke",
                    source: e,
                })
            }
            _ => Ok(()),
        }
    }
}

impl Drop for ThreadKey {
    fn drop(&mut self) {
        let _ = self.revoke_inner();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn description_matches_cryptsetup() {
        // cryptsetup 2.6.1 in the reference VM: table key
        // `:64:logon:cryptsetup:11111111-2222-3333-4444-555555555555-d0`.
        assert_eq!(
            luks2_key_description("11111111-2222-3333-4444-555555555555", 0),
            "cryptsetup:11111111-2222-3333-4444-555555555555-d0"
        );
    }

    /// A `user` key can be read back by its possessor: add, read, revoke, and see the read
    /// fail.
    #[test]
    fn add_read_revoke_user_key() {
        let key = ThreadKey::add(KeyType::User, "lukskit-dm-test:k", b"secret-bytes").unwrap();
        let mut buf = [0u8; 64];
        let read = |serial: i32, buf: &mut [u8]| {
            // SAFETY: keyctl(KEYCTL_READ=11, serial, buf, len) writes at most len bytes.
            unsafe {
                libc::syscall(
                    libc::SYS_keyctl,
                    11 as libc::c_long,
                    serial as libc::c_long,
                    buf.as_mut_ptr(),
                    buf.len(),
                )
            }
        };
        let serial = key.serial();
        assert_eq!(read(serial, &mut buf), 12);
        assert_eq!(&buf[..12], b"secret-bytes");
        key.revoke().unwrap();
        assert_eq!(read(serial, &mut buf), -1);
    }

    /// `read_user_key` finds a `user` key this thread possesses and reads its whole payload;
    /// once the key is revoked, and for a description nobody added, it fails with the OS
    /// error cryptsetup's token would see.
    #[test]
    fn read_user_key_finds_and_reads_possessed_keys() {
        let desc = format!("lukskit-dm-test:read-{}", std::process::id());
        let payload: Vec<u8> = (0..300u32).map(|i| (i % 251) as u8).collect();
        let key = ThreadKey::add(KeyType::User, &desc, &payload).unwrap();
        assert_eq!(read_user_key(&desc).unwrap().as_bytes(), &payload[..]);
        key.revoke().unwrap();
        assert!(read_user_key(&desc).is_err());
        let missing = read_user_key("lukskit-dm-test:no-such-key").unwrap_err();
        assert_eq!(missing.raw_os_error(), Some(libc::ENOKEY));
    }
}
