//! Plain mode's key from the command line (`open --type plain`, `image encrypt|decrypt
//! --type plain`): cryptsetup 2.6.1's key file rules and prompts. The parameters are
//! resolved in [`crate::resolve::plain`].

use crate::args::Opts;
use crate::errors::{CliError, Result};
use crate::input::{self, KeySource};
use lukskit_crypto::SecretBuf;
use lukskit_volume::plain::{self, PlainParams};

/// The plain-mode key as cryptsetup 2.6.1 derives it (see [`lukskit_volume::plain`]).
pub(super) fn plain_key(
    o: &Opts,
    p: &PlainParams,
    prompt: &str,
    verify: bool,
) -> Result<SecretBuf> {
    let key_len = p.key_len()?;
    let hash = (!p.hash.is_copy()).then_some(&p.hash);
    let offset = o.keyfile_offset.unwrap_or(0);
    match o.key_file.as_deref() {
        Some(path) if path != "-" => {
            if !o.batch_mode && o.hash.is_some() {
                eprintln!(
                    "WARNING: The --hash parameter is being ignored in plain mode with keyfile specified."
                );
            }
            if !o.batch_mode && o.keyfile_size.is_some() {
                eprintln!("WARNING: The --keyfile-size option is being ignored, the read size is the same as the encryption key size.");
            }
            input::read_keyfile(path, offset, Some(key_len as u64))
        }
        Some(_) => {
            let size = match hash {
                None => Some(key_len as u64),
                Some(_) => o.keyfile_size,
            };
            let secret = input::read_keyfile("-", offset, size)?;
            plain::key_from_secret(hash, secret.as_bytes(), key_len).map_err(CliError::from)
        }
        None if !input::interactive() && o.keyfile_size.is_some_and(|l| l > 0) => {
            // A passphrase on standard input (not a terminal): only --keyfile-size bytes are
            // read, as cryptsetup reads them.
            let limit = o.keyfile_size.unwrap_or(0);
            let secret = input::read_stdin_line_limited(limit)?;
            plain::key_from_secret(hash, secret.as_bytes(), key_len).map_err(CliError::from)
        }
        None => {
            let secret = input::get_secret(&KeySource::Prompt, prompt, verify)?;
            let n = o
                .keyfile_size
                .map_or(secret.len(), |l| (l as usize).min(secret.len()));
            plain::key_from_secret(hash, &secret.as_bytes()[..n], key_len).map_err(CliError::from)
        }
    }
}
