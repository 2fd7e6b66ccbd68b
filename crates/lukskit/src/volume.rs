//! Opening a LUKS volume, unlocking it and managing its keyslots.

use crate::error::{Error, Result};
use crate::metadata::Metadata;
use crate::pbkdf::{pbkdf_request, Pbkdf};
use crate::plaintext::Plaintext;
use crate::secret::Secret;
use lukskit_crypto::SecretBuf;
use lukskit_format::VolumeType;
use lukskit_volume::data::DataVolume;
use lukskit_volume::device::Access;
use lukskit_volume::storage::SharedStorage;

/// How to open a volume: read-only or for writing, with a detached header or not.
#[derive(Debug, Clone, Default)]
pub struct OpenOptions {
    header: Option<String>,
    writable: bool,
}

impl OpenOptions {
    /// Read-only, header on the device itself.
    pub fn new() -> Self {
        Self::default()
    }

    /// The LUKS header is in this separate file or device (cryptsetup's `--header`).
    pub fn header(mut self, path: impl Into<String>) -> Self {
        self.header = Some(path.into());
        self
    }

    /// Open for writing: plaintext writes and keyslot changes. The header device is then
    /// locked exclusively (as cryptsetup locks it for an update) until the volume is dropped.
    pub fn writable(mut self, writable: bool) -> Self {
        self.writable = writable;
        self
    }

    /// Open the volume on `path`: an image file, a block device or, with the `nbd` feature,
    /// an `nbd://host[:port]/export` (`nbds://` with `tls`) URI.
    pub fn open(&self, path: &str) -> Result<Volume> {
        check_uri(path)?;
        if let Some(h) = &self.header {
            check_uri(h)?;
        }
        let access = if self.writable {
            Access::Write
        } else {
            Access::Read
        };
        let inner = lukskit_volume::Volume::load(path, self.header.as_deref(), access)?;
        Ok(Volume {
            inner,
            writable: self.writable,
        })
    }
}

impl OpenOptions {
    /// Open the volume on a storage of the caller's: an image in memory, an object store,
    /// anything implementing [`crate::Storage`] (positioned reads and writes, `sync`,
    /// `size`). The header is read from `storage` too unless [`OpenOptions::header`] names
    /// a file; `name` names the volume in errors. The storage is not locked (its owner alone
    /// can exclude other users).
    ///
    /// ```
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use lukskit::{FormatOptions, MemStorage, OpenOptions, Pbkdf, Secret, SharedStorage};
    /// use std::sync::Arc;
    ///
    /// # let dir = tempfile::tempdir()?;
    /// # let image = dir.path().join("disk.img");
    /// # std::fs::File::create(&image)?.set_len(20 << 20)?;
    /// # let image = image.to_str().unwrap();
    /// # let fast = FormatOptions::luks2().pbkdf(Pbkdf::Pbkdf2 { iterations: 1000 });
    /// # lukskit::format(image, &Secret::passphrase("pw"), &fast)?;
    /// // A LUKS image held in memory (read from a file here; from anywhere in general).
    /// let storage: SharedStorage = Arc::new(MemStorage::from_vec(std::fs::read(image)?));
    /// let vol = OpenOptions::new()
    ///     .writable(true)
    ///     .open_storage(Arc::clone(&storage), "in-memory image")?
    ///     .unlock(Secret::passphrase("pw"))?;
    /// vol.write_at(b"kept in memory", 0)?;
    /// let mut buf = [0u8; 14];
    /// vol.read_at(&mut buf, 0)?;
    /// assert_eq!(&buf, b"kept in memory");
    /// # Ok(())
    /// # }
    /// ```
    pub fn open_storage(&self, storage: SharedStorage, name: &str) -> Result<Volume> {
        let access = if self.writable {
            Access::Write
        } else {
            Access::Read
        };
        let header = match &self.header {
            Some(h) => {
                check_uri(h)?;
                let dev = lukskit_volume::device::Device::open(h, access)?;
                Some(SharedStorage::clone(dev.storage()))
            }
            None => None,
        };
        let inner = lukskit_volume::Volume::load_storage(storage, name, header, access)?;
        Ok(Volume {
            inner,
            writable: self.writable,
        })
    }
}

/// Refuse remote URIs when the build has no NBD client enabled.
fn check_uri(path: &str) -> Result<()> {
    let nbds = path.starts_with("nbds://") || path.starts_with("nbds+unix://");
    let nbd = nbds || lukskit_volume::device::remote::is_remote(path);
    if nbd && !cfg!(feature = "nbd") {
        return Err(Error::FeatureDisabled { feature: "nbd" });
    }
    if nbds && !cfg!(feature = "tls") {
        return Err(Error::FeatureDisabled { feature: "tls" });
    }
    Ok(())
}

/// A LUKS1 or LUKS2 volume whose header is loaded (and checked), not yet unlocked.
#[derive(Debug)]
pub struct Volume {
    inner: lukskit_volume::Volume,
    writable: bool,
}

impl Volume {
    /// Open the volume on `path` read-only (see [`OpenOptions::open`] for what `path` may be).
    pub fn open(path: &str) -> Result<Volume> {
        OpenOptions::new().open(path)
    }

    /// Open the volume on `path` for writing (see [`OpenOptions::writable`]).
    pub fn open_rw(path: &str) -> Result<Volume> {
        OpenOptions::new().writable(true).open(path)
    }

    /// `LUKS1` or `LUKS2`.
    pub fn volume_type(&self) -> VolumeType {
        self.inner.volume_type()
    }

    /// The volume's UUID.
    pub fn uuid(&self) -> &str {
        self.inner.uuid()
    }

    /// The active keyslots.
    pub fn keyslots(&self) -> Result<Vec<u32>> {
        Ok(self.inner.active_keyslots()?)
    }

    /// The header's metadata as typed data and as cryptsetup's JSON document.
    pub fn metadata(&self) -> Result<Metadata> {
        Metadata::of(&self.inner)
    }

    /// The volume-layer volume, for what the facade does not cover (re-encryption,
    /// conversion, tokens, header backups: see [`lukskit_volume`]).
    pub fn as_volume_layer(&self) -> &lukskit_volume::Volume {
        &self.inner
    }

    /// Find the volume key `secret` gives: the keyslot that opened (none for a volume key)
    /// and the key.
    pub fn volume_key(&self, secret: &Secret) -> Result<(Option<u32>, SecretBuf)> {
        match secret {
            Secret::Passphrase(p) | Secret::KeyFile(p) => {
                let (slot, key) = self.inner.unlock(p.as_bytes(), None, false)?;
                Ok((Some(slot), key))
            }
            Secret::VolumeKey(k) => {
                self.inner.verify_volume_key(k.as_bytes())?;
                Ok((None, k.clone()))
            }
            Secret::Token(id) => crate::tokens::unlock(&self.inner, *id),
        }
    }

    /// Unlock with `secret`: the plaintext of the data area, readable (and writable when
    /// the volume was opened for writing) at any byte offset.
    pub fn unlock(self, secret: Secret) -> Result<Unlocked> {
        let (slot, key) = self.volume_key(&secret)?;
        drop(secret);
        let data = DataVolume::from_volume(&self.inner, key.as_bytes(), self.writable)?;
        Ok(Unlocked {
            plaintext: Plaintext::new(data),
            key,
            slot,
            volume: self,
        })
    }

    /// Add a keyslot for `new_passphrase`, proving the right to with `existing` (any kind of
    /// [`Secret`]). Returns the new keyslot. Needs a volume opened for writing.
    pub fn add_key(
        &mut self,
        existing: &Secret,
        new_passphrase: &Secret,
        options: &KeyslotOptions,
    ) -> Result<u32> {
        let (_, key) = self.volume_key(existing)?;
        self.add_key_with_volume_key(&key, new_passphrase, options)
    }

    fn add_key_with_volume_key(
        &mut self,
        key: &SecretBuf,
        new_passphrase: &Secret,
        options: &KeyslotOptions,
    ) -> Result<u32> {
        self.check_writable()?;
        let new = new_passphrase
            .keyslot_secret()
            .ok_or(Error::InvalidOption {
                option: "new passphrase",
                reason: "a passphrase or key file is needed".into(),
            })?;
        let pbkdf = pbkdf_request(&options.pbkdf, options.hash.as_deref());
        Ok(self
            .inner
            .add_keyslot(key, new.as_bytes(), options.slot, &pbkdf, false)?)
    }

    /// Destroy keyslot `slot` (its key material is wiped). Removing the last keyslot makes
    /// the volume unopenable except with its volume key. Needs a volume opened for writing.
    pub fn remove_key(&mut self, slot: u32) -> Result<()> {
        self.check_writable()?;
        Ok(self.inner.kill_keyslot(slot)?)
    }

    fn check_writable(&self) -> Result<()> {
        if self.writable {
            Ok(())
        } else {
            Err(Error::ReadOnly {
                path: self.inner.dev.path().to_string(),
            })
        }
    }
}

/// Options of a new keyslot.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct KeyslotOptions {
    /// The keyslot number (the first free one when `None`).
    pub slot: Option<u32>,
    /// How the passphrase is stretched.
    pub pbkdf: Pbkdf,
    /// The PBKDF2 / anti-forensic hash (`sha256` when `None`; LUKS1 uses the header's).
    pub hash: Option<String>,
}

impl KeyslotOptions {
    /// The defaults: first free keyslot, cryptsetup's default PBKDF.
    pub fn new() -> Self {
        Self::default()
    }

    /// Use keyslot `slot`.
    pub fn slot(mut self, slot: u32) -> Self {
        self.slot = Some(slot);
        self
    }

    /// Use this PBKDF.
    pub fn pbkdf(mut self, pbkdf: Pbkdf) -> Self {
        self.pbkdf = pbkdf;
        self
    }
}

/// An unlocked volume: its plaintext, its volume key and its header.
#[derive(Debug)]
pub struct Unlocked {
    volume: Volume,
    plaintext: Plaintext,
    key: SecretBuf,
    slot: Option<u32>,
}

impl Unlocked {
    /// The plaintext data area (offset 0 is the first byte after the header's data offset).
    pub fn plaintext(&self) -> &Plaintext {
        &self.plaintext
    }

    /// The plaintext as a [`std::io::Read`] + [`std::io::Write`] + [`std::io::Seek`] stream.
    pub fn stream(&self) -> crate::PlaintextStream<'_> {
        self.plaintext.stream()
    }

    /// Size of the plaintext in bytes.
    pub fn size(&self) -> u64 {
        self.plaintext.size()
    }

    /// Read `buf.len()` plaintext bytes at `offset`.
    pub fn read_at(&self, buf: &mut [u8], offset: u64) -> Result<()> {
        self.plaintext.read_at(buf, offset)
    }

    /// Write `buf` as plaintext at `offset` (volume opened for writing).
    pub fn write_at(&self, buf: &[u8], offset: u64) -> Result<()> {
        self.plaintext.write_at(buf, offset)
    }

    /// Flush written data to the device.
    pub fn flush(&self) -> Result<()> {
        self.plaintext.flush()
    }

    /// The keyslot that opened the volume (`None` when a volume key was given).
    pub fn keyslot(&self) -> Option<u32> {
        self.slot
    }

    /// The volume key (what `luksDump --dump-volume-key` shows). Handle with care.
    pub fn volume_key(&self) -> &SecretBuf {
        &self.key
    }

    /// The header (metadata, keyslots).
    pub fn volume(&self) -> &Volume {
        &self.volume
    }

    /// Add a keyslot for `new_passphrase` with the volume key this volume was unlocked with.
    pub fn add_key(&mut self, new_passphrase: &Secret, options: &KeyslotOptions) -> Result<u32> {
        self.volume
            .add_key_with_volume_key(&self.key, new_passphrase, options)
    }

    /// Destroy keyslot `slot` (see [`Volume::remove_key`]).
    pub fn remove_key(&mut self, slot: u32) -> Result<()> {
        self.volume.remove_key(slot)
    }

    /// The header's metadata.
    pub fn metadata(&self) -> Result<Metadata> {
        self.volume.metadata()
    }
}
