//! LUKS1 keyslots: unlocking, storing and wiping key material, the volume-key digest.

use crate::error::{DeviceOp, KeyslotError, Result, VolumeError};
use crate::wipe;
use lukskit_crypto::engine::SectorCipher;
use lukskit_crypto::hash::HashAlg;
use lukskit_crypto::kdf;
use lukskit_crypto::spec::CipherSpec;
use lukskit_crypto::{af, SecretBuf};
use lukskit_format::io::Storage;
use lukskit_format::luks1::{Luks1Header, DIGEST_SIZE, NUM_KEYSLOTS, SALT_SIZE, STRIPES};

fn hash_of(hdr: &Luks1Header) -> Result<HashAlg> {
    HashAlg::from_name(&hdr.hash_spec).map_err(|_| VolumeError::HashUnsupported {
        hash: hdr.hash_spec.clone(),
    })
}

/// The keyslot cipher. cryptsetup decrypts keyslot material through its crypto backend,
/// which falls back to libgcrypt when the kernel does not know the name; libgcrypt maps
/// cipher names case-insensitively, so a header saying `AES` unlocks like `aes` (the mode
/// is matched exactly). The stored name is kept as it is everywhere else.
fn spec_of(hdr: &Luks1Header) -> Result<CipherSpec> {
    let name = hdr.cipher_name.to_ascii_lowercase();
    let spec = CipherSpec::from_luks1(&name, &hdr.cipher_mode)?;
    crate::keyslot_cipher::check(&spec, None)?;
    Ok(spec)
}

/// cryptsetup refuses to fill or kill a keyslot whose state word is unknown.
fn refuse_invalid_slot(hdr: &Luks1Header, i: usize) -> Result<()> {
    if hdr.keyslots[i].invalid_state.is_some() {
        return Err(KeyslotError::Invalid { slot: i as u32 }.into());
    }
    Ok(())
}

/// Check `vk` against the header's master-key digest (constant-time comparison).
pub fn verify_volume_key(hdr: &Luks1Header, vk: &[u8]) -> Result<bool> {
    if vk.len() != hdr.key_bytes as usize {
        return Ok(false);
    }
    let mut d = SecretBuf::zeroed(DIGEST_SIZE);
    kdf::pbkdf2(
        hash_of(hdr)?,
        vk,
        &hdr.mk_digest_salt,
        hdr.mk_digest_iterations,
        d.as_mut_bytes(),
    )?;
    Ok(d.ct_eq(&hdr.mk_digest))
}

/// Compute a fresh master-key digest for `vk`: (digest, salt).
pub fn make_digest(hash: HashAlg, vk: &[u8], iterations: u32) -> Result<([u8; 20], [u8; 32])> {
    let mut salt = [0u8; SALT_SIZE];
    lukskit_crypto::random::fill(&mut salt)?;
    let mut d = [0u8; DIGEST_SIZE];
    kdf::pbkdf2(hash, vk, &salt, iterations, &mut d)?;
    Ok((d, salt))
}

/// Try to open keyslot `slot` with `passphrase`; Ok(None) on a wrong passphrase.
pub fn open_slot(
    dev: &dyn Storage,
    hdr: &Luks1Header,
    slot: usize,
    passphrase: &[u8],
) -> Result<Option<SecretBuf>> {
    let ks = &hdr.keyslots[slot];
    if !ks.active {
        return Ok(None);
    }
    let key_len = hdr.key_bytes as usize;
    let hash = hash_of(hdr)?;
    let dk = kdf::derive(
        &kdf::Pbkdf::Pbkdf2 {
            hash,
            iterations: ks.iterations,
        },
        passphrase,
        &ks.salt,
        key_len,
    )?;
    let size = af::split_size_bytes(key_len, ks.stripes);
    let mut material = SecretBuf::zeroed(size);
    dev.read_exact_at(
        material.as_mut_bytes(),
        u64::from(ks.key_material_offset) * 512,
    )
    .map_err(|e| VolumeError::device_io(DeviceOp::ReadKeyMaterial { slot: slot as u32 }, e))?;
    let cipher = SectorCipher::new(&spec_of(hdr)?, dk.as_bytes(), 512, false)?;
    cipher.decrypt(material.as_mut_bytes(), 0)?;
    let vk = af::merge(material.as_bytes(), key_len, ks.stripes, hash)?;
    if verify_volume_key(hdr, vk.as_bytes())? {
        Ok(Some(vk))
    } else {
        Ok(None)
    }
}

/// Unlock with a passphrase: try `slot` or every active slot in order. Returns the slot and
/// the volume key, or [`VolumeError::WrongPassphrase`].
pub fn unlock(
    dev: &dyn Storage,
    hdr: &Luks1Header,
    passphrase: &[u8],
    slot: Option<u32>,
) -> Result<(u32, SecretBuf)> {
    match slot {
        Some(s) => {
            let i = s as usize;
            if i >= NUM_KEYSLOTS {
                return Err(VolumeError::NoUsableKeyslot);
            }
            if !hdr.keyslots[i].active {
                return Err(VolumeError::NoUsableKeyslot);
            }
            open_slot(dev, hdr, i, passphrase)?
                .map(|vk| (s, vk))
                .ok_or(VolumeError::WrongPassphrase)
        }
        None => {
            if !hdr.keyslots.iter().any(|k| k.active) {
                return Err(VolumeError::NoUsableKeyslot);
            }
            for i in 0..NUM_KEYSLOTS {
                if let Some(vk) = open_slot(dev, hdr, i, passphrase)? {
                    return Ok((i as u32, vk));
                }
            }
            Err(VolumeError::WrongPassphrase)
        }
    }
}

/// Store `vk` protected by `passphrase` in `slot` (PBKDF2 `iterations`): key material first,
/// then the phdr, each synced — a crash leaves the old header valid.
pub fn store(
    dev: &dyn Storage,
    hdr: &mut Luks1Header,
    slot: u32,
    vk: &SecretBuf,
    passphrase: &[u8],
    iterations: u32,
) -> Result<()> {
    let i = slot as usize;
    refuse_invalid_slot(hdr, i)?;
    let hash = hash_of(hdr)?;
    let mut salt = [0u8; SALT_SIZE];
    lukskit_crypto::random::fill(&mut salt)?;
    let key_len = hdr.key_bytes as usize;
    let dk = kdf::derive(
        &kdf::Pbkdf::Pbkdf2 { hash, iterations },
        passphrase,
        &salt,
        key_len,
    )?;
    let split = af::split(vk.as_bytes(), STRIPES, hash)?;
    let mut material = SecretBuf::zeroed(af::split_size_bytes(key_len, STRIPES));
    material.as_mut_bytes()[..split.len()].copy_from_slice(split.as_bytes());
    let cipher = SectorCipher::new(&spec_of(hdr)?, dk.as_bytes(), 512, false)?;
    cipher.encrypt(material.as_mut_bytes(), 0)?;
    let off = u64::from(hdr.keyslots[i].key_material_offset) * 512;
    dev.write_all_at(material.as_bytes(), off)
        .and_then(|_| dev.sync())
        .map_err(|e| VolumeError::device_io(DeviceOp::WriteKeyMaterial, e))?;
    let ks = &mut hdr.keyslots[i];
    ks.active = true;
    ks.iterations = iterations;
    ks.salt = salt;
    ks.stripes = STRIPES;
    write_header(dev, hdr)
}

/// Disable `slot`: wipe its key material, then clear it in the phdr (cryptsetup's order).
pub fn kill(dev: &dyn Storage, hdr: &mut Luks1Header, slot: u32) -> Result<()> {
    let i = slot as usize;
    refuse_invalid_slot(hdr, i)?;
    let off = u64::from(hdr.keyslots[i].key_material_offset) * 512;
    let len = u64::from(Luks1Header::keyslot_material_sectors(hdr.key_bytes)) * 512;
    wipe::random(dev, off, len)?;
    let ks = &mut hdr.keyslots[i];
    ks.active = false;
    ks.iterations = 0;
    ks.salt = [0; SALT_SIZE];
    write_header(dev, hdr)
}

/// Write the phdr at offset 0 and sync.
pub fn write_header(dev: &dyn Storage, hdr: &Luks1Header) -> Result<()> {
    dev.write_all_at(&hdr.to_bytes(), 0)
        .and_then(|_| dev.sync())
        .map_err(|e| VolumeError::device_io(DeviceOp::WriteHeader, e))
}
