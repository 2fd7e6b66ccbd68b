//! What is asked of the activation layer: the mapping ([`MappingConfig`], the same for every
//! backend), the kernel's extra options ([`KernelOptions`]) and which backend to use.

use lukskit_format::VolumeType;
use lukskit_volume::data::DataLayout;
use serde::{Deserialize, Serialize};

/// Which backend the caller wants.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum BackendChoice {
    /// The kernel wherever it has device-mapper with dm-crypt, userspace elsewhere (and
    /// always userspace for a FUSE file only or an NBD export).
    #[default]
    Auto,
    /// A kernel dm-crypt mapping, or an error where the kernel has none.
    Kernel,
    /// lukskit's serving process.
    Userspace,
}

/// The backend a mapping is made with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// A kernel dm-crypt mapping.
    Kernel,
    /// lukskit's serving process (FUSE file + loop device, FUSE file only, NBD export).
    Userspace,
}

/// dm-crypt options that only the kernel backend has, and what names the key in the keyring.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct KernelOptions {
    /// `same_cpu_crypt` (`--perf-same_cpu_crypt`).
    pub same_cpu_crypt: bool,
    /// `submit_from_crypt_cpus` (`--perf-submit_from_crypt_cpus`).
    pub submit_from_crypt_cpus: bool,
    /// `no_read_workqueue` (`--perf-no_read_workqueue`).
    pub no_read_workqueue: bool,
    /// `no_write_workqueue` (`--perf-no_write_workqueue`).
    pub no_write_workqueue: bool,
    /// LUKS2: the digest of the data segment (the kernel keyring key is named after it).
    pub digest: Option<u32>,
    /// `--disable-keyring`: the LUKS2 volume key goes into the table itself, not through the
    /// kernel keyring (as cryptsetup's `--disable-keyring`).
    pub disable_keyring: bool,
    /// `--shared` (plain): the data device may be used by other mappings, so it is not checked
    /// for exclusive use (cryptsetup's shared segments of one device).
    pub shared: bool,
    /// `--integrity-no-journal`: dm-integrity in direct mode (no journal).
    pub integrity_no_journal: bool,
}

impl KernelOptions {
    /// Whether any dm-crypt performance flag is asked for.
    pub fn any_perf_flag(&self) -> bool {
        self.same_cpu_crypt
            || self.submit_from_crypt_cpus
            || self.no_read_workqueue
            || self.no_write_workqueue
    }
}

/// A [`DataLayout`] in the state file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LayoutInfo {
    /// dm-crypt cipher specification.
    pub cipher: String,
    /// Data offset in bytes.
    pub offset: u64,
    /// Fixed data size in bytes, or the rest of the device.
    pub size: Option<u64>,
    /// Encryption sector size.
    pub sector_size: u32,
    /// IV offset in 512-byte sectors.
    pub iv_offset: u64,
    /// `iv_large_sectors`.
    pub iv_large_sectors: bool,
    /// LUKS2 authenticated encryption: the segment's integrity type (`hmac(sha256)`, `aead`,
    /// `poly1305`); the volume is opened over dm-integrity (kernel only).
    #[serde(default)]
    pub integrity: Option<String>,
}

impl From<&DataLayout> for LayoutInfo {
    fn from(l: &DataLayout) -> Self {
        LayoutInfo {
            cipher: l.cipher.clone(),
            offset: l.offset,
            size: l.size,
            sector_size: l.sector_size,
            iv_offset: l.iv_offset,
            iv_large_sectors: l.iv_large_sectors,
            integrity: None,
        }
    }
}

impl From<&LayoutInfo> for DataLayout {
    fn from(l: &LayoutInfo) -> Self {
        DataLayout {
            cipher: l.cipher.clone(),
            offset: l.offset,
            size: l.size,
            sector_size: l.sector_size,
            iv_offset: l.iv_offset,
            iv_large_sectors: l.iv_large_sectors,
        }
    }
}

/// What `open` asks the serving process to set up (no secret: the key travels separately).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MappingConfig {
    /// Mapping name.
    pub name: String,
    /// The volume's type (recorded in the state file by cryptsetup's name, `LUKS2`, …).
    #[serde(with = "volume_type_name")]
    pub kind: VolumeType,
    /// LUKS UUID.
    pub uuid: Option<String>,
    /// Data device (image file or block device).
    pub device: String,
    /// Detached header, if any.
    pub header: Option<String>,
    /// Data layout.
    pub layout: LayoutInfo,
    /// Volume key size in bits.
    pub key_bits: u32,
    /// Read-only mapping.
    pub read_only: bool,
    /// `--allow-discards`.
    pub allow_discards: bool,
    /// Attach a loop device and link `/dev/mapper/NAME` to it.
    pub use_loop: bool,
    /// Serve over NBD at this address (`unix:PATH`, `tcp:HOST:PORT`) instead of FUSE.
    pub nbd: Option<String>,
    /// Most NBD connections served at once (`--nbd-connections`); `None` for the server's
    /// default ([`lukskit_expose::nbd::DEFAULT_MAX_CONNECTIONS`]).
    #[serde(default)]
    pub nbd_connections: Option<usize>,
    /// TLS for the NBD export (`--tls-creds`, `--tls`, `--tls-verify-peer`); `None` for a
    /// plain export.
    #[serde(default)]
    pub nbd_tls: Option<NbdTlsConfig>,
    /// The serving process serves the root file system (it was started in the initramfs): its
    /// `argv[0]` starts with `@`, systemd's mark for root-storage daemons, which its shutdown
    /// (and `systemd-shutdown`'s final kill) leaves running.
    #[serde(default)]
    pub root_storage_daemon: bool,
    /// The volume is opened with a segment table of its own (a LUKS2 re-encryption in
    /// progress): the launch message carries it after the key.
    #[serde(default)]
    pub segments: bool,
}

/// TLS of an NBD export.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NbdTlsConfig {
    /// Directory with `server-cert.pem`, `server-key.pem` and (to verify clients)
    /// `ca-cert.pem`, as qemu-nbd's and nbdkit's.
    pub creds: String,
    /// Clients must negotiate TLS before anything else (otherwise it is only offered).
    pub required: bool,
    /// Clients must present a certificate signed by `ca-cert.pem`.
    pub verify_peer: bool,
}

/// A [`VolumeType`] in the state file: its cryptsetup name.
mod volume_type_name {
    use lukskit_format::VolumeType;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(t: &VolumeType, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(t.name())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<VolumeType, D::Error> {
        let name = String::deserialize(d)?;
        VolumeType::from_name(&name)
            .ok_or_else(|| serde::de::Error::custom(format!("unknown volume type {name:?}")))
    }
}
