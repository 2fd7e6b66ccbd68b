//! cryptsetup 2.6.1's checks of the command line, made before any action runs (and all that
//! `--test-args` runs): option values, which action each option belongs to, and the options
//! that exclude or require each other. Each check gives cryptsetup's message; the caller prints
//! it after the usage text and exits with status 1, as cryptsetup does.
//!
//! The tables were read off cryptsetup 2.6.1 itself (`cryptsetup --test-args ACTION ... --OPT`
//! for every action and option); `tests/cryptsetup_gaps.rs` compares lukskit's answers with
//! the installed cryptsetup's on every command line of upstream's `compat-args-test`.

use crate::args::{parse_device_size, Opts};
use crate::definition::canonical;
use crate::option_tables::{Given, NOT_IMPLEMENTED};

/// The options that belong to some actions only, with those actions (cryptsetup 2.6.1's
/// lists; every other cryptsetup option goes with any action). Sorted by option name, the
/// order in which cryptsetup reports the first misplaced one.
const ACTIONS_OF: &[(&str, &[&str])] = &[
    ("align-payload", &["luksFormat", "reencrypt"]),
    ("allow-discards", &["open"]),
    ("cancel-deferred", &["close"]),
    ("deferred", &["close"]),
    ("device-size", &["open", "resize", "reencrypt"]),
    ("disable-veracrypt", &["open", "tcryptDump"]),
    ("force-offline-reencrypt", &["reencrypt"]),
    ("hotzone-size", &["reencrypt"]),
    ("integrity", &["luksFormat", "reencrypt"]),
    ("integrity-no-wipe", &["luksFormat", "reencrypt"]),
    ("iter-time", PBKDF_ACTIONS),
    ("iv-large-sectors", &["open"]),
    ("keep-key", &["reencrypt"]),
    (
        "key-size",
        &["open", "benchmark", "reencrypt", "luksFormat", "luksAddKey"],
    ),
    (
        "key-slot",
        &[
            "open",
            "reencrypt",
            "luksFormat",
            "luksAddKey",
            "luksChangeKey",
            "luksConvertKey",
            "luksDump",
            "luksResume",
            "token",
            "config",
        ],
    ),
    ("keyslot-cipher", KEYSLOT_ACTIONS),
    ("keyslot-key-size", KEYSLOT_ACTIONS),
    ("label", &["luksFormat", "reencrypt", "config"]),
    ("luks2-keyslots-size", &["luksFormat", "reencrypt"]),
    ("luks2-metadata-size", &["luksFormat", "reencrypt"]),
    ("new-key-slot", &["luksAddKey"]),
    ("new-keyfile", &["luksAddKey"]),
    ("new-token-id", &["luksAddKey"]),
    ("offset", &["open", "reencrypt", "luksFormat"]),
    ("pbkdf", PBKDF_ACTIONS),
    ("pbkdf-force-iterations", KEYSLOT_ACTIONS),
    ("persistent", &["open"]),
    ("priority", &["config"]),
    ("progress-json", &["luksFormat", "reencrypt"]),
    ("refresh", &["open"]),
    ("sector-size", &["open", "reencrypt", "luksFormat"]),
    ("serialize-memory-hard-pbkdf", &["open"]),
    ("shared", &["open"]),
    ("size", &["open", "resize"]),
    ("skip", &["open"]),
    ("subsystem", &["luksFormat", "reencrypt", "config"]),
    ("tcrypt-backup", &["open", "tcryptDump"]),
    ("tcrypt-hidden", &["open", "tcryptDump"]),
    ("tcrypt-system", &["open", "tcryptDump"]),
    ("test-passphrase", &["open"]),
    ("token-replace", &["token"]),
    ("unbound", &["open", "luksAddKey", "luksDump", "token"]),
    ("use-random", &["luksFormat", "reencrypt"]),
    ("use-urandom", &["luksFormat", "reencrypt"]),
    ("uuid", &["luksFormat", "luksUUID", "reencrypt"]),
    ("veracrypt-pim", &["open", "tcryptDump"]),
];

/// Where lukskit takes an option cryptsetup refuses (its own extensions, in the README):
/// `benchmark --sector-size` measures with that sector size.
const EXTENSIONS: &[(&str, &str)] = &[("sector-size", "benchmark")];

const PBKDF_ACTIONS: &[&str] = &[
    "benchmark",
    "reencrypt",
    "luksFormat",
    "luksAddKey",
    "luksChangeKey",
    "luksConvertKey",
];
const KEYSLOT_ACTIONS: &[&str] = &[
    "reencrypt",
    "luksFormat",
    "luksAddKey",
    "luksChangeKey",
    "luksConvertKey",
];

/// cryptsetup's actions (after its aliases), the only ones these checks apply to.
const CRYPTSETUP_ACTIONS: &[&str] = &[
    "open",
    "close",
    "resize",
    "status",
    "benchmark",
    "repair",
    "reencrypt",
    "erase",
    "convert",
    "config",
    "luksFormat",
    "luksAddKey",
    "luksRemoveKey",
    "luksChangeKey",
    "luksConvertKey",
    "luksKillSlot",
    "luksUUID",
    "isLuks",
    "luksDump",
    "tcryptDump",
    "bitlkDump",
    "fvault2Dump",
    "luksSuspend",
    "luksResume",
    "luksHeaderBackup",
    "luksHeaderRestore",
    "token",
];

/// cryptsetup's action and device type for an action name as typed: its aliases
/// (`luksOpen` is `open` of type `luks`, `refresh` is `open --refresh`, ...), then `--type`.
/// None for lukskit's own actions. The device type of `open` without `--type` is `luks`; with
/// `--refresh` there is none (cryptsetup reads it from the active device).
fn resolve(name: &str, o: &Opts, refresh: bool) -> Option<(&'static str, Option<String>)> {
    let typed = o.r#type.clone();
    let (action, alias_type): (&str, Option<&str>) = match name {
        "create" | "plainOpen" => ("open", Some("plain")),
        "luksOpen" => ("open", Some("luks")),
        "loopaesOpen" => ("open", Some("loopaes")),
        "tcryptOpen" => ("open", Some("tcrypt")),
        "bitlkOpen" => ("open", Some("bitlk")),
        "fvault2Open" => ("open", Some("fvault2")),
        "tcryptDump" => ("tcryptDump", Some("tcrypt")),
        "bitlkDump" => ("bitlkDump", Some("bitlk")),
        "fvault2Dump" => ("fvault2Dump", Some("fvault2")),
        "remove" | "plainClose" | "luksClose" | "loopaesClose" | "tcryptClose" | "bitlkClose"
        | "fvault2Close" => ("close", None),
        "luksErase" => ("erase", Some(typed.as_deref().unwrap_or("luks"))),
        "luksConfig" => ("config", Some("luks2")),
        "refresh" => ("open", None),
        other => (CRYPTSETUP_ACTIONS.iter().find(|a| **a == other)?, None),
    };
    let action: &'static str = CRYPTSETUP_ACTIONS.iter().find(|a| **a == action)?;
    let mut ty = alias_type.map(str::to_string).or(typed);
    if action == "open" && ty.is_none() {
        ty = Some("luks".to_string());
    }
    if refresh || name == "refresh" {
        ty = None;
    }
    Some((action, ty))
}

/// The first of cryptsetup's command-line checks that `o` fails, as cryptsetup's message;
/// None when it passes them all (or the action is lukskit's own).
pub fn check(o: &Opts, g: &Given, key_files: usize) -> Option<String> {
    let name = o.positional.first()?.as_str();
    if let Some(e) = value_checks(o, g) {
        return Some(e);
    }
    // luksKillSlot's keyslot argument is cryptsetup's --key-slot: a negative one (after `--`)
    // is refused as such.
    if canonical(name) == Some("luksKillSlot")
        && o.positional.get(2).is_some_and(|s| {
            s.strip_prefix('-')
                .is_some_and(|d| d.starts_with(|c: char| c.is_ascii_digit()))
        })
    {
        return Some("Key slot is invalid.".into());
    }
    let refresh = g.has("refresh") || name == "refresh";
    let Some((action, ty)) = resolve(name, o, refresh) else {
        // lukskit's own actions: only the one key file (TrueCrypt's pool for `image decrypt
        // --type tcrypt`).
        let pool = o.r#type.as_deref() == Some("tcrypt");
        return (key_files > 1 && !pool).then(|| "Only one --key-file argument is allowed.".into());
    };
    for (opt, actions) in ACTIONS_OF {
        if g.has(opt) && !actions.contains(&action) && !EXTENSIONS.contains(&(opt, action)) {
            return Some(format!(
                "Option --{opt} is not allowed with {action} action."
            ));
        }
    }
    let ty = ty.as_deref();
    if key_files > 1 && ty != Some("tcrypt") {
        return Some("Only one --key-file argument is allowed.".into());
    }
    if let Some(p) = &o.pbkdf {
        if lukskit_volume::pbkdf::PbkdfKind::from_name(p).is_none() {
            return Some(
                "Password-based key derivation function (PBKDF) can be only pbkdf2 or \
                 argon2i/argon2id."
                    .into(),
            );
        }
    }
    if o.pbkdf_force_iterations.is_some() && o.iter_time.is_some() {
        return Some(
            "PBKDF forced iterations cannot be combined with iteration time option.".into(),
        );
    }
    if o.keyslot_cipher.is_some() != o.keyslot_key_size.is_some() {
        return Some(
            "Options --keyslot-cipher and --keyslot-key-size must be used together.".into(),
        );
    }
    match action {
        "open" => verify_open(o, g, ty, refresh),
        "tcryptDump" => verify_tcrypt(g, ty),
        "close" if o.cancel_deferred && o.deferred => {
            Some("Options --cancel-deferred and --deferred cannot be used at the same time.".into())
        }
        "resize" if o.device_size.is_some() && o.size.is_some() => {
            Some("Options --device-size and --size cannot be combined.".into())
        }
        "reencrypt" => verify_reencrypt(o, g, ty),
        "config" if o.priority.is_some() && o.key_slot.is_none() => {
            Some("Keyslot specification is required.".into())
        }
        "luksFormat" => verify_format(o, g),
        "luksAddKey" if o.unbound && o.key_size.unwrap_or(0) == 0 => {
            Some("Key size is required with --unbound option.".into())
        }
        "luksDump" if o.unbound && o.key_slot.is_none() => {
            Some("Keyslot specification is required.".into())
        }
        "token" => verify_token(o),
        _ => None,
    }
}

/// The checks cryptsetup makes of an option's value while it parses, in command-line order.
fn value_checks(o: &Opts, g: &Given) -> Option<String> {
    const BAD_NUMBER: &str = "invalid numeric value";
    for opt in &g.options {
        let e: Option<&str> = match opt.as_str() {
            "device-size" => match o.device_size.as_deref().and_then(parse_device_size) {
                None => Some("Invalid size specification in parameter --device-size."),
                Some(0) => Some(BAD_NUMBER),
                Some(n) if n % 512 != 0 => {
                    Some("Device size must be multiple of 512 bytes sector.")
                }
                _ => None,
            },
            "hotzone-size" => match g.value(opt).and_then(parse_device_size) {
                None => Some("Invalid size specification in parameter --hotzone-size."),
                Some(0) => Some("Invalid max reencryption hotzone size specification."),
                _ => None,
            },
            "key-size" => match o.key_size {
                Some(n) if n % 8 != 0 => Some("Key size must be a multiple of 8 bits"),
                _ => None,
            },
            "keyslot-key-size" => match o.keyslot_key_size {
                Some(0) => Some(BAD_NUMBER),
                Some(n) if n % 8 != 0 => Some("Key size must be a multiple of 8 bits"),
                _ => None,
            },
            "reduce-device-size" => match g.value(opt).and_then(parse_device_size) {
                Some(n) if n > 1 << 30 => Some("Maximum device reduce size is 1 GiB."),
                Some(n) if n % 512 != 0 => {
                    Some("Reduce size must be multiple of 512 bytes sector.")
                }
                Some(_) => None,
                None => Some("Invalid size specification in parameter --reduce-device-size."),
            },
            "sector-size" => match o.sector_size {
                Some(n) if !(512..=4096).contains(&n) || !n.is_power_of_two() => {
                    Some("Unsupported encryption sector size.")
                }
                _ => None,
            },
            "priority" => match o.priority.as_deref() {
                Some("normal" | "prefer" | "ignore") | None => None,
                Some(_) => Some("Option --priority can be only ignore/normal/prefer."),
            },
            _ => None,
        };
        if let Some(e) = e {
            return Some(e.to_string());
        }
    }
    None
}

fn verify_open(o: &Opts, g: &Given, ty: Option<&str>, refresh: bool) -> Option<String> {
    // cryptsetup compares a type that may be unknown (open --refresh): no type passes.
    let is_not = |t: &str| ty.is_some_and(|x| x != t);
    let msg = |s: &str| Some(s.to_string());
    if o.persistent && o.test_passphrase {
        return msg("Option --persistent is not allowed with --test-passphrase.");
    }
    if refresh && o.test_passphrase {
        return msg("Options --refresh and --test-passphrase are mutually exclusive.");
    }
    if g.has("shared") && is_not("plain") {
        return msg("Option --shared is allowed only for open of plain device.");
    }
    if o.skip.is_some() && is_not("plain") && is_not("loopaes") {
        return msg("Option --skip is supported only for open of plain and loopaes devices.");
    }
    if o.offset.is_some() && is_not("plain") && is_not("loopaes") {
        return msg(
            "Option --offset with open action is only supported for plain and loopaes devices.",
        );
    }
    if g.has("tcrypt-hidden") && o.allow_discards {
        return msg("Option --tcrypt-hidden cannot be combined with --allow-discards.");
    }
    if o.sector_size.is_some() && ty != Some("plain") {
        return msg("Sector size option with open action is supported only for plain devices.");
    }
    if o.iv_large_sectors && (ty != Some("plain") || o.sector_size.unwrap_or(512) <= 512) {
        return msg(
            "Large IV sectors option is supported only for opening plain type device with \
             sector size larger than 512 bytes.",
        );
    }
    if o.test_passphrase
        && ty
            .is_some_and(|t| !t.starts_with("luks") && !["tcrypt", "bitlk", "fvault2"].contains(&t))
    {
        return msg(
            "Option --test-passphrase is allowed only for open of LUKS, TCRYPT, BITLK and \
             FVAULT2 devices.",
        );
    }
    if o.device_size.is_some() && o.size.is_some() {
        return msg("Options --device-size and --size cannot be combined.");
    }
    if o.unbound && ty.is_some_and(|t| !t.starts_with("luks")) {
        return msg("Option --unbound is allowed only for open of luks device.");
    }
    if o.unbound && !o.test_passphrase {
        return msg("Option --unbound cannot be used without --test-passphrase.");
    }
    verify_tcrypt(g, ty)
}

fn verify_tcrypt(g: &Given, ty: Option<&str>) -> Option<String> {
    let tcrypt = ty == Some("tcrypt");
    let msg = |s: &str| Some(s.to_string());
    if (g.has("tcrypt-hidden") || g.has("tcrypt-system") || g.has("tcrypt-backup")) && !tcrypt {
        return msg(
            "Option --tcrypt-hidden, --tcrypt-system or --tcrypt-backup is supported only for \
             TCRYPT device.",
        );
    }
    if (g.has("veracrypt") || g.has("disable-veracrypt")) && !tcrypt {
        return msg(
            "Option --veracrypt or --disable-veracrypt is supported only for TCRYPT device type.",
        );
    }
    if g.has("veracrypt-pim") && g.has("disable-veracrypt") {
        return msg("Option --veracrypt-pim is supported only for VeraCrypt compatible devices.");
    }
    if g.has("veracrypt-query-pim") {
        if g.has("disable-veracrypt") {
            return msg(
                "Option --veracrypt-query-pim is supported only for VeraCrypt compatible devices.",
            );
        }
        if g.has("veracrypt-pim") {
            return msg(
                "The options --veracrypt-pim and --veracrypt-query-pim are mutually exclusive.",
            );
        }
    }
    None
}

fn verify_reencrypt(o: &Opts, g: &Given, ty: Option<&str>) -> Option<String> {
    if g.has("reduce-device-size") && o.device_size.is_some() {
        return Some("Options --reduce-device-size and --data-size cannot be combined.".into());
    }
    if g.has("active-name") && ty == Some("luks1") {
        return Some("Option --active-name can be set only for LUKS2 device.".into());
    }
    if g.has("active-name") && g.has("force-offline-reencrypt") {
        return Some(
            "Options --active-name and --force-offline-reencrypt cannot be combined.".into(),
        );
    }
    None
}

fn verify_format(o: &Opts, g: &Given) -> Option<String> {
    if o.align_payload.is_some() && o.offset.is_some() {
        return Some("Options --align-payload and --offset cannot be combined.".into());
    }
    if g.has("integrity-no-wipe") && !g.has("integrity") {
        return Some(
            "Option --integrity-no-wipe can be used only for format action with integrity \
             extension."
                .into(),
        );
    }
    if g.has("use-random") && g.has("use-urandom") {
        return Some("Only one of --use-[u]random options is allowed.".into());
    }
    None
}

fn verify_token(o: &Opts) -> Option<String> {
    let sub = o.positional.get(1).map_or("", String::as_str);
    if ![
        "add",
        "remove",
        "import",
        "export",
        "unassign",
        "bind-tang",
        "bind-clevis",
        "enroll-tpm2",
        "unenroll",
    ]
    .contains(&sub)
    {
        return Some("Invalid token action.".into());
    }
    if sub == "add" && o.key_description.is_none() {
        return Some("--key-description parameter is mandatory for token add action.".into());
    }
    if o.token_id.is_none() && (sub == "remove" || sub == "export") {
        return Some("Action requires specific token. Use --token-id parameter.".into());
    }
    if o.unbound {
        if sub != "add" {
            return Some("Option --unbound is valid only with token add action.".into());
        }
        if o.key_slot.is_some() {
            return Some("Options --key-slot and --unbound cannot be combined.".into());
        }
    }
    if sub == "unassign" {
        if o.key_slot.is_none() {
            return Some("Action requires specific keyslot. Use --key-slot parameter.".into());
        }
        if o.token_id.is_none() {
            return Some("Action requires specific token. Use --token-id parameter.".into());
        }
    }
    None
}

/// The first [`NOT_IMPLEMENTED`] option given that the action would need (all of them but
/// `--use-random`/`--use-urandom`, see the README): the message an action run fails with.
pub fn not_implemented(g: &Given) -> Option<String> {
    g.options
        .iter()
        .find(|opt| NOT_IMPLEMENTED.iter().any(|(n, _, _)| n == opt))
        .map(|opt| format!("Option --{opt} is not supported by lukskit."))
}
