//! cryptsetup plain mode behind the seam: no metadata, so nothing to probe or dump; the key
//! comes from the passphrase (hashed) or a key file (as it is), the layout from the options
//! ([`crate::plain`]).

use super::{Description, OnDiskFormat, OtherFormatError, Probe, UnlockRequest, Unlocked};
use crate::error::Result;
use crate::plain::key_from_secret;
use crate::segment::SegmentTable;
use lukskit_format::VolumeType;

/// Plain mode.
pub struct Plain;

impl OnDiskFormat for Plain {
    fn volume_type(&self) -> VolumeType {
        VolumeType::Plain
    }

    fn probe(&self, _head: &[u8]) -> Probe {
        Probe::CannotTell
    }

    fn dump(&self, _request: &UnlockRequest<'_>) -> Result<Box<dyn Description>> {
        // cryptsetup has no dump of plain mode: there is no metadata to describe.
        Err(OtherFormatError::Unsupported("Plain mode has no metadata to dump.".into()).into())
    }

    fn unlock(&self, request: &UnlockRequest<'_>) -> Result<Unlocked> {
        let p = &request.options.plain;
        p.check()?;
        let key = match (request.passphrase, request.key_files.first()) {
            (Some(pass), _) => key_from_secret(Some(&p.hash), pass.as_bytes(), p.key_len()?)?,
            (None, Some(file)) => key_from_secret(None, file.as_bytes(), p.key_len()?)?,
            (None, None) => {
                return Err(OtherFormatError::SecretMissing {
                    what: "A passphrase or key file".into(),
                }
                .into())
            }
        };
        let size = super::device_size(request.device)?;
        let table = SegmentTable::from_layout(&p.layout()?, key.as_bytes(), size)?;
        Ok(Unlocked {
            volume_type: VolumeType::Plain,
            uuid: None,
            layers: vec![table],
            read_only: false,
            volume_key: key,
        })
    }
}
