//! Buffers for secrets: passphrases, volume keys, derived keys.
//!
//! A [`SecretBuf`] has a fixed length chosen at creation, is locked in RAM with
//! `mlock(2)` where the system allows it (failure to lock is not an error: an
//! unprivileged process may have a small `RLIMIT_MEMLOCK`), and is overwritten
//! with zeros before its memory is released. It never prints its contents.

use std::fmt;
use zeroize::Zeroize;

/// A fixed-size, zeroize-on-drop, best-effort `mlock`ed byte buffer.
pub struct SecretBuf {
    // Boxed slice: the allocation never moves or grows, so the locked range stays valid.
    data: Box<[u8]>,
    locked: bool,
}

impl SecretBuf {
    /// A zero-filled secret buffer of `len` bytes.
    pub fn zeroed(len: usize) -> Self {
        let data = vec![0u8; len].into_boxed_slice();
        let mut s = SecretBuf {
            data,
            locked: false,
        };
        s.lock();
        s
    }

    /// Copy `bytes` into a new secret buffer. The caller remains responsible for
    /// wiping its own copy.
    pub fn from_slice(bytes: &[u8]) -> Self {
        let mut s = Self::zeroed(bytes.len());
        s.data.copy_from_slice(bytes);
        s
    }

    /// Take ownership of `v`, moving it into locked memory and wiping `v`.
    pub fn from_vec(mut v: Vec<u8>) -> Self {
        let s = Self::from_slice(&v);
        v.zeroize();
        s
    }

    /// A buffer of `len` random bytes from the kernel CSPRNG.
    pub fn random(len: usize) -> crate::Result<Self> {
        let mut s = Self::zeroed(len);
        crate::random::fill(&mut s.data)?;
        Ok(s)
    }

    /// The secret bytes.
    pub fn as_bytes(&self) -> &[u8] {
        &self.data
    }

    /// The secret bytes, mutable.
    pub fn as_mut_bytes(&mut self) -> &mut [u8] {
        &mut self.data
    }

    /// Length in bytes.
    pub fn len(&self) -> usize {
        self.data.len()
    }

    /// True when the buffer holds no bytes.
    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }

    /// Constant-time equality of the contents.
    pub fn ct_eq(&self, other: &[u8]) -> bool {
        use subtle::ConstantTimeEq;
        self.data.len() == other.len() && bool::from(self.data.ct_eq(other))
    }

    /// The standard base64 text of the secret (with padding), in a new secret buffer: what
    /// systemd makes a keyslot passphrase of from an unsealed or decrypted key. No copy of
    /// the text is made outside locked memory.
    pub fn to_base64(&self) -> SecretBuf {
        use base64::Engine;
        let mut out = SecretBuf::zeroed(self.data.len().div_ceil(3) * 4);
        let n = base64::engine::general_purpose::STANDARD
            .encode_slice(&self.data, out.as_mut_bytes())
            .expect("the output holds the whole base64 text");
        debug_assert_eq!(n, out.len());
        out
    }

    fn lock(&mut self) {
        if self.data.is_empty() {
            return;
        }
        // SAFETY: the pointer and length describe this buffer's own live allocation,
        // which is neither moved nor resized while `self` exists; mlock only changes
        // paging behaviour and does not touch the memory contents.
        let rc = unsafe { libc::mlock(self.data.as_ptr().cast(), self.data.len()) };
        self.locked = rc == 0;
    }
}

impl Clone for SecretBuf {
    fn clone(&self) -> Self {
        Self::from_slice(&self.data)
    }
}

impl Drop for SecretBuf {
    fn drop(&mut self) {
        self.data.zeroize();
        if self.locked {
            // SAFETY: same allocation that was locked in `lock`, still alive here.
            unsafe {
                libc::munlock(self.data.as_ptr().cast(), self.data.len());
            }
        }
    }
}

impl fmt::Debug for SecretBuf {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SecretBuf({} bytes, redacted)", self.data.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_is_the_standard_padded_text() {
        for (raw, text) in [
            (&b""[..], &b""[..]),
            (b"\x00", b"AA=="),
            (b"\x00\x01", b"AAE="),
            (b"\x00\x01\x02\xff", b"AAEC/w=="),
            (b"hunter2!", b"aHVudGVyMiE="),
        ] {
            assert_eq!(SecretBuf::from_slice(raw).to_base64().as_bytes(), text);
        }
    }

    #[test]
    fn debug_never_shows_contents() {
        let s = SecretBuf::from_slice(b"hunter2");
        let d = format!("{s:?}");
        assert!(!d.contains("hunter2"));
        assert!(d.contains("7 bytes"));
    }

    #[test]
    fn ct_eq_compares_contents_and_length() {
        let s = SecretBuf::from_slice(b"abc");
        assert!(s.ct_eq(b"abc"));
        assert!(!s.ct_eq(b"abd"));
        assert!(!s.ct_eq(b"ab"));
    }

    #[test]
    fn random_is_not_all_zero() {
        let s = SecretBuf::random(64).unwrap();
        assert!(s.as_bytes().iter().any(|&b| b != 0));
    }
}
