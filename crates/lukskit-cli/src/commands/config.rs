//! `config`, `repair` and `token`.

use super::need_args;
use crate::args::Opts;
use crate::errors::{CliError, Result};
use crate::input;
use lukskit_volume::device::Access;
use lukskit_volume::edit::parse_priority;
use lukskit_volume::{KeyslotError, Volume, VolumeError};
use std::io::Read;

/// `config <device> [--label L] [--subsystem S] [--priority P --key-slot N]`.
pub fn config(o: &Opts, args: &[String]) -> Result<()> {
    need_args(args, 1, 1, "<device>")?;
    let mut vol = super::load_luks2_volume(o, &args[0], Access::Write)?;
    if o.priority.is_none() && o.label.is_none() && o.subsystem.is_none() {
        return Err(CliError::invalid(
            "Option --priority, --label or --subsystem is missing.",
        ));
    }
    if let Some(p) = &o.priority {
        let prio = parse_priority(p)?;
        let slot = o
            .key_slot
            .ok_or_else(|| CliError::invalid("Keyslot specification is required."))?;
        // cryptsetup 2.6.1 says nothing when the keyslot is not in use (exit 1).
        vol.set_priority(slot, prio).map_err(|e| match e {
            VolumeError::Keyslot(KeyslotError::NotActive { .. }) => CliError::from(e).silenced(),
            e => CliError::from(e),
        })?;
    }
    if o.label.is_some() || o.subsystem.is_some() {
        // cryptsetup sets both at once (crypt_set_label): the one not given is cleared.
        vol.set_label_subsystem(
            Some(o.label.as_deref().unwrap_or("")),
            Some(o.subsystem.as_deref().unwrap_or("")),
        )?;
    }
    Ok(())
}

/// `repair <device>`, as cryptsetup 2.6.1 does it: a header that loads needs no repair (a
/// damaged LUKS2 copy is restored from the good one without a word); otherwise, after a
/// confirmation, the LUKS1 repair reports what it finds and fixes, and the repaired header
/// must then pass the checks of every load.
pub fn repair(o: &Opts, args: &[String]) -> Result<()> {
    use lukskit_format::Luks1RepairNote;
    use lukskit_volume::edit::RepairNote;
    need_args(args, 1, 1, "<device>")?;
    let mut vol = Volume::load_as_is(&args[0], o.header.as_deref(), Access::Write)?;
    let Err(problem) = vol.validate() else {
        let report = vol.repair();
        for n in &report.notes {
            crate::debug::log(crate::errors::repair_note(n));
        }
        report.result?;
        if o.verbose {
            println!("No known problems detected for LUKS header.");
        }
        reencrypt_state_known(&vol)?;
        return super::reencrypt::repair_verify_clean(o, &vol);
    };
    // cryptsetup's first load shows its messages only with -v.
    let problem = crate::errors::problem_only(problem);
    if o.verbose && !problem.message.is_empty() {
        eprintln!("{}", problem.message);
    }
    input::confirm("Really try to repair LUKS device header?", o.batch_mode)?;
    let report = vol.repair();
    let found = report.notes.iter().any(|n| {
        matches!(
            n,
            RepairNote::Luks1(Luks1RepairNote::Problem(_))
                | RepairNote::Luks1(Luks1RepairNote::InvalidCipherMode { .. })
        )
    });
    if o.verbose {
        println!(
            "{}",
            if found {
                "Repairing keyslots."
            } else {
                "No known problems detected for LUKS header."
            }
        );
    }
    for n in &report.notes {
        eprintln!("{}", crate::errors::repair_note(n));
    }
    match report.result {
        // What stopped the repair is the last of its notes (a cipher the repair cannot
        // test-decrypt stops it silently, as in cryptsetup).
        Err(e) => {
            crate::debug::log(crate::errors::volume(&e).message);
            return Err(CliError::new(
                crate::errors::volume(&e).class,
                String::new(),
            ));
        }
        Ok(true) if o.verbose => println!("Writing LUKS header to disk."),
        Ok(_) => {}
    }
    // cryptsetup loads the repaired header again, with every check.
    vol.validate().map_err(crate::errors::problem_only)?;
    reencrypt_state_known(&vol)?;
    super::reencrypt::repair_verify_clean(o, &vol)
}

/// After a LUKS2 header loads (or was repaired), cryptsetup's `repair` looks at the
/// re-encryption state (`crypt_reencrypt_status`): with a requirement other than the online
/// re-encryption ones it knows (a future `online-reencrypt-v999`, `offline-reencrypt`, any
/// unknown one) the state is invalid and `repair` fails with -EINVAL (exit 1, no message).
fn reencrypt_state_known(vol: &Volume) -> Result<()> {
    const ONLINE: [&str; 3] = [
        "online-reencrypt",
        "online-reencrypt-v2",
        "online-reencrypt-v3",
    ];
    match vol.header() {
        lukskit_volume::Header::Luks2(h)
            if h.requirements()
                .iter()
                .any(|r| !ONLINE.contains(&r.as_str())) =>
        {
            Err(CliError::invalid(String::new()))
        }
        _ => Ok(()),
    }
}

/// `token add|remove|import|export|unassign <device>`.
pub fn token(o: &Opts, args: &[String]) -> Result<()> {
    if args.first().map(String::as_str) == Some("bind-clevis") {
        // `bind-clevis <device> <pin> [<config>]`, as `clevis luks bind`.
        return super::enroll::bind_clevis(o, args);
    }
    need_args(
        args,
        2,
        2,
        "<add|remove|import|export|unassign|bind-tang|bind-clevis|enroll-tpm2|unenroll> <device>",
    )?;
    let device = &args[1];
    match args[0].as_str() {
        "bind-tang" => super::enroll::bind_tang(o, args),
        "enroll-tpm2" => super::enroll::enroll_tpm2(o, args),
        "unenroll" => super::enroll::unenroll(o, args),
        "add" => {
            let desc = o.key_description.as_deref().ok_or_else(|| {
                CliError::invalid("--key-description parameter is mandatory for token add action.")
            })?;
            let mut vol = super::load_luks2_volume(o, device, Access::Write)?;
            let active = vol.active_keyslots()?;
            if let Some(slot) = o.key_slot {
                // cryptsetup checks before it adds anything: a keyslot number in range that
                // is not active, then one out of range (named with the token it would add).
                if slot >= vol.max_keyslots() {
                    let id = match o.token_id {
                        Some(id) => id,
                        None => first_free_token(&vol)?,
                    };
                    return Err(CliError::invalid(format!(
                        "Failed to assign token {id} to keyslot {slot}."
                    )));
                }
                if !active.contains(&slot) {
                    return Err(CliError::invalid(format!("Keyslot {slot} is not active.")));
                }
            }
            // cryptsetup adds the token, then assigns it to the given keyslot or to every
            // active keyslot: two header updates.
            let token = lukskit_format::luks2::keyring_token(desc, &[]);
            let id = vol.token_add(o.token_id, token, o.token_replace)?;
            // --unbound: a token assigned to no keyslot.
            let slots = match o.key_slot {
                Some(slot) => vec![slot],
                None if o.unbound => Vec::new(),
                None => active,
            };
            vol.token_set_keyslots(id, &slots)?;
            if o.verbose {
                println!("Token {id} created.");
            }
            Ok(())
        }
        "unassign" => {
            // Checked by the usage checks: both are given.
            let (Some(id), Some(slot)) = (o.token_id, o.key_slot) else {
                return Err(CliError::invalid(
                    "Action requires specific token. Use --token-id parameter.",
                ));
            };
            let mut vol = super::load_luks2_volume(o, device, Access::Write)?;
            let failed = || {
                CliError::invalid(format!(
                    "Failed to unassign token {id} from keyslot {slot}."
                ))
            };
            let token = match vol.header() {
                lukskit_volume::Header::Luks2(h) => h.tokens()?.into_iter().find(|t| t.id == id),
                lukskit_volume::Header::Luks1(_) => None,
            };
            // As cryptsetup's crypt_token_is_assigned: numbers out of range are an error of
            // their own; a missing token, an inactive keyslot or a keyslot the token does not
            // name are all "not assigned".
            if slot >= vol.max_keyslots() || id >= lukskit_format::luks2::MAX_TOKENS {
                return Err(failed());
            }
            let not_assigned =
                || CliError::invalid(format!("Token {id} is not assigned to keyslot {slot}."));
            let Some(token) = token else {
                return Err(not_assigned());
            };
            if !vol.active_keyslots()?.contains(&slot) || !token.keyslots.contains(&slot) {
                return Err(not_assigned());
            }
            let remaining: Vec<u32> = token
                .keyslots
                .iter()
                .copied()
                .filter(|&s| s != slot)
                .collect();
            vol.token_set_keyslots(id, &remaining)?;
            Ok(())
        }
        "remove" => {
            let id = o.token_id.ok_or_else(|| {
                CliError::invalid("Action requires specific token. Use --token-id parameter.")
            })?;
            let mut vol = super::load_luks2_volume(o, device, Access::Write)?;
            if id >= lukskit_format::luks2::MAX_TOKENS {
                return Err(CliError::invalid(format!("Token {id} is invalid.")));
            }
            vol.token_remove(id)?;
            if o.verbose {
                println!("Token {id} removed.");
            }
            Ok(())
        }
        "import" => {
            // At most 4 MiB (and one byte to see that there is more) is ever read.
            const MAX_JSON: u64 = 4 * 1024 * 1024;
            let mut text = String::new();
            match &o.json_file {
                Some(f) if f != "-" => {
                    std::fs::File::open(f)
                        .and_then(|file| file.take(MAX_JSON + 1).read_to_string(&mut text))
                        .map_err(|e| CliError::io("Reading JSON file", f, &e))?;
                }
                _ => {
                    std::io::stdin()
                        .take(MAX_JSON + 1)
                        .read_to_string(&mut text)
                        .map_err(|e| {
                            CliError::invalid(format!(
                                "Failed to read JSON from standard input: {e}."
                            ))
                        })?;
                }
            }
            if text.len() as u64 > MAX_JSON {
                return Err(CliError::invalid("JSON file is too large."));
            }
            let mut token: serde_json::Value = serde_json::from_str(text.trim_end())
                .map_err(|_| CliError::invalid("Failed to import token from file."))?;
            if let Some(slot) = o.key_slot {
                token = lukskit_format::luks2::token_with_keyslot(token, slot);
            }
            let mut vol = super::load_luks2_volume(o, device, Access::Write)?;
            if let Some(slot) = o.key_slot {
                if slot < vol.max_keyslots() && !vol.keyslot_active(slot)? {
                    return Err(CliError::invalid(format!("Keyslot {slot} is not active.")));
                }
            }
            if let Some(id) = o
                .token_id
                .filter(|&id| id >= lukskit_format::luks2::MAX_TOKENS)
            {
                return Err(CliError::invalid(format!("Token {id} is invalid.")));
            }
            const FAILED: &str = "Failed to import token from file.";
            let id = vol
                .token_add(o.token_id, token, o.token_replace)
                .map_err(|e| match e {
                    // A token the header's rules refuse: cryptsetup's one line for all of
                    // them (`--debug` says why).
                    lukskit_volume::VolumeError::Format(f) => {
                        crate::debug::log(format_args!("Token refused: {f}."));
                        CliError::invalid(FAILED)
                    }
                    // cryptsetup adds its own line when the header refuses the update.
                    e @ lukskit_volume::VolumeError::Requirements(_) => {
                        let mut err = CliError::from(e);
                        err.message.push('\n');
                        err.message.push_str(FAILED);
                        err
                    }
                    e => CliError::from(e),
                })?;
            if o.verbose {
                println!("Token {id} created.");
            }
            Ok(())
        }
        "export" => {
            let id = o.token_id.ok_or_else(|| {
                CliError::invalid("Action requires specific token. Use --token-id parameter.")
            })?;
            let vol = super::load_luks2_volume(o, device, Access::Read)?;
            let json = vol.token_export(id)?;
            match &o.json_file {
                // cryptsetup writes the JSON without a final newline.
                // A new file is made 0600, as by cryptsetup (a token may hold key material).
                Some(f) if f != "-" => {
                    use std::io::Write;
                    use std::os::unix::fs::OpenOptionsExt;
                    let mut out = std::fs::OpenOptions::new()
                        .write(true)
                        .create(true)
                        .truncate(true)
                        .mode(0o600)
                        .open(f)
                        .map_err(|_| {
                            CliError::invalid(format!("Failed to open file {f} in write mode."))
                        })?;
                    out.write_all(json.as_bytes())
                        .map_err(|e| CliError::io("Writing JSON file", f, &e))
                }
                _ => {
                    print!("{json}");
                    Ok(())
                }
            }
        }
        other => Err(CliError::invalid(format!("Invalid token action {other}."))),
    }
}

/// The token id cryptsetup gives a new token (and names in its errors): the first one not in
/// use, or [`lukskit_format::luks2::MAX_TOKENS`] when none is free.
fn first_free_token(vol: &lukskit_volume::Volume) -> Result<u32> {
    let free = match vol.header() {
        lukskit_volume::Header::Luks2(h) => h.free_token_id()?,
        lukskit_volume::Header::Luks1(_) => Some(0),
    };
    Ok(free.unwrap_or(lukskit_format::luks2::MAX_TOKENS))
}
