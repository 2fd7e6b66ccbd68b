//! # lukskit-dm — the kernel's device-mapper, for dm-crypt mappings
//!
//! The kernel backend of lukskit's `open`/`close`/`status`/`luksSuspend`/`luksResume`/
//! `refresh`/`resize`: device-mapper ioctls spoken directly (no libdevmapper, no C), dm-crypt
//! tables rendered as cryptsetup 2.6.1 renders them, keys passed through the kernel keyring,
//! and `/dev/mapper` nodes made without depending on udev.
//!
//! * [`ioctl`] — `struct dm_ioctl` and one method per DM command on [`ioctl::Control`]
//!   (VERSION, LIST_DEVICES, LIST_VERSIONS, GET_TARGET_VERSION, DEV_CREATE, TABLE_LOAD,
//!   TABLE_CLEAR, DEV_SUSPEND, DEV_REMOVE, DEV_STATUS, TABLE_STATUS, TARGET_MSG, DEV_RENAME).
//! * [`crypt`] — the dm-crypt target ([`CryptTarget`], [`CryptKey`], [`CryptFlags`]).
//! * [`table`] — typed targets ([`Target`]: crypt, linear, zero, error) and table lines.
//! * [`integrity`] — LUKS2 authenticated encryption: the dm-integrity target under dm-crypt
//!   (cipher fields, tag sizes, the kernel's superblock).
//! * [`dm_uuid`] — cryptsetup's DM UUIDs (`CRYPT-LUKS2-<uuid>-<name>`, `CRYPT-PLAIN-<name>`).
//! * [`keyring`] — `logon` keys in the thread keyring (`cryptsetup:<uuid>-d<digest>`).
//! * [`node`] — `/dev/mapper/NAME` and `/dev/mapper/control`, udev or not.
//! * [`mapping`] — [`DeviceMapper`]: create + load + resume with cleanup, remove, table,
//!   info, suspend/resume, `key wipe`/`key set`, rename; [`CryptFeatures`].
//!
//! Every function returns a typed [`DmError`]; nothing prints. Buffers that hold keys (table
//! loads, `key set` messages, table replies) are zeroized, and loads and key messages carry
//! `DM_SECURE_DATA_FLAG` so the kernel wipes its copies too.

pub mod crypt;
pub mod devt;
pub mod dm_uuid;
mod error;
pub mod integrity;
pub mod ioctl;
pub mod keyctl;
pub mod keyring;
pub mod mapping;
pub mod node;
pub mod table;

pub use crypt::{CryptFlags, CryptKey, CryptTarget, KeyType, KeyringKey};
pub use devt::DevT;
pub use error::{DmError, Result};
pub use ioctl::{DeviceFlags, DeviceInfo, SuspendOptions};
pub use mapping::{CryptFeatures, DeviceMapper, MappingInfo, RemoveOptions, RemoveOutcome};
pub use table::{LinearTarget, Target};
