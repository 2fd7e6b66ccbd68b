//! `reencrypt`'s options as a [`ReencryptRequest`], or as a [`LegacyRequest`] for cryptsetup's
//! legacy LUKS1 code.

use crate::args::{parse_device_size, Opts};
use lukskit_crypto::spec::CipherSpec;
use lukskit_format::VolumeType;
use lukskit_reencrypt::legacy::{LegacyMode, LegacyRequest, LegacyTarget};
use lukskit_reencrypt::{Phase, ReencryptRequest, ResilienceName};
use lukskit_volume::reencrypt::Mode;

/// The re-encryption the options ask for. The option checks have made sure that the sizes
/// parse; `--init-only` with `--resume-only`, and `--encrypt` with `--decrypt`, are refused
/// by the command before (where cryptsetup refuses them).
pub fn reencrypt(o: &Opts) -> ReencryptRequest {
    let has = |long: &str| o.given.has(long);
    let size = |long: &str| o.given.value(long).and_then(parse_device_size);
    ReencryptRequest {
        mode: if has("encrypt") {
            Some(Mode::Encrypt)
        } else if has("decrypt") {
            Some(Mode::Decrypt)
        } else {
            None
        },
        phase: if has("init-only") {
            Phase::InitOnly
        } else if has("resume-only") {
            Phase::ResumeOnly
        } else {
            Phase::Full
        },
        resilience: o.given.value("resilience").map(ResilienceName::parse),
        resilience_hash: o.given.value("resilience-hash").map(String::from),
        reduce_device_size: size("reduce-device-size"),
        max_hotzone: size("hotzone-size").unwrap_or(0),
        device_size: o.device_size.as_deref().and_then(parse_device_size),
        sector_size: o.sector_size,
        keep_key: o.keep_key,
        key_slot: o.key_slot,
        header: o.header.as_ref().map(Into::into),
        force_offline: has("force-offline-reencrypt"),
        active_name: o.given.value("active-name").map(String::from),
        pbkdf_given: ["pbkdf", "hash", "pbkdf-force-iterations", "iter-time"]
            .iter()
            .any(|opt| has(opt)),
        disable_locks: o.disable_locks,
    }
}

/// What decides whether cryptsetup's legacy LUKS1 code runs `reencrypt DEVICE`.
pub fn legacy_target(o: &Opts, device: &str) -> LegacyTarget {
    LegacyTarget {
        device: device.to_string(),
        header: o.header.clone(),
        requested: match o.r#type.as_deref() {
            Some("luks1") => Some(VolumeType::Luks1),
            Some("luks2") => Some(VolumeType::Luks2),
            _ => None,
        },
        mode: if o.given.has("encrypt") {
            LegacyMode::Encrypt
        } else if o.decrypt {
            LegacyMode::Decrypt
        } else {
            LegacyMode::Reencrypt
        },
        uuid: o.uuid.clone(),
        resume_only: o.resume_only,
        probe: !o.disable_blkid,
        reduce: o
            .given
            .value("reduce-device-size")
            .and_then(parse_device_size),
    }
}

/// The legacy run the options ask for, on `target`, with the new cipher (parsed).
pub fn legacy_request(o: &Opts, target: LegacyTarget, cipher: Option<CipherSpec>) -> LegacyRequest {
    LegacyRequest {
        target,
        cipher,
        key_bits: o.key_size,
        keep_key: o.keep_key,
        key_slot: o.key_slot,
        key_file: o.key_file.is_some(),
        block_mib: o.block_size.unwrap_or(4),
        pbkdf: super::pbkdf(o),
        direct_io: o.use_directio,
        device_size: o.device_size.is_some(),
    }
}
