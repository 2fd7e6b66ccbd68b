//! The userspace backend: a serving process of lukskit's own exposes the plaintext as a FUSE
//! file with a loop device on top (and the `/dev/mapper/NAME` link), as a FUSE file only, or
//! as an NBD export. Its state lives in `/run/lukskit/NAME/` ([`runtime`]), it is started and
//! spoken to through one codec ([`wire`], [`launch`]).

pub mod engine;
pub mod launch;
pub mod online;
pub mod runtime;
mod serve;
pub mod service_log;
pub mod wire;

use crate::error::{ActivateError, Result};
use crate::status::{Exposure, Status};
use lukskit_crypto::SecretBuf;
use lukskit_format::VolumeType;
use runtime::State;
use std::time::Duration;
use wire::Command;
use zeroize::Zeroizing;

/// How long `status` waits for the serving process.
const STATUS_TIMEOUT: Duration = Duration::from_secs(5);

/// A mapping served by a lukskit serving process.
pub struct UserspaceMapping {
    /// The mapping name.
    pub name: String,
    /// Its state file (`None` when the server died before writing it).
    pub state: Option<State>,
}

/// The names of every userspace mapping with a state directory under
/// [`runtime::run_dir`] (root's [`runtime::RUN_DIR`], or the user's own), sorted.
pub fn mapping_names() -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(runtime::run_dir()) else {
        return Vec::new();
    };
    let mut names: Vec<String> = entries
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|n| runtime::check_name(n).is_ok() && runtime::state_path(n).exists())
        .collect();
    names.sort();
    names
}

/// The userspace mapping `name`: `Ok(None)` when there is none.
pub fn find(name: &str) -> Result<Option<UserspaceMapping>> {
    runtime::check_name(name)?;
    if !runtime::exists(name) {
        return Ok(None);
    }
    Ok(Some(UserspaceMapping {
        name: name.to_string(),
        state: runtime::read_state(name)?,
    }))
}

impl UserspaceMapping {
    fn not_active(&self) -> ActivateError {
        ActivateError::NotActive {
            name: self.name.clone(),
        }
    }

    /// The state, which a live mapping always has.
    pub fn config(&self) -> Result<&runtime::MappingConfig> {
        self.state
            .as_ref()
            .map(|s| &s.config)
            .ok_or_else(|| self.not_active())
    }

    /// Send `cmd`; a dead server reads as "not active".
    fn control(&self, cmd: &Command, timeout: Option<Duration>) -> Result<String> {
        match runtime::request(&self.name, cmd, timeout)? {
            Some(reply) => reply,
            None => Err(self.not_active()),
        }
    }

    /// `resize`: the data size becomes `sectors` 512-byte sectors (`None` or 0: all of the
    /// device after the data offset), checked against the device as cryptsetup checks it.
    /// The FUSE file and the loop device on top take the new size; an NBD export gives it
    /// to the connections made from now on (the NBD protocol cannot tell a connected
    /// client).
    pub fn resize(&self, sectors: Option<u64>) -> Result<()> {
        // As cryptsetup (`LUKS2_unmet_requirements`): not while the header is marked for
        // re-encryption (the segments would no longer cover the device the run expects).
        let c = self.config()?;
        if c.kind == VolumeType::Luks2 {
            let access = lukskit_volume::device::Access::Read;
            if let Ok(v) = lukskit_volume::Volume::load(&c.device, c.header.as_deref(), access) {
                if let Some(h) = v.luks2() {
                    if h.requirements()
                        .iter()
                        .any(|r| r.starts_with("online-reencrypt"))
                    {
                        return Err(ActivateError::InvalidRequest(
                            "Operation incompatible with device marked for LUKS2 \
                             reencryption. Aborting."
                                .into(),
                        ));
                    }
                }
            }
        }
        let bytes = match sectors {
            Some(s) => Some(s.checked_mul(512).ok_or_else(|| {
                ActivateError::InvalidRequest("Invalid device size specification.".into())
            })?),
            None => None,
        };
        self.control(&Command::Resize(bytes), None).map(|_| ())
    }

    /// Online re-encryption: hold all I/O of the mapping (requests in flight complete and
    /// are flushed first). It stays held until [`UserspaceMapping::reload`] or
    /// [`UserspaceMapping::release`], also if the caller dies: the data path must not
    /// write with a key the hot zone no longer has.
    pub fn hold(&self) -> Result<()> {
        self.control(&Command::Hold, None).map(|_| ())
    }

    /// Let held I/O proceed with the segments it had.
    pub fn release(&self) -> Result<()> {
        self.control(&Command::Release, None).map(|_| ())
    }

    /// Install `table` (segments and keys: the post-hot-zone state of an online
    /// re-encryption) in the held mapping and let its I/O proceed.
    pub fn reload(&self, table: &lukskit_volume::segment::SegmentTable) -> Result<()> {
        let r = wire::Reload::from_table(table);
        self.control(&Command::Reload(r), None).map(|_| ())
    }

    /// Whether the mapping's I/O is held by an online re-encryption.
    pub fn is_held(&self) -> Result<bool> {
        let t = self.control(&Command::Status, Some(STATUS_TIMEOUT))?;
        let v: serde_json::Value = serde_json::from_str(&t).unwrap_or_default();
        Ok(v["held"].as_bool().unwrap_or(false))
    }

    /// Whether the serving process reports the mapping suspended.
    pub fn is_suspended(&self) -> Result<bool> {
        Ok(self.server_status()?.0)
    }

    /// What the serving process reports: suspended, and the last I/O error of its backing
    /// store.
    fn server_status(&self) -> Result<(bool, Option<String>)> {
        let t = self.control(&Command::Status, Some(STATUS_TIMEOUT))?;
        let v: serde_json::Value = serde_json::from_str(&t).unwrap_or_default();
        Ok((
            v["suspended"].as_bool().unwrap_or(false),
            v["last_error"].as_str().map(str::to_string),
        ))
    }

    /// What `status` shows (a server that died is reported, with its pid, as not running).
    pub fn status(&self) -> Result<Status> {
        let st = self.state.as_ref().ok_or_else(|| self.not_active())?;
        let (alive, suspended, last_error) = match self.server_status() {
            Ok((s, e)) => (true, s, e),
            Err(ActivateError::NotActive { .. }) => (false, false, None),
            Err(e) => return Err(e),
        };
        let c = &st.config;
        let in_use = st.loop_device.as_deref().is_some_and(|l| {
            lukskit_expose::loopdev::is_busy(std::path::Path::new(l)).unwrap_or(false)
        });
        let exposure = match (&st.nbd_address, &st.fuse_file, &st.loop_device) {
            (Some(a), _, _) => Exposure::Nbd { address: a.clone() },
            (None, Some(f), Some(l)) => Exposure::FuseLoop {
                fuse_file: f.clone(),
                loop_device: l.clone(),
                direct_io: st.loop_direct_io,
            },
            (None, Some(f), None) => Exposure::FuseFile {
                fuse_file: f.clone(),
            },
            (None, None, _) => return Err(self.not_active()),
        };
        let path = match (&st.mapper_link, &exposure) {
            (Some(l), _) => l.clone(),
            (None, Exposure::Nbd { .. }) => c.name.clone(),
            (None, Exposure::FuseFile { fuse_file }) => fuse_file.clone(),
            (None, _) => runtime::mapper_path(&c.name).display().to_string(),
        };
        Ok(Status {
            path,
            kind: c.kind.name().to_string(),
            cipher: c.layout.cipher.clone(),
            key_bits: c.key_bits,
            key_in_keyring: false,
            integrity: None,
            header: c.header.clone(),
            device: c.device.clone(),
            loop_file: None,
            sector_size: c.layout.sector_size,
            offset_sectors: c.layout.offset / 512,
            size_sectors: st.size / 512,
            iv_offset_sectors: c.layout.iv_offset,
            read_only: c.read_only,
            suspended,
            in_use,
            flags: if c.allow_discards {
                vec!["discards"]
            } else {
                Vec::new()
            },
            exposure,
            server: Some((st.pid, alive)),
            last_error,
            engine: st.engine.clone(),
        })
    }

    /// Flush, detach, unmount, stop the serving process (refused while the device is in
    /// use or suspended). A mapping whose server died is cleaned up.
    pub fn close(&self) -> Result<()> {
        match runtime::request(&self.name, &Command::Close, None)? {
            Some(reply) => reply.map(|_| ()),
            // Nobody listens: the server died (or never finished starting). Clean up.
            None => {
                if let Some(st) = &self.state {
                    if runtime::pid_alive(st.pid) && is_serving_process(st.pid) {
                        return Err(ActivateError::Server(format!(
                            "Device {} is busy: its serving process (pid {}) does not answer.",
                            self.name, st.pid
                        )));
                    }
                }
                runtime::cleanup_dead(&self.name, self.state.as_ref())
            }
        }
    }

    fn luks_only(&self) -> Result<()> {
        if self.config()?.kind == VolumeType::Plain {
            return Err(ActivateError::Unsupported(format!(
                "Device {} is not a LUKS device.",
                self.name
            )));
        }
        Ok(())
    }

    /// `luksSuspend`: wait for requests in flight, flush, wipe the key schedules.
    pub fn suspend(&self) -> Result<()> {
        self.luks_only()?;
        self.control(&Command::Suspend, None).map(|_| ())
    }

    /// `luksResume` with volume key `vk` (already checked against the header).
    pub fn resume(&self, vk: &SecretBuf) -> Result<()> {
        self.luks_only()?;
        if !self.is_suspended()? {
            return Err(ActivateError::NotSuspended {
                name: self.name.clone(),
            });
        }
        let key = Zeroizing::new(vk.as_bytes().to_vec());
        self.control(&Command::Resume(key), None).map(|_| ())
    }
}

fn is_serving_process(pid: u32) -> bool {
    std::fs::read(format!("/proc/{pid}/cmdline"))
        .map(|c| {
            c.split(|&b| b == 0)
                .any(|a| a == launch::SERVE_ARG.as_bytes())
        })
        .unwrap_or(false)
}

/// Tell the serving process of mapping `name` where an online re-encryption is, for its log
/// (start, every 10 %, end). Best effort: a serving process that does not answer within a
/// second, or does not know the request (an older binary), is not an error of the run.
pub fn notify_progress(name: &str, progress: wire::Progress) {
    let _ = runtime::request(
        name,
        &Command::Progress(progress),
        Some(std::time::Duration::from_secs(1)),
    );
}
