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
        crate::commands::DEFAULT_LUKS_CIPHER,
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

fn tail_roff() -> Roff {
    let mut r = Roff::new();
    r.control("SH", ["EXIT STATUS"]);
    r.text([roman(
        "As cryptsetup: 0 success, 1 wrong parameters, 2 no permission (bad passphrase), \
         3 out of memory, 4 wrong device specified, 5 device already exists or is busy.",
    )]);
    r.control("SH", ["SEE ALSO"]);
    r.text([roman(
        "cryptsetup(8); the README of lukskit for the userspace data path, image \
         conversion and the differences from cryptsetup.",
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
    out
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
