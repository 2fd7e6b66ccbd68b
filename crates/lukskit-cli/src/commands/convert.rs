//! `convert <device> --type luks1|luks2`: in-place LUKS1 ↔ LUKS2 conversion.

use super::need_args;
use crate::args::Opts;
use crate::errors::{CliError, Result};
use crate::input;
use lukskit_format::VolumeType;
use lukskit_volume::convert::{self as conv, type_name};
use lukskit_volume::device::Access;

/// `convert <device> --type luks1|luks2` (cryptsetup's `action_luksConvert`): the target type
/// is checked first, then the header is loaded, a conversion to the current type is refused,
/// the user confirms (unless `-q`), and the volume layer converts.
pub fn convert(o: &Opts, args: &[String]) -> Result<()> {
    need_args(args, 1, 1, "<device>")?;
    let target = match o.r#type.as_deref() {
        Some("luks1") => VolumeType::Luks1,
        Some("luks2") => VolumeType::Luks2,
        _ => {
            return Err(CliError::invalid(
                "Invalid LUKS type, only luks1 and luks2 are supported.",
            ))
        }
    };
    // `--type` names the target format here, not the one to load.
    let mut vol = super::load_volume_typed(o, &args[0], Access::Write, None)?;
    conv::check_target(&vol, target)?;
    let shown = o.header.as_deref().unwrap_or(&args[0]);
    // cryptsetup's message ends with a newline of its own.
    let go = input::confirmed(
        &format!(
            "This operation will convert {shown} to {} format.\n",
            type_name(target)
        ),
        o.batch_mode,
    )?;
    if !go {
        return Err(input::refused(
            "Operation aborted, device was NOT converted.",
            true,
        ));
    }
    conv::convert(&mut vol, target).map_err(CliError::from)
}
