//! `--help`, `--usage`, per-action help, the man page and the shell completions, all rendered
//! from [`crate::definition`]. The help and usage texts are laid out as cryptsetup 2.6.1's
//! (popt's): options in a 40-column field, descriptions wrapped at 79 columns.

use crate::definition::{
    self, canonical, lines_of, visible_options, Action, ACTIONS, ALIASES, HELP_GROUP,
    LUKSKIT_GROUP, UNSUPPORTED,
};
use clap::{Arg, Command};
use clap_complete::Shell;
use clap_mangen::roff::{bold, italic, roman, Roff};
use clap_mangen::Man;
use std::fmt::Write as _;

const DESC_COLUMN: usize = 40;
const WIDTH: usize = 79;

/// The program name to show: `cryptsetup` when started through a link of that name.
pub fn program_name() -> &'static str {
    if crate::invoked_as_cryptsetup() {
        "cryptsetup"
    } else {
        "lukskit"
    }
}

/// `-c, --cipher=STRING` as popt writes it.
fn option_label(a: &Arg) -> String {
    let mut s = match a.get_short() {
        Some(c) => format!("-{c}, "),
        None => "    ".to_string(),
    };
    if let Some(l) = a.get_long() {
        s.push_str("--");
        s.push_str(l);
    }
    if a.get_action().takes_values() {
        let name = a
            .get_value_names()
            .and_then(|v| v.first())
            .map_or_else(|| a.get_id().as_str().to_uppercase(), |v| v.to_string());
        // An option whose value may be left out: `--tls-verify-peer[=yes|no]`.
        let optional = a.get_num_args().is_some_and(|n| n.min_values() == 0);
        s.push_str(&if optional {
            format!("[={name}]")
        } else {
            format!("={name}")
        });
    }
    s
}

/// Words of `text` in lines of at most `width` characters.
fn wrap(text: &str, width: usize) -> Vec<String> {
    let mut lines = Vec::new();
    let mut cur = String::new();
    for w in text.split_whitespace() {
        if !cur.is_empty() && cur.len() + 1 + w.len() > width {
            lines.push(std::mem::take(&mut cur));
        }
        if !cur.is_empty() {
            cur.push(' ');
        }
        cur.push_str(w);
    }
    if !cur.is_empty() {
        lines.push(cur);
    }
    lines
}

/// One option of the help: label, then the description wrapped in its column.
fn option_entry(out: &mut String, a: &Arg) {
    let label = format!("  {}", option_label(a));
    let help = a.get_help().map(|h| h.to_string()).unwrap_or_default();
    let lines = wrap(&help, WIDTH - DESC_COLUMN);
    if label.len() + 2 > DESC_COLUMN {
        let _ = writeln!(out, "{label}");
        for l in &lines {
            let _ = writeln!(out, "{:DESC_COLUMN$}{l}", "");
        }
        return;
    }
    let mut first = true;
    for l in &lines {
        if first {
            let _ = writeln!(out, "{label:DESC_COLUMN$}{l}");
            first = false;
        } else {
            let _ = writeln!(out, "{:DESC_COLUMN$}{l}", "");
        }
    }
    if first {
        let _ = writeln!(out, "{label}");
    }
}

fn heading_of(a: &Arg) -> Option<&str> {
    a.get_help_heading()
}

/// The text of `--help` (cryptsetup's layout: help options, the options, the actions).
pub fn main_help() -> String {
    let prog = program_name();
    let cmd = definition::command();
    let opts = visible_options(&cmd);
    let mut out = String::new();
    let _ = writeln!(
        out,
        "Usage: {prog} [OPTION...] <action> <action-specific>\n"
    );
    let _ = writeln!(out, "{HELP_GROUP}:");
    for id in ["help", "usage", "version"] {
        if let Some(a) = opts.iter().find(|a| a.get_id() == id) {
            option_entry(&mut out, a);
        }
    }
    for a in opts.iter().filter(|a| heading_of(a).is_none()) {
        option_entry(&mut out, a);
    }
    let _ = writeln!(out, "\n{LUKSKIT_GROUP}:");
    for a in opts.iter().filter(|a| heading_of(a) == Some(LUKSKIT_GROUP)) {
        option_entry(&mut out, a);
    }
    let _ = writeln!(out, "\n<action> is one of:");
    for a in ACTIONS {
        let _ = writeln!(out, "\t{} {} - {}", a.name, a.args, a.about);
    }
    let _ = writeln!(out, "\nYou can also use old <action> syntax aliases:");
    for (action, aliases, _) in ALIASES {
        let _ = writeln!(out, "\t{action}: {aliases}");
    }
    #[allow(
        clippy::const_is_empty,
        reason = "empty today; an action lukskit lacks goes there (clippy 1.89 flags it)"
    )]
    if !UNSUPPORTED.is_empty() {
        let _ = writeln!(
            out,
            "\nActions of cryptsetup 2.6.1 that lukskit does not support yet:"
        );
        for l in wrap(&UNSUPPORTED.join(", "), WIDTH - 8) {
            let _ = writeln!(out, "\t{l}");
        }
    }
    let _ = write!(
        out,
        "
<name> is the device to create under /dev/mapper
<device> is the encrypted device
<key slot> is the LUKS key slot number to modify
<key file> optional key file for the new key for luksAddKey action

Help on one action and its options: {prog} help <action> (or {prog} <action> --help).
Installed as (or linked to) `cryptsetup`, lukskit accepts the same command lines.

Default compiled-in metadata format is LUKS2 (for luksFormat action).

Default compiled-in key and passphrase parameters:
\tMaximum keyfile size: {}kB, Maximum interactive passphrase length {} (characters)
Default PBKDF for LUKS1: pbkdf2, iteration time: {} (ms)
Default PBKDF for LUKS2: argon2id

Default compiled-in device cipher parameters:
\tplain: {}, Key: {} bits, Password hashing: {}
\tLUKS: {}, Key: 256 bits, LUKS header hashing: sha256, RNG: /dev/urandom
\tLUKS: Default keysize with XTS mode (two internal keys) will be doubled.
",
        crate::input::MAX_KEYFILE_SIZE / 1024,
        crate::input::MAX_PASSPHRASE,
        lukskit_volume::pbkdf::DEFAULT_ITER_TIME_MS,
        lukskit_volume::plain::DEFAULT_CIPHER,
        lukskit_volume::plain::DEFAULT_KEY_BITS,
        lukskit_volume::plain::DEFAULT_HASH,
        lukskit_volume::format::DEFAULT_CIPHER,
    );
    out
}

/// The text of `--usage`: every option in brackets, as popt writes it.
pub fn usage() -> String {
    let prog = program_name();
    let cmd = definition::command();
    let opts = visible_options(&cmd);
    let mut items: Vec<String> = Vec::new();
    let flags: String = opts
        .iter()
        .filter(|a| !a.get_action().takes_values())
        .filter_map(|a| a.get_short())
        .collect();
    if !flags.is_empty() {
        items.push(format!("[-{flags}]"));
    }
    let first = ["help", "usage", "version"];
    let ordered = first
        .iter()
        .filter_map(|id| opts.iter().find(|a| a.get_id() == *id))
        .chain(
            opts.iter()
                .filter(|a| !first.contains(&a.get_id().as_str())),
        );
    for a in ordered {
        let long = a.get_long().unwrap_or_default();
        let value = option_label(a)
            .split_once(&format!("--{long}"))
            .map(|(_, v)| v.to_string())
            .unwrap_or_default();
        items.push(match a.get_short() {
            Some(c) => format!("[-{c}|--{long}{value}]"),
            None => format!("[--{long}{value}]"),
        });
    }
    items.push("[OPTION...] <action> <action-specific>".into());
    let mut out = format!("Usage: {prog}");
    let mut col = out.len();
    for it in items {
        if col + 1 + it.len() > WIDTH {
            out.push_str("\n       ");
            col = 7;
        }
        out.push(' ');
        out.push_str(&it);
        col += 1 + it.len();
    }
    out.push('\n');
    out
}

/// Help on one action (`lukskit help open`, `lukskit open --help`); None when lukskit has no
/// such action.
pub fn action_help(name: &str) -> Option<String> {
    let prog = program_name();
    let action = canonical(name)?;
    let lines = lines_of(action);
    let cmd = definition::command();
    let mut out = String::new();
    for l in &lines {
        let _ = writeln!(out, "Usage: {prog} [OPTION...] {} {}", l.name, l.args);
    }
    for l in &lines {
        let _ = writeln!(out, "\n{} - {}.", l.name, l.about);
        let ids = l.option_ids();
        let mut own: Vec<&Arg> = visible_options(&cmd)
            .into_iter()
            .filter(|a| ids.contains(&a.get_id().as_str()))
            .filter(|a| !definition::COMMON.contains(&a.get_id().as_str()))
            .collect();
        own.dedup_by_key(|a| a.get_id().clone());
        if !own.is_empty() {
            let _ = writeln!(out, "\nOptions:");
            for a in own {
                option_entry(&mut out, a);
            }
        }
    }
    if let Some((_, aliases, _)) = ALIASES.iter().find(|(a, _, _)| *a == action) {
        let _ = writeln!(out, "\nAliases: {aliases}");
    }
    let common: Vec<String> = definition::COMMON
        .iter()
        .filter_map(|id| cmd.get_arguments().find(|a| a.get_id() == *id))
        .map(|a| format!("--{}", a.get_long().unwrap_or_default()))
        .collect();
    let _ = writeln!(
        out,
        "\nEvery action also takes {}.\nAll options: {prog} --help.",
        common.join(", ")
    );
    Some(out)
}

/// The man page `lukskit.8`.
pub fn man_page() -> std::io::Result<Vec<u8>> {
    let cmd = definition::command()
        .name("lukskit")
        .about("LUKS1/LUKS2 disk encryption, cryptsetup compatible")
        .long_about(
            "lukskit is a memory-safe reimplementation of cryptsetup 2.6.1 and dm-crypt: it \
             formats, opens and manages LUKS1, LUKS2 and plain volumes with cryptsetup's \
             options, prompts, messages and exit codes. Where the kernel has device-mapper, \
             open creates a dm-crypt mapping; elsewhere lukskit serves the plaintext itself \
             (a FUSE file with a loop device, or an NBD export). Installed as or linked to \
             cryptsetup, it accepts the same command lines.",
        )
        .override_usage("lukskit [OPTION...] <action> <action-specific>");
    let man = Man::new(cmd)
        .title("LUKSKIT")
        .section("8")
        .source(format!("lukskit {}", env!("CARGO_PKG_VERSION")))
        .manual("System Administration");
    let mut out = Vec::new();
    man.render_title(&mut out)?;
    man.render_name_section(&mut out)?;
    man.render_synopsis_section(&mut out)?;
    man.render_description_section(&mut out)?;
    out.extend_from_slice(actions_roff().render().as_bytes());
    man.render_options_section(&mut out)?;
    out.extend_from_slice(tail_roff().render().as_bytes());
    Ok(out)
}

fn actions_roff() -> Roff {
    let cmd = definition::command();
    let mut r = Roff::new();
    r.control("SH", ["ACTIONS"]);
    for a in ACTIONS {
        r.control("TP", []);
        r.text([bold(a.name), roman(" "), italic(a.args)]);
        let mut text = format!("{}.", capitalize(a.about));
        if let Some((_, aliases, _)) = ALIASES.iter().find(|(n, _, _)| *n == a.name) {
            text.push_str(&format!(" Aliases: {aliases}."));
        }
        let opts = action_options(&cmd, a);
        if !opts.is_empty() {
            text.push_str(&format!(" Options: {}.", opts.join(", ")));
        }
        r.text([roman(text)]);
    }
    r.control("PP", []);
    let common = definition::COMMON
        .iter()
        .filter_map(|id| cmd.get_arguments().find(|a| a.get_id() == *id))
        .map(|a| format!("--{}", a.get_long().unwrap_or_default()))
        .collect::<Vec<_>>()
        .join(", ");
    let mut text = format!("Every action also takes {common}.");
    #[allow(
        clippy::const_is_empty,
        reason = "empty today; an action lukskit lacks goes there (clippy 1.89 flags it)"
    )]
    if !UNSUPPORTED.is_empty() {
        text.push_str(&format!(
            " Actions of cryptsetup 2.6.1 that lukskit does not support yet (they exit with \
             status 1): {}.",
            UNSUPPORTED.join(", ")
        ));
    }
    r.text([roman(text)]);
    r
}

fn action_options(cmd: &Command, a: &Action) -> Vec<String> {
    let ids = a.option_ids();
    visible_options(cmd)
        .into_iter()
        .filter(|x| ids.contains(&x.get_id().as_str()))
        .filter(|x| !definition::COMMON.contains(&x.get_id().as_str()))
        .map(|x| format!("--{}", x.get_long().unwrap_or_default()))
        .collect()
}

/// Examples of the man page: what each does, then the command lines.
const EXAMPLES: &[(&str, &str)] = &[
    (
        "Create a LUKS2 volume in an image file, open it, make and mount a file system, close it \
         (as root; without device-mapper the same commands work through FUSE and a loop device):",
        "truncate -s 64M volume.img\n\
         lukskit luksFormat volume.img\n\
         lukskit open volume.img secret\n\
         mkfs.ext4 /dev/mapper/secret\n\
         mount /dev/mapper/secret /mnt\n\
         umount /mnt\n\
         lukskit close secret",
    ),
    (
        "Add a key file to a volume and open it with the key file:",
        "head -c 64 /dev/urandom > /etc/keys/data.key\n\
         chmod 600 /etc/keys/data.key\n\
         lukskit luksAddKey /dev/sdb1 /etc/keys/data.key\n\
         lukskit open -d /etc/keys/data.key /dev/sdb1 data",
    ),
    (
        "List every open mapping, then show one:",
        "lukskit status\n\
         lukskit status data",
    ),
    (
        "Check a passphrase without opening anything, and print the header:",
        "lukskit open --test-passphrase /dev/sdb1\n\
         lukskit luksDump /dev/sdb1",
    ),
    (
        "Keep a copy of the header and keyslots:",
        "lukskit luksHeaderBackup /dev/sdb1 --header-backup-file sdb1-header.img",
    ),
    (
        "Serve the plaintext of an image as an NBD export on a Unix socket, and copy it out:",
        "lukskit open --nbd unix:/run/vol.sock disk.luks vol\n\
         nbdcopy 'nbd+unix:///vol?socket=/run/vol.sock' plain.raw\n\
         lukskit close vol",
    ),
    (
        "Encrypt a plain disk image into a new LUKS2 image, and back:",
        "lukskit image encrypt disk.raw disk.luks\n\
         lukskit image decrypt disk.luks disk.raw",
    ),
    (
        "Re-encrypt a volume with a new volume key (online while it is open):",
        "lukskit reencrypt /dev/sdb1",
    ),
    (
        "Show what the entries of /etc/crypttab would do, then open them:",
        "lukskit crypttab list\n\
         lukskit crypttab open",
    ),
];

fn tail_roff() -> Roff {
    let mut r = Roff::new();
    r.control("SH", ["WITHOUT DEVICE-MAPPER"]);
    r.text([roman(
        "Where the kernel has device-mapper with dm-crypt, open makes the dm-crypt mapping \
         cryptsetup makes. Where it has none (a container, WSL, a small kernel), or with \
         --backend userspace, open unlocks the volume in the foreground and starts a serving \
         process (lukskit: NAME in ps) that holds the key and serves the plaintext as the file \
         /run/lukskit/NAME/device on a FUSE mount; a loop device is attached to that file and \
         /dev/mapper/NAME is a symbolic link to the loop device, so mkfs, mount, fsck and \
         /etc/fstab work unchanged. open says so on standard error (no device-mapper in this \
         kernel: serving NAME through FUSE + /dev/loopN) unless -q is given; --debug says why \
         the backend was chosen. --no-loop serves the FUSE file only; --nbd unix:PATH or \
         --nbd tcp:HOST:PORT serves an NBD export instead (TCP needs TLS: --tls-creds DIR).",
    )]);
    r.control("PP", []);
    r.text([roman(
        "close flushes, detaches the loop device, unmounts the FUSE file, stops the serving \
         process and wipes the key. status NAME shows the backend (key location: lukskit \
         serving process, the FUSE file, the loop device, the server's pid); status without a \
         name lists every open mapping, kernel and userspace. luksSuspend, luksResume, resize \
         and reencrypt work on these mappings; refresh does not. State lives in \
         /run/lukskit/NAME/. cryptsetup, which knows only device-mapper, does not see these \
         mappings.",
    )]);
    r.control("SH", ["EXAMPLES"]);
    for (what, lines) in EXAMPLES {
        r.control("PP", []);
        r.text([roman(*what)]);
        r.control("PP", []);
        r.control("RS", ["4"]);
        r.control("nf", []);
        r.text([roman(*lines)]);
        r.control("fi", []);
        r.control("RE", []);
    }
    r.control("SH", ["EXIT STATUS"]);
    r.text([roman(
        "As cryptsetup: 0 success, 1 wrong parameters, 2 no permission (bad passphrase), \
         3 out of memory, 4 wrong device specified, 5 device already exists or is busy.",
    )]);
    r.control("SH", ["SEE ALSO"]);
    r.text([roman(
        "cryptsetup(8), crypttab(5); lukskit's README and its docs/ pages (in \
         /usr/share/doc/lukskit with the Debian package) for the userspace backend, booting, \
         NBD, image conversion, re-encryption and the differences from cryptsetup.",
    )]);
    r
}

fn capitalize(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_uppercase().chain(c).collect(),
        None => String::new(),
    }
}

/// The completion script for `shell`.
pub fn completion(shell: Shell) -> Vec<u8> {
    let mut cmd = definition::documented_command("lukskit");
    let mut out = Vec::new();
    clap_complete::generate(shell, &mut cmd, "lukskit", &mut out);
    if shell == Shell::Bash {
        out.extend_from_slice(bash_mapping_names(&cmd).as_bytes());
    }
    out
}

/// The actions whose argument is the name of an open mapping.
const MAPPING_ACTIONS: &[&str] = &[
    "close",
    "status",
    "luksSuspend",
    "luksResume",
    "resize",
    "refresh",
];

/// The part of the bash completion that clap's does not have: the names of open mappings
/// after the actions of [`MAPPING_ACTIONS`] and their aliases (from `lukskit status`,
/// `/run/lukskit` and `/dev/mapper`). `_lukskit_complete` finds the action (the first word
/// that is neither an option nor an option's value) and hands everything else to clap's
/// `_lukskit`.
fn bash_mapping_names(cmd: &Command) -> String {
    // Options that take a value in the next word, on any action.
    let mut value_opts: Vec<String> = Vec::new();
    let mut stack = vec![cmd];
    while let Some(c) = stack.pop() {
        for a in c.get_arguments() {
            let takes = a.get_action().takes_values()
                && a.get_num_args().is_none_or(|n| n.min_values() > 0);
            if !takes || a.is_positional() {
                continue;
            }
            if let Some(s) = a.get_short() {
                value_opts.push(format!("-{s}"));
            }
            if let Some(l) = a.get_long() {
                value_opts.push(format!("--{l}"));
            }
        }
        stack.extend(c.get_subcommands());
    }
    value_opts.sort();
    value_opts.dedup();
    let mut actions: Vec<String> = Vec::new();
    for sub in cmd.get_subcommands() {
        if MAPPING_ACTIONS.contains(&sub.get_name()) {
            actions.push(sub.get_name().to_string());
            actions.extend(sub.get_all_aliases().map(str::to_string));
        }
    }
    let value_opts = value_opts.join("|");
    let actions = actions.join("|");
    format!(
        r#"
# lukskit: the names of open mappings after {names} and their aliases
# (from `lukskit status`, /run/lukskit and /dev/mapper); everything else is _lukskit's.
_lukskit_mappings() {{
    {{
        lukskit status 2>/dev/null | awk 'NR == 1 && $1 == "NAME" {{ ok = 1; next }} ok {{ print $1 }}'
        command ls -1 /run/lukskit /dev/mapper 2>/dev/null
    }} | grep -v -e '^control$' -e ':$' -e '^$' | sort -u
}}

_lukskit_complete() {{
    local cur=${{COMP_WORDS[COMP_CWORD]}} prev=${{COMP_WORDS[COMP_CWORD-1]}} action='' i
    for ((i = 1; i < COMP_CWORD; i++)); do
        case "${{COMP_WORDS[i]}}" in
            -*) ;;
            *)
                case "${{COMP_WORDS[i-1]}}" in
                    {value_opts}) ;;
                    *) action=${{COMP_WORDS[i]}}; break ;;
                esac
                ;;
        esac
    done
    case "$action" in
        {actions})
            if [[ $cur != -* ]]; then
                case "$prev" in
                    {value_opts}) ;;
                    *)
                        COMPREPLY=( $(compgen -W "$(_lukskit_mappings)" -- "$cur") )
                        return 0
                        ;;
                esac
            fi
            ;;
    esac
    _lukskit "$@"
}}

if [[ "${{BASH_VERSINFO[0]}}" -eq 4 && "${{BASH_VERSINFO[1]}}" -ge 4 || "${{BASH_VERSINFO[0]}}" -gt 4 ]]; then
    complete -F _lukskit_complete -o nosort -o bashdefault -o default lukskit
else
    complete -F _lukskit_complete -o bashdefault -o default lukskit
fi
"#,
        names = MAPPING_ACTIONS.join(", "),
    )
}

/// The generated files, by path relative to the repository: the man page and the bash, zsh
/// and fish completions.
pub fn generated_files() -> std::io::Result<Vec<(&'static str, Vec<u8>)>> {
    Ok(vec![
        ("man/lukskit.8", man_page()?),
        ("completions/lukskit.bash", completion(Shell::Bash)),
        ("completions/_lukskit", completion(Shell::Zsh)),
        ("completions/lukskit.fish", completion(Shell::Fish)),
    ])
}

/// `lukskit __generate-docs DIR`: write [`generated_files`] under DIR.
pub fn write_docs(dir: &str) -> std::io::Result<()> {
    for (rel, bytes) in generated_files()? {
        let path = std::path::Path::new(dir).join(rel);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::write(&path, bytes)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wraps_at_width() {
        assert_eq!(wrap("a bb ccc", 4), vec!["a bb", "ccc"]);
    }

    #[test]
    fn every_action_has_help() {
        for a in ACTIONS {
            let first = a.name.split(' ').next().unwrap();
            let h = action_help(first).unwrap();
            assert!(h.contains(a.about), "{h}");
        }
        assert!(action_help("frobnicate").is_none());
        assert!(action_help("bitlkOpen").is_some_and(|h| h.contains("open <device>")));
    }
}
