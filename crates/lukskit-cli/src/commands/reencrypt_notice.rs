//! What cryptsetup 2.6.1 says of a re-encryption's device in use (its
//! `get_active_device_name` and `reencrypt_hint_force_offline_reencrypt`).

use crate::args::Opts;
use crate::errors::{CliError, Result};
use crate::input;
use lukskit_volume::Volume;

/// What cryptsetup 2.6.1 says of the device's use (its `get_active_device_name`), which it
/// looks up after the passphrases are read and before anything is written: so that what
/// the user types goes to the prompt it is meant for.
pub(crate) enum ActiveNotice {
    /// Nothing to say.
    Nothing,
    /// "Auto-detected active dm device 'NAME' for data device DEVICE." (not with `-q`).
    Detected { name: String, data_path: String },
    /// DEVICE is no block device: whether it is in use cannot be told; the question whether
    /// to go on offline.
    AskOffline { device: String },
}

impl ActiveNotice {
    /// For a device that is no block device: with `-q` cryptsetup refuses at once (its
    /// `reencrypt_hint_force_offline_reencrypt`, before any passphrase); otherwise it asks
    /// later.
    pub(crate) fn unknown(o: &Opts, device: &str) -> Result<Self> {
        if o.batch_mode {
            return Err(refuse_unknown_use(device));
        }
        Ok(Self::AskOffline {
            device: device.to_string(),
        })
    }

    /// For a mapping found over `vol`'s data device (`device`, or the data device of a
    /// detached header).
    pub(crate) fn detected(name: Option<&str>, vol: &Volume, device: &str) -> Self {
        match name {
            Some(n) => Self::Detected {
                name: n.to_string(),
                data_path: if vol.detached { &vol.data_path } else { device }.to_string(),
            },
            None => Self::Nothing,
        }
    }

    /// Say it (and ask): an error when the user does not answer yes.
    pub(crate) fn say(&self, o: &Opts) -> Result<()> {
        match self {
            Self::Nothing => Ok(()),
            Self::Detected { name, data_path } => {
                if !o.batch_mode {
                    println!(
                        "Auto-detected active dm device '{name}' for data device {data_path}."
                    );
                }
                Ok(())
            }
            Self::AskOffline { device } => ask_offline(device),
        }
    }
}

/// cryptsetup's refusal (with `-q`) of a device that is no block device, where it cannot
/// tell whether the device is in use.
pub(crate) fn refuse_unknown_use(device: &str) -> CliError {
    CliError::invalid(format!(
        "Device {device} is not a block device. Can not auto-detect if it is active or \
         not.\nUse --force-offline-reencrypt to bypass the check and run in offline mode \
         (dangerous!)."
    ))
}

/// cryptsetup's question for a device that is no block device (without `-q`): "Device X is
/// not a block device." and a question whose answer is no without a terminal (a run goes
/// on offline on yes).
fn ask_offline(device: &str) -> Result<()> {
    println!("Device {device} is not a block device.");
    let question = format!(
        "Unable to decide if device {device} is activated or not.\nAre you sure you want to \
         proceed with reencryption in offline mode?\nIt may lead to data corruption if the \
         device is actually activated.\nTo run reencryption in online mode, use --active-name \
         parameter instead.\n"
    );
    if input::confirmed_default_no(&question)? {
        return Ok(());
    }
    // Only an answer read from the user is followed by "Operation aborted.".
    Err(if input::interactive() {
        input::aborted()
    } else {
        CliError::invalid("")
    })
}
