//! LUKS2 tokens that unlock: cryptsetup's built-in `luks2-keyring` (a passphrase in the kernel
//! keyring), clevis tokens (crate `lukskit-tang`: the `tang`, `tpm2` and `sss` pins),
//! systemd's `systemd-tpm2` (crate `lukskit-tpm2`: the TPM is asked directly, no plugin) and
//! `systemd-pkcs11` (crate `lukskit-pkcs11`: the smart card's module, dynamic builds only);
//! `systemd-fido2` tokens are refused in one line. `open` tries tokens before asking for a
//! passphrase, as cryptsetup does (`--token-only`, `--token-id`, `--token-type`), and
//! `token bind-tang` makes a keyslot with a random passphrase and a clevis token that
//! Debian's `clevis luks unlock` accepts.

use super::need_args;
use crate::args::Opts;
use crate::errors::{CliError, Result};
use lukskit_crypto::SecretBuf;
use lukskit_volume::pbkdf::{PbkdfKind, PbkdfRequest};
use lukskit_volume::Volume;
use std::time::{Duration, Instant};

/// The most time the clevis tokens of one unlock may take together (each exchange has its own
/// limit, 10 s, too): a header with many tokens naming servers that never answer costs this
/// much, not tokens x 10 s. A token whose turn comes later is skipped, and says so.
const CLEVIS_BUDGET: Duration = Duration::from_secs(30);

/// `s` (a URL or a message from a token's header or its server) with control characters
/// escaped: nothing from a header or a server reaches the terminal as an escape sequence.
fn printable(s: &str) -> String {
    s.chars()
        .flat_map(|c| {
            let escaped: Vec<char> = if c.is_control() {
                c.escape_default().collect()
            } else {
                vec![c]
            };
            escaped
        })
        .collect()
}

/// The tokens `open` would try, each with the keyslots to try it on, in cryptsetup's order:
/// those of `--token-id` / `--token-type`, with `--key-slot` only those for that keyslot;
/// without `--token-id` or `--key-slot`, tokens for a `prefer` keyslot first, then tokens for
/// `normal` ones, never `ignore` keyslots (LUKS2_token_open_any's priority passes).
fn candidates(vol: &Volume, o: &Opts) -> Result<Vec<(lukskit_format::luks2::Token, Vec<u32>)>> {
    let Some(h) = vol.luks2() else {
        return Ok(Vec::new());
    };
    // A header that loaded has valid tokens; should one not parse, the token step has
    // nothing to try and the passphrase still works.
    let Ok(mut v) = h.tokens() else {
        return Ok(Vec::new());
    };
    v.retain(|t| {
        o.token_id.is_none_or(|id| t.id == id)
            && o.token_type
                .as_deref()
                .is_none_or(|ty| t.kind.as_str() == ty)
            && o.key_slot.is_none_or(|s| t.keyslots.contains(&s))
    });
    v.sort_by_key(|t| t.id);
    // Priority of each keyslot: 0 ignore, 1 normal (the default), 2 prefer.
    let prio = |s: u32| -> u32 {
        h.keyslot(s)
            .ok()
            .flatten()
            .map_or(0, |k| k.priority.unwrap_or(1))
    };
    if let Some(s) = o.key_slot {
        if o.token_id.is_none() && prio(s) == 0 {
            return Ok(Vec::new());
        }
        return Ok(v.into_iter().map(|t| (t, vec![s])).collect());
    }
    let mut out = Vec::new();
    for want in [2, 1] {
        for t in &v {
            let slots: Vec<u32> = if o.token_id.is_some() {
                if want == 1 {
                    continue;
                }
                let mut all = t.keyslots.clone();
                all.sort_by_key(|&s| std::cmp::Reverse(prio(s)));
                all
            } else {
                t.keyslots
                    .iter()
                    .copied()
                    .filter(|&s| prio(s) == want)
                    .collect()
            };
            if !slots.is_empty()
                && !out
                    .iter()
                    .any(|(u, _): &(lukskit_format::luks2::Token, _)| u.id == t.id)
            {
                out.push((t.clone(), slots));
            }
        }
    }
    Ok(out)
}

/// How tokens failed, as cryptsetup classes it: none could give a passphrase at all
/// (`-ENOENT`: a token type lukskit has no handler for, a tang server that does not answer),
/// or one's passphrase opened none of its keyslots or a `luks2-keyring` token found no key
/// to read (`-EPERM`).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum TokenFailure {
    Unusable,
    WrongPassphrase,
}

/// The passphrase a `luks2-keyring` token (cryptsetup's built-in token type) names: the
/// payload of the `user` key `key_description` in the kernel keyring, as cryptsetup's
/// `keyring_open` reads it. `None` (with the reason in the debug log) when there is no such
/// key this process may read.
fn keyring_token_passphrase(t: &lukskit_format::luks2::Token) -> Option<SecretBuf> {
    let Some(desc) = t.json.get("key_description").and_then(|d| d.as_str()) else {
        crate::debug::log(format_args!("Token {} has no key description.", t.id));
        return None;
    };
    match lukskit_dm::keyring::read_user_key(desc) {
        Ok(p) => Some(p),
        Err(e) => {
            crate::debug::log(format_args!(
                "Reading passphrase from keyring key {desc} failed: {}.",
                e.raw_os_error()
                    .map(|n| std::io::Error::from_raw_os_error(n).to_string())
                    .unwrap_or_else(|| e.to_string())
            ));
            None
        }
    }
}

/// The passphrase a `systemd-tpm2` token holds: the token's sealed secret unsealed by the
/// TPM (`--tpm2-device`, default `/dev/tpmrm0` or `/dev/tpm0`), asking for the PIN first
/// where the token needs one ("Please enter TPM2 PIN:", as systemd-cryptsetup asks). On
/// failure, the one line to print (why the token cannot unlock) and how it failed; a wrong
/// PIN is not asked again (each wrong PIN costs a dictionary-attack count in the TPM).
fn tpm2_token_passphrase(
    t: &lukskit_format::luks2::Token,
    o: &Opts,
) -> std::result::Result<SecretBuf, (TokenFailure, String)> {
    let cannot =
        |e: &dyn std::fmt::Display| format!("Token {} (systemd-tpm2) cannot unlock: {e}.", t.id);
    let tok = lukskit_tpm2::SystemdTpm2Token::parse(&t.json)
        .map_err(|e| (TokenFailure::Unusable, cannot(&e)))?;
    let device = lukskit_tpm2::DeviceSpec::parse(o.tpm2_device.as_deref().unwrap_or("auto"))
        .map_err(|e| (TokenFailure::Unusable, cannot(&e)))?;
    crate::debug::log(format_args!(
        "Unsealing token {} on TPM2 device {device:?} (PCR mask 0x{:x}, PIN {}).",
        t.id,
        tok.pcr_mask,
        if tok.needs_pin() { "yes" } else { "no" }
    ));
    let ask_pin = || {
        crate::input::get_secret(
            &crate::input::KeySource::Prompt,
            "Please enter TPM2 PIN: ",
            false,
        )
        .ok()
    };
    tok.unseal(&device, ask_pin, lukskit_tpm2::transport::DEFAULT_TIMEOUT)
        .map_err(|e| {
            let class = match e {
                lukskit_tpm2::Tpm2Error::BadPin => TokenFailure::WrongPassphrase,
                _ => TokenFailure::Unusable,
            };
            (class, cannot(&e))
        })
}

/// The name systemd-cryptsetup gives the volume in its PIN prompts: the mapping's name for
/// `open DEVICE NAME`, else the device.
fn friendly_name(o: &Opts) -> String {
    let p = &o.positional;
    let open = matches!(p.first().map(String::as_str), Some("open" | "luksOpen"));
    let name = if open && p.len() >= 3 {
        p.get(2)
    } else {
        p.get(1)
    };
    name.cloned().unwrap_or_default()
}

/// The passphrase a `systemd-pkcs11` token holds: its key decrypted by the security token
/// its URI names, through the PKCS#11 module (crate `lukskit-pkcs11`), asking for the
/// token's PIN as systemd-cryptsetup asks ("Please enter PIN for security token 'LABEL' in
/// order to unlock NAME:"). A wrong PIN is not asked again (smart cards lock after a few).
fn pkcs11_token_passphrase(
    t: &lukskit_format::luks2::Token,
    o: &Opts,
) -> std::result::Result<SecretBuf, (TokenFailure, String)> {
    let cannot = |e: &dyn std::fmt::Display| {
        printable(&format!(
            "Token {} (systemd-pkcs11) cannot unlock: {e}.",
            t.id
        ))
    };
    let tok = lukskit_pkcs11::SystemdPkcs11Token::parse(&t.json)
        .map_err(|e| (TokenFailure::Unusable, cannot(&e)))?;
    crate::debug::log(format_args!(
        "Decrypting the key of token {} with the PKCS#11 token {}.",
        t.id,
        printable(&tok.uri_text)
    ));
    let volume = friendly_name(o);
    let ask_pin = |label: &str| {
        crate::input::get_secret(
            &crate::input::KeySource::Prompt,
            &printable(&format!(
                "Please enter PIN for security token '{label}' in order to unlock {volume}: "
            )),
            false,
        )
        .ok()
    };
    tok.unlock(ask_pin).map_err(|e| {
        let class = match e {
            lukskit_pkcs11::Pkcs11Error::BadPin(_) => TokenFailure::WrongPassphrase,
            _ => TokenFailure::Unusable,
        };
        (class, cannot(&e))
    })
}

/// What clevis pins may use: the tang exchanges' limits, the TPM of `--tpm2-device` (for
/// `tpm2` pins, as for systemd-tpm2 tokens), all of it before `deadline`.
fn clevis_context(
    o: &Opts,
    deadline: Instant,
) -> std::result::Result<lukskit_tang::Context, lukskit_tpm2::Tpm2Error> {
    Ok(lukskit_tang::Context {
        limits: lukskit_tang::default_limits(),
        deadline,
        tpm2: lukskit_tpm2::DeviceSpec::parse(o.tpm2_device.as_deref().unwrap_or("auto"))?,
        tpm2_timeout: lukskit_tpm2::transport::DEFAULT_TIMEOUT,
    })
}

/// Try the tokens of `vol` (cryptsetup's token step before the passphrase): the built-in
/// `luks2-keyring` type (a passphrase in the kernel keyring), clevis, systemd-tpm2 and
/// systemd-pkcs11. Returns the keyslot and the volume key when one unlocks; `None` when none
/// does, after saying why on stderr for each token that failed (one line each) and, with
/// `--verbose`, cryptsetup's token message on stdout. With `--token-only` no token
/// unlocking is an error: exit 2 when a token's passphrase opened none of its keyslots,
/// exit 1 when no token was usable at all (cryptsetup's `-EPERM` / `-ENOENT`).
pub(super) fn try_tokens(vol: &Volume, o: &Opts) -> Result<Option<(u32, SecretBuf)>> {
    if vol.luks2().is_none() {
        // LUKS1 has no tokens.
        return if o.token_only {
            Err(CliError::invalid(""))
        } else {
            Ok(None)
        };
    }
    let tokens = candidates(vol, o)?;
    let started = Instant::now();
    let mut failure = TokenFailure::Unusable;
    for (t, slots) in &tokens {
        crate::debug::log(format_args!(
            "Trying to open keyslot with token {} (type {}).",
            t.id, t.kind
        ));
        let (pass, clevis) = match t.kind.as_str() {
            "luks2-keyring" => match keyring_token_passphrase(t) {
                Some(p) => (p, None),
                None => {
                    // cryptsetup's keyring token fails with -EPERM when the key cannot be
                    // read, as if its passphrase were wrong.
                    failure = TokenFailure::WrongPassphrase;
                    continue;
                }
            },
            "systemd-tpm2" if o.disable_external_tokens => {
                // cryptsetup: systemd-tpm2 would be an external token plugin.
                crate::debug::log(format_args!(
                    "Token {} (systemd-tpm2) skipped: --disable-external-tokens.",
                    t.id
                ));
                continue;
            }
            "systemd-tpm2" => match tpm2_token_passphrase(t, o) {
                Ok(p) => (p, None),
                Err((class, line)) => {
                    eprintln!("{}", printable(&line));
                    failure = failure.max(class);
                    continue;
                }
            },
            "systemd-pkcs11" | "systemd-fido2" if o.disable_external_tokens => {
                // cryptsetup: systemd's token plugins are external ones.
                crate::debug::log(format_args!(
                    "Token {} ({}) skipped: --disable-external-tokens.",
                    t.id, t.kind
                ));
                continue;
            }
            "systemd-pkcs11" => match pkcs11_token_passphrase(t, o) {
                Ok(p) => (p, None),
                Err((class, line)) => {
                    eprintln!("{line}");
                    failure = failure.max(class);
                    continue;
                }
            },
            "systemd-fido2" => {
                // No FIDO2 authenticator lukskit could test against honestly (Debian 12
                // packages no software one that systemd can enroll): one line, then the
                // passphrase.
                eprintln!(
                    "Token {} (systemd-fido2) cannot unlock: FIDO2 tokens are not supported by lukskit.",
                    t.id
                );
                continue;
            }
            "clevis" if o.disable_external_tokens => {
                // cryptsetup: clevis would be an external token plugin.
                crate::debug::log(format_args!(
                    "Token {} (clevis) skipped: --disable-external-tokens.",
                    t.id
                ));
                continue;
            }
            "clevis" => {
                let tok = match lukskit_tang::ClevisToken::parse(&t.json) {
                    Ok(tok) => tok,
                    Err(e) => {
                        eprintln!(
                            "Token {} (clevis) cannot unlock: {}.",
                            t.id,
                            printable(&e.to_string())
                        );
                        continue;
                    }
                };
                let what = printable(&tok.pin.describe());
                if CLEVIS_BUDGET.saturating_sub(started.elapsed()).is_zero() {
                    eprintln!(
                        "Token {} (clevis {what}) skipped: the clevis tokens' {} s are used up.",
                        t.id,
                        CLEVIS_BUDGET.as_secs()
                    );
                    continue;
                }
                let ctx = match clevis_context(o, started + CLEVIS_BUDGET) {
                    Ok(ctx) => ctx,
                    Err(e) => {
                        eprintln!("Token {} (clevis {what}) cannot unlock: {e}.", t.id);
                        continue;
                    }
                };
                match tok.unlock_with(&ctx) {
                    Ok(p) => (p, Some(what)),
                    Err(e) => {
                        eprintln!(
                            "Token {} (clevis {what}) cannot unlock: {}.",
                            t.id,
                            printable(&e.to_string())
                        );
                        continue;
                    }
                }
            }
            _ => {
                crate::debug::log(format_args!(
                    "Token {} of type {} is not supported by lukskit.",
                    t.id, t.kind
                ));
                continue;
            }
        };
        for &s in slots {
            crate::debug::log(format_args!(
                "Checking volume passphrase [keyslot {s}] using token {}.",
                t.id
            ));
            if let Ok((slot, vk)) = vol.unlock(pass.as_bytes(), Some(s), false) {
                return Ok(Some((slot, vk)));
            }
        }
        failure = TokenFailure::WrongPassphrase;
        if let Some(what) = clevis {
            eprintln!(
                "Token {} (clevis {what}): the passphrase it holds opens none of its keyslots.",
                t.id
            );
        }
    }
    if o.verbose {
        // cryptsetup's tools_token_error_msg.
        match (failure, o.token_id, &o.token_type) {
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
    if o.token_only {
        // cryptsetup: -EPERM "Command failed with code -2 (no permission or bad
        // passphrase).", or -ENOENT "Command failed with code -1 (wrong or missing
        // parameters)."
        return Err(match failure {
            TokenFailure::WrongPassphrase => CliError::permission(""),
            TokenFailure::Unusable => CliError::invalid(""),
        });
    }
    if tokens.iter().any(|(t, _)| {
        t.kind == lukskit_format::luks2::TokenType::Clevis && !o.disable_external_tokens
    }) {
        eprintln!("Falling back to the passphrase.");
    }
    Ok(None)
}

/// The passphrase token `id` of `vol` holds (luksAddKey's `--new-token-id`): a
/// `luks2-keyring` token's kernel key, or what a clevis tang token decrypts to.
pub(super) fn token_passphrase(vol: &Volume, o: &Opts, id: u32) -> Result<SecretBuf> {
    let Some(h) = vol.luks2() else {
        return Err(CliError::invalid(""));
    };
    let Some(t) = h.tokens()?.into_iter().find(|t| t.id == id) else {
        // cryptsetup 2.6.1 fails here without a word (exit 1).
        return Err(CliError::invalid(String::new()));
    };
    match t.kind.as_str() {
        "luks2-keyring" => keyring_token_passphrase(&t).ok_or_else(|| {
            if o.verbose {
                println!(
                    "Token {id} cannot unlock assigned keyslot(s) (wrong keyslot passphrase)."
                );
            }
            CliError::permission("")
        }),
        "systemd-tpm2" if !o.disable_external_tokens => {
            tpm2_token_passphrase(&t, o).map_err(|(class, line)| match class {
                TokenFailure::WrongPassphrase => CliError::permission(line),
                TokenFailure::Unusable => CliError::invalid(line),
            })
        }
        "systemd-pkcs11" if !o.disable_external_tokens => {
            pkcs11_token_passphrase(&t, o).map_err(|(class, line)| match class {
                TokenFailure::WrongPassphrase => CliError::permission(line),
                TokenFailure::Unusable => CliError::invalid(line),
            })
        }
        "clevis" if !o.disable_external_tokens => {
            let tok = lukskit_tang::ClevisToken::parse(&t.json)
                .map_err(|e| CliError::invalid(printable(&format!("Token {id} unusable: {e}."))))?;
            let what = tok.pin.describe();
            let ctx = clevis_context(o, Instant::now() + CLEVIS_BUDGET).map_err(|e| {
                CliError::invalid(printable(&format!(
                    "Token {id} (clevis {what}) cannot unlock: {e}."
                )))
            })?;
            tok.unlock_with(&ctx).map_err(|e| {
                CliError::invalid(printable(&format!(
                    "Token {id} (clevis {what}) cannot unlock: {e}."
                )))
            })
        }
        _ => {
            if o.verbose {
                println!("No usable token is available.");
            }
            Err(CliError::invalid(""))
        }
    }
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
    let mut slots = t.keyslots.clone();
    slots.push(slot);
    slots.sort_unstable();
    let mut json = t.json;
    json["keyslots"] = serde_json::json!(slots.iter().map(u32::to_string).collect::<Vec<_>>());
    vol.token_add(Some(id), json, true)?;
    Ok(())
}

/// `token bind-tang <device> --tang-url URL [--tang-thumbprint THP] [--key-slot N]
/// [--token-id N]`: a new keyslot with a random passphrase, and a clevis token holding it
/// encrypted to the tang server, as `clevis luks bind -d DEV tang '{"url":URL}'` makes.
pub(super) fn bind_tang(o: &Opts, args: &[String]) -> Result<()> {
    need_args(args, 2, 2, "bind-tang <device>")?;
    let device = &args[1];
    let url = o
        .tang_url
        .as_deref()
        .ok_or_else(|| CliError::invalid("Option --tang-url is required for token bind-tang."))?;
    let mut vol = super::enroll::volume_for_new_token(o, device, "clevis")?;
    let adv = lukskit_tang::fetch_advertisement(url, &lukskit_tang::default_limits())
        .map_err(|e| CliError::invalid(format!("Cannot use tang server {url}: {e}.")))?;
    match &o.tang_thumbprint {
        Some(thp) => {
            if !adv.trusts(thp) {
                return Err(CliError::invalid(format!(
                    "Tang server {url} has no signing key with thumbprint {thp} (it advertises {}).",
                    adv.signing_thumbprints.join(", ")
                )));
            }
        }
        None => {
            let keys = adv.signing_thumbprints.join("\n  ");
            if !o.batch_mode && !crate::input::interactive() {
                return Err(CliError::invalid(format!(
                    "Tang server {url} advertises signing keys\n  {keys}\nName the one to \
                     trust with --tang-thumbprint (or trust them all with --batch-mode)."
                )));
            }
            if o.batch_mode {
                eprintln!("Trusting the signing keys of tang server {url}:\n  {keys}");
            } else {
                crate::input::confirm(
                    &format!(
                        "Tang server {url} advertises these signing keys:\n  {keys}\n\
                         Trust them? (Check with tang-show-keys on the server.)"
                    ),
                    false,
                )?;
            }
        }
    }
    let vk = super::enroll::existing_volume_key(o, &vol)?;
    let pass = lukskit_tang::new_passphrase().map_err(|e| CliError::invalid(e.to_string()))?;
    // The passphrase has 256 bits of entropy: like clevis, a cheap PBKDF2 keyslot unless
    // the command line asks for another PBKDF.
    let mut pbkdf = crate::resolve::pbkdf(o);
    if pbkdf.kind.is_none() && pbkdf.force_iterations.is_none() && pbkdf.iter_time_ms.is_none() {
        pbkdf = PbkdfRequest {
            kind: Some(PbkdfKind::Pbkdf2),
            force_iterations: Some(1000),
            ..pbkdf
        };
    }
    let slot = vol.add_keyslot(&vk, pass.as_bytes(), o.key_slot, &pbkdf, false)?;
    let token = lukskit_tang::bind(&adv, &pass, slot)
        .map_err(|e| CliError::invalid(format!("Cannot make the clevis token: {e}.")));
    let added = token.and_then(|t| {
        vol.token_add(o.token_id, t, o.token_replace)
            .map_err(CliError::from)
    });
    match added {
        Ok(id) => {
            if o.verbose {
                println!("Key slot {slot} created.");
                println!("Token {id} created.");
            }
            Ok(())
        }
        Err(e) => {
            // Do not leave a keyslot whose passphrase nobody has.
            let _ = vol.kill_keyslot(slot);
            Err(e)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::printable;

    #[test]
    fn control_characters_are_escaped() {
        assert_eq!(
            printable("http://a/\u{1b}[2Jx\n"),
            "http://a/\\u{1b}[2Jx\\n"
        );
        assert_eq!(printable("plain ünïcode"), "plain ünïcode");
    }
}
