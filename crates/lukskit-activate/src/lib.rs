//! # lukskit-activate — an unlocked volume made available as a block device
//!
//! The one place that decides how a volume is exposed, and that every command acting on an
//! active mapping goes through:
//!
//! * [`kernel`] — a kernel dm-crypt mapping, made exactly as cryptsetup 2.6 makes it (through
//!   crate `lukskit-dm`), wherever the kernel has device-mapper;
//! * [`online_reencrypt`] — cryptsetup's device-mapper stack for online re-encryption
//!   under a kernel mapping;
//! * [`userspace`] — lukskit's own serving process: a FUSE file with a loop device on top
//!   (`/dev/mapper/NAME` a link to it), a FUSE file only, or an NBD export (crate
//!   `lukskit-expose` provides those mechanisms).
//!
//! [`activate_plan`] makes the layers of an [`ActivationPlan`] (one for most volumes; a
//! TrueCrypt cascade or dm-integrity under dm-crypt stack more) with the chosen [`Backend`]
//! ([`activate`] and [`activate_table`] make the plans of the common cases); [`find`] returns an active one as
//! a [`Mapping`], whose [`Mapping::status`], [`Mapping::close`], [`Mapping::suspend`],
//! [`Mapping::resume`] and [`Mapping::resize`] work whatever the backend. Errors are typed
//! ([`ActivateError`]); nothing here prints. Process-wide hardening of the serving process
//! (no core dumps, not dumpable, locked memory) is the binary's job.

mod dif_mapping;
mod error;
pub mod integrity;
pub mod integrity_wipe;
pub mod kernel;
mod layers;
pub mod online_reencrypt;
mod plan;
mod request;
mod status;
pub mod userspace;

pub use error::{ActivateError, Result};
pub use plan::{activate_plan, ActivationPlan, IntegrityLayer, Layer, LayerTable};
pub use request::{
    Backend, BackendChoice, EngineRequest, ExposureRequest, KernelOptions, LayoutInfo,
    MappingConfig, NbdExport, NbdTlsConfig,
};
pub use status::{EngineInUse, Exposure, Status};

use lukskit_crypto::SecretBuf;

/// The backend for `choice`. A FUSE file only or an NBD export needs the
/// userspace backend; otherwise `Auto` takes the kernel wherever it has device-mapper with
/// dm-crypt. For a user who is not root: [`ActivateError::NeedsRoot`] for the kernel backend
/// and for a loop device with `/dev/mapper/NAME`, and their state directory is checked
/// ([`ActivateError::UnsafeStateDir`]).
pub fn choose_backend(choice: BackendChoice, config: &MappingConfig) -> Result<Backend> {
    let userspace_only = config.exposure.userspace_only();
    // A user who is not root has the serving process's FUSE file and NBD export; device-mapper
    // and loop devices are root's.
    if !userspace::runtime::is_root() {
        if choice == BackendChoice::Kernel {
            return Err(ActivateError::NeedsRoot {
                what: "The kernel backend (device-mapper)".into(),
            });
        }
        if config.exposure == ExposureRequest::Mapper {
            return Err(ActivateError::NeedsRoot {
                what: format!("A loop device and /dev/mapper/{}", config.name),
            });
        }
        // The user's state directory (made here where missing) is checked before anything
        // is asked.
        userspace::runtime::check_run_dir()?;
    }
    match choice {
        BackendChoice::Kernel if userspace_only => Err(ActivateError::InvalidRequest(
            "A FUSE file only or an NBD export needs the userspace backend.".into(),
        )),
        BackendChoice::Kernel if !kernel::available() => Err(ActivateError::NoDeviceMapper),
        BackendChoice::Kernel => Ok(Backend::Kernel),
        BackendChoice::Userspace => Ok(Backend::Userspace),
        BackendChoice::Auto if !userspace_only && kernel::available() => Ok(Backend::Kernel),
        BackendChoice::Auto => Ok(Backend::Userspace),
    }
}

/// `name` is a valid mapping name that no mapping of either backend uses. A block node at
/// /dev/mapper/NAME with no mapping of that name is stale: the kernel backend replaces it
/// (as cryptsetup does); the userspace backend's link cannot.
fn check_name_free(backend: Backend, name: &str) -> Result<()> {
    userspace::runtime::check_name(name)?;
    let stale_node = backend == Backend::Kernel && lukskit_dm::node::is_block_node(name);
    if find(name)?.is_some()
        || (!stale_node
            && userspace::runtime::mapper_path(name)
                .symlink_metadata()
                .is_ok())
    {
        return Err(ActivateError::NameExists {
            name: name.to_string(),
        });
    }
    Ok(())
}

/// Make `config` available with `backend` and volume key `key` (its plan:
/// [`ActivationPlan::for_volume`]). The name must not be in use by a mapping of either
/// backend.
pub fn activate(
    backend: Backend,
    config: &MappingConfig,
    kernel_opts: &KernelOptions,
    key: &SecretBuf,
) -> Result<()> {
    let plan = ActivationPlan::for_volume(config, key, kernel_opts.integrity_no_journal);
    activate_plan(backend, &plan, kernel_opts)
}

/// Make `config` available with `backend` as one mapping of all the segments of `table`
/// (each crypt segment with its own key): a LUKS2 volume whose re-encryption is in
/// progress, opened as cryptsetup's `LUKS2_activate_multi` does. `config.layout` describes
/// the volume as `status` shows it (the layout after the re-encryption). The name must not
/// be in use.
pub fn activate_table(
    backend: Backend,
    config: &MappingConfig,
    kernel_opts: &KernelOptions,
    table: &lukskit_volume::segment::SegmentTable,
) -> Result<()> {
    if config.layout.integrity.is_some() {
        return Err(ActivateError::Unsupported(
            "Re-encryption of a device with integrity protection is not supported.".into(),
        ));
    }
    let plan = ActivationPlan::single(config.clone(), LayerTable::Segments(table.clone()));
    activate_plan(backend, &plan, kernel_opts)
}

/// Whether `/dev/mapper/NAME` is a block node itself (not a symlink). With no mapping of
/// that name it is a leftover that [`activate`] with the kernel backend replaces.
pub fn mapper_block_node(name: &str) -> bool {
    lukskit_dm::node::is_block_node(mapping_name(name))
}

/// The mapping name of a command-line argument: cryptsetup accepts `/dev/mapper/NAME` too.
pub fn mapping_name(arg: &str) -> &str {
    arg.strip_prefix("/dev/mapper/").unwrap_or(arg)
}

/// An active mapping, whichever backend made it.
pub enum Mapping {
    /// A kernel dm-crypt mapping (made by lukskit or by cryptsetup).
    Kernel(kernel::KernelMapping),
    /// A mapping served by a lukskit serving process.
    Userspace(userspace::UserspaceMapping),
}

/// The active mapping `name` (or `/dev/mapper/NAME`): `Ok(None)` when there is none.
pub fn find(name: &str) -> Result<Option<Mapping>> {
    let name = mapping_name(name);
    if let Some(k) = kernel::find(name)? {
        return Ok(Some(Mapping::Kernel(k)));
    }
    Ok(userspace::find(name)?.map(Mapping::Userspace))
}

/// Every active mapping: the kernel's dm-crypt mappings (lukskit's and cryptsetup's), then
/// lukskit's userspace mappings, each by name.
pub fn list() -> Result<Vec<Mapping>> {
    let mut out = Vec::new();
    for name in kernel::crypt_mapping_names() {
        if let Some(k) = kernel::find(&name)? {
            out.push(Mapping::Kernel(k));
        }
    }
    for name in userspace::mapping_names() {
        if out.iter().any(|m| m.name() == name) {
            continue;
        }
        if let Some(u) = userspace::find(&name)? {
            out.push(Mapping::Userspace(u));
        }
    }
    Ok(out)
}

impl Mapping {
    /// The mapping name.
    pub fn name(&self) -> &str {
        match self {
            Mapping::Kernel(k) => &k.name,
            Mapping::Userspace(u) => &u.name,
        }
    }

    /// `LUKS1`, `LUKS2`, `PLAIN`, ...
    pub fn kind(&self) -> Result<String> {
        Ok(match self {
            Mapping::Kernel(k) => k.kind.clone(),
            Mapping::Userspace(u) => u.config()?.kind.name().to_string(),
        })
    }

    /// The LUKS UUID the mapping was made for, where known.
    pub fn uuid(&self) -> Result<Option<String>> {
        Ok(match self {
            Mapping::Kernel(k) => k.uuid.clone(),
            Mapping::Userspace(u) => u.config()?.uuid.clone(),
        })
    }

    /// The data device (image files by their path).
    pub fn device(&self) -> Result<String> {
        Ok(match self {
            Mapping::Kernel(k) => k.device.clone(),
            Mapping::Userspace(u) => u.config()?.device.clone(),
        })
    }

    /// The detached header the mapping was opened with, where the backend records it.
    pub fn header(&self) -> Result<Option<String>> {
        Ok(match self {
            Mapping::Kernel(_) => None,
            Mapping::Userspace(u) => u.config()?.header.clone(),
        })
    }

    /// What `status` shows (`header`: a detached header to read the type from).
    pub fn status(&self, header: Option<&str>) -> Result<Status> {
        match self {
            Mapping::Kernel(k) => Ok(k.status(header)),
            Mapping::Userspace(u) => u.status(),
        }
    }

    /// Remove the mapping (refused while it is in use). `deferred` (kernel only): remove it
    /// when its last user closes it.
    pub fn close(&self, deferred: bool) -> Result<()> {
        match self {
            Mapping::Kernel(k) => k.close(deferred),
            Mapping::Userspace(_) if deferred => Err(ActivateError::Unsupported(
                "--deferred needs a kernel mapping.".into(),
            )),
            Mapping::Userspace(u) => u.close(),
        }
    }

    /// Cancel a deferred removal (`close --cancel-deferred`; kernel only).
    pub fn cancel_deferred(&self) -> Result<()> {
        match self {
            Mapping::Kernel(k) => k.cancel_deferred(),
            Mapping::Userspace(_) => Err(ActivateError::Unsupported(
                "--cancel-deferred needs a kernel mapping.".into(),
            )),
        }
    }

    /// Whether the mapping is suspended.
    pub fn is_suspended(&self) -> Result<bool> {
        match self {
            Mapping::Kernel(k) => Ok(k.is_suspended()),
            Mapping::Userspace(u) => u.is_suspended(),
        }
    }

    /// `luksSuspend`: hold I/O and wipe the volume key from memory.
    pub fn suspend(&self) -> Result<()> {
        match self {
            Mapping::Kernel(k) => k.suspend(),
            Mapping::Userspace(u) => u.suspend(),
        }
    }

    /// `luksResume` with the volume key `vk` (checked against the header by the caller;
    /// `digest` is the LUKS2 segment digest, which names the key in the kernel keyring;
    /// `None` gives dm-crypt the key itself, as `--disable-keyring` does).
    pub fn resume(&self, vk: &SecretBuf, digest: Option<u32>) -> Result<()> {
        match self {
            Mapping::Kernel(k) => k.resume(vk, digest),
            Mapping::Userspace(u) => u.resume(vk),
        }
    }

    /// `refresh`: the same mapping with the dm-crypt flags asked for now (kernel mappings).
    pub fn refresh(
        &self,
        vk: &SecretBuf,
        allow_discards: bool,
        opts: &KernelOptions,
    ) -> Result<()> {
        match self {
            Mapping::Kernel(k) => k.refresh(vk, allow_discards, opts),
            Mapping::Userspace(_) => Err(ActivateError::Unsupported(
                "refresh of a userspace (FUSE or NBD) mapping is not supported by lukskit yet."
                    .into(),
            )),
        }
    }

    /// Give the mapping another name (kernel mappings: `DM_DEV_RENAME`, as `dmsetup
    /// rename`, `/dev/mapper` nodes moved along). The name must not be in use.
    pub fn rename(&self, new_name: &str) -> Result<()> {
        userspace::runtime::check_name(new_name)?;
        if find(new_name)?.is_some()
            || userspace::runtime::mapper_path(new_name)
                .symlink_metadata()
                .is_ok()
        {
            return Err(ActivateError::NameExists {
                name: new_name.to_string(),
            });
        }
        match self {
            Mapping::Kernel(k) => k.rename(new_name),
            Mapping::Userspace(_) => Err(ActivateError::Unsupported(
                "rename of a userspace (FUSE or NBD) mapping is not supported by lukskit yet."
                    .into(),
            )),
        }
    }

    /// Whether [`Mapping::resize`] needs the volume key.
    pub fn resize_needs_volume_key(&self) -> bool {
        matches!(self, Mapping::Kernel(k) if k.needs_volume_key())
    }

    /// Change the data size to `sectors` (512-byte sectors; `None`: the whole device).
    pub fn resize(
        &self,
        sectors: Option<u64>,
        vk: Option<(&SecretBuf, Option<u32>)>,
    ) -> Result<()> {
        match self {
            Mapping::Kernel(k) => k.resize(sectors, vk),
            Mapping::Userspace(u) => u.resize(sectors),
        }
    }
}
