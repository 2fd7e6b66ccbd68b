//! What a re-encryption is asked to do, as typed values (the command line's options
//! resolved once).

use lukskit_volume::reencrypt::Mode;
use std::path::PathBuf;

/// Which part of a re-encryption to do (cryptsetup's `--init-only`, `--resume-only`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Phase {
    /// Initialize (unless in progress) and run.
    #[default]
    Full,
    /// Write the re-encryption metadata only.
    InitOnly,
    /// Go on with the re-encryption in progress only.
    ResumeOnly,
}

/// A resilience mode as asked for (`--resilience NAME`); names cryptsetup does not know are
/// kept, to be refused where cryptsetup refuses them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ResilienceName {
    /// `checksum`.
    Checksum,
    /// `journal`.
    Journal,
    /// `none`.
    None,
    /// `datashift`.
    Datashift,
    /// `datashift-checksum` (a decryption moving its data).
    DatashiftChecksum,
    /// `datashift-journal` (a decryption moving its data).
    DatashiftJournal,
    /// Any other name.
    Other(String),
}

impl ResilienceName {
    /// The mode named `name` (exactly as cryptsetup compares them: case-sensitively).
    pub fn parse(name: &str) -> Self {
        match name {
            "checksum" => Self::Checksum,
            "journal" => Self::Journal,
            "none" => Self::None,
            "datashift" => Self::Datashift,
            "datashift-checksum" => Self::DatashiftChecksum,
            "datashift-journal" => Self::DatashiftJournal,
            other => Self::Other(other.to_string()),
        }
    }

    /// Whether it is one of the `datashift-*` names (known or not), which only a decryption
    /// moving its data takes.
    pub fn is_datashift_variant(&self) -> bool {
        match self {
            Self::DatashiftChecksum | Self::DatashiftJournal => true,
            Self::Other(n) => n.starts_with("datashift-"),
            _ => false,
        }
    }
}

/// A re-encryption of a LUKS2 volume, as cryptsetup 2.6.1's `reencrypt` takes it.
#[derive(Debug, Clone, Default)]
pub struct ReencryptRequest {
    /// Encrypt, decrypt, or re-encrypt (a new volume key, cipher or sector size);
    /// `None`: as in progress, else re-encrypt.
    pub mode: Option<Mode>,
    /// Initialize, run, or both.
    pub phase: Phase,
    /// The resilience asked for (`None`: cryptsetup's default, `checksum`, or the one in
    /// progress).
    pub resilience: Option<ResilienceName>,
    /// The hash of `checksum` resilience (`None`: `sha256`).
    pub resilience_hash: Option<String>,
    /// `--reduce-device-size` in bytes.
    pub reduce_device_size: Option<u64>,
    /// The largest hot zone in bytes (0: cryptsetup's default).
    pub max_hotzone: u64,
    /// Re-encrypt only the first this many bytes (`--device-size`).
    pub device_size: Option<u64>,
    /// The new encryption sector size (`None`: the old one).
    pub sector_size: Option<u32>,
    /// Keep the volume key (`--keep-key`).
    pub keep_key: bool,
    /// Unlock only this keyslot.
    pub key_slot: Option<u32>,
    /// The detached header.
    pub header: Option<PathBuf>,
    /// Run offline even where the device may be in use (`--force-offline-reencrypt`).
    pub force_offline: bool,
    /// The kernel mapping an online run goes on under (`--active-name`).
    pub active_name: Option<String>,
    /// The new keyslots' PBKDF was asked for (`--pbkdf`, `--hash`, `--iter-time`,
    /// `--pbkdf-force-iterations`): it is not copied from the old keyslots.
    pub pbkdf_given: bool,
    /// Take no re-encryption lock (`--disable-locks`).
    pub disable_locks: bool,
}

impl ReencryptRequest {
    /// Whether an encryption was asked for.
    pub fn encrypts(&self) -> bool {
        self.mode == Some(Mode::Encrypt)
    }

    /// Whether a decryption was asked for.
    pub fn decrypts(&self) -> bool {
        self.mode == Some(Mode::Decrypt)
    }
}
