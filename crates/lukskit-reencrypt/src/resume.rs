//! Whether a request may go on with the re-encryption in progress (cryptsetup's
//! `reencrypt_verify_and_update_params`), and the change of its resilience a resume asks
//! for ([`apply_resilience`]).

use crate::{choice, ReencryptError, ReencryptRequest, ResilienceName, Result};
use lukskit_format::io::Storage;
use lukskit_format::luks2::Luks2Header;
use lukskit_volume::device::Device;
use lukskit_volume::pbkdf::PbkdfRequest;
use lukskit_volume::reencrypt::{self, Context, Keys, Mode, Resilience, Status};
use lukskit_volume::Volume;

/// The mode must be the one in progress; a data shift cannot change to anything else, nor
/// anything else to a data shift; a decryption with a data shift (`datashift-checksum`/
/// `-journal`) takes `checksum`/`journal` or those, nothing else. A header whose
/// re-encryption metadata cannot be read is left to the run to refuse.
pub fn check_resume_params(req: &ReencryptRequest, hdr: &Luks2Header) -> Result<()> {
    let Ok(c) = Context::load(hdr) else {
        return Ok(());
    };
    if req.encrypts() && c.mode != Mode::Encrypt {
        return Err(ReencryptError::NotInEncryption);
    }
    if req.decrypts() && c.mode != Mode::Decrypt {
        return Err(ReencryptError::NotInDecryption);
    }
    let Some(want) = &req.resilience else {
        return Ok(());
    };
    let shifting = matches!(c.resilience, Resilience::Datashift { .. });
    // `datashift` alone, or `datashift-checksum`/`-journal` (a decryption moving the data).
    let plain_shift = shifting && c.moved_protection.is_none();
    let asks_shift = *want == ResilienceName::Datashift;
    if plain_shift && !asks_shift {
        return Err(ReencryptError::DatashiftInProgress);
    }
    if !plain_shift && asks_shift {
        return Err(ReencryptError::ResilienceNotApplicable);
    }
    if shifting && !plain_shift {
        // The moved segment's protection may change (`decrypt_verify_and_set_params`).
        return choice::moved_protection(req).map(|_| ());
    }
    if want.is_datashift_variant() {
        return Err(ReencryptError::ResilienceNotApplicable);
    }
    Ok(())
}

/// How [`apply_resilience`] goes.
pub struct ResilienceUpdate<'a> {
    /// The request (its `--resilience` and hash).
    pub req: &'a ReencryptRequest,
    /// The PBKDF the new metadata digest is made with (its hash and iterations).
    pub pbkdf: &'a PbkdfRequest,
    /// The data device's logical block size.
    pub block: u64,
    /// The run goes on online (a kernel or userspace mapping): a crashed hot zone is left to
    /// the run, which refuses it.
    pub online: bool,
}

/// `--resilience` at a resume (cryptsetup's reencrypt keyslot update): the rest of the run
/// is protected as asked; a decryption with a moved segment changes the moved segment's
/// protection. A hot zone left by a crash is recovered first, under the protection it was
/// written with (not online, where the run refuses a crashed header). Nothing without a
/// `--resilience`, nor for a data shift in progress (which keeps it), nor for a header that
/// is not LUKS2. `data_dev`: the data device of a detached header.
pub fn apply_resilience(
    vol: &mut Volume,
    data_dev: Option<&Device>,
    keys: &Keys,
    u: &ResilienceUpdate<'_>,
) -> Result<()> {
    if u.req.resilience.is_none() {
        return Ok(());
    }
    let Some((vol_dev, hdr)) = vol.luks2_edit() else {
        return Ok(());
    };
    let c = Context::load(hdr)?;
    let moved = c.moved_protection.is_some();
    let shifting = matches!(c.resilience, Resilience::Datashift { .. });
    let vk_len = keys
        .old
        .as_ref()
        .or(keys.new.as_ref())
        .map_or(32, |k| k.len());
    if (moved || !shifting) && !u.online && reencrypt::status(hdr)? == Status::Crash {
        let data: &dyn Storage = match data_dev {
            Some(d) => d,
            None => vol_dev,
        };
        reencrypt::recover(vol_dev, data, u.block, hdr, keys)?;
    }
    let clean = reencrypt::status(hdr)? == Status::Clean;
    if moved && clean {
        let checksum = choice::moved_protection(u.req)?;
        reencrypt::decrypt_shift::update_protection(
            vol_dev,
            hdr,
            checksum,
            u.block,
            keys,
            u.pbkdf.hash()?,
            u.pbkdf.digest_iterations(vk_len)?,
        )?;
    } else if !shifting && clean {
        reencrypt::resilience_switch::switch(
            vol_dev,
            hdr,
            &choice::resilience(u.req)?,
            u.block,
            keys,
            u.pbkdf.hash()?,
            u.pbkdf.digest_iterations(vk_len)?,
        )?;
    }
    Ok(())
}
