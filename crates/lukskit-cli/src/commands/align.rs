//! luksFormat `--align-payload=SECTORS` (deprecated in cryptsetup, still accepted): the data
//! starts at the end of the header area rounded up to a multiple of SECTORS.

use crate::args::{parse_size, Opts};
use crate::errors::{CliError, Result};
use lukskit_format::luks1::Luks1Header;
use lukskit_format::luks2;
use lukskit_volume::format::FormatType;

/// The data offset in 512-byte sectors to format with: `--offset`, or the one
/// `--align-payload` gives, or None for the default.
pub fn payload_offset(
    o: &Opts,
    kind: FormatType,
    cipher: &str,
    key_size_bits: Option<u32>,
) -> Result<Option<u64>> {
    let Some(align) = o.align_payload.filter(|&a| a != 0) else {
        return Ok(o.offset);
    };
    if o.offset.is_some() {
        return Err(CliError::invalid(
            "Options --align-payload and --offset cannot be combined.",
        ));
    }
    if o.header.is_some() {
        // With a detached header the alignment is the data offset itself.
        return Ok(Some(u64::from(align)));
    }
    let sectors = match kind {
        FormatType::Luks1 => {
            let key_bytes = super::volume_key::format_key_bytes(cipher, key_size_bits)?;
            let key_bytes =
                u32::try_from(key_bytes).map_err(|_| CliError::invalid("Invalid key size."))?;
            u64::from(Luks1Header::layout(key_bytes, align, None, false).1)
        }
        FormatType::Luks2 => {
            let size = |s: &Option<String>| s.as_deref().and_then(parse_size);
            let metadata = size(&o.luks2_metadata_size).unwrap_or(luks2::DEFAULT_METADATA_SIZE);
            let keyslots = size(&o.luks2_keyslots_size).unwrap_or(
                (luks2::DEFAULT_KEYSLOTS_SIZE + 2 * luks2::DEFAULT_METADATA_SIZE)
                    .saturating_sub(2 * metadata),
            );
            let align_bytes = u64::from(align) * 512;
            (2 * metadata + keyslots).div_ceil(align_bytes) * align_bytes / 512
        }
    };
    Ok(Some(sectors))
}
