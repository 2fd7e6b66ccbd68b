//! The serving process of an open mapping: builds the [`VolumeBackend`], exposes it (FUSE
//! file + loop device + `/dev/mapper/NAME` link, or an NBD server), writes the state file
//! and then answers the control socket until `close`.
//!
//! It is started by [`super::launch::start`] as a fresh process (never forked from a process with
//! live engine threads) and receives the volume key through a pipe. Process-wide hardening
//! (no core dumps, not dumpable, `mlockall`) is the binary's job, done before this runs.

use super::runtime::{self, MappingConfig, State};
use super::wire::{self, Command, Reply};
use crate::error::{ActivateError, Result};
use lukskit_expose::backend::{BlockBackend, Discards, VolumeBackend};
use lukskit_expose::fuse::{FuseExport, FuseOptions};
use lukskit_expose::loopdev::{LoopDevice, LoopOptions};
use lukskit_expose::nbd::{NbdAddress, NbdOptions, NbdServer, NbdShutdown};
use lukskit_volume::claim::{Claim, ClaimError};
use lukskit_volume::data::{DataLayout, DataVolume};
use std::io::{BufReader, Write};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::UnixListener;
use std::sync::Arc;
use std::time::Duration;
use zeroize::Zeroizing;

/// What is running for a mapping.
struct Exposure {
    fuse: Option<FuseExport>,
    loop_dev: Option<LoopDevice>,
    nbd: Option<(NbdShutdown, std::thread::JoinHandle<()>)>,
    /// Exclusive use of the backing device, released with the exposure.
    _claim: Claim,
}

/// Set everything up, call `ready` with the outcome, then serve the control socket until
/// `close`. Returns the process exit code.
pub fn serve(
    config: MappingConfig,
    key: Zeroizing<Vec<u8>>,
    ready: impl FnOnce(Result<()>),
) -> i32 {
    let name = config.name.clone();
    if let Err(e) = runtime::create_dir(&name) {
        ready(Err(e));
        return 1;
    }
    let (backend, exposure, state) = match setup(&config, key) {
        Ok(x) => x,
        Err(e) => {
            runtime::remove_mapper_link(&name, None);
            runtime::lazy_unmount(&runtime::device_path(&name));
            runtime::remove_dir(&name);
            ready(Err(e));
            return 1;
        }
    };
    let listener = match bind_control(&name) {
        Ok(l) => l,
        Err(e) => {
            teardown(&name, &backend, exposure, true);
            ready(Err(e));
            return 1;
        }
    };
    if let Err(e) = runtime::write_state(&state) {
        teardown(&name, &backend, exposure, true);
        ready(Err(ActivateError::io("Cannot write the state file", e)));
        return 1;
    }
    ready(Ok(()));
    control_loop(&name, &config, listener, backend, exposure)
}

fn setup(
    config: &MappingConfig,
    key: Zeroizing<Vec<u8>>,
) -> Result<(Arc<VolumeBackend>, Exposure, State)> {
    let name = &config.name;
    let layout = DataLayout::from(&config.layout);
    // Exclusive use of the device for the life of the mapping, as dm-crypt claims its device.
    let claim = Claim::acquire(&config.device).map_err(|e| match e {
        ClaimError::InUse => ActivateError::DeviceInUse {
            device: config.device.clone(),
        },
        ClaimError::Io(e) => ActivateError::io(format!("Cannot open {}", config.device), e),
        other => ActivateError::Server(format!("cannot open {}: {other}", config.device)),
    })?;
    let mut volume = DataVolume::open(&config.device, layout, &key, !config.read_only)
        .map_err(ActivateError::Volume)?;
    drop(key);
    // Behind the FUSE file and loop device, the kernel caches the plaintext above us:
    // the ciphertext should not sit in the page cache a second time, so bypass it where
    // the backing file system allows. An NBD export keeps the page cache (as qemu-nbd's
    // and nbdkit's defaults do): its clients are often other machines, and writes become
    // durable at the client's FLUSH or FUA either way.
    if config.nbd.is_none() {
        volume.use_direct_io();
    }
    let discards = if config.allow_discards {
        Discards::Allow
    } else {
        Discards::Refuse
    };
    let backend = Arc::new(VolumeBackend::new(volume, !config.read_only, discards));
    let dynb: Arc<dyn BlockBackend> = backend.clone();
    let mut state = State {
        config: config.clone(),
        pid: std::process::id(),
        size: backend.size(),
        fuse_file: None,
        loop_device: None,
        loop_direct_io: false,
        nbd_address: None,
        mapper_link: None,
    };
    let mut exposure = Exposure {
        fuse: None,
        loop_dev: None,
        nbd: None,
        _claim: claim,
    };
    if let Some(addr) = &config.nbd {
        let addr: NbdAddress = addr.parse().map_err(ActivateError::InvalidRequest)?;
        let tls = match &config.nbd_tls {
            Some(t) => Some(lukskit_expose::nbd::NbdTls {
                config: lukskit_nbd::tls::server_config(
                    std::path::Path::new(&t.creds),
                    t.verify_peer,
                )
                .map_err(|e| {
                    ActivateError::InvalidRequest(format!("--tls-creds {}: {e}", t.creds))
                })?,
                required: t.required,
            }),
            None => None,
        };
        let server = NbdServer::bind(
            &addr,
            NbdOptions {
                export_name: config.name.clone(),
                read_only: config.read_only,
                allow_trim: config.allow_discards,
                max_connections: config
                    .nbd_connections
                    .unwrap_or(lukskit_expose::nbd::DEFAULT_MAX_CONNECTIONS),
                tls,
                ..NbdOptions::default()
            },
        )
        .map_err(|e| ActivateError::io(format!("Cannot listen on {addr}"), e))?;
        state.nbd_address = Some(server.address());
        let stop = server.shutdown_handle();
        let t = std::thread::Builder::new()
            .name("nbd-server".into())
            .spawn(move || {
                let _ = server.serve(dynb);
            })
            .map_err(|e| ActivateError::io("Cannot start the NBD server", e))?;
        exposure.nbd = Some((stop, t));
        return Ok((backend, exposure, state));
    }
    let file = runtime::device_path(name);
    let fuse = FuseExport::mount(
        dynb,
        &file,
        &FuseOptions {
            read_only: config.read_only,
            fs_name: format!("lukskit:{name}"),
            ..FuseOptions::default()
        },
    )
    .map_err(|e| ActivateError::io("Cannot mount the FUSE file (is /dev/fuse available?)", e))?;
    state.fuse_file = Some(file.display().to_string());
    exposure.fuse = Some(fuse);
    if config.use_loop {
        let link = runtime::mapper_path(name);
        if link.symlink_metadata().is_ok() {
            teardown(name, &backend, exposure, true);
            return Err(ActivateError::NameExists { name: name.clone() });
        }
        let dev = match LoopDevice::attach(
            &file,
            LoopOptions {
                block_size: config.layout.sector_size,
                read_only: config.read_only,
                direct_io: true,
            },
        ) {
            Ok(d) => d,
            Err(e) => {
                teardown(name, &backend, exposure, true);
                return Err(ActivateError::io("Cannot attach a loop device", e));
            }
        };
        state.loop_device = Some(dev.path().display().to_string());
        state.loop_direct_io = dev.direct_io();
        let linked = std::fs::create_dir_all(runtime::MAPPER_DIR)
            .and_then(|()| std::os::unix::fs::symlink(dev.path(), &link));
        exposure.loop_dev = Some(dev);
        if let Err(e) = linked {
            teardown(name, &backend, exposure, true);
            return Err(ActivateError::io(
                format!("Cannot create {}", link.display()),
                e,
            ));
        }
        state.mapper_link = Some(link.display().to_string());
    }
    Ok((backend, exposure, state))
}

fn bind_control(name: &str) -> Result<UnixListener> {
    let p = runtime::control_path(name);
    let _ = std::fs::remove_file(&p);
    // SAFETY: umask only changes this process's file creation mask.
    let old = unsafe { libc::umask(0o177) };
    let l = UnixListener::bind(&p);
    // SAFETY: as above, restoring the previous mask.
    unsafe { libc::umask(old) };
    let l = l.map_err(|e| ActivateError::io(format!("Cannot listen on {}", p.display()), e))?;
    let _ = std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600));
    Ok(l)
}

/// Undo the exposure. With `force`, a busy loop device does not stop the rest (used on
/// failed setups); without it, a busy device is an error and nothing is changed.
fn teardown(
    name: &str,
    backend: &VolumeBackend,
    mut exposure: Exposure,
    force: bool,
) -> Option<Exposure> {
    if !backend.is_suspended() {
        let _ = backend.flush();
    }
    if let Some(dev) = exposure.loop_dev.as_mut() {
        let path = dev.path().display().to_string();
        if dev.detach().is_err() && !force {
            return Some(exposure);
        }
        exposure.loop_dev = None;
        runtime::remove_mapper_link(name, Some(&path));
    }
    if let Some((stop, t)) = exposure.nbd.take() {
        stop.shutdown();
        let _ = t.join();
    }
    if let Some(f) = exposure.fuse.take() {
        let _ = f.unmount(Duration::from_secs(5));
    }
    runtime::remove_dir(name);
    None
}

fn control_loop(
    name: &str,
    config: &MappingConfig,
    listener: UnixListener,
    backend: Arc<VolumeBackend>,
    exposure: Exposure,
) -> i32 {
    let mut exposure = Some(exposure);
    for conn in listener.incoming() {
        let Ok(mut conn) = conn else { continue };
        let _ = conn.set_read_timeout(Some(Duration::from_secs(10)));
        let cmd = {
            // A one-byte buffer: the request line is read byte by byte and the key of a
            // resume request goes straight into its zeroizing buffer (a larger BufReader
            // buffer would be freed with a copy of the key in it).
            let mut r = BufReader::with_capacity(1, &mut conn);
            wire::read_command(&mut r)
        };
        let mut closing = false;
        let reply: Reply = match cmd {
            Err(e) => Err(ActivateError::InvalidRequest(format!("bad request: {e}"))),
            Ok(Command::Status) => Ok(format!("{{\"suspended\":{}}}", backend.is_suspended())),
            Ok(Command::Suspend) if config.kind == "PLAIN" => Err(ActivateError::Unsupported(
                format!("Device {name} is not a LUKS device."),
            )),
            Ok(Command::Suspend) => backend
                .suspend()
                .map(|()| String::new())
                .map_err(|e| ActivateError::io("Error during suspend", e)),
            Ok(Command::Resume(key)) => {
                if !backend.is_suspended() {
                    Err(ActivateError::NotSuspended {
                        name: name.to_string(),
                    })
                } else {
                    backend
                        .resume(&key)
                        .map(|()| String::new())
                        .map_err(|e| ActivateError::io("Error during resume", e))
                }
            }
            Ok(Command::Close) if backend.is_suspended() => Err(ActivateError::Suspended {
                name: name.to_string(),
            }),
            Ok(Command::Close) => {
                let ex = exposure.take().expect("exposure present while serving");
                match teardown(name, &backend, ex, false) {
                    Some(back) => {
                        exposure = Some(back);
                        Err(ActivateError::MappingBusy {
                            name: name.to_string(),
                        })
                    }
                    None => {
                        closing = true;
                        Ok(String::new())
                    }
                }
            }
        };
        let _ = conn.write_all(wire::reply_line(&reply).as_bytes());
        if closing {
            break;
        }
    }
    // Wipe the key: dropping the last reference drops the volume and its key schedules.
    drop(backend);
    0
}
