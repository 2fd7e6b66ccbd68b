//! A new resilience for the rest of a re-encryption in progress (`--resilience` at a
//! resume, as cryptsetup 2.6.1's `LUKS2_keyslot_reencrypt_update` for the keyslot's primary
//! protection): `checksum` (with its hash), `journal` or `none` replace the `reencrypt`
//! keyslot's area description in place (same offset and size), the metadata digest is made
//! again over it, and the header is written. A data shift cannot be switched to or from
//! (the caller refuses that with cryptsetup's words); a decryption with a moved segment
//! changes its secondary protection instead ([`super::decrypt_shift::update_protection`]).
//!
//! The switch must come after the recovery of a hot zone left by a crash: that hot zone is
//! restored from what the old protection wrote.

use super::area::{area_protection, ResilienceChoice};
use super::context::{status, Context, Resilience, Status};
use super::ctx;
use super::keys::{verification, Keys};
use super::verify;
use crate::error::{ReencryptError, Result};
use crate::luks2_keys;
use lukskit_crypto::hash::HashAlg;
use lukskit_format::io::Storage;
use lukskit_format::luks2::edit::ReencryptArea;
use lukskit_format::luks2::Luks2Header;

/// Give the re-encryption in `hdr` the protection `choice` from its next hot zone on;
/// `block` is the data device's block size (the checksum block is the largest of it and
/// both layouts' sector sizes, as at the initialization). The metadata digest is checked
/// with `keys` first. Returns whether anything changed (the header was then written to
/// `meta`).
pub fn switch(
    meta: &dyn Storage,
    hdr: &mut Luks2Header,
    choice: &ResilienceChoice,
    block: u64,
    keys: &Keys,
    digest_hash: HashAlg,
    digest_iterations: u32,
) -> Result<bool> {
    if status(hdr)? != Status::Clean {
        return Err(ReencryptError::Unsupported(
            "a resilience change before the interrupted hot zone is recovered".into(),
        )
        .into());
    }
    let c = Context::load(hdr)?;
    if matches!(c.resilience, Resilience::Datashift { .. })
        || matches!(choice, ResilienceChoice::Datashift(_))
    {
        return Err(
            ReencryptError::Unsupported("a resilience change of a data shift".into()).into(),
        );
    }
    let (c, alignment, area) = verified_area(hdr, block, keys)?;
    let (protection, shift_size) = area_protection(choice, alignment)?;
    let new = ReencryptArea {
        offset: area.offset,
        size: area.size,
        protection,
        shift_size,
    };
    if new == area {
        return Ok(false);
    }
    store_area(
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

/// The `reencrypt` keyslot's area of `hdr`, once the metadata digest checked out with
/// `keys`; with the context and the checksum block for `block` (the largest of it and both
/// layouts' sector sizes, as at the initialization).
pub(crate) fn verified_area(
    hdr: &Luks2Header,
    block: u64,
    keys: &Keys,
) -> Result<(Context, u64, ReencryptArea)> {
    let c = Context::load(hdr)?;
    verify::check(hdr, c.keyslot, &verification(hdr, &c, keys)?)?;
    let alignment = block
        .max(u64::from(Context::sector_size(&c.old)))
        .max(u64::from(Context::sector_size(&c.new)));
    let area = ReencryptArea::of(hdr, c.keyslot).map_err(|_| ctx("reencrypt keyslot area"))?;
    Ok((c, alignment, area))
}

/// Put `area` in the `reencrypt` keyslot `keyslot` of `hdr`, make the metadata digest again
/// over it and write the header to `meta`.
pub(crate) fn store_area(
    meta: &dyn Storage,
    hdr: &mut Luks2Header,
    keyslot: u32,
    area: &ReencryptArea,
    keys: &Keys,
    digest_hash: HashAlg,
    digest_iterations: u32,
) -> Result<()> {
    lukskit_format::luks2::edit::set_reencrypt_area(hdr, keyslot, area)?;
    let c = Context::load(hdr)?;
    let data = verification(hdr, &c, keys)?;
    verify::create(hdr, c.keyslot, &data, digest_hash, digest_iterations)?;
    luks2_keys::write_header(meta, hdr)
}
