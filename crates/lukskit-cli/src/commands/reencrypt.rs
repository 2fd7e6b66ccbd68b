//! `reencrypt <device>`: LUKS2 re-encryption with cryptsetup 2.6.1's command line, offline
//! (new volume key, cipher, key size, sector size; `--resilience`, `--hotzone-size`,
//! `--init-only`, `--resume-only`, `--force-offline-reencrypt`, progress output).

use super::reencrypt_claim::{self, Refusal};
use super::{existing_key_source, need_args};
use crate::args::Opts;
use crate::errors::{self, CliError, Result};
use crate::input;
use lukskit_crypto::spec::CipherSpec;
use lukskit_crypto::SecretBuf;
use lukskit_format::io::Storage;
use lukskit_volume::device::{Access, Device};
use lukskit_volume::reencrypt::{self, InitParams, Mode, Outcome, ResilienceChoice, Status};
use lukskit_volume::{Header, Volume};
use std::io::Write;

use std::time::Instant;

pub(crate) use crate::interrupt::{catch_interrupts, interrupted};

// cryptsetup's default cipher, which a re-encryption of a cipher_null volume switches to.
use super::format::DEFAULT_CIPHER;

fn has(o: &Opts, long: &str) -> bool {
    o.given.has(long)
}

/// The PBKDF and keyslot cipher of the keyslot that takes over from `old_slot` for the new
/// volume key, as cryptsetup 2.6 chooses them: the old keyslot's area cipher (the default
/// one instead of `cipher_null`) and, unless `--pbkdf`, `--hash`, `--pbkdf-force-iterations`
/// or `--iter-time` asks for others, its PBKDF with the same costs, without a benchmark.
fn new_keyslot_pbkdf(
    o: &Opts,
    vol: &Volume,
    old_slot: u32,
) -> Result<lukskit_volume::pbkdf::PbkdfRequest> {
    use lukskit_format::luks2::KdfParams;
    use lukskit_volume::pbkdf::{HashChoice, PbkdfKind};
    let mut p = crate::resolve::pbkdf(o);
    let Some(h) = vol.luks2() else {
        return Ok(p);
    };
    let Some(ks) = h.keyslot(old_slot)? else {
        return Ok(p);
    };
    if !ks.area_encryption.starts_with("cipher_null") {
        p.keyslot_cipher = Some(lukskit_volume::pbkdf::KeyslotCipherRequest {
            cipher: ks.area_encryption.clone(),
            key_bits: Some(ks.area_key_size * 8),
        });
    }
    if ["pbkdf", "hash", "pbkdf-force-iterations", "iter-time"]
        .iter()
        .any(|opt| has(o, opt))
    {
        return Ok(p);
    }
    match &ks.kdf {
        KdfParams::Pbkdf2 {
            hash, iterations, ..
        } => {
            p.kind = Some(PbkdfKind::Pbkdf2);
            p.hash = Some(HashChoice::parse(hash));
            p.force_iterations = Some(*iterations);
        }
        KdfParams::Argon2 {
            variant,
            time,
            memory,
            cpus,
            ..
        } => {
            // The header's kdf type (argon2i or argon2id: checked when it was loaded).
            let kind = PbkdfKind::from_name(variant).ok_or_else(|| {
                lukskit_volume::VolumeError::from(lukskit_volume::ParamError::UnknownPbkdf {
                    name: variant.clone(),
                })
            })?;
            p.kind = Some(kind);
            p.force_iterations = Some(*time);
            p.max_memory_kib = Some(*memory);
            p.parallel = Some(*cpus);
        }
        _ => {}
    }
    Ok(p)
}

/// cryptsetup's progress output: a "Progress: …" line redrawn at most every half second,
/// then "Finished, …"; or one JSON object per update with `--progress-json`; nothing with
/// `--batch-mode`. With `--progress-frequency SECS` a line every SECS seconds (not redrawn).
pub(crate) struct Progress {
    json: bool,
    quiet: bool,
    device: String,
    /// `--progress-frequency` in microseconds; 0 for the default (redraw every 0.5 s).
    frequency: u64,
    start: Option<(Instant, u64)>,
    last: Option<Instant>,
}

impl Progress {
    /// The progress output the command line asks for, naming `device` (in JSON).
    pub(crate) fn new(o: &Opts, device: &str) -> Self {
        Progress {
            json: o.progress_json,
            quiet: o.batch_mode,
            device: device.to_string(),
            frequency: u64::from(o.progress_frequency.unwrap_or(0)) * 1_000_000,
            start: None,
            last: None,
        }
    }

    /// `done` of `total` bytes processed.
    pub(crate) fn update(&mut self, done: u64, total: u64) {
        if self.quiet && !self.json {
            return;
        }
        let now = Instant::now();
        let Some((start, start_bytes)) = self.start else {
            self.start = Some((now, done));
            self.last = Some(now);
            return;
        };
        let fin = done == total;
        if !fin
            && self
                .last
                .is_some_and(|l| now.duration_since(l).as_micros() < self.interval())
        {
            return;
        }
        self.last = Some(now);
        let tdiff = now.duration_since(start).as_secs_f64();
        if tdiff == 0.0 {
            return;
        }
        let uib = (done - start_bytes) as f64 / tdiff;
        let eta = if uib > 0.0 {
            ((total as f64 / uib - tdiff).max(0.0) * 1e6) as u64
        } else {
            0
        };
        let mut out = std::io::stdout().lock();
        if self.json {
            let _ = writeln!(
                out,
                "{{\"device\":\"{}\",\"device_bytes\":\"{done}\",\"device_size\":\"{total}\",\
                 \"speed\":\"{}\",\"eta_ms\":\"{}\",\"time_ms\":\"{}\"}}",
                self.device,
                uib as u64,
                if fin { 0 } else { eta / 1000 },
                (tdiff * 1e3) as u64
            );
        } else {
            let (speed, unit) = if uib > 1073741824.0 {
                (uib / 1073741824.0, "GiB")
            } else if uib > 1048576.0 {
                (uib / 1048576.0, "MiB")
            } else if uib > 1024.0 {
                (uib / 1024.0, "KiB")
            } else {
                (uib, "B")
            };
            if self.frequency == 0 {
                let _ = write!(out, "\x1b[2K\r");
            }
            if fin {
                let _ = writeln!(
                    out,
                    "Finished, time {}, {}, speed {speed:5.1} {unit}/s",
                    human_time((tdiff * 1e6) as u64),
                    written(done)
                );
            } else {
                let _ = write!(
                    out,
                    "Progress: {:5.1}%, ETA {}, {}, speed {speed:5.1} {unit}/s{}",
                    done as f64 / total as f64 * 100.0,
                    human_time(eta),
                    written(done),
                    if self.frequency == 0 { "" } else { "\n" }
                );
            }
        }
        let _ = out.flush();
    }
}

impl Progress {
    fn interval(&self) -> u128 {
        if self.frequency == 0 {
            500_000
        } else {
            u128::from(self.frequency)
        }
    }
}

fn human_time(us: u64) -> String {
    let s = us / 1_000_000;
    if us < 5_400_000_000 {
        format!("{:02}m{:02}s", s / 60, s % 60)
    } else if us < 129_600_000_000 {
        format!("{:02}h{:02}m{:02}s", s / 3600, (s / 60) % 60, s % 60)
    } else {
        format!("{:02} days", s / 86400)
    }
}

fn written(bytes: u64) -> String {
    let (v, u) = if bytes < 1 << 32 {
        (bytes >> 20, "MiB")
    } else if bytes < 1 << 42 {
        (bytes >> 30, "GiB")
    } else if bytes < 1 << 52 {
        (bytes >> 40, "TiB")
    } else {
        (bytes >> 50, "PiB")
    };
    format!("{v:4} {u} written")
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
    if has(o, "decrypt") && o.header.as_deref().is_some_and(|h| same_device(h, device)) {
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
    let mut formatted = None;
    // The data device's claim of an offline run (see `reencrypt_claim`): taken before
    // anything is written, held until the run ends.
    let mut claim = None;
    let runs = !has(o, "init-only");
    // `--encrypt --reduce-device-size` without `--header`: the header goes into space taken
    // from the device (see `reencrypt_shift`).
    let mut shifted = None;
    // `--encrypt` of a LUKS2 device (or header) already in re-encryption resumes it, as
    // cryptsetup's does (which then checks that it is an encryption).
    let resuming = has(o, "encrypt") && header_in_reencryption(o, device);
    // The kernel mapping a decryption with a moved segment was initialized under.
    let mut shift_active = None;
    if super::reencrypt_shift::wanted(o) && !resuming {
        // A block device nothing holds is encrypted offline, as by cryptsetup (which looks
        // for an active mapping only); one in use would need the online run.
        if !has(o, "force-offline-reencrypt")
            && std::fs::metadata(device).is_ok_and(|m| {
                use std::os::unix::fs::FileTypeExt;
                m.file_type().is_block_device()
            })
            && super::reencrypt_online::has_holders(device)
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
    } else if has(o, "encrypt") && !resuming {
        // A device in use is refused before its new header is made (cryptsetup makes the
        // header, then refuses the run); the claim is taken again for the run below, as
        // the format takes its own.
        if runs && o.given.value("active-name").is_none() {
            drop(reencrypt_claim::claim(device, Refusal::Run)?);
        }
        formatted = Some(format_for_encrypt(o, device)?);
    }
    let mut vol = match super::load_volume_typed(o, device, Access::Write, super::requested_luks(o))
    {
        Ok(v) => v,
        // No LUKS header at all: cryptsetup 2.6.1 says so only for a decryption; a
        // re-encryption fails silently, a resume finds none in progress.
        Err(lukskit_volume::VolumeError::NotLuks { .. })
            if !has(o, "decrypt") && !has(o, "encrypt") =>
        {
            return Err(CliError::invalid(if has(o, "resume-only") {
                "Device reencryption not in progress."
            } else {
                ""
            }));
        }
        Err(e) => return Err(e.into()),
    };
    // A LUKS2 header marked by the legacy (2.0) offline re-encryption: cryptsetup 2.6.1
    // refuses it with these words.
    if luks2(&vol)?
        .requirements()
        .iter()
        .any(|r| r == "offline-reencrypt")
    {
        return Err(CliError::invalid(
            "Legacy LUKS2 reencryption is no longer supported.",
        ));
    }
    let st = reencrypt::status(luks2(&vol)?)?;
    if st != Status::None && has(o, "init-only") && shifted.is_none() {
        return Err(CliError::invalid(
            "LUKS2 reencryption already initialized. Aborting operation.",
        ));
    }
    if st != Status::None && shifted.is_none() {
        check_resume_params(o, luks2(&vol)?)?;
    }
    if st == Status::None && has(o, "resume-only") {
        return Err(CliError::invalid("Device reencryption not in progress."));
    }
    // A decryption not started yet needs --header (cryptsetup 2.6.1's `action_decrypt` asks
    // before it looks for an active mapping): the header goes out to that file, or is there.
    if st == Status::None && has(o, "decrypt") && shifted.is_none() && o.header.is_none() {
        return Err(CliError::invalid(
            "LUKS2 decryption requires --header option.",
        ));
    }
    // `--reduce-device-size` with `--decrypt`: cryptsetup 2.6.1 ignores it where the header
    // moves out to the new FILE (the data moves by the data offset: the same bytes as
    // without it), and fails with these words on a detached header, after it has written
    // the start of a re-encryption that cannot run into the header; lukskit leaves the header
    // and the device as they were.
    if st == Status::None && has(o, "decrypt") && shifted.is_none() && has(o, "reduce-device-size")
    {
        return Err(CliError::invalid(
            "Failed to write reencryption resilience metadata.",
        ));
    }
    // cryptsetup checks whether the device is in use for every run, and for the
    // initialization of a decryption.
    let checks_active = shifted.is_none() && (runs || (st == Status::None && has(o, "decrypt")));
    let data_dev = if vol.detached {
        Some(Device::open(&vol.data_path, Access::Write)?)
    } else {
        None
    };
    let is_block = data_dev.as_ref().unwrap_or(&vol.dev).is_block_device();
    let mut active = o
        .given
        .value("active-name")
        .map(|n| lukskit_activate::mapping_name(n).to_string())
        .or(shift_active);
    // A userspace (FUSE or NBD) mapping serves the device: re-encrypt online through it.
    let live = if runs && !has(o, "force-offline-reencrypt") && active.is_none() {
        super::reencrypt_userspace::active_mapping(&vol.data_path)?
    } else {
        None
    };
    // What cryptsetup says of the device's use once the passphrases are read (see
    // [`ActiveNotice`]); an encryption's new header is not looked at (`encrypt_luks2_init`).
    let mut notice = ActiveNotice::Nothing;
    if checks_active && !has(o, "force-offline-reencrypt") && active.is_none() && live.is_none() {
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
        if st == Status::None && shifted.is_none() && formatted.is_none() && !has(o, "decrypt") {
            sector_increase(
                o,
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
        if live.is_some() && runs && reencrypt_data_shift(o).is_some() {
            return Err(online_shift_unsupported());
        }
        let ctx = InitContext {
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
        if !has(o, "resume-only") {
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
    // `--resilience` at a resume (cryptsetup's reencrypt keyslot update): the rest of the
    // run is protected as asked; a decryption with a moved segment changes the moved
    // segment's protection. A hot zone left by a crash is recovered first, under the
    // protection it was written with (online the run refuses a crashed header anyway).
    if st != Status::None && o.given.has("resilience") {
        if let Some((vol_dev, hdr)) = vol.luks2_edit() {
            let c = reencrypt::Context::load(hdr)?;
            let moved = c.moved_protection.is_some();
            let shifting = matches!(c.resilience, reencrypt::Resilience::Datashift { .. });
            let vk_len = keys
                .old
                .as_ref()
                .or(keys.new.as_ref())
                .map_or(32, |k| k.len());
            let pbkdf = crate::resolve::pbkdf(o);
            if (moved || !shifting)
                && active.is_none()
                && live.is_none()
                && reencrypt::status(hdr)? == Status::Crash
            {
                let data: &dyn Storage = match &data_dev {
                    Some(d) => d,
                    None => vol_dev,
                };
                reencrypt::recover(vol_dev, data, block, hdr, &keys)?;
            }
            let clean = reencrypt::status(hdr)? == Status::Clean;
            if moved && clean {
                let checksum = super::reencrypt_decrypt_shift::checksum_hash(o)?;
                reencrypt::decrypt_shift::update_protection(
                    vol_dev,
                    hdr,
                    checksum,
                    block,
                    &keys,
                    pbkdf.hash()?,
                    pbkdf.digest_iterations(vk_len)?,
                )?;
            } else if !shifting && clean {
                reencrypt::resilience_switch::switch(
                    vol_dev,
                    hdr,
                    &resilience(o)?,
                    block,
                    &keys,
                    pbkdf.hash()?,
                    pbkdf.digest_iterations(vk_len)?,
                )?;
            }
        }
    }
    if !runs {
        // The device is not re-encrypted now: a claim (of a moved first segment) goes, and
        // the mapping below takes its own.
        drop(claim.take());
        // cryptsetup 2.6.1 activates NAME only after an encryption's initialization (other
        // modes ignore it).
        if let Some(name) = activate_name.filter(|_| has(o, "encrypt")) {
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
    let _lock = if o.disable_locks {
        None
    } else {
        Some(reencrypt::ReencryptLock::acquire(&uuid)?)
    };
    if has(o, "force-offline-reencrypt") && !o.batch_mode {
        println!("Resuming LUKS reencryption in forced offline mode.");
    }
    // `--device-size`: only the first SIZE bytes are re-encrypted (checked by the value
    // checks: whole 512-byte sectors).
    let device_size = o
        .device_size
        .as_deref()
        .and_then(crate::args::parse_device_size);
    let max_hotzone = match o.given.value("hotzone-size") {
        Some(v) => crate::args::parse_device_size(v).ok_or_else(|| {
            CliError::invalid("Invalid max reencryption hotzone size specification.")
        })?,
        None => 0,
    };
    let mut progress = Progress::new(o, device);
    catch_interrupts();
    let mut cb = |done: u64, total: u64| {
        progress.update(done, total);
        !interrupted()
    };
    let Some((vol_dev, hdr)) = vol.luks2_edit() else {
        return Err(CliError::invalid("Device is not a valid LUKS2 device."));
    };
    // From here on the metadata lock is held only while metadata is written, as
    // cryptsetup's re-encryption does: `status` and `luksDump` (of either tool) go on
    // meanwhile; the re-encryption lock (`_lock` above) keeps other runs out.
    let locked = lukskit_volume::device::LockedUpdates::new(vol_dev);
    let meta: &dyn Storage = &locked;
    let data: &dyn Storage = match &data_dev {
        Some(d) => d,
        None => vol_dev,
    };
    let direct = data_dev
        .as_ref()
        .unwrap_or(vol_dev)
        .file()
        .and_then(reencrypt::fastio::open_direct);
    let run_opts = reencrypt::RunOptions {
        max_hotzone,
        progress: Some(&mut cb),
        direct: direct.as_ref(),
        device_size,
    };
    let out = match (&active, live) {
        (Some(name), _) => {
            if reencrypt::status(hdr)? == Status::Crash {
                return Err(CliError::invalid(
                    "Cannot proceed with reencryption. Run reencryption recovery first.",
                ));
            }
            let c = reencrypt::Context::load(hdr)?;
            let forward = c.direction == reencrypt::Direction::Forward;
            let mut hook =
                super::reencrypt_online::kernel_hook(name, &uuid, forward, c.data_offset_new())?;
            reencrypt::run_online(meta, data, block, hdr, &keys, run_opts, &mut hook)?
        }
        (None, Some(m)) => {
            if reencrypt::Context::load(hdr)
                .is_ok_and(|c| reencrypt::datashift::is_reencrypt_shift(&c))
            {
                return Err(online_shift_unsupported());
            }
            super::reencrypt_userspace::run(meta, data, block, hdr, &keys, run_opts, m)?
        }
        (None, None) => reencrypt::run(meta, data, block, hdr, &keys, run_opts)?,
    };
    if out == Outcome::Interrupted {
        // Stopped at a safe point: `--resume-only` continues.
        if !progress.json {
            print!("\x1b[2K\r");
            let _ = std::io::stdout().flush();
        }
        return Err(CliError::invalid("\nReencryption interrupted."));
    }
    Ok(())
}

/// A re-encryption that raises the encryption sector size (`new`), which cryptsetup (with
/// blkid) allows only where it can read the file system's block size through the volume's
/// active mapping (`on`, the mapping's device), or with `--force-offline-reencrypt`: a file
/// system whose blocks are smaller than the new sectors would see writes torn differently
/// after a crash (luks2-reencryption-test [31]).
struct SectorIncrease {
    new: u32,
    on: Option<String>,
}

impl SectorIncrease {
    /// cryptsetup's refusal, or `Ok` where the new sector size fits the file system (or none
    /// is found) on the active mapping.
    fn check(&self) -> Result<()> {
        match &self.on {
            None => Err(CliError::invalid(
                "Encryption sector size increase on offline device is not supported.\n\
                 Activate the device first or use --force-offline-reencrypt option (dangerous!).",
            )),
            Some(path) => super::signature::check_sector_size_fits(path, self.new),
        }
    }
}

/// The sector size raise of a new re-encryption of `vol` (`None`: the sector size does not
/// grow, or `--force-offline-reencrypt` bypasses the check), with the device of its active
/// mapping: the one the run goes on under (`active`, `live`), or, for `--init-only` (which
/// cryptsetup runs without a mapping otherwise), the one found for the data device now.
fn sector_increase(
    o: &Opts,
    vol: &Volume,
    device: &str,
    (is_block, runs): (bool, bool),
    active: Option<&str>,
    live: Option<&lukskit_activate::userspace::UserspaceMapping>,
    notice: &mut ActiveNotice,
) -> Result<Option<SectorIncrease>> {
    let old = data_sector_size(luks2(vol)?)?;
    let Some(new) = o.sector_size.filter(|n| *n > old) else {
        return Ok(None);
    };
    if has(o, "force-offline-reencrypt") {
        return Ok(None);
    }
    let mut kernel = active.map(String::from);
    let mut userspace = live.and_then(mapping_device);
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
            userspace = super::reencrypt_userspace::active_mapping(&vol.data_path)?
                .as_ref()
                .and_then(mapping_device);
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
    super::reencrypt_online::detect(data_path, vol.uuid())
}

/// What cryptsetup 2.6.1 says of the device's use (its `get_active_device_name`), which it
/// looks up after the passphrases are read and before anything is written: so that what
/// the user types goes to the prompt it is meant for.
pub(crate) enum ActiveNotice {
    /// Nothing to say.
    Nothing,
    /// "Auto-detected active dm device 'NAME' for data device DEVICE." (not with `-q`).
    Detected { name: String, data_path: String },
    /// DEVICE is no block device: whether it is in use cannot be told; the question whether
    /// to go on offline.
    AskOffline { device: String },
}

impl ActiveNotice {
    /// For a device that is no block device: with `-q` cryptsetup refuses at once (its
    /// `reencrypt_hint_force_offline_reencrypt`, before any passphrase); otherwise it asks
    /// later.
    pub(crate) fn unknown(o: &Opts, device: &str) -> Result<Self> {
        if o.batch_mode {
            return Err(refuse_unknown_use(device));
        }
        Ok(Self::AskOffline {
            device: device.to_string(),
        })
    }

    /// For a mapping found over `vol`'s data device (`device`, or the data device of a
    /// detached header).
    fn detected(name: Option<&str>, vol: &Volume, device: &str) -> Self {
        match name {
            Some(n) => Self::Detected {
                name: n.to_string(),
                data_path: if vol.detached { &vol.data_path } else { device }.to_string(),
            },
            None => Self::Nothing,
        }
    }

    /// Say it (and ask): an error when the user does not answer yes.
    pub(crate) fn say(&self, o: &Opts) -> Result<()> {
        match self {
            Self::Nothing => Ok(()),
            Self::Detected { name, data_path } => {
                if !o.batch_mode {
                    println!(
                        "Auto-detected active dm device '{name}' for data device {data_path}."
                    );
                }
                Ok(())
            }
            Self::AskOffline { device } => ask_offline(device),
        }
    }
}

/// The encryption sector size of the volume's data segment (512 where it has none).
fn data_sector_size(hdr: &lukskit_format::luks2::Luks2Header) -> Result<u32> {
    Ok(hdr
        .segments()?
        .into_iter()
        .find(|s| s.id == 0)
        .map_or(512, |s| s.sector_size))
}

/// cryptsetup's refusal (with `-q`) of a device that is no block device, where it cannot
/// tell whether the device is in use.
pub(crate) fn refuse_unknown_use(device: &str) -> CliError {
    CliError::invalid(format!(
        "Device {device} is not a block device. Can not auto-detect if it is active or \
         not.\nUse --force-offline-reencrypt to bypass the check and run in offline mode \
         (dangerous!)."
    ))
}

/// cryptsetup's question for a device that is no block device (without `-q`): "Device X is
/// not a block device." and a question whose answer is no without a terminal (a run goes
/// on offline on yes).
fn ask_offline(device: &str) -> Result<()> {
    println!("Device {device} is not a block device.");
    let question = format!(
        "Unable to decide if device {device} is activated or not.\nAre you sure you want to \
         proceed with reencryption in offline mode?\nIt may lead to data corruption if the \
         device is actually activated.\nTo run reencryption in online mode, use --active-name \
         parameter instead.\n"
    );
    if input::confirmed_default_no(&question)? {
        return Ok(());
    }
    // Only an answer read from the user is followed by "Operation aborted.".
    Err(if input::interactive() {
        input::aborted()
    } else {
        CliError::invalid("")
    })
}

/// The device a userspace mapping exposes its plaintext as (its `/dev/mapper` link, loop
/// device or FUSE file); `None` for an NBD export.
fn mapping_device(m: &lukskit_activate::userspace::UserspaceMapping) -> Option<String> {
    let st = m.state.as_ref()?;
    st.mapper_link
        .clone()
        .or_else(|| st.loop_device.clone())
        .or_else(|| st.fuse_file.clone())
}

/// Whether paths `a` and `b` name the same file or block device (links followed).
fn same_device(a: &str, b: &str) -> bool {
    use std::os::unix::fs::{FileTypeExt, MetadataExt};
    match (std::fs::metadata(a), std::fs::metadata(b)) {
        (Ok(x), Ok(y)) if x.file_type().is_block_device() && y.file_type().is_block_device() => {
            x.rdev() == y.rdev()
        }
        (Ok(x), Ok(y)) => x.dev() == y.dev() && x.ino() == y.ino(),
        _ => false,
    }
}

/// A re-encryption with a data shift under a live userspace (FUSE or NBD) mapping: lukskit
/// runs it offline or under a kernel mapping only.
fn online_shift_unsupported() -> CliError {
    CliError::invalid(
        "Online re-encryption with a data shift (--reduce-device-size) of a lukskit \
         userspace mapping is not supported; close it first or use --force-offline-reencrypt.",
    )
}

/// A re-encryption with a data shift of `shift` bytes under kernel mapping `name`, of a
/// data area of `data` bytes (`sector`: the larger of the old and new encryption sector
/// sizes): the data left after the shift must hold the whole mapping, in whole sectors,
/// as cryptsetup 2.6.1's `reencrypt_load_by_passphrase` requires (a user shrinks the file
/// system and the mapping first, `resize --size`). cryptsetup checks it after it has
/// written the metadata and leaves the header in re-encryption; lukskit checks it before
/// anything is written, with cryptsetup's words and exit code.
fn check_online_shift_size(name: &str, data: u64, shift: u64, sector: u32) -> Result<()> {
    let mapping = match lukskit_activate::find(name) {
        // (not `status`: it reads the header, whose device this process holds locked)
        Ok(Some(lukskit_activate::Mapping::Kernel(k))) => k.size_sectors() * 512,
        Ok(Some(_)) => return Err(online_shift_unsupported()),
        Ok(None) | Err(_) => {
            return Err(CliError::invalid(format!("Device {name} is not active.")))
        }
    };
    if mapping > data.saturating_sub(shift) || !mapping.is_multiple_of(u64::from(sector)) {
        return Err(CliError::invalid(
            "Illegal device size requested in reencryption parameters.",
        ));
    }
    Ok(())
}

/// What a new re-encryption's initialization works with besides the options and the volume.
struct InitContext<'a> {
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

/// Initialize: unlock the kept keyslots, add a keyslot for the new volume key per
/// passphrase (unbound, as cryptsetup does) and write the re-encryption metadata.
/// `ctx.online`: the kernel mapping the run will go on under, which must match the metadata
/// before it is written (see [`commit_init`]).
fn init(
    o: &Opts,
    vol: &mut Volume,
    ctx: &InitContext,
    formatted: Option<Formatted>,
) -> Result<reencrypt::Keys> {
    let InitContext {
        data_dev,
        block,
        online,
        increase,
        notice,
    } = *ctx;
    let size = data_dev.unwrap_or(&vol.dev).size().map_err(|e| {
        CliError::from(lukskit_volume::VolumeError::device_io(
            lukskit_volume::DeviceOp::GetSize,
            e,
        ))
    })?;
    // A resilience mode cryptsetup does not know fails its initialization, after the
    // passphrases are read (and the keyslots unlocked): checked there, below.
    let resilience = match reencrypt_data_shift(o) {
        Some(shift) => Ok(ResilienceChoice::Datashift(shift)),
        None => resilience(o),
    };
    let pbkdf = crate::resolve::pbkdf(o);
    if let Some(Formatted { pass, shift }) = formatted {
        notice.say(o)?;
        let resilience = resilience?;
        // --encrypt: the new header holds the new key in its keyslot.
        let (_, vk) = vol.unlock(pass.as_bytes(), None, false)?;
        let digest = vol.segment_digest_id()?;
        let hdr = luks2(vol)?;
        let seg = hdr.segments()?.into_iter().find(|s| s.id == 0);
        let params = InitParams {
            mode: Mode::Encrypt,
            resilience,
            cipher: seg
                .as_ref()
                .map_or_else(String::new, |s| s.encryption.clone()),
            sector_size: seg.map_or(512, |s| s.sector_size),
            new_digest: digest,
            digest_iterations: pbkdf.digest_iterations(vk.len())?,
            digest_hash: pbkdf.hash()?,
        };
        let keys = reencrypt::Keys {
            old: None,
            new: Some(vk),
        };
        let Some((vol_dev, h)) = vol.luks2_edit() else {
            unreachable!("checked above")
        };
        if let Some(shift) = shift {
            let p = reencrypt::datashift::EncryptShiftParams {
                shift,
                cipher: params.cipher,
                sector_size: params.sector_size,
                new_digest: params
                    .new_digest
                    .ok_or_else(|| CliError::invalid("No usable keyslot is available."))?,
                digest_iterations: params.digest_iterations,
                digest_hash: params.digest_hash,
            };
            reencrypt::datashift::init_encrypt_detached(vol_dev, size, h, &p, &keys).map_err(
                |e| match e {
                    lukskit_volume::VolumeError::Reencrypt(
                        lukskit_volume::ReencryptError::DeviceAlignment { sector_size },
                    ) => CliError::invalid(format!(
                        "Data device is not aligned to encryption sector size ({sector_size} \
                         bytes)."
                    )),
                    _ => CliError::invalid("Failed to initialize LUKS2 reencryption in metadata."),
                },
            )?;
            return Ok(keys);
        }
        reencrypt::init(vol_dev, size, block, h, &params, &keys)?;
        return Ok(keys);
    }
    // A detached header whose data starts further on (a backup of a header that was in
    // front of the data): cryptsetup 2.6.1's `decrypt_luks2_init` refuses it before asking
    // for the passphrase (luks2-reencryption-test [5]).
    if has(o, "decrypt") && luks2(vol)?.data_offset()? > 0 {
        return Err(CliError::invalid(
            "LUKS2 decryption is supported with detached header device only (with data \
             offset set to 0).",
        ));
    }
    let hdr = luks2(vol)?;
    let seg_digest = vol
        .segment_digest_id()?
        .ok_or_else(|| CliError::invalid("No usable keyslot is available."))?;
    let digests = hdr.digests()?;
    let bound: Vec<u32> = digests
        .iter()
        .find(|d| d.id == seg_digest)
        .map(|d| d.keyslots.clone())
        .unwrap_or_default();
    let slots: Vec<u32> = match o.key_slot {
        Some(s) => {
            if !bound.contains(&s) {
                return Err(CliError::invalid(format!("Keyslot {s} is not active.")));
            }
            vec![s]
        }
        None => bound,
    };
    if slots.is_empty() {
        return Err(CliError::invalid("No usable keyslot is available."));
    }
    let src = existing_key_source(o, None);
    if has(o, "decrypt") {
        // cryptsetup's `decrypt_luks2_init`: one passphrase, of any keyslot (or --key-slot).
        let prompt = format!("Enter passphrase for {}: ", vol.data_path);
        let (_, old_vk, _pass) =
            super::keys::unlock_with_tries(vol, o, &src, &prompt, o.key_slot, false)?;
        notice.say(o)?;
        let params = InitParams {
            mode: Mode::Decrypt,
            resilience: resilience.map_err(init_failed)?,
            cipher: String::new(),
            sector_size: 512,
            new_digest: None,
            digest_iterations: pbkdf.digest_iterations(old_vk.len())?,
            digest_hash: pbkdf.hash()?,
        };
        let keys = reencrypt::Keys {
            old: Some(old_vk),
            new: None,
        };
        commit_init(vol, (size, block), &params, &keys, online)?;
        return Ok(keys);
    }
    if slots.len() > 1 && !matches!(src, input::KeySource::Prompt) {
        return Err(CliError::invalid(
            "Key file can be used only with --key-slot or with exactly one key slot active.",
        ));
    }
    let old_cipher = vol.cipher_spec()?;
    let old_key_len = vol.volume_key_size()?;
    let old_ss = data_sector_size(hdr)?;
    // A volume without encryption (cipher_null, e.g. converted from LUKS1) is not kept so by
    // default: cryptsetup switches it to its default cipher and key size, and says so.
    let switch_null = o.cipher.is_none() && old_cipher.starts_with("cipher_null");
    let cipher = match &o.cipher {
        Some(c) => c.clone(),
        None if switch_null => {
            println!("Switching data encryption cipher to {DEFAULT_CIPHER}.");
            DEFAULT_CIPHER.to_string()
        }
        None => old_cipher.clone(),
    };
    let spec = CipherSpec::parse(&cipher)?;
    let key_len = match o.key_size {
        Some(bits) => (bits / 8) as usize,
        None if o.cipher.is_none() && !switch_null => old_key_len,
        None => (lukskit_volume::format::default_key_bits(&spec) / 8) as usize,
    };
    let sector_size = o.sector_size.unwrap_or(old_ss);
    // A data shift must be whole sectors of both layouts; checked (as by the library)
    // before any keyslot is added, so that nothing is written when it is not.
    if let Ok(ResilienceChoice::Datashift(shift)) = resilience {
        let sector = old_ss.max(sector_size);
        if !shift.is_multiple_of(u64::from(sector)) {
            let e = CliError::from(lukskit_volume::VolumeError::from(
                lukskit_volume::ReencryptError::ShiftAlignment {
                    sector_size: sector,
                },
            ));
            // cryptsetup's reason, then its failure of the initialization.
            return Err(init_failed(e));
        }
    }
    if let (Ok(ResilienceChoice::Datashift(shift)), Some(name)) = (&resilience, online) {
        let seg0 = hdr.segments()?.into_iter().find(|s| s.id == 0);
        let data = seg0.map_or(0, |s| s.size.unwrap_or(size.saturating_sub(s.offset)));
        check_online_shift_size(name, data, *shift, old_ss.max(sector_size))?;
    }
    // `--keep-key` (cryptsetup 2.6.1 takes it for LUKS2 too): the volume key stays, so
    // something else of the data segment must change. As cryptsetup: a `--key-size` or a
    // new cipher's default key size that differs from the kept key's counts as a change,
    // but the key kept (and so its size) is the old one; no keyslot is added, the new
    // segment is bound to the old key's digest, and the new cipher must take that key.
    // `--volume-key-file` (cryptsetup 2.6.1's `reencrypt_luks2_init`, read before any
    // passphrase is asked): the new volume key is the file's first key-size bytes; a file
    // that holds the current volume key changes no key, as `--keep-key`.
    let mut keep_key = o.keep_key;
    let mut file_vk = None;
    if let (Some(f), false) = (&o.volume_key_file, o.keep_key) {
        let vk = super::volume_key::read_volume_key_file(f, key_len)?;
        if vol.verify_volume_key(vk.as_bytes()).is_ok() {
            keep_key = true;
        } else {
            file_vk = Some(vk);
        }
    }
    if keep_key {
        let same_cipher = cipher.eq_ignore_ascii_case(&old_cipher);
        if same_cipher && key_len == old_key_len && sector_size == old_ss {
            return Err(CliError::invalid(
                "No data segment parameters changed. Reencryption aborted.",
            ));
        }
        return keep_key_init(
            o,
            vol,
            size,
            ctx,
            resilience,
            &slots,
            &src,
            &cipher,
            sector_size,
        );
    }
    let mut old_vk: Option<SecretBuf> = None;
    let mut passes = Vec::new();
    for &slot in &slots {
        let prompt = format!("Enter passphrase for key slot {slot}: ");
        let (_, vk, pass) =
            super::keys::unlock_with_tries(vol, o, &src, &prompt, Some(slot), false)?;
        old_vk = Some(vk);
        passes.push(pass);
    }
    let old_vk = old_vk.ok_or_else(CliError::wrong_passphrase)?;
    notice.say(o)?;
    let resilience = resilience.map_err(init_failed)?;
    let new_vk = match file_vk {
        Some(vk) => vk,
        None => SecretBuf::random(key_len)
            .map_err(|e| CliError::from(lukskit_volume::VolumeError::from(e)))?,
    };
    lukskit_crypto::engine::SectorCipher::check(&spec, key_len, sector_size)?;
    let mut new_slots = Vec::new();
    let added = add_new_keyslots(o, vol, &new_vk, &passes, &slots, &mut new_slots);
    let r = added.and_then(|new_digest| {
        if let Some(i) = increase {
            i.check()?;
        }
        let keys = reencrypt::Keys {
            old: Some(old_vk),
            new: Some(new_vk),
        };
        let p = (cipher, sector_size, key_len, resilience);
        reencrypt_init(
            o, vol, data_dev, block, &slots, new_digest, p, &keys, online,
        )?;
        Ok(keys)
    });
    if r.is_err() {
        // As cryptsetup's `reencrypt_luks2_init` when the initialization fails (nothing of
        // it was written): the keyslots just added for the new volume key go again.
        for slot in new_slots.into_iter().rev() {
            let _ = vol.kill_keyslot(slot);
        }
    }
    r
}

/// One unbound keyslot for the new volume key per unlocked old keyslot (`slots`, with their
/// `passes`), all under one digest; the keyslots made are pushed to `made`. Returns the
/// new key's digest.
fn add_new_keyslots(
    o: &Opts,
    vol: &mut Volume,
    new_vk: &SecretBuf,
    passes: &[SecretBuf],
    slots: &[u32],
    made: &mut Vec<u32>,
) -> Result<Option<u32>> {
    let mut new_digest = None;
    for (pass, &old_slot) in passes.iter().zip(slots) {
        let like_old = new_keyslot_pbkdf(o, vol, old_slot)?;
        let slot = vol.add_keyslot(new_vk, pass.as_bytes(), None, &like_old, true)?;
        made.push(slot);
        let Some(h) = vol.luks2_mut() else {
            unreachable!("checked by the caller")
        };
        let d = lukskit_format::luks2::edit::digest_of_keyslot(h, slot)?;
        match new_digest {
            None => new_digest = d,
            Some(first) => {
                // One digest for the new key: move the keyslot to the first one.
                lukskit_format::luks2::edit::move_keyslot_digest(h, slot, first)?;
            }
        }
    }
    Ok(new_digest)
}

/// The re-encryption metadata of a new volume key whose keyslots exist (digest
/// `new_digest`); `(cipher, sector size, key length, resilience)` of the new layout.
#[allow(clippy::too_many_arguments)]
fn reencrypt_init(
    o: &Opts,
    vol: &mut Volume,
    data_dev: Option<&Device>,
    block: u64,
    slots: &[u32],
    new_digest: Option<u32>,
    (cipher, sector_size, key_len, resilience): (String, u32, usize, ResilienceChoice),
    keys: &reencrypt::Keys,
    online: Option<&str>,
) -> Result<()> {
    let size = data_dev.unwrap_or(&vol.dev).size().map_err(|e| {
        CliError::from(lukskit_volume::VolumeError::device_io(
            lukskit_volume::DeviceOp::GetSize,
            e,
        ))
    })?;
    // cryptsetup makes the metadata digest with the PBKDF of the new keyslots.
    let digest_pbkdf = new_keyslot_pbkdf(o, vol, slots[0])?;
    let params = InitParams {
        mode: Mode::Reencrypt,
        resilience,
        cipher,
        sector_size,
        new_digest,
        digest_iterations: digest_pbkdf.digest_iterations(key_len)?,
        digest_hash: digest_pbkdf.hash()?,
    };
    commit_init(vol, (size, block), &params, keys, online)
}

/// `reencrypt --keep-key` of a LUKS2 volume with a new cipher, key size or sector size
/// (cryptsetup 2.6.1's `reencrypt_luks2_init` with the volume key unchanged): one keyslot is
/// unlocked, no keyslot is added, and the new segment (`backup-final`) is bound to the digest
/// of the kept key, the same digest as the old segment. The key keeps its size, so a
/// `--key-size` other than the kept key's changes nothing of the key; the new cipher must
/// take a key of that size.
#[allow(clippy::too_many_arguments)]
fn keep_key_init(
    o: &Opts,
    vol: &mut Volume,
    size: u64,
    ctx: &InitContext,
    resilience: Result<ResilienceChoice>,
    slots: &[u32],
    src: &input::KeySource,
    cipher: &str,
    sector_size: u32,
) -> Result<reencrypt::Keys> {
    let (block, online) = (ctx.block, ctx.online);
    let slot = slots[0];
    let prompt = format!("Enter passphrase for key slot {slot}: ");
    let (_, vk, _pass) = super::keys::unlock_with_tries(vol, o, src, &prompt, Some(slot), false)?;
    ctx.notice.say(o)?;
    if let Some(i) = ctx.increase {
        i.check()?;
    }
    let resilience = resilience.map_err(init_failed)?;
    let spec = CipherSpec::parse(cipher)?;
    lukskit_crypto::engine::SectorCipher::check(&spec, vk.len(), sector_size).map_err(|_| {
        CliError::invalid(format!(
            "Unable to use cipher specification {cipher} for LUKS2."
        ))
    })?;
    let digest = vol
        .segment_digest_id()?
        .ok_or_else(|| CliError::invalid("No usable keyslot is available."))?;
    // No keyslot is made, so (as in cryptsetup, whose PBKDF options reach the context only
    // through the new keyslots' parameters) the metadata digest gets the default PBKDF:
    // iterations benchmarked, never the forced ones.
    let digest_pbkdf = lukskit_volume::pbkdf::PbkdfRequest {
        force_iterations: None,
        hash: None,
        ..crate::resolve::pbkdf(o)
    };
    let params = InitParams {
        mode: Mode::Reencrypt,
        resilience,
        cipher: cipher.to_string(),
        sector_size,
        new_digest: Some(digest),
        digest_iterations: digest_pbkdf.digest_iterations(vk.len())?,
        digest_hash: digest_pbkdf.hash()?,
    };
    let keys = reencrypt::Keys {
        old: Some(vk.clone()),
        new: Some(vk),
    };
    commit_init(vol, (size, block), &params, &keys, online)?;
    Ok(keys)
}

/// Write the re-encryption metadata (`params`, `keys`) of a re-encryption or decryption,
/// `(data size, data block size)`: when the run goes on under kernel mapping `online`,
/// that mapping must first match the metadata about to be written, as cryptsetup 2.6.1's
/// `reencrypt_init` checks it (`crypt_compare_dm_devices`: the mapping `NAME2` of
/// luks2-reencryption-test [4], whose key description names an old digest). Otherwise
/// nothing is written: "Mismatching parameters on device NAME." and, as after any failure
/// of the initialization, "Failed to initialize LUKS2 reencryption in metadata.", as
/// cryptsetup.
fn commit_init(
    vol: &mut Volume,
    (size, block): (u64, u64),
    params: &InitParams,
    keys: &reencrypt::Keys,
    online: Option<&str>,
) -> Result<()> {
    let uuid = vol.uuid().to_string();
    let failed = std::cell::RefCell::new(None);
    let mut check = |h: &lukskit_format::luks2::Luks2Header,
                     k: &reencrypt::Keys|
     -> lukskit_volume::Result<()> {
        let Some(name) = online else {
            return Ok(());
        };
        super::reencrypt_online::check_before_init(name, &uuid, h, k, size).map_err(|e| {
            let m = e.message.clone();
            *failed.borrow_mut() = Some(e);
            lukskit_volume::ReencryptError::Online(m).into()
        })
    };
    let Some((vol_dev, h)) = vol.luks2_edit() else {
        return Err(CliError::invalid("Device is not a valid LUKS2 device."));
    };
    let r = reencrypt::init_checked(vol_dev, size, block, h, params, keys, &mut check);
    let e = match r {
        Ok(_) => return Ok(()),
        Err(
            e @ lukskit_volume::VolumeError::Reencrypt(
                lukskit_volume::ReencryptError::AlreadyInitialized,
            ),
        ) => return Err(e.into()),
        Err(e) => failed.into_inner().unwrap_or_else(|| e.into()),
    };
    // cryptsetup's words after any failure of its `reencrypt_init`.
    Err(init_failed(e))
}

/// Whether `repair <device>` must recover an interrupted re-encryption hot zone (as
/// cryptsetup's `repair` does) rather than repair the header.
pub fn repair_needs_recovery(o: &Opts, args: &[String]) -> bool {
    let Some(device) = args.first() else {
        return false;
    };
    let Ok(vol) = Volume::load(device, o.header.as_deref(), Access::Read) else {
        return false;
    };
    match vol.header() {
        Header::Luks2(h) => reencrypt::status(h).ok() == Some(Status::Crash),
        Header::Luks1(_) => false,
    }
}

/// `repair <device>` of a header with an interrupted hot zone: unlock, take the
/// re-encryption lock and recover the hot zone (cryptsetup's
/// `LUKS2_reencrypt_locked_recovery_by_passphrase`; the recovery of the last hot zone also
/// finishes the re-encryption).
pub fn repair(o: &Opts, args: &[String]) -> Result<()> {
    need_args(args, 1, 1, "<device>")?;
    let device = &args[0];
    input::confirm(
        "Really proceed with LUKS2 reencryption recovery?",
        o.batch_mode,
    )?;
    let mut vol = super::load_volume(o, device, Access::Write)?;
    let data_dev = if vol.detached {
        Some(Device::open(&vol.data_path, Access::Write)?)
    } else {
        None
    };
    let block = reencrypt::device_block_size(data_dev.as_ref().unwrap_or(&vol.dev).file());
    let src = existing_key_source(o, None);
    let prompt = format!("Enter passphrase for {device}: ");
    let pass = input::get_secret(&src, &prompt, false)?;
    let keys = reencrypt::unlock_keys(&vol.dev, luks2(&vol)?, pass.as_bytes(), o.key_slot)?;
    let uuid = vol.uuid().to_string();
    let _lock = if o.disable_locks {
        None
    } else {
        Some(reencrypt::ReencryptLock::acquire(&uuid)?)
    };
    let Some((vol_dev, hdr)) = vol.luks2_edit() else {
        return Err(CliError::invalid("Device is not a valid LUKS2 device."));
    };
    let data: &dyn Storage = match &data_dev {
        Some(d) => d,
        None => vol_dev,
    };
    reencrypt::recover(vol_dev, data, block, hdr, &keys)?;
    Ok(())
}

/// `--encrypt`, `--decrypt` and `--resilience` when resuming (cryptsetup's
/// `reencrypt_verify_and_update_params`): the mode must be the one in progress; a data shift
/// cannot change to anything else, nor anything else to a data shift; a decryption with a
/// data shift (`datashift-checksum`/`-journal`) takes `checksum`/`journal` or those, nothing
/// else.
fn check_resume_params(o: &Opts, hdr: &lukskit_format::luks2::Luks2Header) -> Result<()> {
    let Ok(c) = reencrypt::Context::load(hdr) else {
        return Ok(());
    };
    if has(o, "encrypt") && c.mode != Mode::Encrypt {
        return Err(CliError::invalid(
            "Device is not in LUKS2 encryption. Conflicting option --encrypt.",
        ));
    }
    if has(o, "decrypt") && c.mode != Mode::Decrypt {
        return Err(CliError::invalid(
            "Device is not in LUKS2 decryption. Conflicting option --decrypt.",
        ));
    }
    let Some(want) = o.given.value("resilience") else {
        return Ok(());
    };
    let shifting = matches!(c.resilience, reencrypt::Resilience::Datashift { .. });
    // `datashift` alone, or `datashift-checksum`/`-journal` (a decryption moving the data).
    let plain_shift = shifting && c.moved_protection.is_none();
    let cannot = || {
        Err(CliError::invalid(
            "Requested --resilience option cannot be applied to current reencryption \
             operation.",
        ))
    };
    if plain_shift && want != "datashift" {
        return Err(CliError::invalid(
            "Device is in reencryption using datashift resilience. Requested --resilience \
             option cannot be applied.",
        ));
    }
    if !plain_shift && want == "datashift" {
        return cannot();
    }
    if shifting && !plain_shift {
        // The moved segment's protection may change (`decrypt_verify_and_set_params`):
        // `checksum`/`journal` or their datashift- names, with a known hash.
        return super::reencrypt_decrypt_shift::checksum_hash(o).map(|_| ());
    }
    if want.starts_with("datashift-") {
        return cannot();
    }
    Ok(())
}

/// The data shift of a re-encryption with `--reduce-device-size` (not `--encrypt`, whose
/// shift comes with its new header): cryptsetup's `reencrypt_luks2_init` then shifts the
/// data by the whole size, backward, with resilience `datashift` whatever `--resilience`
/// says (a size of 0 is no shift).
fn reencrypt_data_shift(o: &Opts) -> Option<u64> {
    if has(o, "encrypt") {
        return None;
    }
    o.given
        .value("reduce-device-size")
        .and_then(crate::args::parse_device_size)
        .filter(|s| *s != 0)
}

/// A failure of the re-encryption's initialization in cryptsetup's words: the reason, then
/// "Failed to initialize LUKS2 reencryption in metadata." (once).
fn init_failed(e: CliError) -> CliError {
    const FAILED: &str = "Failed to initialize LUKS2 reencryption in metadata.";
    if e.message.ends_with(FAILED) {
        return e;
    }
    if e.message.is_empty() {
        return CliError::new(e.class, FAILED);
    }
    CliError::new(e.class, format!("{}\n{FAILED}", e.message))
}

fn resilience(o: &Opts) -> Result<ResilienceChoice> {
    Ok(match o.given.value("resilience").unwrap_or("checksum") {
        "checksum" => {
            ResilienceChoice::Checksum(o.given.value("resilience-hash").unwrap_or("sha256").into())
        }
        "journal" => ResilienceChoice::Journal,
        "none" => ResilienceChoice::None,
        // Only an encryption with --reduce-device-size shifts data (`reencrypt_shift`);
        // cryptsetup's initialization refuses it everywhere else.
        "datashift" => {
            return Err(CliError::invalid(
                "Failed to initialize LUKS2 reencryption in metadata.",
            ))
        }
        other => {
            return Err(CliError::invalid(format!(
                "Unsupported resilience mode {other}"
            )))
        }
    })
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
fn format_for_encrypt(o: &Opts, device: &str) -> Result<Formatted> {
    let Some(header) = o.header.clone() else {
        return Err(CliError::invalid(
            "Encryption without detached header (--header) is not possible without data \
             device size reduction (--reduce-device-size).",
        ));
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
        super::reencrypt_shift::check_resilience(o)?;
        let s = crate::args::parse_device_size(v)
            .filter(|s| *s != 0)
            .ok_or_else(|| {
                CliError::invalid("Invalid size specification in parameter --reduce-device-size.")
            })?;
        let md = parse(&o.luks2_metadata_size, "metadata size")?.unwrap_or(0x4000);
        let given = parse(&o.luks2_keyslots_size, "keyslots size")?;
        if 2 * md + given.unwrap_or(s.saturating_sub(2 * md)) > s {
            return Err(CliError::invalid(
                "LUKS2 metadata size is larger than data shift value.",
            ));
        }
        // Without --luks2-keyslots-size the keyslots area fills the space up to the data
        // offset (or the shift, when that is larger), at most 128 MiB, as cryptsetup's.
        let off = o.offset.unwrap_or(0).saturating_mul(512);
        let ks = given.unwrap_or_else(|| off.max(s).saturating_sub(2 * md).min(128 << 20));
        shift = Some(s);
        metadata_size = Some(md);
        keyslots_size = Some(ks);
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

/// Whether `repair <device>` must protect unprotected re-encryption metadata (cryptsetup's
/// `CRYPT_REENCRYPT_REPAIR_NEEDED`: the old `online-reencrypt` requirement, or no metadata
/// digest); checked before the hot-zone recovery, as cryptsetup does.
pub fn repair_needs_metadata_upgrade(o: &Opts, args: &[String]) -> bool {
    let Some(device) = args.first() else {
        return false;
    };
    let Ok(vol) = Volume::load(device, o.header.as_deref(), Access::Read) else {
        return false;
    };
    match vol.header() {
        Header::Luks2(h) => reencrypt::metadata_repair_needed(h).unwrap_or(false),
        Header::Luks1(_) => false,
    }
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
    let keys = reencrypt::unlock_keys(&vol.dev, luks2(&vol)?, pass.as_bytes(), o.key_slot)?;
    let key_len = keys
        .new
        .as_ref()
        .or(keys.old.as_ref())
        .map_or(32, |k| k.len());
    let pbkdf = crate::resolve::pbkdf(o);
    let (hash, iterations) = (pbkdf.hash()?, pbkdf.digest_iterations(key_len)?);
    let Some((vol_dev, hdr)) = vol.luks2_edit() else {
        return Err(CliError::invalid("Device is not a valid LUKS2 device."));
    };
    reencrypt::upgrade_metadata(vol_dev, hdr, &keys, hash, iterations)?;
    reencrypt::verify_metadata(hdr, &keys)?;
    Ok(())
}

/// After `repair` found the header sound: a re-encryption in progress has its metadata
/// digest checked with the passphrase (cryptsetup's `luks2_reencrypt_repair` in state
/// `CRYPT_REENCRYPT_CLEAN`): mangled metadata fails with "Reencryption metadata is invalid."
/// (exit 2).
pub fn repair_verify_clean(o: &Opts, vol: &Volume) -> Result<()> {
    let Some(hdr) = vol.luks2() else {
        return Ok(());
    };
    if reencrypt::status(hdr).ok() != Some(Status::Clean) {
        return Ok(());
    }
    let src = existing_key_source(o, None);
    let pass = input::get_secret(
        &src,
        "Enter passphrase to verify reencryption metadata digest: ",
        false,
    )?;
    let keys = reencrypt::unlock_keys(&vol.dev, hdr, pass.as_bytes(), o.key_slot)?;
    reencrypt::verify_metadata(hdr, &keys).map_err(|e| {
        let e = errors::volume(&e);
        CliError::permission(e.message)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::errors::ExitClass;

    const FAILED: &str = "Failed to initialize LUKS2 reencryption in metadata.";

    #[test]
    fn init_failure_follows_its_reason_once() {
        let e = init_failed(CliError::new(
            ExitClass::Invalid,
            "Unsupported resilience mode x",
        ));
        assert_eq!(
            e.message,
            format!("Unsupported resilience mode x\n{FAILED}")
        );
        assert_eq!(
            init_failed(e).message,
            format!("Unsupported resilience mode x\n{FAILED}")
        );
    }

    #[test]
    fn init_failure_without_a_reason_is_one_line() {
        let e = init_failed(CliError::new(ExitClass::Invalid, ""));
        assert_eq!(e.message, FAILED);
    }
}
