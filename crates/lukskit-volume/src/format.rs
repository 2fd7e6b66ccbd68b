//! Creating new LUKS1 and LUKS2 volumes (`luksFormat`).

use crate::claim::{Claim, ClaimError};
use crate::device::{Access, Device};
use crate::error::{IoOp, KeyslotError, ParamError, Result, VolumeError};
use crate::pbkdf::PbkdfRequest;
use crate::{luks1_keys, luks2_keys, wipe};
use lukskit_crypto::engine::SectorCipher;
use lukskit_crypto::spec::CipherSpec;
use lukskit_crypto::SecretBuf;
use lukskit_format::io::Storage;
use lukskit_format::luks1::Luks1Header;
use lukskit_format::luks2::{self, Luks2Header, NewHeaderParams};
use lukskit_format::VolumeType;
use std::os::unix::fs::FileTypeExt;
use std::path::Path;

/// Default data alignment: 1 MiB, in 512-byte sectors.
pub const DEFAULT_ALIGN_SECTORS: u32 = 2048;

/// The data cipher of a new volume, parsed where the request is made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DataCipher {
    /// A cipher of lukskit's engine (checked against the key and sector size at format).
    Sector(CipherSpec),
    /// With [`FormatRequest::integrity`]: the kernel's cipher, written into the header as
    /// given (AEAD modes such as `aes-gcm-random` are no [`CipherSpec`]); `spec` when it
    /// parses as one (it then gives the default key size).
    Kernel {
        /// The cipher as given.
        text: String,
        /// `text` parsed, when it parses.
        spec: Option<CipherSpec>,
    },
}

impl DataCipher {
    /// The default cipher, cryptsetup's `aes-xts-plain64`.
    pub fn default_luks() -> Self {
        DataCipher::Sector(default_cipher())
    }

    /// The cipher as the engine's [`CipherSpec`], when it is one.
    pub fn spec(&self) -> Option<&CipherSpec> {
        match self {
            DataCipher::Sector(s) => Some(s),
            DataCipher::Kernel { spec, .. } => spec.as_ref(),
        }
    }

    /// The specification text as the header stores it.
    pub fn text(&self) -> String {
        match self {
            DataCipher::Sector(s) => s.to_string(),
            DataCipher::Kernel { text, .. } => text.clone(),
        }
    }

    /// cryptsetup's default volume key size in bits for this cipher (without `--key-size`).
    pub fn default_key_bits(&self) -> u32 {
        self.spec().map_or(256, default_key_bits)
    }
}

/// cryptsetup's default LUKS cipher.
pub const DEFAULT_CIPHER: &str = "aes-xts-plain64";

/// [`DEFAULT_CIPHER`], parsed.
pub fn default_cipher() -> CipherSpec {
    CipherSpec::parse(DEFAULT_CIPHER).expect("the default cipher parses")
}

/// Everything `luksFormat` needs besides the passphrase.
#[derive(Debug, Clone)]
pub struct FormatRequest {
    /// LUKS version.
    pub kind: VolumeType,
    /// Data device (or image file).
    pub device: String,
    /// Detached header file, created when missing.
    pub header: Option<String>,
    /// The data cipher ([`DataCipher::default_luks`] is cryptsetup's default).
    pub cipher: DataCipher,
    /// Volume key size in bits (default 512 for XTS, else 256).
    pub key_size_bits: Option<u32>,
    /// LUKS2 encryption sector size (default: 4096 on image files, the device's logical/physical
    /// sector size on block devices, 512 when offsets are not aligned).
    pub sector_size: Option<u32>,
    /// Data offset in 512-byte sectors (`--offset`).
    pub offset_sectors: Option<u64>,
    /// The alignment in 512-byte sectors `offset_sectors` was rounded up to
    /// (`--align-payload`), when it does not come from `--offset`. A LUKS2 data offset need not
    /// then be whole 4096-byte blocks (cryptsetup 2.6.1 puts the data of `--align-payload 5`
    /// at 32770 sectors), and the default encryption sector size falls back to 512 bytes
    /// unless the alignment is a multiple of the one detected (as cryptsetup's required
    /// alignment).
    pub alignment_sectors: Option<u64>,
    /// LUKS2 label.
    pub label: Option<String>,
    /// LUKS2 subsystem.
    pub subsystem: Option<String>,
    /// Volume UUID (random when None).
    pub uuid: Option<String>,
    /// LUKS2 metadata (binary header + JSON) size in bytes.
    pub metadata_size: Option<u64>,
    /// LUKS2 keyslots area size in bytes.
    pub keyslots_size: Option<u64>,
    /// Keyslot for the first passphrase (default 0).
    pub key_slot: Option<u32>,
    /// The PBKDF of the first keyslot (and the digest hash).
    pub pbkdf: PbkdfRequest,
    /// A given volume key (`--volume-key-file`); random when None.
    pub volume_key: Option<SecretBuf>,
    /// LUKS2 authenticated encryption: the segment's integrity type (`hmac(sha256)`, `aead`,
    /// `poly1305`). The cipher is then the kernel's to check (lukskit's engine has no AEAD
    /// modes; [`DataCipher::Kernel`]) and `key_size_bits` is the whole key, cipher key then
    /// integrity key.
    pub integrity: Option<String>,
}

impl FormatRequest {
    /// A `kind` volume on `device` with cryptsetup's defaults for everything else
    /// (aes-xts-plain64, the cipher's default key size, detected sector size and offset,
    /// the default PBKDF, a random volume key and UUID).
    pub fn new(kind: VolumeType, device: impl Into<String>) -> Self {
        FormatRequest {
            kind,
            device: device.into(),
            header: None,
            cipher: DataCipher::default_luks(),
            key_size_bits: None,
            sector_size: None,
            offset_sectors: None,
            alignment_sectors: None,
            label: None,
            subsystem: None,
            uuid: None,
            metadata_size: None,
            keyslots_size: None,
            key_slot: None,
            pbkdf: PbkdfRequest::default(),
            volume_key: None,
            integrity: None,
        }
    }
}

/// The dm-integrity step of a LUKS2 format with integrity, given the data offset in bytes and
/// the encryption sector size: called after the header areas are wiped and before the header
/// is written (as cryptsetup formats dm-integrity between the two). Its error message is
/// returned as [`VolumeError::IntegrityFormat`].
pub type IntegrityHook<'a> = &'a mut dyn FnMut(u64, u32) -> std::result::Result<(), String>;

/// What `format` produced.
#[derive(Debug)]
pub struct FormatOutcome {
    /// The keyslot holding the passphrase.
    pub keyslot: u32,
    /// Something the user should be told although the format succeeded.
    pub warning: Option<FormatWarning>,
}

/// A warning of a successful format.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum FormatWarning {
    /// The data offset lies at or beyond the end of the device: the volume has no room for
    /// data and cannot be activated.
    TooSmallForActivation {
        /// The data device.
        path: String,
    },
}

/// cryptsetup's default volume key size in bits for `spec` (without `--key-size`).
pub fn default_key_bits(spec: &CipherSpec) -> u32 {
    // cryptsetup doubles the 256-bit default for XTS (two keys).
    if spec.chainmode == "xts" {
        512
    } else {
        256
    }
}

fn check_uuid(uuid: &Option<String>) -> Result<String> {
    match uuid {
        Some(u) => uuid::Uuid::parse_str(u)
            .map(|u| u.hyphenated().to_string())
            .map_err(|_| ParamError::Uuid.into()),
        None => Ok(uuid::Uuid::new_v4().hyphenated().to_string()),
    }
}

/// Format a new LUKS volume and add the first keyslot. The data device and the detached
/// header are claimed for exclusive use while the header is written (see [`claim_devices`]).
pub fn format(p: &FormatRequest, passphrase: &[u8]) -> Result<FormatOutcome> {
    format_inner(p, None, passphrase, None)
}

/// [`format()`] of a LUKS2 volume with `p.integrity`: `hook` has the kernel write the
/// dm-integrity superblock (see [`IntegrityHook`]). The devices are checked for exclusive
/// use but not held: the kernel claims the data device itself as it loads dm-integrity.
pub fn format_integrity(
    p: &FormatRequest,
    passphrase: &[u8],
    hook: IntegrityHook<'_>,
) -> Result<FormatOutcome> {
    format_inner(p, None, passphrase, Some(hook))
}

/// [`format()`] for a caller that already holds the [`claim_devices`] claims of `p` (and keeps
/// them for longer, e.g. to write the data area afterwards).
pub fn format_claimed(
    p: &FormatRequest,
    claims: &[Claim],
    passphrase: &[u8],
) -> Result<FormatOutcome> {
    format_inner(p, Some(claims), passphrase, None)
}

fn format_inner(
    p: &FormatRequest,
    held: Option<&[Claim]>,
    passphrase: &[u8],
    hook: Option<IntegrityHook<'_>>,
) -> Result<FormatOutcome> {
    if !p.kind.is_luks() {
        return Err(ParamError::NotLuksType {
            volume_type: p.kind,
        }
        .into());
    }
    if p.integrity.is_some() && (p.kind != VolumeType::Luks2 || hook.is_none()) {
        return Err(VolumeError::IntegrityFormat(
            "Integrity option can be used only for LUKS2 format".into(),
        ));
    }
    // With integrity the cipher (aes-gcm-random, aegis128-random, ...) is the kernel's.
    let spec = match (&p.cipher, &p.integrity) {
        (DataCipher::Sector(s), _) => Some(s.clone()),
        (DataCipher::Kernel { spec, .. }, Some(_)) => spec.clone(),
        // Without integrity the cipher is the engine's: it must be a `CipherSpec`.
        (DataCipher::Kernel { spec: Some(s), .. }, None) => Some(s.clone()),
        (DataCipher::Kernel { text, spec: None }, None) => Some(CipherSpec::parse(text)?),
    };
    let key_bits = p
        .key_size_bits
        .unwrap_or_else(|| p.cipher.default_key_bits());
    if key_bits == 0 || !key_bits.is_multiple_of(8) {
        return Err(ParamError::KeySizeNotBytes.into());
    }
    let key_len = (key_bits / 8) as usize;
    let vk = match &p.volume_key {
        Some(k) => {
            if k.len() != key_len {
                return Err(ParamError::VolumeKeySize {
                    got: k.len(),
                    expected: key_len,
                }
                .into());
            }
            k.clone()
        }
        None => SecretBuf::random(key_len)?,
    };
    let max_slot = match p.kind {
        VolumeType::Luks1 => lukskit_format::luks1::NUM_KEYSLOTS as u32,
        _ => luks2::MAX_KEYSLOTS,
    };
    if let Some(slot) = p.key_slot.filter(|&s| s >= max_slot) {
        return Err(KeyslotError::OutOfRange {
            slot,
            count: max_slot,
        }
        .into());
    }
    let uuid = check_uuid(&p.uuid)?;
    // Refuse to use the data device if it cannot be opened, as cryptsetup does.
    let data_dev = Device::open(&p.device, Access::Write)?;
    // Never format under a live mapping or a mount: held until the new header is written.
    let _own_claims = match held {
        Some(_) => Vec::new(),
        None if hook.is_some() => {
            drop(claim_devices(p)?);
            Vec::new()
        }
        None => claim_devices(p)?,
    };

    let header_dev = match &p.header {
        Some(h) => Some(Device::open_or_create(h)?),
        None => None,
    };
    let dev = header_dev.as_ref().unwrap_or(&data_dev);
    match (p.kind, &spec) {
        (VolumeType::Luks1, Some(spec)) => format_luks1(p, dev, spec, &vk, &uuid, passphrase),
        (VolumeType::Luks1, None) => Err(VolumeError::IntegrityFormat(
            "Integrity option can be used only for LUKS2 format".into(),
        )),
        (_, spec) => format_luks2(
            p,
            dev,
            &data_dev,
            spec.as_ref(),
            &vk,
            &uuid,
            passphrase,
            hook,
        ),
    }
}

/// Claim the data device and the detached header (when it exists already) for exclusive use,
/// as cryptsetup's luksFormat opens them with `O_EXCL`: [`VolumeError::InUse`] while a
/// mapping, a mount or another exclusive user holds one of them (an image file's idle loop
/// device does not, see [`Claim::acquire_for_rewrite`]).
/// `format` does this itself; callers may call it first to fail before asking for anything.
pub fn claim_devices(p: &FormatRequest) -> Result<Vec<Claim>> {
    claim_paths(&p.device, p.header.as_deref())
}

/// [`claim_devices`] for the data device `device` and the detached header `header`, before
/// a [`FormatRequest`] is made.
pub fn claim_paths(device: &str, header: Option<&str>) -> Result<Vec<Claim>> {
    let mut paths = vec![device];
    if let Some(h) = header.filter(|h| Path::new(h).exists()) {
        paths.push(h);
    }
    paths
        .into_iter()
        .map(|path| {
            // As cryptsetup: a header goes on a block device or a regular file only.
            let holds_header = path == header.unwrap_or(device);
            if let Some(md) = std::fs::metadata(path).ok().filter(|_| holds_header) {
                let ft = md.file_type();
                if !ft.is_block_device() && !ft.is_file() {
                    return Err(VolumeError::NotCompatible {
                        path: path.to_string(),
                    });
                }
            }
            Claim::acquire_for_rewrite(path).map_err(|e| match e {
                ClaimError::InUse => VolumeError::InUse {
                    path: path.to_string(),
                },
                ClaimError::Io(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    VolumeError::not_found(path)
                }
                ClaimError::Io(e) => VolumeError::io(IoOp::Open, path, e),
            })
        })
        .collect()
}

fn too_small_warning(
    dev: &Device,
    path: &str,
    data_offset: u64,
    detached: bool,
) -> Option<FormatWarning> {
    if detached {
        return None;
    }
    match dev.size() {
        Ok(size) if size <= data_offset => Some(FormatWarning::TooSmallForActivation {
            path: path.to_string(),
        }),
        _ => None,
    }
}

fn format_luks1(
    p: &FormatRequest,
    dev: &Device,
    spec: &CipherSpec,
    vk: &SecretBuf,
    uuid: &str,
    passphrase: &[u8],
) -> Result<FormatOutcome> {
    if p.label.is_some() || p.subsystem.is_some() {
        return Err(ParamError::LabelNeedsLuks2.into());
    }
    if let Some(s) = p.sector_size {
        if s != 512 {
            return Err(ParamError::SectorSize.into());
        }
    }
    SectorCipher::check(spec, vk.len(), 512)?;
    let (name, mode) = spec.luks1_parts()?;
    let hash = p.pbkdf.hash()?;
    let offset = match p.offset_sectors {
        Some(o) => Some(u32::try_from(o).map_err(|_| ParamError::OffsetTooLargeForLuks1)?),
        None => None,
    };
    let detached = p.header.is_some();
    let (slots, payload) =
        Luks1Header::layout(vk.len() as u32, DEFAULT_ALIGN_SECTORS, offset, detached);
    let digest_iters = p.pbkdf.digest_iterations(vk.len())?;
    let (mk_digest, mk_salt) = luks1_keys::make_digest(hash, vk.as_bytes(), digest_iters)?;
    let mut hdr = Luks1Header::new(
        &name,
        &mode,
        hash.name(),
        vk.len() as u32,
        payload,
        slots,
        mk_digest,
        mk_salt,
        digest_iters,
        uuid,
    );
    if payload != 0 {
        let end = hdr.keyslots_end_bytes();
        if u64::from(payload) * 512 < end {
            return Err(if detached {
                ParamError::DetachedOffsetInsideHeader
            } else {
                ParamError::OffsetTooSmallForLuks1
            }
            .into());
        }
    }
    let header_end = if detached {
        hdr.keyslots_end_bytes()
    } else {
        u64::from(payload) * 512
    }
    .max(hdr.keyslots_end_bytes());
    let warning = too_small_warning(dev, &p.device, u64::from(payload) * 512, detached);
    dev.ensure_len(header_end)?;
    // Wipe the header area, then fill every keyslot's material area with random data.
    wipe::zero(dev, 0, header_end)?;
    let material = u64::from(Luks1Header::keyslot_material_sectors(vk.len() as u32)) * 512;
    for s in slots {
        wipe::random(dev, u64::from(s) * 512, material)?;
    }
    luks1_keys::write_header(dev, &hdr)?;
    let slot = p.key_slot.unwrap_or(0);
    if slot as usize >= lukskit_format::luks1::NUM_KEYSLOTS {
        return Err(KeyslotError::OutOfRange { slot, count: 8 }.into());
    }
    let iterations = match p.pbkdf.resolve(VolumeType::Luks1, vk.len())? {
        lukskit_crypto::kdf::Pbkdf::Pbkdf2 { iterations, .. } => iterations,
        _ => unreachable!("LUKS1 resolves only PBKDF2"),
    };
    luks1_keys::store(dev, &mut hdr, slot, vk, passphrase, iterations)?;
    Ok(FormatOutcome {
        keyslot: slot,
        warning,
    })
}

/// cryptsetup 2.6's optimal encryption sector size of a LUKS2 data device
/// (`device_optimal_encryption_sector_size`): the larger of the logical and physical block
/// sizes of a block device (512..=4096), 4096 for a file.
fn optimal_sector_size(dev: &Device) -> u32 {
    block_sector_size(dev).unwrap_or(4096)
}

fn block_sector_size(dev: &Device) -> Option<u32> {
    use std::os::unix::io::AsRawFd;
    if !dev.is_block_device() {
        return None;
    }
    let mut logical: libc::c_int = 0;
    let mut physical: libc::c_uint = 0;
    let file = dev.file()?;
    // SAFETY: BLKSSZGET/BLKPBSZGET write one integer into the pointed-to, live local.
    unsafe {
        if libc::ioctl(file.as_raw_fd(), libc::BLKSSZGET, &mut logical) != 0 {
            return None;
        }
        if libc::ioctl(file.as_raw_fd(), libc::BLKPBSZGET, &mut physical) != 0 {
            physical = 0;
        }
    }
    Some((logical as u32).max(physical).clamp(512, 4096))
}

/// The LUKS2 header's area sizes and data offset `format` would use for `p`.
struct Luks2Areas {
    metadata_size: u64,
    keyslots_size: u64,
    data_offset: u64,
}

fn luks2_areas(p: &FormatRequest) -> Result<Luks2Areas> {
    let detached = p.header.is_some();
    let metadata_size = p.metadata_size.unwrap_or(luks2::DEFAULT_METADATA_SIZE);
    if !luks2::METADATA_SIZES.contains(&metadata_size) {
        return Err(ParamError::MetadataSize.into());
    }
    let max_keyslots_size =
        |data_offset: u64| data_offset.saturating_sub(2 * metadata_size) / 4096 * 4096;
    let offset_bytes = p.offset_sectors.map(|o| o * 512);
    if let Some(o) = offset_bytes {
        if o % 4096 != 0 && p.alignment_sectors.is_none() {
            return Err(ParamError::OffsetNot4096.into());
        }
    }
    let mut keyslots_size = match p.keyslots_size {
        Some(k) => {
            if k % 4096 != 0 || k > luks2::MAX_KEYSLOTS_SIZE {
                return Err(ParamError::KeyslotsSize.into());
            }
            k
        }
        None => luks2::DEFAULT_KEYSLOTS_SIZE + 2 * luks2::DEFAULT_METADATA_SIZE - 2 * metadata_size,
    };
    let data_offset = match offset_bytes {
        Some(o) => {
            // The keyslots area must end before the data offset even in a detached header
            // (cryptsetup validates it so): without --luks2-keyslots-size it shrinks to fit.
            if p.keyslots_size.is_none() {
                keyslots_size = keyslots_size.min(max_keyslots_size(o));
            }
            if !detached && 2 * metadata_size + keyslots_size > o {
                return Err(ParamError::OffsetTooSmall.into());
            }
            o
        }
        None if detached => 0,
        None => {
            let align = u64::from(DEFAULT_ALIGN_SECTORS) * 512;
            (2 * metadata_size + keyslots_size).div_ceil(align) * align
        }
    };
    Ok(Luks2Areas {
        metadata_size,
        keyslots_size,
        data_offset,
    })
}

/// cryptsetup's threshold for "keyslots area is very small": 4 MiB less both 16 KiB headers.
const SMALL_KEYSLOTS_AREA: u64 = 4 * 1024 * 1024 - 2 * 16 * 1024;

/// The size of the LUKS2 keyslots area `format` would make for `p` when it is so small that
/// few keyslots fit (cryptsetup warns of it before it writes the header), else `None` (also
/// when `p` is invalid: `format` reports that).
pub fn small_keyslots_area(p: &FormatRequest) -> Option<u64> {
    if !matches!(p.kind, VolumeType::Luks2) {
        return None;
    }
    let areas = luks2_areas(p).ok()?;
    (areas.keyslots_size < SMALL_KEYSLOTS_AREA).then_some(areas.keyslots_size)
}

/// `dev` holds the header (the data device itself, or the detached header); `data` is the
/// data device.
#[allow(clippy::too_many_arguments)]
fn format_luks2(
    p: &FormatRequest,
    dev: &Device,
    data: &Device,
    spec: Option<&CipherSpec>,
    vk: &SecretBuf,
    uuid: &str,
    passphrase: &[u8],
    hook: Option<IntegrityHook<'_>>,
) -> Result<FormatOutcome> {
    let detached = p.header.is_some();
    let Luks2Areas {
        metadata_size,
        keyslots_size,
        data_offset,
    } = luks2_areas(p)?;
    let sector_size = match p.sector_size {
        Some(s) => {
            if !(512..=4096).contains(&s) || !s.is_power_of_two() {
                return Err(ParamError::SectorSize.into());
            }
            if data_offset % u64::from(s) != 0 {
                return Err(ParamError::OffsetNotAligned.into());
            }
            s
        }
        None => {
            // cryptsetup 2.6 (LUKS2_check_encryption_sector with autodetection): the data
            // device's optimal size, back to 512 where the data offset or the size of the
            // data area (device size − offset, wrapping like its unsigned arithmetic) is not a
            // multiple of it.
            let s = optimal_sector_size(data);
            let alignment_fits = p
                .alignment_sectors
                .is_none_or(|a| (a * 512).is_multiple_of(u64::from(s)));
            let area_fits = data.size().map_or(true, |size| {
                size.wrapping_sub(data_offset) % u64::from(s) == 0
            });
            if data_offset % u64::from(s) != 0 || !alignment_fits || !area_fits {
                512
            } else {
                s
            }
        }
    };
    let encryption = match spec {
        Some(spec) if p.integrity.is_none() => {
            SectorCipher::check(spec, vk.len(), sector_size)?;
            spec.to_string()
        }
        _ => p.cipher.text(),
    };
    let hash = p.pbkdf.hash()?;
    let digest_iters = p.pbkdf.digest_iterations(vk.len())?;
    let digest = luks2_keys::make_digest(0, hash, vk.as_bytes(), digest_iters, vec![0])?;
    let mut hdr = Luks2Header::new(&NewHeaderParams {
        metadata_size,
        keyslots_size,
        data_offset,
        data_size: None,
        encryption,
        sector_size,
        uuid: uuid.to_string(),
        // cryptsetup stores at most 47 bytes of each (the field is NUL-terminated).
        label: truncate47(p.label.as_deref().unwrap_or_default()),
        subsystem: truncate47(p.subsystem.as_deref().unwrap_or_default()),
        digest,
    })?;
    let areas_end = 2 * metadata_size + keyslots_size;
    let warning = too_small_warning(dev, &p.device, data_offset, detached);
    dev.ensure_len(if detached {
        areas_end
    } else {
        areas_end.max(data_offset)
    })?;
    // cryptsetup: zero the metadata (up to the data offset, at most 8 MiB + 128 MiB), then
    // fill the keyslots area with random data.
    let zero_end = if detached {
        areas_end
    } else {
        data_offset.max(areas_end)
    }
    .min(8 * 1024 * 1024 + 128 * 1024 * 1024);
    wipe::zero(dev, 0, zero_end)?;
    wipe::random(dev, 2 * metadata_size, keyslots_size)?;
    if let (Some(kind), Some(hook)) = (&p.integrity, hook) {
        hdr.set_segment_integrity(0, kind);
        hook(data_offset, sector_size).map_err(VolumeError::IntegrityFormat)?;
    }
    luks2_keys::write_header(dev, &mut hdr)?;
    let slot = p.key_slot.unwrap_or(0);
    if slot >= luks2::MAX_KEYSLOTS {
        return Err(KeyslotError::OutOfRange { slot, count: 32 }.into());
    }
    let kdf = p.pbkdf.resolve(VolumeType::Luks2, vk.len())?;
    luks2_keys::store(
        dev,
        &mut hdr,
        luks2_keys::NewKeyslot {
            id: slot,
            key: vk,
            passphrase,
            pbkdf: kdf,
            af_hash: hash,
            cipher: p.pbkdf.keyslot_cipher()?,
            digest: 0,
        },
    )?;
    Ok(FormatOutcome {
        keyslot: slot,
        warning,
    })
}

/// The first 47 bytes of `s` (cut at a character boundary), as cryptsetup stores labels.
pub fn truncate47(s: &str) -> String {
    let mut end = s.len().min(47);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    s[..end].to_string()
}
