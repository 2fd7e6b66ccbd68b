//! `image --engine auto`: the engine is chosen once the cipher, key size and sector size of
//! the image are known, by the same measurement `open --engine auto` makes (remembered in
//! `/run/lukskit-engines/`): the faster of lukskit's engine and the kernel's crypto API, or
//! lukskit's engine where the kernel cannot serve the cipher.

use crate::args::Opts;
use crate::errors::Result;
use lukskit_activate::userspace::engine;
use lukskit_activate::EngineRequest;
use lukskit_volume::segment::{SegmentKind, SegmentTable};

/// With `--engine auto`: choose the data engine for `cipher` with a `key_len`-byte key and
/// `sector_size`-byte sectors (other `--engine` values were applied before the action ran).
pub(super) fn choose(o: &Opts, cipher: &str, key_len: usize, sector_size: u32) -> Result<()> {
    if o.engine.as_deref() != Some("auto") {
        return Ok(());
    }
    let key_bits = u32::try_from(key_len.saturating_mul(8)).unwrap_or(0);
    let (kind, _) = engine::resolve(EngineRequest::Auto, cipher, key_bits, sector_size)?;
    lukskit_crypto::engine::set_data_engine(kind);
    Ok(())
}

/// [`choose`] for a volume of another format: by its first encrypted segment (the one the
/// bottom layer of a cascade decrypts first).
pub(super) fn choose_for_table(o: &Opts, table: &SegmentTable) -> Result<()> {
    let first = table.segments().iter().find_map(|s| match &s.kind {
        SegmentKind::Crypt(c) => Some(c),
        _ => None,
    });
    match first {
        Some(c) => choose(o, &c.cipher.to_string(), c.key.len(), c.sector_size),
        None => Ok(()),
    }
}
