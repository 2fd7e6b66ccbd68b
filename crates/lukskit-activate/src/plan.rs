//! Activation plans: what a volume is made of as block devices, bottom first.
//!
//! Every activation is an [`ActivationPlan`] of one or more [`Layer`]s, each one device (a
//! kernel mapping, or a mapping of lukskit's serving process) with its name, the device under
//! it and what it maps ([`LayerTable`]):
//!
//! * an ordinary LUKS1/LUKS2/plain volume: one layer, the volume's own layout
//!   ([`LayerTable::Volume`]);
//! * a LUKS2 volume whose re-encryption is in progress, BitLocker, FileVault 2, loop-AES:
//!   one layer of ready segments ([`LayerTable::Segments`]);
//! * a TrueCrypt/VeraCrypt cascade of three ciphers: three segment layers (`NAME_2` on the
//!   device, `NAME_1` on it, `NAME` on top), as cryptsetup stacks them;
//! * LUKS2 authenticated encryption: dm-integrity (`NAME_dif`, [`LayerTable::Integrity`])
//!   with dm-crypt on it, as cryptsetup's `LUKS2_activate` stacks them.
//!
//! [`activate_plan`] is the one place that turns a plan into devices: the kernel renderer
//! (`kernel::open_layer`) or the userspace builder (`userspace::launch`) for each layer, bottom
//! first, removing what it made when a layer fails.
//!
//! The online re-encryption overlay of a kernel mapping (`online_reencrypt`) is not a plan:
//! it rewrites a live mapping in place (its table is reloaded, helper devices come and go
//! per hot zone) rather than making a new stack.

use crate::error::{ActivateError, Result};
pub use crate::layers::{ActivationPlan, IntegrityLayer, Layer, LayerTable};
use crate::request::{Backend, KernelOptions};
use crate::{check_name_free, find, integrity, kernel, userspace};

/// Make every layer of `plan` with `backend`, bottom first; a layer that fails removes the
/// ones already made (top-most first), so nothing is left half-stacked. No layer's name may
/// be in use by a mapping of either backend. A plan with dm-integrity is made in the kernel
/// whatever `backend` says (there is no userspace implementation), by root only.
pub fn activate_plan(
    backend: Backend,
    plan: &ActivationPlan,
    kernel_opts: &KernelOptions,
) -> Result<()> {
    if plan.layers.is_empty() {
        return Err(ActivateError::InvalidRequest(
            "An activation needs at least one layer.".into(),
        ));
    }
    let backend = if plan.kernel_only() {
        if !userspace::runtime::is_root() {
            return Err(ActivateError::NeedsRoot {
                what: "Authenticated encryption (dm-integrity under dm-crypt)".into(),
            });
        }
        if !integrity::available() {
            return Err(integrity::no_dm());
        }
        Backend::Kernel
    } else {
        backend
    };
    if backend == Backend::Userspace && kernel_opts.any_perf_flag() {
        return Err(ActivateError::Unsupported(
            "The --perf-* options need the kernel backend.".into(),
        ));
    }
    for layer in &plan.layers {
        check_name_free(backend, &layer.config.name)?;
    }
    let mut made: Vec<&str> = Vec::new();
    for layer in &plan.layers {
        if let Err(e) = make_layer(backend, layer, kernel_opts) {
            for name in made.iter().rev() {
                remove_layer(backend, name);
            }
            return Err(e);
        }
        made.push(&layer.config.name);
    }
    Ok(())
}

/// One layer, by the kernel renderer or the userspace builder.
fn make_layer(backend: Backend, layer: &Layer, opts: &KernelOptions) -> Result<()> {
    let config = &layer.config;
    match (&layer.table, backend) {
        (LayerTable::Integrity(i), _) => integrity::open_layer(config, opts, i),
        (LayerTable::Volume(key), _) if config.layout.integrity.is_some() => {
            integrity::open_crypt_layer(config, opts, key)
        }
        (LayerTable::Volume(key), Backend::Kernel) => kernel::open(config, opts, key),
        (LayerTable::Segments(t), Backend::Kernel) => kernel::open_table(config, opts, t),
        (LayerTable::Volume(key), Backend::Userspace) => userspace::launch::start(config, key),
        (LayerTable::Segments(t), Backend::Userspace) => {
            let mut c = config.clone();
            c.segments = true;
            userspace::launch::start_table(&c, t)
        }
    }
}

/// Remove a layer made by [`make_layer`] (best effort: the error that stopped the plan is
/// the one reported). dm-integrity layers are not crypt mappings [`find`] knows.
fn remove_layer(backend: Backend, name: &str) {
    if let Ok(Some(m)) = find(name) {
        let _ = m.close(false);
    } else if backend == Backend::Kernel {
        let _ = integrity::remove_by_name(name);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::request::{ExposureRequest, LayoutInfo, MappingConfig};
    use lukskit_crypto::SecretBuf;
    use lukskit_dm::integrity::IntegrityMode;
    use lukskit_format::VolumeType;

    fn config(integrity: Option<&str>) -> MappingConfig {
        MappingConfig {
            name: "vol".into(),
            kind: VolumeType::Luks2,
            uuid: Some("1b2c3d4e-0000-4000-8000-000000000001".into()),
            device: "/dev/vdb".into(),
            header: None,
            layout: LayoutInfo {
                cipher: "aes-xts-plain64".into(),
                offset: 16 << 20,
                size: None,
                sector_size: 4096,
                iv_offset: 0,
                iv_large_sectors: false,
                integrity: integrity.map(str::to_string),
            },
            key_bits: 768,
            read_only: false,
            allow_discards: false,
            exposure: ExposureRequest::Mapper,
            root_storage_daemon: false,
            segments: false,
            engine: crate::request::EngineRequest::default(),
        }
    }

    #[test]
    fn a_volume_without_integrity_is_one_layer_of_its_own_layout() {
        let key = SecretBuf::from_slice(&[7u8; 64]);
        let plan = ActivationPlan::for_volume(&config(None), &key, false);
        assert_eq!(plan.layers.len(), 1);
        assert_eq!(plan.layers[0].config, config(None));
        assert!(
            matches!(&plan.layers[0].table, LayerTable::Volume(k) if k.as_bytes() == [7u8; 64])
        );
        assert!(plan.lower_names().is_empty());
        assert!(!plan.kernel_only());
    }

    #[test]
    fn integrity_is_dm_integrity_with_dm_crypt_on_it_as_cryptsetup_stacks_them() {
        let key = SecretBuf::from_slice(&[9u8; 96]);
        for (no_journal, mode) in [
            (false, IntegrityMode::Journal),
            (true, IntegrityMode::Direct),
        ] {
            let plan = ActivationPlan::for_volume(&config(Some("hmac(sha256)")), &key, no_journal);
            assert_eq!(plan.layers.len(), 2);
            let (lower, upper) = (&plan.layers[0], &plan.layers[1]);
            // NAME_dif on the data device from the data offset on.
            assert_eq!(lower.config.name, "vol_dif");
            assert_eq!(lower.config.device, "/dev/vdb");
            assert_eq!(lower.config.layout.offset, 16 << 20);
            match &lower.table {
                LayerTable::Integrity(i) => {
                    assert_eq!(i.kind, "hmac(sha256)");
                    assert_eq!(i.mode, mode);
                }
                other => panic!("lower layer is {other:?}"),
            }
            // NAME on all of NAME_dif, with the key and the integrity type.
            assert_eq!(upper.config.name, "vol");
            assert_eq!(upper.config.device, "/dev/mapper/vol_dif");
            assert_eq!(upper.config.layout.offset, 0);
            assert_eq!(
                upper.config.layout.integrity.as_deref(),
                Some("hmac(sha256)")
            );
            assert!(matches!(&upper.table, LayerTable::Volume(k) if k.as_bytes() == [9u8; 96]));
            assert_eq!(plan.lower_names(), vec!["vol_dif".to_string()]);
            assert!(plan.kernel_only());
        }
    }
}
