//! The format seam: every on-disk format lukskit opens, behind one trait.
//!
//! Each format lives in its own directory here and implements [`OnDiskFormat`], modelled on
//! what each format directory of cryptsetup's `lib/` provides:
//!
//! * **probe** — is this device mine? Cheap and safe: only the first bytes
//!   ([`PROBE_BYTES`]) are looked at, nothing is allocated from them;
//! * **dump** — a typed description of the metadata ([`Description`]) that the command line
//!   prints (its `Display` is cryptsetup's `*Dump` text);
//! * **unlock** — a passphrase, key files, a PIM, … ([`UnlockRequest`]) → the volume key(s)
//!   and the data layout as segment tables ([`Unlocked`]), which the activation layer
//!   consumes as it does for LUKS.
//!
//! [`REGISTRY`] lists them; a new format is a new directory and one line there. LUKS keyslot
//! management (add, kill, convert, re-encrypt) stays LUKS's own, in [`crate::volume`].

pub mod bitlk;
mod crc;
pub(crate) mod error;
pub mod fvault2;
pub mod loopaes;
mod luks;
mod plain;
pub mod tcrypt;

pub use error::OtherFormatError;

use crate::device::{Access, Device};
use crate::segment::SegmentTable;
use crate::Result;
use lukskit_crypto::SecretBuf;
use lukskit_format::io::Storage;
use lukskit_format::VolumeType;
use std::fmt;

/// How many bytes from the start of a device [`OnDiskFormat::probe`] is given.
pub const PROBE_BYTES: usize = 4096;

/// Every format lukskit opens, in the order a device without `--type` is probed.
pub static REGISTRY: &[&dyn OnDiskFormat] = &[
    &luks::Luks1,
    &luks::Luks2,
    &plain::Plain,
    &tcrypt::Tcrypt,
    &bitlk::Bitlk,
    &fvault2::Fvault2,
    &loopaes::Loopaes,
];

/// The answer of a probe.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Probe {
    /// The first bytes carry this format's signature.
    Mine,
    /// They do not.
    NotMine,
    /// The format leaves no signature (TrueCrypt's header is encrypted, plain mode and
    /// loop-AES have no metadata): only an unlock can tell.
    CannotTell,
}

/// A typed description of a volume's metadata, printed by the command line (`Display` gives
/// cryptsetup's `*Dump` text for the format).
pub trait Description: fmt::Display + fmt::Debug + Send {}

/// One on-disk format (module documentation).
pub trait OnDiskFormat: Sync {
    /// The type this format implements.
    fn volume_type(&self) -> VolumeType;

    /// Whether `head` (the first [`PROBE_BYTES`] of the device, fewer for a smaller one)
    /// carries this format's signature.
    fn probe(&self, head: &[u8]) -> Probe;

    /// Describe the volume's metadata (formats with an encrypted header, TCRYPT, need the
    /// request's secret for that).
    fn dump(&self, request: &UnlockRequest<'_>) -> Result<Box<dyn Description>>;

    /// Unlock the volume: its keys and data layout.
    fn unlock(&self, request: &UnlockRequest<'_>) -> Result<Unlocked>;

    /// Check the secret as `open --test-passphrase` does: by default a whole unlock. A
    /// format whose cryptsetup action only loads the metadata for that (TCRYPT's
    /// `action_open_tcrypt` stops after `tcrypt_load`) checks no more, so that a header
    /// whose data area the device cannot hold passes the test as it does there and is
    /// refused at activation.
    fn test_secret(&self, request: &UnlockRequest<'_>) -> Result<()> {
        self.unlock(request).map(drop)
    }

    /// Whether [`OnDiskFormat::dump`] reads the metadata without any secret (so that a
    /// device of another kind can be refused before a secret is asked for): formats with a
    /// signature, whose metadata is not encrypted (BITLK, FVAULT2); not TCRYPT, plain mode,
    /// loop-AES, nor LUKS (which loads its header itself).
    fn metadata_without_secret(&self) -> bool {
        false
    }
}

/// The format that implements `t`, if lukskit has it.
pub fn format_of(t: VolumeType) -> Option<&'static dyn OnDiskFormat> {
    REGISTRY.iter().copied().find(|f| f.volume_type() == t)
}

/// The type whose signature the device (or header file) at `path` carries, by the formats'
/// probes in [`REGISTRY`] order; `None` when none claims it (a formats without signature may
/// still open it).
pub fn probe_device(path: &str) -> Result<Option<VolumeType>> {
    let dev = Device::open(path, Access::Read)?;
    let size = dev.size().unwrap_or(0);
    let len = size.min(PROBE_BYTES as u64) as usize;
    let mut head = vec![0u8; len];
    if dev.read_exact_at(&mut head, 0).is_err() {
        return Ok(None);
    }
    Ok(REGISTRY
        .iter()
        .find(|f| f.probe(&head) == Probe::Mine)
        .map(|f| f.volume_type()))
}

/// The size of the device (or image file) at `path` in bytes.
pub(crate) fn device_size(path: &str) -> Result<u64> {
    Device::open(path, Access::Read)?
        .size()
        .map_err(|e| crate::VolumeError::io(crate::IoOp::ReadSize, path, e))
}

/// Everything an unlock (or a dump) may use: the devices, the secrets the command line has
/// read (in locked, zeroizing buffers), and the per-format options.
#[derive(Debug, Clone, Copy)]
pub struct UnlockRequest<'a> {
    /// The data device (or image file).
    pub device: &'a str,
    /// A detached header (`--header`), where the format has one.
    pub header: Option<&'a str>,
    /// The passphrase (or password, recovery password), if one was given.
    pub passphrase: Option<&'a SecretBuf>,
    /// The contents of the key files, in the order given (`-d`/`--key-file`, repeated).
    pub key_files: &'a [SecretBuf],
    /// Options of the individual formats.
    pub options: &'a FormatOptions,
}

/// Per-format options (cryptsetup's `crypt_params_*` of each type). Each format reads its own
/// and ignores the others'.
#[derive(Debug, Clone, Default)]
pub struct FormatOptions {
    /// Plain mode (`--cipher`, `--key-size`, `--hash`, `--offset`, `--skip`, …).
    pub plain: crate::plain::PlainParams,
    /// TrueCrypt and VeraCrypt.
    pub tcrypt: TcryptOptions,
    /// loop-AES.
    pub loopaes: LoopaesOptions,
}

/// TrueCrypt/VeraCrypt options (`--tcrypt-*`, `--veracrypt*`, `-h`/`-c` to limit the tries).
#[derive(Debug, Clone, Default)]
pub struct TcryptOptions {
    /// `--tcrypt-hidden`: the hidden volume's header.
    pub hidden: bool,
    /// `--tcrypt-system`: system encryption (a partition or the whole disk).
    pub system: bool,
    /// `--tcrypt-backup`: the backup header at the end of the device.
    pub backup: bool,
    /// `--disable-veracrypt`: TrueCrypt only.
    pub no_veracrypt: bool,
    /// `--veracrypt-pim`.
    pub pim: Option<u32>,
    /// `-h`: try only this PBKDF2 hash.
    pub hash: Option<String>,
    /// `-c`: try only cascades that start with this cipher.
    pub cipher: Option<String>,
}

/// loop-AES options (`--key-size`, `--offset`, `--skip`, `--hash`).
#[derive(Debug, Clone, Default)]
pub struct LoopaesOptions {
    /// Key size in bits (`--key-size`; 128 by default).
    pub key_bits: Option<u32>,
    /// Data offset in 512-byte sectors (`--offset`).
    pub offset: u64,
    /// IV offset in 512-byte sectors (`--skip`).
    pub skip: u64,
    /// Hash applied to the key file (`--hash`).
    pub hash: Option<String>,
    /// The base cipher (`--cipher`; `aes` by default).
    pub cipher: Option<String>,
}

/// An unlocked volume: what activation needs.
#[derive(Debug)]
pub struct Unlocked {
    /// The volume's type.
    pub volume_type: VolumeType,
    /// The volume's UUID where cryptsetup puts one into the mapping's DM UUID (LUKS); None
    /// where its activation gives none (TCRYPT, BITLK, FVAULT2, loop-AES: checked against
    /// cryptsetup 2.6.1 in the reference VM, tests/refvm/kernel/formats.sh).
    pub uuid: Option<String>,
    /// The data layout, one table per stacked device, the one on the data device first
    /// (a TrueCrypt cascade of three ciphers is three tables; every other volume is one).
    pub layers: Vec<SegmentTable>,
    /// The format allows only read-only use (as cryptsetup decides for it).
    pub read_only: bool,
    /// The volume key as `--dump-volume-key` shows it (for a cascade: all keys in order).
    pub volume_key: SecretBuf,
}
