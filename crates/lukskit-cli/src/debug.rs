//! `--debug`: cryptsetup-style `# ...` lines on standard output (as cryptsetup prints them).
//! Only names, numbers and outcomes are logged, never a passphrase, key or key file content.

use std::sync::atomic::{AtomicBool, Ordering};

static ENABLED: AtomicBool = AtomicBool::new(false);

/// Switch debug output on.
pub fn enable() {
    ENABLED.store(true, Ordering::Relaxed);
}

/// Whether `--debug` was given.
pub fn enabled() -> bool {
    ENABLED.load(Ordering::Relaxed)
}

/// Print `# <line>` when debugging.
pub fn log(line: impl std::fmt::Display) {
    if enabled() {
        println!("# {line}");
    }
}
