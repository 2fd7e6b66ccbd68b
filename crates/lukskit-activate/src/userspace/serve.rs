//! The serving process of an open mapping: builds the [`VolumeBackend`], exposes it (FUSE
//! file + loop device + `/dev/mapper/NAME` link, or an NBD server), writes the state file
//! and then answers the control socket until `close`.
//!
//! It is started by [`super::launch::start`] as a fresh process (never forked from a process with
//! live engine threads) and receives the volume key through a pipe. Process-wide hardening
//! (no core dumps, not dumpable, `mlockall`) is the binary's job, done before this runs.

use super::runtime::{self, MappingConfig, State};
use super::service_log::ServiceLog;
use super::wire::{self, Command, Reply};
use crate::error::{ActivateError, Result};
use crate::request::ExposureRequest;
use lukskit_expose::backend::{BlockBackend, Discards, VolumeBackend};
use lukskit_expose::fuse::{FuseExport, FuseOptions};
use lukskit_expose::loopdev::{LoopDevice, LoopOptions};
use lukskit_expose::nbd::{NbdAddress, NbdOptions, NbdServer, NbdShutdown};
use lukskit_format::VolumeType;
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
    table: Option<wire::Reload>,
    ready: impl FnOnce(Result<()>),
) -> i32 {
    let name = config.name.clone();
    if let Err(e) = runtime::create_dir(&name) {
        ready(Err(e));
        return 1;
    }
    let (backend, exposure, state) = match setup(&config, key, table.as_ref()) {
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
    let log = ServiceLog::open(&name, &runtime::dir(&name).join("log")).map(Arc::new);
    if let Some(log) = &log {
        log.info(&started_message(&state));
        let errors = Arc::clone(log);
        backend.on_error(move |m| errors.error(m));
        let events = Arc::clone(log);
        backend.on_backing_event(Arc::new(move |m: &str, lost: bool| {
            if lost {
                events.warning(m);
            } else {
                events.info(m);
            }
        }));
    }
    let code = control_loop(&name, state, listener, backend, exposure, log.as_deref());
    if let Some(log) = &log {
        log.info("stopped serving (closed)");
    }
    code
}

/// What the log says when a mapping starts: what is served, how, and how large.
fn started_message(state: &State) -> String {
    let c = &state.config;
    let how = match (&state.nbd_address, &state.loop_device, &state.fuse_file) {
        (Some(a), _, _) => format!("over NBD at {a}"),
        (None, Some(l), _) => format!("through FUSE + {l}"),
        (None, None, Some(f)) => format!("as the FUSE file {f}"),
        (None, None, None) => "(no exposure)".to_string(),
    };
    format!(
        "serving {} ({}, {} bytes{}) {how}",
        c.device,
        c.kind,
        state.size,
        if c.read_only { ", read-only" } else { "" }
    )
}

fn setup(
    config: &MappingConfig,
    key: Zeroizing<Vec<u8>>,
    table: Option<&wire::Reload>,
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
    // A re-encryption in progress: all the segments of its header, each with its key.
    // The sector engine of this process's data segments (`--engine`; `auto` measures or
    // remembers which is faster for this cipher).
    let (engine, auto) = super::engine::resolve(
        config.engine,
        &config.layout.cipher,
        config.key_bits,
        config.layout.sector_size,
    )?;
    lukskit_crypto::engine::set_data_engine(engine);
    let mut volume = match table {
        Some(t) => DataVolume::open_table(&config.device, t.to_table()?, !config.read_only),
        None => DataVolume::open(&config.device, layout, &key, !config.read_only),
    }
    .map_err(ActivateError::Volume)?;
    drop(key);
    // Behind the FUSE file and loop device, the kernel caches the plaintext above us:
    // the ciphertext should not sit in the page cache a second time, so bypass it where
    // the backing file system allows. An NBD export keeps the page cache (as qemu-nbd's
    // and nbdkit's defaults do): its clients are often other machines, and writes become
    // durable at the client's FLUSH or FUA either way.
    if config.exposure.nbd().is_none() {
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
        engine: Some(super::engine::in_use(engine, auto, &config.layout.cipher)),
    };
    let mut exposure = Exposure {
        fuse: None,
        loop_dev: None,
        nbd: None,
        _claim: claim,
    };
    if let Some(export) = config.exposure.nbd() {
        let addr: NbdAddress = export
            .address
            .parse()
            .map_err(ActivateError::InvalidRequest)?;
        let tls = match &export.tls {
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
                max_connections: export
                    .connections
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
    if config.exposure == ExposureRequest::Mapper {
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
    if let Some(dev) = exposure.loop_dev.as_mut() {
        let path = dev.path().display().to_string();
        // `detach` first writes back what was written through the loop device's page cache
        // (through the FUSE file into the backend), so the flush below covers it.
        if dev.detach().is_err() && !force {
            return Some(exposure);
        }
        exposure.loop_dev = None;
        runtime::remove_mapper_link(name, Some(&path));
    }
    if !backend.is_suspended() {
        let _ = backend.flush();
    }
    if let Some((stop, t)) = exposure.nbd.take() {
        stop.shutdown();
        let _ = t.join();
    }
    if let Some(f) = exposure.fuse.take() {
        // A session that does not end in time (a loaded machine) may leave the file mounted,
        // and its runtime directory, which names an active mapping, could not go: detach the
        // mount lazily then, as the clean-up of a dead server does.
        if f.unmount(Duration::from_secs(5)).is_err() {
            runtime::lazy_unmount(&runtime::device_path(name));
        }
    }
    runtime::remove_dir(name);
    None
}

fn held_error(name: &str) -> ActivateError {
    ActivateError::InvalidRequest(format!(
        "Device {name} is in online re-encryption (its I/O is held); finish it with \
         reencrypt --resume-only."
    ))
}

/// `resize`: the checks and messages of cryptsetup's `crypt_resize` against the data
/// device as it is now, then the new size for the backend, the FUSE file, the loop device
/// on top (`LOOP_SET_CAPACITY`) and the state file. An NBD export gives the new size to
/// connections made from now on.
fn resize(
    backend: &VolumeBackend,
    exposure: &Exposure,
    state: &mut State,
    bytes: Option<u64>,
) -> Result<()> {
    let name = state.config.name.clone();
    if backend.is_suspended() {
        return Err(ActivateError::Suspended { name });
    }
    if backend.is_held() {
        return Err(held_error(&name));
    }
    let Some(layout) = backend.layout() else {
        return Err(ActivateError::Unsupported(format!(
            "Device {name} has several segments (re-encryption in progress): resize is not \
             possible now."
        )));
    };
    let device = &state.config.device;
    // As cryptsetup: a loop device under the mapping takes its backing file's size first.
    let dev_path = std::path::Path::new(device);
    if lukskit_expose::loopdev::is_loop_device(dev_path) {
        let _ = lukskit_expose::loopdev::set_capacity(dev_path);
    }
    let dev_size = backend
        .device_size()
        .map_err(|e| ActivateError::io(format!("Cannot get info about device {device}."), e))?;
    if layout.offset >= dev_size {
        return Err(ActivateError::InvalidRequest(format!(
            "Requested offset is beyond real size of device {device}."
        )));
    }
    let avail = (dev_size - layout.offset) / 512 * 512;
    let want = match bytes {
        None | Some(0) => avail,
        Some(b) => b,
    };
    if want > avail {
        return Err(ActivateError::InvalidRequest(format!(
            "Device {device} is too small."
        )));
    }
    if !want.is_multiple_of(u64::from(layout.sector_size)) {
        return Err(ActivateError::InvalidRequest(
            "Device size is not aligned to requested sector size.".into(),
        ));
    }
    // The logical block size of a block device under the mapping (an image file is under
    // cryptsetup's mapping through a loop device of 512-byte blocks).
    let logical = std::fs::File::open(dev_path)
        .ok()
        .filter(|f| {
            use std::os::unix::fs::FileTypeExt;
            f.metadata().is_ok_and(|m| m.file_type().is_block_device())
        })
        .map_or(512, |f| {
            lukskit_volume::reencrypt::device_block_size(Some(&f))
        });
    if !want.is_multiple_of(logical) {
        return Err(ActivateError::InvalidRequest(
            "Device size is not aligned to device logical block size.".into(),
        ));
    }
    if want == backend.size() {
        return Ok(());
    }
    backend
        .set_size(want)
        .map_err(|e| ActivateError::io("Cannot resize the volume", e))?;
    if let Some(f) = &exposure.fuse {
        f.size_changed()
            .map_err(|e| ActivateError::io("Cannot resize the FUSE file", e))?;
    }
    if let Some(l) = &exposure.loop_dev {
        lukskit_expose::loopdev::set_capacity(l.path())
            .map_err(|e| ActivateError::io("Cannot resize loop device.", e))?;
    }
    state.size = want;
    if let Some(s) = state.config.layout.size.as_mut() {
        *s = want;
    }
    runtime::write_state(state).map_err(|e| ActivateError::io("Cannot write the state file", e))
}

/// `reload`: open the data with the table of the next stage of an online re-encryption
/// and let held I/O proceed with it. A table of one crypt segment (the re-encryption
/// done) becomes the mapping's layout again: `status` shows it, `luksResume` reopens with
/// its key.
fn reload(backend: &VolumeBackend, state: &mut State, r: &wire::Reload) -> Result<()> {
    let table = r.to_table()?;
    let writable = !state.config.read_only;
    let path = backend.path().to_string();
    let single = match table.segments() {
        [s] => match &s.kind {
            lukskit_volume::segment::SegmentKind::Crypt(c) => Some((
                DataLayout {
                    cipher: c.cipher.to_string(),
                    offset: c.device_offset,
                    size: Some(s.len),
                    sector_size: c.sector_size,
                    iv_offset: c.iv_offset,
                    iv_large_sectors: c.iv_large_sectors,
                },
                c.key.clone(),
            )),
            _ => None,
        },
        _ => None,
    };
    let (volume, layout) = match single {
        Some((layout, key)) => (
            DataVolume::open(&path, layout.clone(), key.as_bytes(), writable),
            Some(layout),
        ),
        None => (DataVolume::open_table(&path, table, writable), None),
    };
    let volume = volume.map_err(ActivateError::Volume)?;
    backend
        .reload(volume, layout.clone())
        .map_err(|e| ActivateError::io("Cannot reload the segments", e))?;
    if let (Some(l), Some(key)) = (layout, r.keys.first()) {
        let c = &mut state.config;
        c.layout.cipher = l.cipher;
        c.layout.sector_size = l.sector_size;
        c.layout.iv_offset = l.iv_offset;
        c.key_bits = (key.len() * 8) as u32;
        let _ = runtime::write_state(state);
    }
    Ok(())
}

/// What the log says of an online re-encryption's progress `p`: its start, each tenth done
/// (`tenths`: the last one logged), its end. `(message, is_error)`, or `None` for a step
/// inside the same tenth.
fn progress_message(p: &wire::Progress, tenths: &mut Option<u64>) -> Option<(String, bool)> {
    use wire::ProgressPhase as P;
    let pct = if p.total == 0 {
        100
    } else {
        (u128::from(p.done.min(p.total)) * 100 / u128::from(p.total)) as u64
    };
    let bytes = format!("{} of {} bytes", p.done, p.total);
    match p.phase {
        P::Start => {
            *tenths = Some(pct / 10);
            Some((
                format!("re-encryption started ({pct} % done, {bytes})"),
                false,
            ))
        }
        P::Step => {
            let t = pct / 10;
            if tenths.is_some_and(|l| t <= l) {
                return None;
            }
            *tenths = Some(t);
            Some((format!("re-encryption {} % done ({bytes})", t * 10), false))
        }
        P::Finished => {
            *tenths = None;
            Some(("re-encryption finished".to_string(), false))
        }
        P::Stopped => {
            *tenths = None;
            Some((
                format!(
                    "re-encryption stopped at {pct} % ({bytes}); `reencrypt --resume-only` \
                     goes on"
                ),
                false,
            ))
        }
        P::Failed => {
            *tenths = None;
            Some((format!("re-encryption failed at {pct} % ({bytes})"), true))
        }
    }
}

fn control_loop(
    name: &str,
    mut state: State,
    listener: UnixListener,
    backend: Arc<VolumeBackend>,
    exposure: Exposure,
    log: Option<&ServiceLog>,
) -> i32 {
    let config = state.config.clone();
    let config = &config;
    let mut exposure = Some(exposure);
    let mut tenths: Option<u64> = None;
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
            Ok(Command::Status) => Ok(serde_json::json!({
                "suspended": backend.is_suspended(),
                "held": backend.is_held(),
                "last_error": backend.last_error(),
            })
            .to_string()),
            Ok(Command::Close) if backend.is_held() => Err(held_error(name)),
            Ok(Command::Resize(bytes)) => match exposure.as_ref() {
                Some(ex) => resize(&backend, ex, &mut state, bytes).map(|()| String::new()),
                None => Err(ActivateError::NotActive {
                    name: name.to_string(),
                }),
            },
            Ok(Command::Hold) if backend.is_suspended() => Err(ActivateError::Suspended {
                name: name.to_string(),
            }),
            Ok(Command::Hold) => backend
                .hold()
                .map(|()| String::new())
                .map_err(|e| ActivateError::io("Cannot hold I/O", e)),
            Ok(Command::Release) => backend
                .release()
                .map(|()| String::new())
                .map_err(|e| ActivateError::io("Cannot release I/O", e)),
            Ok(Command::Reload(r)) => reload(&backend, &mut state, &r).map(|()| String::new()),
            Ok(Command::Progress(p)) => {
                if let (Some(log), Some((m, error))) = (log, progress_message(&p, &mut tenths)) {
                    if error {
                        log.error(&m);
                    } else {
                        log.info(&m);
                    }
                }
                Ok(String::new())
            }
            Ok(Command::Suspend) if config.kind == VolumeType::Plain => Err(
                ActivateError::Unsupported(format!("Device {name} is not a LUKS device.")),
            ),
            Ok(Command::Suspend) => {
                // What was written through the loop device's page cache reaches the volume
                // before its key goes (as a dm suspend flushes before it holds I/O).
                if let Some(dev) = exposure.as_ref().and_then(|x| x.loop_dev.as_ref()) {
                    let _ = dev.sync();
                }
                backend
                    .suspend()
                    .map(|()| String::new())
                    .map_err(|e| ActivateError::io("Error during suspend", e))
            }
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

#[cfg(test)]
mod tests {
    use super::*;
    use wire::{Progress, ProgressPhase as P};

    #[test]
    fn progress_is_logged_at_start_every_tenth_and_end() {
        let total = 48 << 20;
        let mut tenths = None;
        let mut logged = Vec::new();
        let mut tell = |phase, done| {
            if let Some((m, e)) = progress_message(&Progress { phase, done, total }, &mut tenths) {
                logged.push((m, e));
            }
        };
        tell(P::Start, 0);
        for mib in 1..=48u64 {
            tell(P::Step, mib << 20);
        }
        tell(P::Finished, total);
        let msgs: Vec<&str> = logged.iter().map(|(m, _)| m.as_str()).collect();
        assert_eq!(msgs.len(), 12, "{msgs:#?}");
        assert_eq!(
            msgs[0],
            "re-encryption started (0 % done, 0 of 50331648 bytes)"
        );
        assert_eq!(
            msgs[1],
            "re-encryption 10 % done (5242880 of 50331648 bytes)"
        );
        assert_eq!(
            msgs[10],
            "re-encryption 100 % done (50331648 of 50331648 bytes)"
        );
        assert_eq!(msgs[11], "re-encryption finished");
        assert!(logged.iter().all(|(_, e)| !e));
        // A resumed run starts where it was; a failure is an error.
        let mut tenths = None;
        let start = progress_message(
            &Progress {
                phase: P::Start,
                done: total / 2,
                total,
            },
            &mut tenths,
        );
        assert_eq!(
            start.unwrap().0,
            "re-encryption started (50 % done, 25165824 of 50331648 bytes)"
        );
        let step = Progress {
            phase: P::Step,
            done: total / 2 + 1,
            total,
        };
        assert!(progress_message(&step, &mut tenths).is_none());
        let failed = Progress {
            phase: P::Failed,
            ..step
        };
        assert_eq!(
            progress_message(&failed, &mut tenths),
            Some((
                "re-encryption failed at 50 % (25165825 of 50331648 bytes)".into(),
                true
            ))
        );
    }
}
