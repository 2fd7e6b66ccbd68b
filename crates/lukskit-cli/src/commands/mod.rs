//! The actions, by cryptsetup's names.

mod align;
mod benchmark;
mod bitlk;
mod config;
mod convert;
mod crypttab;
mod engines;
mod enroll;
mod format;
mod format_unlock;
mod fvault2;
mod header;
mod image;
mod image_engine;
mod keys;
mod open;
mod open_format;
mod open_reencrypt;
mod passphrase_cache;
mod plain_key;
mod reencrypt;
mod reencrypt_claim;
mod reencrypt_decrypt_shift;
mod reencrypt_luks1;
mod reencrypt_notice;
mod reencrypt_progress;
mod reencrypt_shift;
mod signature;
mod tcrypt;
mod tcrypt_secrets;
mod tokens;
mod vk_keyring;
mod volume_key;

use crate::args::Opts;
use crate::errors::{CliError, Result};
use crate::input::KeySource;
use lukskit_format::VolumeType;

/// Run the action named by the first positional argument.
pub fn run(o: &Opts) -> Result<()> {
    let action = o.positional[0].as_str();
    let args = &o.positional[1..];
    if action == "image" {
        // The engine of the data segments (benchmark reads --engine itself).
        let kind = match o.engine.as_deref() {
            None | Some("lukskit") | Some("auto") => lukskit_crypto::engine::EngineKind::Lukskit,
            Some("kernel") => {
                if !lukskit_crypto::engine::kernel_api::af_alg_available() {
                    return Err(CliError::invalid(
                        "Required kernel crypto interface not available.",
                    ));
                }
                lukskit_crypto::engine::EngineKind::Kernel
            }
            Some(other) => {
                return Err(CliError::invalid(format!(
                    "Unknown engine {other} (lukskit, kernel or auto)."
                )))
            }
        };
        lukskit_crypto::engine::set_data_engine(kind);
    }
    match action {
        "luksFormat" => format::luks_format(o, args),
        "isLuks" => header::is_luks(o, args),
        "luksUUID" => header::luks_uuid(o, args),
        "luksDump" => header::luks_dump(o, args),
        "tcryptDump" => tcrypt::tcrypt_dump(o, args),
        "bitlkDump" => bitlk::dump(o, args),
        "luksAddKey" => keys::add_key(o, args),
        "luksRemoveKey" => keys::remove_key(o, args),
        "luksChangeKey" => keys::change_key(o, args),
        "luksConvertKey" => keys::convert_key(o, args),
        "luksKillSlot" => keys::kill_slot(o, args),
        // cryptsetup's `open --refresh [DEVICE] NAME` is the refresh action, and both take
        // the device before the name (`refresh [DEVICE] NAME`): the name is the last argument.
        "open" | "luksOpen" | "plainOpen" | "create" if o.refresh => {
            open::refresh(o, &args[args.len().saturating_sub(1)..])
        }
        "open" | "luksOpen" | "plainOpen" | "create" => open::open(o, action, args),
        "tcryptOpen" | "bitlkOpen" | "fvault2Open" | "loopaesOpen" => {
            let mut typed = o.clone();
            typed.r#type = Some(action.trim_end_matches("Open").to_string());
            open::open(&typed, "open", args)
        }
        "close" | "remove" | "luksClose" | "plainClose" | "tcryptClose" | "bitlkClose"
        | "fvault2Close" | "loopaesClose" => open::close(o, args),
        "fvault2Dump" => fvault2::dump(o, args),
        "status" => open::status(o, args),
        "luksSuspend" => open::suspend(o, args),
        "luksResume" => open::resume(o, args),
        "resize" => open::resize(o, args),
        "refresh" => open::refresh(o, &args[args.len().saturating_sub(1)..]),
        lukskit_activate::userspace::launch::SERVE_ARG => open::serve_child(),
        "__generate-docs" => generate_docs(args),
        "luksHeaderBackup" => header::backup(o, args),
        "luksHeaderRestore" => header::restore(o, args),
        "erase" | "luksErase" => header::erase(o, args),
        "config" => config::config(o, args),
        "convert" => convert::convert(o, args),
        "repair" if reencrypt::repair_needs_metadata_upgrade(o, args) => {
            reencrypt::repair_metadata(o, args)
        }
        "repair" if reencrypt::repair_needs_recovery(o, args) => reencrypt::repair(o, args),
        "repair" => config::repair(o, args),
        "reencrypt" => reencrypt::reencrypt(o, args),
        "token" => config::token(o, args),
        "benchmark" => benchmark::benchmark(o, args),
        "engines" => engines::engines(o, args),
        "image" => image::image(o, args),
        "crypttab" => crypttab::crypttab(o, args),
        "rename" => crypttab::rename(o, args),
        other => Err(CliError::invalid(format!("Unknown action {other}."))),
    }
}

/// `lukskit __generate-docs DIR`: the man page and shell completions under DIR (see
/// `scripts/gen-docs.sh`).
fn generate_docs(args: &[String]) -> Result<()> {
    need_args(args, 1, 1, "<directory>")?;
    crate::help::write_docs(&args[0])
        .map_err(|e| CliError::invalid(format!("Cannot write documentation: {e}.")))
}

/// Load the LUKS header of `device` (or of `o.header`), logging it for `--debug`.
pub fn load_volume(
    o: &Opts,
    device: &str,
    access: lukskit_volume::device::Access,
) -> Result<lukskit_volume::Volume> {
    load_volume_typed(o, device, access, requested_luks(o)).map_err(CliError::from)
}

/// [`load_volume`] for the actions that exist only for LUKS2 (`config`, `token`,
/// `luksConvertKey`): as cryptsetup's load of the LUKS2 type, anything else, a LUKS1 header
/// or a damaged one, is "not a valid LUKS2 device".
pub fn load_luks2_volume(
    o: &Opts,
    device: &str,
    access: lukskit_volume::device::Access,
) -> Result<lukskit_volume::Volume> {
    use lukskit_volume::VolumeError;
    load_volume_typed(o, device, access, Some(VolumeType::Luks2)).map_err(|e| match e {
        VolumeError::NotLuks { path } | VolumeError::InvalidHeader { path, .. } => {
            CliError::from(VolumeError::NotLuks2 { path })
        }
        other => CliError::from(other),
    })
}

/// [`load_volume`] with the error of the volume layer, for actions that word it their own
/// way.
pub fn load_volume_typed(
    o: &Opts,
    device: &str,
    access: lukskit_volume::device::Access,
    requested: Option<VolumeType>,
) -> std::result::Result<lukskit_volume::Volume, lukskit_volume::VolumeError> {
    let from = o.header.as_deref().unwrap_or(device);
    crate::debug::log(format_args!(
        "Trying to load any crypt type from device {from}."
    ));
    let vol =
        lukskit_volume::Volume::load_requested(device, o.header.as_deref(), access, requested);
    match &vol {
        Ok(v) => crate::debug::log(format_args!(
            "Loaded {} header of device {from} (UUID {}, {} keyslots active).",
            v.type_name(),
            v.uuid(),
            v.active_keyslots().map_or(0, |s| s.len())
        )),
        Err(e) => crate::debug::log(format_args!(
            "Loading a LUKS header from {from} failed: {}",
            crate::errors::volume(e).message
        )),
    }
    vol
}

/// Require exactly `n` (or between `n` and `max`) action arguments.
pub fn need_args(args: &[String], min: usize, max: usize, usage: &str) -> Result<()> {
    // cryptsetup checks only the minimum; extra arguments are ignored.
    let _ = max;
    if args.len() < min {
        return Err(CliError::invalid(format!(
            "Command requires {usage} as argument."
        )));
    }
    Ok(())
}

/// The LUKS format `--type` asks for (`luks1`, `luks2`), if any: cryptsetup's `luksType`.
pub fn requested_luks(o: &Opts) -> Option<VolumeType> {
    match o.r#type.as_deref() {
        Some("luks1") => Some(VolumeType::Luks1),
        Some("luks2") => Some(VolumeType::Luks2),
        _ => None,
    }
}

/// luksFormat of a LUKS1 volume with another PBKDF than PBKDF2: cryptsetup's warning, then
/// PBKDF2 (the volume layer refuses other PBKDFs for LUKS1).
pub fn luks1_pbkdf_fallback(params: &mut lukskit_volume::format::FormatRequest) {
    if params.kind == lukskit_format::VolumeType::Luks1 {
        if let Some(p) = params.pbkdf.luks1_fallback() {
            eprintln!("Requested PBKDF type is not supported for LUKS1.");
            params.pbkdf = p;
        }
    }
}

/// Source of the existing passphrase: `--key-file` or a prompt.
pub fn existing_key_source(o: &Opts, positional_keyfile: Option<&String>) -> KeySource {
    crate::resolve::key_source(o, positional_keyfile)
}

/// Number of passphrase attempts on a terminal (`--tries`, default 3; 1 without a terminal
/// or with a key file).
pub fn tries(o: &Opts, src: &KeySource) -> u32 {
    crate::resolve::attempts(o.tries, src)
}

/// The absolute path of `path` as dm-crypt tables name a device (an NBD URI as given).
pub(crate) fn absolute(path: &str) -> Result<String> {
    // An NBD URI names a server, not a file (the ciphertext is read over the network).
    if lukskit_volume::device::remote::is_remote(path) {
        return Ok(path.to_string());
    }
    std::fs::canonicalize(path)
        .map(|p| p.display().to_string())
        .map_err(|_| CliError::device(format!("Device {path} does not exist or access denied.")))
}
