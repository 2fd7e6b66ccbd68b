//! The resilience and the data shift of a re-encryption, as cryptsetup 2.6.1 chooses them
//! from the request.

use crate::{ReencryptError, ReencryptRequest, ResilienceName, Result};
use lukskit_crypto::hash::HashAlg;
use lukskit_volume::reencrypt::ResilienceChoice;

/// The resilience of a new re-encryption or decryption without a data shift:
/// `checksum` (with `resilience_hash`, else `sha256`) unless asked otherwise. `datashift`
/// fails the initialization (only a data shift takes it, see [`data_shift`]); a name
/// cryptsetup does not know is refused.
pub fn resilience(req: &ReencryptRequest) -> Result<ResilienceChoice> {
    Ok(match &req.resilience {
        None | Some(ResilienceName::Checksum) => ResilienceChoice::Checksum(
            req.resilience_hash
                .clone()
                .unwrap_or_else(|| "sha256".into()),
        ),
        Some(ResilienceName::Journal) => ResilienceChoice::Journal,
        Some(ResilienceName::None) => ResilienceChoice::None,
        Some(ResilienceName::Datashift) => return Err(ReencryptError::InitFailed),
        Some(other) => return Err(ReencryptError::UnsupportedResilience(name(other))),
    })
}

/// The data shift of a re-encryption with `--reduce-device-size` (not an encryption, whose
/// shift comes with its new header): cryptsetup's `reencrypt_luks2_init` then shifts the
/// data by the whole size, backward, with resilience `datashift` whatever else is asked
/// (a size of 0 is no shift).
pub fn data_shift(req: &ReencryptRequest) -> Option<u64> {
    if req.encrypts() {
        return None;
    }
    req.reduce_device_size.filter(|s| *s != 0)
}

/// The resilience asked for an encryption with a data shift: cryptsetup replaces
/// `checksum`, `journal` and `none` by `datashift` for it, and refuses the `datashift-*`
/// names (the initialization fails) and names it does not know.
pub fn check_shift_resilience(req: &ReencryptRequest) -> Result<()> {
    match &req.resilience {
        None
        | Some(
            ResilienceName::Checksum
            | ResilienceName::Journal
            | ResilienceName::None
            | ResilienceName::Datashift,
        ) => Ok(()),
        Some(r) if r.is_datashift_variant() => Err(ReencryptError::InitFailed),
        Some(other) => Err(ReencryptError::UnsupportedResilience(name(other))),
    }
}

/// The protection of the segment a decryption moves (cryptsetup's
/// `decrypt_verify_and_set_params`): checksums with this hash (`Some`) unless `journal` is
/// asked for (`None`); `datashift` and `none` cannot protect it.
pub fn moved_protection(req: &ReencryptRequest) -> Result<Option<HashAlg>> {
    let hash = || {
        HashAlg::from_name(req.resilience_hash.as_deref().unwrap_or("sha256"))
            .map_err(|e| ReencryptError::Volume(e.into()))
    };
    match &req.resilience {
        None | Some(ResilienceName::Checksum | ResilienceName::DatashiftChecksum) => {
            Ok(Some(hash()?))
        }
        Some(ResilienceName::Journal | ResilienceName::DatashiftJournal) => Ok(None),
        Some(ResilienceName::Datashift | ResilienceName::None) => {
            Err(ReencryptError::ResilienceNotApplicable)
        }
        Some(other) => Err(ReencryptError::UnsupportedResilience(name(other))),
    }
}

/// The name of a resilience mode, as written.
fn name(r: &ResilienceName) -> String {
    match r {
        ResilienceName::Checksum => "checksum",
        ResilienceName::Journal => "journal",
        ResilienceName::None => "none",
        ResilienceName::Datashift => "datashift",
        ResilienceName::DatashiftChecksum => "datashift-checksum",
        ResilienceName::DatashiftJournal => "datashift-journal",
        ResilienceName::Other(n) => n,
    }
    .to_string()
}

/// A re-encryption with a data shift of `shift` bytes under kernel mapping `name`, of a
/// data area of `data` bytes (`sector`: the larger of the old and new encryption sector
/// sizes): the data left after the shift must hold the whole mapping, in whole sectors,
/// as cryptsetup 2.6.1's `reencrypt_load_by_passphrase` requires (a user shrinks the file
/// system and the mapping first, `resize --size`). cryptsetup checks it after it has
/// written the metadata and leaves the header in re-encryption; this is checked before
/// anything is written.
pub fn check_online_shift_size(name: &str, data: u64, shift: u64, sector: u32) -> Result<()> {
    let mapping = match lukskit_activate::find(name) {
        // (not `status`: it reads the header, whose device the caller holds locked)
        Ok(Some(lukskit_activate::Mapping::Kernel(k))) => k.size_sectors() * 512,
        Ok(Some(_)) => return Err(ReencryptError::OnlineShiftUnsupported),
        Ok(None) | Err(_) => return Err(ReencryptError::NotActive(name.to_string())),
    };
    if mapping > data.saturating_sub(shift) || !mapping.is_multiple_of(u64::from(sector)) {
        return Err(ReencryptError::IllegalDeviceSize);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn asking(name: Option<&str>) -> ReencryptRequest {
        ReencryptRequest {
            resilience: name.map(ResilienceName::parse),
            ..ReencryptRequest::default()
        }
    }

    #[test]
    fn a_new_reencryption_takes_checksum_journal_or_none() {
        assert_eq!(
            resilience(&asking(None)).unwrap(),
            ResilienceChoice::Checksum("sha256".into())
        );
        assert_eq!(
            resilience(&asking(Some("journal"))).unwrap(),
            ResilienceChoice::Journal
        );
        assert!(matches!(
            resilience(&asking(Some("datashift"))),
            Err(ReencryptError::InitFailed)
        ));
        assert!(matches!(
            resilience(&asking(Some("datashift-journal"))),
            Err(ReencryptError::UnsupportedResilience(n)) if n == "datashift-journal"
        ));
    }

    #[test]
    fn an_encryption_with_a_shift_refuses_the_datashift_variants() {
        assert!(check_shift_resilience(&asking(Some("none"))).is_ok());
        assert!(matches!(
            check_shift_resilience(&asking(Some("datashift-x"))),
            Err(ReencryptError::InitFailed)
        ));
        assert!(matches!(
            check_shift_resilience(&asking(Some("x"))),
            Err(ReencryptError::UnsupportedResilience(n)) if n == "x"
        ));
    }

    #[test]
    fn a_moved_segment_is_protected_by_checksums_or_the_journal() {
        assert_eq!(
            moved_protection(&asking(None)).unwrap(),
            Some(HashAlg::Sha256)
        );
        assert_eq!(
            moved_protection(&asking(Some("datashift-journal"))).unwrap(),
            None
        );
        assert!(matches!(
            moved_protection(&asking(Some("none"))),
            Err(ReencryptError::ResilienceNotApplicable)
        ));
    }

    #[test]
    fn only_a_reencryption_or_decryption_shifts_by_the_reduction() {
        let mut r = ReencryptRequest {
            reduce_device_size: Some(4096),
            ..ReencryptRequest::default()
        };
        assert_eq!(data_shift(&r), Some(4096));
        r.mode = Some(lukskit_volume::reencrypt::Mode::Encrypt);
        assert_eq!(data_shift(&r), None);
        r.mode = None;
        r.reduce_device_size = Some(0);
        assert_eq!(data_shift(&r), None);
    }
}
