//! LUKS2 re-encryption with cryptsetup 2.6's on-disk metadata and algorithm, so that a
//! re-encryption started by either tool is continued or recovered by the other.
//!
//! * [`context`] — the `reencrypt` keyslot, backup segments and state of a header.
//! * [`datashift`] — encryption in place with a data shift (`--reduce-device-size`).
//! * [`decrypt_shift`] — decryption of a device with its header at the start (the header
//!   goes to a file, the data moves down over it).
//! * [`fastio`] — the `O_DIRECT` handle of the hot zones (the fast path).
//! * [`engine`] — initialization, the hot-zone steps, crash recovery, the final cleanup.
//! * `keys` — the volume keys of a run ([`Keys`]) and the metadata digest's data over them.
//! * `area` — the resilience asked for ([`ResilienceChoice`]), the protection of the
//!   `reencrypt` keyslot area, and where a new one fits.
//! * `hotzone` — hot zone sizes ([`engine::MAX_HOTZONE`] and cryptsetup's defaults).
//! * [`verify`] — the metadata digest cryptsetup checks before it trusts the metadata.
//! * `json` — segment objects and requirement flags in cryptsetup's form.
//! * [`lock`] — cryptsetup's re-encryption lock file.
//! * [`luks1`] — LUKS1 re-encryption as cryptsetup's legacy code does it (its log and
//!   header files).
//! * [`online`] — the hook through which a live mapping follows the hot zones.
//! * [`pipeline`] — streamed `O_DIRECT` hot-zone I/O of the offline fast path.
//! * [`resilience_switch`] — a new resilience for the rest of a run (`--resilience` at a
//!   resume).
//!
//! Offline, or online through an [`online::OnlineHook`] that moves a live mapping along.
//! Implemented: mode `reencrypt` (new volume key, cipher, sector size) forward, `encrypt` forward and `decrypt` backward with a detached
//! header, resilience `checksum`, `journal` and `none`, crash recovery of either tool's hot
//! zone; `encrypt` backward with resilience `datashift` and a moved first segment (the header
//! goes into space taken from the device), or with a detached header (in place, zones of
//! the shift size); `reencrypt` backward with a data shift and no moved segment (initialized
//! with [`ResilienceChoice::Datashift`], offline). Decryption with a data shift
//! (`datashift-checksum` / `datashift-journal`, `online-reencrypt-v3`).

mod area;
pub mod context;
pub mod datashift;
pub mod decrypt_shift;
pub mod engine;
pub mod fastio;
mod hotzone;
mod keys;
pub mod lock;
pub mod luks1;
pub mod online;
pub mod pipeline;
pub mod resilience_switch;
pub mod verify;

pub use context::{status, Context, Direction, Mode, Resilience, Status};
pub use engine::{
    device_block_size, init, init_checked, metadata_repair_needed, recover, run, run_online,
    unlock_keys, upgrade_metadata, verify_metadata, InitParams, Keys, Outcome, ResilienceChoice,
    RunOptions,
};
pub use lock::ReencryptLock;

/// A re-encryption state this implementation cannot continue from (the error of the
/// context's loaders).
pub(crate) fn ctx(msg: &str) -> crate::VolumeError {
    crate::error::ReencryptError::Context(msg.to_string()).into()
}
