//! `image encrypt` / `image decrypt`: offline conversion between a plaintext file and a
//! LUKS1, LUKS2 or plain-mode image (what `qemu-img convert` with its LUKS driver and luksy
//! do), streamed through the sector engine on all cores.
//!
//! * `image encrypt [luksFormat options | --type plain + plain options] PLAIN IMAGE` formats
//!   IMAGE (created when missing) and writes the plaintext into its data area. The plaintext
//!   is zero-padded to a whole encryption sector.
//! * `image decrypt [unlock options] IMAGE PLAIN` writes the whole data area out; blocks of
//!   zeros become holes in a regular output file.
//!
//! `-` as PLAIN means standard input / standard output.

use super::need_args;
use super::plain_key::plain_key;
use crate::args::Opts;
use crate::errors::{self, CliError, Result};
use crate::input::{self, KeySource};
use lukskit_crypto::SecretBuf;
use lukskit_format::VolumeType;
use lukskit_volume::claim::{Claim, ClaimError};
use lukskit_volume::data::{DataLayout, DataVolume, Threads};
use lukskit_volume::device::same_device;
use lukskit_volume::device::Access;
use lukskit_volume::format;
use lukskit_volume::image::files::{decrypt_to_path, write_image_data, ImageData};
use lukskit_volume::image::pipeline::{decrypt_stream, Sink};
use lukskit_volume::image::staging::{has_content, PendingImage};
use lukskit_volume::image::ImageError;
use lukskit_volume::Volume;
use std::fs::File;
use std::io::{IsTerminal, Write};
use std::path::Path;
use std::time::{Duration, Instant};

/// `image encrypt|decrypt …`.
pub fn image(o: &Opts, args: &[String]) -> Result<()> {
    match args.first().map(String::as_str) {
        Some("encrypt") => encrypt(o, &args[1..]),
        Some("decrypt") => decrypt(o, &args[1..]),
        _ => Err(CliError::invalid(
            "Command requires encrypt <plaintext> <image> or decrypt <image> <plaintext> as argument.",
        )),
    }
}

/// What `--type` asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Luks(Option<VolumeType>),
    Plain,
}

fn kind(o: &Opts) -> Result<Kind> {
    Ok(match o.r#type.as_deref() {
        None | Some("luks") => Kind::Luks(None),
        Some("luks2") => Kind::Luks(Some(VolumeType::Luks2)),
        Some("luks1") => Kind::Luks(Some(VolumeType::Luks1)),
        Some("plain") => Kind::Plain,
        Some(t) => {
            return Err(CliError::invalid(format!(
                "Unknown or unsupported device type {t} for image (luks, luks1, luks2, plain; \
                 tcrypt, bitlk, fvault2, loopaes for image decrypt)."
            )))
        }
    })
}

fn threads(o: &Opts) -> Threads {
    match o.threads {
        None | Some(0) => Threads::All,
        Some(n) => Threads::Fixed(n),
    }
}

/// A source of plaintext: a file (size known) or standard input.
enum Source {
    File(File, u64),
    Stdin,
}

fn open_source(path: &str) -> Result<Source> {
    if path == "-" {
        return Ok(Source::Stdin);
    }
    let f = File::open(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound | std::io::ErrorKind::PermissionDenied => {
            CliError::device(format!("Cannot open {path}: {e}."))
        }
        _ => CliError::io("Opening", path, &e),
    })?;
    let md = f
        .metadata()
        .map_err(|e| CliError::io("Reading", path, &e))?;
    if md.is_dir() {
        return Err(CliError::device(format!("{path} is a directory.")));
    }
    let size =
        lukskit_format::io::Storage::size(&f).map_err(|e| CliError::io("Reading", path, &e))?;
    Ok(Source::File(f, size))
}

/// Claim those of `paths` that exist for exclusive use (luksFormat's rule and message).
fn claim_existing(paths: &[Option<&str>]) -> Result<Vec<Claim>> {
    paths
        .iter()
        .flatten()
        .filter(|p| Path::new(p).exists())
        .map(|p| {
            Claim::acquire(p).map_err(|e| match e {
                ClaimError::InUse => {
                    CliError::invalid(format!("Cannot exclusively open {p}, device in use."))
                }
                ClaimError::Io(e) => CliError::io("Opening", p, &e),
                other => CliError::invalid(format!("Cannot exclusively open {p}: {other}.")),
            })
        })
        .collect()
}

/// The command line's error for a failure of the image pipeline (the same words; a file
/// that cannot be made is a device error).
fn image_error(e: ImageError) -> CliError {
    match e {
        ImageError::Volume(e) => CliError::from(e),
        ImageError::Io { op, path, source } => CliError::io(op, &path, &source),
        e @ (ImageError::Create { .. }
        | ImageError::NotAFileName { .. }
        | ImageError::DeviceTooSmall { .. }) => CliError::device(e.to_string()),
        e => CliError::invalid(e.to_string()),
    }
}

/// Stop here when SIGINT or SIGTERM arrived.
fn check_interrupt() -> Result<()> {
    if crate::interrupt::interrupted() {
        return Err(image_error(ImageError::Interrupted));
    }
    Ok(())
}

/// `image encrypt PLAIN IMAGE`.
fn encrypt(o: &Opts, args: &[String]) -> Result<()> {
    need_args(args, 2, 2, "<plaintext> <image>")?;
    let (src_path, image) = (&args[0], &args[1]);
    if let Some(t) = super::open::other_format(o) {
        return Err(CliError::invalid(format!(
            "image encrypt makes LUKS and plain images; {} volumes are opened and decrypted, \
             not made.",
            t.name()
        )));
    }
    let kind = kind(o)?;
    if src_path != "-" && same_device(src_path, image) {
        return Err(CliError::invalid(
            "The plaintext and the image must be different files.",
        ));
    }
    let source = open_source(src_path)?;
    let plain_len = match &source {
        Source::File(_, n) => Some(*n),
        Source::Stdin => None,
    };
    if kind == Kind::Plain {
        if o.header.is_some() {
            return Err(CliError::invalid(
                "Option --header is not allowed with plain mode.",
            ));
        }
    } else if o.skip.is_some() || o.iv_large_sectors || o.size.is_some() {
        return Err(CliError::invalid(
            "Options --skip, --size and --iv-large-sectors are supported only with --type plain.",
        ));
    }
    if src_path == "-"
        && o.volume_key_file.is_none()
        && (o.key_file.as_deref().is_none_or(|k| k == "-") && !input::interactive())
    {
        return Err(CliError::invalid(
            "The plaintext comes from standard input: give the passphrase with --key-file.",
        ));
    }
    let target = o.header.as_deref().unwrap_or(image);
    // An image (or header) that is open or mounted is neither truncated nor formatted: claimed
    // before anything is asked, and held until the data is written.
    let mut claims = claim_existing(&[Some(image.as_str()), o.header.as_deref()])?;
    if has_content(image) || o.header.as_deref().is_some_and(has_content) {
        input::confirm(
            &format!("This will overwrite data on {target} irrevocably."),
            o.batch_mode,
        )?;
    }
    let verify = o.verify_passphrase || !o.batch_mode;
    let prompt = format!("Enter passphrase for {target}: ");
    // Nothing is written under the image's (or header's) name until everything is (issue 35
    // item 3): a new file beside it, renamed at the end; a block device's header hidden.
    let mut pending = PendingImage::default();

    // Format (or, for plain mode, just lay out) the image and get the volume key.
    let (layout, key) = match kind {
        Kind::Plain => {
            let p = crate::resolve::plain(o, false)?;
            let key = plain_key(o, &p, &prompt, verify)?;
            crate::interrupt::catch_interrupts();
            pending.stage(image, None).map_err(image_error)?;
            if claims.is_empty() {
                claims = claim_existing(&[Some(pending.image())])?;
            }
            (p.layout()?, key)
        }
        Kind::Luks(t) => {
            let cipher = crate::resolve::data_cipher(o, false)?;
            let key_bits = super::volume_key::luks_key_bits(o.key_size)
                .unwrap_or_else(|| cipher.default_key_bits());
            if key_bits == 0 || !key_bits.is_multiple_of(8) {
                return Err(CliError::invalid(
                    "Key size in bits must be a multiple of 8 bits",
                ));
            }
            let vk = match &o.volume_key_file {
                Some(p) => super::volume_key::read_volume_key_file(p, (key_bits / 8) as usize)?,
                None => SecretBuf::random((key_bits / 8) as usize)?,
            };
            let mut params = crate::resolve::format(
                o,
                crate::resolve::NewHeader {
                    kind: t.unwrap_or(VolumeType::Luks2),
                    device: image.clone(),
                    cipher,
                    key_size_bits: Some(key_bits),
                    offset_sectors: o.offset,
                    alignment_sectors: None,
                    volume_key: Some(vk.clone()),
                    integrity: None,
                },
            )?;
            let src = match &o.key_file {
                Some(p) => KeySource::File {
                    path: p.clone(),
                    offset: o.keyfile_offset.unwrap_or(0),
                    size: o.keyfile_size,
                },
                None => KeySource::Prompt,
            };
            let pass = input::get_secret(&src, &prompt, verify)?;
            crate::interrupt::catch_interrupts();
            pending
                .stage(image, o.header.as_deref())
                .map_err(image_error)?;
            params.device = pending.image().to_string();
            params.header = pending.header().map(str::to_string);
            if claims.is_empty() {
                claims = format::claim_devices(&params)?;
            }
            super::luks1_pbkdf_fallback(&mut params);
            format::format_claimed(&params, &claims, pass.as_bytes())?;
            // The layout is read while the header can be read; then a header on a block
            // device is hidden until the data behind it is complete.
            let layout = DataLayout::from_volume(&Volume::load(
                pending.image(),
                pending.header(),
                Access::Read,
            )?)?;
            pending.hide_header().map_err(image_error)?;
            (layout, vk)
        }
    };

    super::image_engine::choose(o, &layout.cipher, key.len(), layout.sector_size)?;
    let mut progress = Progress::new(plain_len, "Encrypting");
    let (input, name): (Box<dyn std::io::Read + Send>, &str) = match source {
        Source::File(f, _) => (Box::new(f), "plaintext"),
        Source::Stdin => (Box::new(std::io::stdin()), "standard input"),
    };
    let staged = pending.image().to_string();
    let written = write_image_data(
        ImageData {
            path: &staged,
            name: image,
            layout,
            key: key.as_bytes(),
            plain_len,
            workers: workers(o),
        },
        input,
        name,
        crate::interrupt::interrupted,
        &mut |n| progress.add(n),
    )
    .map_err(image_error)?;
    drop(key);
    progress.finish();
    check_interrupt()?;
    // Complete and durable: now under its name (header shown, files renamed into place).
    pending.commit().map_err(image_error)?;
    // The image is complete and durable: others may use it now.
    drop(claims);
    if o.verbose {
        println!(
            "Encrypted {written} bytes into {image} ({}).",
            match kind {
                Kind::Plain => "plain".to_string(),
                Kind::Luks(_) => {
                    let vol = Volume::load(image, o.header.as_deref(), Access::Read)?;
                    vol.type_name().to_string()
                }
            }
        );
    }
    Ok(())
}

/// Number of engine workers for `--threads` (0 or absent = all cores).
fn workers(o: &Opts) -> usize {
    match threads(o) {
        Threads::Fixed(n) => n.max(1),
        Threads::All => std::thread::available_parallelism().map_or(1, |n| n.get()),
    }
}

/// Ask for the LUKS passphrase (with `--tries` on a terminal) until a keyslot opens.
fn unlock_luks(vol: &Volume, o: &Opts, device: &str) -> Result<SecretBuf> {
    if let Some(p) = &o.volume_key_file {
        let vk = super::volume_key::read_volume_key_file(p, vol.volume_key_size()?)?;
        vol.verify_volume_key(vk.as_bytes())?;
        return Ok(vk);
    }
    let src = super::existing_key_source(o, None);
    let n = super::tries(o, &src);
    let prompt = format!("Enter passphrase for {device}: ");
    for attempt in 0..n {
        let pass = input::get_secret(&src, &prompt, false)?;
        match vol.unlock(pass.as_bytes(), o.key_slot, false) {
            Ok((slot, vk)) => {
                if o.verbose {
                    println!("Key slot {slot} unlocked.");
                }
                return Ok(vk);
            }
            Err(e) if errors::is_wrong_passphrase(&e) && attempt + 1 < n => {
                eprintln!("{}", errors::volume(&e).message);
            }
            Err(e) => return Err(e.into()),
        }
    }
    Err(CliError::wrong_passphrase())
}

/// A volume of format `t` (TCRYPT, BITLK, FVAULT2, loop-AES) unlocked as `open` unlocks it:
/// the table on the image, and the further tables of a stacked volume (a TrueCrypt cascade:
/// each decrypts what the one below gave, as cryptsetup's NAME_2, NAME_1, NAME).
fn other_format_tables(
    o: &Opts,
    t: VolumeType,
    image: &str,
) -> Result<(DataVolume, Vec<DataVolume>)> {
    let unlocked =
        super::format_unlock::attempt(&crate::resolve::unlock(o), t, image, false, |f, r| {
            f.unlock(r)
        })?;
    let mut layers = unlocked.layers.into_iter();
    let bottom = layers
        .next()
        .ok_or_else(|| CliError::invalid("The volume has no data layout."))?;
    super::image_engine::choose_for_table(o, &bottom)?;
    let mut upper = Vec::new();
    for table in layers {
        let mut v = DataVolume::open_table(image, table, false)?;
        v.set_threads(Threads::Fixed(1));
        upper.push(v);
    }
    Ok((DataVolume::open_table(image, bottom, false)?, upper))
}

/// `image decrypt IMAGE PLAIN`.
fn decrypt(o: &Opts, args: &[String]) -> Result<()> {
    need_args(args, 2, 2, "<image> <plaintext>")?;
    let (image, dst_path) = (&args[0], &args[1]);
    if dst_path != "-" && same_device(dst_path, image) {
        return Err(CliError::invalid(
            "The image and the plaintext must be different files.",
        ));
    }
    // Asked before the passphrase, as `image encrypt` does: nothing is written until later.
    if dst_path != "-" && has_content(dst_path) {
        input::confirm(
            &format!("This will overwrite data on {dst_path} irrevocably."),
            o.batch_mode,
        )?;
    }
    let mut upper = Vec::new();
    let mut dv = if let Some(t) = super::open::other_format(o) {
        let (bottom, further) = other_format_tables(o, t, image)?;
        upper = further;
        bottom
    } else {
        match kind(o)? {
            Kind::Plain => {
                if o.header.is_some() {
                    return Err(CliError::invalid(
                        "Option --header is not allowed with plain mode.",
                    ));
                }
                let p = crate::resolve::plain(o, false)?;
                let key = plain_key(o, &p, &format!("Enter passphrase for {image}: "), false)?;
                let layout = p.layout()?;
                super::image_engine::choose(o, &layout.cipher, key.len(), layout.sector_size)?;
                DataVolume::open(image, layout, key.as_bytes(), false)?
            }
            Kind::Luks(t) => {
                if o.skip.is_some() || o.iv_large_sectors {
                    return Err(CliError::invalid(
                    "Options --skip and --iv-large-sectors are supported only with --type plain.",
                ));
                }
                let vol = Volume::load(image, o.header.as_deref(), Access::Read)?;
                match (t, vol.type_name()) {
                    (Some(VolumeType::Luks1), "LUKS2") | (Some(VolumeType::Luks2), "LUKS1") => {
                        return Err(CliError::invalid(format!(
                            "Device {image} is not a valid LUKS device."
                        )))
                    }
                    _ => {}
                }
                let vk = unlock_luks(&vol, o, o.header.as_deref().unwrap_or(image))?;
                let mut layout = DataLayout::from_volume(&vol)?;
                if let Some(s) = o.size {
                    layout.size = Some(
                        s.checked_mul(512)
                            .ok_or_else(|| CliError::invalid("Invalid size specification."))?,
                    );
                }
                super::image_engine::choose(o, &layout.cipher, vk.len(), layout.sector_size)?;
                DataVolume::open(&vol.data_path, layout, vk.as_bytes(), false)?
            }
        }
    };
    // Parallelism comes from the pipeline (whole chunks per worker).
    dv.set_threads(Threads::Fixed(1));
    let total = dv.size();
    let mut progress = Progress::new(Some(total), "Decrypting");
    let mut add = |n| progress.add(n);
    if dst_path == "-" {
        let mut stdout = std::io::stdout().lock();
        decrypt_stream(
            &dv,
            &upper,
            total,
            Sink::Stream(&mut stdout),
            dst_path,
            workers(o),
            &mut add,
        )
        .map_err(image_error)?;
        progress.finish();
        std::io::stdout()
            .flush()
            .map_err(|e| CliError::io("Writing", "standard output", &e))?;
    } else {
        decrypt_to_path(&mut dv, &upper, dst_path, workers(o), &mut add).map_err(image_error)?;
        progress.finish();
    }
    if o.verbose && dst_path != "-" {
        println!("Decrypted {total} bytes into {dst_path}.");
    }
    Ok(())
}

/// A progress bar on standard error, drawn only when it is a terminal.
struct Progress {
    enabled: bool,
    label: &'static str,
    total: Option<u64>,
    done: u64,
    start: Instant,
    last: Instant,
}

impl Progress {
    fn new(total: Option<u64>, label: &'static str) -> Self {
        let now = Instant::now();
        Progress {
            enabled: std::io::stderr().is_terminal(),
            label,
            total,
            done: 0,
            start: now,
            last: now,
        }
    }

    fn add(&mut self, n: u64) {
        self.done += n;
        if self.enabled && self.last.elapsed() >= Duration::from_millis(200) {
            self.last = Instant::now();
            self.draw();
        }
    }

    fn draw(&self) {
        let secs = self.start.elapsed().as_secs_f64().max(1e-3);
        let rate = self.done as f64 / secs / (1024.0 * 1024.0);
        let mib = |b: u64| b as f64 / (1024.0 * 1024.0);
        let line = match self.total {
            Some(t) if t > 0 => {
                let frac = (self.done as f64 / t as f64).min(1.0);
                let filled = (frac * 30.0) as usize;
                format!(
                    "\r{} [{}{}] {:5.1}% {:.0}/{:.0} MiB {:.0} MiB/s ",
                    self.label,
                    "#".repeat(filled),
                    "-".repeat(30 - filled),
                    frac * 100.0,
                    mib(self.done),
                    mib(t),
                    rate
                )
            }
            _ => format!(
                "\r{} {:.0} MiB {:.0} MiB/s ",
                self.label,
                mib(self.done),
                rate
            ),
        };
        let mut e = std::io::stderr().lock();
        let _ = e.write_all(line.as_bytes());
        let _ = e.flush();
    }

    fn finish(&mut self) {
        if self.enabled {
            self.draw();
            eprintln!();
        }
    }
}
