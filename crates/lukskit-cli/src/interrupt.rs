//! SIGINT and SIGTERM: caught during a long write (re-encryption, `image encrypt`), so that
//! the command stops at its next safe point and leaves nothing that looks complete, as
//! cryptsetup's re-encryption does; for the whole run of an action that writes LUKS metadata
//! ([`catch_for_action`]); and from the first secret or answer read on, as cryptsetup 2.6.1
//! catches them for its whole run (`set_int_handler` in `run_action`):
//!
//! * a prompt on the terminal is cut short: the terminal is restored (echo on), the command
//!   ends with "Error reading passphrase from terminal." and exit code 1 (a `YES` question
//!   ends without a word, with its refusal's exit code);
//! * a passphrase being read from a pipe or file is read to its end and the command goes on;
//!   if it then succeeds, the exit code is 1 all the same ([`stop_if_interrupted`], as
//!   cryptsetup's `check_signal` turns a success into `-EINTR`).

use std::sync::atomic::{AtomicBool, Ordering};

/// Set by SIGINT/SIGTERM: the run stops at the next safe point, as cryptsetup's does.
static INTERRUPTED: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_: libc::c_int) {
    INTERRUPTED.store(true, Ordering::SeqCst);
}

/// Whether SIGINT or SIGTERM arrived since [`catch_interrupts`] or [`catch_interrupts_at_prompt`].
pub fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::SeqCst)
}

/// Install [`on_signal`] for SIGINT and SIGTERM with `flags`.
fn install(flags: libc::c_int) {
    for sig in [libc::SIGINT, libc::SIGTERM] {
        // SAFETY: a zeroed sigaction is a valid "no flags, empty mask" value; the handler
        // only stores to an atomic, which is async-signal-safe; the pointers passed are
        // valid for the duration of the call.
        unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = on_signal as *const () as libc::sighandler_t;
            sa.sa_flags = flags;
            libc::sigemptyset(&mut sa.sa_mask);
            libc::sigaction(sig, &sa, std::ptr::null_mut());
        }
    }
}

/// Catch SIGINT and SIGTERM (with `SA_RESTART`, so that I/O in flight is not cut short).
pub fn catch_interrupts() {
    install(libc::SA_RESTART);
}

/// Catch SIGINT and SIGTERM while a prompt or a secret is read: without `SA_RESTART`, so
/// that a `read(2)` of the terminal returns `EINTR` and the prompt can end (cryptsetup's
/// handler has no `SA_RESTART` either). Readers of pipes and files retry on `EINTR`. Call
/// [`catch_interrupts`] after the read: the signals stay caught for the rest of the run.
pub fn catch_interrupts_at_prompt() {
    install(0);
}

/// The actions that write LUKS metadata, for which SIGINT and SIGTERM are caught from the
/// start of the run ([`catch_for_action`]).
const METADATA_WRITERS: &[&str] = &[
    "luksFormat",
    "luksAddKey",
    "luksRemoveKey",
    "luksChangeKey",
    "luksConvertKey",
    "luksKillSlot",
    "luksUUID",
    "luksHeaderRestore",
    "erase",
    "config",
    "convert",
    "repair",
    "reencrypt",
    "token",
];

/// Catch SIGINT and SIGTERM for the whole run of `action` when it writes LUKS metadata, as
/// cryptsetup 2.6.1 does for every action (`set_int_handler` in `run_action`): a Ctrl-C at any
/// step then never kills the process between two writes of a header update (or inside one,
/// which the kernel may cut short at a page boundary), so the update is finished, the run stops
/// at its next safe point (a prompt, a re-encryption step) and the command fails with exit code
/// 1 ([`stop_if_interrupted`]). Killed there instead, `convert` leaves a header that reads as
/// valid but opens with no key, or no header at all (cryptsetup's man page: convert "can
/// destroy the LUKS header in the case of a crash"), and `luksHeaderRestore` a mix of two
/// headers. Other actions (open, close, status, ...) keep the default action of the signals
/// until they read a secret.
pub fn catch_for_action(action: &str) {
    let canonical = crate::definition::canonical(action).unwrap_or(action);
    if METADATA_WRITERS.contains(&canonical) {
        catch_interrupts();
    }
}

/// cryptsetup's `check_signal`: when SIGINT or SIGTERM was caught during the run, the command
/// fails here, without a message (`-EINTR`: exit code 1, "wrong or missing parameters" with
/// `--verbose`). cryptsetup checks after every command that succeeded, and in luksAddKey,
/// luksChangeKey and luksRemoveKey once the existing passphrase is verified, before anything
/// is written (there only when the keyslot it opened is keyslot 0: its check is for a result
/// of 0; lukskit stops whatever the keyslot).
pub fn stop_if_interrupted() -> crate::errors::Result<()> {
    if interrupted() {
        return Err(crate::errors::CliError::invalid(""));
    }
    Ok(())
}
