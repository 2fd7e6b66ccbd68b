//! TrueCrypt/VeraCrypt on the command line: `tcryptDump` (cryptsetup 2.6.1's
//! `action_tcryptDump`, with `--dump-volume-key`) and the close of a cascade's lower layers;
//! what unlocking reads is in [`super::tcrypt_secrets`].

use super::need_args;
use super::tcrypt_secrets::{layer_name, load_error};
use crate::args::Opts;
use crate::errors::{CliError, ExitClass, Result};
use crate::input;
use lukskit_volume::formats::tcrypt::{self, dump::TcryptDump};
use std::io::Write;

/// After closing the top mapping `name` of a TCRYPT volume: close `NAME_1` and `NAME_2` if
/// they are TCRYPT mappings (a cascade's lower layers).
pub fn close_lower_layers(name: &str, deferred: bool) -> Result<()> {
    for index in 1..=2 {
        let lower = layer_name(name, index);
        let Some(m) = lukskit_activate::find(&lower).map_err(CliError::from)? else {
            break;
        };
        if !m.kind().is_ok_and(|k| k == "TCRYPT") {
            break;
        }
        m.close(deferred).map_err(CliError::from)?;
    }
    Ok(())
}

/// `tcryptDump DEVICE`.
pub fn tcrypt_dump(o: &Opts, args: &[String]) -> Result<()> {
    need_args(args, 1, 1, "<device>")?;
    let device = &args[0];
    let metadata = o.header.as_deref().unwrap_or(device);
    let loaded = super::format_unlock::attempt(
        &crate::resolve::unlock(o),
        lukskit_format::VolumeType::Tcrypt,
        device,
        true,
        |_, r| tcrypt::load(r),
    )?;
    let mut out = std::io::stdout().lock();
    if o.dump_volume_key {
        let question = "Header dump with volume key is sensitive information\n\
                        which allows access to encrypted partition without passphrase.\n\
                        This dump should be always stored encrypted on safe place.";
        if !input::confirmed(question, o.batch_mode)? {
            return Err(CliError::new(ExitClass::Permission, ""));
        }
        let key = loaded.volume_key();
        let offset = tcrypt::layout::data_offset(&loaded).map_err(load_error)?;
        let text = tcrypt::dump::volume_key_dump(
            device,
            loaded.cascade.long_name,
            loaded.cascade.mode.name(),
            offset,
            &key,
        );
        out.write_all(text.as_bytes())
    } else {
        write!(out, "{}", TcryptDump::new(&loaded, metadata))
    }
    .map_err(|e| CliError::io("Writing", "standard output", &e))
}
