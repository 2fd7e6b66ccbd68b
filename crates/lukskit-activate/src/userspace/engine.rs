//! The serving process's sector engine (`open --engine lukskit|kernel|auto`).
//!
//! `auto` measures both engines once for the mapping's cipher spec, key size and sector size
//! (single-threaded encryption of a 256 KiB buffer, the two engines interleaved, the best of
//! three rounds each) and takes the faster. The result is remembered in a small file per
//! spec, key size and sector size under [`cache_dir`] (`/run/lukskit-engines` for root: a
//! tmpfs, so a reboot forgets it), owner-only, at most [`MAX_ENTRIES`] files of at most
//! [`MAX_FILE`] bytes. The file also records the kernel release and the kernel driver that
//! served the measurement: a missing, unreadable or corrupt file, another kernel or another
//! driver (a module loaded or unloaded) means measuring again.

use super::runtime;
use crate::error::{ActivateError, Result};
use crate::request::EngineRequest;
use crate::status::EngineInUse;
use lukskit_crypto::engine::drivers::{self, Implementation};
use lukskit_crypto::engine::own_kernels::own_kernels;
use lukskit_crypto::engine::{kernel_api, EngineKind, SectorCipher};
use lukskit_crypto::spec::CipherSpec;
use lukskit_crypto::SecretBuf;
use serde::{Deserialize, Serialize};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// At most this many remembered measurements (older ones are all dropped beyond it).
pub const MAX_ENTRIES: usize = 256;
/// A remembered measurement is at most this large.
pub const MAX_FILE: u64 = 4096;
/// Bytes per measured call.
const BUFFER: usize = 256 << 10;
/// Measuring time per engine and round.
const ROUND: Duration = Duration::from_millis(60);

/// Where measurements are remembered: beside [`runtime::run_dir`] (`/run/lukskit-engines`).
pub fn cache_dir() -> PathBuf {
    PathBuf::from(format!("{}-engines", runtime::run_dir().display()))
}

/// One remembered measurement.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Measurement {
    /// Format version (1).
    pub version: u32,
    /// The cipher spec, as given.
    pub spec: String,
    /// Key size in bits.
    pub key_bits: u32,
    /// Encryption sector size.
    pub sector_size: u32,
    /// The kernel release measured on (`/proc/sys/kernel/osrelease`).
    pub kernel: String,
    /// The kernel driver that served the kernel engine.
    pub driver: String,
    /// lukskit's engine, MiB/s.
    pub lukskit_mib_s: f64,
    /// The kernel engine, MiB/s.
    pub kernel_mib_s: f64,
}

impl Measurement {
    /// The faster engine.
    pub fn choice(&self) -> EngineKind {
        if self.kernel_mib_s > self.lukskit_mib_s {
            EngineKind::Kernel
        } else {
            EngineKind::Lukskit
        }
    }
}

fn kernel_release() -> String {
    std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|s| s.trim().to_string())
        .unwrap_or_default()
}

/// The file of one spec, key size and sector size: a hash of the three (names stay short and
/// free of the spec's `:`, `(`, `,`); the file repeats them, and a mismatch is a miss.
fn cache_file(dir: &Path, spec: &str, key_bits: u32, sector_size: u32) -> PathBuf {
    let d = lukskit_crypto::hash::HashAlg::Sha256
        .digest(&[format!("{spec}\n{key_bits}\n{sector_size}").as_bytes()]);
    let hex: String = d[..16].iter().map(|b| format!("{b:02x}")).collect();
    dir.join(hex)
}

/// The cache directory, created owner-only; `None` when it cannot be had safely (not ours,
/// not a directory, open to others).
fn open_dir() -> Option<PathBuf> {
    use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
    let dir = cache_dir();
    let _ = std::fs::DirBuilder::new().mode(0o700).create(&dir);
    let m = std::fs::symlink_metadata(&dir).ok()?;
    // SAFETY: geteuid has no arguments and cannot fail.
    let me = unsafe { libc::geteuid() };
    (m.is_dir() && m.uid() == me && m.permissions().mode() & 0o077 == 0).then_some(dir)
}

/// Read a remembered measurement: `None` when missing, too large, or not one.
pub fn read_measurement(path: &Path) -> Option<Measurement> {
    use std::os::unix::fs::OpenOptionsExt;
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)
        .ok()?;
    let mut text = String::new();
    f.take(MAX_FILE + 1).read_to_string(&mut text).ok()?;
    if text.len() as u64 > MAX_FILE {
        return None;
    }
    let m: Measurement = serde_json::from_str(&text).ok()?;
    (m.version == 1 && m.lukskit_mib_s.is_finite() && m.kernel_mib_s.is_finite()).then_some(m)
}

fn write_measurement(dir: &Path, path: &Path, m: &Measurement) {
    // Bounded: beyond MAX_ENTRIES files, forget them all (each is re-measured when needed).
    if let Ok(rd) = std::fs::read_dir(dir) {
        if rd.count() >= MAX_ENTRIES {
            if let Ok(rd) = std::fs::read_dir(dir) {
                for e in rd.flatten() {
                    let _ = std::fs::remove_file(e.path());
                }
            }
        }
    }
    let Ok(text) = serde_json::to_string(m) else {
        return;
    };
    let tmp = path.with_extension(format!("tmp{}", std::process::id()));
    // O_EXCL | O_NOFOLLOW, 0600: never through a planted link or into another's file.
    let written = lukskit_volume::private_file::create_new(&tmp, 0o600)
        .and_then(|mut f| f.write_all(text.as_bytes()));
    if written.is_ok() {
        let _ = std::fs::rename(&tmp, path);
    } else {
        let _ = std::fs::remove_file(&tmp);
    }
}

/// MiB/s of single-threaded encryption by `c`, for [`ROUND`].
fn speed(c: &SectorCipher, buf: &mut [u8]) -> Result<f64> {
    let start = Instant::now();
    let mut bytes = 0u64;
    let mut sector = 0u64;
    while start.elapsed() < ROUND {
        c.encrypt(buf, sector).map_err(engine_error)?;
        bytes += buf.len() as u64;
        sector += (buf.len() / 512) as u64;
    }
    Ok(bytes as f64 / (1024.0 * 1024.0) / start.elapsed().as_secs_f64())
}

fn engine_error(e: lukskit_crypto::CryptoError) -> ActivateError {
    ActivateError::Server(format!("sector engine: {e}"))
}

/// Measure both engines for `spec` (the best of three interleaved rounds each).
pub fn measure(spec: &CipherSpec, key_bits: u32, sector_size: u32) -> Result<Measurement> {
    let key = SecretBuf::random((key_bits / 8) as usize).map_err(engine_error)?;
    let k =
        SectorCipher::new_kernel(spec, key.as_bytes(), sector_size, false).map_err(engine_error)?;
    let l = SectorCipher::new(spec, key.as_bytes(), sector_size, false).map_err(engine_error)?;
    let driver = kernel_driver(spec).map(|d| d.0).unwrap_or_default();
    let mut buf = vec![0u8; BUFFER];
    let (mut ks, mut ls) = (0f64, 0f64);
    for _ in 0..3 {
        ks = ks.max(speed(&k, &mut buf)?);
        ls = ls.max(speed(&l, &mut buf)?);
    }
    Ok(Measurement {
        version: 1,
        spec: spec.to_string(),
        key_bits,
        sector_size,
        kernel: kernel_release(),
        driver,
        lukskit_mib_s: (ls * 10.0).round() / 10.0,
        kernel_mib_s: (ks * 10.0).round() / 10.0,
    })
}

/// The driver serving the kernel engine's name for `spec` now, and its kind.
fn kernel_driver(spec: &CipherSpec) -> Option<(String, String)> {
    let name = kernel_api::kernel_names(spec).engine;
    drivers::kernel_driver(&name).ok().flatten().map(|d| {
        (
            d.driver.clone(),
            Implementation::of(&d.driver).as_str().to_string(),
        )
    })
}

/// The engine for `request` and this mapping's cipher: `(engine, chosen by auto)`.
///
/// `kernel` without AF_ALG is an error here (the kernel lacking the cipher fails when the
/// volume is opened). `auto` takes lukskit's engine where the kernel engine cannot serve the
/// spec (no AF_ALG, no such algorithm, an IV generator only lukskit's engine has), else the
/// remembered or newly measured faster one.
pub fn resolve(
    request: EngineRequest,
    cipher: &str,
    key_bits: u32,
    sector_size: u32,
) -> Result<(EngineKind, bool)> {
    match request {
        EngineRequest::Lukskit => return Ok((EngineKind::Lukskit, false)),
        EngineRequest::Kernel => {
            if !kernel_api::af_alg_available() {
                return Err(ActivateError::InvalidRequest(
                    "Required kernel crypto interface not available (--engine kernel).".into(),
                ));
            }
            return Ok((EngineKind::Kernel, false));
        }
        EngineRequest::Auto => {}
    }
    let Ok(spec) = CipherSpec::parse(cipher) else {
        return Ok((EngineKind::Lukskit, true));
    };
    if !kernel_api::af_alg_available() || key_bits == 0 || !key_bits.is_multiple_of(8) {
        return Ok((EngineKind::Lukskit, true));
    }
    // Whether the kernel engine can serve it at all (this also makes the kernel build the
    // name, so that /proc/crypto lists its driver).
    let probe = SecretBuf::random((key_bits / 8) as usize).map_err(engine_error)?;
    if SectorCipher::new_kernel(&spec, probe.as_bytes(), sector_size, false).is_err() {
        return Ok((EngineKind::Lukskit, true));
    }
    drop(probe);
    let spec_text = spec.to_string();
    let driver = kernel_driver(&spec).map(|d| d.0).unwrap_or_default();
    let dir = open_dir();
    let file = dir
        .as_ref()
        .map(|d| cache_file(d, &spec_text, key_bits, sector_size));
    if let Some(m) = file.as_deref().and_then(read_measurement) {
        if m.spec == spec_text
            && m.key_bits == key_bits
            && m.sector_size == sector_size
            && m.kernel == kernel_release()
            && m.driver == driver
        {
            return Ok((m.choice(), true));
        }
    }
    let m = measure(&spec, key_bits, sector_size)?;
    if let (Some(d), Some(f)) = (&dir, &file) {
        write_measurement(d, f, &m);
    }
    Ok((m.choice(), true))
}

/// What `status` shows of the engine of a mapping of `cipher`, once its volume is open.
pub fn in_use(kind: EngineKind, auto: bool, cipher: &str) -> EngineInUse {
    let spec = CipherSpec::parse(cipher).ok();
    match kind {
        EngineKind::Kernel => EngineInUse {
            kind: "kernel".into(),
            auto,
            kernel_name: spec.as_ref().map(|s| kernel_api::kernel_names(s).engine),
            driver: spec.as_ref().and_then(kernel_driver),
            implementation: None,
        },
        EngineKind::Lukskit => EngineInUse {
            kind: "lukskit".into(),
            auto,
            kernel_name: None,
            driver: None,
            implementation: spec.as_ref().and_then(|s| {
                let block = s.cipher.rsplit(',').next().unwrap_or(&s.cipher);
                own_kernels()
                    .into_iter()
                    .find(|k| k.selected && k.cipher == block)
                    .map(|k| k.name.to_string())
            }),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Measurement {
        Measurement {
            version: 1,
            spec: "aes-xts-plain64".into(),
            key_bits: 512,
            sector_size: 4096,
            kernel: "6.1.0-57-amd64".into(),
            driver: "xts-aes-aesni".into(),
            lukskit_mib_s: 2000.0,
            kernel_mib_s: 900.5,
        }
    }

    #[test]
    fn remembered_measurements_round_trip_and_bad_files_are_misses() {
        let dir = tempfile::tempdir().unwrap();
        let f = cache_file(dir.path(), "aes-xts-plain64", 512, 4096);
        assert_ne!(f, cache_file(dir.path(), "aes-xts-plain64", 256, 4096));
        assert_ne!(f, cache_file(dir.path(), "aes-xts-plain64", 512, 512));
        assert!(read_measurement(&f).is_none());
        write_measurement(dir.path(), &f, &sample());
        assert_eq!(read_measurement(&f), Some(sample()));
        assert_eq!(sample().choice(), EngineKind::Lukskit);
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(
            std::fs::metadata(&f).unwrap().permissions().mode() & 0o777,
            0o600
        );
        // Corrupt, unknown fields, oversized, NaN: misses (measured again).
        for bad in [
            "{".to_string(),
            r#"{"version":1}"#.to_string(),
            serde_json::to_string(&sample())
                .unwrap()
                .replace("}", r#","x":1}"#),
            format!(
                "{:width$}",
                serde_json::to_string(&sample()).unwrap(),
                width = 5000
            ),
            serde_json::to_string(&sample())
                .unwrap()
                .replace("\"version\":1", "\"version\":2"),
        ] {
            std::fs::write(&f, bad.as_bytes()).unwrap();
            assert!(read_measurement(&f).is_none(), "{bad:.80}");
        }
        // A symlink is not followed.
        let target = dir.path().join("elsewhere");
        std::fs::write(&target, serde_json::to_string(&sample()).unwrap()).unwrap();
        std::fs::remove_file(&f).unwrap();
        std::os::unix::fs::symlink(&target, &f).unwrap();
        assert!(read_measurement(&f).is_none());
    }

    #[test]
    fn the_cache_is_bounded() {
        let dir = tempfile::tempdir().unwrap();
        for i in 0..(MAX_ENTRIES + 10) {
            let f = cache_file(dir.path(), "aes-xts-plain64", 256, 512 << (i % 4));
            let f = f.with_file_name(format!("{i}"));
            write_measurement(dir.path(), &f, &sample());
        }
        let n = std::fs::read_dir(dir.path()).unwrap().count();
        assert!(n <= MAX_ENTRIES, "{n}");
    }

    #[test]
    fn requests_without_af_alg() {
        assert_eq!(
            resolve(EngineRequest::Lukskit, "aes-xts-plain64", 512, 512).unwrap(),
            (EngineKind::Lukskit, false)
        );
        let auto = resolve(EngineRequest::Auto, "aes-cbc-lmk", 256, 512).unwrap();
        assert_eq!(auto, (EngineKind::Lukskit, true));
        if kernel_api::af_alg_available() {
            assert_eq!(
                resolve(EngineRequest::Kernel, "aes-xts-plain64", 512, 512).unwrap(),
                (EngineKind::Kernel, false)
            );
        } else {
            // This development host: the kernel engine is refused, auto takes lukskit's.
            assert!(resolve(EngineRequest::Kernel, "aes-xts-plain64", 512, 512).is_err());
            assert_eq!(
                resolve(EngineRequest::Auto, "aes-xts-plain64", 512, 512).unwrap(),
                (EngineKind::Lukskit, true)
            );
        }
    }
}
