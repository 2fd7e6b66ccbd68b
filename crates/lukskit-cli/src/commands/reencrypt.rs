//! `reencrypt <device>`: LUKS2 re-encryption with cryptsetup 2.6.1's command line, offline
//! (new volume key, cipher, key size, sector size; `--resilience`, `--hotzone-size`,
//! `--init-only`, `--resume-only`, `--force-offline-reencrypt`, progress output).

use super::reencrypt_claim::{self, Refusal};
use super::reencrypt_notice::ActiveNotice;
use super::reencrypt_progress::Progress;
use super::{existing_key_source, need_args};
use crate::args::Opts;
use crate::errors::{self, CliError, Result};
use crate::input;
use crate::interrupt::catch_interrupts;
use lukskit_crypto::spec::CipherSpec;
use lukskit_crypto::SecretBuf;
use lukskit_format::io::Storage;
use lukskit_reencrypt::initialize::{InitHost, InitRequest, NewHeader, Unlock};
use lukskit_reencrypt::sector_increase::{self, SectorIncrease};
use lukskit_reencrypt::{choice, encrypt_header, online, repair, resume, start, userspace};
use lukskit_reencrypt::{Phase, ReencryptError, ReencryptRequest};
use lukskit_volume::device::{Access, Device};
use lukskit_volume::reencrypt::{self, Outcome, Status};
use lukskit_volume::{Header, Volume};
use std::io::Write;

fn has(o: &Opts, long: &str) -> bool {
    o.given.has(long)
}

fn luks2(vol: &Volume) -> Result<&lukskit_format::luks2::Luks2Header> {
    match vol.header() {
        Header::Luks2(h) => Ok(h),
        Header::Luks1(_) => Err(CliError::invalid(
            "LUKS1 re-encryption is not supported by lukskit (convert to LUKS2 first).",
        )),
    }
}

/// `reencrypt <device>`.
pub fn reencrypt(o: &Opts, args: &[String]) -> Result<()> {
    // `reencrypt --active-name NAME` alone: the device is the one under the mapping.
    let by_name;
    let args = match (args.is_empty(), o.given.value("active-name")) {
        (true, Some(n)) => {
            let m = lukskit_activate::find(n)
                .map_err(CliError::from)?
                .ok_or_else(|| errors::inactive(lukskit_activate::mapping_name(n)))?;
            let st = m.status(o.header.as_deref()).map_err(CliError::from)?;
            // The kernel's device node (a loop device stays a loop device), else the
            // userspace mapping's data device.
            by_name = vec![match st.exposure {
                lukskit_activate::Exposure::Kernel => st.device,
                _ => m.device().map_err(CliError::from)?,
            }];
            &by_name[..]
        }
        _ => args,
    };
    need_args(args, 1, 2, "device")?;
    let device = &args[0];
    let activate_name = args.get(1);
    if activate_name.is_some() && !has(o, "init-only") {
        return Err(CliError::invalid(
            "A device name to activate is supported by lukskit only with --init-only.",
        ));
    }
    // LUKS1 devices (and `--encrypt --type luks1`): cryptsetup's legacy LUKS1 code.
    if super::reencrypt_luks1::dispatch(o, device)?.is_some() {
        return Ok(());
    }
    // `--decrypt --header DEVICE` (the device itself, or a link to it) is no detached
    // header: cryptsetup 2.6.1 refuses it at once (lukskit took the device's write lock a
    // second time and waited for ever; luks2-reencryption-test [5]).
    if has(o, "decrypt")
        && o.header
            .as_deref()
            .is_some_and(|h| lukskit_volume::device::same_device(h, device))
    {
        return Err(CliError::invalid(
            "LUKS2 decryption is supported with detached header device only (with data \
             offset set to 0).",
        ));
    }
    if has(o, "init-only") && has(o, "resume-only") {
        return Err(CliError::invalid(
            "Options --init-only and --resume-only cannot be combined.",
        ));
    }
    if has(o, "encrypt") && has(o, "decrypt") {
        return Err(CliError::invalid(
            "Options --encrypt and --decrypt cannot be combined.",
        ));
    }
    let req = crate::resolve::reencrypt(o);
    let mut formatted = None;
    // The data device's claim of an offline run (see `reencrypt_claim`): taken before
    // anything is written, held until the run ends.
    let mut claim = None;
    let runs = req.phase != Phase::InitOnly;
    // `--encrypt --reduce-device-size` without `--header`: the header goes into space taken
    // from the device (see `reencrypt_shift`).
    let mut shifted = None;
    // `--encrypt` of a LUKS2 device (or header) already in re-encryption resumes it, as
    // cryptsetup's does (which then checks that it is an encryption).
    let resuming = req.encrypts() && header_in_reencryption(o, device);
    // The kernel mapping a decryption with a moved segment was initialized under.
    let mut shift_active = None;
    if super::reencrypt_shift::wanted(o) && !resuming {
        // A block device nothing holds is encrypted offline, as by cryptsetup (which looks
        // for an active mapping only); one in use would need the online run.
        if !req.force_offline
            && std::fs::metadata(device).is_ok_and(|m| {
                use std::os::unix::fs::FileTypeExt;
                m.file_type().is_block_device()
            })
            && online::has_holders(device)
        {
            return Err(CliError::invalid(
                "Online re-encryption is not supported by lukskit yet; use \
                 --force-offline-reencrypt when the device is not in use.",
            ));
        }
        let (keys, held) = super::reencrypt_shift::init(o, device)?;
        shifted = Some(keys);
        claim = Some(held);
    } else if super::reencrypt_decrypt_shift::wanted(o) {
        // `--decrypt --header FILE` with FILE missing: the header moves out to FILE.
        let (keys, name, held) = super::reencrypt_decrypt_shift::init(o, device)?;
        shifted = Some(keys);
        shift_active = name;
        claim = held;
    } else if req.encrypts() && !resuming {
        // A device in use is refused before its new header is made (cryptsetup makes the
        // header, then refuses the run); the claim is taken again for the run below, as
        // the format takes its own.
        if runs && req.active_name.is_none() {
            drop(reencrypt_claim::claim(device, Refusal::Run)?);
        }
        formatted = Some(format_for_encrypt(o, &req, device)?);
    }
    let mut vol = match super::load_volume_typed(o, device, Access::Write, super::requested_luks(o))
    {
        Ok(v) => v,
        // No LUKS header at all: cryptsetup 2.6.1 says so only for a decryption; a
        // re-encryption fails silently, a resume finds none in progress.
        Err(lukskit_volume::VolumeError::NotLuks { .. }) if req.mode.is_none() => {
            return Err(if req.phase == Phase::ResumeOnly {
                ReencryptError::NotInProgress.into()
            } else {
                CliError::invalid("")
            });
        }
        Err(e) => return Err(e.into()),
    };
    // Whether the run may start or go on with the header as it is (see [`start::check`]).
    let st = start::check(luks2(&vol)?, &req, shifted.is_some())?;
    // cryptsetup checks whether the device is in use for every run, and for the
    // initialization of a decryption.
    let checks_active = shifted.is_none() && (runs || (st == Status::None && req.decrypts()));
    let data_dev = if vol.detached {
        Some(Device::open(&vol.data_path, Access::Write)?)
    } else {
        None
    };
    let is_block = data_dev.as_ref().unwrap_or(&vol.dev).is_block_device();
    let mut active = req
        .active_name
        .as_deref()
        .map(|n| lukskit_activate::mapping_name(n).to_string())
        .or(shift_active);
    // A userspace (FUSE or NBD) mapping serves the device: re-encrypt online through it.
    let live = if runs && !req.force_offline && active.is_none() {
        userspace::active_mapping(&vol.data_path)?
    } else {
        None
    };
    // What cryptsetup says of the device's use once the passphrases are read (see
    // [`ActiveNotice`]); an encryption's new header is not looked at (`encrypt_luks2_init`).
    let mut notice = ActiveNotice::Nothing;
    if checks_active && !req.force_offline && active.is_none() && live.is_none() {
        if !is_block {
            if formatted.is_none() {
                notice = ActiveNotice::unknown(o, device)?;
            }
        } else {
            active = detect_active(&vol, device)?;
            notice = ActiveNotice::detected(active.as_deref(), &vol, device);
        }
    }
    // An offline run (no kernel mapping named or found, no userspace mapping to run through;
    // with --force-offline-reencrypt every run is one) needs the data device for itself.
    if runs && active.is_none() && live.is_none() && claim.is_none() {
        claim = Some(reencrypt_claim::claim(&vol.data_path, Refusal::Run)?);
    }
    let block = reencrypt::device_block_size(data_dev.as_ref().unwrap_or(&vol.dev).file());
    let increase =
        if st == Status::None && shifted.is_none() && formatted.is_none() && !req.decrypts() {
            sector_increase(
                (o, &req),
                &vol,
                device,
                (is_block, runs),
                active.as_deref(),
                live.as_ref(),
                &mut notice,
            )?
        } else {
            None
        };
    let keys = if let Some(k) = shifted {
        k
    } else if st == Status::None {
        // cryptsetup checks the mapping of an online run before it writes the metadata
        // (not with --init-only, which it runs without the mapping's name).
        let online = active.as_deref().filter(|_| runs);
        if live.is_some() && runs && choice::data_shift(&req).is_some() {
            return Err(ReencryptError::OnlineShiftUnsupported.into());
        }
        let ctx = InitContext {
            req: &req,
            data_dev: data_dev.as_ref(),
            block,
            online,
            increase: increase.as_ref(),
            notice: &notice,
        };
        init(o, &mut vol, &ctx, formatted)?
    } else {
        // cryptsetup's `reencrypt_luks2_load`: whether to go on (not with -q or
        // --resume-only; yes without a terminal), the passphrase, then the device's use.
        if req.phase != Phase::ResumeOnly {
            let name = o.header.as_deref().unwrap_or(device);
            input::confirm(
                &format!(
                    "Device {name} is already in LUKS2 reencryption. Do you wish to resume \
                     previously initialised operation?"
                ),
                o.batch_mode,
            )?;
        }
        let keys = super::open_reencrypt::unlock(o, &vol, device)?;
        notice.say(o)?;
        keys
    };
    // `--resilience` at a resume (see [`resume::apply_resilience`]).
    if st != Status::None {
        let pbkdf = crate::resolve::pbkdf(o);
        let u = resume::ResilienceUpdate {
            req: &req,
            pbkdf: &pbkdf,
            block,
            online: active.is_some() || live.is_some(),
        };
        resume::apply_resilience(&mut vol, data_dev.as_ref(), &keys, &u)?;
    }
    if !runs {
        // The device is not re-encrypted now: a claim (of a moved first segment) goes, and
        // the mapping below takes its own.
        drop(claim.take());
        // cryptsetup 2.6.1 activates NAME only after an encryption's initialization (other
        // modes ignore it).
        if let Some(name) = activate_name.filter(|_| req.encrypts()) {
            let data: &dyn Storage = match &data_dev {
                Some(d) => d,
                None => &vol.dev,
            };
            let size = data.size().map_err(|e| {
                lukskit_volume::VolumeError::device_io(lukskit_volume::DeviceOp::GetSize, e)
            })?;
            // The mapping opens the data device itself: our write lock on it must go first
            // (taking the lock again from this process would wait for ever).
            drop(data_dev);
            super::open::activate_after_init(o, name, vol, &keys, size)?;
            println!("/dev/mapper/{name} is now active and ready for online encryption.");
        }
        return Ok(());
    }
    let uuid = vol.uuid().to_string();
    let _lock = lukskit_reencrypt::lock(&uuid, req.disable_locks)?;
    if req.force_offline && !o.batch_mode {
        println!("Resuming LUKS reencryption in forced offline mode.");
    }
    let mut progress = Progress::new(o, device);
    catch_interrupts();
    let target = match (active, live) {
        (Some(name), _) => lukskit_reencrypt::RunTarget::Kernel(name),
        (None, Some(m)) => lukskit_reencrypt::RunTarget::Userspace(Box::new(m)),
        (None, None) => lukskit_reencrypt::RunTarget::Offline,
    };
    let run = lukskit_reencrypt::RunRequest {
        max_hotzone: req.max_hotzone,
        device_size: req.device_size,
    };
    let out = lukskit_reencrypt::run(
        &mut vol,
        data_dev.as_ref(),
        block,
        &keys,
        target,
        run,
        &mut progress,
    )?;
    if out == Outcome::Interrupted {
        // Stopped at a safe point: `--resume-only` continues.
        if !progress.is_json() {
            print!("\x1b[2K\r");
            let _ = std::io::stdout().flush();
        }
        return Err(CliError::invalid("\nReencryption interrupted."));
    }
    Ok(())
}

/// cryptsetup's refusal of a raise of the encryption sector size (see
/// [`SectorIncrease::probe_device`]), or `Ok` where the new sector size fits the file system
/// (or none is found) on the active mapping.
fn check_sector_increase(i: &SectorIncrease) -> Result<()> {
    super::signature::check_sector_size_fits(i.probe_device()?, i.new)
}

/// The sector size raise of a new re-encryption of `vol` (`None`: the sector size does not
/// grow, or `--force-offline-reencrypt` bypasses the check), with the device of its active
/// mapping: the one the run goes on under (`active`, `live`), or, for `--init-only` (which
/// cryptsetup runs without a mapping otherwise), the one found for the data device now.
fn sector_increase(
    (o, req): (&Opts, &ReencryptRequest),
    vol: &Volume,
    device: &str,
    (is_block, runs): (bool, bool),
    active: Option<&str>,
    live: Option<&lukskit_activate::userspace::UserspaceMapping>,
    notice: &mut ActiveNotice,
) -> Result<Option<SectorIncrease>> {
    let Some(new) = sector_increase::raised_sector_size(luks2(vol)?, req)? else {
        return Ok(None);
    };
    let mut kernel = active.map(String::from);
    let mut userspace = live.and_then(userspace::mapping_device);
    if !runs && kernel.is_none() {
        // cryptsetup's `reencrypt_hint_force_offline_reencrypt`, then its look for the
        // active mapping, which an --init-only makes only for this check.
        if !is_block {
            *notice = ActiveNotice::unknown(o, device)?;
        } else {
            kernel = detect_active(vol, device)?;
            *notice = ActiveNotice::detected(kernel.as_deref(), vol, device);
        }
        if kernel.is_none() {
            userspace = userspace::active_mapping(&vol.data_path)?
                .as_ref()
                .and_then(userspace::mapping_device);
        }
    }
    let on = kernel
        .map(|n| format!("/dev/mapper/{}", lukskit_activate::mapping_name(&n)))
        .or(userspace);
    Ok(Some(SectorIncrease { new, on }))
}

/// The kernel mapping of `vol`'s data device (`device`, or the data device of a detached
/// header) found among its holders as cryptsetup finds it.
fn detect_active(vol: &Volume, device: &str) -> Result<Option<String>> {
    let data_path = if vol.detached { &vol.data_path } else { device };
    Ok(online::detect(data_path, vol.uuid())?)
}

/// What a new re-encryption's initialization works with besides the options and the volume.
struct InitContext<'a> {
    /// The re-encryption asked for.
    req: &'a ReencryptRequest,
    /// The data device when the header is detached.
    data_dev: Option<&'a Device>,
    /// The data device's logical block size.
    block: u64,
    /// The kernel mapping an online run goes on under.
    online: Option<&'a str>,
    /// A raise of the encryption sector size, checked once the passphrases are read.
    increase: Option<&'a SectorIncrease>,
    /// What to say of the device's use once the passphrases are read.
    notice: &'a ActiveNotice,
}

/// Initialize (see [`lukskit_reencrypt::initialize()`]): the passphrases are read here, with
/// cryptsetup's prompts, in the library's order.
fn init(
    o: &Opts,
    vol: &mut Volume,
    ctx: &InitContext,
    formatted: Option<Formatted>,
) -> Result<reencrypt::Keys> {
    let src = existing_key_source(o, None);
    let pbkdf = crate::resolve::pbkdf(o);
    // `--cipher`, parsed once, here (a decryption takes none, an encryption's new header was
    // made with it).
    let cipher = match o.cipher.as_deref() {
        Some(text) if formatted.is_none() && !ctx.req.decrypts() => {
            Some(CipherSpec::parse(text).map_err(CliError::from)?)
        }
        _ => None,
    };
    let r = InitRequest {
        req: ctx.req,
        data_dev: ctx.data_dev,
        block: ctx.block,
        online: ctx.online,
        cipher: cipher.as_ref(),
        key_bits: o.key_size,
        key_file: !matches!(src, input::KeySource::Prompt),
        pbkdf: &pbkdf,
        new_header: formatted.map(|f| NewHeader {
            passphrase: f.pass,
            shift: f.shift,
        }),
    };
    let mut host = InitPrompts { o, src, ctx };
    lukskit_reencrypt::initialize(vol, r, &mut host).map_err(|e| e.into_caller(CliError::from))
}

/// The prompts and messages of an initialization, as cryptsetup's.
struct InitPrompts<'a> {
    o: &'a Opts,
    src: input::KeySource,
    ctx: &'a InitContext<'a>,
}

impl InitHost for InitPrompts<'_> {
    type Error = CliError;

    fn unlock(&mut self, vol: &Volume, ask: Unlock) -> Result<(SecretBuf, SecretBuf)> {
        let (prompt, slot) = match ask {
            Unlock::Volume(slot) => (format!("Enter passphrase for {}: ", vol.data_path), slot),
            Unlock::Keyslot(slot) => (
                format!("Enter passphrase for key slot {slot}: "),
                Some(slot),
            ),
        };
        let (_, vk, pass) =
            super::keys::unlock_with_tries(vol, self.o, &self.src, &prompt, slot, false)?;
        Ok((vk, pass))
    }

    fn passphrases_read(&mut self) -> Result<()> {
        self.ctx.notice.say(self.o)
    }

    fn cipher_switched(&mut self, cipher: &CipherSpec) {
        println!("Switching data encryption cipher to {cipher}.");
    }

    fn volume_key_file(&mut self, len: usize) -> Result<Option<SecretBuf>> {
        match &self.o.volume_key_file {
            Some(f) => super::volume_key::read_volume_key_file(f, len).map(Some),
            None => Ok(None),
        }
    }

    fn sector_increase_allowed(&mut self) -> Result<()> {
        match self.ctx.increase {
            Some(i) => check_sector_increase(i),
            None => Ok(()),
        }
    }
}

/// Whether `repair <device>` must recover an interrupted re-encryption hot zone (as
/// cryptsetup's `repair` does) rather than repair the header.
pub fn repair_needs_recovery(o: &Opts, args: &[String]) -> bool {
    let Some(device) = args.first() else {
        return false;
    };
    Volume::load(device, o.header.as_deref(), Access::Read)
        .is_ok_and(|vol| repair::needs_recovery(&vol))
}

/// `repair <device>` of a header with an interrupted hot zone: the passphrase, then the
/// recovery (see [`repair::Recovery`]).
pub fn repair(o: &Opts, args: &[String]) -> Result<()> {
    need_args(args, 1, 1, "<device>")?;
    let device = &args[0];
    input::confirm(
        "Really proceed with LUKS2 reencryption recovery?",
        o.batch_mode,
    )?;
    let mut vol = super::load_volume(o, device, Access::Write)?;
    let recovery = repair::Recovery::prepare(&vol)?;
    let src = existing_key_source(o, None);
    let prompt = format!("Enter passphrase for {device}: ");
    let pass = input::get_secret(&src, &prompt, false)?;
    recovery.recover(&mut vol, pass.as_bytes(), o.key_slot, o.disable_locks)?;
    Ok(())
}

/// With `--encrypt`: whether the header (`--header`, else the device) is LUKS2 already in
/// re-encryption (then the run resumes it instead of formatting a new one).
fn header_in_reencryption(o: &Opts, device: &str) -> bool {
    let h = o.header.as_deref().unwrap_or(device);
    match Volume::load(h, None, Access::Read) {
        Ok(v) => match v.header() {
            Header::Luks2(h) => reencrypt::status(h).ok().is_some_and(|s| s != Status::None),
            Header::Luks1(_) => false,
        },
        Err(_) => false,
    }
}

/// `--encrypt --header FILE`: format the detached header (cryptsetup's `encrypt_luks2_init`
/// without a data shift: data offset 0, 512-byte sectors unless `--sector-size`). Returns
/// the passphrase of its keyslot and the data shift.
fn format_for_encrypt(o: &Opts, req: &ReencryptRequest, device: &str) -> Result<Formatted> {
    let Some(header) = o.header.clone() else {
        return Err(ReencryptError::EncryptWithoutHeader.into());
    };
    if let Some(ss) = o.sector_size {
        super::signature::check_sector_size_fits(device, ss)?;
    }
    // With --reduce-device-size (cryptsetup's `encrypt_luks2_init` with a detached header):
    // the header is sized to fill that much space, so that it can later be restored over the
    // head of the device in front of the data offset (`--offset`), and the data from the
    // data offset on is encrypted in place, backward, in hot zones of that size with
    // resilience `datashift`.
    let mut shift = None;
    let (mut metadata_size, mut keyslots_size) = (None, None);
    let parse = |v: &Option<String>, what: &str| -> Result<Option<u64>> {
        match v {
            None => Ok(None),
            Some(v) => crate::args::parse_size(v)
                .map(Some)
                .ok_or_else(|| CliError::invalid(format!("Invalid {what} specification."))),
        }
    };
    if let Some(v) = o.given.value("reduce-device-size") {
        choice::check_shift_resilience(req)?;
        let s = crate::args::parse_device_size(v)
            .filter(|s| *s != 0)
            .ok_or_else(|| {
                CliError::invalid("Invalid size specification in parameter --reduce-device-size.")
            })?;
        let md = parse(&o.luks2_metadata_size, "metadata size")?;
        let ks = parse(&o.luks2_keyslots_size, "keyslots size")?;
        let layout = encrypt_header::shift_layout(s, md, ks, o.offset)?;
        shift = Some(s);
        metadata_size = Some(layout.metadata_size);
        keyslots_size = Some(layout.keyslots_size);
    }
    // `--offset` sets the data offset with or without a data shift (cryptsetup's luksFormat
    // in `encrypt_luks2_init`): what lies in front of it is left as it is.
    // cryptsetup's luksFormat of the header: made if missing (asked first), the question
    // whether to overwrite it otherwise, its new passphrase.
    let created = super::format::create_header_file(o)?;
    super::format::confirm_overwrite(o, &header, created)?;
    let src = existing_key_source(o, None);
    let pass = super::format::new_passphrase(o, &src, &header)?;
    let params = lukskit_volume::format::FormatRequest {
        header: Some(header.clone()),
        cipher: crate::resolve::data_cipher(o, false)?,
        key_size_bits: o.key_size,
        sector_size: Some(o.sector_size.unwrap_or(512)),
        offset_sectors: o.offset,
        label: o.label.clone(),
        subsystem: o.subsystem.clone(),
        uuid: o.uuid.clone(),
        metadata_size,
        keyslots_size,
        key_slot: o.key_slot,
        pbkdf: crate::resolve::pbkdf(o),
        ..lukskit_volume::format::FormatRequest::new(lukskit_format::VolumeType::Luks2, device)
    };
    super::format::warn_small_keyslots_area(&params);
    lukskit_volume::format::format(&params, pass.as_bytes())?;
    Ok(Formatted { pass, shift })
}

/// The header `format_for_encrypt` made: the passphrase of its keyslot and the data shift
/// in bytes (`--reduce-device-size`), if any.
struct Formatted {
    pass: SecretBuf,
    shift: Option<u64>,
}

/// Whether `repair <device>` must protect unprotected re-encryption metadata (see
/// [`repair::needs_metadata_upgrade`]).
pub fn repair_needs_metadata_upgrade(o: &Opts, args: &[String]) -> bool {
    let Some(device) = args.first() else {
        return false;
    };
    Volume::load(device, o.header.as_deref(), Access::Read)
        .is_ok_and(|vol| repair::needs_metadata_upgrade(&vol))
}

/// `repair <device>` of unprotected re-encryption metadata (cryptsetup's
/// `reencrypt_metadata_repair`): after a confirmation, the passphrase unlocks the keys, the
/// metadata is upgraded to `online-reencrypt-v2` with a new metadata digest, and checked.
pub fn repair_metadata(o: &Opts, args: &[String]) -> Result<()> {
    need_args(args, 1, 1, "<device>")?;
    input::confirm(
        "Unprotected LUKS2 reencryption metadata detected. Please verify the reencryption \
         operation is desirable (see luksDump output)\nand continue (upgrade metadata) only if \
         you acknowledge the operation as genuine.",
        o.batch_mode,
    )?;
    let src = existing_key_source(o, None);
    let pass = input::get_secret(
        &src,
        "Enter passphrase to protect and upgrade reencryption metadata: ",
        false,
    )?;
    let mut vol = super::load_volume(o, &args[0], Access::Write)?;
    let pbkdf = crate::resolve::pbkdf(o);
    repair::upgrade_metadata(&mut vol, pass.as_bytes(), o.key_slot, &pbkdf)?;
    Ok(())
}

/// After `repair` found the header sound: a re-encryption in progress has its metadata
/// digest checked with the passphrase (cryptsetup's `luks2_reencrypt_repair` in state
/// `CRYPT_REENCRYPT_CLEAN`): mangled metadata fails with "Reencryption metadata is invalid."
/// (exit 2).
pub fn repair_verify_clean(o: &Opts, vol: &Volume) -> Result<()> {
    if !repair::needs_verification(vol) {
        return Ok(());
    }
    let src = existing_key_source(o, None);
    let pass = input::get_secret(
        &src,
        "Enter passphrase to verify reencryption metadata digest: ",
        false,
    )?;
    Ok(repair::verify(vol, pass.as_bytes(), o.key_slot)?)
}
