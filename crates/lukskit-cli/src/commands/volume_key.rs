//! `--volume-key-file`: cryptsetup reads exactly the volume key size from it (so
//! `/dev/urandom` works and longer files are cut), and fails with its own words when the file
//! cannot be opened or is shorter.

use crate::errors::{CliError, Result};
use lukskit_crypto::SecretBuf;

use std::io::Read;

/// The size in bytes of the volume key `--volume-key-file` must hold: the header's (from its
/// keyslots), or for a LUKS2 header without keyslots (after `luksErase`) `--key-size`, as
/// cryptsetup's open, luksAddKey and luksDump do ("Cannot determine volume key size for LUKS
/// without keyslots, please use --key-size option." without it).
pub fn volume_key_bytes(vol: &lukskit_volume::Volume, key_bits: Option<u32>) -> Result<usize> {
    match vol.volume_key_size() {
        Ok(n) => Ok(n),
        Err(e) => match key_bits {
            Some(bits) if bits > 0 => Ok((bits / 8) as usize),
            _ if matches!(
                e,
                lukskit_volume::VolumeError::Keyslot(lukskit_volume::KeyslotError::NoBoundKeyslot)
            ) =>
            {
                Err(CliError::invalid(
                    "Cannot determine volume key size for LUKS without keyslots, please use \
                     --key-size option.",
                ))
            }
            _ => Err(CliError::from(e)),
        },
    }
}

/// Read exactly `bytes` bytes of `path` into a locked buffer.
pub fn read_volume_key_file(path: &str, bytes: usize) -> Result<SecretBuf> {
    let mut f = std::fs::File::open(path)
        .map_err(|_| CliError::invalid(format!("Cannot read keyfile {path}.")))?;
    let short = || CliError::invalid(format!("Cannot read {bytes} bytes from keyfile {path}."));
    let mut key = SecretBuf::zeroed(bytes);
    let mut got = 0;
    while got < bytes {
        match f.read(&mut key.as_mut_bytes()[got..]) {
            Ok(0) => return Err(short()),
            Ok(n) => got += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => return Err(short()),
        }
    }
    Ok(key)
}

/// `--key-size` for a new LUKS volume as cryptsetup reads it: `-s 0` is its 256-bit default
/// before the doubling for XTS (which applies only when no size is given).
pub fn luks_key_bits(key_size: Option<u32>) -> Option<u32> {
    match key_size {
        Some(0) => Some(256),
        k => k,
    }
}

/// The volume key size in bytes that luksFormat uses: `--key-size` (see [`luks_key_bits`]) or
/// the default for the cipher.
pub fn format_key_bytes(
    cipher: &lukskit_volume::format::DataCipher,
    key_size_bits: Option<u32>,
) -> Result<usize> {
    let bits = luks_key_bits(key_size_bits).unwrap_or_else(|| cipher.default_key_bits());
    Ok((bits / 8) as usize)
}
