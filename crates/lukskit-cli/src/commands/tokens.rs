//! LUKS2 tokens on the command line: `open` tries tokens before asking for a passphrase, as
//! cryptsetup does (`--token-only`, `--token-id`, `--token-type`: a
//! [`TokenSelection`]), through crate
//! `lukskit-tokens` (which runs the token kinds); here are the PIN prompts, the messages and
//! the exit codes.

use crate::args::Opts;
use crate::errors::{CliError, Result};
use crate::resolve::TokenSelection;
use lukskit_crypto::SecretBuf;
use lukskit_tokens::{TokenError, TokenFailure, TokenNotice, TokenOutcome};
use lukskit_volume::Volume;

/// The command line's side of the token step: PINs asked on the terminal, a failing token's
/// line on stderr, the details in the `--debug` log.
struct CliPrompt;

impl lukskit_tokens::TokenPrompt for CliPrompt {
    fn pin(&mut self, prompt: &str) -> Option<SecretBuf> {
        crate::input::get_secret(&crate::input::KeySource::Prompt, prompt, false).ok()
    }

    fn notice(&mut self, notice: TokenNotice) {
        match notice {
            TokenNotice::Debug(line) => crate::debug::log(line),
            TokenNotice::Failed(line) => eprintln!("{line}"),
        }
    }
}

/// Try the tokens of `vol` (cryptsetup's token step before the passphrase). Returns the
/// keyslot and the volume key when one unlocks; `None` when none does, after saying why on
/// stderr for each token that failed (one line each) and, with `--verbose`, cryptsetup's
/// token message on stdout. With `--token-only` no token unlocking is an error: exit 2 when
/// a token's passphrase opened none of its keyslots, exit 1 when no token was usable at all
/// (cryptsetup's `-EPERM` / `-ENOENT`).
pub(super) fn try_tokens(
    vol: &Volume,
    tokens: &TokenSelection,
    verbose: bool,
) -> Result<Option<(u32, SecretBuf)>> {
    if vol.luks2().is_none() {
        // LUKS1 has no tokens.
        return if tokens.only {
            Err(CliError::invalid(""))
        } else {
            Ok(None)
        };
    }
    let (failure, clevis_tried) =
        match lukskit_tokens::try_tokens(vol, &tokens.request, &mut CliPrompt) {
            TokenOutcome::Unlocked {
                keyslot,
                volume_key,
            } => return Ok(Some((keyslot, volume_key))),
            TokenOutcome::NotUnlocked {
                failure,
                clevis_tried,
            } => (failure, clevis_tried),
        };
    if verbose {
        // cryptsetup's tools_token_error_msg.
        match (failure, tokens.request.token_id, &tokens.request.token_type) {
            (TokenFailure::WrongPassphrase, Some(id), _) => {
                println!("Token {id} cannot unlock assigned keyslot(s) (wrong keyslot passphrase).")
            }
            (TokenFailure::WrongPassphrase, None, Some(ty)) => println!(
                "Token (type {ty}) cannot unlock assigned keyslot(s) (wrong keyslot passphrase)."
            ),
            (TokenFailure::WrongPassphrase, None, None) => {}
            (TokenFailure::Unusable, _, Some(ty)) => {
                println!("No usable token (type {ty}) is available.")
            }
            (TokenFailure::Unusable, _, None) => println!("No usable token is available."),
        }
    }
    if tokens.only {
        // cryptsetup: -EPERM "Command failed with code -2 (no permission or bad
        // passphrase).", or -ENOENT "Command failed with code -1 (wrong or missing
        // parameters)."
        return Err(match failure {
            TokenFailure::WrongPassphrase => CliError::permission(""),
            TokenFailure::Unusable => CliError::invalid(""),
        });
    }
    if clevis_tried {
        eprintln!("Falling back to the passphrase.");
    }
    Ok(None)
}

/// The secret in a sealed key file (crypttab's `tpm2-device=` / `pkcs11-uri=` with a key
/// file): unsealed on the TPM `tpm2_device` (waiting up to `wait` for it to appear) or
/// decrypted by the security token; PINs asked on the terminal, as for tokens.
pub(super) fn sealed_key_secret(
    key: lukskit_tokens::SealedKeyFile<'_>,
    tpm2_device: Option<String>,
    wait: Option<std::time::Duration>,
    volume: &str,
) -> std::result::Result<SecretBuf, lukskit_tokens::SealedKeyError> {
    let req = lukskit_tokens::TokenRequest {
        tpm2_device,
        device_wait: wait.unwrap_or(std::time::Duration::ZERO),
        volume_name: volume.to_string(),
        ..lukskit_tokens::TokenRequest::default()
    };
    lukskit_tokens::sealed_key_secret(key, &req, &mut CliPrompt)
}

/// The passphrase token `id` of `vol` holds (luksAddKey's `--new-token-id`): a
/// `luks2-keyring` token's kernel key, or what a clevis tang token decrypts to.
pub(super) fn token_passphrase(vol: &Volume, o: &Opts, id: u32) -> Result<SecretBuf> {
    lukskit_tokens::token_passphrase(vol, &crate::resolve::tokens(o).request, id, &mut CliPrompt)
        .map_err(|e| {
            match e {
                TokenError::Header(e) => CliError::from(e),
                // cryptsetup 2.6.1 fails here without a word (exit 1).
                TokenError::NotLuks2 | TokenError::NoSuchToken(_) => CliError::invalid(""),
                TokenError::KeyringKeyUnreadable => {
                    if o.verbose {
                        println!(
                        "Token {id} cannot unlock assigned keyslot(s) (wrong keyslot passphrase)."
                    );
                    }
                    CliError::permission("")
                }
                TokenError::Failed {
                    failure: TokenFailure::WrongPassphrase,
                    message,
                } => CliError::permission(message),
                TokenError::Failed {
                    failure: TokenFailure::Unusable,
                    message,
                } => CliError::invalid(message),
                _ => {
                    if o.verbose {
                        println!("No usable token is available.");
                    }
                    CliError::invalid("")
                }
            }
        })
}

/// Assign token `id` to keyslot `slot` as well (luksAddKey `--new-token-id`: the new
/// keyslot joins the token's keyslots).
pub(super) fn assign_token(vol: &mut Volume, id: u32, slot: u32) -> Result<()> {
    let Some(h) = vol.luks2() else {
        return Err(CliError::invalid(""));
    };
    let Some(t) = h.tokens()?.into_iter().find(|t| t.id == id) else {
        return Err(CliError::invalid(format!("Token {id} is not in use.")));
    };
    if t.keyslots.contains(&slot) {
        return Ok(());
    }
    let mut slots = t.keyslots;
    slots.push(slot);
    slots.sort_unstable();
    vol.token_set_keyslots(id, &slots)?;
    Ok(())
}
