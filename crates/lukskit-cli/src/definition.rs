//! The one definition of lukskit's command line that `--help`, `--usage`, per-action help, the
//! man page and the shell completions are all generated from: clap's command built from
//! [`Opts`] (with cryptsetup's value names and option groups added here) and the action table
//! [`ACTIONS`].

use crate::args::Opts;
use clap::{Arg, ArgAction, Command, CommandFactory, ValueHint};

/// One line of the action list: the action, its arguments and what it does.
pub struct Action {
    /// The action as typed (`image` actions have a second word: `image encrypt`).
    pub name: &'static str,
    /// Its arguments, as cryptsetup writes them.
    pub args: &'static str,
    /// What it does.
    pub about: &'static str,
    /// The options (clap argument ids) it honours, besides [`COMMON`].
    pub options: &'static [&'static [&'static str]],
}

impl Action {
    /// The option ids of this action (its own, then [`COMMON`]), each once.
    pub fn option_ids(&self) -> Vec<&'static str> {
        let mut v: Vec<&'static str> = Vec::new();
        for id in self
            .options
            .iter()
            .flat_map(|g| g.iter())
            .chain(COMMON.iter())
        {
            if !v.contains(id) {
                v.push(id);
            }
        }
        v
    }
}

/// Options every action honours.
pub const COMMON: &[&str] = &[
    "verbose",
    "debug",
    "batch_mode",
    "test_args",
    "disable_locks",
];

/// Options of the passphrase that unlocks an existing keyslot.
const KEY_IN: &[&str] = &[
    "key_file",
    "keyfile_offset",
    "keyfile_size",
    "key_slot",
    "tries",
    "timeout",
    "header",
];

/// Options of a new keyslot's PBKDF.
const PBKDF: &[&str] = &[
    "pbkdf",
    "hash",
    "iter_time",
    "pbkdf_memory",
    "pbkdf_parallel",
    "pbkdf_force_iterations",
    "keyslot_cipher",
    "keyslot_key_size",
];

/// Options of a new volume's layout (luksFormat, image encrypt).
const LAYOUT: &[&str] = &[
    "type",
    "cipher",
    "key_size",
    "key_slot",
    "volume_key_file",
    "header",
    "offset",
    "sector_size",
    "label",
    "subsystem",
    "uuid",
    "luks2_metadata_size",
    "luks2_keyslots_size",
    "verify_passphrase",
    "key_file",
    "keyfile_offset",
    "keyfile_size",
];

/// Every action lukskit has, in the order of cryptsetup's list (lukskit's own last).
pub const ACTIONS: &[Action] = &[
    Action {
        name: "open",
        args: "<device> [--type <type>] [<name>]",
        about: "open device as <name>",
        options: &[
            KEY_IN,
            &[
                "type",
                "readonly",
                "allow_discards",
                "test_passphrase",
                "volume_key_file",
                "verify_passphrase",
                "cipher",
                "key_size",
                "hash",
                "offset",
                "skip",
                "size",
                "sector_size",
                "iv_large_sectors",
                "shared",
                "backend",
                "no_loop",
                "nbd",
                "nbd_connections",
                "tls_creds",
                "tls",
                "tls_verify_peer",
                "perf_same_cpu_crypt",
                "perf_submit_from_crypt_cpus",
                "perf_no_read_workqueue",
                "perf_no_write_workqueue",
                "integrity_no_journal",
                "persistent",
                "refresh",
                "token_id",
                "token_only",
                "token_type",
                "tpm2_device",
                "token_timeout",
                "link_vk_to_keyring",
                "volume_key_keyring",
                "engine",
            ],
        ],
    },
    Action {
        name: "close",
        args: "<name>",
        about: "close device (remove mapping)",
        options: &[&["deferred", "cancel_deferred"]],
    },
    Action {
        name: "resize",
        args: "<name>",
        about: "resize active device",
        options: &[KEY_IN, &["size", "device_size"]],
    },
    Action {
        name: "refresh",
        args: "<name>",
        about: "refresh parameters of an active device",
        options: &[
            KEY_IN,
            &[
                "allow_discards",
                "persistent",
                "perf_same_cpu_crypt",
                "perf_submit_from_crypt_cpus",
                "perf_no_read_workqueue",
                "perf_no_write_workqueue",
            ],
        ],
    },
    Action {
        name: "status",
        args: "<name>",
        about: "show device status",
        options: &[],
    },
    Action {
        name: "benchmark",
        args: "[--cipher <cipher>]",
        about: "benchmark cipher",
        options: &[&[
            "cipher",
            "key_size",
            "hash",
            "pbkdf",
            "iter_time",
            "pbkdf_parallel",
            "sector_size",
            "threads",
            "engine",
            "json",
        ]],
    },
    Action {
        name: "repair",
        args: "<device>",
        about: "try to repair on-disk metadata",
        options: &[&["header"]],
    },
    Action {
        name: "erase",
        args: "<device>",
        about: "erase all keyslots (remove encryption key)",
        options: &[&["header"]],
    },
    Action {
        name: "reencrypt",
        args: "<device>",
        about: "reencrypt LUKS2 device",
        options: &[
            KEY_IN,
            PBKDF,
            &[
                "cipher",
                "key_size",
                "sector_size",
                "key_slot",
                "header",
                "active_name",
                "encrypt",
                "decrypt",
                "force_offline_reencrypt",
                "hotzone_size",
                "init_only",
                "resume_only",
                "reduce_device_size",
                "resilience",
                "resilience_hash",
                "progress_json",
                "progress_frequency",
                "keep_key",
                "block_size",
                "new",
                "use_directio",
                "use_fsync",
                "write_log",
                "type",
                "volume_key_file",
                "device_size",
                "offset",
                "label",
                "subsystem",
                "uuid",
                "verify_passphrase",
            ],
        ],
    },
    Action {
        name: "convert",
        args: "<device>",
        about: "convert LUKS from/to LUKS2 format",
        options: &[&["type", "header"]],
    },
    Action {
        name: "config",
        args: "<device>",
        about: "set permanent configuration options for LUKS2",
        options: &[&["label", "subsystem", "priority", "key_slot", "header"]],
    },
    Action {
        name: "luksFormat",
        args: "<device> [<new key file>]",
        about: "formats a LUKS device",
        options: &[
            LAYOUT,
            PBKDF,
            &[
                "align_payload",
                "force_password",
                "use_random",
                "use_urandom",
                "integrity",
                "integrity_no_wipe",
                "integrity_legacy_padding",
            ],
        ],
    },
    Action {
        name: "luksAddKey",
        args: "<device> [<new key file>]",
        about: "add key to LUKS device",
        options: &[
            KEY_IN,
            PBKDF,
            &[
                "new_keyfile",
                "new_keyfile_offset",
                "new_keyfile_size",
                "new_key_slot",
                "volume_key_file",
                "token_id",
                "new_token_id",
                "unbound",
                "key_size",
                "verify_passphrase",
                "force_password",
            ],
        ],
    },
    Action {
        name: "luksRemoveKey",
        args: "<device> [<key file>]",
        about: "removes supplied key or key file from LUKS device",
        options: &[KEY_IN],
    },
    Action {
        name: "luksChangeKey",
        args: "<device> [<key file>]",
        about: "changes supplied key or key file of LUKS device",
        options: &[
            KEY_IN,
            PBKDF,
            &[
                "new_keyfile",
                "new_keyfile_offset",
                "new_keyfile_size",
                "verify_passphrase",
                "force_password",
            ],
        ],
    },
    Action {
        name: "luksConvertKey",
        args: "<device> [<key file>]",
        about: "converts a key to new pbkdf parameters",
        options: &[KEY_IN, PBKDF],
    },
    Action {
        name: "luksKillSlot",
        args: "<device> <key slot>",
        about: "wipes key with number <key slot> from LUKS device",
        options: &[KEY_IN],
    },
    Action {
        name: "luksUUID",
        args: "<device>",
        about: "print UUID of LUKS device (set it with --uuid)",
        options: &[&["uuid", "header"]],
    },
    Action {
        name: "isLuks",
        args: "<device>",
        about: "tests <device> for LUKS partition header",
        options: &[&["type", "header"]],
    },
    Action {
        name: "luksDump",
        args: "<device>",
        about: "dump LUKS partition information",
        options: &[
            KEY_IN,
            &[
                "dump_volume_key",
                "dump_json_metadata",
                "unbound",
                "volume_key_file",
            ],
        ],
    },
    Action {
        name: "tcryptDump",
        args: "<device>",
        about: "dump TCRYPT device information",
        options: &[KEY_IN, &["dump_volume_key"]],
    },
    Action {
        name: "bitlkDump",
        args: "<device>",
        about: "dump BITLK device information",
        options: &[KEY_IN, &["dump_volume_key", "volume_key_file"]],
    },
    Action {
        name: "fvault2Dump",
        args: "<device>",
        about: "dump FVAULT2 device information",
        options: &[KEY_IN, &["dump_volume_key", "volume_key_file"]],
    },
    Action {
        name: "luksSuspend",
        args: "<device>",
        about: "Suspend LUKS device and wipe key (all IOs are frozen)",
        options: &[&["header"]],
    },
    Action {
        name: "luksResume",
        args: "<device>",
        about: "Resume suspended LUKS device",
        options: &[KEY_IN],
    },
    Action {
        name: "luksHeaderBackup",
        args: "<device>",
        about: "Backup LUKS device header and keyslots",
        options: &[&["header_backup_file", "header"]],
    },
    Action {
        name: "luksHeaderRestore",
        args: "<device>",
        about: "Restore LUKS device header and keyslots",
        options: &[&["header_backup_file", "header"]],
    },
    Action {
        name: "token",
        args: "<add|remove|import|export|unassign|bind-tang|bind-clevis|enroll-tpm2|unenroll> <device>",
        about: "Manipulate LUKS2 tokens (bind-tang, bind-clevis DEVICE tpm2|sss|tang CONFIG: clevis tokens; enroll-tpm2: a systemd-tpm2 token; unenroll: tokens and their keyslots; lukskit)",
        options: &[&[
            "token_id",
            "token_type",
            "tang_url",
            "tang_thumbprint",
            "tpm2_device",
            "tpm2_pcrs",
            "tpm2_pcr_bank",
            "tpm2_with_pin",
            "key_file",
            "json_file",
            "key_description",
            "token_replace",
            "key_slot",
            "unbound",
            "header",
        ]],
    },
    Action {
        name: "crypttab",
        args: "<open|close|list> [<name>...]",
        about: "open, close or list the volumes of /etc/crypttab (lukskit)",
        options: &[&["crypttab", "backend"]],
    },
    Action {
        name: "rename",
        args: "<name> <new name>",
        about: "rename an active kernel mapping (lukskit)",
        options: &[],
    },
    Action {
        name: "engines",
        args: "[<cipher>]",
        about: "show the kernel drivers dm-crypt would use and lukskit's own engine (lukskit)",
        options: &[&["json"]],
    },
    Action {
        name: "image encrypt",
        args: "<plaintext> <image>",
        about: "writes a new LUKS1/LUKS2/plain image holding a file (lukskit)",
        options: &[
            LAYOUT,
            PBKDF,
            &["skip", "size", "iv_large_sectors", "threads", "engine"],
        ],
    },
    Action {
        name: "image decrypt",
        args: "<image> <plaintext>",
        about: "writes the plaintext of an image to a file (lukskit)",
        options: &[
            KEY_IN,
            &[
                "type",
                "cipher",
                "key_size",
                "hash",
                "offset",
                "skip",
                "size",
                "sector_size",
                "iv_large_sectors",
                "volume_key_file",
                "threads",
                "engine",
            ],
        ],
    },
];

/// Old names of actions, as cryptsetup lists them: (action, aliases as printed, alias names).
pub const ALIASES: &[(&str, &str, &[&str])] = &[
    (
        "open",
        "create (plainOpen), luksOpen, loopaesOpen, tcryptOpen, bitlkOpen, fvault2Open",
        &[
            "create",
            "plainOpen",
            "luksOpen",
            "loopaesOpen",
            "tcryptOpen",
            "bitlkOpen",
            "fvault2Open",
        ],
    ),
    (
        "close",
        "remove (plainClose), luksClose, loopaesClose, tcryptClose, bitlkClose, fvault2Close",
        &[
            "remove",
            "plainClose",
            "luksClose",
            "loopaesClose",
            "tcryptClose",
            "bitlkClose",
            "fvault2Close",
        ],
    ),
    ("erase", "luksErase", &["luksErase"]),
];

/// Actions of cryptsetup 2.6.1 that lukskit does not have yet.
pub const UNSUPPORTED: &[&str] = &[];

/// The action an alias stands for (an action's own name maps to itself).
pub fn canonical(name: &str) -> Option<&'static str> {
    if let Some(a) = ACTIONS
        .iter()
        .find(|a| a.name.split(' ').next() == Some(name))
    {
        return a.name.split(' ').next();
    }
    ALIASES
        .iter()
        .find(|(_, _, names)| names.contains(&name))
        .map(|(a, _, _)| *a)
}

/// The table lines of an action (two for `image`).
pub fn lines_of(action: &str) -> Vec<&'static Action> {
    ACTIONS
        .iter()
        .filter(|a| a.name.split(' ').next() == Some(action))
        .collect()
}

/// cryptsetup's value names (`--cipher=STRING`, `--key-size=BITS`, ...).
const VALUE_NAMES: &[(&str, &str)] = &[
    ("type", "STRING"),
    ("cipher", "STRING"),
    ("key_size", "BITS"),
    ("hash", "STRING"),
    ("pbkdf", "STRING"),
    ("iter_time", "msecs"),
    ("pbkdf_memory", "kilobytes"),
    ("pbkdf_parallel", "threads"),
    ("pbkdf_force_iterations", "LONG"),
    ("key_file", "STRING"),
    ("keyfile_offset", "bytes"),
    ("keyfile_size", "bytes"),
    ("new_keyfile", "STRING"),
    ("new_keyfile_offset", "bytes"),
    ("new_keyfile_size", "bytes"),
    ("key_slot", "INT"),
    ("new_key_slot", "INT"),
    ("volume_key_file", "STRING"),
    ("header", "STRING"),
    ("header_backup_file", "STRING"),
    ("offset", "SECTORS"),
    ("sector_size", "INT"),
    ("integrity", "STRING"),
    ("label", "STRING"),
    ("subsystem", "STRING"),
    ("uuid", "STRING"),
    ("luks2_metadata_size", "bytes"),
    ("luks2_keyslots_size", "bytes"),
    ("priority", "STRING"),
    ("tries", "INT"),
    ("timeout", "secs"),
    ("token_id", "INT"),
    ("new_token_id", "INT"),
    ("token_type", "STRING"),
    ("tang_url", "URL"),
    ("tpm2_device", "PATH"),
    ("token_timeout", "secs"),
    ("tpm2_pcrs", "PCR[+PCR...]"),
    ("link_vk_to_keyring", "KEYRING::KEY"),
    ("volume_key_keyring", "KEY"),
    ("tpm2_pcr_bank", "BANK"),
    ("tpm2_with_pin", "yes|no"),
    ("tang_thumbprint", "STRING"),
    ("json_file", "STRING"),
    ("key_description", "STRING"),
    ("keyslot_cipher", "STRING"),
    ("keyslot_key_size", "BITS"),
    ("skip", "SECTORS"),
    ("size", "SECTORS"),
    ("threads", "INT"),
    ("engine", "STRING"),
    ("nbd", "ADDRESS"),
    ("backend", "STRING"),
    ("device_size", "bytes"),
    ("nbd_connections", "INT"),
    ("tls_creds", "DIR"),
    ("tls", "MODE"),
    ("tls_verify_peer", "yes|no"),
    ("crypttab", "FILE"),
    ("active_name", "STRING"),
    ("hotzone_size", "bytes"),
    ("reduce_device_size", "bytes"),
    ("resilience", "STRING"),
    ("resilience_hash", "STRING"),
    ("progress_frequency", "secs"),
    ("block_size", "MiB"),
];

/// Options that name files (completed as paths).
const FILE_OPTIONS: &[&str] = &[
    "key_file",
    "new_keyfile",
    "volume_key_file",
    "header",
    "header_backup_file",
    "json_file",
    "crypttab",
];

/// Heading of `--help`, `--usage` and `--version`, as cryptsetup's.
pub const HELP_GROUP: &str = "Help options";
/// Heading of the options cryptsetup does not have.
pub const LUKSKIT_GROUP: &str = "lukskit options";
/// Options only lukskit has.
const LUKSKIT_ONLY: &[&str] = &[
    "tang_url",
    "tpm2_device",
    "token_timeout",
    "tpm2_pcrs",
    "tpm2_pcr_bank",
    "tpm2_with_pin",
    "link_vk_to_keyring",
    "volume_key_keyring",
    "tang_thumbprint",
    "backend",
    "no_loop",
    "nbd",
    "nbd_connections",
    "tls_creds",
    "tls",
    "tls_verify_peer",
    "threads",
    "engine",
    "json",
    "crypttab",
];

/// The command line lukskit parses: [`Opts`] with cryptsetup's value names and groups, and
/// (hidden) cryptsetup's options lukskit does not implement.
pub fn command() -> Command {
    let mut cmd = documented_options();
    // cryptsetup's options lukskit does not implement: parsed (hidden, and left out of the man
    // page and completions) so that --test-args and cryptsetup's checks judge the command
    // line as cryptsetup does; an action run with one fails.
    for (long, short, takes_value) in crate::option_tables::NOT_IMPLEMENTED
        .iter()
        .chain(crate::option_tables::TCRYPT_OPTIONS)
    {
        let mut a = Arg::new(*long)
            .long(*long)
            .hide(true)
            .action(if *takes_value {
                ArgAction::Set
            } else {
                ArgAction::SetTrue
            });
        if let Some(c) = short {
            a = a.short(*c);
        }
        if crate::option_tables::NUMERIC.contains(long) {
            a = a.value_parser(clap::value_parser!(u32));
        } else if *takes_value {
            // A size like "-64m" is a bad value, not an option.
            a = a.allow_hyphen_values(true);
        }
        cmd = cmd.arg(a);
    }
    cmd
}

/// [`Opts`] with cryptsetup's value names and groups: the options lukskit has.
///
/// One pass over the arguments: each `Command::mut_arg` takes its argument out of the list
/// and appends it again, moving every argument after it, and the ~90 of them here were 80%
/// of the instructions of `lukskit --version` (memcpy, under QEMU's TCG a quarter of a
/// second for every lukskit run in the reference VM).
fn documented_options() -> Command {
    Opts::command().mut_args(|a| {
        let id = a.get_id().clone();
        let id = id.as_str();
        let mut a = match VALUE_NAMES.iter().find(|(n, _)| *n == id) {
            Some((_, name)) => a.value_name(*name),
            None => a,
        };
        if FILE_OPTIONS.contains(&id) {
            a = a.value_hint(ValueHint::FilePath);
        }
        if ["help", "usage", "version"].contains(&id) {
            a = a.help_heading(HELP_GROUP);
        }
        if LUKSKIT_ONLY.contains(&id) {
            a = a.help_heading(LUKSKIT_GROUP);
        }
        if id == "positional" {
            a = a.hide(true);
        }
        a
    })
}

/// The options of `cmd` that may be shown (no positionals, nothing hidden), sorted by long
/// name as cryptsetup's list is.
pub fn visible_options(cmd: &Command) -> Vec<&Arg> {
    let mut v: Vec<&Arg> = cmd
        .get_arguments()
        .filter(|a| !a.is_positional() && !a.is_hide_set())
        .collect();
    v.sort_by_key(|a| a.get_long().unwrap_or_default().to_ascii_lowercase());
    v
}

/// Possible values worth completing (they are checked by the actions, not by the parser).
const POSSIBLE_VALUES: &[(&str, &[&str])] = &[
    ("type", &["luks", "luks1", "luks2", "plain"]),
    ("pbkdf", &["pbkdf2", "argon2i", "argon2id"]),
    ("priority", &["ignore", "normal", "prefer"]),
    ("backend", &["kernel", "userspace"]),
    ("tls", &["off", "on", "require"]),
];

/// The command for the man page and the completions: [`command`] with one subcommand per
/// action carrying the options of that action.
pub fn documented_command(bin: &'static str) -> Command {
    let mut base = documented_options().name(bin).bin_name(bin);
    for (id, values) in POSSIBLE_VALUES {
        base = base.mut_arg(*id, |a| a.value_parser(values.to_vec()));
    }
    let args: Vec<Arg> = base.get_arguments().cloned().collect();
    let find = |id: &str| -> Arg {
        args.iter()
            .find(|a| a.get_id() == id)
            .cloned()
            .unwrap_or_else(|| panic!("action table names unknown option {id}"))
    };
    let mut cmd = base.clone().subcommand_value_name("ACTION");
    let mut names: Vec<&str> = Vec::new();
    for a in ACTIONS {
        let first = a.name.split(' ').next().unwrap_or(a.name);
        if names.contains(&first) {
            continue;
        }
        names.push(first);
        let lines = lines_of(first);
        let mut sub = Command::new(first)
            .about(a.about)
            .disable_help_flag(true)
            .disable_version_flag(true);
        if let Some((_, _, alias)) = ALIASES.iter().find(|(n, _, _)| *n == first) {
            sub = sub.visible_aliases(alias.iter().copied());
        }
        if lines.len() > 1 {
            for l in &lines {
                let word = l.name.split(' ').nth(1).unwrap_or_default();
                let mut leaf = Command::new(word)
                    .about(l.about)
                    .disable_help_flag(true)
                    .arg(action_args(l));
                for id in l.option_ids() {
                    leaf = leaf.arg(find(id));
                }
                sub = sub.subcommand(leaf);
            }
        } else {
            sub = sub.arg(action_args(a));
            for id in a.option_ids() {
                sub = sub.arg(find(id));
            }
        }
        cmd = cmd.subcommand(sub);
    }
    cmd
}

/// The positional arguments of an action (files or devices, completed as paths).
fn action_args(a: &Action) -> Arg {
    Arg::new("ARGS")
        .value_name(a.args)
        .num_args(0..)
        .action(ArgAction::Append)
        .value_hint(ValueHint::AnyPath)
        .hide(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_option_the_decoration_tables_name_exists() {
        // (`documented_options` decorates in one pass and would skip a name that is not an
        // option's id, where `mut_arg` panicked.)
        let cmd = Opts::command();
        let ids = VALUE_NAMES
            .iter()
            .map(|(id, _)| *id)
            .chain(FILE_OPTIONS.iter().copied())
            .chain(LUKSKIT_ONLY.iter().copied())
            .chain(["help", "usage", "version", "positional"]);
        for id in ids {
            assert!(
                cmd.get_arguments().any(|x| x.get_id() == id),
                "unknown option id {id}"
            );
        }
    }

    #[test]
    fn every_option_named_by_the_action_table_exists() {
        let cmd = command();
        for a in ACTIONS {
            for id in a.option_ids() {
                assert!(
                    cmd.get_arguments().any(|x| x.get_id() == id),
                    "{}: unknown option {id}",
                    a.name
                );
            }
        }
        documented_command("lukskit").debug_assert();
    }

    #[test]
    fn aliases_resolve() {
        assert_eq!(canonical("luksOpen"), Some("open"));
        assert_eq!(canonical("image"), Some("image"));
        assert_eq!(canonical("remove"), Some("close"));
        assert_eq!(canonical("tcryptDump"), Some("tcryptDump"));
        assert_eq!(canonical("bitlkOpen"), Some("open"));
        assert_eq!(canonical("fvault2Close"), Some("close"));
    }
}
