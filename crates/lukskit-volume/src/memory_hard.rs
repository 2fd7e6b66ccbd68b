//! cryptsetup's `--serialize-memory-hard-pbkdf`: unlocks that derive a keyslot key with a
//! memory-hard KDF take turns, so that volumes unlocked in parallel at boot do not each claim
//! up to a gigabyte at once. As cryptsetup 2.6.1 does it, a keyslot whose Argon2 memory cost
//! is above 32 MiB is derived under a blocking exclusive `flock` on
//! `/run/cryptsetup/LN_memory-hard-access`, taken just before the derivation and let go right
//! after it; lukskit and cryptsetup processes wait for each other there.
//!
//! The setting is per process (one unlock request per command), off by default.

use std::sync::atomic::{AtomicBool, Ordering};

use lukskit_crypto::kdf::Pbkdf;

use crate::error::{IoOp, Result, VolumeError};
use crate::lock_file::{LockError, LockFile};
use crate::reencrypt::lock::LOCK_DIR;

/// The lock file cryptsetup serializes memory-hard derivations on.
pub const LOCK_PATH: &str = "/run/cryptsetup/LN_memory-hard-access";

/// Memory costs up to this many KiB are derived without the lock (cryptsetup's
/// `MIN_MEMORY_FOR_SERIALIZE_LOCK_KB`).
pub const UNSERIALIZED_MAX_KIB: u32 = 32 * 1024;

static SERIALIZE: AtomicBool = AtomicBool::new(false);

/// Turn the serialization on or off for the rest of this process.
pub fn set_serialized(on: bool) {
    SERIALIZE.store(on, Ordering::Relaxed);
}

/// The held lock of one derivation; released (its file removed when no one else holds it)
/// when dropped.
#[derive(Debug)]
pub(crate) struct Turn {
    _file: LockFile,
}

/// Wait for this derivation's turn when serialization is on and `pbkdf` needs it; `None`
/// when it does not.
pub(crate) fn wait_turn(pbkdf: &Pbkdf) -> Result<Option<Turn>> {
    let memory_hard =
        matches!(pbkdf, Pbkdf::Argon2 { memory_kib, .. } if *memory_kib > UNSERIALIZED_MAX_KIB);
    if !memory_hard || !SERIALIZE.load(Ordering::Relaxed) {
        return Ok(None);
    }
    let _ = std::fs::create_dir_all(LOCK_DIR);
    match LockFile::acquire(LOCK_PATH, libc::LOCK_EX) {
        Ok(file) => Ok(Some(Turn { _file: file })),
        Err(LockError::Lock(e) | LockError::Open(e)) => {
            Err(VolumeError::io(IoOp::Lock, LOCK_PATH, e))
        }
    }
}
