//! lukskit's typed errors as Python exceptions: every one a subclass of `lukskit.Error`.

use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;

create_exception!(lukskit, Error, PyException, "Every error lukskit raises.");
create_exception!(
    lukskit,
    WrongPassphrase,
    Error,
    "No keyslot opens with this passphrase or key file."
);
create_exception!(
    lukskit,
    WrongVolumeKey,
    Error,
    "The volume key given is not this volume's."
);
create_exception!(
    lukskit,
    NoUsableKeyslot,
    Error,
    "No keyslot can be tried (none active, or not usable)."
);
create_exception!(
    lukskit,
    NotLuks,
    Error,
    "There is no LUKS header on the device or image."
);
create_exception!(
    lukskit,
    NotFound,
    Error,
    "The device, image or file does not exist or cannot be accessed."
);
create_exception!(
    lukskit,
    InUse,
    Error,
    "Another user holds the device exclusively."
);
create_exception!(
    lukskit,
    ReadOnly,
    Error,
    "A write to a volume opened read-only."
);
create_exception!(
    lukskit,
    OutOfRange,
    Error,
    "A read or write beyond the end of the data area."
);
create_exception!(
    lukskit,
    KeyFileError,
    Error,
    "A key file could not be read or is too large."
);
create_exception!(
    lukskit,
    InvalidOption,
    Error,
    "An option that is not valid (cipher, key size, ...)."
);
create_exception!(
    lukskit,
    FeatureDisabled,
    Error,
    "This build of lukskit lacks a feature the call needs."
);
create_exception!(
    lukskit,
    NoTokenUnlocked,
    Error,
    "No token of the volume unlocked it."
);
create_exception!(lukskit, Closed, Error, "The volume was closed.");
create_exception!(
    lukskit,
    VolumeError,
    Error,
    "Any other error of the volume layer (keyslots, header, I/O)."
);

/// The Python exception for a facade error (its message is the error's `Display`).
pub fn to_py(e: lukskit::Error) -> PyErr {
    let msg = e.to_string();
    match e {
        lukskit::Error::WrongPassphrase => WrongPassphrase::new_err(msg),
        lukskit::Error::WrongVolumeKey => WrongVolumeKey::new_err(msg),
        lukskit::Error::NoUsableKeyslot => NoUsableKeyslot::new_err(msg),
        lukskit::Error::NotLuks { .. } => NotLuks::new_err(msg),
        lukskit::Error::NotFound { .. } => NotFound::new_err(msg),
        lukskit::Error::InUse { .. } => InUse::new_err(msg),
        lukskit::Error::ReadOnly { .. } => ReadOnly::new_err(msg),
        lukskit::Error::OutOfRange { .. } => OutOfRange::new_err(msg),
        lukskit::Error::KeyFile { .. } => KeyFileError::new_err(msg),
        lukskit::Error::InvalidOption { .. } => InvalidOption::new_err(msg),
        lukskit::Error::FeatureDisabled { .. } => FeatureDisabled::new_err(msg),
        lukskit::Error::NoTokenUnlocked => NoTokenUnlocked::new_err(msg),
        _ => VolumeError::new_err(msg),
    }
}

/// Add the exception classes to the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("Error", py.get_type::<Error>())?;
    m.add("WrongPassphrase", py.get_type::<WrongPassphrase>())?;
    m.add("WrongVolumeKey", py.get_type::<WrongVolumeKey>())?;
    m.add("NoUsableKeyslot", py.get_type::<NoUsableKeyslot>())?;
    m.add("NotLuks", py.get_type::<NotLuks>())?;
    m.add("NotFound", py.get_type::<NotFound>())?;
    m.add("InUse", py.get_type::<InUse>())?;
    m.add("ReadOnly", py.get_type::<ReadOnly>())?;
    m.add("OutOfRange", py.get_type::<OutOfRange>())?;
    m.add("KeyFileError", py.get_type::<KeyFileError>())?;
    m.add("InvalidOption", py.get_type::<InvalidOption>())?;
    m.add("FeatureDisabled", py.get_type::<FeatureDisabled>())?;
    m.add("NoTokenUnlocked", py.get_type::<NoTokenUnlocked>())?;
    m.add("Closed", py.get_type::<Closed>())?;
    m.add("VolumeError", py.get_type::<VolumeError>())?;
    Ok(())
}
