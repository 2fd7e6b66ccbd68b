//! Decryption of a device whose header is at its start (`reencrypt --decrypt --header FILE`),
//! as cryptsetup 2.6 does it (`CRYPT_REENCRYPT_MOVE_FIRST_SEGMENT` with mode `decrypt`,
//! direction forward, resilience `datashift-checksum` or `datashift-journal`, requirement
//! `online-reencrypt-v3`):
//!
//! * the header area `[0, D)` (D = the data offset = the data shift) is exported to the
//!   header file and the LUKS signatures on the device are wiped;
//! * the first `M` bytes of ciphertext (`M` = min(D, 20 MiB), or `--hotzone-size`) are
//!   copied over the old header area, to `[0, M)`: that copy is the `backup-moved-segment`
//!   and data segment 0; the rest of the ciphertext stays at `D + M` on;
//! * hot zones of `D` bytes move forward from `M`: the ciphertext at `[D+o, D+o+L)` is
//!   decrypted to `[o, o+L)` (`L ≤ D`, so a hot zone never overwrites its own source, and a
//!   crash is recovered by doing the hot zone again);
//! * the last hot zone is the moved segment `[0, M)`, decrypted in place: its old ciphertext
//!   is protected by checksums (or a journal) in the `reencrypt` keyslot area;
//! * at the end the old ciphertext beyond the plaintext (`[size, size+D)`) is overwritten
//!   with random bytes.
//!
//! The layouts follow `reencrypt_decrypt_with_datashift_init`,
//! `reencrypt_set_decrypt_shift_segments`, `reencrypt_move_data` and the forward branch of
//! `reencrypt_context_update` of cryptsetup's `lib/luks2/luks2_reencrypt.c`, checked against
//! the metadata cryptsetup 2.6.1 writes at every step.

use super::context::{Context, Direction, Mode, Resilience};
use super::ctx;
use super::keys::Keys;
use super::verify;
use crate::error::{DeviceOp, KeyslotError, ReencryptError, Result, VolumeError};
use crate::luks2_keys;
use crate::segment::SegmentTable;
use lukskit_crypto::hash::HashAlg;
use lukskit_crypto::SecretBuf;
use lukskit_format::io::Storage;
use lukskit_format::luks2::edit::{self, SegmentObject};
use lukskit_format::luks2::Luks2Header;

/// The requirement version of a decryption with a moved segment (`online-reencrypt-v3`).
pub const REQUIREMENT_VERSION: u8 = 3;

/// Default moved-segment length (`LUKS2_DEFAULT_NONE_REENCRYPTION_LENGTH`).
const DEFAULT_MOVED: u64 = 20 << 20;

/// Copy chunk for exporting the header area.
const COPY_CHUNK: usize = 1 << 20;

/// Whether `c` is a decryption with a moved first segment.
pub fn is_decrypt_shift(c: &Context) -> bool {
    c.mode == Mode::Decrypt
        && c.direction == Direction::Forward
        && matches!(c.resilience, Resilience::Datashift { .. })
        && c.moved.is_some()
}

/// The size of the moved segment (bytes).
pub fn moved_len(c: &Context) -> u64 {
    c.moved.as_ref().and_then(|m| m.size).unwrap_or(0)
}

/// The protection of the moved segment's hot zone (`datashift-checksum` →
/// checksum, `datashift-journal` → journal).
pub fn moved_protection(c: &Context) -> &Resilience {
    c.moved_protection.as_ref().unwrap_or(&Resilience::None)
}

fn seg_type(s: &SegmentObject) -> Option<&str> {
    Some(s.kind.as_str())
}

/// Where the next hot zone starts when none is recorded: the start of the first crypt
/// segment after the moved one (in data-area bytes), or the moved segment itself (0)
/// when only it is left. Returns (offset, length).
pub fn start(
    segs: &[SegmentObject],
    moved: u64,
    shift: u64,
    device_size: u64,
) -> Result<(u64, u64)> {
    let mut pos = 0u64;
    for (i, s) in segs.iter().enumerate() {
        let size = s.size;
        if i > 0 && seg_type(s) == Some("crypt") {
            let len = shift.min(device_size.saturating_sub(pos));
            return Ok((pos, len));
        }
        match size {
            Some(n) => pos += n,
            None => break,
        }
    }
    if segs.first().map(seg_type) == Some(Some("crypt")) {
        return Ok((0, moved));
    }
    // Everything is linear: done (the caller sees progress == device size).
    Ok((0, 0))
}

/// Bytes already decrypted when the hot zone `offset` is next.
pub fn progress(offset: u64, length: u64, moved: u64, device_size: u64) -> u64 {
    if offset == 0 {
        if length == 0 {
            device_size
        } else {
            device_size - moved.min(device_size)
        }
    } else {
        offset - moved
    }
}

/// The next hot zone (the forward branch of `reencrypt_context_update`): after the last
/// forward one comes the moved segment at 0.
pub fn advance(offset: &mut u64, length: &mut u64, moved: u64, device_size: u64) {
    if *offset == 0 {
        *length = 0;
        return;
    }
    *offset += *length;
    if *offset >= device_size {
        *offset = 0;
        *length = moved;
    } else {
        *length = (*length).min(device_size - *offset);
    }
}

/// The segments while the hot zone `[offset, offset+length)` is decrypted: the moved
/// crypt segment (unless it is the hot zone), the linear segment already done, the hot
/// zone, the crypt segment still to do.
pub fn hot_segments(
    c: &Context,
    segs: &[SegmentObject],
    offset: u64,
    length: u64,
    device_size: u64,
    fixed: bool,
) -> Result<Vec<SegmentObject>> {
    let moved = moved_len(c);
    let end = offset + length;
    let mut v = Vec::new();
    if offset == 0 {
        v.push(edit::linear_segment(0, Some(length), true));
        if end < device_size {
            v.push(edit::linear_segment(
                end,
                fixed.then_some(device_size - end),
                false,
            ));
        }
        return Ok(v);
    }
    let first = segs
        .first()
        .cloned()
        .ok_or_else(|| ctx("no data segment"))?;
    v.push(first);
    if offset > moved {
        v.push(edit::linear_segment(moved, Some(offset - moved), false));
    }
    v.push(edit::linear_segment(offset, Some(length), true));
    if end < device_size {
        v.push(old_segment(c, end, fixed.then_some(device_size - end)));
    }
    Ok(v)
}

/// The crypt segment of the old ciphertext from data-area byte `off` on.
fn old_segment(c: &Context, off: u64, size: Option<u64>) -> SegmentObject {
    edit::crypt_segment(
        c.data_offset_old() + off,
        c.old.iv_tweak + (off >> 9),
        size,
        c.old.encryption.as_str(),
        Context::sector_size(&c.old),
        false,
    )
}

/// The segments once the hot zone is written: the linear segments merge; the last
/// segment has a `dynamic` size.
pub fn post_segments(
    hot: &[SegmentObject],
    offset: u64,
    length: u64,
    device_size: u64,
    fixed: bool,
) -> Result<Vec<SegmentObject>> {
    let r = hot
        .iter()
        .position(|s| s.has_flag("in-reencryption"))
        .ok_or_else(|| ctx("no hot zone segment"))?;
    if offset == 0 {
        return Ok(vec![edit::linear_segment(
            0,
            fixed.then_some(device_size),
            false,
        )]);
    }
    let mut v: Vec<SegmentObject> = hot[..r].iter().take(1).cloned().collect();
    let start = if r >= 2 { hot[1].offset } else { offset };
    let end = offset + length;
    let after = hot.get(r + 1).cloned();
    let size = if after.is_some() || fixed {
        Some(end - start)
    } else {
        None
    };
    v.push(edit::linear_segment(start, size, false));
    if let Some(a) = after {
        v.push(a);
    }
    Ok(v)
}

/// What the initialization of a decryption with a moved segment needs.
pub struct DecryptShiftParams {
    /// The moved segment's protection: checksums with this hash, or a journal (`None`).
    pub checksum: Option<HashAlg>,
    /// The moved segment's length (`--hotzone-size`; 0: min(data offset, 20 MiB)).
    pub moved_length: u64,
    /// PBKDF2 iterations of the re-encryption metadata digest.
    pub digest_iterations: u32,
    /// Hash of the metadata digest (cryptsetup: that of the PBKDF in use).
    pub digest_hash: lukskit_crypto::hash::HashAlg,
}

/// The live mapping of a decryption with a moved segment initialized online (the device is
/// open through a kernel mapping), as cryptsetup 2.6.1's
/// `reencrypt_decrypt_with_datashift_init` drives it: the mapping's table must be the old
/// segment's ([`MoveHook::check`], before anything changes); the table of the moved layout
/// is loaded and the mapping suspended, with its writes flushed, before the first segment is
/// copied over the header area ([`MoveHook::before_move`]); once the metadata is committed
/// the mapping resumes under the new table ([`MoveHook::after_move`] with `true`), and on a
/// failure it resumes under the old one (`false`).
pub trait MoveHook {
    /// The live mapping must serve `old` (the volume's segments before the initialization).
    fn check(&mut self, old: &SegmentTable) -> Result<()>;
    /// Load `new` (the segments once the first segment is moved) and suspend the mapping.
    fn before_move(&mut self, new: &SegmentTable) -> Result<()>;
    /// Resume the mapping: under the loaded table when `committed`, else under its old one.
    fn after_move(&mut self, committed: bool) -> Result<()>;
}

fn data_table(hdr: &Luks2Header, key: &[u8], device_size: u64) -> Result<SegmentTable> {
    let digests: Vec<(u32, Vec<u32>)> = hdr
        .digests()?
        .into_iter()
        .map(|d| (d.id, d.segments))
        .collect();
    SegmentTable::from_luks2(
        &hdr.segments()?,
        &digests,
        |_| Ok(SecretBuf::from_slice(key)),
        device_size,
    )
}

fn dio(op: DeviceOp) -> impl FnOnce(std::io::Error) -> VolumeError {
    move |e| VolumeError::device_io(op, e)
}

/// Initialize the decryption of `device` (whose header `hdr` is at its start): export the
/// header area to `file`, wipe the signatures on the device, copy the first segment over
/// the header area and write the re-encryption metadata to `file`
/// (`reencrypt_decrypt_with_datashift_init`; the metadata write is the commit). `keys.old`
/// must be the volume key. `online`: the live kernel mapping of the volume, moved to the new
/// layout with the data (see [`MoveHook`]).
pub fn init(
    device: &dyn Storage,
    file: &dyn Storage,
    block: u64,
    hdr: &mut Luks2Header,
    p: &DecryptShiftParams,
    keys: &Keys,
    mut online: Option<&mut dyn MoveHook>,
) -> Result<u32> {
    if super::status(hdr)? != super::Status::None {
        return Err(ReencryptError::AlreadyInitialized.into());
    }
    let data_offset = hdr.data_offset()?;
    if data_offset == 0 {
        return Err(ctx("no data offset to move the data over"));
    }
    let real = device.size().map_err(dio(DeviceOp::GetSize))?;
    let data_size = real
        .checked_sub(data_offset)
        .ok_or_else(|| ctx("data device smaller than the data offset"))?;
    let seg0 = edit::data_segments(hdr)?
        .into_iter()
        .next()
        .ok_or_else(|| ctx("no data segment"))?;
    if seg_type(&seg0) != Some("crypt") || Some(seg0.size) != Some(None) {
        return Err(ReencryptError::Unsupported("decryption of this segment layout".into()).into());
    }
    let ss = Context::sector_size(&seg0);
    if !data_size.is_multiple_of(u64::from(ss)) {
        return Err(ReencryptError::DeviceAlignment { sector_size: ss }.into());
    }
    let alignment = block.max(u64::from(ss));
    let mut moved = if p.moved_length != 0 {
        if p.moved_length > data_offset {
            return Err(ReencryptError::Unsupported(
                "moved segment larger than the data shift".into(),
            )
            .into());
        }
        p.moved_length
    } else {
        data_offset.min(DEFAULT_MOVED)
    };
    moved = moved.min(data_size);
    if moved == 0 || !moved.is_multiple_of(alignment) {
        return Err(ReencryptError::HotzoneAlignment { alignment }.into());
    }
    let old = keys.old.as_ref().ok_or(ReencryptError::KeysMissing)?;
    if let Some(h) = online.as_mut() {
        h.check(&data_table(hdr, old.as_bytes(), real)?)?;
    }
    let digest_old = luks2_keys::segment_digest(hdr)?
        .ok_or(KeyslotError::NoSegmentDigest)?
        .id;
    let used: Vec<u32> = hdr.keyslot_ids()?;
    let rk = (0..lukskit_format::luks2::MAX_KEYSLOTS)
        .find(|i| !used.contains(i))
        .ok_or(KeyslotError::AllFull)?;
    let cipher = seg0.encryption.as_str().to_string();
    let iv0 = seg0.iv_tweak;

    // Segments (in memory): the moved copy at 0, the rest of the ciphertext.
    edit::unassign_all_segments(hdr)?;
    let mut segs = vec![edit::crypt_segment(0, iv0, Some(moved), &cipher, ss, false)];
    if data_size > moved {
        segs.push(edit::crypt_segment(
            data_offset + moved,
            iv0 + (moved >> 9),
            None,
            &cipher,
            ss,
            false,
        ));
    }
    let n = segs.len() as u32;
    edit::set_segments(hdr, segs.clone())?;
    for s in 0..n {
        edit::assign_segment(hdr, s, digest_old)?;
    }
    // Backup segments: moved, previous, final (`reencrypt_make_backup_segments`).
    let mut bm = segs[0].clone();
    bm.set_flag("backup-moved-segment");
    let id = edit::push_segment(hdr, bm)?;
    edit::assign_segment(hdr, id, digest_old)?;
    let mut prev = edit::crypt_segment(data_offset, iv0, None, &cipher, ss, false);
    prev.set_flag("backup-previous");
    let id = edit::push_segment(hdr, prev)?;
    edit::assign_segment(hdr, id, digest_old)?;
    let mut fin = edit::linear_segment(0, None, false);
    fin.set_flag("backup-final");
    edit::push_segment(hdr, fin)?;

    // The reencrypt keyslot over the largest free gap.
    let (area_offset, area_size) = super::area::max_area_gap(hdr)?;
    let protection = match &p.checksum {
        Some(h) => {
            if area_size / h.digest_size() as u64 * alignment < moved {
                return Err(ctx("moved segment too large for the checksum area"));
            }
            edit::AreaProtection::DatashiftChecksum {
                hash: h.name().into(),
                sector_size: alignment,
            }
        }
        None => {
            if area_size < moved {
                return Err(ctx("moved segment too large for the journal"));
            }
            edit::AreaProtection::DatashiftJournal
        }
    };
    let area = edit::ReencryptArea {
        offset: area_offset,
        size: area_size,
        protection,
        shift_size: Some(data_offset),
    };
    edit::insert_reencrypt_keyslot(
        hdr,
        rk,
        &area,
        &Mode::Decrypt.stored(),
        &Direction::Forward.stored(),
    )?;
    edit::set_requirement_version(hdr, Some(REQUIREMENT_VERSION))?;
    let c = Context::load(hdr)?;
    let data = verify::verification_data(hdr, rk, c.version, Some(old.as_bytes()), None)?;
    verify::create(hdr, rk, &data, p.digest_hash, p.digest_iterations)?;

    // Export the header area to the file (`crypt_header_backup`).
    let mut buf = vec![0u8; COPY_CHUNK];
    let mut pos = 0u64;
    while pos < data_offset {
        let n = (data_offset - pos).min(COPY_CHUNK as u64) as usize;
        device
            .read_exact_at(&mut buf[..n], pos)
            .map_err(dio(DeviceOp::ReadData { offset: pos }))?;
        file.write_all_at(&buf[..n], pos)
            .map_err(dio(DeviceOp::WriteData { offset: pos }))?;
        pos += n as u64;
    }
    file.sync().map_err(dio(DeviceOp::Sync))?;
    // Wipe the LUKS signatures on the device (`tools_wipe_all_signatures`).
    for off in [0, hdr.metadata_size()] {
        device
            .write_all_at(&[0u8; 6], off)
            .and_then(|_| device.sync())
            .map_err(dio(DeviceOp::WriteData { offset: off }))?;
    }
    // Online: the mapping gets the moved layout's table and is suspended (its writes to the
    // first segment flushed) while that segment moves.
    if let Some(h) = online.as_mut() {
        let new = data_table(hdr, old.as_bytes(), real)?;
        h.before_move(&new)?;
    }
    // Move the first segment over the header area (`reencrypt_move_data`), then commit: the
    // only metadata write of the initialization.
    let moved_and_committed =
        move_first(device, data_offset, moved).and_then(|_| luks2_keys::write_header(file, hdr));
    if let Some(h) = online {
        let resumed = h.after_move(moved_and_committed.is_ok());
        moved_and_committed?;
        resumed?;
    } else {
        moved_and_committed?;
    }
    Ok(rk)
}

/// Copy the first `moved` bytes of the data area (at `data_offset`) to the start of the
/// device and sync them.
fn move_first(device: &dyn Storage, data_offset: u64, moved: u64) -> Result<()> {
    let mut mv = vec![0u8; moved as usize];
    let out = device
        .read_exact_at(&mut mv, data_offset)
        .map_err(dio(DeviceOp::ReadData {
            offset: data_offset,
        }))
        .and_then(|_| {
            device
                .write_all_at(&mv, 0)
                .and_then(|_| device.sync())
                .map_err(dio(DeviceOp::WriteData { offset: 0 }))
        });
    mv.fill(0);
    out
}

/// Switch the protection of the moved segment of a decryption in progress (`--resilience`
/// at a resume, as cryptsetup 2.6.1's `LUKS2_keyslot_reencrypt_update`): `checksum` gives
/// `datashift-checksum` with that hash, `None` `datashift-journal`. The metadata digest is
/// checked with `keys` first and made again over the new area; the area keeps its place,
/// and must be large enough for the moved segment under the new protection. Returns whether
/// anything changed (and the header was written to `meta`).
pub fn update_protection(
    meta: &dyn Storage,
    hdr: &mut Luks2Header,
    checksum: Option<HashAlg>,
    block: u64,
    keys: &Keys,
    digest_hash: HashAlg,
    digest_iterations: u32,
) -> Result<bool> {
    let c = Context::load(hdr)?;
    if c.moved_protection.is_none() {
        return Err(ReencryptError::Unsupported(
            "a resilience change of this re-encryption".into(),
        )
        .into());
    }
    let (c, alignment, area) = super::resilience_switch::verified_area(hdr, block, keys)?;
    let same = match (&checksum, &area.protection) {
        (Some(h), edit::AreaProtection::DatashiftChecksum { hash, sector_size }) => {
            hash == h.name() && *sector_size == alignment
        }
        (None, edit::AreaProtection::DatashiftJournal) => true,
        _ => false,
    };
    if same {
        return Ok(false);
    }
    let (protection, capacity) = match &checksum {
        Some(h) => (
            edit::AreaProtection::DatashiftChecksum {
                hash: h.name().into(),
                sector_size: alignment,
            },
            area.size / h.digest_size() as u64 * alignment,
        ),
        None => (edit::AreaProtection::DatashiftJournal, area.size),
    };
    let new = edit::ReencryptArea {
        protection,
        ..area.clone()
    };
    let moved = moved_len(&c);
    if moved > capacity {
        return Err(ReencryptError::Unsupported(format!(
            "Can not update resilience type. New type only provides {capacity} bytes, \
             required space is: {moved} bytes."
        ))
        .into());
    }
    super::resilience_switch::store_area(
        meta,
        hdr,
        c.keyslot,
        &new,
        keys,
        digest_hash,
        digest_iterations,
    )?;
    Ok(true)
}
