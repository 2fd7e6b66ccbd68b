//! What `status` reports about an active mapping, the same for every backend (the command
//! line turns it into cryptsetup's text).

/// How an active mapping is exposed.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Exposure {
    /// A kernel dm-crypt mapping (`/dev/mapper/NAME` is a device-mapper node).
    Kernel,
    /// lukskit's serving process with a FUSE plaintext file, a loop device on it and the
    /// `/dev/mapper/NAME` link.
    FuseLoop {
        /// The FUSE plaintext file.
        fuse_file: String,
        /// The loop device.
        loop_device: String,
        /// Whether the loop device does direct I/O.
        direct_io: bool,
    },
    /// lukskit's serving process with only the FUSE plaintext file (`--no-loop`).
    FuseFile {
        /// The FUSE plaintext file.
        fuse_file: String,
    },
    /// lukskit's serving process exporting over NBD.
    Nbd {
        /// Where it listens (`unix:PATH`, `tcp:HOST:PORT`).
        address: String,
    },
}

/// The sector engine a userspace mapping's serving process uses.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct EngineInUse {
    /// `lukskit` or `kernel`.
    pub kind: String,
    /// Chosen by `--engine auto` (measured, or remembered from an earlier measurement).
    pub auto: bool,
    /// The kernel engine: the crypto API name bound (`xts(aes)`).
    pub kernel_name: Option<String>,
    /// The kernel engine: the driver serving it, from `/proc/crypto` (`xts-aes-aesni`), and
    /// whether that is `hardware`, `cpu` or `generic`.
    pub driver: Option<(String, String)>,
    /// lukskit's engine: its implementation of the cipher (`VAES-256`, `AES-NI`, …).
    pub implementation: Option<String>,
}

/// An active mapping as `status` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Status {
    /// What `status` names as active: `/dev/mapper/NAME`, or for exposures without one the
    /// FUSE file, or (NBD) the mapping name.
    pub path: String,
    /// `LUKS1`, `LUKS2`, `PLAIN` (or `n/a` for a mapping not made for a LUKS/plain volume).
    pub kind: String,
    /// The dm-crypt cipher specification.
    pub cipher: String,
    /// Volume key size in bits.
    pub key_bits: u32,
    /// Whether dm-crypt holds the key through the kernel keyring (`key location: keyring`).
    pub key_in_keyring: bool,
    /// LUKS2 authenticated encryption: the integrity type (`hmac(sha256)`, `aead`, ...) and
    /// the bits of the volume key that are the integrity key (0 for AEAD ciphers).
    pub integrity: Option<(String, u32)>,
    /// The detached header, where one was used and is known.
    pub header: Option<String>,
    /// The data device (a block device, or the loop device of an image).
    pub device: String,
    /// The image file behind a loop device, for kernel mappings of image files.
    pub loop_file: Option<String>,
    /// Encryption sector size in bytes.
    pub sector_size: u32,
    /// Data offset in 512-byte sectors.
    pub offset_sectors: u64,
    /// Data size in 512-byte sectors.
    pub size_sectors: u64,
    /// IV offset in 512-byte sectors (cryptsetup's `skipped`).
    pub iv_offset_sectors: u64,
    /// Read-only mapping.
    pub read_only: bool,
    /// Suspended (luksSuspend).
    pub suspended: bool,
    /// Held open by someone (mounted, opened by a program).
    pub in_use: bool,
    /// dm-crypt flags in cryptsetup's words and order: `discards`, `same_cpu_crypt`,
    /// `submit_from_crypt_cpus`, `no_read_workqueue`, `no_write_workqueue`.
    pub flags: Vec<&'static str>,
    /// How it is exposed.
    pub exposure: Exposure,
    /// The serving process of a userspace mapping, and whether it still runs.
    pub server: Option<(u32, bool)>,
    /// The last failed read, write or flush of a userspace mapping's backing store (e.g.
    /// an NBD server that stopped answering), as its serving process reports it.
    pub last_error: Option<String>,
    /// The sector engine of a userspace mapping (`None`: the kernel's dm-crypt, or a serving
    /// process started by an older lukskit).
    pub engine: Option<EngineInUse>,
}
