//! SIGINT and SIGTERM during a long write (re-encryption, `image encrypt`): caught, so that
//! the command stops at its next safe point and leaves nothing that looks complete, as
//! cryptsetup's re-encryption does.

use std::sync::atomic::{AtomicBool, Ordering};

/// Set by SIGINT/SIGTERM: the run stops at the next safe point, as cryptsetup's does.
static INTERRUPTED: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_: libc::c_int) {
    INTERRUPTED.store(true, Ordering::SeqCst);
}

/// Whether SIGINT or SIGTERM arrived since [`catch_interrupts`].
pub fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::SeqCst)
}

/// Catch SIGINT and SIGTERM (with `SA_RESTART`, so that I/O in flight is not cut short).
pub fn catch_interrupts() {
    for sig in [libc::SIGINT, libc::SIGTERM] {
        // SAFETY: a zeroed sigaction is a valid "no flags, empty mask" value; the handler
        // only stores to an atomic, which is async-signal-safe; the pointers passed are
        // valid for the duration of the call.
        unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = on_signal as *const () as libc::sighandler_t;
            sa.sa_flags = libc::SA_RESTART;
            libc::sigemptyset(&mut sa.sa_mask);
            libc::sigaction(sig, &sa, std::ptr::null_mut());
        }
    }
}
