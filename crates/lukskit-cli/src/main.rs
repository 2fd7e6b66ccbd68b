//! `lukskit` — a cryptsetup-compatible command line for LUKS1/LUKS2 volumes.
//!
//! Invoked as `cryptsetup` (through a symlink) it behaves the same.

mod args;
mod checks;
mod commands;
mod debug;
mod definition;
mod dump;
mod errors;
mod hardening;
mod help;
mod input;
mod interrupt;
mod option_tables;
mod reencrypt_messages;
mod resolve;
mod startup;

use args::Opts;
use errors::CliError;

fn main() {
    // Before anything is parsed or read: no core dumps, no ptrace by the same user.
    hardening::protect_secrets();
    let argv: Vec<std::ffi::OsString> = std::env::args_os().collect();
    let mut opts = match startup::parse(&argv) {
        Ok(o) => o,
        Err(msg) => {
            eprintln!("{msg}");
            std::process::exit(1);
        }
    };
    if opts.debug {
        debug::enable();
        debug::log(startup::debug_header(&argv));
    }
    if opts.version {
        // Scripts that check `cryptsetup --version` see the version lukskit mirrors, and
        // cryptsetup's build flags for what lukskit does too: BLKID (signature and file
        // system probes: broken LUKS metadata beside other signatures, the file system's
        // block size against --sector-size), KEYRING (LUKS2 volume keys of dm-crypt
        // mappings in the kernel keyring). Upstream's tests run their blkid cases on it.
        const FLAGS: &str = "flags: BLKID KEYRING";
        if invoked_as_cryptsetup() {
            println!(
                "cryptsetup 2.6.1 {FLAGS} (lukskit {})",
                env!("CARGO_PKG_VERSION")
            );
        } else {
            println!(
                "lukskit {} (cryptsetup 2.6.1 compatible) {FLAGS}",
                env!("CARGO_PKG_VERSION")
            );
        }
        return;
    }
    if opts.usage {
        print!("{}", help::usage());
        return;
    }
    if let Some(code) = startup::help(&opts) {
        std::process::exit(code);
    }
    if let Some(code) = startup::before_action(&opts) {
        std::process::exit(code);
    }
    input::set_prompt_timeout(opts.timeout.unwrap_or(0));
    // cryptsetup's --debug implies --verbose (for the actions' verbose lines too).
    opts.verbose |= opts.debug;
    let verbose = opts.verbose;
    debug::log(format_args!("Running command {}.", opts.positional[0]));
    interrupt::catch_for_action(&opts.positional[0]);
    match commands::run(&opts).and_then(|()| interrupt::stop_if_interrupted()) {
        Ok(()) => {
            if verbose {
                println!("Command successful.");
            }
            drain_terminal();
        }
        Err(e) => {
            report(&e, verbose, &opts);
            drain_terminal();
            std::process::exit(e.class.exit_code());
        }
    }
}

/// When lukskit leads its own session on a terminal (as an initramfs runs it with
/// `setsid cttyhack` on the console), its exit hangs the terminal up, and the kernel drops
/// what a slow serial console has not sent yet — such as the last "NAME: opened." line.
/// Wait until standard output and standard error are on the wire first.
fn drain_terminal() {
    use std::io::Write;
    let _ = std::io::stdout().flush();
    // SAFETY: getsid/getpid take no pointers and only read process state.
    let leader = unsafe { libc::getsid(0) == libc::getpid() };
    if !leader {
        return;
    }
    for fd in [1, 2] {
        // SAFETY: isatty and tcdrain only take a file descriptor number; an invalid one
        // makes them fail with EBADF, which is ignored.
        unsafe {
            if libc::isatty(fd) == 1 {
                libc::tcdrain(fd);
            }
        }
    }
}

/// True when started through a link named `cryptsetup`.
pub(crate) fn invoked_as_cryptsetup() -> bool {
    std::env::args_os()
        .next()
        .and_then(|a| {
            std::path::Path::new(&a)
                .file_name()
                .map(|n| n == "cryptsetup")
        })
        .unwrap_or(false)
}

fn report(e: &CliError, verbose: bool, opts: &Opts) {
    if !e.message.is_empty() {
        eprintln!("{}", e.message);
        if let Some(hint) = startup::input_hint(e, opts) {
            eprintln!("{hint}");
        }
    }
    // cryptsetup prints this line on standard output.
    if verbose {
        println!(
            "Command failed with code -{} ({}).",
            e.class.exit_code(),
            e.class.text()
        );
    }
}
