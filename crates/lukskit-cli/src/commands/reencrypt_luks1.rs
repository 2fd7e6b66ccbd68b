//! `reencrypt` of LUKS1 devices, offline, as cryptsetup 2.6.1's legacy LUKS1 code does it
//! (its `utils_reencrypt_luks1.c`): new volume key, cipher, key size or hash (`--keep-key`:
//! only the keyslots), `--reduce-device-size` (the data moves towards the end; backward),
//! `--encrypt --type luks1` of a plaintext device and `--decrypt`, with the same
//! `LUKS-<uuid>.log` / `.org` / `.new` files in the current directory, so that an interrupted
//! run is resumed by either tool (see [`lukskit_volume::reencrypt::luks1`]).

use super::{existing_key_source, tries};
use crate::args::Opts;
use crate::errors::{self, CliError, Result};
use crate::input::{self, KeySource};
use lukskit_crypto::spec::CipherSpec;
use lukskit_crypto::SecretBuf;
use lukskit_format::io::Storage;
use lukskit_format::VolumeType;
use lukskit_volume::data::{DataLayout, DataVolume};
use lukskit_volume::device::{Access, Device};
use lukskit_volume::format::{DataCipher, FormatRequest};
use lukskit_volume::reencrypt::luks1::{
    self as legacy, CopyOutcome, CopyParams, LegacyDirection, LegacyLog, LegacyMode, LogFile, Side,
    NO_UUID,
};
use lukskit_volume::{Header, Volume};
use std::os::unix::fs::FileTypeExt;

/// cryptsetup's default LUKS1 key size for the headers of this code (bits).
const DEFAULT_KEY_BITS: u32 = 256;
use super::format::DEFAULT_CIPHER;

/// What the header device holds, as cryptsetup's `reencrypt` tells them apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum DevState {
    Luks1,
    /// LUKS1 with the magic of a legacy re-encryption in progress.
    Luks1Unusable,
    Luks2,
    /// LUKS2 with an `online-reencrypt` requirement (re-encryption initialised).
    Luks2Reencrypt,
    NotLuks,
}

fn first_bytes(path: &str) -> Option<Vec<u8>> {
    let dev = Device::open(path, Access::Read).ok()?;
    let mut b = vec![0u8; 4096];
    let n = dev.size().ok()?.min(4096) as usize;
    dev.read_exact_at(&mut b[..n], 0).ok()?;
    b.truncate(n);
    Some(b)
}

fn state_of(path: &str) -> DevState {
    let Some(b) = first_bytes(path) else {
        return DevState::NotLuks;
    };
    if legacy::unusable_uuid(&b).is_some() {
        return DevState::Luks1Unusable;
    }
    match lukskit_format::detect::detect(&b) {
        Some(VolumeType::Luks1) => DevState::Luks1,
        Some(VolumeType::Luks2) => {
            let in_reencryption = Volume::load_as_is(path, None, Access::Read).is_ok_and(|v| {
                matches!(v.header(), Header::Luks2(h)
                    if h.requirements().iter().any(|r| r.starts_with("online-reencrypt")))
            });
            if in_reencryption {
                DevState::Luks2Reencrypt
            } else {
                DevState::Luks2
            }
        }
        _ => DevState::NotLuks,
    }
}

/// Why the LUKS header on `path` (found by its primary magic or a LUKS2 secondary copy)
/// does not load, as cryptsetup says it before "contains broken LUKS metadata" (with its
/// line end; empty when it says nothing more); `None` when there is no LUKS header or it
/// loads.
fn broken_luks(path: &str) -> Option<String> {
    match Volume::load(path, None, Access::Read) {
        Err(e @ lukskit_volume::VolumeError::InvalidHeader { .. }) => {
            let m = crate::errors::problem_only(e).message;
            Some(if m.is_empty() { m } else { format!("{m}\n") })
        }
        _ => None,
    }
}

/// Whether `header` and `data` are different devices or files (cryptsetup's
/// `reencrypt_is_header_detached`): a header that does not exist yet is detached.
fn header_detached(header: Option<&str>, data: &str) -> bool {
    use std::os::unix::fs::MetadataExt;
    let Some(h) = header else { return false };
    let (Ok(hm), Ok(dm)) = (std::fs::metadata(h), std::fs::metadata(data)) else {
        return true;
    };
    if hm.file_type().is_block_device() && dm.file_type().is_block_device() {
        return hm.rdev() != dm.rdev();
    }
    !(hm.dev() == dm.dev() && hm.ino() == dm.ino())
}

/// cryptsetup's choice of its legacy LUKS1 code for a `reencrypt` command line: run it and
/// return `Some`, or `None` for the LUKS2 code. Also refuses what cryptsetup refuses before
/// it chooses (conflicting `--type`, encryption of a LUKS device).
pub fn dispatch(o: &Opts, device: &str) -> Result<Option<()>> {
    let st = state_of(o.header.as_deref().unwrap_or(device));
    let typed = o.r#type.as_deref();
    let shown = o.header.as_deref().unwrap_or(device);
    let conflict = |what: &str| {
        Err(CliError::invalid(format!(
            "Conflicting versions. Device {shown} is {what}."
        )))
    };
    match (st, typed) {
        (DevState::Luks1, Some("luks2")) => return conflict("LUKS1"),
        (DevState::Luks1Unusable, Some("luks2")) => return conflict("in LUKS1 reencryption"),
        (DevState::Luks2, Some("luks1")) => return conflict("LUKS2"),
        (DevState::Luks2Reencrypt, Some("luks1")) => return conflict("in LUKS2 reencryption"),
        _ => {}
    }
    let encrypt = o.given.has("encrypt");
    if o.resume_only && matches!(st, DevState::Luks1 | DevState::NotLuks) && encrypt {
        return Err(CliError::invalid("Device reencryption not in progress."));
    }
    if encrypt {
        // A LUKS header that does not load (a damaged one, one beside another signature) is
        // no device to encrypt: cryptsetup refuses it with the reason, the header first
        // (not with --disable-blkid, as cryptsetup 2.7).
        let probed = if o.disable_blkid {
            [None, None]
        } else {
            [o.header.as_deref(), Some(device)]
        };
        for path in probed.into_iter().flatten() {
            if let Some(problem) = broken_luks(path) {
                return Err(CliError::invalid(format!(
                    "{problem}Device {path} contains broken LUKS metadata. Aborting operation."
                )));
            }
        }
        if matches!(st, DevState::Luks1 | DevState::Luks2) {
            return Err(CliError::invalid(format!(
                "Device {shown} is already LUKS device. Aborting operation."
            )));
        }
        if o.header.is_some() {
            let data = state_of(device);
            if matches!(data, DevState::Luks1 | DevState::Luks2) {
                return Err(CliError::invalid(format!(
                    "Device {device} is already LUKS device. Aborting operation."
                )));
            }
            if matches!(data, DevState::Luks1Unusable | DevState::Luks2Reencrypt) {
                return Err(CliError::invalid(format!(
                    "Device {device} is already in LUKS reencryption. Aborting operation."
                )));
            }
        }
        if st == DevState::Luks1Unusable || typed == Some("luks1") {
            if !header_detached(o.header.as_deref(), device) && o.reduce_device_size.is_none() {
                return Err(CliError::new(
                    errors::ExitClass::Invalid,
                    "Encryption without detached header (--header) is not possible without \
                     data device size reduction (--reduce-device-size).",
                ));
            }
            return run(o, device).map(Some);
        }
        return Ok(None);
    }
    let decrypt_by_uuid =
        o.decrypt && st == DevState::NotLuks && o.uuid.is_some() && o.header.is_none();
    if matches!(st, DevState::Luks1 | DevState::Luks1Unusable) || decrypt_by_uuid {
        if o.resume_only && st == DevState::Luks1 {
            return Err(CliError::invalid("Device reencryption not in progress."));
        }
        return run(o, device).map(Some);
    }
    Ok(None)
}

/// The passphrases of the run by keyslot, and the keyslot whose passphrase opens the old
/// and new headers.
struct Passphrases {
    by_slot: Vec<Option<SecretBuf>>,
    main: u32,
}

fn wrong() -> CliError {
    errors::volume(&lukskit_volume::VolumeError::WrongPassphrase)
}

/// One passphrase for `slot` (or any) that opens `vol` (cryptsetup's `init_passphrase1`).
fn ask_checked(
    o: &Opts,
    vol: &Volume,
    prompt: &str,
    slot: Option<u32>,
    p: &mut Passphrases,
) -> Result<()> {
    let src = existing_key_source(o, None);
    let n = tries(o, &src);
    let mut attempt = 0;
    loop {
        attempt += 1;
        let pass = input::get_secret(&src, prompt, false)?;
        match vol.unlock(pass.as_bytes(), slot, false) {
            Ok((s, _)) => {
                if o.verbose {
                    println!("Key slot {s} unlocked.");
                }
                p.by_slot[s as usize] = Some(pass);
                p.main = s;
                return Ok(());
            }
            Err(e) if errors::is_wrong_passphrase(&e) && attempt < n => {
                eprintln!("{}", errors::volume(&e).message);
            }
            Err(e) => return Err(errors::volume(&e)),
        }
    }
}

/// cryptsetup's `initialize_passphrase`: the passphrases of the keyslots to keep.
fn passphrases(o: &Opts, mode: LegacyMode, hdr_vol: Option<&Volume>) -> Result<Passphrases> {
    let mut p = Passphrases {
        by_slot: (0..8).map(|_| None).collect(),
        main: 0,
    };
    let Some(vol) = hdr_vol else {
        // A new encryption: the passphrase of the new header.
        let slot = o.key_slot.unwrap_or(0);
        let pass = match &o.key_file {
            Some(_) => input::get_secret(&existing_key_source(o, None), "", false)?,
            None => input::get_secret(&KeySource::Prompt, "Enter new passphrase: ", true)?,
        };
        p.by_slot[slot as usize] = Some(pass);
        p.main = slot;
        return Ok(p);
    };
    if o.key_file.is_some() {
        let pass = input::get_secret(&existing_key_source(o, None), "", false)?;
        let (s, _) = vol
            .unlock(pass.as_bytes(), o.key_slot, false)
            .map_err(|e| errors::volume(&e))?;
        if o.key_slot.is_none() && vol.active_keyslots()?.len() != 1 {
            return Err(CliError::invalid(
                "Key file can be used only with --key-slot or with exactly one key slot active.",
            ));
        }
        p.by_slot[s as usize] = Some(pass);
        p.main = s;
        return Ok(p);
    }
    if o.key_slot.is_some() || mode == LegacyMode::Decrypt {
        let prompt = match o.key_slot {
            Some(s) => format!("Enter passphrase for key slot {s}: "),
            None => "Enter any existing passphrase: ".to_string(),
        };
        if let Some(s) = o.key_slot {
            if !vol.keyslot_active(s)? {
                return Err(wrong());
            }
        }
        ask_checked(o, vol, &prompt, o.key_slot, &mut p)?;
        return Ok(p);
    }
    let mut first = None;
    for s in 0..8u32 {
        if !vol.keyslot_active(s)? {
            continue;
        }
        ask_checked(
            o,
            vol,
            &format!("Enter passphrase for key slot {s}: "),
            Some(s),
            &mut p,
        )?;
        first.get_or_insert(s);
    }
    p.main = first.ok_or_else(wrong)?;
    Ok(p)
}

/// The passphrase of a run being resumed: one that opens the header the run depends on.
fn resume_passphrase(o: &Opts, vol: &Volume) -> Result<Passphrases> {
    let mut p = Passphrases {
        by_slot: (0..8).map(|_| None).collect(),
        main: 0,
    };
    if o.key_file.is_some() {
        let pass = input::get_secret(&existing_key_source(o, None), "", false)?;
        let (s, _) = vol
            .unlock(pass.as_bytes(), o.key_slot, false)
            .map_err(|e| errors::volume(&e))?;
        p.by_slot[s as usize] = Some(pass);
        p.main = s;
        return Ok(p);
    }
    let prompt = match o.key_slot {
        Some(s) => format!("Enter passphrase for key slot {s}: "),
        None => "Enter any existing passphrase: ".to_string(),
    };
    ask_checked(o, vol, &prompt, o.key_slot, &mut p)?;
    Ok(p)
}

fn round_sector(bytes: u64) -> u64 {
    bytes.div_ceil(512) * 512
}

fn reduce_bytes(o: &Opts) -> Result<u64> {
    match &o.reduce_device_size {
        None => Ok(0),
        Some(v) => crate::args::parse_device_size(v)
            .map(round_sector)
            .ok_or_else(|| {
                CliError::invalid("Invalid size specification in parameter --reduce-device-size.")
            }),
    }
}

struct NewHeader<'a> {
    path: &'a str,
    cipher: String,
    key_bits: u32,
    offset_sectors: u64,
    uuid: Option<String>,
    volume_key: Option<SecretBuf>,
    data: &'a str,
}

/// Format a detached LUKS1 header at `h.path` with a keyslot per passphrase. The file is
/// made new (cryptsetup's `create_empty_header`: `O_EXCL`, and lukskit adds `O_NOFOLLOW`):
/// the name is predictable and the directory may be anyone's.
fn make_header(o: &Opts, h: NewHeader<'_>, p: &Passphrases) -> Result<()> {
    lukskit_volume::private_file::create_new(h.path, 0o600)
        .map_err(|e| CliError::invalid(format!("Cannot create header file {}: {e}.", h.path)))?;
    let mut pbkdf = crate::resolve::pbkdf(o);
    if pbkdf.hash.is_none() {
        pbkdf.hash = Some(lukskit_crypto::hash::HashAlg::Sha256.into());
    }
    // The cipher of `--cipher` or of the old header, parsed as the format would.
    let cipher = CipherSpec::parse(&h.cipher)
        .map_err(|e| errors::volume(&lukskit_volume::VolumeError::from(e)))?;
    let mut params = FormatRequest {
        header: Some(h.path.to_string()),
        cipher: DataCipher::Sector(cipher),
        key_size_bits: Some(h.key_bits),
        offset_sectors: Some(h.offset_sectors),
        uuid: h.uuid,
        key_slot: Some(p.main),
        pbkdf: pbkdf.clone(),
        volume_key: h.volume_key,
        ..FormatRequest::new(VolumeType::Luks1, h.data)
    };
    super::luks1_pbkdf_fallback(&mut params);
    let main = p.by_slot[p.main as usize].as_ref().ok_or_else(wrong)?;
    lukskit_volume::format::format(&params, main.as_bytes()).map_err(|e| errors::volume(&e))?;
    if o.verbose {
        println!("Key slot {} created.", p.main);
    }
    let mut vol = Volume::load(h.data, Some(h.path), Access::Write)?;
    let (_, vk) = vol.unlock(main.as_bytes(), Some(p.main), false)?;
    for (s, pass) in p.by_slot.iter().enumerate() {
        let Some(pass) = pass else { continue };
        if s as u32 == p.main {
            continue;
        }
        vol.add_keyslot(&vk, pass.as_bytes(), Some(s as u32), &params.pbkdf, false)
            .map_err(|e| errors::volume(&e))?;
        if o.verbose {
            println!("Key slot {s} created.");
        }
    }
    Ok(())
}

fn luks1_cipher(vol: &Volume) -> Result<(String, u32, u64)> {
    match vol.header() {
        Header::Luks1(h) => Ok((
            format!("{}-{}", h.cipher_name, h.cipher_mode),
            h.key_bytes * 8,
            u64::from(h.payload_offset),
        )),
        Header::Luks2(_) => Err(CliError::invalid("Device is not a valid LUKS1 device.")),
    }
}

/// Open one side of the copy: the header at `path` for the data device `data`.
fn side(data: &str, path: &str, pass: &[u8], slot: u32, writable: bool) -> Result<Side> {
    let vol = Volume::load(data, Some(path), Access::Read)?;
    let (_, vk) = vol
        .unlock(pass, Some(slot), false)
        .or_else(|_| vol.unlock(pass, None, false))
        .map_err(|e| errors::volume(&e))?;
    let (cipher, _, _) = luks1_cipher(&vol)?;
    let plain = cipher.starts_with("cipher_null");
    let layout = DataLayout::from_volume(&vol)?;
    let dv = DataVolume::open(data, layout, vk.as_bytes(), writable)?;
    Ok(Side { data: dv, plain })
}

/// cryptsetup's `reencrypt_luks1`.
fn run(o: &Opts, device: &str) -> Result<()> {
    // cryptsetup's legacy code re-encrypts only the first SIZE bytes; lukskit's has not been
    // checked against it for that, and must not re-encrypt the whole device instead.
    if o.device_size.is_some() {
        return Err(CliError::invalid(
            "Option --device-size is not supported by lukskit's LUKS1 reencrypt yet.",
        ));
    }
    let hdr_dev = o.header.as_deref().unwrap_or(device).to_string();
    let block_mib = o.block_size.unwrap_or(4);
    if !(1..=64).contains(&block_mib) {
        return Err(CliError::invalid(
            "Only values between 1 MiB and 64 MiB allowed for reencryption block size.",
        ));
    }
    // As cryptsetup: the device must open exclusively now (closed again: the headers are
    // formatted with their own claim); it is claimed again for the data copy. An image file
    // is claimed too (cryptsetup only opens it): a lukskit mapping may serve it.
    let claim_device = || -> Result<lukskit_volume::claim::Claim> {
        Device::open(device, Access::Write)
            .map_err(|_| CliError::invalid(format!("Cannot open device {device}.")))?;
        super::reencrypt_claim::claim(device, super::reencrypt_claim::Refusal::Legacy)
    };
    drop(claim_device()?);
    let encrypt = o.given.has("encrypt");
    let uuid = if encrypt {
        NO_UUID.to_string()
    } else if let (true, Some(u)) = (o.decrypt, &o.uuid) {
        if uuid::Uuid::parse_str(u).is_err() {
            return Err(CliError::invalid("Provided UUID is invalid."));
        }
        u.clone()
    } else {
        match Volume::load_requested(
            device,
            o.header.as_deref(),
            Access::Read,
            Some(VolumeType::Luks1),
        ) {
            Ok(v) => v.uuid().to_string(),
            Err(_) => first_bytes(&hdr_dev)
                .and_then(|b| legacy::unusable_uuid(&b))
                .ok_or_else(|| {
                    CliError::invalid(format!("Device {device} is not a valid LUKS device."))
                })?,
        }
    };
    if o.key_slot.is_some_and(|s| s >= 8) {
        return Err(CliError::invalid("Key slot is invalid."));
    }
    let (log_path, org, new) = legacy::file_names(&uuid);
    let journal = legacy::journal_name(&uuid);
    let reduce = reduce_bytes(o)?;
    let fresh = LegacyLog {
        uuid: uuid.clone(),
        direction: if o.reduce_device_size.is_some() {
            LegacyDirection::Backward
        } else {
            LegacyDirection::Forward
        },
        mode: if encrypt {
            LegacyMode::Encrypt
        } else if o.decrypt {
            LegacyMode::Decrypt
        } else {
            LegacyMode::Reencrypt
        },
        offset: if o.reduce_device_size.is_some() {
            u64::MAX
        } else {
            0
        },
        shift: 0,
    };
    let (logf, mut log, in_progress) = match LogFile::create(&log_path, &fresh)? {
        Some(f) => (f, fresh, false),
        None => {
            println!("Log file {log_path} exists, resuming reencryption.");
            let (f, parsed) = LogFile::open(&log_path, &uuid).map_err(|e| {
                eprintln!("{}", crate::errors::volume(&e).message);
                CliError::invalid("Cannot open reencryption log file.")
            })?;
            if parsed == Err(legacy::LogError::Unwritten) {
                // A run that stopped at its very first write: start again.
                for f in [&org, &new] {
                    let _ = std::fs::remove_file(f);
                }
                legacy::remove_journal(&journal);
            }
            let parsed = match parsed {
                Err(legacy::LogError::Unwritten) => f.write(&fresh).map(|_| fresh.clone())?,
                other => other.map_err(|_| {
                    eprintln!("Wrong log format.");
                    CliError::invalid("Cannot open reencryption log file.")
                })?,
            };
            let l: std::result::Result<LegacyLog, legacy::LogError> = Ok(parsed);
            let l = l.map_err(|_| {
                eprintln!("Wrong log format.");
                CliError::invalid("Cannot open reencryption log file.")
            })?;
            if l.mode != LegacyMode::Decrypt && restored(&hdr_dev, &new) {
                // Stopped after the new header was written back: only the files are left.
                drop(f);
                for f in [&log_path, &org, &new] {
                    let _ = std::fs::remove_file(f);
                }
                legacy::remove_journal(&journal);
                return Ok(());
            }
            if nothing_done(&l, &hdr_dev, &journal) {
                // Stopped before the data or the device's header was touched (a crash
                // while the headers were made): start again.
                for f in [&org, &new] {
                    let _ = std::fs::remove_file(f);
                }
                legacy::remove_journal(&journal);
                f.write(&fresh)?;
                (f, fresh, false)
            } else {
                (f, l, true)
            }
        }
    };
    // The files are removed at the end unless the device depends on them.
    let mut stained = in_progress;
    let result = (|| -> Result<()> {
        if !in_progress && o.uuid.is_some() {
            return Err(CliError::invalid(
                "No decryption in progress, provided UUID can be used only to resume \
                 suspended decryption process.",
            ));
        }
        let mode = log.mode;
        let p = if in_progress {
            let from = if mode == LegacyMode::Decrypt {
                &org
            } else {
                &new
            };
            let v = Volume::load(device, Some(from), Access::Read)?;
            resume_passphrase(o, &v)?
        } else if mode == LegacyMode::Encrypt {
            passphrases(o, mode, None)?
        } else {
            let v = Volume::load_requested(
                device,
                o.header.as_deref(),
                Access::Read,
                Some(VolumeType::Luks1),
            )?;
            passphrases(o, mode, Some(&v))?
        };
        let main_pass = p.by_slot[p.main as usize].as_ref().ok_or_else(wrong)?;
        if !in_progress {
            let fake_bits = o.key_size.unwrap_or(DEFAULT_KEY_BITS);

            let mut fake_p = Passphrases {
                by_slot: (0..8).map(|_| None).collect(),
                main: p.main,
            };
            fake_p.by_slot[p.main as usize] = Some(main_pass.clone());
            match mode {
                LegacyMode::Encrypt => {
                    make_header(o, fake_header(&org, device, fake_bits), &fake_p)?;
                    make_header(
                        o,
                        NewHeader {
                            path: &new,
                            cipher: o.cipher.clone().unwrap_or_else(|| DEFAULT_CIPHER.into()),
                            key_bits: o.key_size.unwrap_or(DEFAULT_KEY_BITS),
                            offset_sectors: reduce / 512,
                            uuid: None,
                            volume_key: None,
                            data: device,
                        },
                        &p,
                    )?;
                }
                _ => {
                    lukskit_volume::backup::header_backup(device, o.header.as_deref(), &org)
                        .map_err(|e| errors::volume(&e))?;
                    if o.verbose {
                        println!("LUKS1 header backup of device {device} created.");
                    }
                    if mode == LegacyMode::Decrypt {
                        make_header(o, fake_header(&new, device, fake_bits), &fake_p)?;
                    } else {
                        let old = Volume::load(device, o.header.as_deref(), Access::Read)?;
                        let (cipher, bits, offset) = luks1_cipher(&old)?;
                        let keep = o.keep_key;
                        let key_bits = if keep {
                            bits
                        } else {
                            o.key_size.unwrap_or(bits)
                        };
                        let volume_key = if keep {
                            Some(old.unlock(main_pass.as_bytes(), Some(p.main), false)?.1)
                        } else if let Some(f) = &o.volume_key_file {
                            Some(super::volume_key::read_volume_key_file(
                                f,
                                (key_bits / 8) as usize,
                            )?)
                        } else {
                            None
                        };
                        // Its lock must not be held while the new header is formatted.
                        drop(old);
                        make_header(
                            o,
                            NewHeader {
                                path: &new,
                                cipher: o.cipher.clone().unwrap_or(cipher),
                                key_bits,
                                offset_sectors: offset + reduce / 512,
                                uuid: Some(uuid.clone()),
                                volume_key,
                                data: device,
                            },
                            &p,
                        )?;
                    }
                    if !legacy::mark_unusable(&hdr_dev)? {
                        return Err(CliError::invalid(format!(
                            "Device {device} is not a valid LUKS device."
                        )));
                    }
                    if o.verbose {
                        println!("Marking LUKS1 device {hdr_dev} unusable.");
                    }
                    stained = true;
                }
            }
        }
        if !o.keep_key {
            let _claim = claim_device()?;
            let mut old = side(device, &org, main_pass.as_bytes(), p.main, false)?;
            let mut newside = side(device, &new, main_pass.as_bytes(), p.main, true)?;
            if o.use_directio {
                // As cryptsetup's O_DIRECT (where the device takes it).
                old.data.use_direct_io();
                newside.data.use_direct_io();
            }
            let dev_size = Device::open(device, Access::Read)?
                .size()
                .map_err(|e| CliError::io("read the size of", device, &e))?;
            let org_size = dev_size.saturating_sub(offset_of(device, &org)?);
            let new_size = dev_size.saturating_sub(offset_of(device, &new)?);
            let size = match &o.device_size {
                Some(s) => crate::args::parse_device_size(s).unwrap_or(0),
                None if mode == LegacyMode::Decrypt => org_size,
                None => new_size,
            };
            if log.direction == LegacyDirection::Backward {
                stained = true;
            }
            let mut progress = super::reencrypt_progress::Progress::new(o, device);
            crate::interrupt::catch_interrupts();
            let mut cb = |done: u64, total: u64| {
                progress.show(done, total);
                !crate::interrupt::interrupted()
            };
            let params = CopyParams {
                old: &old,
                new: &newside,
                size,
                block: block_mib as usize * 1024 * 1024,
                log: &logf,
                journal: &journal,
                run: legacy::run_id(&new)?,
            };
            let out = legacy::copy(&params, &mut log, &mut cb).map_err(|e| {
                eprintln!("IO error during reencryption.");
                errors::volume(&e)
            })?;
            if out == CopyOutcome::Interrupted {
                return Err(CliError::invalid("\nReencryption interrupted."));
            }
            if mode == LegacyMode::Decrypt && new_size > org_size {
                let zero = vec![0u8; 1 << 20];
                let mut at = org_size;
                while at < new_size {
                    let n = (new_size - at).min(zero.len() as u64) as usize;
                    newside.data.pwrite(&zero[..n], at)?;
                    at += n as u64;
                }
                newside.data.flush()?;
            }
        }
        if mode != LegacyMode::Decrypt {
            restore(o, device, &new, mode)?;
        }
        stained = false;
        Ok(())
    })();
    if !stained {
        for f in [&log_path, &org, &new] {
            let _ = std::fs::remove_file(f);
        }
        legacy::remove_journal(&journal);
    }
    result
}

/// A `cipher_null` header (cryptsetup's "fake" header of the plaintext side).
fn fake_header<'a>(path: &'a str, device: &'a str, key_bits: u32) -> NewHeader<'a> {
    NewHeader {
        path,
        cipher: "cipher_null-ecb".into(),
        key_bits,
        offset_sectors: 0,
        uuid: Some(NO_UUID.into()),
        volume_key: None,
        data: device,
    }
}

/// Whether the device's header is the run's new header already (the run stopped between
/// writing it back and removing its files).
fn restored(hdr_dev: &str, new: &str) -> bool {
    // All of what a restore writes, not just the header: a restore cut short must not
    // count.
    let Ok(img) = lukskit_volume::backup::read_backup(new) else {
        return false;
    };
    let Ok(dev) = Device::open(hdr_dev, Access::Read) else {
        return false;
    };
    let mut cur = vec![0u8; img.bytes.len()];
    dev.read_exact_at(&mut cur, 0).is_ok() && cur == img.bytes
}

/// Whether a run whose log exists has not touched anything yet: the device's header is
/// still a usable LUKS1 one (a re-encryption or decryption marks it before the first data
/// write), or an encryption has not written its first block (no redo record either).
fn nothing_done(log: &LegacyLog, hdr_dev: &str, journal: &str) -> bool {
    let initial = match log.direction {
        LegacyDirection::Forward => log.offset == 0,
        LegacyDirection::Backward => log.offset == u64::MAX,
    };
    match log.mode {
        LegacyMode::Encrypt => initial && std::fs::metadata(journal).is_err(),
        _ => state_of(hdr_dev) == DevState::Luks1,
    }
}

fn offset_of(device: &str, header: &str) -> Result<u64> {
    let v = Volume::load(device, Some(header), Access::Read)?;
    Ok(luks1_cipher(&v)?.2 * 512)
}

/// Write the new header over the device's (cryptsetup's `restore_luks_header`).
fn restore(o: &Opts, device: &str, new: &str, mode: LegacyMode) -> Result<()> {
    if mode == LegacyMode::Encrypt {
        if let Some(h) = &o.header {
            if std::fs::metadata(h).is_err() {
                return std::fs::rename(new, h).map_err(|e| {
                    eprintln!("Cannot restore LUKS1 header on device {h}.");
                    CliError::io("rename", h, &e)
                });
            }
        }
    }
    let img = lukskit_volume::backup::read_backup(new).map_err(|e| errors::volume(&e))?;
    lukskit_volume::backup::header_restore(device, o.header.as_deref(), &img).map_err(|e| {
        eprintln!(
            "Cannot restore LUKS1 header on device {}.",
            o.header.as_deref().unwrap_or(device)
        );
        errors::volume(&e)
    })?;
    if o.verbose {
        println!(
            "LUKS1 header on device {} restored.",
            o.header.as_deref().unwrap_or(device)
        );
    }
    Ok(())
}
