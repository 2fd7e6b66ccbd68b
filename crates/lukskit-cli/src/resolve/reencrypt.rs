//! `reencrypt`'s options as a [`ReencryptRequest`].

use crate::args::{parse_device_size, Opts};
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
