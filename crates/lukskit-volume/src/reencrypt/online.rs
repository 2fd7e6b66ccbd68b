//! The hook that makes a re-encryption *online*: while the engine moves the hot zone over
//! the device, a live mapping of the volume (a kernel dm-crypt mapping, a FUSE or NBD
//! export) keeps serving I/O, and must follow the moving boundary between the old and the
//! new segments.
//!
//! The engine ([`super::engine::run_online`]) calls an [`OnlineHook`] at the points where
//! cryptsetup 2.6 touches its device-mapper stack (`lib/luks2/luks2_reencrypt.c`):
//!
//! 1. [`OnlineHook::start`] once, before the first hot zone, with the segments the header
//!    holds (cryptsetup's `reencrypt_init_device_stack`);
//! 2. per hot zone, [`OnlineHook::before_hotzone`] after the hot-zone segments are made (in
//!    memory, not yet committed) and **before** the hot zone's old data is read: from its
//!    return until [`OnlineHook::after_hotzone`], no I/O of the live mapping may reach the
//!    hot zone's bytes on the device (cryptsetup suspends its hot-zone device; a userspace
//!    backend holds a lock over the range). The live mapping already maps the rest of the
//!    device with the segments given;
//! 3. [`OnlineHook::after_hotzone`] after the hot zone is written, its data synced, and the
//!    segments that follow it ("new up to the end of the hot zone") committed (with
//!    resilience `none`: set in memory): the mapping lets I/O into the hot zone again,
//!    which is now under the new key;
//! 4. [`OnlineHook::finish`] at the end of a run (finished, or stopped at a safe point),
//!    after the segments are written: the mapping takes the segments given as its own
//!    (cryptsetup's `reencrypt_teardown_ok` with `LUKS2_reload`);
//! 5. [`OnlineHook::abort`] when the run fails in between.
//!
//! Segments are handed over as a [`SegmentTable`] (plaintext offsets from the start of the
//! data area, device byte offsets, each crypt segment with its key as a
//! [`lukskit_crypto::SecretBuf`] and the digest that names it in the kernel keyring). The
//! hot zone's segment carries the **new** key, as in cryptsetup's table. When the hook is
//! online ([`OnlineHook::is_online`]) the engine syncs the data of every hot zone, even with
//! resilience `none`, before it lets the mapping see the new data.
//!
//! [`Offline`] is the hook of an offline run: it does nothing.

use super::context::{Context, Mode};
use super::ctx;
use super::keys::Keys;
use crate::error::Result;
use crate::segment::SegmentTable;
use lukskit_crypto::SecretBuf;
use lukskit_format::luks2::Luks2Header;

/// The hot zone of a step: plaintext bytes `[offset, offset + length)` of the data area,
/// which is segment `index` of the table handed over with it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HotZone {
    /// First plaintext byte (from the start of the data area).
    pub offset: u64,
    /// Length in bytes.
    pub length: u64,
    /// Index of the hot zone's segment in the table.
    pub index: usize,
}

/// What the engine tells a live mapping while it re-encrypts (see the module
/// documentation for when each method is called). Errors abort the run; the engine then
/// calls [`OnlineHook::abort`].
pub trait OnlineHook {
    /// Whether a live mapping follows the run (the engine then syncs every hot zone's data
    /// before [`OnlineHook::after_hotzone`]). `true` unless overridden.
    fn is_online(&self) -> bool {
        true
    }

    /// The size in bytes of the live mapping, which an online run re-encrypts (cryptsetup
    /// takes the active device's size as the fixed size of the run); `None` to re-encrypt
    /// the data segments' size.
    fn mapping_size(&self) -> Option<u64> {
        None
    }

    /// Before the first hot zone: `live` are the segments the header holds now (after any
    /// crash recovery), which the live mapping must already be serving.
    fn start(&mut self, live: &SegmentTable) -> Result<()>;

    /// Before the hot zone's data is read: map the volume with `segments` (the hot zone is
    /// `hot`, under the new key) and hold every I/O of the live mapping to the hot zone
    /// until [`OnlineHook::after_hotzone`].
    fn before_hotzone(&mut self, segments: &SegmentTable, hot: HotZone) -> Result<()>;

    /// After the hot zone is rewritten and synced and `segments` (the hot zone now part of
    /// the new segment) committed: release the I/O held to the hot zone.
    fn after_hotzone(&mut self, segments: &SegmentTable) -> Result<()>;

    /// At the end of the run (`finished`: the whole device is done), once the header holds
    /// `segments`: make them the live mapping's own and drop any helper state.
    fn finish(&mut self, segments: &SegmentTable, finished: bool) -> Result<()>;

    /// The run failed. `data_touched`: the hot zone may be partly rewritten (cryptsetup's
    /// fatal case: I/O to it must fail rather than reach the device, until a recovery).
    fn abort(&mut self, data_touched: bool);
}

/// The hook of an offline run: no live mapping, nothing to do.
#[derive(Debug, Default, Clone, Copy)]
pub struct Offline;

impl OnlineHook for Offline {
    fn is_online(&self) -> bool {
        false
    }
    fn start(&mut self, _: &SegmentTable) -> Result<()> {
        Ok(())
    }
    fn before_hotzone(&mut self, _: &SegmentTable, _: HotZone) -> Result<()> {
        Ok(())
    }
    fn after_hotzone(&mut self, _: &SegmentTable) -> Result<()> {
        Ok(())
    }
    fn finish(&mut self, _: &SegmentTable, _: bool) -> Result<()> {
        Ok(())
    }
    fn abort(&mut self, _: bool) {}
}

/// The live segment table of a header in re-encryption, as cryptsetup maps it: the data
/// segments (no backups) in order, each crypt segment with the key of its digest, the hot
/// zone's (`in-reencryption`) with the new key. `data_device_size` is the size of the data
/// device in bytes (for a dynamic last segment). Also returns the index of the hot zone's
/// segment, if there is one.
pub fn live_table(
    hdr: &Luks2Header,
    keys: &Keys,
    data_device_size: u64,
) -> Result<(SegmentTable, Option<usize>)> {
    let c = Context::load(hdr)?;
    let segments = hdr.segments()?;
    let hot = segments
        .iter()
        .filter(|s| !s.flags.iter().any(|f| f.starts_with("backup-")))
        .position(|s| s.flags.iter().any(|f| f == "in-reencryption"));
    let hot_id = hot.and_then(|i| {
        segments
            .iter()
            .filter(|s| !s.flags.iter().any(|f| f.starts_with("backup-")))
            .nth(i)
            .map(|s| s.id)
    });
    let mut digests: Vec<(u32, Vec<u32>)> = Vec::new();
    for d in hdr.digests()? {
        let mut segs = d.segments.clone();
        // The hot zone is mapped with the new key only.
        if let Some(h) = hot_id {
            if Some(d.id) != c.digest_new && c.mode != Mode::Decrypt {
                segs.retain(|s| *s != h);
            }
        }
        digests.push((d.id, segs));
    }
    let table = SegmentTable::from_luks2(
        &segments,
        &digests,
        |d| key_of(&c, keys, d),
        data_device_size,
    )?;
    Ok((table, hot))
}

fn key_of(c: &Context, keys: &Keys, digest: u32) -> Result<SecretBuf> {
    let key = if Some(digest) == c.digest_new {
        keys.new.as_ref()
    } else if Some(digest) == c.digest_old {
        keys.old.as_ref()
    } else {
        None
    };
    key.map(|k| SecretBuf::from_slice(k.as_bytes()))
        .ok_or_else(|| ctx("no key for a data segment's digest"))
}
