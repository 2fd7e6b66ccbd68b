//! The token step: try the candidates until one unlocks.

use crate::kinds::{self, clevis_context};
use crate::order::candidates;
use crate::{printable, TokenError, TokenFailure, TokenNotice, TokenPrompt, TokenRequest};
use lukskit_crypto::SecretBuf;
use lukskit_format::luks2::TokenType;
use lukskit_volume::Volume;
use std::time::{Duration, Instant};

/// The most time the clevis tokens of one unlock may take together (each exchange has its own
/// limit, 10 s, too): a header with many tokens naming servers that never answer costs this
/// much, not tokens x 10 s. A token whose turn comes later is skipped, and says so.
pub const CLEVIS_BUDGET: Duration = Duration::from_secs(30);

/// What the token step came to.
#[derive(Debug)]
pub enum TokenOutcome {
    /// A token's passphrase opened this keyslot.
    Unlocked {
        /// The keyslot.
        keyslot: u32,
        /// The volume key.
        volume_key: SecretBuf,
    },
    /// No token unlocked (also for a LUKS1 volume, which has none).
    NotUnlocked {
        /// How the tokens failed (cryptsetup's `-ENOENT` / `-EPERM`).
        failure: TokenFailure,
        /// Whether a clevis token was among those tried (cryptsetup then says it falls back
        /// to the passphrase).
        clevis_tried: bool,
    },
}

/// Try the tokens of `vol` ([`candidates`] order): the built-in `luks2-keyring` type,
/// clevis, systemd-tpm2 and systemd-pkcs11. Each token that fails is told to `prompt` as one
/// [`TokenNotice::Failed`] line (or a debug notice where cryptsetup says nothing).
pub fn try_tokens(vol: &Volume, req: &TokenRequest, prompt: &mut dyn TokenPrompt) -> TokenOutcome {
    let tokens = candidates(vol, req);
    let started = Instant::now();
    let mut failure = TokenFailure::Unusable;
    let failed = |prompt: &mut dyn TokenPrompt, line: String| {
        prompt.notice(TokenNotice::Failed(line));
    };
    for (t, slots) in &tokens {
        prompt.notice(TokenNotice::Debug(format!(
            "Trying to open keyslot with token {} (type {}).",
            t.id, t.kind
        )));
        let external_skipped = |prompt: &mut dyn TokenPrompt, kind: &str| {
            prompt.notice(TokenNotice::Debug(format!(
                "Token {} ({kind}) skipped: --disable-external-tokens.",
                t.id
            )))
        };
        let (pass, clevis) = match t.kind.as_str() {
            "luks2-keyring" => match kinds::keyring(t, prompt) {
                Some(p) => (p, None),
                None => {
                    // cryptsetup's keyring token fails with -EPERM when the key cannot be
                    // read, as if its passphrase were wrong.
                    failure = TokenFailure::WrongPassphrase;
                    continue;
                }
            },
            // cryptsetup: systemd-tpm2 would be an external token plugin.
            "systemd-tpm2" if req.disable_external => {
                external_skipped(prompt, "systemd-tpm2");
                continue;
            }
            "systemd-tpm2" => match kinds::tpm2(t, req, prompt) {
                Ok(p) => (p, None),
                Err((class, line)) => {
                    failed(prompt, printable(&line));
                    failure = failure.max(class);
                    continue;
                }
            },
            // cryptsetup: systemd's token plugins are external ones.
            "systemd-pkcs11" | "systemd-fido2" if req.disable_external => {
                external_skipped(prompt, t.kind.as_str());
                continue;
            }
            "systemd-pkcs11" => match kinds::pkcs11(t, req, prompt) {
                Ok(p) => (p, None),
                Err((class, line)) => {
                    failed(prompt, line);
                    failure = failure.max(class);
                    continue;
                }
            },
            "systemd-fido2" => {
                // No FIDO2 authenticator lukskit could test against honestly (Debian 12
                // packages no software one that systemd can enroll): one line, then the
                // passphrase.
                failed(
                    prompt,
                    format!(
                        "Token {} (systemd-fido2) cannot unlock: FIDO2 tokens are not supported by lukskit.",
                        t.id
                    ),
                );
                continue;
            }
            // cryptsetup: clevis would be an external token plugin.
            "clevis" if req.disable_external => {
                external_skipped(prompt, "clevis");
                continue;
            }
            "clevis" => {
                let tok = match lukskit_tang::ClevisToken::parse(&t.json) {
                    Ok(tok) => tok,
                    Err(e) => {
                        failed(
                            prompt,
                            format!(
                                "Token {} (clevis) cannot unlock: {}.",
                                t.id,
                                printable(&e.to_string())
                            ),
                        );
                        continue;
                    }
                };
                let what = printable(&tok.pin.describe());
                if CLEVIS_BUDGET.saturating_sub(started.elapsed()).is_zero() {
                    failed(
                        prompt,
                        format!(
                            "Token {} (clevis {what}) skipped: the clevis tokens' {} s are used up.",
                            t.id,
                            CLEVIS_BUDGET.as_secs()
                        ),
                    );
                    continue;
                }
                let ctx = match clevis_context(req, started + CLEVIS_BUDGET) {
                    Ok(ctx) => ctx,
                    Err(e) => {
                        failed(
                            prompt,
                            format!("Token {} (clevis {what}) cannot unlock: {e}.", t.id),
                        );
                        continue;
                    }
                };
                match tok.unlock_with(&ctx) {
                    Ok(p) => (p, Some(what)),
                    Err(e) => {
                        failed(
                            prompt,
                            format!(
                                "Token {} (clevis {what}) cannot unlock: {}.",
                                t.id,
                                printable(&e.to_string())
                            ),
                        );
                        continue;
                    }
                }
            }
            _ => {
                prompt.notice(TokenNotice::Debug(format!(
                    "Token {} of type {} is not supported by lukskit.",
                    t.id, t.kind
                )));
                continue;
            }
        };
        for &s in slots {
            prompt.notice(TokenNotice::Debug(format!(
                "Checking volume passphrase [keyslot {s}] using token {}.",
                t.id
            )));
            if let Ok((keyslot, volume_key)) = vol.unlock(pass.as_bytes(), Some(s), false) {
                return TokenOutcome::Unlocked {
                    keyslot,
                    volume_key,
                };
            }
        }
        failure = TokenFailure::WrongPassphrase;
        if let Some(what) = clevis {
            failed(
                prompt,
                format!(
                    "Token {} (clevis {what}): the passphrase it holds opens none of its keyslots.",
                    t.id
                ),
            );
        }
    }
    TokenOutcome::NotUnlocked {
        failure,
        clevis_tried: tokens
            .iter()
            .any(|(t, _)| t.kind == TokenType::Clevis && !req.disable_external),
    }
}

/// The passphrase token `id` of `vol` holds (luksAddKey's `--new-token-id`): a
/// `luks2-keyring` token's kernel key, a systemd-tpm2 or systemd-pkcs11 token's secret, or
/// what a clevis token decrypts to. `req.token_id`/`token_type`/`key_slot` are not looked at.
pub fn token_passphrase(
    vol: &Volume,
    req: &TokenRequest,
    id: u32,
    prompt: &mut dyn TokenPrompt,
) -> Result<SecretBuf, TokenError> {
    let Some(h) = vol.luks2() else {
        return Err(TokenError::NotLuks2);
    };
    let Some(t) = h.tokens()?.into_iter().find(|t| t.id == id) else {
        return Err(TokenError::NoSuchToken(id));
    };
    let failed =
        |(failure, message): (TokenFailure, String)| TokenError::Failed { failure, message };
    match t.kind.as_str() {
        "luks2-keyring" => kinds::keyring(&t, prompt).ok_or(TokenError::KeyringKeyUnreadable),
        "systemd-tpm2" if !req.disable_external => kinds::tpm2(&t, req, prompt).map_err(failed),
        "systemd-pkcs11" if !req.disable_external => kinds::pkcs11(&t, req, prompt).map_err(failed),
        "clevis" if !req.disable_external => {
            let unusable = |message: String| TokenError::Failed {
                failure: TokenFailure::Unusable,
                message: printable(&message),
            };
            let tok = lukskit_tang::ClevisToken::parse(&t.json)
                .map_err(|e| unusable(format!("Token {id} unusable: {e}.")))?;
            let what = tok.pin.describe();
            let ctx = clevis_context(req, Instant::now() + CLEVIS_BUDGET)
                .map_err(|e| unusable(format!("Token {id} (clevis {what}) cannot unlock: {e}.")))?;
            tok.unlock_with(&ctx)
                .map_err(|e| unusable(format!("Token {id} (clevis {what}) cannot unlock: {e}.")))
        }
        _ => Err(TokenError::Unsupported),
    }
}
