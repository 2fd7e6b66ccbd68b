//! `lukskit._native`: the Python extension module over the `lukskit` facade crate. The
//! Python package `lukskit` (python/lukskit/) wraps it with keyword arguments, the context
//! manager and the `io.RawIOBase` view.
//!
//! Secrets come in as `str` or `bytes` and are copied at once into lukskit's locked,
//! zeroizing buffers (`SecretBuf`); the Python objects themselves are Python's.

#![forbid(unsafe_code)]

mod errors;

use errors::to_py;
use lukskit::{FormatOptions, KeyslotOptions, OpenOptions, Pbkdf, Secret};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyString};
use std::sync::Mutex;

/// The bytes of a `str` (UTF-8) or `bytes` secret, copied into a locked buffer.
fn secret_bytes(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<lukskit::SecretBuf> {
    if let Ok(b) = obj.cast::<PyBytes>() {
        return Ok(lukskit::SecretBuf::from_slice(b.as_bytes()));
    }
    if let Ok(s) = obj.cast::<PyString>() {
        return Ok(lukskit::SecretBuf::from_slice(s.to_str()?.as_bytes()));
    }
    Err(PyTypeError::new_err(format!("{what} must be str or bytes")))
}

/// The one secret of `passphrase`, `key_file`, `volume_key`, `token` that is given.
fn one_secret(
    passphrase: Option<&Bound<'_, PyAny>>,
    key_file: Option<&str>,
    volume_key: Option<&Bound<'_, PyAny>>,
    token: Option<i64>,
) -> PyResult<Secret> {
    let given = [
        passphrase.is_some(),
        key_file.is_some(),
        volume_key.is_some(),
        token.is_some(),
    ];
    if given.iter().filter(|g| **g).count() != 1 {
        return Err(PyTypeError::new_err(
            "give exactly one of passphrase, key_file, volume_key, token",
        ));
    }
    if let Some(p) = passphrase {
        return Ok(Secret::Passphrase(secret_bytes(p, "passphrase")?));
    }
    if let Some(k) = key_file {
        return Secret::key_file(k).map_err(to_py);
    }
    if let Some(v) = volume_key {
        return Ok(Secret::VolumeKey(secret_bytes(v, "volume_key")?));
    }
    match token {
        Some(-1) => Ok(Secret::any_token()),
        Some(id) => u32::try_from(id)
            .map(Secret::token)
            .map_err(|_| PyValueError::new_err("token must be a token id or -1 for any")),
        None => unreachable!("one secret was given"),
    }
}

/// The PBKDF named `pbkdf` (`pbkdf2`, `argon2i`, `argon2id`, or None for cryptsetup's
/// benchmarked default) with forced costs.
fn pbkdf_of(
    pbkdf: Option<&str>,
    iterations: Option<u32>,
    memory_kib: Option<u32>,
    parallel: Option<u32>,
) -> PyResult<Pbkdf> {
    let argon = |time: Option<u32>| -> (u32, u32, u32) {
        (
            time.unwrap_or(4),
            memory_kib.unwrap_or(1 << 20),
            parallel.unwrap_or(4),
        )
    };
    Ok(match pbkdf {
        None if iterations.is_none() => Pbkdf::Default,
        None | Some("pbkdf2") => {
            match iterations {
                Some(iterations) => Pbkdf::Pbkdf2 { iterations },
                None => return Err(PyValueError::new_err(
                    "pbkdf2 needs iterations (a benchmark picks them only for the default PBKDF)",
                )),
            }
        }
        Some("argon2i") => {
            let (time, memory_kib, parallel) = argon(iterations);
            Pbkdf::Argon2i {
                time,
                memory_kib,
                parallel,
            }
        }
        Some("argon2id") => {
            let (time, memory_kib, parallel) = argon(iterations);
            Pbkdf::Argon2id {
                time,
                memory_kib,
                parallel,
            }
        }
        Some(other) => {
            return Err(errors::InvalidOption::new_err(format!(
                "unknown pbkdf {other:?}"
            )))
        }
    })
}

/// An unlocked volume (the Python class `lukskit.Volume` wraps it).
#[pyclass(module = "lukskit._native", frozen)]
struct NativeVolume {
    inner: Mutex<Option<lukskit::Unlocked>>,
    writable: bool,
}

impl NativeVolume {
    fn with<T>(&self, f: impl FnOnce(&mut lukskit::Unlocked) -> lukskit::Result<T>) -> PyResult<T> {
        let mut guard = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        let vol = guard
            .as_mut()
            .ok_or_else(|| errors::Closed::new_err("the volume is closed"))?;
        f(vol).map_err(to_py)
    }
}

#[pymethods]
impl NativeVolume {
    /// Read `size` plaintext bytes at `offset` (from the start of the data area).
    fn read<'py>(
        &self,
        py: Python<'py>,
        offset: u64,
        size: usize,
    ) -> PyResult<Bound<'py, PyBytes>> {
        let mut buf = vec![0u8; size.min(usize::try_from(self.size()?).unwrap_or(usize::MAX))];
        if buf.len() < size {
            return Err(errors::OutOfRange::new_err(format!(
                "{size} bytes at offset {offset} do not fit in the {}-byte data area",
                self.size()?
            )));
        }
        self.with(|v| v.read_at(&mut buf, offset))?;
        Ok(PyBytes::new(py, &buf))
    }

    /// Write `data` as plaintext at `offset`.
    fn write(&self, offset: u64, data: &[u8]) -> PyResult<()> {
        self.with(|v| v.write_at(data, offset))
    }

    /// Make written data durable.
    fn flush(&self) -> PyResult<()> {
        self.with(|v| v.flush())
    }

    /// Size of the plaintext in bytes.
    fn size(&self) -> PyResult<u64> {
        self.with(|v| Ok(v.size()))
    }

    /// Whether the volume was opened for writing.
    fn writable(&self) -> bool {
        self.writable
    }

    /// The keyslot that opened the volume (None for a volume key).
    fn keyslot(&self) -> PyResult<Option<u32>> {
        self.with(|v| Ok(v.keyslot()))
    }

    /// `LUKS1` or `LUKS2`.
    fn volume_type(&self) -> PyResult<String> {
        self.with(|v| Ok(v.volume().volume_type().to_string()))
    }

    /// The UUID.
    fn uuid(&self) -> PyResult<String> {
        self.with(|v| Ok(v.volume().uuid().to_string()))
    }

    /// The metadata as cryptsetup's JSON document (a string).
    fn dump_json(&self) -> PyResult<String> {
        self.with(|v| Ok(v.metadata()?.json().to_string()))
    }

    /// The volume key (bytes). Handle with care.
    fn volume_key<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        let mut guard = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        let vol = guard
            .as_mut()
            .ok_or_else(|| errors::Closed::new_err("the volume is closed"))?;
        Ok(PyBytes::new(py, vol.volume_key().as_bytes()))
    }

    /// Add a keyslot for `passphrase` (str or bytes) with the volume key held; returns it.
    #[pyo3(signature = (passphrase, slot=None, pbkdf=None, iterations=None, memory_kib=None, parallel=None, hash=None))]
    #[allow(clippy::too_many_arguments)]
    fn add_key(
        &self,
        passphrase: &Bound<'_, PyAny>,
        slot: Option<u32>,
        pbkdf: Option<&str>,
        iterations: Option<u32>,
        memory_kib: Option<u32>,
        parallel: Option<u32>,
        hash: Option<String>,
    ) -> PyResult<u32> {
        let new = Secret::Passphrase(secret_bytes(passphrase, "passphrase")?);
        let mut options =
            KeyslotOptions::new().pbkdf(pbkdf_of(pbkdf, iterations, memory_kib, parallel)?);
        options.slot = slot;
        options.hash = hash;
        self.with(|v| v.add_key(&new, &options))
    }

    /// Destroy keyslot `slot`.
    fn remove_key(&self, slot: u32) -> PyResult<()> {
        self.with(|v| v.remove_key(slot))
    }

    /// The active keyslots.
    fn keyslots(&self) -> PyResult<Vec<u32>> {
        self.with(|v| v.volume().keyslots())
    }

    /// Close: flush, release the device and wipe the key. Idempotent.
    fn close(&self) -> PyResult<()> {
        let taken = self.inner.lock().unwrap_or_else(|e| e.into_inner()).take();
        match taken {
            Some(v) if self.writable => v.flush().map_err(to_py),
            _ => Ok(()),
        }
    }

    /// Whether [`NativeVolume::close`] was called.
    fn closed(&self) -> bool {
        self.inner
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .is_none()
    }
}

/// Open and unlock the volume on `path` (an image, a block device or an NBD URI).
#[pyfunction]
#[pyo3(signature = (path, passphrase=None, key_file=None, volume_key=None, token=None, header=None, writable=false))]
fn open(
    path: &str,
    passphrase: Option<&Bound<'_, PyAny>>,
    key_file: Option<&str>,
    volume_key: Option<&Bound<'_, PyAny>>,
    token: Option<i64>,
    header: Option<String>,
    writable: bool,
) -> PyResult<NativeVolume> {
    let secret = one_secret(passphrase, key_file, volume_key, token)?;
    let mut options = OpenOptions::new().writable(writable);
    if let Some(h) = header {
        options = options.header(h);
    }
    let unlocked = options
        .open(path)
        .and_then(|v| v.unlock(secret))
        .map_err(to_py)?;
    Ok(NativeVolume {
        inner: Mutex::new(Some(unlocked)),
        writable,
    })
}

/// The metadata of the volume on `path` as cryptsetup's JSON document (no secret needed).
#[pyfunction]
#[pyo3(signature = (path, header=None))]
fn dump_json(path: &str, header: Option<String>) -> PyResult<String> {
    let mut options = OpenOptions::new();
    if let Some(h) = header {
        options = options.header(h);
    }
    let vol = options.open(path).map_err(to_py)?;
    Ok(vol.metadata().map_err(to_py)?.json().to_string())
}

/// Format the existing image or device `path` as a new LUKS volume.
#[pyfunction]
#[pyo3(signature = (path, passphrase=None, key_file=None, version="luks2", cipher=None, key_size=None, sector_size=None, pbkdf=None, iterations=None, memory_kib=None, parallel=None, hash=None, label=None, uuid=None, header=None))]
#[allow(clippy::too_many_arguments)]
fn format(
    path: &str,
    passphrase: Option<&Bound<'_, PyAny>>,
    key_file: Option<&str>,
    version: &str,
    cipher: Option<&str>,
    key_size: Option<u32>,
    sector_size: Option<u32>,
    pbkdf: Option<&str>,
    iterations: Option<u32>,
    memory_kib: Option<u32>,
    parallel: Option<u32>,
    hash: Option<String>,
    label: Option<String>,
    uuid: Option<String>,
    header: Option<String>,
) -> PyResult<()> {
    let secret = one_secret(passphrase, key_file, None, None)?;
    let mut options = match version {
        "luks1" | "LUKS1" => FormatOptions::luks1(),
        "luks2" | "LUKS2" => FormatOptions::luks2(),
        other => {
            return Err(errors::InvalidOption::new_err(format!(
                "unknown version {other:?} (luks1 or luks2)"
            )))
        }
    };
    if let Some(c) = cipher {
        options = options.cipher(c).map_err(to_py)?;
    }
    options.key_bits = key_size;
    options.sector_size = sector_size;
    options.pbkdf = pbkdf_of(pbkdf, iterations, memory_kib, parallel)?;
    options.hash = hash;
    options.label = label;
    options.uuid = uuid;
    options.header = header;
    lukskit::format(path, &secret, &options).map_err(to_py)?;
    Ok(())
}

/// The extension module.
#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    errors::register(m)?;
    m.add_class::<NativeVolume>()?;
    m.add_function(wrap_pyfunction!(open, m)?)?;
    m.add_function(wrap_pyfunction!(dump_json, m)?)?;
    m.add_function(wrap_pyfunction!(format, m)?)?;
    Ok(())
}
