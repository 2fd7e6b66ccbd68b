//! Enrolment and removal of the tokens that hold a keyslot's passphrase:
//!
//! - `token enroll-tpm2 DEVICE [--tpm2-device D] [--tpm2-pcrs 7+8] [--tpm2-pcr-bank B]
//!   [--tpm2-with-pin yes]`: what `systemd-cryptenroll --tpm2-device=…` of systemd 252 does
//!   (crate `lukskit-tpm2`, module `enroll`): a random secret sealed in the TPM, a keyslot
//!   whose passphrase is its base64 (PBKDF2-SHA512 at cryptsetup's minimum, 1000 iterations,
//!   as systemd's `cryptsetup_set_minimal_pbkdf` makes it) and a `systemd-tpm2` token;
//! - `token bind-clevis DEVICE PIN CONFIG` (PIN `tpm2`, `sss` or `tang`, e.g. `sss
//!   '{"t":2,"pins":{"tang":[{"url":…}],"tpm2":{"pcr_ids":"7"}}}'`): what `clevis luks bind
//!   -d DEVICE PIN CONFIG` of clevis 19 does (crate `lukskit-tang`, `PinConfig` and
//!   `Plan`): a keyslot with a random passphrase (PBKDF2, 1000 iterations, as `token
//!   bind-tang`) and a clevis token whose JWE the pins decrypt;
//! - `token bind-tang DEVICE --tang-url URL [--tang-thumbprint THP]`: a keyslot with a
//!   random passphrase and a clevis token holding it encrypted to the tang server, that
//!   Debian's `clevis luks unlock` accepts;
//! - `token unenroll DEVICE (--token-id N | --token-type T | --key-slot N)`: the tokens and
//!   the keyslots they unlock, as `systemd-cryptenroll --wipe-slot=tpm2` and `clevis luks
//!   unbind -s N` remove them. cryptsetup's `token remove` keeps the keyslot, and lukskit's
//!   keeps cryptsetup's meaning: `unenroll` is the command that removes both.

use super::need_args;
use crate::args::Opts;
use crate::errors::{CliError, Result};
use lukskit_crypto::SecretBuf;
use lukskit_volume::device::Access;
use lukskit_volume::pbkdf::{HashChoice, PbkdfKind, PbkdfRequest};

/// The PIN for a new PIN token: asked twice on a terminal (systemd-cryptenroll's prompts),
/// one line from standard input otherwise.
fn new_pin() -> Result<SecretBuf> {
    let src = crate::input::KeySource::Prompt;
    let pin = crate::input::get_secret(&src, "Please enter TPM2 PIN: ", false)?;
    if crate::input::interactive() {
        let again = crate::input::get_secret(&src, "Please enter TPM2 PIN (repeat): ", false)?;
        if !pin.ct_eq(again.as_bytes()) {
            return Err(CliError::permission("PINs are not equal."));
        }
    }
    if pin.as_bytes().is_empty() {
        return Err(CliError::invalid("An empty TPM2 PIN is refused."));
    }
    Ok(pin)
}

/// `--tpm2-with-pin`: yes/no as systemd's `parse_boolean` takes them.
fn with_pin(o: &Opts) -> Result<bool> {
    match o.tpm2_with_pin.as_deref() {
        None => Ok(false),
        Some("yes" | "y" | "true" | "t" | "on" | "1") => Ok(true),
        Some("no" | "n" | "false" | "f" | "off" | "0") => Ok(false),
        Some(v) => Err(CliError::invalid(format!(
            "Failed to parse --tpm2-with-pin= argument: {v}"
        ))),
    }
}

/// The LUKS2 volume `device`, opened for writing, that a new keyslot with a token of type
/// `token_type` is added to: refused when it is not LUKS2, when the `--key-slot` asked for is
/// taken or out of range, or when no keyslot is free (before any passphrase is asked).
pub(super) fn volume_for_new_token(
    o: &Opts,
    device: &str,
    token_type: &str,
) -> Result<lukskit_volume::Volume> {
    let vol = super::load_volume(o, device, Access::Write)?;
    if vol.luks2().is_none() {
        return Err(CliError::invalid(format!(
            "Device {device} is not a LUKS2 device ({token_type} tokens need LUKS2)."
        )));
    }
    if let Some(s) = o.key_slot {
        vol.check_new_keyslot(s)?;
    } else {
        vol.free_keyslot()?;
    }
    Ok(vol)
}

/// The volume key, from any existing passphrase or key file (`-d`), asked as cryptsetup's
/// luksAddKey asks.
pub(super) fn existing_volume_key(o: &Opts, vol: &lukskit_volume::Volume) -> Result<SecretBuf> {
    let src = super::existing_key_source(o, None);
    let (_, vk, _) = super::keys::unlock_with_tries(
        vol,
        o,
        &src,
        "Enter any existing passphrase: ",
        None,
        false,
    )?;
    Ok(vk)
}

/// `token enroll-tpm2 <device>`.
pub(super) fn enroll_tpm2(o: &Opts, args: &[String]) -> Result<()> {
    need_args(args, 2, 2, "enroll-tpm2 <device>")?;
    let device = &args[1];
    // Parse everything before the TPM or the volume is touched.
    let pcr_mask = lukskit_tpm2::enroll::parse_pcr_list(o.tpm2_pcrs.as_deref().unwrap_or("7"))
        .map_err(|e| CliError::invalid(format!("Failed to parse PCR list: {e}.")))?;
    let pcr_bank = match o.tpm2_pcr_bank.as_deref() {
        None => None,
        Some(b) => Some(lukskit_tpm2::token::bank_from_name(b).ok_or_else(|| {
            CliError::invalid(format!(
                "Unknown PCR bank '{b}' (sha1, sha256, sha384, sha512)."
            ))
        })?),
    };
    let pin_wanted = with_pin(o)?;
    let tpm = lukskit_tpm2::DeviceSpec::parse(o.tpm2_device.as_deref().unwrap_or("auto"))
        .map_err(|e| CliError::invalid(format!("{e}.")))?;
    let mut vol = volume_for_new_token(o, device, "systemd-tpm2")?;
    let vk = existing_volume_key(o, &vol)?;
    let pin = if pin_wanted { Some(new_pin()?) } else { None };
    let req = lukskit_tpm2::enroll::SealRequest { pcr_mask, pcr_bank };
    let sealed = lukskit_tpm2::enroll::seal(
        &tpm,
        &req,
        pin.as_ref(),
        lukskit_tpm2::transport::DEFAULT_TIMEOUT,
    )
    .map_err(|e| CliError::invalid(format!("Cannot seal the key in the TPM: {e}.")))?;
    // systemd's cryptsetup_set_minimal_pbkdf: PBKDF2 with SHA-512 at the least cryptsetup
    // allows (the passphrase has 256 bits of entropy), unless the command line asks
    // otherwise.
    let mut pbkdf = crate::resolve::pbkdf(o);
    if pbkdf.kind.is_none() && pbkdf.force_iterations.is_none() && pbkdf.iter_time_ms.is_none() {
        pbkdf = PbkdfRequest {
            kind: Some(PbkdfKind::Pbkdf2),
            hash: Some(
                pbkdf
                    .hash
                    .unwrap_or(HashChoice::Known(lukskit_crypto::hash::HashAlg::Sha512)),
            ),
            force_iterations: Some(1000),
            ..pbkdf
        };
    }
    let slot = vol.add_keyslot(&vk, sealed.passphrase.as_bytes(), o.key_slot, &pbkdf, false)?;
    match vol.token_add(o.token_id, sealed.token_json(slot), o.token_replace) {
        Ok(id) => {
            eprintln!("New TPM2 token enrolled as key slot {slot}.");
            if o.verbose {
                println!("Token {id} created.");
            }
            Ok(())
        }
        Err(e) => {
            // Do not leave a keyslot whose passphrase nobody has.
            let _ = vol.kill_keyslot(slot);
            Err(e.into())
        }
    }
}

/// `token unenroll <device>`: the tokens chosen by `--token-id`, `--token-type` or
/// `--key-slot` (the tokens of that keyslot) removed, then the keyslots they were assigned
/// to killed. Refused when no keyslot would be left.
pub(super) fn unenroll(o: &Opts, args: &[String]) -> Result<()> {
    need_args(args, 2, 2, "unenroll <device>")?;
    let device = &args[1];
    if o.token_id.is_none() && o.token_type.is_none() && o.key_slot.is_none() {
        return Err(CliError::invalid(
            "Action requires specific token. Use --token-id, --token-type or --key-slot parameter.",
        ));
    }
    let mut vol = super::load_luks2_volume(o, device, Access::Write)?;
    let Some(h) = vol.luks2() else {
        return Err(CliError::invalid(""));
    };
    let chosen: Vec<_> = h
        .tokens()?
        .into_iter()
        .filter(|t| {
            o.token_id.is_none_or(|id| t.id == id)
                && o.token_type
                    .as_deref()
                    .is_none_or(|ty| t.kind.as_str() == ty)
                && o.key_slot.is_none_or(|s| t.keyslots.contains(&s))
        })
        .collect();
    if chosen.is_empty() {
        return Err(CliError::invalid("No token matches: nothing to unenroll."));
    }
    let mut slots: Vec<u32> = chosen.iter().flat_map(|t| t.keyslots.clone()).collect();
    slots.sort_unstable();
    slots.dedup();
    let active = vol.active_keyslots()?;
    if active.iter().all(|s| slots.contains(s)) {
        return Err(CliError::invalid(
            "Refusing to remove the last keyslots: the volume could not be opened any more.",
        ));
    }
    if !o.batch_mode && crate::input::interactive() {
        crate::input::confirm(
            &format!(
                "This removes token(s) {} and keyslot(s) {}.",
                chosen
                    .iter()
                    .map(|t| t.id.to_string())
                    .collect::<Vec<_>>()
                    .join(", "),
                slots
                    .iter()
                    .map(u32::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            false,
        )?;
    }
    // Tokens first: interrupted in between, a keyslot without its token is left (still
    // openable with its passphrase), never a token naming a keyslot that is gone.
    for t in &chosen {
        vol.token_remove(t.id)?;
        if o.verbose {
            println!("Token {} removed.", t.id);
        }
    }
    for s in slots {
        if active.contains(&s) {
            vol.kill_keyslot(s)?;
            if o.verbose {
                println!("Key slot {s} removed.");
            }
        }
    }
    Ok(())
}

/// Trust the tang servers of `plan` that no `thp` or given `adv` vouches for: on
/// `--batch-mode` (clevis' `-y`) with a line naming their keys, after a question on a
/// terminal, never otherwise.
fn confirm_tang_servers(o: &Opts, plan: &lukskit_tang::Plan) -> Result<()> {
    for adv in plan.unconfirmed() {
        trust_signing_keys(
            o,
            &lukskit_tokens::printable(&adv.url),
            &adv.signing_thumbprints,
            "with \"thp\" in its configuration",
        )?;
    }
    Ok(())
}

/// Trust the signing keys `thumbprints` of the tang server at `url`, which nothing named:
/// on `--batch-mode` with a line naming them, after a question on a terminal; otherwise an
/// error saying how to name the one to trust (`how`).
fn trust_signing_keys(o: &Opts, url: &str, thumbprints: &[String], how: &str) -> Result<()> {
    let keys = thumbprints.join("\n  ");
    if o.batch_mode {
        eprintln!("Trusting the signing keys of tang server {url}:\n  {keys}");
        Ok(())
    } else if crate::input::interactive() {
        crate::input::confirm(
            &format!(
                "Tang server {url} advertises these signing keys:\n  {keys}\n\
                 Trust them? (Check with tang-show-keys on the server.)"
            ),
            false,
        )
    } else {
        Err(CliError::invalid(format!(
            "Tang server {url} advertises signing keys\n  {keys}\nName the one to trust {how} \
             (or trust them all with --batch-mode)."
        )))
    }
}

/// `token bind-clevis <device> <pin> [<config>]`: what `clevis luks bind -d DEVICE PIN
/// CONFIG` of clevis 19 makes, for the pins `tang`, `tpm2` and `sss` (crate
/// `lukskit-tang`: [`lukskit_tang::PinConfig`], [`lukskit_tang::Plan`]). The configuration
/// is parsed, the tang servers asked and trusted, the TPM used and the token unlocked once
/// before anything is written.
pub(super) fn bind_clevis(o: &Opts, args: &[String]) -> Result<()> {
    need_args(args, 3, 4, "bind-clevis <device> <pin> [<config>]")?;
    let device = &args[1];
    let pin = args[2].as_str();
    let cfg = lukskit_tang::PinConfig::parse(pin, args.get(3).map_or("{}", String::as_str))
        .map_err(|e| {
            CliError::invalid(format!(
                "Invalid clevis {} configuration: {e}.",
                lukskit_tokens::printable(pin)
            ))
        })?;
    let tpm = lukskit_tpm2::DeviceSpec::parse(o.tpm2_device.as_deref().unwrap_or("auto"))
        .map_err(|e| CliError::invalid(format!("{e}.")))?;
    let mut vol = volume_for_new_token(o, device, "clevis")?;
    let limits = lukskit_tang::default_limits();
    let plan = lukskit_tang::Plan::resolve(&cfg, &limits)
        .map_err(|e| CliError::invalid(format!("Cannot bind the clevis {pin} pin: {e}.")))?;
    confirm_tang_servers(o, &plan)?;
    let vk = existing_volume_key(o, &vol)?;
    let pass = lukskit_tang::new_passphrase().map_err(|e| CliError::invalid(e.to_string()))?;
    // Which keyslot the token will be for is known once it is added; the token is made
    // first (it needs the TPM and the servers), with the keyslot number it will get.
    let slot = match o.key_slot {
        Some(s) => s,
        None => vol.free_keyslot()?,
    };
    let ctx = lukskit_tang::Context {
        tpm2: tpm,
        ..lukskit_tang::Context::new(limits)
    };
    let token = plan
        .token(&pass, slot, &ctx)
        .map_err(|e| CliError::invalid(format!("Cannot bind the clevis {pin} pin: {e}.")))?;
    let pbkdf = random_passphrase_pbkdf(o);
    let added = vol.add_keyslot(&vk, pass.as_bytes(), Some(slot), &pbkdf, false)?;
    add_token_for_keyslot(o, &mut vol, added, Ok(token))
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
    let mut vol = volume_for_new_token(o, device, "clevis")?;
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
        None => trust_signing_keys(o, url, &adv.signing_thumbprints, "with --tang-thumbprint")?,
    }
    let vk = existing_volume_key(o, &vol)?;
    let pass = lukskit_tang::new_passphrase().map_err(|e| CliError::invalid(e.to_string()))?;
    let pbkdf = random_passphrase_pbkdf(o);
    let slot = vol.add_keyslot(&vk, pass.as_bytes(), o.key_slot, &pbkdf, false)?;
    let token = lukskit_tang::bind(&adv, &pass, slot)
        .map_err(|e| CliError::invalid(format!("Cannot make the clevis token: {e}.")));
    add_token_for_keyslot(o, &mut vol, slot, token)
}

/// The PBKDF of a keyslot whose passphrase is random (256 bits of entropy): like clevis, a
/// cheap PBKDF2 keyslot (1000 iterations) unless the command line asks for another PBKDF.
fn random_passphrase_pbkdf(o: &Opts) -> PbkdfRequest {
    let pbkdf = crate::resolve::pbkdf(o);
    if pbkdf.kind.is_none() && pbkdf.force_iterations.is_none() && pbkdf.iter_time_ms.is_none() {
        return PbkdfRequest {
            kind: Some(PbkdfKind::Pbkdf2),
            force_iterations: Some(1000),
            ..pbkdf
        };
    }
    pbkdf
}

/// Store `token` (made for keyslot `slot`, just added) in the header; when it cannot be made
/// or stored, remove the keyslot again: none is left whose passphrase nobody has.
fn add_token_for_keyslot(
    o: &Opts,
    vol: &mut lukskit_volume::Volume,
    slot: u32,
    token: Result<serde_json::Value>,
) -> Result<()> {
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
            let _ = vol.kill_keyslot(slot);
            Err(e)
        }
    }
}
