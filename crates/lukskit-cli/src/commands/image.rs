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
use crate::args::{parse_size, Opts};
use crate::errors::{self, CliError, Result};
use crate::input::{self, KeySource};
use lukskit_crypto::SecretBuf;
use lukskit_format::VolumeType;
use lukskit_volume::claim::{Claim, ClaimError};
use lukskit_volume::data::{DataLayout, DataVolume, Threads};
use lukskit_volume::device::Access;
use lukskit_volume::format::{self, FormatRequest};
use lukskit_volume::plain::{self, PlainParams};
use lukskit_volume::Volume;
use std::fs::{File, OpenOptions};
use std::io::{IsTerminal, Read, Write};
use std::os::unix::fs::{FileExt, FileTypeExt};
use std::path::Path;
use std::sync::mpsc::sync_channel;
use std::time::{Duration, Instant};

/// Size of one streamed chunk (a multiple of every sector size). Small enough that the
/// buffers in flight stay in the CPU caches between the read, the engine and the write.
const CHUNK: usize = 1024 * 1024;
/// Granularity of hole detection in decrypted output.
const HOLE_BLOCK: usize = 4096;

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

pub(super) fn plain_params(o: &Opts) -> Result<PlainParams> {
    plain_params_for(o, false)
}

/// [`plain_params`] for a mapping the kernel encrypts (`kernel`): ciphers lukskit's engine
/// lacks are left to dm-crypt.
pub(super) fn plain_params_for(o: &Opts, kernel: bool) -> Result<PlainParams> {
    let d = PlainParams::default();
    let p = PlainParams {
        cipher: o.cipher.clone().unwrap_or(d.cipher),
        // cryptsetup takes `-s 0` as "not given": the default key size.
        key_bits: o.key_size.filter(|&b| b != 0).unwrap_or(d.key_bits),
        hash: o.hash.clone().unwrap_or(d.hash),
        offset_sectors: o.offset.unwrap_or(0),
        skip_sectors: o.skip.unwrap_or(0),
        size_sectors: o.size,
        sector_size: o.sector_size.unwrap_or(512),
        iv_large_sectors: o.iv_large_sectors,
    };
    p.check_for(kernel)?;
    Ok(p)
}

/// The plain-mode key as cryptsetup 2.6.1 derives it (see [`lukskit_volume::plain`]).
pub(super) fn plain_key(
    o: &Opts,
    p: &PlainParams,
    prompt: &str,
    verify: bool,
) -> Result<SecretBuf> {
    let key_len = p.key_len()?;
    let hash = (p.hash != "plain").then_some(p.hash.as_str());
    let offset = o.keyfile_offset.unwrap_or(0);
    match o.key_file.as_deref() {
        Some(path) if path != "-" => {
            if !o.batch_mode && o.hash.is_some() {
                eprintln!(
                    "WARNING: The --hash parameter is being ignored in plain mode with keyfile specified."
                );
            }
            if !o.batch_mode && o.keyfile_size.is_some() {
                eprintln!("WARNING: The --keyfile-size option is being ignored, the read size is the same as the encryption key size.");
            }
            input::read_keyfile(path, offset, Some(key_len as u64))
        }
        Some(_) => {
            let size = match hash {
                None => Some(key_len as u64),
                Some(_) => o.keyfile_size,
            };
            let secret = input::read_keyfile("-", offset, size)?;
            plain::key_from_secret(hash, secret.as_bytes(), key_len).map_err(CliError::from)
        }
        None if !input::interactive() && o.keyfile_size.is_some_and(|l| l > 0) => {
            // A passphrase on standard input (not a terminal): only --keyfile-size bytes are
            // read, as cryptsetup reads them.
            let limit = o.keyfile_size.unwrap_or(0);
            let secret = input::read_stdin_line_limited(limit)?;
            plain::key_from_secret(hash, secret.as_bytes(), key_len).map_err(CliError::from)
        }
        None => {
            let secret = input::get_secret(&KeySource::Prompt, prompt, verify)?;
            let n = o
                .keyfile_size
                .map_or(secret.len(), |l| (l as usize).min(secret.len()));
            plain::key_from_secret(hash, &secret.as_bytes()[..n], key_len).map_err(CliError::from)
        }
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

/// Whether writing to `path` would destroy something (an existing non-empty file or any
/// block device).
fn has_content(path: &str) -> bool {
    match std::fs::metadata(path) {
        Ok(m) => m.file_type().is_block_device() || m.len() > 0,
        Err(_) => false,
    }
}

fn is_block_device(path: &str) -> bool {
    std::fs::metadata(path)
        .map(|m| m.file_type().is_block_device())
        .unwrap_or(false)
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

/// A new file beside `path` (a hidden name of its own, made with `O_EXCL | O_NOFOLLOW`, mode
/// 0600 whatever the umask) that [`rename_into_place`] later puts in place of `path`.
fn new_file_beside(path: &str) -> Result<(File, std::path::PathBuf)> {
    let dst = Path::new(path);
    let name = dst
        .file_name()
        .ok_or_else(|| CliError::device(format!("Cannot create {path}: not a file name.")))?;
    let dir = dst.parent().filter(|d| !d.as_os_str().is_empty());
    let temp = dir.unwrap_or(Path::new(".")).join(format!(
        ".{}.lukskit-{}",
        name.to_string_lossy(),
        uuid::Uuid::new_v4().simple()
    ));
    let file =
        lukskit_volume::private_file::create_new(&temp, 0o600).map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound | std::io::ErrorKind::PermissionDenied => {
                CliError::device(format!("Cannot create {path}: {e}."))
            }
            _ => CliError::io("Creating", path, &e),
        })?;
    Ok((file, temp))
}

/// Rename `temp` over `dst` and sync the directory, so that the rename survives a crash.
fn rename_into_place(temp: &Path, dst: &Path) -> std::io::Result<()> {
    std::fs::rename(temp, dst)?;
    let dir = dst.parent().filter(|d| !d.as_os_str().is_empty());
    if let Ok(d) = File::open(dir.unwrap_or(Path::new("."))) {
        let _ = d.sync_all();
    }
    Ok(())
}

/// What `image encrypt` has written that is not yet under the image's name: a regular file
/// (image or detached header) is made as a new file beside it and renamed over it at the end;
/// a LUKS header on a block device has its magic hidden until the data behind it is
/// complete. Dropped before [`PendingImage::commit`] (an error, SIGINT, SIGTERM), the new
/// files are removed and a hidden header stays hidden: nothing interrupted looks complete.
#[derive(Default)]
struct PendingImage {
    /// The image as written now, and the path it ends up under.
    image: Option<(String, String)>,
    /// The same for a detached header.
    header: Option<(String, String)>,
    /// New files to rename into place (new, final).
    renames: Vec<(std::path::PathBuf, std::path::PathBuf)>,
    /// Hidden LUKS magics: (device, offset, the magic bytes).
    hidden: Vec<(String, u64, [u8; 6])>,
    committed: bool,
}

impl PendingImage {
    /// Decide where the image (and a detached header) are written: a new file beside a
    /// regular file (or a missing one), the device itself for a block device.
    fn stage(&mut self, image: &str, header: Option<&str>) -> Result<()> {
        let image_now = self.stage_one(image)?;
        self.image = Some((image_now, image.to_string()));
        if let Some(h) = header {
            let header_now = self.stage_one(h)?;
            self.header = Some((header_now, h.to_string()));
        }
        Ok(())
    }

    fn stage_one(&mut self, path: &str) -> Result<String> {
        if is_block_device(path) {
            return Ok(path.to_string());
        }
        let dst = Path::new(path);
        let (file, temp) = new_file_beside(path)?;
        // An existing file of ours keeps its mode (its owner chose it); a new one gets what
        // the umask gives, as before.
        {
            use std::os::unix::fs::{MetadataExt, PermissionsExt};
            // SAFETY: geteuid has no preconditions and cannot fail.
            let me = unsafe { libc::geteuid() };
            let mode = match std::fs::symlink_metadata(dst) {
                Ok(md) if md.file_type().is_file() && md.uid() == me => md.mode() & 0o7777,
                Ok(_) => 0o600,
                Err(_) => 0o666 & !current_umask(),
            };
            let _ = file.set_permissions(std::fs::Permissions::from_mode(mode));
        }
        self.renames.push((temp.clone(), dst.to_path_buf()));
        Ok(temp.to_string_lossy().into_owned())
    }

    /// The image as written now.
    fn image(&self) -> &str {
        self.image.as_ref().map_or("", |(now, _)| now)
    }

    /// The detached header as written now.
    fn header(&self) -> Option<&str> {
        self.header.as_ref().map(|(now, _)| now.as_str())
    }

    /// Hide the LUKS header just written on a block device (the image's, or a detached
    /// header's): its magic (both copies for LUKS2) is zeroed until [`Self::commit`], so
    /// that neither lukskit nor cryptsetup nor blkid takes the device for a LUKS volume while
    /// its data is incomplete.
    fn hide_header(&mut self) -> Result<()> {
        let holder = self.header().unwrap_or(self.image()).to_string();
        if !is_block_device(&holder) {
            return Ok(());
        }
        let f = OpenOptions::new()
            .read(true)
            .write(true)
            .open(&holder)
            .map_err(|e| CliError::io("Opening", &holder, &e))?;
        use std::os::unix::fs::FileExt;
        let mut first = [0u8; 16];
        f.read_exact_at(&mut first, 0)
            .map_err(|e| CliError::io("Reading", &holder, &e))?;
        let mut offsets = vec![0u64];
        if lukskit_format::detect::detect(&first) == Some(VolumeType::Luks2) {
            // The secondary copy starts where the primary's binary header says it ends.
            let hdr_size = u64::from_be_bytes(first[8..16].try_into().unwrap_or_default());
            offsets.push(hdr_size);
        }
        for off in offsets {
            let mut magic = [0u8; 6];
            f.read_exact_at(&mut magic, off)
                .map_err(|e| CliError::io("Reading", &holder, &e))?;
            f.write_all_at(&[0u8; 6], off)
                .map_err(|e| CliError::io("Writing", &holder, &e))?;
            self.hidden.push((holder.clone(), off, magic));
        }
        f.sync_all()
            .map_err(|e| CliError::io("Syncing", &holder, &e))
    }

    /// Stop here when SIGINT or SIGTERM arrived.
    fn check_interrupt(&self) -> Result<()> {
        if crate::interrupt::interrupted() {
            return Err(interrupted_error());
        }
        Ok(())
    }

    /// Everything is written and synced: show the header, put the new files in place.
    fn commit(&mut self) -> Result<()> {
        use std::os::unix::fs::FileExt;
        for (dev, off, magic) in &self.hidden {
            let f = OpenOptions::new()
                .write(true)
                .open(dev)
                .map_err(|e| CliError::io("Opening", dev, &e))?;
            f.write_all_at(magic, *off)
                .and_then(|()| f.sync_all())
                .map_err(|e| CliError::io("Writing", dev, &e))?;
        }
        self.hidden.clear();
        for (temp, dst) in &self.renames {
            rename_into_place(temp, dst)
                .map_err(|e| CliError::io("Creating", &dst.to_string_lossy(), &e))?;
        }
        self.renames.clear();
        self.committed = true;
        Ok(())
    }
}

impl Drop for PendingImage {
    fn drop(&mut self) {
        if !self.committed {
            for (temp, _) in &self.renames {
                let _ = std::fs::remove_file(temp);
            }
        }
    }
}

/// The process's umask (read by setting it and putting it back).
fn current_umask() -> u32 {
    // SAFETY: umask has no preconditions and cannot fail; the old mask is put back at once.
    unsafe {
        let old = libc::umask(0o077);
        libc::umask(old);
        old
    }
}

/// `image encrypt` stopped by SIGINT or SIGTERM.
fn interrupted_error() -> CliError {
    CliError::invalid(
        "Interrupted: the image was not completed (nothing was written under its name; a \
         block device keeps no valid header).",
    )
}

/// The decrypted output. A block device is written as it is. A regular file is never
/// written in place: the plaintext goes into a new file beside it (made with `O_EXCL |
/// O_NOFOLLOW`, mode 0600 whatever the umask), which [`PlainOutput::commit`] renames over the
/// output once it is complete and synced. So a symbolic link planted as the output is
/// replaced, not followed; another user's file is replaced (where the directory lets us),
/// never written into; an interrupted run leaves no partial plaintext under the output's
/// name; and an existing file of ours keeps its mode (never loosened).
struct PlainOutput {
    file: File,
    /// (the new file, the output it replaces), for a regular file.
    temp: Option<(std::path::PathBuf, std::path::PathBuf)>,
}

impl PlainOutput {
    fn open(path: &str) -> Result<Self> {
        // A device or pipe (also through a link, as /dev/disk/by-id/... is) is written as it
        // is; only a regular file, a link to one or nothing at all is replaced.
        let in_place = std::fs::metadata(path).is_ok_and(|m| {
            use std::os::unix::fs::FileTypeExt;
            let t = m.file_type();
            t.is_block_device() || t.is_char_device() || t.is_fifo()
        });
        if in_place {
            let file = OpenOptions::new()
                .write(true)
                .open(path)
                .map_err(|e| CliError::io("Opening", path, &e))?;
            return Ok(PlainOutput { file, temp: None });
        }
        let dst = Path::new(path);
        let (file, temp) = new_file_beside(path)?;
        // An existing output of ours keeps its mode (its owner chose it).
        // SAFETY: geteuid has no preconditions and cannot fail.
        let me = unsafe { libc::geteuid() };
        if let Ok(md) = std::fs::symlink_metadata(dst) {
            use std::os::unix::fs::{MetadataExt, PermissionsExt};
            if md.file_type().is_file() && md.uid() == me {
                let _ = file.set_permissions(std::fs::Permissions::from_mode(md.mode() & 0o7777));
            }
        }
        Ok(PlainOutput {
            file,
            temp: Some((temp, dst.to_path_buf())),
        })
    }

    /// Make the output durable and, for a regular file, put it in place of the output.
    fn commit(mut self, path: &str) -> Result<()> {
        self.file
            .sync_data()
            .map_err(|e| CliError::io("Syncing", path, &e))?;
        if let Some((temp, dst)) = self.temp.take() {
            if let Err(e) = rename_into_place(&temp, &dst) {
                let _ = std::fs::remove_file(&temp);
                return Err(CliError::io("Creating", path, &e));
            }
        }
        Ok(())
    }
}

impl Drop for PlainOutput {
    fn drop(&mut self) {
        // Not committed: the partial plaintext goes.
        if let Some((temp, _)) = self.temp.take() {
            let _ = std::fs::remove_file(temp);
        }
    }
}

/// Whether two paths name the same existing file.
fn same_file(a: &str, b: &str) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (std::fs::metadata(a), std::fs::metadata(b)) {
        (Ok(x), Ok(y)) => x.dev() == y.dev() && x.ino() == y.ino(),
        _ => false,
    }
}

fn round_up(n: u64, to: u64) -> u64 {
    n.div_ceil(to) * to
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
    if src_path != "-" && same_file(src_path, image) {
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
            let p = plain_params(o)?;
            let key = plain_key(o, &p, &prompt, verify)?;
            crate::interrupt::catch_interrupts();
            pending.stage(image, None)?;
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
            let size = |s: &Option<String>, what: &str| -> Result<Option<u64>> {
                match s {
                    None => Ok(None),
                    Some(v) => parse_size(v)
                        .map(Some)
                        .ok_or_else(|| CliError::invalid(format!("Invalid {what} specification."))),
                }
            };
            let mut params = FormatRequest {
                kind: t.unwrap_or(VolumeType::Luks2),
                device: image.clone(),
                header: o.header.clone(),
                cipher,
                key_size_bits: Some(key_bits),
                sector_size: o.sector_size,
                offset_sectors: o.offset,
                alignment_sectors: None,
                label: o.label.clone(),
                subsystem: o.subsystem.clone(),
                uuid: o.uuid.clone(),
                metadata_size: size(&o.luks2_metadata_size, "metadata size")?,
                keyslots_size: size(&o.luks2_keyslots_size, "keyslots size")?,
                key_slot: o.key_slot,
                pbkdf: crate::resolve::pbkdf(o),
                volume_key: Some(vk.clone()),
                integrity: None,
            };
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
            pending.stage(image, o.header.as_deref())?;
            params.device = pending.image().to_string();
            params.header = pending.header().map(str::to_string);
            if claims.is_empty() {
                claims = format::claim_devices(&params)?;
            }
            super::luks1_pbkdf_fallback(&mut params);
            format::format_claimed(&params, &claims, pass.as_bytes())?;
            // A header on a block device is hidden until the data behind it is complete.
            pending.hide_header()?;
            let vol = Volume::load(pending.image(), pending.header(), Access::Read)?;
            (DataLayout::from_volume(&vol)?, vk)
        }
    };

    // Size the image: data offset + plaintext rounded up to a whole sector.
    let ss = u64::from(layout.sector_size);
    let data_len = match (plain_len, layout.size) {
        (Some(n), Some(fixed)) if n > fixed => {
            return Err(CliError::invalid(format!(
                "The plaintext ({n} bytes) does not fit the requested data size ({fixed} bytes)."
            )))
        }
        (_, Some(fixed)) => Some(fixed),
        (Some(n), None) => Some(round_up(n, ss)),
        (None, None) => None,
    };
    pending.check_interrupt()?;
    let staged = pending.image().to_string();
    let out = OpenOptions::new()
        .read(true)
        .write(true)
        .open(&staged)
        .map_err(|e| CliError::io("Opening", image, &e))?;
    let block = is_block_device(&staged);
    if let Some(len) = data_len {
        let need = layout.offset + len;
        let have = lukskit_format::io::Storage::size(&out)
            .map_err(|e| CliError::io("Reading", image, &e))?;
        if block {
            if have < need {
                return Err(CliError::device(format!(
                    "Device {image} is too small ({have} bytes, {need} needed)."
                )));
            }
        } else {
            out.set_len(need)
                .map_err(|e| CliError::io("Resizing", image, &e))?;
        }
    } else if !block {
        out.set_len(layout.offset)
            .map_err(|e| CliError::io("Resizing", image, &e))?;
    }
    let mut dv = if block {
        // A block device may be larger than the data: use only what the plaintext needs.
        let mut l = layout.clone();
        if l.size.is_none() {
            l.size = data_len;
        }
        DataVolume::from_file(out, &staged, l, key.as_bytes(), true)?
    } else {
        DataVolume::from_file(out, &staged, layout.clone(), key.as_bytes(), true)?
    };
    drop(key);
    // Parallelism comes from the pipeline (whole chunks per worker).
    dv.set_threads(Threads::Fixed(1));

    let mut progress = Progress::new(plain_len, "Encrypting");
    let written = stream_encrypt(source, &dv, workers(o), &mut progress)?;
    progress.finish();
    if data_len.is_none() && !block {
        // Plaintext from a pipe: the image ends after the last sector written.
        // (`from_file` above: always a local file.)
        if let Some(f) = dv.file() {
            f.set_len(layout.offset + round_up(written, ss))
                .map_err(|e| CliError::io("Resizing", image, &e))?;
        }
    }
    dv.flush()?;
    drop(dv);
    pending.check_interrupt()?;
    // Complete and durable: now under its name (header shown, files renamed into place).
    pending.commit()?;
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

/// A chunk moving through the pipeline: buffer, valid length, plaintext offset.
struct Chunk {
    buf: Vec<u8>,
    len: usize,
    offset: u64,
}

fn pipe_error(what: &str) -> CliError {
    CliError::invalid(format!("Internal error: {what} stopped unexpectedly."))
}

/// Fill `buf` from `r` until it is full or the input ends; returns the bytes read.
fn read_full(r: &mut dyn Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match r.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

/// Number of engine workers for `--threads` (0 or absent = all cores).
fn workers(o: &Opts) -> usize {
    match threads(o) {
        Threads::Fixed(n) => n.max(1),
        Threads::All => std::thread::available_parallelism().map_or(1, |n| n.get()),
    }
}

/// The conversion pipeline: one reader, `workers` engine threads each processing whole
/// chunks (single-threaded engine calls, so no thread idles or spins between chunks), one
/// writer. `read` fills a buffer and returns (length to process, plaintext offset) or None
/// at the end; `write` receives processed chunks in any order. Buffers are recycled. A
/// decryption continues through `upper` (the further tables of a stacked volume), in order.
fn run_pipeline<R, W>(
    dv: &DataVolume,
    upper: &[DataVolume],
    workers: usize,
    encrypt: bool,
    mut read: R,
    mut write: W,
) -> Result<()>
where
    R: FnMut(&mut [u8]) -> Result<Option<(usize, u64)>> + Send,
    W: FnMut(&Chunk) -> Result<()>,
{
    let in_flight = 2 * workers + 2;
    let (free_tx, free_rx) = sync_channel::<Vec<u8>>(in_flight);
    for _ in 0..in_flight {
        free_tx
            .send(vec![0u8; CHUNK])
            .map_err(|_| pipe_error("buffer pool"))?;
    }
    let (work_tx, work_rx) = sync_channel::<Chunk>(in_flight);
    let (done_tx, done_rx) = sync_channel::<Result<Chunk>>(in_flight);
    let work_rx = std::sync::Mutex::new(work_rx);
    std::thread::scope(|s| -> Result<()> {
        let reader = s.spawn(move || -> Result<()> {
            while let Ok(mut buf) = free_rx.recv() {
                let Some((len, offset)) = read(&mut buf)? else {
                    break;
                };
                work_tx
                    .send(Chunk { buf, len, offset })
                    .map_err(|_| pipe_error("engine"))?;
            }
            Ok(())
        });
        for _ in 0..workers {
            let (work_rx, done_tx) = (&work_rx, done_tx.clone());
            s.spawn(move || loop {
                let next = work_rx
                    .lock()
                    .map_err(|_| ())
                    .and_then(|r| r.recv().map_err(|_| ()));
                let Ok(mut c) = next else { break };
                let r = if encrypt {
                    dv.encrypt_sectors(&mut c.buf[..c.len], c.offset)
                } else {
                    std::iter::once(dv)
                        .chain(upper)
                        .try_for_each(|v| v.decrypt_sectors(&mut c.buf[..c.len], c.offset))
                };
                if done_tx.send(r.map(|()| c).map_err(CliError::from)).is_err() {
                    break;
                }
            });
        }
        drop(done_tx);
        let mut result = Ok(());
        for c in done_rx.iter() {
            match c.and_then(|c| write(&c).map(|()| c)) {
                Ok(c) => {
                    // The pool is gone once the reader has finished.
                    let _ = free_tx.send(c.buf);
                }
                Err(e) => {
                    result = Err(e);
                    break;
                }
            }
        }
        // Unblock everyone: no more buffers, no more results wanted.
        drop(free_tx);
        drop(done_rx);
        let r = reader.join().map_err(|_| pipe_error("reader"))?;
        result?;
        r
    })
}

/// Encrypt a plaintext stream into the image. Returns the number of plaintext bytes.
fn stream_encrypt(
    source: Source,
    dv: &DataVolume,
    workers: usize,
    progress: &mut Progress,
) -> Result<u64> {
    let ss = dv.sector_size() as usize;
    let (mut input, name): (Box<dyn Read + Send>, &str) = match source {
        Source::File(f, _) => (Box::new(f), "plaintext"),
        Source::Stdin => (Box::new(std::io::stdin()), "standard input"),
    };
    let mut offset = 0u64;
    let mut ended = false;
    let total = &mut offset;
    run_pipeline(
        dv,
        &[],
        workers,
        true,
        |buf| {
            if ended {
                return Ok(None);
            }
            if crate::interrupt::interrupted() {
                return Err(interrupted_error());
            }
            let n = read_full(&mut *input, buf).map_err(|e| CliError::io("Reading", name, &e))?;
            if n == 0 {
                return Ok(None);
            }
            let padded = n.div_ceil(ss) * ss;
            buf[n..padded].fill(0);
            ended = n < buf.len();
            let at = *total;
            *total += n as u64;
            Ok(Some((padded, at)))
        },
        |c| {
            dv.pwrite(&c.buf[..c.len], c.offset)?;
            progress.add(c.len as u64);
            Ok(())
        },
    )?;
    Ok(offset)
}

/// Where decrypted data goes.
enum Sink {
    /// A regular file (holes for zero blocks) or a block device (everything written).
    File {
        file: File,
        sparse: bool,
    },
    Stdout,
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
    let unlocked = super::open_format::attempt(o, t, image, false, |f, r| f.unlock(r))?;
    let mut layers = unlocked.layers.into_iter();
    let bottom = layers
        .next()
        .ok_or_else(|| CliError::invalid("The volume has no data layout."))?;
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
    if dst_path != "-" && same_file(dst_path, image) {
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
                let p = plain_params(o)?;
                let key = plain_key(o, &p, &format!("Enter passphrase for {image}: "), false)?;
                DataVolume::open(image, p.layout()?, key.as_bytes(), false)?
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
                DataVolume::open(&vol.data_path, layout, vk.as_bytes(), false)?
            }
        }
    };
    // Parallelism comes from the pipeline (whole chunks per worker).
    dv.set_threads(Threads::Fixed(1));
    let total = dv.size();
    let mut output = None;
    let sink = if dst_path == "-" {
        Sink::Stdout
    } else {
        let out = PlainOutput::open(dst_path)?;
        let sparse = out.temp.is_some();
        let file = out
            .file
            .try_clone()
            .map_err(|e| CliError::io("Opening", dst_path, &e))?;
        output = Some(out);
        if is_block_device(dst_path) {
            let have = lukskit_format::io::Storage::size(&file)
                .map_err(|e| CliError::io("Reading", dst_path, &e))?;
            if have < total {
                return Err(CliError::device(format!(
                    "Device {dst_path} is too small ({have} bytes, {total} needed)."
                )));
            }
        }
        Sink::File { file, sparse }
    };
    let mut progress = Progress::new(Some(total), "Decrypting");
    stream_decrypt(
        &dv,
        &upper,
        total,
        &sink,
        dst_path,
        workers(o),
        &mut progress,
    )?;
    progress.finish();
    match &sink {
        Sink::File { file, sparse } => {
            if *sparse {
                file.set_len(total)
                    .map_err(|e| CliError::io("Resizing", dst_path, &e))?;
            }
            if let Some(out) = output.take() {
                out.commit(dst_path)?;
            }
        }
        Sink::Stdout => std::io::stdout()
            .flush()
            .map_err(|e| CliError::io("Writing", "standard output", &e))?,
    }
    if o.verbose && dst_path != "-" {
        println!("Decrypted {total} bytes into {dst_path}.");
    }
    Ok(())
}

/// Write `data` at `offset`, leaving holes for all-zero blocks of a sparse regular file.
fn write_sparse(file: &File, data: &[u8], offset: u64) -> std::io::Result<()> {
    let mut run_start: Option<usize> = None;
    let mut at = 0;
    while at < data.len() {
        let end = (at + HOLE_BLOCK).min(data.len());
        let zero = is_zero(&data[at..end]);
        match (zero, run_start) {
            (false, None) => run_start = Some(at),
            (true, Some(s)) => {
                file.write_all_at(&data[s..at], offset + s as u64)?;
                run_start = None;
            }
            _ => {}
        }
        at = end;
    }
    if let Some(s) = run_start {
        file.write_all_at(&data[s..], offset + s as u64)?;
    }
    Ok(())
}

fn is_zero(b: &[u8]) -> bool {
    // Word-wise; the compiler vectorises the fold.
    let (pre, mid, post) = {
        // SAFETY: any byte pattern is a valid u64; align_to only reinterprets the aligned middle.
        unsafe { b.align_to::<u64>() }
    };
    pre.iter().all(|&x| x == 0)
        && mid.iter().fold(0u64, |acc, &w| acc | w) == 0
        && post.iter().all(|&x| x == 0)
}

/// Decrypt the whole data area into `sink`.
fn stream_decrypt(
    dv: &DataVolume,
    upper: &[DataVolume],
    total: u64,
    sink: &Sink,
    dst_name: &str,
    workers: usize,
    progress: &mut Progress,
) -> Result<()> {
    let mut offset = 0u64;
    // Standard output needs the chunks in order: park early ones until their turn.
    let mut next_out = 0u64;
    let mut parked: std::collections::BTreeMap<u64, Vec<u8>> = Default::default();
    let mut stdout = std::io::stdout().lock();
    run_pipeline(
        dv,
        upper,
        workers,
        false,
        |buf| {
            if offset >= total {
                return Ok(None);
            }
            let n = (total - offset).min(buf.len() as u64) as usize;
            dv.pread(&mut buf[..n], offset)?;
            let at = offset;
            offset += n as u64;
            Ok(Some((n, at)))
        },
        |c| {
            let data = &c.buf[..c.len];
            let io = |e: std::io::Error| CliError::io("Writing", dst_name, &e);
            match sink {
                Sink::File { file, sparse: true } => {
                    write_sparse(file, data, c.offset).map_err(io)?
                }
                Sink::File { file, .. } => file.write_all_at(data, c.offset).map_err(io)?,
                Sink::Stdout => {
                    parked.insert(c.offset, data.to_vec());
                    while let Some(d) = parked.remove(&next_out) {
                        stdout.write_all(&d).map_err(io)?;
                        next_out += d.len() as u64;
                    }
                }
            }
            progress.add(c.len as u64);
            Ok(())
        },
    )
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zero_detection() {
        let mut b = vec![0u8; 10_000];
        assert!(is_zero(&b));
        for at in [0, 1, 7, 8, 4095, 9_999] {
            b[at] = 1;
            assert!(!is_zero(&b), "{at}");
            assert!(is_zero(&b[..at]));
            b[at] = 0;
        }
    }
}
