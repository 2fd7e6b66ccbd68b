//! `reencrypt` of LUKS1 devices, offline, as cryptsetup 2.6.1's legacy LUKS1 code does it
//! ([`lukskit_reencrypt::legacy`]): the command line's side — the request from the options,
//! the prompts, the messages and the progress output.

use super::{existing_key_source, tries};
use crate::args::Opts;
use crate::errors::{self, CliError, Result};
use crate::input::{self, KeySource};
use lukskit_crypto::spec::CipherSpec;
use lukskit_crypto::SecretBuf;
use lukskit_reencrypt::legacy::{self, LegacyAsk, LegacyEvent, LegacyHost};
use lukskit_volume::{Volume, VolumeError};

/// cryptsetup's choice of its legacy LUKS1 code for a `reencrypt` command line: run it and
/// return `Some`, or `None` for the LUKS2 code. Also refuses what cryptsetup refuses before
/// it chooses (conflicting `--type`, encryption of a LUKS device).
pub fn dispatch(o: &Opts, device: &str) -> Result<Option<()>> {
    let target = crate::resolve::legacy_target(o, device);
    if !legacy::applies(&target)? {
        return Ok(None);
    }
    let cipher = match o.cipher.as_deref() {
        Some(text) => {
            Some(CipherSpec::parse(text).map_err(|e| errors::volume(&VolumeError::from(e)))?)
        }
        None => None,
    };
    let req = crate::resolve::legacy_request(o, target, cipher);
    let mut host = Host {
        o,
        progress: super::reencrypt_progress::Progress::new(o, device),
    };
    legacy::run(&req, &mut host).map_err(|e| e.into_caller(CliError::from))?;
    Ok(Some(()))
}

/// The command line as the run's [`LegacyHost`].
struct Host<'a> {
    o: &'a Opts,
    progress: super::reencrypt_progress::Progress,
}

impl LegacyHost for Host<'_> {
    type Error = CliError;

    fn unlock(&mut self, vol: &Volume, ask: LegacyAsk) -> Result<(u32, SecretBuf)> {
        let o = self.o;
        let slot = match ask {
            LegacyAsk::Keyslot(s) => Some(s),
            LegacyAsk::Any => None,
        };
        let src = existing_key_source(o, None);
        if o.key_file.is_some() {
            // One passphrase, read once.
            let pass = input::get_secret(&src, "", false)?;
            let (s, _) = vol
                .unlock(pass.as_bytes(), slot, false)
                .map_err(|e| errors::volume(&e))?;
            return Ok((s, pass));
        }
        // cryptsetup's `init_passphrase1`: the tries on a terminal.
        let prompt = match slot {
            Some(s) => format!("Enter passphrase for key slot {s}: "),
            None => "Enter any existing passphrase: ".to_string(),
        };
        let n = tries(o, &src);
        let mut attempt = 0;
        loop {
            attempt += 1;
            let pass = input::get_secret(&src, &prompt, false)?;
            match vol.unlock(pass.as_bytes(), slot, false) {
                Ok((s, _)) => {
                    if o.verbose {
                        println!("Key slot {s} unlocked.");
                    }
                    return Ok((s, pass));
                }
                Err(e) if errors::is_wrong_passphrase(&e) && attempt < n => {
                    eprintln!("{}", errors::volume(&e).message);
                }
                Err(e) => return Err(errors::volume(&e)),
            }
        }
    }

    fn new_passphrase(&mut self) -> Result<SecretBuf> {
        match &self.o.key_file {
            Some(_) => input::get_secret(&existing_key_source(self.o, None), "", false),
            None => input::get_secret(&KeySource::Prompt, "Enter new passphrase: ", true),
        }
    }

    fn volume_key_file(&mut self, len: usize) -> Result<Option<SecretBuf>> {
        self.o
            .volume_key_file
            .as_deref()
            .map(|f| super::volume_key::read_volume_key_file(f, len))
            .transpose()
    }

    fn event(&mut self, event: LegacyEvent<'_>) {
        let verbose = self.o.verbose;
        match event {
            LegacyEvent::Resuming(log) => println!("Log file {log} exists, resuming reencryption."),
            LegacyEvent::PbkdfUnsupported => {
                eprintln!("Requested PBKDF type is not supported for LUKS1.")
            }
            LegacyEvent::CopyStarting => crate::interrupt::catch_interrupts(),
            LegacyEvent::HeaderBackupCreated(d) if verbose => {
                println!("LUKS1 header backup of device {d} created.")
            }
            LegacyEvent::KeyslotCreated(s) if verbose => println!("Key slot {s} created."),
            LegacyEvent::MarkedUnusable(d) if verbose => {
                println!("Marking LUKS1 device {d} unusable.")
            }
            LegacyEvent::HeaderRestored(d) if verbose => {
                println!("LUKS1 header on device {d} restored.")
            }
            _ => {}
        }
    }

    fn progress(&mut self, done: u64, total: u64) -> bool {
        self.progress.show(done, total);
        !crate::interrupt::interrupted()
    }
}
