//! The secrets that unlock a volume.

use crate::error::{Error, KeyFileProblem, Result};
use lukskit_crypto::SecretBuf;
use std::io::Read;

/// The largest key file read (cryptsetup's default `--keyfile-size` limit, 8 MiB).
pub const MAX_KEY_FILE_SIZE: u64 = 8192 * 1024;

/// What unlocks a volume. Every variant holds its bytes in a [`SecretBuf`] (locked in memory,
/// wiped when dropped) from the moment it is made.
#[derive(Debug)]
#[non_exhaustive]
pub enum Secret {
    /// A passphrase, tried against every keyslot.
    Passphrase(SecretBuf),
    /// A key file's contents (used whole, as cryptsetup's `--key-file` without offset or size).
    KeyFile(SecretBuf),
    /// The volume key itself (as `--volume-key-file`), checked against the header's digest.
    VolumeKey(SecretBuf),
    /// The LUKS2 tokens that lukskit can run without interaction (clevis: tang, tpm2, sss),
    /// all of them in order or only the one with this id. Needs the `tang` feature.
    Token(Option<u32>),
}

impl Secret {
    /// A passphrase (copied at once into a locked buffer; the caller's copy is its own).
    pub fn passphrase(bytes: impl AsRef<[u8]>) -> Secret {
        Secret::Passphrase(SecretBuf::from_slice(bytes.as_ref()))
    }

    /// The contents of the key file at `path` (at most [`MAX_KEY_FILE_SIZE`] bytes), read
    /// straight into a locked buffer.
    pub fn key_file(path: impl AsRef<std::path::Path>) -> Result<Secret> {
        let path = path.as_ref();
        let err = |reason| Error::KeyFile {
            path: path.display().to_string(),
            reason,
        };
        let file = std::fs::File::open(path).map_err(|e| err(KeyFileProblem::Read(e)))?;
        // A regular file's size is known: one byte more shows that it grew meanwhile. A pipe
        // or device gets the whole limit.
        let cap = match file.metadata() {
            Ok(m) if m.is_file() => m.len().min(MAX_KEY_FILE_SIZE) + 1,
            _ => MAX_KEY_FILE_SIZE + 1,
        };
        let mut buf = SecretBuf::zeroed(cap as usize);
        let mut len = 0;
        let mut reader = file.take(cap);
        loop {
            match reader.read(&mut buf.as_mut_bytes()[len..]) {
                Ok(0) => break,
                Ok(n) => len += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(err(KeyFileProblem::Read(e))),
            }
        }
        if len as u64 > MAX_KEY_FILE_SIZE {
            return Err(err(KeyFileProblem::TooLarge));
        }
        if len as u64 == cap {
            let grew = std::io::Error::other("the file grew while it was read");
            return Err(err(KeyFileProblem::Read(grew)));
        }
        Ok(Secret::KeyFile(SecretBuf::from_slice(
            &buf.as_bytes()[..len],
        )))
    }

    /// A key file's contents given as bytes.
    pub fn key_file_bytes(bytes: impl AsRef<[u8]>) -> Secret {
        Secret::KeyFile(SecretBuf::from_slice(bytes.as_ref()))
    }

    /// The volume key (copied at once into a locked buffer).
    pub fn volume_key(bytes: impl AsRef<[u8]>) -> Secret {
        Secret::VolumeKey(SecretBuf::from_slice(bytes.as_ref()))
    }

    /// Any token lukskit can run (see [`Secret::Token`]).
    pub fn any_token() -> Secret {
        Secret::Token(None)
    }

    /// The token with this id.
    pub fn token(id: u32) -> Secret {
        Secret::Token(Some(id))
    }

    /// The bytes tried against keyslots: a passphrase's or a key file's; `None` for the
    /// other kinds.
    pub(crate) fn keyslot_secret(&self) -> Option<&SecretBuf> {
        match self {
            Secret::Passphrase(p) | Secret::KeyFile(p) => Some(p),
            Secret::VolumeKey(_) | Secret::Token(_) => None,
        }
    }
}
