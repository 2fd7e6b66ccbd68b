//! `lukskit` — a cryptsetup-compatible command line for LUKS1/LUKS2 volumes.
//!
//! Invoked as `cryptsetup` (through a symlink) it behaves the same.

mod args;
mod commands;
mod dump;
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
    // Never leave a core dump with secrets in it.
    // SAFETY: setrlimit with a valid, fully initialised rlimit struct.
    unsafe {
        let zero = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        libc::setrlimit(libc::RLIMIT_CORE, &zero);
    }
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
        println!(
            "lukskit {} (cryptsetup 2.6 compatible)",
            env!("CARGO_PKG_VERSION")
        );
        return;
    }
    if opts.help || opts.positional.is_empty() {
        print!("{}", commands::USAGE);
        if opts.positional.is_empty() && !opts.help {
            std::process::exit(1);
        }
        return;
    }
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
