//! TrueCrypt and VeraCrypt volumes (cryptsetup's TCRYPT type, lib/tcrypt/tcrypt.c).
//!
//! The header has no signature in clear: a 512-byte sector of salt and encrypted fields, at
//! the device's start (a hidden volume's at 64 KiB, backups near the end, system encryption
//! at sector 62). It is found by trial: every PBKDF2 variant ([`kdf`]) of the passphrase
//! and key-file pool, with every cipher and cascade ([`ciphers`]), until the decrypted bytes
//! carry `TRUE` or `VERA` and their CRCs hold ([`header`]). The variants run in parallel
//! ([`search`]). The data layout follows cryptsetup's `TCRYPT_get_data_offset`,
//! `TCRYPT_get_iv_offset` and `TCRYPT_activate`: a cascade is one stacked dm-crypt table per
//! cipher, the chain's last cipher on the device ([`layout`]).

pub mod ciphers;
use super::crc;
pub mod dump;
pub mod header;
pub mod kdf;
pub mod layout;
pub mod search;

use super::{
    Description, OnDiskFormat, OtherFormatError, Probe, TcryptOptions, UnlockRequest, Unlocked,
};
use crate::device::{Access, Device};
use crate::error::{IoOp, Result, VolumeError};
use ciphers::Cascade;
use header::{Header, HeaderError, RawHeader};
use kdf::KdfVariant;
use lukskit_crypto::SecretBuf;
use lukskit_format::io::Storage;
use lukskit_format::VolumeType;

/// Salt bytes at the start of the header.
pub const SALT_LEN: usize = 64;
/// Encrypted bytes after the salt.
pub const ENC_LEN: usize = 448;
/// Bytes of the derived header key.
pub const HDR_KEY_LEN: usize = 192;
/// Header of a hidden volume (TrueCrypt ≥ 6, VeraCrypt).
pub const HIDDEN_OFFSET: u64 = 65536;
/// Older TrueCrypt's hidden header, this far before the end.
pub const HIDDEN_OFFSET_OLD_FROM_END: u64 = 1536;
/// Backup header of a hidden volume, this far before the end.
pub const HIDDEN_BACKUP_FROM_END: u64 = 65536;
/// Backup header, this far before the end.
pub const BACKUP_FROM_END: u64 = 131072;
/// System encryption's header (sector 62).
pub const SYSTEM_OFFSET: u64 = 31744;

/// TrueCrypt / VeraCrypt.
pub struct Tcrypt;

/// A decrypted header and what decrypted it.
#[derive(Debug)]
pub struct Loaded {
    /// The header.
    pub header: Header,
    /// The PBKDF2 variant.
    pub kdf: KdfVariant,
    /// The cipher chain and mode.
    pub cascade: &'static Cascade,
    /// The options it was read with (hidden, system, backup).
    pub options: TcryptOptions,
    /// The metadata device's size in bytes.
    pub metadata_size: u64,
    /// System encryption given a partition: its start on the whole disk in 512-byte
    /// sectors (the data starts at the partition's first sector; IVs count from the disk's).
    pub system_partition_start: Option<u64>,
}

/// Where the header is looked for, in order (`TCRYPT_read_phdr`): `None` for an offset that
/// does not exist on a device of `size` bytes.
pub fn header_offsets(o: &TcryptOptions, size: u64) -> Vec<Option<u64>> {
    if o.system {
        vec![Some(SYSTEM_OFFSET)]
    } else if o.hidden && o.backup {
        vec![size.checked_sub(HIDDEN_BACKUP_FROM_END)]
    } else if o.hidden {
        vec![
            Some(HIDDEN_OFFSET),
            size.checked_sub(HIDDEN_OFFSET_OLD_FROM_END),
        ]
    } else if o.backup {
        vec![size.checked_sub(BACKUP_FROM_END)]
    } else {
        vec![Some(0)]
    }
}

/// Decrypt the header of the request's metadata device (`--header`, else the device).
pub fn load(request: &UnlockRequest<'_>) -> Result<Loaded> {
    let o = &request.options.tcrypt;
    let given = request.header.unwrap_or(request.device);
    // System encryption of a partition: the header is on the whole disk (TCRYPT_read_phdr).
    let disk = match o.system {
        true => crate::partition::partition_of(given).map(|p| p.disk.display().to_string()),
        false => None,
    };
    let path = disk.as_deref().unwrap_or(given);
    let system_partition_start = match o.system {
        true => crate::partition::partition_of(request.device).map(|p| p.start),
        false => None,
    };
    let dev = Device::open(path, Access::Read)?;
    let size = dev
        .size()
        .map_err(|e| VolumeError::io(IoOp::ReadSize, path, e))?;
    let veracrypt = !o.no_veracrypt;
    let passphrase = request.passphrase.map(|p| p.as_bytes()).unwrap_or(&[]);
    let input = kdf::pbkdf_input(passphrase, request.key_files, veracrypt)?;
    let pim = if veracrypt { o.pim } else { None };
    let variants = kdf::variants(o.hash.as_deref(), veracrypt, pim);
    let limits = search::Limits {
        cipher: o.cipher.as_deref(),
        veracrypt,
        pim,
    };
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut last_err: Option<VolumeError> = None;
    for offset in header_offsets(o, size) {
        let mut sector = [0u8; 512];
        let read = offset
            .filter(|off| off.checked_add(512).is_some_and(|end| end <= size))
            .map(|off| dev.read_exact_at(&mut sector, off));
        match read {
            Some(Ok(())) => {}
            // A header that cannot be read leaves an earlier try's answer as it was.
            Some(Err(e)) => {
                last_err.get_or_insert(VolumeError::io(IoOp::Read, path, e));
                continue;
            }
            None => {
                last_err.get_or_insert(
                    OtherFormatError::NotThisFormat {
                        volume_type: VolumeType::Tcrypt,
                        path: path.to_owned(),
                    }
                    .into(),
                );
                continue;
            }
        }
        let raw = RawHeader::from_sector(&sector);
        let Some(found) = search::find(&raw, &input, &variants, &limits, threads) else {
            last_err = Some(OtherFormatError::NoKey.into());
            continue;
        };
        let mut d = [0u8; ENC_LEN];
        d.copy_from_slice(found.decrypted.as_bytes());
        let parsed = Header::parse(&d, veracrypt);
        zeroize::Zeroize::zeroize(&mut d);
        return match parsed {
            Ok(header) => Ok(Loaded {
                header,
                kdf: found.kdf.1,
                cascade: found.cascade,
                options: o.clone(),
                metadata_size: size,
                system_partition_start,
            }),
            Err(e) => Err(OtherFormatError::Invalid {
                volume_type: VolumeType::Tcrypt,
                why: match e {
                    HeaderError::Magic => "no magic".into(),
                    HeaderError::HeaderCrc => "header CRC32 mismatch".into(),
                    HeaderError::KeysCrc => "keys CRC32 mismatch".into(),
                },
            }
            .into()),
        };
    }
    Err(last_err.unwrap_or_else(|| OtherFormatError::NoKey.into()))
}

impl Loaded {
    /// The volume key as cryptsetup's `TCRYPT_get_volume_key` gives it: every layer's key in
    /// chain order.
    pub fn volume_key(&self) -> SecretBuf {
        let mut vk = SecretBuf::zeroed(self.cascade.chain_key_size);
        let mut at = 0usize;
        for alg in self.cascade.algs {
            let k = ciphers::layer_key(alg, self.cascade.mode, self.header.keys.as_bytes());
            let end = (at + k.len()).min(vk.len());
            vk.as_mut_bytes()[at..end].copy_from_slice(&k.as_bytes()[..end - at]);
            at += alg.key_size;
        }
        vk
    }
}

impl OnDiskFormat for Tcrypt {
    fn volume_type(&self) -> VolumeType {
        VolumeType::Tcrypt
    }

    fn probe(&self, _head: &[u8]) -> Probe {
        Probe::CannotTell
    }

    fn dump(&self, request: &UnlockRequest<'_>) -> Result<Box<dyn Description>> {
        let loaded = load(request)?;
        Ok(Box::new(dump::TcryptDump::new(
            &loaded,
            request.header.unwrap_or(request.device),
        )))
    }

    fn unlock(&self, request: &UnlockRequest<'_>) -> Result<Unlocked> {
        let loaded = load(request)?;
        // The data device's own size where the header came from elsewhere (--header, or the
        // whole disk of a system-encrypted partition).
        let data_size = if request.header.is_some() || loaded.system_partition_start.is_some() {
            super::device_size(request.device)?
        } else {
            loaded.metadata_size
        };
        let layers = layout::layers(&loaded, request.device, data_size)?;
        Ok(Unlocked {
            volume_type: VolumeType::Tcrypt,
            uuid: None,
            layers,
            read_only: false,
            volume_key: loaded.volume_key(),
        })
    }

    fn test_secret(&self, request: &UnlockRequest<'_>) -> Result<()> {
        load(request).map(drop)
    }
}

#[cfg(test)]
mod tests {
    use super::ciphers::{find, layer_key, Mode};
    use super::header::Magic;
    use super::*;
    use lukskit_crypto::engine::SectorCipher;
    use lukskit_crypto::spec::CipherSpec;

    /// A header sector as VeraCrypt would write it: `fields` (decrypted) encrypted with the
    /// chain under PBKDF2 of `pass` with the variant `kdf`.
    fn sector(pass: &[u8], kdf: &KdfVariant, chain: &Cascade, fields: &[u8; ENC_LEN]) -> [u8; 512] {
        let salt = [7u8; SALT_LEN];
        let key = kdf::derive(kdf, pass, &salt, None).unwrap();
        let mut unit = [0u8; 512];
        unit[..ENC_LEN].copy_from_slice(fields);
        // Encrypt with the first cipher of the chain first (decryption starts with the last).
        for alg in chain.algs {
            let k = layer_key(alg, chain.mode, key.as_bytes());
            let spec = CipherSpec::parse(&format!("{}-{}", alg.name, chain.mode.name())).unwrap();
            SectorCipher::new(&spec, &k.as_bytes()[..alg.key_size], 512, false)
                .unwrap()
                .encrypt(&mut unit, 0)
                .unwrap();
        }
        let mut s = [0u8; 512];
        s[..SALT_LEN].copy_from_slice(&salt);
        s[SALT_LEN..].copy_from_slice(&unit[..ENC_LEN]);
        s
    }

    fn fields(volume_size: u64, hidden: u64, mk_offset: u64, sector_size: u32) -> [u8; ENC_LEN] {
        let mut d = [0u8; ENC_LEN];
        d[..4].copy_from_slice(b"VERA");
        d[4..6].copy_from_slice(&5u16.to_be_bytes());
        d[6..8].copy_from_slice(&0x010bu16.to_be_bytes());
        d[28..36].copy_from_slice(&hidden.to_be_bytes());
        d[36..44].copy_from_slice(&volume_size.to_be_bytes());
        d[44..52].copy_from_slice(&mk_offset.to_be_bytes());
        d[64..68].copy_from_slice(&sector_size.to_be_bytes());
        for (i, b) in d[192..].iter_mut().enumerate() {
            *b = (i * 7) as u8;
        }
        let k = crc::crc32(&d[192..]);
        d[8..12].copy_from_slice(&k.to_be_bytes());
        let h = crc::crc32(&d[..188]);
        d[188..192].copy_from_slice(&h.to_be_bytes());
        d
    }

    fn loaded(f: &[u8; ENC_LEN], options: TcryptOptions, size: u64) -> Loaded {
        Loaded {
            header: Header::parse(f, true).unwrap(),
            kdf: kdf::KDFS[2],
            cascade: find("serpent-twofish-aes", Mode::Xts).unwrap(),
            options,
            metadata_size: size,
            system_partition_start: None,
        }
    }

    #[test]
    fn trial_finds_the_cascade_and_the_first_variant() {
        // TrueCrypt's sha512 (1000 iterations) encrypts; the trial over all variants finds it
        // (and its cascade, not the one with the same ciphers in another order).
        let chain = find("serpent-twofish-aes", Mode::Xts).unwrap();
        let f = fields(1 << 20, 0, 131072, 512);
        let s = sector(b"pass", &kdf::KDFS[2], chain, &f);
        let raw = RawHeader::from_sector(&s);
        let input = kdf::pbkdf_input(b"pass", &[], true).unwrap();
        // Only the cheap variants (VeraCrypt's take seconds unoptimised).
        let variants: Vec<_> = kdf::variants(None, false, None);
        let limits = search::Limits {
            cipher: None,
            veracrypt: true,
            pim: None,
        };
        for threads in [1, 4] {
            let found = search::find(&raw, &input, &variants, &limits, threads).unwrap();
            assert_eq!(found.kdf.0, 2);
            assert_eq!(found.cascade.long_name, "serpent-twofish-aes");
            assert_eq!(found.decrypted.as_bytes(), &f[..]);
        }
        let wrong = kdf::pbkdf_input(b"Pass", &[], true).unwrap();
        assert!(search::find(&raw, &wrong, &variants, &limits, 2).is_none());
        // -c matches anywhere in the chain's name (cryptsetup's strstr).
        let limited = search::Limits {
            cipher: Some("twofish-aes"),
            ..limits
        };
        assert!(search::find(&raw, &input, &variants, &limited, 2).is_some());
        let limited = search::Limits {
            cipher: Some("aes-serpent"),
            ..limits
        };
        assert!(search::find(&raw, &input, &variants, &limited, 2).is_none());
        assert_eq!(Magic::of(&f, false), None);
    }

    #[test]
    fn kuznyechik_chains_are_found() {
        let f = fields(1 << 20, 0, 131072, 512);
        let input = kdf::pbkdf_input(b"pass", &[], true).unwrap();
        let variants = kdf::variants(Some("sha512"), false, None);
        let limits = search::Limits {
            cipher: Some("kuznyechik"),
            veracrypt: true,
            pim: None,
        };
        for name in [
            "kuznyechik",
            "camellia-serpent-kuznyechik",
            "aes-kuznyechik",
        ] {
            let chain = find(name, Mode::Xts).unwrap();
            let raw = RawHeader::from_sector(&sector(b"pass", &kdf::KDFS[2], chain, &f));
            let found = search::find(&raw, &input, &variants, &limits, 2).unwrap();
            assert_eq!(found.cascade.long_name, name);
        }
    }

    #[test]
    fn layout_of_normal_hidden_and_system_headers() {
        let size = 4 << 20;
        let l = loaded(
            &fields(1 << 20, 0, 131072, 512),
            TcryptOptions::default(),
            size,
        );
        let layers = layout::layers(&l, "img", size).unwrap();
        assert_eq!(layers.len(), 3);
        assert_eq!(layers[0].size(), 1 << 20);
        assert_eq!(layout::iv_offset(&l).unwrap(), 256);
        // The volume key is every layer's key in chain order.
        let vk = l.volume_key();
        assert_eq!(vk.len(), 192);
        let hidden = TcryptOptions {
            hidden: true,
            ..TcryptOptions::default()
        };
        let l = loaded(&fields(1 << 20, 65536, 2 << 20, 512), hidden, size);
        assert_eq!(layout::data_offset(&l).unwrap(), 4096);
        assert_eq!(layout::layers(&l, "img", size).unwrap()[0].size(), 65536);
        let system = TcryptOptions {
            system: true,
            ..TcryptOptions::default()
        };
        let l = loaded(&fields(0, 0, 131072, 512), system, size);
        assert_eq!(
            layout::layers(&l, "img", size).unwrap()[0].size(),
            size - 131072
        );
    }

    #[test]
    fn hostile_header_values_are_refused_without_panic() {
        let size = 1 << 20;
        let hostile = [
            (u64::MAX, 0, 512, 512),
            (1 << 20, 0, u64::MAX, 512),
            (512, 0, u64::MAX - 511, 512),
            (4096, 0, 512, 4095),
            (4096, 0, 512, u32::MAX),
            (0, 0, size, 512),
        ];
        for (vol, hid, mk, ss) in hostile {
            let l = loaded(&fields(vol, hid, mk, ss), TcryptOptions::default(), size);
            assert!(layout::layers(&l, "img", size).is_err(), "{vol} {mk} {ss}");
        }
        let hidden = TcryptOptions {
            hidden: true,
            ..TcryptOptions::default()
        };
        for (hid, mk) in [(u64::MAX, 512), (1 << 20, u64::MAX), (size + 1, 512)] {
            let l = loaded(&fields(4096, hid, mk, 512), hidden.clone(), size);
            assert!(
                layout::layers(&l, "img", size).is_err(),
                "hidden {hid} {mk}"
            );
            // TrueCrypt 3's rule (end of device less the hidden volume) with the same values.
            let mut old = loaded(&fields(4096, hid, mk, 512), hidden.clone(), size);
            old.header.version = 3;
            let _ = layout::layers(&old, "img", size);
        }
    }

    #[test]
    fn system_encryption_of_a_partition_maps_the_partition() {
        let mut f = [0u8; ENC_LEN];
        f[..4].copy_from_slice(b"VERA");
        f[4..6].copy_from_slice(&5u16.to_be_bytes());
        f[44..52].copy_from_slice(&(2048u64 * 512).to_be_bytes());
        header::seal(&mut f);
        let system = TcryptOptions {
            system: true,
            ..TcryptOptions::default()
        };
        // The whole disk: data from the key-area offset, IVs from it too.
        let disk = loaded(&f, system.clone(), 1 << 30);
        assert_eq!(
            (
                layout::data_offset(&disk).unwrap(),
                layout::iv_offset(&disk).unwrap()
            ),
            (2048, 2048)
        );
        // Its partition at sector 2048: the partition is the data, IVs count from the disk.
        let mut part = loaded(&f, system, 1 << 29);
        part.system_partition_start = Some(2048);
        assert_eq!(
            (
                layout::data_offset(&part).unwrap(),
                layout::iv_offset(&part).unwrap()
            ),
            (0, 2048)
        );
        let t = layout::layers(&part, "p1", 1 << 29).unwrap();
        assert_eq!(t[0].size(), 1 << 29);
    }
}
