//! Windows BitLocker (and BitLocker To Go), as cryptsetup 2.6.1 opens it (lib/bitlk):
//!
//! * [`header`]: the typed metadata (volume header, FVE metadata, entries, VMKs, FVEK);
//! * [`dump`]: `bitlkDump`'s text;
//! * [`keys`]: password, recovery password or startup key (`.BEK`) → VMK → FVEK;
//! * [`layout`]: the segment table of the mapping (metadata areas zeroed, the original
//!   volume header moved back to the start).
//!
//! Only what cryptsetup activates is unlocked: a volume in a transitional state, an
//! encrypt-on-write volume or one with a clear key (BitLocker suspended) is refused with its
//! words.

pub mod dump;
pub mod header;
pub mod keys;
pub mod layout;
pub mod source;

use self::header::{EncryptionType, LoadError, Metadata, Protection};
use super::{Description, OnDiskFormat, OtherFormatError, Probe, UnlockRequest, Unlocked};
use crate::device::{Access, Device};
use crate::error::Result;
use lukskit_crypto::SecretBuf;
use lukskit_format::io::Storage;
use lukskit_format::VolumeType;

/// BitLocker.
pub struct Bitlk;

/// The metadata of the device at `path`, or cryptsetup's refusal of it.
pub fn load(path: &str) -> Result<Metadata> {
    let not_loadable = |message| OtherFormatError::NotLoadable {
        volume_type: VolumeType::Bitlk,
        path: path.to_string(),
        message,
    };
    let dev = Device::open(path, Access::Read)?;
    Metadata::read(&dev, path).map_err(|LoadError { message }| not_loadable(message).into())
}

/// cryptsetup's `_activate_check`: what it refuses to activate, in its words.
pub fn activate_check(md: &Metadata) -> std::result::Result<(), OtherFormatError> {
    if !md.state_normal {
        return Err(OtherFormatError::Unsupported(
            "This BITLK device is in an unsupported state and cannot be activated.".into(),
        ));
    }
    if md.encryption_type != EncryptionType::Normal {
        return Err(OtherFormatError::Unsupported(format!(
            "BITLK devices with type '{}' cannot be activated.",
            md.encryption_type.name()
        )));
    }
    if md.vmks.iter().any(|v| v.protection == Protection::ClearKey) {
        return Err(OtherFormatError::Unsupported(
            "Activation of partially decrypted BITLK device is not supported.".into(),
        ));
    }
    Ok(())
}

/// The FVEK of a loaded volume from `secret` (a password, recovery password or `.BEK`
/// contents), after cryptsetup's activation checks.
pub fn volume_key(md: &Metadata, secret: &[u8]) -> Result<SecretBuf> {
    activate_check(md)?;
    keys::volume_key(md, secret).map_err(|f| {
        if f.errno == keys::Errno::Perm && f.messages.is_empty() {
            // "No key available with this passphrase." (a terminal asks again).
            OtherFormatError::NoKey.into()
        } else {
            OtherFormatError::Refused {
                messages: f.messages,
                exit_code: f.errno.exit_code(),
            }
            .into()
        }
    })
}

impl OnDiskFormat for Bitlk {
    fn volume_type(&self) -> VolumeType {
        VolumeType::Bitlk
    }

    fn probe(&self, head: &[u8]) -> Probe {
        match head.get(3..11) {
            Some(b"-FVE-FS-") => Probe::Mine,
            // A FAT volume header: BitLocker To Go only with a BitLocker GUID at 424.
            Some(b"MSWIN4.1") => {
                let src: &[u8] = head;
                let mut guid = [0u8; 16];
                let ours = source::Source::read_at(src, &mut guid, 424)
                    && header::is_bitlocker_guid(&guid);
                if ours {
                    Probe::Mine
                } else {
                    Probe::NotMine
                }
            }
            _ => Probe::NotMine,
        }
    }

    fn dump(&self, request: &UnlockRequest<'_>) -> Result<Box<dyn Description>> {
        let metadata = load(request.device)?;
        if metadata.fvek.is_none() {
            // cryptsetup 2.6.1 dereferences the missing FVEK here.
            return Err(OtherFormatError::Invalid {
                volume_type: VolumeType::Bitlk,
                why: "no FVEK entry".into(),
            }
            .into());
        }
        Ok(Box::new(dump::BitlkDescription {
            path: request.device.to_string(),
            metadata,
        }))
    }

    fn unlock(&self, request: &UnlockRequest<'_>) -> Result<Unlocked> {
        let md = load(request.device)?;
        let empty = SecretBuf::zeroed(0);
        let secret = request
            .passphrase
            .or_else(|| request.key_files.first())
            .unwrap_or(&empty);
        let fvek = volume_key(&md, secret.as_bytes())?;
        let dev = Device::open(request.device, Access::Read)?;
        let size = dev
            .size()
            .map_err(|e| crate::VolumeError::io(crate::IoOp::ReadSize, request.device, e))?;
        let table = layout::table(&md, &fvek, size)?;
        Ok(Unlocked {
            volume_type: VolumeType::Bitlk,
            uuid: Some(md.guid.to_string()),
            layers: vec![table],
            read_only: false,
            volume_key: fvek,
        })
    }
}
