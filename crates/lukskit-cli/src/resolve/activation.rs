//! The activation requests of `open` and the commands that open a mapping for a moment: the
//! mapping asked for ([`MappingConfig`] without what the volume gives), the backend, the
//! kernel's options and the NBD export's TLS.

use crate::args::Opts;
use crate::errors::{CliError, Result};
use lukskit_activate::{self as activate, BackendChoice, KernelOptions, LayoutInfo, MappingConfig};
use lukskit_format::VolumeType;

/// `--backend`: kernel, userspace or (default) whichever this machine offers.
pub fn backend_choice(o: &Opts) -> Result<BackendChoice> {
    match o.backend.as_deref() {
        None => Ok(BackendChoice::Auto),
        Some("kernel") => Ok(BackendChoice::Kernel),
        Some("userspace") => Ok(BackendChoice::Userspace),
        Some(other) => Err(CliError::invalid(format!(
            "Unknown backend {other} (kernel or userspace)."
        ))),
    }
}

/// The dm-crypt options of a kernel mapping (`--perf-*`, `--disable-keyring`, `--shared`,
/// `--integrity-no-journal`), with the LUKS2 segment digest `digest`.
pub fn kernel_options(o: &Opts, digest: Option<u32>) -> KernelOptions {
    KernelOptions {
        same_cpu_crypt: o.perf_same_cpu_crypt,
        submit_from_crypt_cpus: o.perf_submit_from_crypt_cpus,
        no_read_workqueue: o.perf_no_read_workqueue,
        no_write_workqueue: o.perf_no_write_workqueue,
        digest,
        disable_keyring: o.disable_keyring,
        shared: o.shared,
        integrity_no_journal: o.integrity_no_journal,
    }
}

/// `--tls-verify-peer[=yes|no]`: whether TLS clients must present a certificate signed by
/// the CA of `--tls-creds` (yes unless `no` was given).
fn verify_peer(o: &Opts) -> Result<bool> {
    match o.tls_verify_peer.as_deref() {
        None | Some("yes") => Ok(true),
        Some("no") => Ok(false),
        Some(v) => Err(CliError::invalid(format!(
            "Unknown --tls-verify-peer value '{v}' (yes or no)."
        ))),
    }
}

/// The TLS of `open --nbd` from `--tls-creds`, `--tls` and `--tls-verify-peer` (checked;
/// the warnings are `open`'s): required by default on TCP and whenever credentials
/// are given, with client certificates verified unless `--tls-verify-peer=no`; `--tls=off`
/// on TCP is allowed.
pub fn nbd_tls(o: &Opts) -> Result<Option<activate::NbdTlsConfig>> {
    let Some(a) = &o.nbd else {
        if o.tls_creds.is_some() || o.tls.is_some() || o.tls_verify_peer.is_some() {
            return Err(CliError::invalid(
                "Options --tls-creds, --tls and --tls-verify-peer are allowed only with --nbd.",
            ));
        }
        return Ok(None);
    };
    let addr = a
        .parse::<lukskit_expose::nbd::NbdAddress>()
        .map_err(CliError::invalid)?;
    let mode = match o.tls.as_deref() {
        None if addr.is_network() || o.tls_creds.is_some() => "require",
        None => "off",
        Some(m @ ("off" | "on" | "require")) => m,
        Some(m) => {
            return Err(CliError::invalid(format!(
                "Unknown --tls mode '{m}' (off, on or require)."
            )))
        }
    };
    let verify_peer = verify_peer(o)?;
    if mode == "off" {
        if o.tls_creds.is_some() || o.tls_verify_peer.is_some() {
            return Err(CliError::invalid(
                "Options --tls-creds and --tls-verify-peer cannot be combined with --tls=off.",
            ));
        }
        return Ok(None);
    }
    let Some(dir) = &o.tls_creds else {
        return Err(CliError::invalid(if addr.is_network() {
            "An NBD export over TCP needs TLS with client certificates: give --tls-creds DIR \
             with server-cert.pem, server-key.pem and ca-cert.pem, the CA that signed the \
             clients' certificates (client-cert.pem, client-key.pem on the clients)."
        } else {
            "Option --tls needs --tls-creds DIR."
        }));
    };
    let creds = std::fs::canonicalize(dir)
        .map(|p| p.display().to_string())
        .map_err(|e| CliError::invalid(format!("--tls-creds {dir}: {e}")))?;
    // Load the credentials now, so a mistake is reported here and not by the server.
    lukskit_nbd::tls::server_config(std::path::Path::new(&creds), verify_peer)
        .map_err(|e| CliError::invalid(format!("--tls-creds {dir}: {e}")))?;
    Ok(Some(activate::NbdTlsConfig {
        creds,
        required: mode == "require",
        verify_peer,
    }))
}

/// The mapping NAME of a `kind` volume as the options ask for it: `--readonly`,
/// `--allow-discards`, the exposure (`--nbd`, `--nbd-connections`, TLS, `--no-loop`),
/// `--engine`. The caller fills in what the volume gives (device, UUID, layout, key size).
pub fn activation(o: &Opts, name: &str, kind: VolumeType) -> MappingConfig {
    MappingConfig {
        name: name.to_string(),
        kind,
        uuid: None,
        device: String::new(),
        header: None,
        layout: LayoutInfo {
            cipher: String::new(),
            offset: 0,
            size: None,
            sector_size: 512,
            iv_offset: 0,
            iv_large_sectors: false,
            integrity: None,
        },
        key_bits: 0,
        read_only: o.readonly,
        allow_discards: o.allow_discards,
        exposure: match &o.nbd {
            Some(address) => activate::ExposureRequest::Nbd(activate::NbdExport {
                address: address.clone(),
                connections: o.nbd_connections,
                tls: nbd_tls(o).ok().flatten(),
            }),
            None if o.no_loop => activate::ExposureRequest::FuseFile,
            None => activate::ExposureRequest::Mapper,
        },
        root_storage_daemon: root_storage_daemon(),
        segments: false,
        engine: o
            .engine
            .as_deref()
            .and_then(activate::EngineRequest::from_name)
            .unwrap_or_default(),
    }
}

/// Environment variable that says whether a serving process is a root-storage daemon:
/// `1` yes, `0` no; unset: yes when lukskit runs in an initramfs ([`in_initramfs`]).
pub const ROOT_STORAGE_DAEMON_ENV: &str = "LUKSKIT_ROOT_STORAGE_DAEMON";

/// Whether a serving process started now serves the root file system: it is then marked as
/// systemd's root-storage daemons are (`argv[0]` starting with `@`), so that it survives
/// `switch_root` and the shutdown's final kill (systemd's `ROOT_STORAGE_DAEMONS` convention).
fn root_storage_daemon() -> bool {
    match std::env::var(ROOT_STORAGE_DAEMON_ENV).as_deref() {
        Ok("1") => true,
        Ok("0") => false,
        _ => in_initramfs(),
    }
}

/// True in an initramfs: systemd's and dracut's mark `/etc/initrd-release`, or a root file
/// system that is the kernel's rootfs (ramfs or tmpfs), as initramfs-tools' is.
fn in_initramfs() -> bool {
    if std::path::Path::new("/etc/initrd-release").exists() {
        return true;
    }
    const RAMFS_MAGIC: u64 = 0x8584_58f6;
    const TMPFS_MAGIC: u64 = 0x0102_1994;
    let mut st = std::mem::MaybeUninit::<libc::statfs>::zeroed();
    // SAFETY: `st` is a properly sized, writable statfs buffer and the path is a valid C
    // string; statfs only writes into the buffer.
    let rc = unsafe { libc::statfs(c"/".as_ptr(), st.as_mut_ptr()) };
    if rc != 0 {
        return false;
    }
    // SAFETY: statfs returned 0, so it filled the buffer.
    // (`f_type` is i64 with glibc, an unsigned long with musl.)
    let t = unsafe { st.assume_init() }.f_type as u64;
    (t == RAMFS_MAGIC || t == TMPFS_MAGIC) && std::path::Path::new("/init").exists()
}
