//! The re-encryption algorithm of cryptsetup 2.6 (`lib/luks2/luks2_reencrypt.c`), offline:
//! hot zone by hot zone, with the same metadata at every commit point so that either tool
//! continues or recovers the other's work.
//!
//! One step (forward direction):
//! 1. the segments "new up to the hot zone / hot zone (`in-reencryption`) / old after it"
//!    are built in memory, and the hot zone's old ciphertext is read;
//! 2. **commit point**: the resilience data (checksums of the old ciphertext, or the
//!    whole old ciphertext for a journal) is written to the `reencrypt` keyslot area and
//!    synced, then the header with the hot-zone segments is written (both copies);
//! 3. the hot zone is decrypted with the old key, encrypted with the new one, written, and
//!    the data is synced;
//! 4. **safe point**: the header with the segments "new up to the end of the hot zone /
//!    old after it" is written.
//!
//! With resilience `none` nothing is written at step 2, nothing is synced at step 3 and the
//! header is written only at the end, exactly as cryptsetup does.

use super::context::{status, Context, Direction, Mode, Resilience, Status};
use super::ctx;
use super::datashift;
use super::decrypt_shift;
use super::fastio::{self, DIRECT_ALIGN};
use super::online::{self, HotZone, Offline, OnlineHook};
use super::pipeline::{self, Io, IoFailure, CHUNK};
use super::verify;
// The parts of a run that the data-shift and resilience modules share with the engine live in
// modules of their own; their public items stay reachable here.
pub use super::area::ResilienceChoice;
use super::area::{area_gap, area_protection, max_area_gap};
pub use super::hotzone::{DEFAULT_CHECKSUM_HOTZONE, DEFAULT_NONE_HOTZONE, MAX_HOTZONE};
use super::keys::verification;
pub use super::keys::Keys;
use crate::error::{DeviceOp, KeyslotError, ReencryptError, Result, VolumeError};
use crate::luks2_keys;
use crate::segment::SegmentTable;
use lukskit_crypto::engine::SectorCipher;
use lukskit_crypto::spec::CipherSpec;
use lukskit_crypto::SecretBuf;
use lukskit_format::io::Storage;
use lukskit_format::luks2::edit::{self, ReencryptArea, SegmentObject};
use lukskit_format::luks2::{Luks2Header, SegmentType};

/// Parameters of [`init`].
#[derive(Debug, Clone)]
pub struct InitParams {
    /// Mode (only [`Mode::Reencrypt`] and, with a detached header, [`Mode::Encrypt`] /
    /// [`Mode::Decrypt`] are implemented).
    pub mode: Mode,
    /// Resilience.
    pub resilience: ResilienceChoice,
    /// New cipher spec (`aes-xts-plain64`); ignored for decryption.
    pub cipher: String,
    /// New encryption sector size; ignored for decryption.
    pub sector_size: u32,
    /// The digest of the new volume key (its keyslots were added unbound before);
    /// `None` for decryption.
    pub new_digest: Option<u32>,
    /// PBKDF2 iterations of the metadata digest.
    pub digest_iterations: u32,
    /// Hash of the metadata digest (cryptsetup: that of the PBKDF in use).
    pub digest_hash: lukskit_crypto::hash::HashAlg,
}

/// How [`run`] ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// The whole device is re-encrypted and the re-encryption metadata is gone.
    Finished,
    /// Stopped by the progress callback at a safe point; resumable.
    Interrupted,
}

/// Options of [`run`].
pub struct RunOptions<'a> {
    /// Largest hot zone in bytes (`--hotzone-size`); 0 = cryptsetup's default.
    pub max_hotzone: u64,
    /// Called with `(bytes done, total)` before the first and after every hot zone; `false`
    /// stops at the next safe point.
    pub progress: Option<&'a mut dyn FnMut(u64, u64) -> bool>,
    /// The data device opened a second time for direct reads of the hot zones
    /// ([`fastio::open_direct`]); `None` reads through the data [`Storage`].
    pub direct: Option<&'a std::fs::File>,
    /// Re-encrypt only the first this many bytes of the data (`--device-size`, cryptsetup's
    /// fixed device size); `None`: the data segments' size, or the size of the live mapping
    /// of an online run ([`OnlineHook::mapping_size`]), which must then be the same.
    pub device_size: Option<u64>,
}

fn dio(op: DeviceOp) -> impl FnOnce(std::io::Error) -> VolumeError {
    move |e| VolumeError::device_io(op, e)
}

fn pio(e: IoFailure) -> VolumeError {
    match e {
        IoFailure::Read(offset, e) => VolumeError::device_io(DeviceOp::ReadData { offset }, e),
        IoFailure::Write(offset, e) => VolumeError::device_io(DeviceOp::WriteData { offset }, e),
    }
}

/// Where the reads ahead of a streamed run are: the next chunk to read (resilience `none`
/// and `checksum`) and, for `none`, the end of the hot zone it is in (hot zones follow as
/// [`Run::advance`] moves them).
/// The chunks of the next hot zone a checksum run has already read and hashed (from the
/// zone's start on) while it wrote the previous one, and their checksums.
#[derive(Default)]
struct Hashed {
    bufs: Vec<pipeline::Buf>,
    sums: Vec<u8>,
}

struct Ahead {
    pos: u64,
    zone_end: u64,
    zone_len: u64,
}

/// The block size of the data device for alignment (cryptsetup's `device_block_size`):
/// the logical block size of a block device, 4096 for a regular file.
pub fn device_block_size(data: Option<&std::fs::File>) -> u64 {
    use std::os::unix::fs::FileTypeExt;
    use std::os::unix::io::AsRawFd;
    // A device with no local file (an NBD export) aligns as a regular file does.
    let Some(data) = data else {
        return 4096;
    };
    let is_blk = data
        .metadata()
        .map(|m| m.file_type().is_block_device())
        .unwrap_or(false);
    if is_blk {
        let mut ss: libc::c_int = 0;
        // SAFETY: BLKSSZGET writes one c_int through the valid pointer we pass.
        let rc = unsafe { libc::ioctl(data.as_raw_fd(), libc::BLKSSZGET, &mut ss) };
        if rc == 0 && ss > 0 {
            return ss as u64;
        }
        512
    } else {
        4096
    }
}

/// Unlock the keys of a header in re-encryption with one passphrase (cryptsetup's
/// `LUKS2_keyslot_open_all_segments`): keyslots of the old digest (only `slot` when given)
/// and of the new digest are tried.
pub fn unlock_keys(
    meta: &dyn Storage,
    hdr: &Luks2Header,
    passphrase: &[u8],
    slot: Option<u32>,
) -> Result<Keys> {
    let c = Context::load(hdr)?;
    let done = finished(hdr)?;
    let mut keys = Keys::default();
    let digests = hdr.digests()?;
    let digest_of = |ks: u32| {
        digests
            .iter()
            .find(|d| d.keyslots.contains(&ks))
            .map(|d| d.id)
    };
    for ks in hdr
        .keyslots()?
        .iter()
        .filter(|k| k.kind == lukskit_format::luks2::KeyslotType::Luks2)
    {
        let d = digest_of(ks.id);
        let want_old = keys.old.is_none()
            && d.is_some()
            && d == c.digest_old
            && slot.is_none_or(|s| s == ks.id);
        let want_new = keys.new.is_none() && d.is_some() && d == c.digest_new;
        if !(want_old || want_new) {
            continue;
        }
        if let Some(vk) = luks2_keys::open_keyslot(meta, hdr, ks, passphrase)? {
            if want_new {
                keys.new = Some(vk.clone());
            }
            if want_old {
                keys.old = Some(vk);
            }
        }
    }
    let need_old = c.mode != Mode::Encrypt && !done;
    let need_new = c.mode != Mode::Decrypt;
    if (need_old && keys.old.is_none()) || (need_new && keys.new.is_none()) {
        if keys.old.is_none() && keys.new.is_none() {
            return Err(VolumeError::WrongPassphrase);
        }
        return Err(ReencryptError::KeysMissing.into());
    }
    Ok(keys)
}

/// Initialize a re-encryption in the metadata (`reencrypt_init`): backup segments, the
/// `reencrypt` keyslot, its metadata digest and the `online-reencrypt-v2` requirement, in
/// one header write. The new key's keyslots must already exist (unbound, digest
/// `p.new_digest`). Returns the `reencrypt` keyslot id.
pub fn init(
    meta: &dyn Storage,
    data_size: u64,
    data_block_size: u64,
    hdr: &mut Luks2Header,
    p: &InitParams,
    keys: &Keys,
) -> Result<u32> {
    init_checked(
        meta,
        data_size,
        data_block_size,
        hdr,
        p,
        keys,
        &mut |_, _| Ok(()),
    )
}

/// [`init`] with `check` called on the initialized metadata (in memory, with the unlocked
/// `keys`) before anything is written, as cryptsetup's `reencrypt_init` checks an active
/// mapping against the metadata it is about to commit ("Mismatching parameters"). When
/// `check` (or anything before the write) fails, nothing is written and `hdr` is left as it
/// was (cryptsetup reloads its header then).
pub fn init_checked(
    meta: &dyn Storage,
    data_size: u64,
    data_block_size: u64,
    hdr: &mut Luks2Header,
    p: &InitParams,
    keys: &Keys,
    check: &mut dyn FnMut(&Luks2Header, &Keys) -> Result<()>,
) -> Result<u32> {
    let mut work = hdr.clone();
    let rk = init_metadata(data_size, data_block_size, &mut work, p, keys)?;
    check(&work, keys)?;
    luks2_keys::write_header(meta, &mut work)?;
    *hdr = work;
    Ok(rk)
}

/// The metadata of [`init`], in memory only.
fn init_metadata(
    data_size: u64,
    data_block_size: u64,
    hdr: &mut Luks2Header,
    p: &InitParams,
    keys: &Keys,
) -> Result<u32> {
    if status(hdr)? != Status::None {
        return Err(ReencryptError::AlreadyInitialized.into());
    }
    let sector_size = if p.mode == Mode::Decrypt {
        512
    } else {
        p.sector_size
    };
    if !(512..=4096).contains(&sector_size) || !sector_size.is_power_of_two() {
        return Err(crate::error::ParamError::SectorSize.into());
    }
    let data_offset = hdr.data_offset()?;
    let dev_size = data_size
        .checked_sub(data_offset)
        .ok_or_else(|| ctx("data device smaller than the data offset"))?;
    if !dev_size.is_multiple_of(u64::from(sector_size)) {
        return Err(ReencryptError::DeviceAlignment { sector_size }.into());
    }
    let used: Vec<u32> = hdr.keyslot_ids()?;
    let rk = (0..lukskit_format::luks2::MAX_KEYSLOTS)
        .find(|i| !used.contains(i))
        .ok_or(KeyslotError::AllFull)?;
    let seg0 = edit::data_segments(hdr)?
        .into_iter()
        .next()
        .ok_or_else(|| ctx("no data segment"))?;
    let old_ss = if p.mode == Mode::Encrypt {
        512
    } else {
        Context::sector_size(&seg0)
    };
    let digest_new = match p.mode {
        Mode::Decrypt => None,
        _ => Some(
            p.new_digest
                .ok_or_else(|| ctx("no digest for the new key"))?,
        ),
    };
    // A data shift (`reencrypt_verify_datashift_params`): only a re-encryption here (the
    // encryptions with a shift are in `datashift`), by whole sectors of both layouts.
    let shift = match p.resilience {
        ResilienceChoice::Datashift(shift) => {
            if p.mode != Mode::Reencrypt {
                return Err(ReencryptError::Unsupported(format!(
                    "{} with a data shift",
                    p.mode.stored()
                ))
                .into());
            }
            let sector = old_ss.max(sector_size);
            if shift == 0 || !shift.is_multiple_of(u64::from(sector)) {
                return Err(ReencryptError::ShiftAlignment {
                    sector_size: sector,
                }
                .into());
            }
            shift
        }
        _ => 0,
    };

    // Backup segments (in memory), as `reencrypt_make_backup_segments`.
    let (mut prev, digest_old) = match p.mode {
        Mode::Encrypt => {
            // The data is plaintext: one linear segment, no digest covers any segment.
            edit::unassign_all_segments(hdr)?;
            edit::set_segments(hdr, vec![edit::linear_segment(data_offset, None, false)])?;
            (edit::linear_segment(data_offset, None, false), None)
        }
        _ => (
            seg0.clone(),
            Some(
                luks2_keys::segment_digest(hdr)?
                    .ok_or(KeyslotError::NoSegmentDigest)?
                    .id,
            ),
        ),
    };
    prev.set_flag("backup-previous");
    let sp = edit::push_segment(hdr, prev)?;
    if let Some(d) = digest_old {
        edit::assign_segment(hdr, sp, d)?;
    }
    let mut fin = match p.mode {
        Mode::Decrypt => edit::linear_segment(data_offset, None, false),
        _ => edit::crypt_segment(data_offset + shift, 0, None, &p.cipher, sector_size, false),
    };
    fin.set_flag("backup-final");
    let sf = edit::push_segment(hdr, fin)?;
    if let Some(d) = digest_new {
        edit::assign_segment(hdr, sf, d)?;
    }

    // The reencrypt keyslot over the largest free gap of the keyslots area.
    let alignment = data_block_size
        .max(u64::from(old_ss))
        .max(u64::from(sector_size));
    let (area_offset, area_size) = match p.resilience {
        // A data shift keeps nothing in its area: the first gap that holds one block.
        ResilienceChoice::Datashift(_) => {
            let len = datashift::DATASHIFT_AREA;
            (area_gap(hdr, len)?, len)
        }
        _ => max_area_gap(hdr)?,
    };
    let (protection, shift_size) = area_protection(&p.resilience, alignment)?;
    let area = ReencryptArea {
        offset: area_offset,
        size: area_size,
        protection,
        shift_size,
    };
    // cryptsetup decrypts backward (offline, header detached), shifts the data backward,
    // and otherwise goes forward.
    let direction = if p.mode == Mode::Decrypt || shift != 0 {
        Direction::Backward
    } else {
        Direction::Forward
    };
    edit::insert_reencrypt_keyslot(hdr, rk, &area, &p.mode.stored(), &direction.stored())?;

    let c = Context::load(hdr)?;
    let data = verification(hdr, &c, keys)?;
    verify::create(hdr, rk, &data, p.digest_hash, p.digest_iterations)?;
    Ok(rk)
}

/// One side of the hot zone: how its bytes are stored.
struct Side {
    cipher: Option<SectorCipher>,
    /// Device byte offset of plaintext byte 0 of the data area.
    offset: u64,
}

impl Side {
    fn new(seg: &SegmentObject, key: Option<&SecretBuf>, offset: u64) -> Result<Self> {
        let cipher = match seg.kind {
            SegmentType::Crypt => {
                if seg.encryption.is_empty() {
                    return Err(ctx("segment without encryption"));
                }
                let spec = CipherSpec::parse(&seg.encryption)?;
                let key = key.ok_or(ReencryptError::KeysMissing)?;
                Some(SectorCipher::new(
                    &spec,
                    key.as_bytes(),
                    Context::sector_size(seg),
                    false,
                )?)
            }
            SegmentType::Linear => None,
            SegmentType::Other(_) => return Err(ctx("unsupported segment type")),
        };
        Ok(Side { cipher, offset })
    }

    /// Decrypt `buf` holding data-area bytes from `pos` on (IV sector `iv`).
    fn decrypt(&self, buf: &mut [u8], iv: u64) -> Result<()> {
        if let Some(c) = &self.cipher {
            c.decrypt_parallel(buf, iv)?;
        }
        Ok(())
    }

    fn encrypt(&self, buf: &mut [u8], iv: u64) -> Result<()> {
        if let Some(c) = &self.cipher {
            c.encrypt_parallel(buf, iv)?;
        }
        Ok(())
    }

    /// Re-encrypt one streamed chunk from `from` to `self` on the calling thread: at the
    /// engine's rate a 4 MiB chunk takes well under a millisecond, overlapped with the I/O
    /// threads; hand-offs to a thread pool per chunk cost more than that on a loaded machine.
    fn reencrypt_chunk(&self, from: &Side, buf: &mut [u8], iv: u64) -> Result<()> {
        if let Some(c) = &from.cipher {
            c.decrypt(buf, iv)?;
        }
        if let Some(c) = &self.cipher {
            c.encrypt(buf, iv)?;
        }
        Ok(())
    }
}

/// Everything a run needs, computed once (`reencrypt_context_init`).
struct Run<'a> {
    meta: &'a dyn Storage,
    data: &'a dyn Storage,
    c: Context,
    old: Side,
    new: Side,
    device_size: u64,
    fixed_length: bool,
    offset: u64,
    length: u64,
    progress: u64,
    /// The data segment 0 when the run was loaded (the old layout kept before a backward
    /// hot zone).
    first_segment: Option<SegmentObject>,
    /// Whether the current hot zone's data may be partly rewritten (for
    /// [`OnlineHook::abort`]).
    touched: bool,
    /// An encryption with a moved first segment ([`datashift`]).
    shift_encrypt: bool,
    /// A decryption with a moved first segment ([`decrypt_shift`]).
    shift_decrypt: bool,
}

fn physmem_quarter() -> u64 {
    // SAFETY: sysconf has no memory-safety preconditions.
    let pages = unsafe { libc::sysconf(libc::_SC_PHYS_PAGES) };
    // SAFETY: as above.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if pages > 0 && page > 0 {
        (pages as u64).saturating_mul(page as u64) / 4
    } else {
        0
    }
}

impl<'a> Run<'a> {
    fn load(
        meta: &'a dyn Storage,
        data: &'a dyn Storage,
        data_block_size: u64,
        hdr: &Luks2Header,
        keys: &Keys,
        max_hotzone: u64,
        required: Option<u64>,
    ) -> Result<Self> {
        let c = Context::load(hdr)?;
        datashift::check_supported(&c)?;
        let shift_encrypt = datashift::is_encrypt_shift(&c);
        let shift_decrypt = decrypt_shift::is_decrypt_shift(&c);
        verify::check(hdr, c.keyslot, &verification(hdr, &c, keys)?)?;
        let old = Side::new(&c.old, keys.old.as_ref(), c.data_offset_old())?;
        let new = Side::new(&c.new, keys.new.as_ref(), c.data_offset_new())?;
        let data_offset = c.data_offset_new();
        let segs = edit::data_segments(hdr)?;
        let dynamic = segs.iter().any(|s| s.size.is_none());
        let real = data.size().map_err(dio(DeviceOp::GetSize))?;
        // A decryption with a moved segment ends where the old ciphertext ends.
        let base = if shift_decrypt {
            c.data_offset_old()
        } else {
            data_offset
        };
        let avail = real
            .checked_sub(base)
            .ok_or_else(|| ctx("data device smaller than the data offset"))?;
        let minimal: u64 = segs.iter().filter_map(|s| s.size).sum();
        let (device_size, fixed_length) = if let Some(size) = required {
            // A fixed size (`reencrypt_load_by_passphrase`): within the data device, at
            // least the fixed segments (all of them when none is dynamic), and whole
            // encryption sectors of both layouts.
            if shift_encrypt || shift_decrypt {
                return Err(ReencryptError::Unsupported(
                    "a fixed device size with a data shift".into(),
                )
                .into());
            }
            let whole = |ss: u32| size.is_multiple_of(u64::from(ss));
            if (minimal != 0 && size < minimal)
                || size > avail
                || (!dynamic && size != minimal)
                || !whole(Context::sector_size(&c.old))
                || !whole(Context::sector_size(&c.new))
            {
                return Err(ReencryptError::IllegalDeviceSize.into());
            }
            (size, true)
        } else if dynamic {
            (avail, false)
        } else {
            if minimal > avail {
                return Err(ctx("data device smaller than the segments"));
            }
            (minimal, true)
        };
        let alignment = match c.resilience {
            Resilience::Checksum { block_size, .. } => u64::from(block_size),
            _ => data_block_size
                .max(u64::from(Context::sector_size(&c.old)))
                .max(u64::from(Context::sector_size(&c.new))),
        };
        if !max_hotzone.is_multiple_of(alignment) {
            return Err(ReencryptError::HotzoneAlignment { alignment }.into());
        }
        if required.is_some_and(|size| !size.is_multiple_of(alignment)) {
            return Err(ReencryptError::DeviceSizeAlignment { alignment }.into());
        }
        let mut length = match &c.resilience {
            Resilience::None => {
                if max_hotzone != 0 {
                    max_hotzone
                } else {
                    DEFAULT_NONE_HOTZONE
                }
            }
            Resilience::Checksum { hash, block_size } => {
                let fits = c.area_size / hash.digest_size() as u64 * u64::from(*block_size);
                if max_hotzone != 0 {
                    fits
                } else {
                    fits.min(DEFAULT_CHECKSUM_HOTZONE)
                }
            }
            Resilience::Journal => c.area_size,
            Resilience::Datashift { shift } => *shift,
        };
        if let Resilience::Datashift { shift } = c.resilience {
            // `reencrypt_length`: a data shift moves exactly `shift` bytes per hot zone.
            if shift > MAX_HOTZONE || !shift.is_multiple_of(512) {
                return Err(ctx("data shift out of range"));
            }
        } else {
            length = length.min(MAX_HOTZONE);
            let soft = physmem_quarter();
            if soft != 0 {
                length = length.min(soft);
            }
            if max_hotzone != 0 {
                length = length.min(max_hotzone);
            }
            length -= length % alignment;
        }
        if length < 512 {
            return Err(ctx("hot zone too small"));
        }
        let hot = segs.iter().find(|s| s.has_flag("in-reencryption")).cloned();
        let offset = if let Some(h) = &hot {
            let o = h.offset;
            length = h.size.ok_or_else(|| ctx("hot zone size"))?;
            // A hostile header must not make us allocate more than a hot zone can be.
            if length > MAX_HOTZONE || !length.is_multiple_of(512) {
                return Err(ctx("hot zone size out of range"));
            }
            o.checked_sub(data_offset)
                .ok_or_else(|| ctx("hot zone before the data offset"))?
        } else if shift_decrypt {
            let moved = decrypt_shift::moved_len(&c);
            let (o, l) = decrypt_shift::start(&segs, moved, c.shift(), device_size)?;
            length = l;
            o
        } else if shift_encrypt {
            datashift::offset_backward_moved(&segs, c.shift(), &mut length)?
        } else if c.direction == Direction::Backward {
            // `_offset_backward`: the hot zone ends where the old segment ends.
            let end = match segs.len() {
                1 => device_size,
                2 => segs[0].size.ok_or_else(|| ctx("first segment size"))?,
                _ => return Err(ctx("too many segments")),
            };
            length = length.min(end);
            end - length
        } else {
            match segs.len() {
                1 => {
                    // lukskit only: a single segment under the new key means the last hot
                    // zone was committed and only the final metadata update is missing.
                    let d0 = edit::digest_of_segment(hdr, 0)?;
                    if c.digest_new != c.digest_old && d0.is_some() && d0 == c.digest_new {
                        device_size
                    } else {
                        0
                    }
                }
                2 => segs[0]
                    .size
                    .filter(|s| *s != 0)
                    .ok_or_else(|| ctx("first segment size"))?,
                _ => return Err(ctx("too many segments")),
            }
        };
        if offset > device_size {
            return Err(ctx("offset beyond the device"));
        }
        length = length.min(device_size - offset);
        let progress = match c.direction {
            _ if shift_decrypt => {
                decrypt_shift::progress(offset, length, decrypt_shift::moved_len(&c), device_size)
            }
            Direction::Forward => offset,
            Direction::Backward => device_size - offset - length,
        };
        Ok(Run {
            meta,
            data,
            c,
            old,
            new,
            device_size,
            fixed_length,
            offset,
            length,
            progress,
            first_segment: segs.first().cloned(),
            touched: false,
            shift_encrypt,
            shift_decrypt,
        })
    }

    fn seg_new(&self, off: u64, size: Option<u64>, hot: bool) -> SegmentObject {
        let base = self.c.data_offset_new();
        match self.c.mode {
            Mode::Decrypt => edit::linear_segment(base + off, size, hot),
            _ => edit::crypt_segment(
                base + off,
                off >> 9,
                size,
                self.c.new.encryption.as_str(),
                Context::sector_size(&self.c.new),
                hot,
            ),
        }
    }

    fn seg_old(&self, off: u64, size: Option<u64>) -> SegmentObject {
        let base = self.c.data_offset_new() + self.c.shift();
        match self.c.mode {
            Mode::Encrypt => edit::linear_segment(base + off, size, false),
            _ => edit::crypt_segment(
                base + off,
                off >> 9,
                size,
                self.c.old.encryption.as_str(),
                Context::sector_size(&self.c.old),
                false,
            ),
        }
    }

    fn hot_segments(&self, hdr: &Luks2Header) -> Result<Vec<SegmentObject>> {
        if self.shift_decrypt {
            return decrypt_shift::hot_segments(
                &self.c,
                &edit::data_segments(hdr)?,
                self.offset,
                self.length,
                self.device_size,
                self.fixed_length,
            );
        }
        if self.shift_encrypt {
            return datashift::hot_segments(
                &edit::data_segments(hdr)?,
                self.offset,
                self.length,
                self.c.data_offset_new(),
                self.c.new.encryption.as_str(),
                Context::sector_size(&self.c.new),
            );
        }
        let mut v = Vec::new();
        let end = self.offset + self.length;
        if self.c.direction == Direction::Backward {
            // `reencrypt_make_hot_segments_backward`.
            if self.offset > 0 {
                let mut old = self
                    .first_segment
                    .clone()
                    .unwrap_or_else(|| self.seg_old(0, None));
                old.set_size(Some(self.offset));
                v.push(old);
            }
            v.push(self.seg_new(self.offset, Some(self.length), true));
            if end < self.device_size {
                let size = self.fixed_length.then_some(self.device_size - end);
                v.push(self.seg_new(end, size, false));
            }
            return Ok(v);
        }
        if self.offset > 0 {
            v.push(self.seg_new(0, Some(self.offset), false));
        }
        v.push(self.seg_new(self.offset, Some(self.length), true));
        if end < self.device_size {
            let size = self.fixed_length.then_some(self.device_size - end);
            v.push(self.seg_old(end, size));
        }
        Ok(v)
    }

    /// Post segments from the current (hot) ones (`reencrypt_make_post_segments_forward`).
    fn post_segments(&self, hot: &[SegmentObject]) -> Result<Vec<SegmentObject>> {
        if self.shift_decrypt {
            return decrypt_shift::post_segments(
                hot,
                self.offset,
                self.length,
                self.device_size,
                self.fixed_length,
            );
        }
        if self.shift_encrypt {
            return datashift::post_segments(
                hot,
                self.offset,
                self.length,
                self.c.data_offset_new(),
            );
        }
        let r = hot
            .iter()
            .position(|s| s.has_flag("in-reencryption"))
            .ok_or_else(|| ctx("no hot zone segment"))?;
        if self.c.direction == Direction::Backward {
            // `reencrypt_make_post_segments_backward`.
            let mut v = Vec::new();
            if r > 0 {
                v.push(hot[r - 1].clone());
            }
            let size =
                (self.fixed_length && self.offset > 0).then_some(self.device_size - self.offset);
            v.push(self.seg_new(self.offset, size, false));
            return Ok(v);
        }
        let old = hot.get(r + 1).cloned();
        let end = self.offset + self.length;
        let mut v = vec![self.seg_new(0, old.as_ref().map(|_| end), false)];
        if let Some(mut o) = old {
            if self.fixed_length {
                o.set_size(Some(self.device_size - end));
            }
            v.push(o);
        }
        Ok(v)
    }

    /// Set `segs` as the data segments, the digest assignments and the backup segments
    /// (`reencrypt_assign_segments`).
    fn assign(&self, hdr: &mut Luks2Header, segs: Vec<SegmentObject>, hot: bool) -> Result<()> {
        edit::unassign_all_segments(hdr)?;
        let n = segs.len() as u32;
        let rseg = segs
            .iter()
            .position(|s| s.has_flag("in-reencryption"))
            .map(|p| p as u32);
        let types: Vec<bool> = segs.iter().map(|s| s.is_crypt()).collect();
        edit::set_segments(hdr, segs)?;
        let (dold, dnew) = (self.c.digest_old, self.c.digest_new);
        let assign = |hdr: &mut Luks2Header, s: u32, d: Option<u32>| -> Result<()> {
            match d {
                Some(d) => Ok(edit::assign_segment(hdr, s, d)?),
                None => Ok(()),
            }
        };
        if self.c.mode == Mode::Reencrypt {
            if let Some(r) = rseg {
                assign(hdr, r, dnew)?;
                assign(hdr, r, dold)?;
            }
            let fwd = self.c.direction == Direction::Forward;
            if hot {
                let r = rseg.ok_or_else(|| ctx("no hot zone segment"))?;
                if r > 0 {
                    assign(hdr, 0, if fwd { dnew } else { dold })?;
                }
                if n > r + 1 {
                    assign(hdr, r + 1, if fwd { dold } else { dnew })?;
                }
            } else {
                assign(hdr, 0, if fwd || n == 1 { dnew } else { dold })?;
                if n > 1 {
                    assign(hdr, 1, if fwd { dold } else { dnew })?;
                }
            }
        }
        let mut prev = self.c.old.clone();
        prev.remove_flag("in-reencryption");
        let sp = edit::push_segment(hdr, prev)?;
        if self.c.old.is_crypt() {
            assign(hdr, sp, dold)?;
        }
        let sf = edit::push_segment(hdr, self.c.new.clone())?;
        if self.c.new.is_crypt() {
            assign(hdr, sf, dnew)?;
        }
        if let Some(m) = &self.c.moved {
            let sm = edit::push_segment(hdr, m.clone())?;
            if m.is_crypt() {
                assign(hdr, sm, dold)?;
            }
        }
        if self.c.mode != Mode::Reencrypt {
            let d = if self.c.mode == Mode::Encrypt {
                dnew
            } else {
                dold
            };
            for (i, is_crypt) in types.iter().enumerate() {
                if *is_crypt {
                    assign(hdr, i as u32, d)?;
                }
            }
        }
        Ok(())
    }

    /// The resilience of the current hot zone (the moved segment of a decryption with a
    /// data shift has its own).
    fn resilience(&self) -> &Resilience {
        if self.shift_decrypt && self.offset == 0 {
            decrypt_shift::moved_protection(&self.c)
        } else {
            &self.c.resilience
        }
    }

    fn protect(&self, hdr: &mut Luks2Header, buf: &[u8]) -> Result<()> {
        match self.resilience() {
            Resilience::None => return Ok(()),
            Resilience::Checksum { hash, block_size } => {
                let mut sums =
                    Vec::with_capacity(buf.len() / *block_size as usize * hash.digest_size());
                for block in buf.chunks(*block_size as usize) {
                    sums.extend_from_slice(&hash.digest(&[block]));
                }
                if sums.len() as u64 > self.c.area_size {
                    return Err(ctx("checksums larger than the keyslot area"));
                }
                self.meta
                    .write_all_at(&sums, self.c.area_offset)
                    .and_then(|_| self.meta.sync())
                    .map_err(dio(DeviceOp::WriteKeyslotArea))?;
            }
            Resilience::Journal => {
                if buf.len() as u64 > self.c.area_size {
                    return Err(ctx("hot zone larger than the journal"));
                }
                self.meta
                    .write_all_at(buf, self.c.area_offset)
                    .and_then(|_| self.meta.sync())
                    .map_err(dio(DeviceOp::WriteKeyslotArea))?;
            }
            Resilience::Datashift { .. } => {}
        }
        luks2_keys::write_header(self.meta, hdr)
    }

    /// The size of the data device (for the live segment table of an online hook).
    fn data_device_size(&self) -> Result<u64> {
        self.data.size().map_err(dio(DeviceOp::GetSize))
    }

    /// The live mapping's table now ([`online::live_table`]). A decryption with a moved
    /// segment keeps the mapping at the size of the old ciphertext, as cryptsetup's
    /// (`rh->device_size`), though its plaintext segments become dynamic from 0.
    fn live_table(&self, hdr: &Luks2Header, keys: &Keys) -> Result<(SegmentTable, Option<usize>)> {
        let (table, hot) = online::live_table(hdr, keys, self.data_device_size()?)?;
        if self.shift_decrypt {
            return Ok((table.truncated(self.device_size)?, hot));
        }
        Ok((table, hot))
    }

    fn step(
        &mut self,
        hdr: &mut Luks2Header,
        buf: &mut Vec<u8>,
        keys: &Keys,
        hook: &mut dyn OnlineHook,
        direct: Option<&std::fs::File>,
    ) -> Result<()> {
        let hot = self.hot_segments(hdr)?;
        let post = self.post_segments(&hot)?;
        self.assign(hdr, hot, true)?;
        if hook.is_online() {
            let (table, index) = self.live_table(hdr, keys)?;
            let index = index.ok_or_else(|| ctx("no hot zone segment"))?;
            hook.before_hotzone(
                &table,
                HotZone {
                    offset: self.offset,
                    length: self.length,
                    index,
                },
            )?;
        }
        let len = self.length as usize;
        let buf = fastio::aligned(buf, len);
        // The last hot zone of a data shift reads the moved first segment.
        let src = match datashift::moved_area(&self.c) {
            Some((moved, _)) if (self.shift_encrypt || self.shift_decrypt) && self.offset == 0 => {
                moved
            }
            _ => self.old.offset + self.offset,
        };
        fastio::read_at(direct, self.data, buf, src)
            .map_err(dio(DeviceOp::ReadData { offset: src }))?;
        // Commit point: resilience data, then the hot-zone metadata.
        self.protect(hdr, buf)?;
        let iv = self.offset >> 9;
        self.old.decrypt(buf, iv)?;
        self.new.encrypt(buf, iv)?;
        self.touched = true;
        self.data
            .write_all_at(buf, self.new.offset + self.offset)
            .map_err(dio(DeviceOp::WriteData {
                offset: self.new.offset + self.offset,
            }))?;
        // Online, the live mapping reads the new data from the device: sync it first.
        if self.c.resilience != Resilience::None || hook.is_online() {
            self.data.sync().map_err(dio(DeviceOp::Sync))?;
        }
        // Safe point.
        self.assign(hdr, post, false)?;
        if self.c.resilience != Resilience::None {
            luks2_keys::write_header(self.meta, hdr)?;
        }
        self.touched = false;
        if hook.is_online() {
            let (table, _) = self.live_table(hdr, keys)?;
            hook.after_hotzone(&table)?;
        }
        self.advance();
        Ok(())
    }

    /// Whether the hot zones can stream through [`pipeline`]: offline, forward, no data
    /// shift, resilience `none` or `checksum`, everything aligned for `O_DIRECT`. The other
    /// cases take [`Run::step`].
    fn fast_ok(&self) -> bool {
        let a = DIRECT_ALIGN as u64;
        let res_ok = match &self.c.resilience {
            Resilience::None => true,
            Resilience::Checksum { block_size, .. } => {
                *block_size > 0 && (DIRECT_ALIGN as u64).is_multiple_of(u64::from(*block_size))
            }
            _ => false,
        };
        res_ok
            && !self.shift_encrypt
            && self.c.shift() == 0
            && self.c.direction == Direction::Forward
            && self.old.offset.is_multiple_of(a)
            && self.new.offset.is_multiple_of(a)
            && self.offset.is_multiple_of(a)
            && self.length.is_multiple_of(a)
            && self.device_size.is_multiple_of(a)
    }

    /// Queue reads ahead of a streamed run, across hot zones, while buffers are free.
    fn read_ahead(&self, io: &mut Io, ahead: &mut Ahead) -> Result<()> {
        while io.reads_in_flight() < pipeline::POOL / 2 && ahead.pos < self.device_size {
            if ahead.pos == ahead.zone_end {
                ahead.zone_end = (ahead.pos + ahead.zone_len).min(self.device_size);
            }
            let len = (ahead.zone_end - ahead.pos).min(CHUNK as u64);
            io.read(self.old.offset + ahead.pos, len as usize, pipeline::POOL)
                .map_err(pio)?;
            ahead.pos += len;
        }
        Ok(())
    }

    /// Queue the reads of a checksum run up to device offset `end` (of the data area) from
    /// where the reads ahead stopped.
    fn read_to(&self, io: &mut Io, ahead: &mut Ahead, end: u64) -> Result<()> {
        while ahead.pos < end {
            let len = (end - ahead.pos).min(CHUNK as u64);
            io.read(self.old.offset + ahead.pos, len as usize, usize::MAX)
                .map_err(pio)?;
            ahead.pos += len;
        }
        Ok(())
    }

    /// One hot zone through [`pipeline`] (see [`Run::fast_ok`]), with the commits of
    /// [`Run::step`]. Resilience `none`: the chunks stream (reads run ahead into the next hot
    /// zones; nothing is committed per hot zone). Resilience `checksum`: the whole hot zone
    /// is read and hashed (what the previous hot zone's write phase did not already read and
    /// hash of it), the checksums and the hot-zone metadata are committed, then the reads of
    /// the next hot zone are queued and this one is re-encrypted and written chunk by chunk,
    /// hashing the next zone's chunks as they land between two writes ([`Hashed`]); the
    /// writes are waited for and synced, and the segments move.
    fn step_fast(
        &mut self,
        hdr: &mut Luks2Header,
        io: &mut Io,
        ahead: &mut Ahead,
        zone: &mut Hashed,
    ) -> Result<()> {
        let hot = self.hot_segments(hdr)?;
        let post = self.post_segments(&hot)?;
        self.assign(hdr, hot, true)?;
        let (start, end) = (self.offset, self.offset + self.length);
        match self.c.resilience.clone() {
            Resilience::None => {
                let mut pos = start;
                while pos < end {
                    self.read_ahead(io, ahead)?;
                    let (off, mut b) = io.next_read().map_err(pio)?;
                    if off != self.old.offset + pos {
                        return Err(ctx("streamed read out of step"));
                    }
                    let n = b.bytes().len() as u64;
                    let iv = pos >> 9;
                    self.new.reencrypt_chunk(&self.old, b.bytes_mut(), iv)?;
                    if self.new.cipher.is_some() {
                        b.holds_ciphertext();
                    }
                    self.touched = true;
                    io.write(self.new.offset + pos, b).map_err(pio)?;
                    pos += n;
                }
            }
            Resilience::Checksum { hash, block_size } => {
                let bs = block_size as usize;
                let ds = hash.digest_size();
                let count = (self.length / u64::from(block_size)) as usize;
                if (count * ds) as u64 > self.c.area_size {
                    return Err(ctx("checksums larger than the keyslot area"));
                }
                // What the previous hot zone's write phase already read and hashed of this
                // one (chunks from its start on), then the rest.
                let mut sums = std::mem::take(&mut zone.sums);
                let mut bufs = std::mem::take(&mut zone.bufs);
                let mut at = sums.len();
                let mut pos = start + bufs.iter().map(|b| b.bytes().len() as u64).sum::<u64>();
                if at > count * ds || pos > end {
                    return Err(ctx("hashed ahead past the hot zone"));
                }
                sums.resize(count * ds, 0);
                self.read_to(io, ahead, end)?;
                while pos < end {
                    let (off, b) = io.next_read().map_err(pio)?;
                    if off != self.old.offset + pos {
                        return Err(ctx("streamed read out of step"));
                    }
                    let n = b.bytes().len() / bs * ds;
                    pipeline::checksums(hash, bs, b.bytes(), &mut sums[at..at + n]);
                    at += n;
                    pos += b.bytes().len() as u64;
                    bufs.push(b);
                }
                // Commit point: the checksums, then the hot-zone metadata.
                self.meta
                    .write_all_at(&sums, self.c.area_offset)
                    .and_then(|_| self.meta.sync())
                    .map_err(dio(DeviceOp::WriteKeyslotArea))?;
                luks2_keys::write_header(self.meta, hdr)?;
                // The next hot zone's reads run while this one is re-encrypted and written,
                // and each read that lands is hashed between two writes: they read old
                // ciphertext no write of this hot zone touches (forward, no data shift), and
                // nothing of the next hot zone is written before its own commit.
                let next_end = (end + self.length).min(self.device_size);
                self.read_to(io, ahead, next_end)?;
                let mut next_pos = end;
                let mut pos = start;
                for mut b in bufs {
                    let n = b.bytes().len() as u64;
                    let iv = pos >> 9;
                    self.new.reencrypt_chunk(&self.old, b.bytes_mut(), iv)?;
                    if self.new.cipher.is_some() {
                        b.holds_ciphertext();
                    }
                    self.touched = true;
                    io.write(self.new.offset + pos, b).map_err(pio)?;
                    pos += n;
                    if next_pos < next_end {
                        let (off, nb) = io.next_read().map_err(pio)?;
                        if off != self.old.offset + next_pos {
                            return Err(ctx("streamed read out of step"));
                        }
                        let k = nb.bytes().len() / bs * ds;
                        let from = zone.sums.len();
                        zone.sums.resize(from + k, 0);
                        pipeline::checksums(hash, bs, nb.bytes(), &mut zone.sums[from..]);
                        next_pos += nb.bytes().len() as u64;
                        zone.bufs.push(nb);
                    }
                }
                io.drain().map_err(pio)?;
                self.data.sync().map_err(dio(DeviceOp::Sync))?;
            }
            _ => return Err(ctx("no fast path for this resilience")),
        }
        // Safe point (resilience `none`: in memory only, written at the end).
        self.assign(hdr, post, false)?;
        if self.c.resilience != Resilience::None {
            luks2_keys::write_header(self.meta, hdr)?;
        }
        self.touched = false;
        self.advance();
        Ok(())
    }

    /// Move to the next hot zone (`reencrypt_context_update`).
    fn advance(&mut self) {
        self.progress += self.length;
        if self.shift_encrypt {
            datashift::advance(&mut self.offset, &mut self.length, self.c.shift());
            return;
        }
        if self.shift_decrypt {
            let moved = decrypt_shift::moved_len(&self.c);
            decrypt_shift::advance(&mut self.offset, &mut self.length, moved, self.device_size);
            return;
        }
        match self.c.direction {
            Direction::Forward => {
                self.offset += self.length;
                self.length = self.length.min(self.device_size - self.offset);
            }
            Direction::Backward => {
                if self.offset < self.length {
                    self.length = self.offset;
                }
                self.offset -= self.length;
            }
        }
    }

    /// Recover the hot zone of a crashed step (`reencrypt_recover_segment`).
    fn recover_hotzone(&self) -> Result<()> {
        let len = self.length as usize;
        let mut buf = vec![0u8; len];
        let pos = self.new.offset + self.offset;
        let iv = self.offset >> 9;
        match self.resilience() {
            Resilience::Checksum { hash, block_size } => {
                let bs = *block_size as usize;
                let count = len / bs;
                let mut sums = vec![0u8; count * hash.digest_size()];
                if sums.len() as u64 > self.c.area_size {
                    return Err(ctx("hot zone larger than the checksum area"));
                }
                self.meta
                    .read_exact_at(&mut sums, self.c.area_offset)
                    .map_err(|_| ReencryptError::ChecksumRead)?;
                self.data
                    .read_exact_at(&mut buf, pos)
                    .map_err(dio(DeviceOp::ReadData { offset: pos }))?;
                for s in 0..count {
                    let block = &mut buf[s * bs..(s + 1) * bs];
                    let h = hash.digest(&[block]);
                    if h[..] == sums[s * h.len()..(s + 1) * h.len()] {
                        let biv = iv + (s * bs) as u64 / 512;
                        self.old.decrypt(block, biv)?;
                        self.new.encrypt(block, biv)?;
                        self.data
                            .write_all_at(block, pos + (s * bs) as u64)
                            .map_err(dio(DeviceOp::WriteData {
                                offset: pos + (s * bs) as u64,
                            }))?;
                    }
                }
            }
            Resilience::Journal => {
                if self.length > self.c.area_size {
                    return Err(ctx("hot zone larger than the journal"));
                }
                self.meta
                    .read_exact_at(&mut buf, self.c.area_offset)
                    .map_err(dio(DeviceOp::ReadKeyslotArea {
                        slot: self.c.keyslot,
                    }))?;
                self.old.decrypt(&mut buf, iv)?;
                self.new.encrypt(&mut buf, iv)?;
                self.data
                    .write_all_at(&buf, pos)
                    .map_err(dio(DeviceOp::WriteData { offset: pos }))?;
            }
            Resilience::Datashift { .. } if self.shift_decrypt => {
                // The ciphertext ahead is intact: do the hot zone again.
                let src = self.old.offset + self.offset;
                self.data
                    .read_exact_at(&mut buf, src)
                    .map_err(dio(DeviceOp::ReadData { offset: src }))?;
                self.old.decrypt(&mut buf, iv)?;
                self.data
                    .write_all_at(&buf, pos)
                    .map_err(dio(DeviceOp::WriteData { offset: pos }))?;
            }
            Resilience::Datashift { .. } if self.shift_encrypt => {
                // The source is intact: do the hot zone again.
                let src = datashift::recovery_source(&self.c, self.offset, self.new.offset)?;
                self.data
                    .read_exact_at(&mut buf, src)
                    .map_err(dio(DeviceOp::ReadData { offset: src }))?;
                self.new.encrypt(&mut buf, iv)?;
                self.data
                    .write_all_at(&buf, pos)
                    .map_err(dio(DeviceOp::WriteData { offset: pos }))?;
            }
            Resilience::Datashift { .. } if datashift::is_reencrypt_shift(&self.c) => {
                // The old data of the hot zone lies `shift` before it, intact: do it again.
                let src = self.old.offset + self.offset;
                self.data
                    .read_exact_at(&mut buf, src)
                    .map_err(dio(DeviceOp::ReadData { offset: src }))?;
                self.old.decrypt(&mut buf, iv)?;
                self.new.encrypt(&mut buf, iv)?;
                self.data
                    .write_all_at(&buf, pos)
                    .map_err(dio(DeviceOp::WriteData { offset: pos }))?;
            }
            other => {
                return Err(ReencryptError::Unsupported(format!("recovery of {other:?}")).into())
            }
        }
        buf.fill(0);
        self.data.sync().map_err(dio(DeviceOp::Sync))
    }

    /// The end of a run (`reencrypt_teardown_ok`): with resilience `none` the segments are
    /// written now; when finished, the old keyslots, backup segments, requirement and the
    /// `reencrypt` keyslot go.
    fn teardown(
        &self,
        hdr: &mut Luks2Header,
        keys: &Keys,
        hook: &mut dyn OnlineHook,
    ) -> Result<Outcome> {
        if self.c.resilience == Resilience::None {
            // The data reaches the storage before the segments that say it is there.
            self.data.sync().map_err(dio(DeviceOp::Sync))?;
            luks2_keys::write_header(self.meta, hdr)?;
        }
        if hook.is_online() {
            let (table, _) = self.live_table(hdr, keys)?;
            hook.finish(&table, self.progress >= self.device_size)?;
        }
        if self.progress < self.device_size {
            return Ok(Outcome::Interrupted);
        }
        finish(self.meta, self.data, hdr, &self.c)
    }
}

/// Whether the last hot zone was committed and only the final cleanup is missing: one
/// data segment, under the new key only (cryptsetup's teardown kills the old keyslots
/// before it removes the re-encryption metadata, so a crash there leaves this state with
/// the old key gone; lukskit finishes it with no key, as no data is touched).
pub fn finished(hdr: &Luks2Header) -> Result<bool> {
    if status(hdr)? != Status::Clean {
        return Ok(false);
    }
    let c = Context::load(hdr)?;
    let segs = edit::data_segments(hdr)?;
    if segs.len() != 1 || segs[0].size.is_some() {
        return Ok(false);
    }
    let kind = Some(segs[0].kind.as_str());
    let d0 = hdr
        .digests()?
        .into_iter()
        .filter(|d| d.segments.contains(&0))
        .map(|d| d.id)
        .collect::<Vec<_>>();
    Ok(match c.mode {
        // Decrypted: the whole data area is one linear segment.
        Mode::Decrypt => kind == Some("linear"),
        // Encrypted or re-encrypted: one crypt segment under the new key only.
        Mode::Encrypt | Mode::Reencrypt => {
            kind == Some("crypt")
                && c.digest_new != c.digest_old
                && d0.len() == 1
                && Some(d0[0]) == c.digest_new
        }
    })
}

/// The final cleanup (the end of `reencrypt_teardown_ok`): old keyslots (one header write
/// each, as cryptsetup), then backup segments, requirement and the `reencrypt` keyslot.
fn finish(
    meta: &dyn Storage,
    data: &dyn Storage,
    hdr: &mut Luks2Header,
    c: &Context,
) -> Result<Outcome> {
    let this = c;
    if datashift::is_encrypt_shift(c) {
        // `reencrypt_wipe_unused_device_area`: the moved plaintext copy goes.
        if let Some((off, len)) = datashift::moved_area(c) {
            crate::wipe::random(data, off, len)?;
        }
    }
    if decrypt_shift::is_decrypt_shift(c) {
        // The old ciphertext beyond the plaintext goes.
        let real = data.size().map_err(dio(DeviceOp::GetSize))?;
        let start = real.saturating_sub(c.data_offset_old());
        let end = (start + c.shift()).min(real);
        if end > start {
            crate::wipe::random(data, start, end - start)?;
        }
    }
    // The keyslots area reaches the new data offset (`LUKS2_set_keyslots_size` in
    // `reencrypt_teardown_ok`, whatever the offset: a data shift moved it, or a small
    // `--luks2-keyslots-size` left space in front of it), written with the next header.
    let new_offset = c.data_offset_new();
    if new_offset != 0 {
        edit::set_keyslots_size(hdr, new_offset)?;
    }
    if let (Some(dold), dnew) = (this.digest_old, this.digest_new) {
        if Some(dold) != dnew {
            let old_slots: Vec<u32> = hdr
                .digests()?
                .into_iter()
                .find(|d| d.id == dold)
                .map(|d| d.keyslots)
                .unwrap_or_default();
            for ks in old_slots {
                luks2_keys::kill(meta, hdr, ks)?;
            }
        }
    }
    for flag in ["backup-previous", "backup-final", "backup-moved-segment"] {
        if let Some((id, _)) = edit::segment_by_flag(hdr, flag)? {
            edit::delete_segment(hdr, id)?;
        }
    }
    edit::set_requirement(hdr, false)?;
    // Destroy the reencrypt keyslot (its area is wiped first, as for any keyslot).
    crate::wipe::zero(meta, this.area_offset, this.area_size)?;
    hdr.remove_keyslot(this.keyslot)?;
    hdr.erase_unused_digests();
    luks2_keys::write_header(meta, hdr)?;
    Ok(Outcome::Finished)
}

/// Recover an interrupted hot zone (`reencrypt_recovery`): the hot zone is made entirely
/// new-key data from the resilience record, the segments move past it, and the header is
/// written. Does nothing on a clean header.
pub fn recover(
    meta: &dyn Storage,
    data: &dyn Storage,
    data_block_size: u64,
    hdr: &mut Luks2Header,
    keys: &Keys,
) -> Result<Option<Outcome>> {
    match status(hdr)? {
        Status::None => return Err(ReencryptError::NotInReencryption.into()),
        Status::Clean => return Ok(None),
        Status::Crash => {}
    }
    let mut r = Run::load(meta, data, data_block_size, hdr, keys, 0, None)?;
    r.recover_hotzone()?;
    let hot = edit::data_segments(hdr)?;
    let post = r.post_segments(&hot)?;
    r.assign(hdr, post, false)?;
    r.advance();
    let out = r.teardown(hdr, keys, &mut Offline)?;
    if out == Outcome::Interrupted {
        luks2_keys::write_header(meta, hdr)?;
    }
    Ok(Some(out))
}

/// Run (or resume) a re-encryption to its end, or until the progress callback says stop.
/// A crashed hot zone is recovered first.
pub fn run(
    meta: &dyn Storage,
    data: &dyn Storage,
    data_block_size: u64,
    hdr: &mut Luks2Header,
    keys: &Keys,
    opts: RunOptions<'_>,
) -> Result<Outcome> {
    run_online(meta, data, data_block_size, hdr, keys, opts, &mut Offline)
}

/// [`run`] with a live mapping that follows the hot zones through `hook` (see
/// [`super::online`]); with [`Offline`] it is [`run`]. The header must not need a crash
/// recovery when the hook is online (the live mapping would read the hot zone meanwhile).
pub fn run_online(
    meta: &dyn Storage,
    data: &dyn Storage,
    data_block_size: u64,
    hdr: &mut Luks2Header,
    keys: &Keys,
    mut opts: RunOptions<'_>,
    hook: &mut dyn OnlineHook,
) -> Result<Outcome> {
    if hook.is_online() && status(hdr)? == Status::Crash {
        return Err(ctx("an interrupted hot zone must be recovered first"));
    }
    // cryptsetup re-encrypts the size of the live mapping (with a data shift lukskit keeps
    // to the segments' size): a fixed size asked for must be the same.
    let required = match (opts.device_size, hook.mapping_size()) {
        (Some(asked), Some(live)) if asked != live => {
            return Err(ReencryptError::ActiveSizeMismatch.into())
        }
        (asked, Some(live)) => {
            let c = Context::load(hdr)?;
            if datashift::is_encrypt_shift(&c) || decrypt_shift::is_decrypt_shift(&c) {
                asked
            } else {
                Some(live)
            }
        }
        (asked, None) => asked,
    };
    if finished(hdr)? {
        let c = Context::load(hdr)?;
        return finish(meta, data, hdr, &c);
    }
    if let Some(Outcome::Finished) = recover(meta, data, data_block_size, hdr, keys)? {
        return Ok(Outcome::Finished);
    }
    let mut r = Run::load(
        meta,
        data,
        data_block_size,
        hdr,
        keys,
        opts.max_hotzone,
        required,
    )?;
    if hook.is_online() {
        let (table, _) = r.live_table(hdr, keys)?;
        hook.start(&table)?;
    }
    // Offline, with a direct read-write handle, the hot zones stream (see [`pipeline`]).
    let direct = opts.direct.filter(|f| fastio::writable(f));
    let stream = match direct {
        Some(f) if !hook.is_online() && r.fast_ok() => Some(f),
        _ => None,
    };
    std::thread::scope(|s| {
        let mut io = stream.map(|f| Io::start(s, f));
        let mut ahead = Ahead {
            pos: r.offset,
            zone_end: r.offset + r.length,
            zone_len: r.length,
        };
        let mut zone = Hashed::default();
        let mut buf = Vec::new();
        let mut quit = false;
        // An encryption that moved the first segment to the end counts, as cryptsetup's
        // does, over the data device less the new data offset: the moved copy's length
        // more than the segments lukskit steps over, counted as done from the start.
        let shown = if r.shift_encrypt && datashift::moved_area(&r.c).is_some() {
            r.c.shift()
        } else {
            0
        };
        if let Some(p) = opts.progress.as_mut() {
            quit = !p(r.progress + shown, r.device_size + shown);
        }
        while !quit && r.progress < r.device_size {
            let stepped = match io.as_mut() {
                Some(io) => r.step_fast(hdr, io, &mut ahead, &mut zone),
                None => r.step(hdr, &mut buf, keys, hook, opts.direct),
            };
            if let Err(e) = stepped {
                buf.fill(0);
                hook.abort(r.touched);
                return Err(e);
            }
            if let Some(p) = opts.progress.as_mut() {
                quit = !p(r.progress + shown, r.device_size + shown);
            }
        }
        buf.fill(0);
        if let Some(io) = io.as_mut() {
            // Reads ahead of an interruption are dropped; every write is waited for (the
            // data is synced before the header records it).
            io.cancel_reads();
            io.drain().map_err(pio)?;
        }
        drop(io);
        r.teardown(hdr, keys, hook)
    })
}

/// Whether the re-encryption metadata of `hdr` is unprotected and `repair` must upgrade it
/// (cryptsetup's `CRYPT_REENCRYPT_REPAIR_NEEDED`): the old `online-reencrypt` (version 1)
/// requirement, or a `reencrypt` keyslot assigned to no digest.
pub fn metadata_repair_needed(hdr: &Luks2Header) -> Result<bool> {
    if status(hdr)? == Status::None {
        return Ok(false);
    }
    if edit::requirement_version(hdr).is_some_and(|v| v < 2) {
        return Ok(true);
    }
    let c = Context::load(hdr)?;
    Ok(edit::digest_of_keyslot(hdr, c.keyslot)?.is_none())
}

/// Check the re-encryption metadata digest with the unlocked `keys`
/// (`LUKS2_reencrypt_digest_verify`; `Reencryption metadata is invalid.` when it does not
/// match or is missing).
pub fn verify_metadata(hdr: &Luks2Header, keys: &Keys) -> Result<()> {
    let c = Context::load(hdr)?;
    verify::check(hdr, c.keyslot, &verification(hdr, &c, keys)?)
}

/// Protect unprotected re-encryption metadata (cryptsetup's `reencrypt_upgrade_metadata`,
/// run by `repair`): the requirement becomes `online-reencrypt-v2` (a higher version is
/// kept), a new metadata digest over the unlocked `keys` is assigned to the `reencrypt`
/// keyslot, and the header is written.
pub fn upgrade_metadata(
    meta: &dyn Storage,
    hdr: &mut Luks2Header,
    keys: &Keys,
    digest_hash: lukskit_crypto::hash::HashAlg,
    digest_iterations: u32,
) -> Result<()> {
    let version = edit::requirement_version(hdr).unwrap_or(2).max(2);
    edit::set_requirement_version(hdr, Some(version))?;
    let c = Context::load(hdr)?;
    let data = verification(hdr, &c, keys)?;
    verify::create(hdr, c.keyslot, &data, digest_hash, digest_iterations)?;
    luks2_keys::write_header(meta, hdr)
}
