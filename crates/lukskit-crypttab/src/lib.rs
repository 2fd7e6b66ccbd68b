//! crypttab(5) for lukskit: the table of encrypted volumes to set up at boot.
//!
//! * [`table`] reads a table into typed entries ([`CrypttabEntry`], [`CrypttabOptions`]) in
//!   both dialects (systemd's and Debian's); nothing there touches a device.
//! * [`locate`] finds the device a field names (`UUID=`, `LABEL=`, `PARTUUID=`,
//!   `PARTLABEL=`, a path): `/dev/disk/by-*`, else the first 4 KiB of each block device,
//!   else `blkid`.
//! * [`mount`] mounts a device read-only for the time a key file or header on it is read
//!   (`PATH:UUID=…`).
//! * [`plan`] turns an entry into what its open needs ([`OpenPlan`]: the device, the key
//!   file, the header, the volume type), selects the entries an action works on
//!   ([`Selection`]) and reads a table from a file ([`read_table`]).
//!
//! The library prints nothing: warnings are values ([`PlanWarning`]), failures are
//! [`CrypttabError`]s. Opening the mapping itself is the caller's (lukskit's command line
//! opens each plan as `lukskit open` would).

pub mod error;
pub mod locate;
pub mod mount;
pub mod plan;
pub mod table;

pub use error::CrypttabError;
pub use plan::{
    read_table, Action, OpenPlan, PlanWarning, Selection, VolumeKind, DEFAULT_CRYPTTAB, KEY_DIRS,
};
pub use table::{
    parse, parse_line, parse_options, unescape, CryptKind, Crypttab, CrypttabEntry,
    CrypttabOptions, DeviceSpec, FileRef, KeySpec, LineProblem, OptionIssue, Pkcs11Choice,
    SealedKey, TcryptEntryOptions, DEFAULT_TPM2_PCR_MASK, MAX_ENTRIES, MAX_LINE, MAX_OPTIONS,
    MAX_TABLE_BYTES, MAX_TCRYPT_KEYFILES,
};
