//! What is asked of the activation layer: the mapping ([`MappingConfig`], the same for every
//! backend), the kernel's extra options ([`KernelOptions`]) and which backend to use.

use lukskit_format::luks2::ConfigFlag;
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

/// The sector engine a userspace mapping's serving process uses (`open --engine`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EngineRequest {
    /// lukskit's own engine.
    #[default]
    Lukskit,
    /// The kernel's crypto API over AF_ALG (the drivers dm-crypt uses, hardware engines
    /// included); an error where the kernel has no AF_ALG or the cipher.
    Kernel,
    /// The faster of the two for the mapping's cipher, measured once per cipher, key size,
    /// sector size, kernel and kernel driver, and remembered ([`crate::userspace::engine`]).
    Auto,
}

impl EngineRequest {
    /// Parse `lukskit`, `kernel` or `auto`.
    pub fn from_name(s: &str) -> Option<Self> {
        match s {
            "lukskit" => Some(EngineRequest::Lukskit),
            "kernel" => Some(EngineRequest::Kernel),
            "auto" => Some(EngineRequest::Auto),
            _ => None,
        }
    }
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

    /// Turn on the dm-crypt performance flags among a LUKS2 header's persistent flags (the
    /// ones the command line or caller asked for stay on).
    pub fn apply_persistent(&mut self, flags: &[ConfigFlag]) {
        for f in flags {
            match f {
                ConfigFlag::SameCpuCrypt => self.same_cpu_crypt = true,
                ConfigFlag::SubmitFromCryptCpus => self.submit_from_crypt_cpus = true,
                ConfigFlag::NoReadWorkqueue => self.no_read_workqueue = true,
                ConfigFlag::NoWriteWorkqueue => self.no_write_workqueue = true,
                _ => {}
            }
        }
    }

    /// These options' dm-crypt performance flags as LUKS2 persistent flags (what
    /// `--persistent` stores, with `allow-discards` when `discards`).
    pub fn persistent_flags(&self, discards: bool) -> Vec<ConfigFlag> {
        [
            (discards, ConfigFlag::AllowDiscards),
            (self.same_cpu_crypt, ConfigFlag::SameCpuCrypt),
            (self.submit_from_crypt_cpus, ConfigFlag::SubmitFromCryptCpus),
            (self.no_read_workqueue, ConfigFlag::NoReadWorkqueue),
            (self.no_write_workqueue, ConfigFlag::NoWriteWorkqueue),
        ]
        .into_iter()
        .filter_map(|(on, f)| on.then_some(f))
        .collect()
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
    /// How the plaintext is presented.
    #[serde(flatten)]
    pub exposure: ExposureRequest,
    /// The serving process serves the root file system (it was started in the initramfs): its
    /// `argv[0]` starts with `@`, systemd's mark for root-storage daemons, which its shutdown
    /// (and `systemd-shutdown`'s final kill) leaves running.
    #[serde(default)]
    pub root_storage_daemon: bool,
    /// The volume is opened with a segment table of its own (a LUKS2 re-encryption in
    /// progress): the launch message carries it after the key.
    #[serde(default)]
    pub segments: bool,
    /// The serving process's sector engine (`--engine`; userspace backends only).
    #[serde(default)]
    pub engine: EngineRequest,
}

/// How a mapping presents its plaintext (what `open` asks for; [`crate::Exposure`] is what
/// an active mapping shows).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(from = "ExposureFields", into = "ExposureFields")]
pub enum ExposureRequest {
    /// A block device `/dev/mapper/NAME`: a kernel dm-crypt mapping, or lukskit's FUSE file
    /// with a loop device on it, whichever the backend is.
    Mapper,
    /// lukskit's FUSE plaintext file only (`--no-loop`).
    FuseFile,
    /// An NBD export of lukskit's serving process (`--nbd`).
    Nbd(NbdExport),
}

impl ExposureRequest {
    /// Only lukskit's serving process can present it this way (not the kernel).
    pub fn userspace_only(&self) -> bool {
        !matches!(self, ExposureRequest::Mapper)
    }

    /// The NBD export asked for, if any.
    pub fn nbd(&self) -> Option<&NbdExport> {
        match self {
            ExposureRequest::Nbd(n) => Some(n),
            _ => None,
        }
    }
}

/// An NBD export (`--nbd`, `--nbd-connections`, `--tls-*`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NbdExport {
    /// Where to listen (`unix:PATH`, `tcp:HOST:PORT`).
    pub address: String,
    /// Most connections served at once; `None` for the server's default
    /// ([`lukskit_expose::nbd::DEFAULT_MAX_CONNECTIONS`]).
    pub connections: Option<usize>,
    /// TLS; `None` for a plain export.
    pub tls: Option<NbdTlsConfig>,
}

/// [`ExposureRequest`] as state files and launch messages have always recorded it (so that
/// the state of mappings opened by an earlier lukskit stays readable).
#[derive(Serialize, Deserialize)]
struct ExposureFields {
    use_loop: bool,
    nbd: Option<String>,
    #[serde(default)]
    nbd_connections: Option<usize>,
    #[serde(default)]
    nbd_tls: Option<NbdTlsConfig>,
}

impl From<ExposureFields> for ExposureRequest {
    fn from(f: ExposureFields) -> Self {
        match (f.nbd, f.use_loop) {
            (Some(address), _) => ExposureRequest::Nbd(NbdExport {
                address,
                connections: f.nbd_connections,
                tls: f.nbd_tls,
            }),
            (None, true) => ExposureRequest::Mapper,
            (None, false) => ExposureRequest::FuseFile,
        }
    }
}

impl From<ExposureRequest> for ExposureFields {
    fn from(e: ExposureRequest) -> Self {
        match e {
            ExposureRequest::Mapper => ExposureFields {
                use_loop: true,
                nbd: None,
                nbd_connections: None,
                nbd_tls: None,
            },
            ExposureRequest::FuseFile => ExposureFields {
                use_loop: false,
                nbd: None,
                nbd_connections: None,
                nbd_tls: None,
            },
            ExposureRequest::Nbd(n) => ExposureFields {
                use_loop: false,
                nbd: Some(n.address),
                nbd_connections: n.connections,
                nbd_tls: n.tls,
            },
        }
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    fn config_json(exposure: &str) -> String {
        format!(
            r#"{{"name":"n","kind":"LUKS2","uuid":null,"device":"/d","header":null,
               "layout":{{"cipher":"aes-xts-plain64","offset":0,"size":null,"sector_size":512,
               "iv_offset":0,"iv_large_sectors":false}},"key_bits":512,"read_only":false,
               "allow_discards":false,{exposure}}}"#
        )
    }

    #[test]
    fn state_files_of_every_exposure_read_and_write_the_same_fields() {
        let cases = [
            (r#""use_loop":true,"nbd":null"#, ExposureRequest::Mapper),
            (r#""use_loop":false,"nbd":null"#, ExposureRequest::FuseFile),
            (
                r#""use_loop":false,"nbd":"unix:/s","nbd_connections":3,
                   "nbd_tls":{"creds":"/c","required":true,"verify_peer":true}"#,
                ExposureRequest::Nbd(NbdExport {
                    address: "unix:/s".into(),
                    connections: Some(3),
                    tls: Some(NbdTlsConfig {
                        creds: "/c".into(),
                        required: true,
                        verify_peer: true,
                    }),
                }),
            ),
        ];
        for (fields, exposure) in cases {
            let c: MappingConfig = serde_json::from_str(&config_json(fields)).unwrap();
            assert_eq!(c.exposure, exposure);
            assert_eq!(c.kind, VolumeType::Luks2);
            let v = serde_json::to_value(&c).unwrap();
            assert!(
                v.get("use_loop").is_some() && v.get("exposure").is_none(),
                "{v}"
            );
            let back: MappingConfig = serde_json::from_value(v).unwrap();
            assert_eq!(back, c);
        }
        // A type lukskit does not know is refused, not guessed.
        let unknown = config_json(r#""use_loop":true,"nbd":null"#).replace("LUKS2", "LUKS9");
        assert!(serde_json::from_str::<MappingConfig>(&unknown).is_err());
    }

    #[test]
    fn persistent_flags_turn_on_the_kernel_flags_and_back() {
        let mut k = KernelOptions {
            no_read_workqueue: true,
            ..KernelOptions::default()
        };
        k.apply_persistent(&[
            ConfigFlag::AllowDiscards,
            ConfigFlag::SameCpuCrypt,
            ConfigFlag::Other("x".into()),
        ]);
        assert!(k.same_cpu_crypt && k.no_read_workqueue);
        assert!(!k.submit_from_crypt_cpus && !k.no_write_workqueue);
        assert_eq!(
            k.persistent_flags(true),
            [
                ConfigFlag::AllowDiscards,
                ConfigFlag::SameCpuCrypt,
                ConfigFlag::NoReadWorkqueue
            ]
        );
        assert!(KernelOptions::default().persistent_flags(false).is_empty());
    }
}
