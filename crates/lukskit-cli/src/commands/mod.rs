//! The actions, by cryptsetup's names.

mod benchmark;
mod config;
mod convert;
mod format;
mod header;
mod image;
mod keys;
mod open;

use crate::args::Opts;
use crate::input::KeySource;
use lukskit_volume::pbkdf::PbkdfOptions;
use lukskit_volume::{Result, VolumeError};

/// The text of `--help`.
pub const USAGE: &str = "\
Usage: lukskit [OPTION...] <action> <action-specific>

<action> is one of:
\tluksFormat <device> [<new key file>] - formats a LUKS device
\topen <device> [<name>] --test-passphrase - checks a passphrase
\tisLuks <device> - tests <device> for LUKS partition header
\tluksUUID <device> - print UUID of LUKS device (set it with --uuid)
\tluksDump <device> - dump LUKS partition information
\tluksAddKey <device> [<new key file>] - add key to LUKS device
\tluksRemoveKey <device> [<key file>] - removes supplied key or key file from LUKS device
\tluksChangeKey <device> [<key file>] - changes supplied key or key file of LUKS device
\tluksConvertKey <device> [<key file>] - converts a key to new pbkdf parameters
\tluksKillSlot <device> <key slot> - wipes key with number <key slot> from LUKS device
\tluksHeaderBackup <device> - Backup LUKS device header and keyslots
\tluksHeaderRestore <device> - Restore LUKS device header and keyslots
\terase <device> - erase all keyslots (remove encryption key)
\tbenchmark [--cipher <cipher>] - benchmarks ciphers and KDF
\timage encrypt <plaintext> <image> - writes a new LUKS1/LUKS2/plain image holding a file
\timage decrypt <image> <plaintext> - writes the plaintext of an image to a file

Installed as (or symlinked to) `cryptsetup`, lukskit accepts the same command lines.
See the README for every option.
";

/// Run the action named by the first positional argument.
pub fn run(o: &Opts) -> Result<()> {
    let action = o.positional[0].as_str();
    let args = &o.positional[1..];
    match action {
        "luksFormat" => format::luks_format(o, args),
        "isLuks" => header::is_luks(o, args),
        "luksUUID" => header::luks_uuid(o, args),
        "luksDump" => header::luks_dump(o, args),
        "luksAddKey" => keys::add_key(o, args),
        "luksRemoveKey" => keys::remove_key(o, args),
        "luksChangeKey" => keys::change_key(o, args),
        "luksConvertKey" => keys::convert_key(o, args),
        "luksKillSlot" => keys::kill_slot(o, args),
        "open" | "luksOpen" | "plainOpen" | "create" => open::open(o, action, args),
        "close" | "remove" | "luksClose" | "plainClose" => open::close(o, args),
        "status" => open::status(o, args),
        "luksSuspend" => open::suspend(o, args),
        "luksResume" => open::resume(o, args),
        "resize" => open::resize(o, args),
        "refresh" => open::refresh(o, args),
        lukskit_activate::userspace::launch::SERVE_ARG => open::serve_child(),
        "luksHeaderBackup" => header::backup(o, args),
        "luksHeaderRestore" => header::restore(o, args),
        "erase" | "luksErase" => header::erase(o, args),
        "config" => config::config(o, args),
        "convert" => convert::convert(o, args),
        "repair" => config::repair(o, args),
        "token" => config::token(o, args),
        "benchmark" => benchmark::benchmark(o, args),
        "image" => image::image(o, args),
        other => Err(VolumeError::invalid(format!("Unknown action {other}."))),
    }
}

/// Require exactly `n` (or between `n` and `max`) action arguments.
pub fn need_args(args: &[String], min: usize, max: usize, usage: &str) -> Result<()> {
    // cryptsetup checks only the minimum; extra arguments are ignored.
    let _ = max;
    if args.len() < min {
        return Err(VolumeError::invalid(format!(
            "Command requires {usage} as argument."
        )));
    }
    Ok(())
}

/// The LUKS format `--type` asks for (`luks1`, `luks2`), if any: cryptsetup's `luksType`.
pub fn requested_luks(o: &Opts) -> Option<lukskit_format::detect::LuksVersion> {
    use lukskit_format::detect::LuksVersion;
    match o.r#type.as_deref() {
        Some("luks1") => Some(LuksVersion::Luks1),
        Some("luks2") => Some(LuksVersion::Luks2),
        _ => None,
    }
}

/// The PBKDF options of the command line.
pub fn pbkdf_options(o: &Opts) -> PbkdfOptions {
    PbkdfOptions {
        kind: o.pbkdf.clone(),
        hash: o.hash.clone(),
        iter_time_ms: o.iter_time,
        force_iterations: o.pbkdf_force_iterations,
        max_memory_kib: o.pbkdf_memory,
        parallel: o.pbkdf_parallel,
        keyslot_cipher: o.keyslot_cipher.clone(),
        keyslot_key_size_bits: o.keyslot_key_size,
    }
}

/// luksFormat of a LUKS1 volume with another PBKDF than PBKDF2: cryptsetup's warning, then
/// PBKDF2 (the volume layer refuses other PBKDFs for LUKS1).
pub fn luks1_pbkdf_fallback(params: &mut lukskit_volume::format::FormatParams) {
    if params.kind == lukskit_volume::format::FormatType::Luks1 {
        if let Some(p) = params.pbkdf.luks1_fallback() {
            eprintln!("Requested PBKDF type is not supported for LUKS1.");
            params.pbkdf = p;
        }
    }
}

/// Source of the existing passphrase: `--key-file` or a prompt.
pub fn existing_key_source(o: &Opts, positional_keyfile: Option<&String>) -> KeySource {
    match positional_keyfile.or(o.key_file.as_ref()) {
        Some(p) => KeySource::File {
            path: p.clone(),
            offset: o.keyfile_offset.unwrap_or(0),
            size: o.keyfile_size,
        },
        None => KeySource::Prompt,
    }
}

/// Number of passphrase attempts on a terminal (`--tries`, default 3; 1 without a terminal
/// or with a key file).
pub fn tries(o: &Opts, src: &KeySource) -> u32 {
    match src {
        KeySource::Prompt if crate::input::interactive() => o.tries.unwrap_or(3).max(1),
        _ => 1,
    }
}
