//! Images for the unit tests: a fresh LUKS2 one, one initialized for re-encryption, a LUKS1
//! one.

use lukskit_crypto::SecretBuf;
use lukskit_format::VolumeType;
use lukskit_volume::device::Access;
use lukskit_volume::format::{format, FormatRequest};
use lukskit_volume::pbkdf::{PbkdfKind, PbkdfRequest};
use lukskit_volume::reencrypt::{self, InitParams, Keys, Mode, ResilienceChoice};
use lukskit_volume::Volume;

/// The passphrase of keyslot 0 (and of the new key's keyslot of [`prepared`]).
pub const PASS: &[u8] = b"activation test";
pub const MIB: u64 = 1 << 20;

/// A fast PBKDF for test keyslots.
pub fn pbkdf() -> PbkdfRequest {
    PbkdfRequest {
        kind: Some(PbkdfKind::Pbkdf2),
        force_iterations: Some(1000),
        ..PbkdfRequest::default()
    }
}

/// A LUKS2 image (16 MiB header area, 4 MiB of data, aes-xts-plain64 with a 512-bit key),
/// not in re-encryption.
pub fn fresh(path: &str) {
    std::fs::File::create(path)
        .unwrap()
        .set_len(20 * MIB)
        .unwrap();
    let p = FormatRequest {
        key_size_bits: Some(512),
        sector_size: Some(512),
        pbkdf: pbkdf(),
        ..FormatRequest::new(VolumeType::Luks2, path)
    };
    format(&p, PASS).unwrap();
}

/// A LUKS1 image (aes-xts-plain64, 256-bit key, 4 MiB of data after its 2 MiB header area).
pub fn luks1(path: &str) {
    std::fs::File::create(path)
        .unwrap()
        .set_len(6 * MIB)
        .unwrap();
    let p = FormatRequest {
        key_size_bits: Some(256),
        pbkdf: pbkdf(),
        ..FormatRequest::new(VolumeType::Luks1, path)
    };
    format(&p, PASS).unwrap();
}

/// [`fresh`], initialized for re-encryption to aes-cbc-essiv:sha256 with a new 256-bit key.
pub fn prepared(path: &str) {
    fresh(path);
    let mut vol = Volume::load(path, None, Access::Write).unwrap();
    let (_, old) = vol.unlock(PASS, None, false).unwrap();
    let new = SecretBuf::random(32).unwrap();
    let slot = vol.add_keyslot(&new, PASS, None, &pbkdf(), true).unwrap();
    let Some((vol_dev, h)) = vol.luks2_edit() else {
        panic!("LUKS2")
    };
    let digest = lukskit_format::luks2::edit::digest_of_keyslot(h, slot).unwrap();
    let keys = Keys {
        old: Some(old),
        new: Some(new),
    };
    let params = InitParams {
        mode: Mode::Reencrypt,
        resilience: ResilienceChoice::Checksum("sha256".into()),
        cipher: "aes-cbc-essiv:sha256".into(),
        sector_size: 512,
        new_digest: digest,
        digest_iterations: 1000,
        digest_hash: lukskit_crypto::hash::HashAlg::Sha256,
    };
    reencrypt::init(vol_dev, 20 * MIB, 4096, h, &params, &keys).unwrap();
}
