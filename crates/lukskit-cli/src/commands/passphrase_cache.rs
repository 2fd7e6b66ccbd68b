//! `crypttab open`'s passphrase cache: what Debian's `decrypt_keyctl` keyscript does for
//! cryptsetup, done by lukskit itself for entries with `keyscript=decrypt_keyctl`. The
//! passphrase is typed once and kept in the kernel keyring, never on disk: a `user` key in
//! the user keyring (`@u`) described `cryptsetup:KEYFIELD` (`cryptsetup` for a key field of
//! `none`), which expires 60 seconds after it was typed. Every entry with the same key field
//! opens with it; one whose open fails with it asks again (and caches the new answer).
//! The key is the one `decrypt_keyctl` itself (and `keyctl search @u user cryptsetup:ID`)
//! would find, so both share the cache.

use crate::errors::{CliError, ExitClass, Result};
use lukskit_crypto::SecretBuf;
use lukskit_crypttab::{CrypttabEntry, KeySpec};
use lukskit_dm::keyctl;
use lukskit_dm::keyring::KEY_SPEC_USER_KEYRING;

/// How long a cached passphrase lives (decrypt_keyctl's `TIMEOUT_`).
pub const CACHE_SECONDS: u32 = 60;

/// The description of an entry's cached passphrase.
pub fn description(e: &CrypttabEntry) -> String {
    match &e.key {
        KeySpec::Prompt => "cryptsetup".into(),
        KeySpec::File(f) => format!("cryptsetup:{f}"),
    }
}

/// The cached passphrase, if the user keyring has one.
fn cached(desc: &str) -> Option<(i32, SecretBuf)> {
    let serial = keyctl::search(KEY_SPEC_USER_KEYRING, "user", desc).ok()??;
    keyctl::read(serial).ok().map(|p| (serial, p))
}

/// Ask for the passphrase and cache it, in place of a cached one that failed (unlinked
/// first, as decrypt_keyctl does: updating it could meet a key that just expired).
fn ask_and_cache(name: &str, desc: &str) -> Result<SecretBuf> {
    let pass = crate::input::get_secret(
        &crate::input::KeySource::Prompt,
        &format!("Caching passphrase for {name}: "),
        false,
    )?;
    if let Some((stale, _)) = cached(desc) {
        let _ = keyctl::unlink(stale, KEY_SPEC_USER_KEYRING);
    }
    let serial =
        keyctl::add("user", desc, pass.as_bytes(), KEY_SPEC_USER_KEYRING).map_err(|e| {
            CliError::invalid(format!("Error adding passphrase to kernel keyring: {e}."))
        })?;
    if let Err(e) = keyctl::set_timeout(serial, CACHE_SECONDS) {
        let _ = keyctl::unlink(serial, KEY_SPEC_USER_KEYRING);
        return Err(CliError::invalid(format!(
            "Error setting timeout on key ({serial}), removing: {e}."
        )));
    }
    Ok(pass)
}

/// Open entry `e` with `open` (which asks for the passphrase once, at most): with the cached
/// passphrase first, else with one asked and cached; after a wrong one, asked again (as
/// decrypt_keyctl asks when cryptdisks tries again), `tries=` times in all (0: until right).
pub fn open_with_cache(e: &CrypttabEntry, mut open: impl FnMut() -> Result<()>) -> Result<()> {
    let desc = description(e);
    let tries = match e.options.tries {
        Some(0) => u32::MAX,
        t => t.unwrap_or(3),
    };
    let mut last = None;
    for attempt in 0..tries {
        let pass = match cached(&desc).filter(|_| attempt == 0) {
            Some((_, p)) => {
                eprintln!("Using cached passphrase for {}.", e.name);
                p
            }
            None => ask_and_cache(&e.name, &desc)?,
        };
        crate::input::preset_passphrase(Some(pass));
        let r = open();
        crate::input::preset_passphrase(None);
        match r {
            Err(err) if err.class == ExitClass::Permission => last = Some(err),
            r => return r,
        }
    }
    Err(last.unwrap_or_else(|| CliError::permission("No key available with this passphrase.")))
}
