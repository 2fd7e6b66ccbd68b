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
    fn metadata_without_secret(&self) -> bool {
        true
    }

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
            return Err(OtherFormatError::Refused {
                messages: vec!["BITLK metadata has no FVEK entry.".into()],
                exit_code: 1,
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
            // cryptsetup's BITLK activation gives dm no UUID: the DM UUID is CRYPT-BITLK-NAME.
            uuid: None,
            layers: vec![table],
            read_only: false,
            volume_key: fvek,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::header::Metadata;
    use super::*;

    const FVE: usize = 8192;

    fn put(b: &mut [u8], at: usize, v: &[u8]) {
        b[at..at + v.len()].copy_from_slice(v);
    }

    /// An entry: size, type, value type, version 1, then `body`.
    fn entry(kind: u16, value: u16, body: &[u8]) -> Vec<u8> {
        let mut e = Vec::new();
        e.extend_from_slice(&((8 + body.len()) as u16).to_le_bytes());
        e.extend_from_slice(&kind.to_le_bytes());
        e.extend_from_slice(&value.to_le_bytes());
        e.extend_from_slice(&1u16.to_le_bytes());
        e.extend_from_slice(body);
        e
    }

    /// A small synthetic BitLocker volume: a startup-key VMK (name, stretch salt, encrypted
    /// key), an FVEK, a description and the volume header entry.
    fn volume() -> Vec<u8> {
        let mut b = vec![0u8; 256 * 1024];
        put(&mut b, 0, b"\xeb\x58\x90-FVE-FS-");
        put(&mut b, 11, &512u16.to_le_bytes());
        put(
            &mut b,
            160,
            &[
                0x3b, 0xd6, 0x67, 0x49, 0x29, 0x2e, 0xd8, 0x4a, 0x83, 0x99, 0xf6, 0xa3, 0x39, 0xe3,
                0xd0, 0x01,
            ],
        );
        for (i, o) in [FVE, FVE + 65536, FVE + 131072].iter().enumerate() {
            put(&mut b, 176 + 8 * i, &(*o as u64).to_le_bytes());
        }
        let name: Vec<u8> = "ExternalKey"
            .encode_utf16()
            .flat_map(u16::to_le_bytes)
            .collect();
        let mut vmk_body = vec![0x11u8; 28];
        put(&mut vmk_body, 26, &0x0200u16.to_le_bytes());
        vmk_body.extend(entry(0, 2, &name));
        vmk_body.extend(entry(0, 3, &[0x22; 20]));
        vmk_body.extend(entry(0, 5, &[0x33; 28 + 44]));
        let mut entries = entry(2, 8, &vmk_body);
        entries.extend(entry(3, 5, &[0x44; 28 + 44]));
        let desc: Vec<u8> = "test volume"
            .encode_utf16()
            .flat_map(u16::to_le_bytes)
            .collect();
        entries.extend(entry(7, 2, &desc));
        let mut vh = (204_800u64).to_le_bytes().to_vec();
        vh.extend_from_slice(&8192u64.to_le_bytes());
        entries.extend(entry(15, 15, &vh));
        put(&mut b, FVE, b"-FVE-FS-");
        put(&mut b, FVE + 10, &2u16.to_le_bytes());
        put(&mut b, FVE + 12, &[4, 0, 4, 0]);
        let len = b.len() as u64;
        put(&mut b, FVE + 16, &len.to_le_bytes());
        put(
            &mut b,
            FVE + 64,
            &((48 + entries.len()) as u32).to_le_bytes(),
        );
        put(&mut b, FVE + 64 + 36, &0x8004u16.to_le_bytes());
        put(&mut b, FVE + 112, &entries);
        b
    }

    #[test]
    fn the_synthetic_volume_parses() {
        let b = volume();
        let md = Metadata::read(&b[..], "x").unwrap();
        assert_eq!(md.vmks.len(), 1);
        assert_eq!(md.vmks[0].name.as_deref(), Some("ExternalKey"));
        assert_eq!(md.vmks[0].salt, [0x22; 16]);
        assert_eq!(md.vmks[0].keys[0].len(), 44);
        assert_eq!(md.fvek.as_ref().unwrap().data.len(), 44);
        assert_eq!(md.description.as_deref(), Some("test volume"));
        assert_eq!(
            (md.volume_header_offset, md.volume_header_size),
            (204_800, 8192)
        );
        let text = dump::BitlkDescription {
            path: "x".into(),
            metadata: md.clone(),
        }
        .to_string();
        assert!(text.contains("\tName:       \tExternalKey\n"));
        let t = layout::table(&md, &SecretBuf::zeroed(32), b.len() as u64).unwrap();
        assert_eq!(t.size(), b.len() as u64);
        // Not the right startup key: refused, no panic.
        assert!(keys::volume_key(&md, &[0u8; 200]).is_err());
    }

    /// Random damage to the metadata never panics: the parse, the dump text, the layout and
    /// a startup-key unlock attempt either work or refuse.
    #[test]
    fn hostile_metadata_never_panics() {
        let orig = volume();
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut rnd = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let mut bek = vec![0u8; 200];
        put(&mut bek, 0, &200u32.to_le_bytes());
        put(&mut bek, 4, &1u32.to_le_bytes());
        put(&mut bek, 16, &[0x11; 16]);
        put(&mut bek, 48, &entry(6, 9, &[0u8; 24]));
        let mut parsed = 0;
        for _ in 0..20_000 {
            let mut b = orig.clone();
            for _ in 0..1 + rnd() % 6 {
                let at = match rnd() % 4 {
                    0 => (rnd() % 512) as usize,
                    _ => FVE + (rnd() % 420) as usize,
                };
                b[at] = match rnd() % 3 {
                    0 => 0,
                    1 => 0xff,
                    _ => rnd() as u8,
                };
            }
            let Ok(md) = Metadata::read(&b[..], "x") else {
                continue;
            };
            parsed += 1;
            let _ = dump::BitlkDescription {
                path: "x".into(),
                metadata: md.clone(),
            }
            .to_string();
            let _ = layout::table(&md, &SecretBuf::zeroed(32), b.len() as u64);
            let kdf = md.vmks.iter().any(|v| {
                matches!(
                    v.protection,
                    Protection::Passphrase | Protection::RecoveryPassphrase
                )
            });
            if !kdf {
                let _ = keys::volume_key(&md, &bek);
            }
        }
        assert!(parsed > 1000, "most damage still parses: {parsed}");
    }
}
