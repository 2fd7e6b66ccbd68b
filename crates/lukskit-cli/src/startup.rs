//! What happens between parsing the command line and running an action, as cryptsetup 2.6.1
//! does it: option checks (`-d` given twice), help and usage, `--test-args`, actions lukskit
//! does not have, and the `--debug` header.

use crate::args::Opts;
use crate::checks;
use crate::definition::{self, canonical, lines_of, UNSUPPORTED};
use crate::help::{self, program_name};
use crate::option_tables::Given;
use clap::parser::ValueSource;
use clap::{ArgAction, FromArgMatches};
use std::ffi::OsString;
use std::io::IsTerminal;

/// Parse `argv` with [`definition::command`]; an error is the message to print (exit 1).
///
/// The command is built once (building it is most of what a short lukskit run does: under
/// QEMU's TCG each build took tens of milliseconds).
pub fn parse(argv: &[OsString]) -> Result<Opts, String> {
    let mut cmd = definition::command();
    let key_file_cmd = cmd.clone();
    let matches = cmd
        .try_get_matches_from_mut(argv)
        .map_err(|e| parse_error(&e, argv))?;
    let mut opts = Opts::from_arg_matches(&matches).map_err(|e| first_line(&e.to_string()))?;
    // Negative numbers are let through as values of options (`-s -32`: "invalid numeric
    // value"); as an action's argument popt takes one for an unknown option, unless `--`
    // came before it.
    if !argv.iter().any(|a| a == "--") {
        if let Some(n) = opts
            .positional
            .iter()
            .find(|p| p.parse::<i64>().is_ok_and(|v| v < 0))
        {
            return Err(format!("{}{n}: unknown option", help::usage()));
        }
    }
    opts.given = given(&matches, &cmd);
    opts.key_files = key_files(key_file_cmd, argv);
    opts.veracrypt_pim = matches.get_one::<u32>("veracrypt-pim").copied();
    Ok(opts)
}

/// The options on the command line (long names, in the order given) and the values of those
/// that take a string.
fn given(m: &clap::ArgMatches, cmd: &clap::Command) -> Given {
    let mut seen: Vec<(usize, String)> = Vec::new();
    let mut values = Vec::new();
    for id in m.ids() {
        let id = id.as_str();
        if m.value_source(id) != Some(ValueSource::CommandLine) {
            continue;
        }
        let Some(long) = cmd
            .get_arguments()
            .find(|a| a.get_id() == id)
            .and_then(|a| a.get_long())
        else {
            continue;
        };
        // `--new` (`-N`) is cryptsetup's alias of `--encrypt`.
        let long = if long == "new" { "encrypt" } else { long };
        seen.push((m.index_of(id).unwrap_or(usize::MAX), long.to_string()));
        // Options whose value is a string (a numeric one is not a String here).
        if let Ok(Some(v)) = m.try_get_one::<String>(id) {
            values.push((long.to_string(), v.clone()));
        }
    }
    seen.sort();
    Given {
        options: seen.into_iter().map(|(_, l)| l).collect(),
        values,
    }
}

/// What to say of a command line the parser refused: cryptsetup's words for a bad number
/// (after its usage text), otherwise the parser's first line.
fn parse_error(e: &clap::Error, argv: &[OsString]) -> String {
    use clap::error::{ContextKind, ErrorKind};
    if e.kind() == ErrorKind::ValueValidation {
        let arg = e
            .get(ContextKind::InvalidArg)
            .map(|a| a.to_string())
            .unwrap_or_default();
        let what = if arg.contains("--key-slot") {
            "Key slot is invalid."
        } else {
            "invalid numeric value"
        };
        return format!("{}{}: {what}", help::usage(), program_name());
    }
    if e.kind() == ErrorKind::UnknownArgument {
        // popt's words, after the usage text: "--bogus: unknown option", "-1: unknown option".
        if let Some(arg) = e.get(ContextKind::InvalidArg) {
            // popt names the word as given (`--bogus=3`), clap only the option.
            let arg = arg.to_string();
            let word = argv
                .iter()
                .map(|a| a.to_string_lossy())
                .find(|a| {
                    a.strip_prefix(arg.as_str())
                        .is_some_and(|r| r.starts_with('='))
                })
                .map_or(arg, |a| a.into_owned());
            return format!("{}{word}: unknown option", help::usage());
        }
    }
    first_line(&e.to_string())
}

fn first_line(msg: &str) -> String {
    msg.lines()
        .next()
        .unwrap_or("invalid arguments")
        .trim_start_matches("error: ")
        .to_string()
}

/// Every `-d`/`--key-file` on the command line, in order (clap keeps only the last), parsed
/// with `cmd` ([`definition::command`]).
fn key_files(cmd: clap::Command, argv: &[OsString]) -> Vec<String> {
    cmd.mut_arg("key_file", |a| a.action(ArgAction::Append))
        .try_get_matches_from(argv)
        .ok()
        .and_then(|m| {
            m.get_many::<String>("key_file")
                .map(|v| v.cloned().collect())
        })
        .unwrap_or_default()
}

/// The first `--debug` line, as cryptsetup's `# cryptsetup 2.6.1 processing "..."`.
pub fn debug_header(argv: &[OsString]) -> String {
    let line: Vec<String> = argv
        .iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    format!(
        "lukskit {} (cryptsetup 2.6.1) processing \"{}\"",
        env!("CARGO_PKG_VERSION"),
        line.join(" ")
    )
}

/// `--help`, `help [ACTION]`, `ACTION --help` and no action at all: Some(exit code) when
/// handled here.
pub fn help(o: &Opts) -> Option<i32> {
    let first = o.positional.first().map(String::as_str);
    let topic = match first {
        Some("help") => Some(o.positional.get(1).map(String::as_str)),
        Some(a) if o.help => Some(Some(a)),
        None if o.help => Some(None),
        None => {
            eprint!("{}", help::usage());
            eprintln!("{}: Argument <action> missing.", program_name());
            return Some(1);
        }
        Some(_) => None,
    }?;
    match topic {
        None => print!("{}", help::main_help()),
        Some(a) => match help::action_help(a) {
            Some(text) => print!("{text}"),
            None => {
                eprintln!("{}", unknown_action(a));
                return Some(1);
            }
        },
    }
    Some(0)
}

/// What lukskit says of an action it does not run: cryptsetup's actions it lacks are named
/// as such, anything else is unknown.
pub fn unknown_action(a: &str) -> String {
    if UNSUPPORTED.contains(&a) {
        format!(
            "Action {a} is not supported by lukskit yet (cryptsetup 2.6.1 has it). \
             See '{} --help' for the actions lukskit has.",
            program_name()
        )
    } else {
        format!("Unknown action {a}.")
    }
}

/// Number of arguments an action line requires (its words after the first, then every
/// `<...>` outside brackets).
fn required_args(name: &str, args: &str) -> usize {
    let mut depth = 0usize;
    let mut n = name.split(' ').count() - 1;
    for c in args.chars() {
        match c {
            '[' => depth += 1,
            ']' => depth = depth.saturating_sub(1),
            '<' if depth == 0 => n += 1,
            _ => {}
        }
    }
    n
}

/// cryptsetup's check of an action's argument count (its `help_args`, before any option is
/// looked at): fewer arguments than the action requires is "ACTION: requires ARGS as
/// arguments" after the usage, ACTION the canonical name (`luksOpen` is `open`). With
/// `--test-args` an action line with a second word (`image encrypt`) must also match it.
/// `reencrypt` requires none here (cryptsetup checks its device itself); lukskit's own
/// actions (`image`, `crypttab`, `rename`) say what they need themselves, unless
/// `--test-args`.
fn missing_arguments(o: &Opts, canon: &str) -> Option<String> {
    if canon == "reencrypt"
        || (!o.test_args && matches!(canon, "image" | "crypttab" | "rename"))
        || (!o.test_args && canon == "status" && !crate::invoked_as_cryptsetup())
    {
        return None;
    }
    let given = o.positional.len() - 1;
    let lines = lines_of(canon);
    let fits = lines.iter().any(|l| {
        let word = l.name.split(' ').nth(1);
        let matches_word =
            !o.test_args || word.is_none_or(|w| o.positional.get(1).map(String::as_str) == Some(w));
        matches_word && given >= required_args(l.name, l.args)
    });
    if fits {
        return None;
    }
    // cryptsetup 2.6.1's words for `token` predate its `unassign` (lukskit's table also
    // names `bind-tang`).
    let args = match canon {
        "token" => "<add|remove|import|export> <device>",
        _ => lines[0].args,
    };
    Some(format!("{canon}: requires {args} as arguments"))
}

/// Checks before the action runs, as cryptsetup 2.6.1 makes them: an action lukskit lacks
/// (exit 1, but `--test-args` checks its command line as cryptsetup would), then the
/// argument count ([`missing_arguments`]), then cryptsetup's checks of the options ([`checks`]),
/// then `--test-args` ends here and an option lukskit does not implement stops an action run.
/// Some(exit code) when the action must not run.
pub fn before_action(o: &Opts) -> Option<i32> {
    let action = o.positional[0].as_str();
    if action.starts_with("__") {
        return None;
    }
    let known = canonical(action);
    if known.is_none() && !(o.test_args && UNSUPPORTED.contains(&action)) {
        eprintln!("{}", unknown_action(action));
        return Some(1);
    }
    if let Some(canon) = known {
        if let Some(msg) = missing_arguments(o, canon) {
            eprint!("{}", help::usage());
            eprintln!("{}: {msg}", program_name());
            return Some(1);
        }
    }
    if let Some(msg) = checks::check(o, &o.given, o.key_files.len()) {
        // cryptsetup prints its usage, then the message.
        eprint!("{}", help::usage());
        eprintln!("{}: {msg}", program_name());
        return Some(1);
    }
    if o.test_args {
        println!("No action taken. Invoked with --test-args option.");
        return Some(0);
    }
    if let Some(msg) = checks::not_implemented(&o.given) {
        eprintln!("{msg}");
        return Some(1);
    }
    lukskit_volume::memory_hard::set_serialized(o.serialize_memory_hard_pbkdf);
    None
}

/// A hint after "Nothing to read on input." for a person at a terminal: standard input is
/// not a terminal (so no prompt could be shown) and no key file was named. Only when standard
/// error is a terminal, so that scripts see exactly cryptsetup's message.
pub fn input_hint(e: &crate::errors::CliError, o: &Opts) -> Option<String> {
    if !e.is_nothing_to_read() {
        return None;
    }
    let key_file_named = o.key_file.is_some()
        || o.new_keyfile.is_some()
        || (o.positional.len() > 2
            && matches!(
                o.positional[0].as_str(),
                "luksFormat" | "luksAddKey" | "luksRemoveKey" | "luksChangeKey" | "luksConvertKey"
            ));
    if key_file_named || std::io::stdin().is_terminal() || !std::io::stderr().is_terminal() {
        return None;
    }
    Some(format!(
        "Standard input is not a terminal and gave no passphrase: type it at a terminal, or \
         pass a key file with -d FILE (see '{} help {}').",
        program_name(),
        o.positional[0]
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn required_argument_counts() {
        assert_eq!(
            required_args("open", "<device> [--type <type>] [<name>]"),
            1
        );
        assert_eq!(required_args("luksKillSlot", "<device> <key slot>"), 2);
        assert_eq!(required_args("benchmark", "[--cipher <cipher>]"), 0);
        assert_eq!(required_args("image encrypt", "<plaintext> <image>"), 3);
    }

    #[test]
    fn key_file_twice_is_counted() {
        let argv: Vec<OsString> = ["lukskit", "luksDump", "img", "-d", "a", "--key-file=b"]
            .iter()
            .map(OsString::from)
            .collect();
        assert_eq!(key_files(definition::command(), &argv), ["a", "b"]);
        assert_eq!(key_files(definition::command(), &argv[..5]), ["a"]);
        assert_eq!(parse(&argv).unwrap().key_files, ["a", "b"]);
    }
}
