//! luksFormat's wipe of a LUKS2 volume with integrity: the dm-integrity + dm-crypt stack made,
//! written over with zeros so that every sector has a valid tag, and removed again.

use crate::dif_mapping::dif_name;
use crate::error::{ActivateError, Result};
use crate::integrity;
use crate::layers::ActivationPlan;
use crate::request::{KernelOptions, MappingConfig};
use lukskit_crypto::SecretBuf;
use lukskit_dm::integrity::IntegrityMode;
use lukskit_dm::DeviceMapper;
use std::io::{Seek, SeekFrom, Write};
use std::os::unix::fs::OpenOptionsExt;

/// luksFormat's wipe of an integrity volume (unless `--integrity-no-wipe`): open `config`
/// under its (temporary) name in direct mode, write zeros over the whole mapping in 1 MiB
/// blocks so every sector gets a valid tag, and close it again. `stop` is asked before each
/// block (cryptsetup's wipe stops on SIGINT): `Ok(false)` when it said to stop (the rest of
/// the device is not wiped; the mapping is closed all the same), `Ok(true)` when all is
/// wiped.
pub fn wipe(
    config: &MappingConfig,
    opts: &KernelOptions,
    key: &SecretBuf,
    integrity: &str,
    stop: &dyn Fn() -> bool,
) -> Result<bool> {
    crate::activate_plan(
        crate::Backend::Kernel,
        &ActivationPlan::integrity_stack(config, key, integrity, IntegrityMode::Direct),
        opts,
    )?;
    let node = lukskit_dm::node::mapper_path(&config.name);
    let written = (|| -> std::io::Result<bool> {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .custom_flags(libc::O_DIRECT)
            .open(&node)?;
        let size = f.seek(SeekFrom::End(0))?;
        f.seek(SeekFrom::Start(0))?;
        let mut buf = vec![0u8; (1 << 20) + 4096];
        let skew = buf.as_ptr().align_offset(4096);
        let block = &mut buf[skew..skew + (1 << 20)];
        let mut done = 0u64;
        while done < size {
            if stop() {
                f.sync_all()?;
                return Ok(false);
            }
            let n = (size - done).min(block.len() as u64) as usize;
            f.write_all(&block[..n])?;
            done += n as u64;
        }
        f.sync_all().map(|()| true)
    })();
    let dm = DeviceMapper::open()?;
    let closed = integrity::remove(&dm, &config.name)
        .and_then(|_| integrity::remove(&dm, &dif_name(&config.name)));
    let complete = written
        .map_err(|e| ActivateError::io(format!("Cannot wipe device {}", node.display()), e))?;
    closed.map(|()| complete)
}
