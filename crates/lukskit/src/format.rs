//! Creating a new LUKS volume (cryptsetup's `luksFormat`).

use crate::error::{Error, Result};
use crate::pbkdf::{pbkdf_request, Pbkdf};
use crate::secret::Secret;
use crate::volume::{OpenOptions, Volume};
use lukskit_crypto::spec::CipherSpec;
use lukskit_format::VolumeType;
use lukskit_volume::format::{DataCipher, FormatRequest};

/// The parameters of a new volume; [`FormatOptions::default`] is cryptsetup 2.6.1's
/// `luksFormat` default (LUKS2, aes-xts-plain64, 512-bit key, Argon2id).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct FormatOptions {
    /// LUKS1 or LUKS2.
    pub version: VolumeType,
    /// The data cipher.
    pub cipher: CipherSpec,
    /// Volume key size in bits (512 for XTS, 256 otherwise when `None`).
    pub key_bits: Option<u32>,
    /// LUKS2 encryption sector size in bytes (512 to 4096; 4096 for image files when `None`).
    pub sector_size: Option<u32>,
    /// The first keyslot's PBKDF.
    pub pbkdf: Pbkdf,
    /// The PBKDF2, anti-forensic and digest hash (`sha256` when `None`).
    pub hash: Option<String>,
    /// LUKS2 label.
    pub label: Option<String>,
    /// LUKS2 subsystem.
    pub subsystem: Option<String>,
    /// The UUID (random when `None`).
    pub uuid: Option<String>,
    /// Keep the header in this separate file (created when missing): `--header`.
    pub header: Option<String>,
}

impl Default for FormatOptions {
    fn default() -> Self {
        FormatOptions {
            version: VolumeType::Luks2,
            cipher: CipherSpec::parse(lukskit_volume::format::DEFAULT_CIPHER)
                .expect("the default cipher parses"),
            key_bits: None,
            sector_size: None,
            pbkdf: Pbkdf::Default,
            hash: None,
            label: None,
            subsystem: None,
            uuid: None,
            header: None,
        }
    }
}

impl FormatOptions {
    /// LUKS2 with cryptsetup's defaults.
    pub fn luks2() -> Self {
        Self::default()
    }

    /// LUKS1 with cryptsetup's defaults.
    pub fn luks1() -> Self {
        FormatOptions {
            version: VolumeType::Luks1,
            ..Self::default()
        }
    }

    /// Use the cipher `spec` (`aes-xts-plain64`, `serpent-cbc-essiv:sha256`, ...).
    pub fn cipher(mut self, spec: &str) -> Result<Self> {
        self.cipher = CipherSpec::parse(spec).map_err(|e| Error::InvalidOption {
            option: "cipher",
            reason: e.to_string(),
        })?;
        Ok(self)
    }

    /// Use a volume key of `bits` bits.
    pub fn key_bits(mut self, bits: u32) -> Self {
        self.key_bits = Some(bits);
        self
    }

    /// Use this encryption sector size (LUKS2).
    pub fn sector_size(mut self, bytes: u32) -> Self {
        self.sector_size = Some(bytes);
        self
    }

    /// Use this PBKDF for the first keyslot.
    pub fn pbkdf(mut self, pbkdf: Pbkdf) -> Self {
        self.pbkdf = pbkdf;
        self
    }

    /// Set the LUKS2 label.
    pub fn label(mut self, label: impl Into<String>) -> Self {
        self.label = Some(label.into());
        self
    }

    /// Keep the header in the file `path` (created when missing), the data area at offset
    /// 0 of the device (cryptsetup's `--header`).
    pub fn header(mut self, path: impl Into<String>) -> Self {
        self.header = Some(path.into());
        self
    }

    /// Set the UUID.
    pub fn uuid(mut self, uuid: impl Into<String>) -> Self {
        self.uuid = Some(uuid.into());
        self
    }
}

/// Format the existing image file or block device `path` as a new LUKS volume whose
/// keyslot 0 opens with `passphrase` (a [`Secret::Passphrase`] or [`Secret::KeyFile`]; a
/// [`Secret::VolumeKey`] is refused here: the volume key is random). Everything on `path`
/// is lost. Returns the new volume, opened for writing.
pub fn format(path: &str, passphrase: &Secret, options: &FormatOptions) -> Result<Volume> {
    if !options.version.is_luks() {
        return Err(Error::InvalidOption {
            option: "version",
            reason: format!("{} is not LUKS1 or LUKS2", options.version),
        });
    }
    let secret = passphrase.keyslot_secret().ok_or(Error::InvalidOption {
        option: "passphrase",
        reason: "a passphrase or key file is needed".into(),
    })?;
    let params = FormatRequest {
        header: options.header.clone(),
        cipher: DataCipher::Sector(options.cipher.clone()),
        key_size_bits: options.key_bits,
        sector_size: options.sector_size,
        label: options.label.clone(),
        subsystem: options.subsystem.clone(),
        uuid: options.uuid.clone(),
        pbkdf: pbkdf_request(&options.pbkdf, options.hash.as_deref()),
        ..FormatRequest::new(options.version, path)
    };
    lukskit_volume::format::format(&params, secret.as_bytes())?;
    let mut open = OpenOptions::new().writable(true);
    if let Some(h) = &options.header {
        open = open.header(h.clone());
    }
    open.open(path)
}
