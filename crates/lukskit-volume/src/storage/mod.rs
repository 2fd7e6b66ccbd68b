//! Where a volume's bytes live: the [`Storage`] trait and its implementations.
//!
//! Every byte lukskit reads or writes — the header, the keyslot material, the data area —
//! goes through [`Storage`] (the trait of the on-disk layer, [`lukskit_format::io::Storage`]):
//! positioned reads and writes, `sync`, `size`, and optionally `sync_data`, `discard` and
//! the local file behind it. lukskit implements it for
//! * a local image file or block device ([`std::fs::File`]),
//! * an NBD export ([`NbdStorage`], feature `nbd`),
//! * memory ([`MemStorage`]), and
//! * [`CrashingStorage`], a wrapper that stops writing at a chosen write or sync (crash tests).
//!
//! A library user plugs in their own (an object store, an encrypted image kept in memory) by
//! implementing the trait and opening the volume with
//! [`crate::Volume::load_storage`]; the data path ([`crate::data::DataVolume`]) then reads and
//! writes through it too.
//!
//! The storage is a trait object ([`SharedStorage`]), not a type parameter: the data path
//! makes one call per request or per batch of up to [`crate::data::BATCH`] bytes (the sector
//! cipher then runs over the whole batch), never one per sector, so the indirect call costs
//! nothing measurable next to the system call or network round trip behind it; and keeping the
//! volume types non-generic keeps every caller (the CLI, the FUSE and NBD servers, the Python
//! bindings) free of a type parameter.

mod crashing;
#[cfg(feature = "nbd")]
mod nbd;

pub use crashing::{CrashAction, CrashOp, CrashPlan, CrashingStorage};
pub use lukskit_format::io::{MemStorage, Storage};
#[cfg(feature = "nbd")]
pub use nbd::NbdStorage;

#[cfg(feature = "crash-injection")]
pub(crate) use crashing::env;

/// A [`Storage`] that threads can share and debug output can name: every `Storage` that is
/// `Send + Sync + Debug` is one (implement [`Storage`], derive `Debug`, nothing more).
pub trait DynStorage: Storage + Send + Sync + std::fmt::Debug {}

impl<T: Storage + Send + Sync + std::fmt::Debug + ?Sized> DynStorage for T {}

/// A storage shared by the header and data layers of one volume (and by their threads).
pub type SharedStorage = std::sync::Arc<dyn DynStorage>;

/// The storage of a device lukskit opens itself (a local file, an NBD export): wrapped, in
/// builds with the `crash-injection` feature (the test suite's), in the crash points the
/// environment asks for (`LUKSKIT_CRASH_AT`, `LUKSKIT_SIGINT_AT`).
pub(crate) fn opened(storage: SharedStorage) -> SharedStorage {
    #[cfg(feature = "crash-injection")]
    if let Some(plan) = env::plan() {
        return std::sync::Arc::new(CrashingStorage::new(storage, plan));
    }
    storage
}
