//! Encryption in place with a data shift (`reencrypt --encrypt --reduce-device-size`), as
//! cryptsetup 2.6 does it (`CRYPT_REENCRYPT_MOVE_FIRST_SEGMENT` with resilience
//! `datashift`, direction backward):
//!
//! * the device of `D` bytes holds `D - 2·S` bytes of plaintext (`S` = half the reduction =
//!   the new data offset = the shift); its tail is free;
//! * initialization copies the first `S` bytes of plaintext to the free tail (the
//!   `backup-moved-segment`), writes the header with the re-encryption metadata (segments
//!   "moved plaintext at the tail / plaintext from `S` on") to a temporary header file, and
//!   the caller restores that file over the head of the device;
//! * every hot zone is `S` bytes, taken from the end backwards: the plaintext at `[o, o+S)`
//!   is encrypted to `[S+o, 2S+o)`, so a hot zone never overwrites its own source; the last
//!   one reads the moved copy at the tail. The source stays intact until the segments move
//!   on, so a crash is recovered by doing the hot zone again;
//! * at the end the moved copy is overwritten with random bytes.
//!
//! The segment layouts follow `reencrypt_set_encrypt_segments`,
//! `reencrypt_make_hot_segments_encrypt_shift`, `_enc_create_segments_shift_after` and
//! `reencrypt_offset_backward_moved` of `lib/luks2/luks2_reencrypt.c`.

use super::area::area_gap;
use super::context::{Context, Direction, Mode, Resilience};
use super::ctx;
use super::hotzone::MAX_HOTZONE;
use super::keys::Keys;
use super::verify;
use crate::error::{DeviceOp, KeyslotError, ReencryptError, Result, VolumeError};
use crate::luks2_keys;
use lukskit_format::io::Storage;
use lukskit_format::luks2::edit::{self, SegmentObject};
use lukskit_format::luks2::Luks2Header;

/// Size of the `reencrypt` keyslot area with resilience `datashift` (it stores nothing).
pub(super) const DATASHIFT_AREA: u64 = 4096;

/// Copy chunk for moving the first segment.
const COPY_CHUNK: usize = 1 << 20;

/// Whether `c` is an encryption with a data shift and a detached header, without a moved
/// segment (`reencrypt --encrypt --header FILE --reduce-device-size S`). cryptsetup 2.6.1
/// runs it as an encryption in place of the data already at the data offset, backward in
/// hot zones of `S` bytes, with no resilience data (`datashift` protects only a layout
/// where source and destination differ): the plaintext at `[data offset, D)` becomes
/// ciphertext in the same place. lukskit does the same; a crash inside a hot zone cannot be
/// recovered (neither tool can: its source is partly overwritten).
pub fn is_encrypt_shift_detached(c: &Context) -> bool {
    c.mode == Mode::Encrypt
        && c.direction == Direction::Backward
        && matches!(c.resilience, Resilience::Datashift { .. })
        && c.moved.is_none()
}

/// Whether `c` is a re-encryption (mode `reencrypt`) backward with a data shift and no moved
/// segment (what cryptsetup's `reencrypt_luks2_init` sets up for a negative data shift, and
/// the old metadata of luks2-reencryption-mangle-test \[6\]): every hot zone of `shift` bytes
/// is read from the old data offset and written `shift` bytes further, from the end
/// backwards, so a hot zone never overwrites its own source (the generic backward layout of
/// `reencrypt_make_hot_segments_backward`).
pub fn is_reencrypt_shift(c: &Context) -> bool {
    c.mode == Mode::Reencrypt
        && c.direction == Direction::Backward
        && matches!(c.resilience, Resilience::Datashift { .. })
        && c.moved.is_none()
        && c.data_offset_new() == c.data_offset_old() + c.shift()
}

/// Whether `c` is an encryption with a moved first segment.
pub fn is_encrypt_shift(c: &Context) -> bool {
    c.mode == Mode::Encrypt
        && c.direction == Direction::Backward
        && matches!(c.resilience, Resilience::Datashift { .. })
        && c.moved.is_some()
}

/// Refuse the data-shift layouts lukskit does not run (a shift without a moved segment, a
/// decryption or re-encryption with a shift).
pub fn check_supported(c: &Context) -> Result<()> {
    if (c.shift() == 0 && c.moved.is_none())
        || is_encrypt_shift(c)
        || is_encrypt_shift_detached(c)
        || is_reencrypt_shift(c)
        || super::decrypt_shift::is_decrypt_shift(c)
    {
        return Ok(());
    }
    Err(ReencryptError::Unsupported(format!(
        "{} with data shift ({:?} direction)",
        c.mode.stored(),
        c.direction
    ))
    .into())
}

fn seg_type(s: &SegmentObject) -> Option<&str> {
    Some(s.kind.as_str())
}

fn size_of(s: &SegmentObject) -> u64 {
    s.size.unwrap_or(0)
}

/// The first hot zone when none is recorded (`reencrypt_offset_backward_moved`): the sum of
/// the linear segments minus the shift, or the shift itself when less than a shift is left
/// beyond it (`length` shrinks then).
pub fn offset_backward_moved(segs: &[SegmentObject], shift: u64, length: &mut u64) -> Result<u64> {
    let linear: u64 = segs
        .iter()
        .filter(|s| seg_type(s) == Some("linear"))
        .map(size_of)
        .sum();
    if linear != 0 && segs.len() > 1 {
        let tmp = linear
            .checked_sub(shift)
            .ok_or_else(|| ctx("linear segments shorter than the data shift"))?;
        if tmp != 0 && tmp < shift {
            *length = tmp;
            return Ok(shift);
        }
        return Ok(tmp);
    }
    if segs.len() == 1 {
        return Ok(0);
    }
    Err(ctx("no hot zone offset for the data shift"))
}

/// The segments while the hot zone `[offset, offset+length)` is encrypted
/// (`reencrypt_make_hot_segments_encrypt_shift`): the linear segments before it (the last
/// one shortened to end where the hot zone starts), the hot zone, then the crypt segment
/// already done.
pub fn hot_segments(
    segs: &[SegmentObject],
    offset: u64,
    length: u64,
    data_offset: u64,
    cipher: &str,
    sector_size: u32,
) -> Result<Vec<SegmentObject>> {
    let crypt = segs.iter().position(|s| seg_type(s) == Some("crypt"));
    let Some(last_linear) = segs.iter().rposition(|s| seg_type(s) == Some("linear")) else {
        if offset != 0 {
            return Err(ctx("no linear segment left"));
        }
        return Ok(Vec::new());
    };
    let mut v: Vec<SegmentObject> = segs[..last_linear].to_vec();
    let size = size_of(&segs[last_linear]);
    if size > length {
        let mut shrunk = segs[last_linear].clone();
        shrunk.set_size(Some(size - length));
        v.push(shrunk);
    }
    v.push(edit::crypt_segment(
        data_offset + offset,
        offset >> 9,
        Some(length),
        cipher,
        sector_size,
        true,
    ));
    if let Some(c) = crypt {
        v.push(segs[c].clone());
    }
    Ok(v)
}

/// The segments once the hot zone is written (`_enc_create_segments_shift_after`): the hot
/// zone merges with the crypt segment after it; when it starts at 0 the result is the final
/// `dynamic` crypt segment.
pub fn post_segments(
    hot: &[SegmentObject],
    offset: u64,
    length: u64,
    data_offset: u64,
) -> Result<Vec<SegmentObject>> {
    if hot.is_empty() {
        return Ok(Vec::new());
    }
    let r = hot
        .iter()
        .position(|s| s.has_flag("in-reencryption"))
        .ok_or_else(|| ctx("no hot zone segment"))?;
    let mut v: Vec<SegmentObject> = hot[..r].to_vec();
    let (mut seg, size) = match hot.get(r + 1) {
        Some(after) => {
            let mut s = after.clone();
            s.set_offset(offset + data_offset);
            s.set_iv_tweak(offset >> 9);
            let size = size_of(after) + length;
            (s, size)
        }
        None => {
            let mut s = hot[r].clone();
            s.remove_flag("in-reencryption");
            (s, length)
        }
    };
    seg.set_size((r > 0).then_some(size));
    v.push(seg);
    Ok(v)
}

/// The next hot zone (`reencrypt_context_update` for a backward data shift).
pub fn advance(offset: &mut u64, length: &mut u64, shift: u64) {
    if *offset != 0 {
        *offset = offset.saturating_sub(shift);
    }
    if *offset != 0 && *offset < shift {
        *length = *offset;
        *offset = shift;
    }
    if *offset == 0 {
        *length = shift;
    }
}

/// Where the plaintext of the hot zone at `offset` is read during recovery
/// (`reencrypt_recover_segment`): the moved copy for the zone at 0, otherwise `shift`
/// bytes before its destination.
pub fn recovery_source(c: &Context, offset: u64, data_offset: u64) -> Result<u64> {
    if offset == 0 {
        let m = c.moved.as_ref().ok_or_else(|| ctx("no moved segment"))?;
        return Some(m.offset).ok_or_else(|| ctx("moved segment offset"));
    }
    (data_offset + offset)
        .checked_sub(c.shift())
        .ok_or_else(|| ctx("hot zone before the data shift"))
}

/// The offset of the moved copy (the `backup-moved-segment`), if any.
pub fn moved_area(c: &Context) -> Option<(u64, u64)> {
    let m = c.moved.as_ref()?;
    Some((Some(m.offset)?, m.size?))
}

/// Parameters of [`init_encrypt`].
#[derive(Debug, Clone)]
pub struct EncryptShiftParams {
    /// The data shift in bytes (half of `--reduce-device-size`; equal to the new header's
    /// data offset or larger).
    pub shift: u64,
    /// The new cipher spec.
    pub cipher: String,
    /// The new encryption sector size.
    pub sector_size: u32,
    /// The digest of the new volume key.
    pub new_digest: u32,
    /// PBKDF2 iterations of the metadata digest.
    pub digest_iterations: u32,
    /// Hash of the metadata digest (cryptsetup: that of the PBKDF in use).
    pub digest_hash: lukskit_crypto::hash::HashAlg,
}

/// The plaintext size of a device of `device_size` bytes encrypted in place with a new data
/// offset `data_offset` and a shift `shift` (`device_size - data_offset - shift`), or `None`
/// when the device is too small.
pub fn plaintext_size(device_size: u64, data_offset: u64, shift: u64) -> Option<u64> {
    device_size.checked_sub(data_offset)?.checked_sub(shift)
}

/// Initialize the encryption with a data shift in the freshly formatted header `hdr` (on
/// `meta`, the temporary header file) for the plaintext device `data`
/// (`reencrypt_init` with `CRYPT_REENCRYPT_MOVE_FIRST_SEGMENT`): segments, backup segments,
/// the `reencrypt` keyslot, its metadata digest and the requirement are set in memory; the
/// first `shift` bytes of plaintext are copied to the tail of the device and synced; then
/// the header is written to `meta`. Returns the `reencrypt` keyslot id. The caller then
/// restores `meta` over the head of `data`.
pub fn init_encrypt(
    meta: &dyn Storage,
    data: &dyn Storage,
    device_size: u64,
    hdr: &mut Luks2Header,
    p: &EncryptShiftParams,
    keys: &Keys,
) -> Result<u32> {
    let data_offset = hdr.data_offset()?;
    if p.shift < data_offset || p.shift == 0 || !p.shift.is_multiple_of(512) {
        return Err(ctx("data shift smaller than the data offset"));
    }
    if p.shift > MAX_HOTZONE {
        return Err(ctx("data shift larger than the largest hot zone"));
    }
    let dev_size = device_size
        .checked_sub(data_offset)
        .ok_or_else(|| ctx("device smaller than the data offset"))?;
    let data_size = dev_size
        .checked_sub(p.shift)
        .filter(|s| *s > 0)
        .ok_or_else(|| ctx("device too small for the data shift"))?;
    if !data_size.is_multiple_of(u64::from(p.sector_size))
        || !p.shift.is_multiple_of(u64::from(p.sector_size))
    {
        return Err(ReencryptError::DeviceAlignment {
            sector_size: p.sector_size,
        }
        .into());
    }
    let used: Vec<u32> = hdr.keyslot_ids()?;
    let rk = (0..lukskit_format::luks2::MAX_KEYSLOTS)
        .find(|i| !used.contains(i))
        .ok_or(KeyslotError::AllFull)?;

    // Future layout: [header (shift)][second segment][gap (shift)][first segment (shift)].
    let first_offset = dev_size;
    let (first_len, second) = if data_size < p.shift {
        (data_size, None)
    } else {
        (p.shift, Some((p.shift, data_size - p.shift)))
    };
    let mut segs = vec![edit::linear_segment(first_offset, Some(first_len), false)];
    if let Some((o, l)) = second.filter(|(_, l)| *l != 0) {
        segs.push(edit::linear_segment(o, Some(l), false));
    }
    edit::unassign_all_segments(hdr)?;
    edit::set_segments(hdr, segs)?;

    // Backup segments: moved, previous (plaintext from 0), final (encrypted from the data
    // offset on).
    let mut moved = edit::linear_segment(first_offset, Some(first_len), false);
    moved.set_flag("backup-moved-segment");
    edit::push_segment(hdr, moved)?;
    let mut prev = edit::linear_segment(0, Some(data_size), false);
    prev.set_flag("backup-previous");
    edit::push_segment(hdr, prev)?;
    encrypt_metadata_tail(hdr, rk, data_offset, p, keys)?;

    // Move the first segment to the tail (`reencrypt_move_data`), durably, before the
    // header that points at it exists anywhere.
    copy(data, 0, first_offset, first_len)?;
    data.sync()
        .map_err(|e| VolumeError::device_io(DeviceOp::Sync, e))?;
    luks2_keys::write_header(meta, hdr)?;
    Ok(rk)
}

/// Initialize the encryption with a data shift of `p.shift` bytes in the freshly formatted
/// detached header `hdr` (on `meta`) for a data device of `device_size` bytes
/// (`reencrypt_init` of cryptsetup's `encrypt_luks2_init` with `--header` and
/// `--reduce-device-size`, see [`is_encrypt_shift_detached`]): one linear segment of
/// `device_size - data offset` bytes at the data offset, the backup segments, the
/// `reencrypt` keyslot (resilience `datashift`, direction backward), its metadata digest and
/// the requirement, in one header write. Nothing on the data device is written. Returns the
/// `reencrypt` keyslot id.
pub fn init_encrypt_detached(
    meta: &dyn Storage,
    device_size: u64,
    hdr: &mut Luks2Header,
    p: &EncryptShiftParams,
    keys: &Keys,
) -> Result<u32> {
    let data_offset = hdr.data_offset()?;
    if p.shift == 0 || !p.shift.is_multiple_of(512) {
        return Err(ctx("data shift not a multiple of 512 bytes"));
    }
    if p.shift > MAX_HOTZONE {
        return Err(ctx("data shift larger than the largest hot zone"));
    }
    let data_size = device_size
        .checked_sub(data_offset)
        .filter(|s| *s > 0)
        .ok_or_else(|| ctx("device smaller than the data offset"))?;
    if !data_size.is_multiple_of(u64::from(p.sector_size))
        || !p.shift.is_multiple_of(u64::from(p.sector_size))
    {
        return Err(ReencryptError::DeviceAlignment {
            sector_size: p.sector_size,
        }
        .into());
    }
    let used: Vec<u32> = hdr.keyslot_ids()?;
    let rk = (0..lukskit_format::luks2::MAX_KEYSLOTS)
        .find(|i| !used.contains(i))
        .ok_or(KeyslotError::AllFull)?;
    edit::unassign_all_segments(hdr)?;
    edit::set_segments(
        hdr,
        vec![edit::linear_segment(data_offset, Some(data_size), false)],
    )?;
    let mut prev = edit::linear_segment(data_offset, Some(data_size), false);
    prev.set_flag("backup-previous");
    edit::push_segment(hdr, prev)?;
    encrypt_metadata_tail(hdr, rk, data_offset, p, keys)?;
    luks2_keys::write_header(meta, hdr)?;
    Ok(rk)
}

/// Copy `len` bytes of `dev` from `from` to `to` (non-overlapping), in chunks.
/// What both encryptions with a data shift add after their segments and `backup-previous`:
/// the `backup-final` segment under the new digest (encrypted from `data_offset` on), the
/// `reencrypt` keyslot `rk` with its datashift area (backward), and the metadata digest.
fn encrypt_metadata_tail(
    hdr: &mut Luks2Header,
    rk: u32,
    data_offset: u64,
    p: &EncryptShiftParams,
    keys: &Keys,
) -> Result<()> {
    let mut fin = edit::crypt_segment(data_offset, 0, None, &p.cipher, p.sector_size, false);
    fin.set_flag("backup-final");
    let sf = edit::push_segment(hdr, fin)?;
    edit::assign_segment(hdr, sf, p.new_digest)?;

    let area_offset = area_gap(hdr, DATASHIFT_AREA)?;
    let area = edit::ReencryptArea {
        offset: area_offset,
        size: DATASHIFT_AREA,
        protection: edit::AreaProtection::Datashift,
        shift_size: Some(p.shift),
    };
    edit::insert_reencrypt_keyslot(
        hdr,
        rk,
        &area,
        &Mode::Encrypt.stored(),
        &Direction::Backward.stored(),
    )?;

    let c = Context::load(hdr)?;
    let new = keys
        .new
        .as_ref()
        .ok_or(ReencryptError::KeysMissing)?
        .as_bytes();
    let vdata = verify::verification_data(hdr, c.keyslot, c.version, None, Some(new))?;
    verify::create(hdr, rk, &vdata, p.digest_hash, p.digest_iterations)?;
    Ok(())
}

fn copy(dev: &dyn Storage, from: u64, to: u64, len: u64) -> Result<()> {
    let mut buf = vec![0u8; COPY_CHUNK.min(len as usize)];
    let mut done = 0u64;
    while done < len {
        let n = (len - done).min(buf.len() as u64) as usize;
        dev.read_exact_at(&mut buf[..n], from + done).map_err(|e| {
            VolumeError::device_io(
                DeviceOp::ReadData {
                    offset: from + done,
                },
                e,
            )
        })?;
        dev.write_all_at(&buf[..n], to + done)
            .map_err(|e| VolumeError::device_io(DeviceOp::WriteData { offset: to + done }, e))?;
        done += n as u64;
    }
    buf.fill(0);
    Ok(())
}

/// Restore the temporary header `src` (its first `len` bytes: both metadata copies and the
/// keyslots area) over the head of `dst` (cryptsetup's `crypt_header_restore` after the
/// initialization): the keyslots area first and synced, then the two metadata copies and
/// synced, so that the header becomes valid on the device only once its keyslots are there.
pub fn restore_header(src: &dyn Storage, dst: &dyn Storage, metadata: u64, len: u64) -> Result<()> {
    let mut buf = vec![0u8; COPY_CHUNK];
    let mut put = |from: u64, to: u64| -> Result<()> {
        let mut pos = from;
        while pos < to {
            let n = (to - pos).min(COPY_CHUNK as u64) as usize;
            src.read_exact_at(&mut buf[..n], pos)
                .map_err(|e| VolumeError::device_io(DeviceOp::ReadKeyslotArea { slot: 0 }, e))?;
            dst.write_all_at(&buf[..n], pos)
                .map_err(|e| VolumeError::device_io(DeviceOp::WriteData { offset: pos }, e))?;
            pos += n as u64;
        }
        dst.sync()
            .map_err(|e| VolumeError::device_io(DeviceOp::Sync, e))
    };
    put(2 * metadata, len)?;
    put(0, 2 * metadata)?;
    buf.fill(0);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lin(o: u64, s: u64) -> SegmentObject {
        edit::linear_segment(o, Some(s), false)
    }

    const M: u64 = 1 << 20;

    #[test]
    fn two_zones_as_cryptsetup() {
        // 64 MiB device, --reduce-device-size 32M: shift 16M, plaintext 32M.
        let segs = vec![lin(48 * M, 16 * M), lin(16 * M, 16 * M)];
        let mut len = 16 * M;
        let off = offset_backward_moved(&segs, 16 * M, &mut len).unwrap();
        assert_eq!((off, len), (16 * M, 16 * M));
        let hot = hot_segments(&segs, off, len, 16 * M, "aes-xts-plain64", 512).unwrap();
        assert_eq!(hot.len(), 2);
        assert_eq!(hot[1].to_json()["offset"], "33554432");
        assert_eq!(hot[1].to_json()["iv_tweak"], "32768");
        let post = post_segments(&hot, off, len, 16 * M).unwrap();
        assert_eq!(post[1].to_json()["size"], "16777216");
        assert!(!post[1].has_flag("in-reencryption"));
        let (mut o, mut l) = (off, len);
        advance(&mut o, &mut l, 16 * M);
        assert_eq!((o, l), (0, 16 * M));
        let hot = hot_segments(&post, o, l, 16 * M, "aes-xts-plain64", 512).unwrap();
        assert_eq!(hot.len(), 2);
        assert_eq!(hot[0].to_json()["offset"], "16777216");
        let post = post_segments(&hot, o, l, 16 * M).unwrap();
        assert_eq!(post.len(), 1);
        assert_eq!(post[0].to_json()["size"], "dynamic");
        assert_eq!(post[0].to_json()["iv_tweak"], "0");
    }

    #[test]
    fn uneven_tail() {
        // Plaintext 40M, shift 16M: zones 24..40, 16..24, 0..16.
        let segs = vec![lin(56 * M, 16 * M), lin(16 * M, 24 * M)];
        let mut len = 16 * M;
        let off = offset_backward_moved(&segs, 16 * M, &mut len).unwrap();
        assert_eq!((off, len), (24 * M, 16 * M));
        let hot = hot_segments(&segs, off, len, 16 * M, "x", 512).unwrap();
        assert_eq!(hot[1].to_json()["size"], (8 * M).to_string());
        let post = post_segments(&hot, off, len, 16 * M).unwrap();
        let (mut o, mut l) = (off, len);
        advance(&mut o, &mut l, 16 * M);
        assert_eq!((o, l), (16 * M, 8 * M));
        let hot = hot_segments(&post, o, l, 16 * M, "x", 512).unwrap();
        assert_eq!(hot.len(), 3);
        let post = post_segments(&hot, o, l, 16 * M).unwrap();
        assert_eq!(post[1].to_json()["size"], (24 * M).to_string());
        assert_eq!(post[1].to_json()["offset"], (32 * M).to_string());
        advance(&mut o, &mut l, 16 * M);
        assert_eq!((o, l), (0, 16 * M));
    }
}
