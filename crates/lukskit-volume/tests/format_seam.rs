//! The format seam ([`lukskit_volume::formats`]): every type of the registry is found by its
//! `VolumeType`, probes tell LUKS1 and LUKS2 apart and claim nothing else, and an unlock
//! through the seam gives the same segment table as the LUKS path of `open`.

use lukskit_crypto::SecretBuf;
use lukskit_format::VolumeType;
use lukskit_volume::device::Access;
use lukskit_volume::format::{format, FormatRequest};
use lukskit_volume::formats::{
    self, FormatOptions, OtherFormatError, Probe, UnlockRequest, REGISTRY,
};
use lukskit_volume::pbkdf::{PbkdfKind, PbkdfRequest};
use lukskit_volume::segment::{SegmentKind, SegmentTable};
use lukskit_volume::{Volume, VolumeError};

const PASS: &[u8] = b"seam test";

fn luks(path: &str, kind: VolumeType) {
    std::fs::File::create(path)
        .unwrap()
        .set_len(32 << 20)
        .unwrap();
    let p = FormatRequest {
        key_size_bits: Some(256),
        sector_size: Some(512),
        pbkdf: PbkdfRequest {
            kind: Some(PbkdfKind::Pbkdf2),
            force_iterations: Some(1000),
            ..PbkdfRequest::default()
        },
        ..FormatRequest::new(kind, path)
    };
    format(&p, PASS).unwrap();
}

fn crypt_params(t: &SegmentTable) -> Vec<(u64, u64, String, u64, Vec<u8>)> {
    t.segments()
        .iter()
        .map(|s| match &s.kind {
            SegmentKind::Crypt(c) => (
                s.start,
                s.len,
                c.cipher.to_string(),
                c.device_offset,
                c.key.as_bytes().to_vec(),
            ),
            other => panic!("unexpected segment {other:?}"),
        })
        .collect()
}

#[test]
fn the_registry_names_each_type_once() {
    for f in REGISTRY {
        let t = f.volume_type();
        assert_eq!(formats::format_of(t).unwrap().volume_type(), t);
        assert_eq!(
            REGISTRY.iter().filter(|g| g.volume_type() == t).count(),
            1,
            "{t} registered twice"
        );
    }
    assert!(formats::format_of(VolumeType::Luks1).is_some());
    assert!(formats::format_of(VolumeType::Luks2).is_some());
    assert!(formats::format_of(VolumeType::Plain).is_some());
}

#[test]
fn luks_through_the_seam_probes_and_unlocks_as_the_luks_path() {
    let dir = tempfile::tempdir().unwrap();
    for t in [VolumeType::Luks1, VolumeType::Luks2] {
        let img = dir.path().join(format!("{t}.img"));
        let img = img.to_str().unwrap();
        luks(img, t);
        assert_eq!(formats::probe_device(img).unwrap(), Some(t));
        // Only its own format claims it; plain mode, loop-AES and TCRYPT (whose header is
        // encrypted) cannot tell.
        let head = std::fs::read(img).unwrap()[..formats::PROBE_BYTES].to_vec();
        for f in REGISTRY {
            let expected = match f.volume_type() {
                x if x == t => Probe::Mine,
                VolumeType::Plain | VolumeType::Loopaes | VolumeType::Tcrypt => Probe::CannotTell,
                _ => Probe::NotMine,
            };
            assert_eq!(f.probe(&head), expected, "{} on {t}", f.volume_type());
        }

        let options = FormatOptions::default();
        let pass = SecretBuf::from_slice(PASS);
        let request = UnlockRequest {
            device: img,
            header: None,
            passphrase: Some(&pass),
            key_files: &[],
            options: &options,
        };
        let f = formats::format_of(t).unwrap();
        let u = f.unlock(&request).unwrap();
        assert_eq!(u.volume_type, t);
        let vol = Volume::load(img, None, Access::Read).unwrap();
        let (_, vk) = vol.unlock(PASS, None, false).unwrap();
        assert_eq!(u.volume_key.as_bytes(), vk.as_bytes());
        assert_eq!(u.uuid.as_deref(), Some(vol.uuid()));
        let direct = SegmentTable::from_volume(&vol, vk.as_bytes(), 32 << 20).unwrap();
        assert_eq!(u.layers.len(), 1);
        assert_eq!(crypt_params(&u.layers[0]), crypt_params(&direct));
        let summary = f.dump(&request).unwrap().to_string();
        assert!(summary.contains(vol.uuid()), "{summary}");

        // A wrong passphrase is LUKS's own error; the other version is "not LUKS".
        let wrong = SecretBuf::from_slice(b"wrong");
        let bad = UnlockRequest {
            passphrase: Some(&wrong),
            ..request
        };
        assert!(matches!(f.unlock(&bad), Err(VolumeError::WrongPassphrase)));
        let other = if t == VolumeType::Luks1 {
            VolumeType::Luks2
        } else {
            VolumeType::Luks1
        };
        assert!(formats::format_of(other).unwrap().unlock(&request).is_err());
        // No secret at all.
        let none = UnlockRequest {
            passphrase: None,
            ..request
        };
        assert!(matches!(
            f.unlock(&none),
            Err(VolumeError::OtherFormat(
                OtherFormatError::SecretMissing { .. }
            ))
        ));
    }
}
