//! `lukskit` — a cryptsetup-compatible command line for LUKS1/LUKS2 volumes.
//!
//! Invoked as `cryptsetup` (through a symlink) it behaves the same.

mod args;
mod commands;
mod dump;
mod hardening;
mod input;

use args::Opts;
use clap::Parser;
use lukskit_volume::{ErrorKind, VolumeError};

fn exit_text(kind: ErrorKind) -> &'static str {
    match kind {
        ErrorKind::Invalid => "wrong or missing parameters",
        ErrorKind::Permission => "no permission or bad passphrase",
        ErrorKind::NoMemory => "out of memory",
        ErrorKind::Device => "wrong device or file specified",
        ErrorKind::Busy => "device already exists or device is busy",
    }
}

fn main() {
    // Before anything is parsed or read: no core dumps, no ptrace by the same user.
    hardening::protect_secrets();
    let opts = match Opts::try_parse() {
        Ok(o) => o,
        Err(e) => {
            let msg = e.to_string();
            let first = msg.lines().next().unwrap_or("invalid arguments");
            eprintln!("{}", first.trim_start_matches("error: "));
            std::process::exit(1);
        }
    };
    if opts.version {
        // Scripts that check `cryptsetup --version` see the version lukskit mirrors.
        if invoked_as_cryptsetup() {
            println!("cryptsetup 2.6.1 (lukskit {})", env!("CARGO_PKG_VERSION"));
        } else {
            println!(
                "lukskit {} (cryptsetup 2.6.1 compatible)",
                env!("CARGO_PKG_VERSION")
            );
        }
        return;
    }
    if opts.help || opts.positional.is_empty() {
        print!("{}", commands::USAGE);
        if opts.positional.is_empty() && !opts.help {
            std::process::exit(1);
        }
        return;
    }
    input::set_prompt_timeout(opts.timeout.unwrap_or(0));
    let verbose = opts.verbose;
    match commands::run(&opts) {
        Ok(()) => {
            if verbose {
                println!("Command successful.");
            }
        }
        Err(e) => {
            report(&e, verbose);
            std::process::exit(e.kind.exit_code());
        }
    }
}

/// True when started through a link named `cryptsetup`.
fn invoked_as_cryptsetup() -> bool {
    std::env::args_os()
        .next()
        .and_then(|a| {
            std::path::Path::new(&a)
                .file_name()
                .map(|n| n == "cryptsetup")
        })
        .unwrap_or(false)
}

fn report(e: &VolumeError, verbose: bool) {
    if !e.message.is_empty() {
        eprintln!("{}", e.message);
    }
    if verbose {
        eprintln!(
            "Command failed with code -{} ({}).",
            e.kind.exit_code(),
            exit_text(e.kind)
        );
    }
}
