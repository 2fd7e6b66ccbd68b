//! Finding the header key: every PBKDF2 variant (in parallel, one per core) with every
//! cipher and cascade, until the decrypted header carries a magic. cryptsetup tries them one
//! after another; the answer is the same (the first variant in its order that decrypts,
//! and within it the first cascade), as later variants wait until no earlier one can still
//! win.

use super::ciphers::{decrypt_header, Cascade, CASCADES};
use super::header::{Magic, RawHeader};
use super::kdf::{derive, KdfVariant};
use super::ENC_LEN;
use lukskit_crypto::SecretBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

/// What the trials are limited to.
#[derive(Debug, Clone, Copy)]
pub struct Limits<'a> {
    /// `-c`: only table entries whose chain name contains this.
    pub cipher: Option<&'a str>,
    /// VeraCrypt's `VERA` magic counts.
    pub veracrypt: bool,
    /// The PIM given.
    pub pim: Option<u32>,
}

/// A successful trial: the variant, the table entry and the decrypted header bytes.
pub struct Found {
    /// The KDF variant (index into the table, and the variant).
    pub kdf: (usize, KdfVariant),
    /// The cascade.
    pub cascade: &'static Cascade,
    /// The decrypted 448 bytes.
    pub decrypted: SecretBuf,
}

/// Try every table entry allowed by `limits` with one header key: the first whose
/// decryption shows a magic.
fn try_ciphers(
    raw: &RawHeader,
    key: &[u8],
    limits: &Limits<'_>,
) -> Option<(&'static Cascade, SecretBuf)> {
    for cascade in CASCADES {
        if limits
            .cipher
            .is_some_and(|c| !cascade.long_name.contains(c))
        {
            continue;
        }
        let mut buf = [0u8; ENC_LEN];
        buf.copy_from_slice(&raw.encrypted);
        let ok = decrypt_header(cascade, key, &mut buf).is_ok()
            && Magic::of(&buf, limits.veracrypt).is_some();
        let decrypted = SecretBuf::from_slice(&buf);
        zeroize::Zeroize::zeroize(&mut buf);
        if ok {
            return Some((cascade, decrypted));
        }
    }
    None
}

/// Run the trials of `variants` (in table order) on `threads` threads.
pub fn find(
    raw: &RawHeader,
    input: &SecretBuf,
    variants: &[(usize, KdfVariant)],
    limits: &Limits<'_>,
    threads: usize,
) -> Option<Found> {
    let next = AtomicUsize::new(0);
    // Position (in `variants`) of the earliest success so far.
    let best = AtomicUsize::new(usize::MAX);
    let results: Mutex<Vec<Option<Found>>> =
        Mutex::new((0..variants.len()).map(|_| None).collect());
    let worker = || loop {
        let i = next.fetch_add(1, Ordering::SeqCst);
        if i >= variants.len() || i > best.load(Ordering::SeqCst) {
            return;
        }
        let (index, variant) = variants[i];
        let Some(key) = derive(&variant, input.as_bytes(), &raw.salt, limits.pim) else {
            continue;
        };
        if let Some((cascade, decrypted)) = try_ciphers(raw, key.as_bytes(), limits) {
            best.fetch_min(i, Ordering::SeqCst);
            if let Ok(mut r) = results.lock() {
                r[i] = Some(Found {
                    kdf: (index, variant),
                    cascade,
                    decrypted,
                });
            }
        }
    };
    let threads = threads.clamp(1, variants.len().max(1));
    std::thread::scope(|s| {
        for _ in 1..threads {
            s.spawn(worker);
        }
        worker();
    });
    let results = results.into_inner().ok()?;
    results.into_iter().flatten().next()
}
