//! The requests of the commands that write keyslots and new headers: the PBKDF, the data
//! cipher and luksFormat's [`FormatRequest`].

use crate::args::{parse_size, Opts};
use crate::errors::{CliError, Result};
use lukskit_crypto::spec::CipherSpec;
use lukskit_crypto::SecretBuf;
use lukskit_format::VolumeType;
use lukskit_volume::format::{DataCipher, FormatRequest, DEFAULT_CIPHER};
use lukskit_volume::pbkdf::{HashChoice, KeyslotCipherRequest, PbkdfKind, PbkdfRequest};
use lukskit_volume::VolumeError;

/// The PBKDF of the keyslots an action makes: `--pbkdf`, `--hash`, `--iter-time`,
/// `--pbkdf-force-iterations`, `--pbkdf-memory`, `--pbkdf-parallel`, `--keyslot-cipher` and
/// `--keyslot-key-size`.
pub fn pbkdf(o: &Opts) -> PbkdfRequest {
    PbkdfRequest {
        // `checks` refused any other `--pbkdf` (with cryptsetup's usage error) before an
        // action runs.
        kind: o.pbkdf.as_deref().and_then(PbkdfKind::from_name),
        hash: o.hash.as_deref().map(HashChoice::parse),
        iter_time_ms: o.iter_time,
        force_iterations: o.pbkdf_force_iterations,
        max_memory_kib: o.pbkdf_memory,
        parallel: o.pbkdf_parallel,
        // `checks` refused one of --keyslot-cipher and --keyslot-key-size without the other.
        keyslot_cipher: o.keyslot_cipher.as_ref().map(|c| KeyslotCipherRequest {
            cipher: c.clone(),
            key_bits: o.keyslot_key_size,
        }),
    }
}

/// The data cipher of a new header: `--cipher` (default aes-xts-plain64) parsed. With
/// `integrity` it is the kernel's (AEAD modes are no [`CipherSpec`]) and kept as given.
pub fn data_cipher(o: &Opts, integrity: bool) -> Result<DataCipher> {
    let text = o.cipher.as_deref().unwrap_or(DEFAULT_CIPHER);
    if integrity {
        return Ok(DataCipher::Kernel {
            text: text.to_string(),
            spec: CipherSpec::parse(text).ok(),
        });
    }
    // Reported as the volume layer reports a cipher it cannot parse.
    let spec = CipherSpec::parse(text).map_err(|e| CliError::from(VolumeError::from(e)))?;
    Ok(DataCipher::Sector(spec))
}

/// A byte size option (`--luks2-metadata-size`, `--luks2-keyslots-size`): cryptsetup's
/// "Invalid WHAT specification." when it does not parse.
fn size(s: &Option<String>, what: &str) -> Result<Option<u64>> {
    match s {
        None => Ok(None),
        Some(v) => parse_size(v)
            .map(Some)
            .ok_or_else(|| CliError::invalid(format!("Invalid {what} specification."))),
    }
}

/// What a new header's request takes from the command's own work (the key size as the
/// volume key was sized, the key read or made, the data offset chosen) besides the options.
pub struct NewHeader {
    /// LUKS1 or LUKS2.
    pub kind: VolumeType,
    /// The data device.
    pub device: String,
    /// The parsed data cipher ([`data_cipher`]).
    pub cipher: DataCipher,
    /// The volume key size in bits, if fixed.
    pub key_size_bits: Option<u32>,
    /// The data offset in 512-byte sectors, if fixed.
    pub offset_sectors: Option<u64>,
    /// The alignment the offset was rounded up to, when not `--offset`.
    pub alignment_sectors: Option<u64>,
    /// The volume key, if given.
    pub volume_key: Option<SecretBuf>,
    /// The LUKS2 integrity type, if any.
    pub integrity: Option<String>,
}

/// luksFormat's request: `n` with `--header`, `--sector-size`, `--align-payload`, `--label`,
/// `--subsystem`, `--uuid`, `--luks2-metadata-size`, `--luks2-keyslots-size`, `--key-slot`
/// and the PBKDF options.
pub fn format(o: &Opts, n: NewHeader) -> Result<FormatRequest> {
    Ok(FormatRequest {
        kind: n.kind,
        device: n.device,
        header: o.header.clone(),
        cipher: n.cipher,
        key_size_bits: n.key_size_bits,
        sector_size: o.sector_size,
        offset_sectors: n.offset_sectors,
        alignment_sectors: n.alignment_sectors,
        label: o.label.clone(),
        subsystem: o.subsystem.clone(),
        uuid: o.uuid.clone(),
        metadata_size: size(&o.luks2_metadata_size, "metadata size")?,
        keyslots_size: size(&o.luks2_keyslots_size, "keyslots size")?,
        key_slot: o.key_slot,
        pbkdf: pbkdf(o),
        volume_key: n.volume_key,
        integrity: n.integrity,
    })
}
