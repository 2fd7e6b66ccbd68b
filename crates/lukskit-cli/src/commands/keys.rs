//! Keyslot actions: luksAddKey, luksRemoveKey, luksChangeKey,
//! luksConvertKey, luksKillSlot.

use super::{existing_key_source, need_args, tries};
use crate::args::Opts;
use crate::errors::{self, CliError, Result};
use crate::input::{self, KeySource};
use lukskit_crypto::SecretBuf;
use lukskit_volume::device::Access;
use lukskit_volume::Volume;

/// Ask for a passphrase (with `--tries` attempts on a terminal) until one unlocks.
/// Returns the keyslot, the volume key and the passphrase.
pub(super) fn unlock_with_tries(
    vol: &Volume,
    o: &Opts,
    src: &KeySource,
    prompt: &str,
    slot: Option<u32>,
    unbound: bool,
) -> Result<(u32, SecretBuf, SecretBuf)> {
    unlock_with_attempts(vol, tries(o, src), src, prompt, slot, unbound)
}

/// [`unlock_with_tries`] with the number of attempts `n` given.
pub(super) fn unlock_with_attempts(
    vol: &Volume,
    n: u32,
    src: &KeySource,
    prompt: &str,
    slot: Option<u32>,
    unbound: bool,
) -> Result<(u32, SecretBuf, SecretBuf)> {
    for attempt in 0..n {
        let pass = input::get_secret(src, prompt, false)?;
        crate::debug::log(format_args!(
            "Checking volume passphrase [keyslot {}] using passphrase.",
            slot.map_or(-1, i64::from)
        ));
        let res = vol.unlock(pass.as_bytes(), slot, unbound);
        log_unlock(&res);
        match res {
            Ok((s, vk)) => return Ok((s, vk, pass)),
            Err(e) if errors::is_wrong_passphrase(&e) && attempt + 1 < n => {
                eprintln!("{}", errors::volume(&e).message);
            }
            Err(e) => return Err(e.into()),
        }
    }
    Err(CliError::wrong_passphrase())
}

/// `--debug`: which keyslot a passphrase opened, or why none did.
fn log_unlock<T>(res: &lukskit_volume::Result<(u32, T)>) {
    match res {
        Ok((s, _)) => crate::debug::log(format_args!("Keyslot {s} unlocked.")),
        Err(e) => crate::debug::log(format_args!(
            "No keyslot unlocked: {}",
            errors::volume(e).message
        )),
    }
}

fn new_key_source(o: &Opts, positional: Option<&String>) -> KeySource {
    match positional.or(o.new_keyfile.as_ref()) {
        Some(p) => KeySource::File {
            path: p.clone(),
            offset: o.new_keyfile_offset.unwrap_or(0),
            size: o.new_keyfile_size,
        },
        None => KeySource::Prompt,
    }
}

/// `luksAddKey <device> [<new key file>]`.
pub fn add_key(o: &Opts, args: &[String]) -> Result<()> {
    need_args(args, 1, 2, "<device> [<new key file>]")?;
    let device = &args[0];
    let mut vol = super::load_volume(o, device, Access::Write)?;
    // cryptsetup refuses a header whose requirements forbid the update before it tries
    // the passphrase (a wrong one then does not matter).
    vol.check_requirements_for_write()?;
    // cryptsetup 2.6: --key-slot names the new keyslot for luksAddKey (with a warning);
    // --new-key-slot is the explicit spelling.
    let new_slot = match (o.new_key_slot, o.key_slot) {
        (Some(n), _) => Some(n),
        (None, Some(k)) => Some(k),
        (None, None) => None,
    };
    if let Some(s) = new_slot {
        if o.new_key_slot.is_none() && !o.batch_mode && !o.unbound {
            // cryptsetup prints this on standard output, before it checks the keyslot, and
            // not with -q (nor for an unbound key, which it adds before it gets there).
            println!("WARNING: The --key-slot parameter is used for new keyslot number.");
        }
        vol.check_new_keyslot(s)?;
    } else if !o.unbound {
        vol.free_keyslot()?;
    }
    let key: SecretBuf = if let Some(vkf) = &o.volume_key_file {
        let bytes = match (o.unbound, o.key_size) {
            (true, Some(bits)) => (bits / 8) as usize,
            _ => super::volume_key::volume_key_bytes(&vol, o.key_size)?,
        };
        let vk = super::volume_key::read_volume_key_file(vkf, bytes)?;
        if !o.unbound {
            vol.verify_volume_key(vk.as_bytes())?;
        }
        vk
    } else if o.unbound {
        let bits = o.key_size.ok_or_else(|| {
            CliError::invalid("Cannot determine volume key size for LUKS without keyslots, please use --key-size option.")
        })?;
        SecretBuf::random((bits / 8) as usize)?
    } else if o.token_id.is_some() {
        // cryptsetup 2.6: --token-id unlocks through that token only (with --new-key-slot,
        // --key-slot names the keyslot it must open).
        let mut tokens = crate::resolve::tokens(o);
        tokens.only = true;
        tokens.request.key_slot = o.new_key_slot.and(o.key_slot);
        let (slot, vk) = super::tokens::try_tokens(&vol, &tokens, o.verbose)?
            .ok_or_else(|| CliError::invalid(""))?;
        if o.verbose {
            println!("Key slot {slot} unlocked.");
        }
        vk
    } else {
        // With --new-key-slot, --key-slot names the keyslot the passphrase must open; one
        // that is not in use fails as in cryptsetup: exit 1, nothing said.
        let old_slot = o.new_key_slot.and(o.key_slot);
        if let Some(s) = old_slot {
            if s >= vol.max_keyslots() || !vol.keyslot_active(s)? {
                return Err(CliError::invalid(""));
            }
        }
        let src = existing_key_source(o, None);
        let (_, vk, _) = unlock_with_tries(
            &vol,
            o,
            &src,
            "Enter any existing passphrase: ",
            old_slot,
            false,
        )?;
        // Ctrl-C while the passphrase was read from a pipe: stop before writing, as
        // cryptsetup does.
        crate::interrupt::stop_if_interrupted()?;
        vk
    };
    // --new-token-id: the new keyslot takes the passphrase that token holds, and the token
    // is assigned to it.
    let new_pass = match o.new_token_id {
        Some(id) => super::tokens::token_passphrase(&vol, o, id)?,
        None => {
            let new_src = new_key_source(o, args.get(1));
            let verify = o.verify_passphrase || !o.batch_mode;
            input::get_secret(&new_src, "Enter new passphrase for key slot: ", verify)?
        }
    };
    let slot = vol.add_keyslot(
        &key,
        new_pass.as_bytes(),
        new_slot,
        &crate::resolve::pbkdf(o),
        o.unbound,
    )?;
    if o.verbose {
        println!("Key slot {slot} created.");
    }
    if let Some(id) = o.new_token_id {
        super::tokens::assign_token(&mut vol, id, slot)?;
    }
    Ok(())
}

/// `luksRemoveKey <device> [<key file>]`.
pub fn remove_key(o: &Opts, args: &[String]) -> Result<()> {
    need_args(args, 1, 2, "<device> [<key file>]")?;
    let device = &args[0];
    let mut vol = super::load_volume(o, device, Access::Write)?;
    let src = existing_key_source(o, args.get(1));
    let (slot, _vk, _) = unlock_with_tries(
        &vol,
        o,
        &src,
        "Enter passphrase to be deleted: ",
        o.key_slot,
        false,
    )?;
    // Ctrl-C while the passphrase was read from a pipe: stop before writing, as
    // cryptsetup does.
    crate::interrupt::stop_if_interrupted()?;
    if o.verbose {
        println!("Key slot {slot} unlocked.");
        println!("Keyslot {slot} is selected for deletion.");
    }
    if vol.active_keyslots()?.len() == 1 {
        input::confirm_or(
            "This is the last keyslot. Device will become unusable after purging this key.",
            o.batch_mode || matches!(src, KeySource::File { .. }),
            not_wiped(),
        )?;
    }
    vol.kill_keyslot(slot)?;
    if o.verbose {
        println!("Key slot {slot} removed.");
    }
    Ok(())
}

/// `luksChangeKey <device> [<new key file>]`: the new passphrase goes to a free keyslot
/// first, then the old one is destroyed (LUKS2 and LUKS1 alike), so a crash in between
/// leaves both working; with `--key-slot` the keyslot is rewritten in place.
pub fn change_key(o: &Opts, args: &[String]) -> Result<()> {
    need_args(args, 1, 2, "<device> [<new key file>]")?;
    let device = &args[0];
    let mut vol = super::load_volume(o, device, Access::Write)?;
    // cryptsetup changes the passphrase of an unbound keyslot named with --key-slot too.
    let unbound_slot = match o.key_slot {
        Some(s) => vol.keyslot_unbound(s)?,
        None => false,
    };
    let src = existing_key_source(o, None);
    let (old_slot, vk, _) = unlock_with_tries(
        &vol,
        o,
        &src,
        "Enter passphrase to be changed: ",
        o.key_slot,
        unbound_slot,
    )?;
    // Ctrl-C while the passphrase was read from a pipe: stop before writing, as
    // cryptsetup does.
    crate::interrupt::stop_if_interrupted()?;
    if o.verbose {
        println!("Key slot {old_slot} unlocked.");
    }
    // During a LUKS2 re-encryption cryptsetup 2.6.1 opens the keyslot, then finds that the
    // other volume key (of the re-encryption's other digest) was not unlocked with it and
    // fails silently (exit 1, "Key (digest id N) required but not unlocked." only in its
    // debug output).
    if let Some(other) = vol.reencryption_other_digest(old_slot)? {
        crate::debug::log(format_args!(
            "Key (digest id {other}) required but not unlocked."
        ));
        return Err(CliError::invalid(""));
    }
    let new_src = new_key_source(o, args.get(1));
    let verify = o.verify_passphrase || !o.batch_mode;
    let new_pass = input::get_secret(&new_src, "Enter new passphrase: ", verify)?;
    // As cryptsetup: with --key-slot the keyslot is rewritten in place, otherwise the new
    // passphrase goes to the first free keyslot (in place when none is free).
    let new_slot = vol.change_keyslot(
        old_slot,
        &vk,
        new_pass.as_bytes(),
        &crate::resolve::pbkdf(o),
        o.key_slot.is_some(),
    )?;
    if o.verbose {
        println!("Key slot {new_slot} created.");
    }
    Ok(())
}

/// `luksConvertKey <device>`: re-protect a LUKS2 keyslot with new PBKDF parameters.
pub fn convert_key(o: &Opts, args: &[String]) -> Result<()> {
    need_args(args, 1, 2, "<device> [<key file>]")?;
    let device = &args[0];
    let mut vol = super::load_luks2_volume(o, device, Access::Write)?;
    if vol.type_name() != "LUKS2" {
        return Err(CliError::invalid(
            "Invalid LUKS type, only luks2 is supported.",
        ));
    }
    // As cryptsetup: a keyslot number in range that holds no keyslot is named as such (one
    // out of range finds no usable keyslot below).
    if let Some(s) = o.key_slot {
        if s < vol.max_keyslots() && !vol.keyslot_active(s)? {
            return Err(CliError::invalid(format!("Keyslot {s} is not active.")));
        }
    }
    // An unbound keyslot named with --key-slot converts as well.
    let unbound_slot = match o.key_slot {
        Some(s) => vol.keyslot_unbound(s)?,
        None => false,
    };
    // As luksAddKey: the requirements are checked before the passphrase.
    vol.check_requirements_for_write()?;
    // cryptsetup 2.6.1 takes the passphrase from --key-file or the prompt only: a second
    // positional argument is accepted and ignored.
    let src = existing_key_source(o, None);
    let (old_slot, vk, pass) = unlock_with_tries(
        &vol,
        o,
        &src,
        "Enter passphrase for keyslot to be converted: ",
        o.key_slot,
        unbound_slot,
    )?;
    let slot = vol.change_keyslot(
        old_slot,
        &vk,
        pass.as_bytes(),
        &crate::resolve::pbkdf(o),
        true,
    )?;
    if o.verbose {
        println!("Key slot {slot} created.");
    }
    Ok(())
}

/// `luksKillSlot <device> <slot>`.
pub fn kill_slot(o: &Opts, args: &[String]) -> Result<()> {
    need_args(args, 2, 2, "<device> <key slot>")?;
    let device = &args[0];
    // As cryptsetup 2.6.1, which reads the number with atoi(): its leading digits ("abc" is
    // keyslot 0), and a number beyond the keyslots fails without a word (exit 1).
    let digits: String = args[1].chars().take_while(char::is_ascii_digit).collect();
    let slot: u32 = if digits.is_empty() {
        0
    } else {
        digits.parse().unwrap_or(u32::MAX)
    };
    let mut vol = super::load_volume(o, device, Access::Write)?;
    if slot >= vol.max_keyslots() {
        return Err(CliError::invalid(String::new()));
    }
    if !vol.keyslot_active(slot)? {
        return Err(CliError::invalid(format!("Keyslot {slot} is not active.")));
    }
    let active = vol.active_keyslots()?;
    let last = active.len() == 1;
    // As cryptsetup's verify_keyslot: unless -q is given with a terminal on standard input and
    // no key file, a passphrase must be supplied that opens ANOTHER keyslot (the slot itself
    // when it is the last one, after a confirmation).
    if !o.batch_mode || o.key_file.is_some() || !input::interactive() {
        if last {
            input::confirm_or(
                "This is the last keyslot. Device will become unusable after purging this key.",
                o.batch_mode || o.key_file.is_some(),
                not_wiped(),
            )?;
        }
        let src = existing_key_source(o, None);
        let from_stdin = match &src {
            KeySource::Prompt | KeySource::Line { .. } => true,
            KeySource::File { path, .. } => path == "-",
        };
        let pass = match input::get_secret(&src, "Enter any remaining passphrase: ", false) {
            Ok(p) => p,
            // cryptsetup ignores a passphrase that standard input could not give ("Failed
            // read from input, ignoring passphrase.") and wipes the keyslot.
            Err(e) if from_stdin && e.is_nothing_to_read() => {
                eprintln!("{}", e.message);
                crate::debug::log("Failed read from input, ignoring passphrase.");
                return kill(&mut vol, o, slot);
            }
            Err(e) => return Err(e),
        };
        let candidates: Vec<u32> = if last {
            vec![slot]
        } else {
            active.into_iter().filter(|&s| s != slot).collect()
        };
        let mut opened = None;
        for s in candidates {
            crate::debug::log(format_args!("Trying to open keyslot {s}."));
            match vol.unlock(pass.as_bytes(), Some(s), false) {
                Ok(_) => {
                    opened = Some(s);
                    break;
                }
                Err(e) if errors::is_wrong_passphrase(&e) => {}
                Err(e) => return Err(e.into()),
            }
        }
        let Some(s) = opened else {
            return Err(CliError::wrong_passphrase());
        };
        crate::debug::log(format_args!("Keyslot {s} unlocked."));
    }
    kill(&mut vol, o, slot)
}

fn kill(vol: &mut Volume, o: &Opts, slot: u32) -> Result<()> {
    if o.verbose {
        println!("Keyslot {slot} is selected for deletion.");
    }
    vol.kill_keyslot(slot)?;
    if o.verbose {
        println!("Key slot {slot} removed.");
    }
    Ok(())
}

/// cryptsetup's answer when the removal of the last keyslot is not confirmed.
fn not_wiped() -> CliError {
    input::refused("Operation aborted, the keyslot was NOT wiped.", true)
}
