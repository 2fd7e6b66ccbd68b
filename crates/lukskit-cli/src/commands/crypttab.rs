//! `crypttab open|close|list [NAME…] [--crypttab FILE]` and `rename OLD NEW`.
//!
//! Each crypttab entry ([`crate::crypttab`]) becomes the command line `open` would be given
//! for it — the same options Debian's `cryptdisks_start` passes to cryptsetup — and is opened
//! through [`super::open::open`], so a crypttab entry and `lukskit open` set up the same
//! mapping through the same code. `list` prints that command line for every entry. Sources
//! `UUID=`, `LABEL=`, `PARTUUID=`, `PARTLABEL=` are found through `/dev/disk/by-*`, else by
//! reading the first 4 KiB of each block device (LUKS and ext2/3/4 headers; partition names
//! from sysfs), else with `blkid` where it is installed. Key files and headers on another
//! device (`PATH:UUID=…`) are read with that device mounted read-only for the time of the open.
//! A failed entry does not stop the others; entries with `nofail` do not make the command
//! fail.

use super::need_args;
use crate::args::Opts;
use crate::crypttab::{
    self, CryptKind, Crypttab, CrypttabEntry, DeviceSpec, FileRef, KeySpec, MAX_TABLE_BYTES,
};
use crate::errors::{inactive, CliError, ExitClass, Result};
use lukskit_activate as activate;
use lukskit_volume::formats::bitlk::Bitlk;
use lukskit_volume::formats::{OnDiskFormat, Probe, PROBE_BYTES};
use std::io::Read;
use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};

/// The table read when `--crypttab` is not given.
pub const DEFAULT_CRYPTTAB: &str = "/etc/crypttab";

/// Most block devices looked at when searching for a `UUID=`/`LABEL=`.
const MAX_SCANNED_DEVICES: usize = 4096;
/// Bytes read from each block device when searching (LUKS header start, ext superblock).
const SCAN_BYTES: usize = 4096;

/// `crypttab open|close|list [NAME…]`.
pub fn crypttab(o: &Opts, args: &[String]) -> Result<()> {
    need_args(args, 1, usize::MAX, "<open|close|list> [<name>...]")?;
    let path = o.crypttab.as_deref().unwrap_or(DEFAULT_CRYPTTAB);
    let table = read_table(path)?;
    let names = &args[1..];
    let sub = args[0].as_str();
    if !matches!(sub, "open" | "close" | "list") {
        return Err(CliError::invalid(format!(
            "Unknown crypttab action {sub} (open, close or list)."
        )));
    }
    let mut worst: Option<ExitClass> = None;
    let mut fail = |kind: ExitClass| {
        worst.get_or_insert(kind);
    };
    // Lines that are not entries: reported, and a failure whenever they could be one the
    // caller asked for.
    for p in &table.problems {
        let asked = names.is_empty() || p.name.as_ref().is_some_and(|n| names.contains(n));
        if asked {
            eprintln!(
                "{path}:{}: {}{}.",
                p.line,
                p.name
                    .as_ref()
                    .map(|n| format!("{n}: "))
                    .unwrap_or_default(),
                p.message
            );
            fail(ExitClass::Invalid);
        }
    }
    let selected: Vec<&CrypttabEntry> = if names.is_empty() {
        table
            .entries
            .iter()
            .filter(|e| sub != "open" || !e.options.noauto)
            .collect()
    } else {
        let mut v = Vec::new();
        for n in names {
            match table.entries.iter().find(|e| &e.name == n) {
                Some(e) => v.push(e),
                None if table.problems.iter().any(|p| p.name.as_ref() == Some(n)) => {}
                None => {
                    eprintln!("{n}: not found in {path}.");
                    fail(ExitClass::Device);
                }
            }
        }
        v
    };
    let mut ordered = selected;
    if sub == "close" {
        // Later entries may sit on earlier ones.
        ordered.reverse();
    }
    for e in ordered {
        let res = match sub {
            "open" => open_entry(o, e),
            "close" => close_entry(e),
            _ => {
                list_entry(e);
                Ok(())
            }
        };
        if let Err(err) = res {
            let nofail = if e.options.nofail {
                " (nofail: not counted as a failure)"
            } else {
                ""
            };
            eprintln!("{}: {}{nofail}", e.name, err.message);
            if !e.options.nofail {
                fail(err.class);
            }
        }
    }
    match worst {
        None => Ok(()),
        Some(class) => Err(CliError::new(class, "")),
    }
}

/// Read at most [`MAX_TABLE_BYTES`] of the table and parse it.
fn read_table(path: &str) -> Result<Crypttab> {
    let f = std::fs::File::open(path)
        .map_err(|e| CliError::device(format!("Cannot read {path}: {e}.")))?;
    let mut buf = Vec::new();
    f.take(MAX_TABLE_BYTES + 1)
        .read_to_end(&mut buf)
        .map_err(|e| CliError::device(format!("Cannot read {path}: {e}.")))?;
    if buf.len() as u64 > MAX_TABLE_BYTES {
        return Err(CliError::invalid(format!(
            "{path} is larger than {MAX_TABLE_BYTES} bytes."
        )));
    }
    Ok(crypttab::parse(&buf))
}

/// Warnings for the options an entry has that lukskit ignores; an error for those it
/// refuses.
fn check_options(e: &CrypttabEntry) -> Result<()> {
    for i in &e.options.ignored {
        eprintln!(
            "{}: WARNING: option '{}' ignored: {}.",
            e.name, i.option, i.reason
        );
    }
    if let Some(r) = e.options.refused.first() {
        return Err(CliError::invalid(format!(
            "option '{}' is not supported: {}; not opened.",
            r.option, r.reason
        )));
    }
    Ok(())
}

/// A file that is read with its device mounted read-only: unmounted when dropped.
struct Mounted {
    dir: PathBuf,
}

impl Drop for Mounted {
    fn drop(&mut self) {
        if let Ok(c) = std::ffi::CString::new(self.dir.as_os_str().as_encoded_bytes()) {
            // SAFETY: `c` is a valid NUL-terminated path; umount2 only reads it.
            unsafe { libc::umount2(c.as_ptr(), libc::MNT_DETACH) };
        }
        let _ = std::fs::remove_dir(&self.dir);
    }
}

/// Mount `dev` read-only (nosuid, nodev, noexec) on a fresh directory, trying the block file
/// systems the kernel has.
fn mount_read_only(dev: &Path) -> Result<Mounted> {
    let base = Path::new("/run/lukskit");
    std::fs::create_dir_all(base)
        .map_err(|e| CliError::invalid(format!("Cannot create {}: {e}.", base.display())))?;
    static SEQ: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let n = SEQ.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = base.join(format!("crypttab-key-{}-{n}", std::process::id()));
    let _ = std::fs::remove_dir(&dir);
    std::fs::create_dir(&dir)
        .map_err(|e| CliError::invalid(format!("Cannot create {}: {e}.", dir.display())))?;
    let m = Mounted { dir };
    let fstypes: Vec<String> = std::fs::read_to_string("/proc/filesystems")
        .unwrap_or_default()
        .lines()
        .filter(|l| !l.starts_with("nodev"))
        .map(|l| l.trim().to_string())
        .filter(|t| !t.is_empty())
        .take(64)
        .collect();
    let cdev = std::ffi::CString::new(dev.as_os_str().as_encoded_bytes())
        .map_err(|_| CliError::invalid("Device path contains NUL."))?;
    let cdir = std::ffi::CString::new(m.dir.as_os_str().as_encoded_bytes())
        .map_err(|_| CliError::invalid("Directory path contains NUL."))?;
    let flags = libc::MS_RDONLY | libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC;
    for t in &fstypes {
        let Ok(ct) = std::ffi::CString::new(t.as_str()) else {
            continue;
        };
        // SAFETY: every pointer is a valid NUL-terminated string that outlives the call; no
        // data argument.
        let r = unsafe {
            libc::mount(
                cdev.as_ptr(),
                cdir.as_ptr(),
                ct.as_ptr(),
                flags,
                std::ptr::null(),
            )
        };
        if r == 0 {
            return Ok(m);
        }
    }
    Err(CliError::device(format!(
        "Cannot mount {} read-only to read a key file from it.",
        dev.display()
    )))
}

/// The path of `f`, mounting its device when it is on another one (kept in `mounts`).
fn file_path(f: &FileRef, mounts: &mut Vec<Mounted>) -> Result<String> {
    let Some(dev) = &f.device else {
        return Ok(f.path.clone());
    };
    if Path::new(&f.path)
        .components()
        .any(|c| c == std::path::Component::ParentDir)
    {
        return Err(CliError::invalid(format!(
            "{f}: a file on another device may not name a parent directory (..)."
        )));
    }
    let path = resolve(dev)
        .ok_or_else(|| CliError::device(format!("Device {dev} holding {} not found.", f.path)))?;
    let m = mount_read_only(&path)?;
    let p = m.dir.join(f.path.trim_start_matches('/'));
    mounts.push(m);
    Ok(p.display().to_string())
}

/// The kind of volume the entry is: its `luks`/`plain`/`tcrypt`/`bitlk` option, or what is on
/// the device (a LUKS or BitLocker signature; plain otherwise, as both dialects fall back).
fn crypt_type(e: &CrypttabEntry, source: Option<&Path>, header: Option<&str>) -> &'static str {
    match e.options.kind {
        CryptKind::Luks => "luks",
        CryptKind::Plain => "plain",
        CryptKind::Tcrypt => "tcrypt",
        CryptKind::Bitlk => "bitlk",
        CryptKind::Auto if header.is_some() => "luks",
        CryptKind::Auto => {
            let head = source.and_then(|s| first_bytes(s, PROBE_BYTES));
            match head {
                Some(b) if lukskit_format::detect::detect(&b).is_some() => "luks",
                Some(b) if Bitlk.probe(&b) == Probe::Mine => "bitlk",
                _ => "plain",
            }
        }
    }
}

/// Options of the entry that do not apply to its kind (dropped, as Debian's and systemd's
/// tools drop them), for a warning.
fn not_for_kind(e: &CrypttabEntry, kind: &str) -> Vec<&'static str> {
    let o = &e.options;
    let luks_only: [(bool, &str); 3] = [
        (o.header.is_some(), "header="),
        (o.key_slot.is_some(), "key-slot="),
        (o.keyfile_size.is_some() && kind != "bitlk", "keyfile-size="),
    ];
    let plain_only: [(bool, &str); 5] = [
        (o.cipher.is_some(), "cipher="),
        (o.key_size.is_some(), "size="),
        (o.hash.is_some(), "hash="),
        (o.offset.is_some(), "offset="),
        (o.skip.is_some(), "skip="),
    ];
    let luks = luks_only.iter().filter(|_| kind != "luks");
    let plain = plain_only.iter().filter(|_| kind != "plain");
    luks.chain(plain)
        .filter(|(on, _)| *on)
        .map(|(_, n)| *n)
        .collect()
}

/// The `open` command line for an entry (without the program name): the options Debian's
/// `unlock_mapping` passes to cryptsetup, as lukskit spells them.
fn open_argv(
    e: &CrypttabEntry,
    source: &str,
    kind: &str,
    key: Option<&str>,
    header: Option<&str>,
    tcrypt_keys: &[String],
) -> Vec<String> {
    let o = &e.options;
    let mut a: Vec<String> = vec!["open".into(), "--type".into(), kind.into()];
    let mut opt = |name: &str, v: Option<String>| match v {
        // A value that starts with '-' must not read as an option.
        Some(v) if v.starts_with('-') => a.push(format!("--{name}={v}")),
        Some(v) => {
            a.push(format!("--{name}"));
            a.push(v);
        }
        None => {}
    };
    match kind {
        "luks" => {
            opt("header", header.map(str::to_string));
            opt("key-slot", o.key_slot.map(|v| v.to_string()));
            opt("keyfile-size", o.keyfile_size.map(|v| v.to_string()));
        }
        "plain" => {
            opt("cipher", o.cipher.clone());
            opt("key-size", o.key_size.map(|v| v.to_string()));
            opt("hash", o.hash.clone());
            opt("offset", o.offset.map(|v| v.to_string()));
            opt("skip", o.skip.map(|v| v.to_string()));
        }
        "bitlk" => opt("keyfile-size", o.keyfile_size.map(|v| v.to_string())),
        _ => {}
    }
    if kind == "tcrypt" {
        let t = &o.tcrypt;
        opt("veracrypt-pim", t.pim.map(|v| v.to_string()));
        // TrueCrypt's key files are `-d`; the entry's key file holds the passphrase (its
        // first line, read by open_entry, as systemd reads it).
        for k in tcrypt_keys {
            opt("key-file", Some(k.clone()));
        }
    } else {
        opt("sector-size", o.sector_size.map(|v| v.to_string()));
        opt("keyfile-offset", o.keyfile_offset.map(|v| v.to_string()));
        opt("key-file", key.map(str::to_string));
    }
    // A key file is read once; a prompt is asked `tries=` times (0: until it is right).
    let tries = match (key, o.tries) {
        (Some(_), _) => 1,
        (None, Some(0)) => u32::MAX,
        (None, t) => t.unwrap_or(3),
    };
    opt("tries", Some(tries.to_string()));
    // `auto` is what open does without the option.
    opt(
        "tpm2-device",
        o.tpm2_device.clone().filter(|d| d.as_str() != "auto"),
    );
    opt("timeout", o.timeout.map(|v| v.to_string()));
    for (on, flag) in [
        (o.verify, "--verify-passphrase"),
        (o.readonly, "--readonly"),
        (o.discard, "--allow-discards"),
        (o.same_cpu_crypt, "--perf-same_cpu_crypt"),
        (o.submit_from_crypt_cpus, "--perf-submit_from_crypt_cpus"),
        (o.no_read_workqueue, "--perf-no_read_workqueue"),
        (o.no_write_workqueue, "--perf-no_write_workqueue"),
        (o.tcrypt.hidden, "--tcrypt-hidden"),
        (o.tcrypt.system, "--tcrypt-system"),
        (o.tcrypt.veracrypt, "--veracrypt"),
    ] {
        if on {
            a.push(flag.into());
        }
    }
    if source.starts_with('-') || e.name.starts_with('-') {
        a.push("--".into());
    }
    a.push(source.into());
    a.push(e.name.clone());
    a
}

/// Where systemd-cryptsetup looks for the key of an entry whose key field is `none`, `-` or
/// absent: `NAME.key` in these directories.
const KEY_DIRS: [&str; 2] = ["/etc/cryptsetup-keys.d", "/run/cryptsetup-keys.d"];

/// The key of an entry: its key file, else systemd's `/etc/cryptsetup-keys.d/NAME.key` (or
/// `/run/…`) for an entry that asks for a passphrase; `None` to ask.
fn key_file(e: &CrypttabEntry) -> Option<FileRef> {
    if e.options.keyctl_cache {
        // decrypt_keyctl: the key field names the cached passphrase, it is no file.
        return None;
    }
    match &e.key {
        KeySpec::File(f) => Some(f.clone()),
        KeySpec::Prompt => KEY_DIRS
            .iter()
            .map(|d| Path::new(d).join(format!("{}.key", e.name)))
            .find(|p| p.is_file())
            .map(|p| FileRef {
                path: p.display().to_string(),
                device: None,
            }),
    }
}

/// Open one entry.
fn open_entry(o: &Opts, e: &CrypttabEntry) -> Result<()> {
    check_options(e)?;
    if activate::find(&e.name)?.is_some() {
        println!("{}: already active.", e.name);
        return Ok(());
    }
    let source = resolve(&e.source)
        .ok_or_else(|| CliError::device(format!("Device {} not found.", e.source)))?;
    let mut mounts = Vec::new();
    let key = match key_file(e) {
        None => None,
        Some(f) => Some(file_path(&f, &mut mounts)?),
    };
    if let Some(k) = key.as_deref().filter(|k| insecure_key_file(k)) {
        // Debian's cryptdisks (crypttab_key_check) words.
        eprintln!(
            "WARNING: {}: key file {k} has insecure ownership, see \
             /usr/share/doc/cryptsetup/README.Debian.gz.",
            e.name
        );
    }
    let header = match &e.options.header {
        Some(h) => Some(file_path(h, &mut mounts)?),
        None => None,
    };
    let kind = crypt_type(e, Some(&source), header.as_deref());
    for n in not_for_kind(e, kind) {
        eprintln!(
            "{}: WARNING: option {n} has no effect on a {kind} volume; ignored.",
            e.name
        );
    }
    let tcrypt_keys = e
        .options
        .tcrypt
        .key_files
        .iter()
        .map(|f| file_path(f, &mut mounts))
        .collect::<Result<Vec<_>>>()?;
    let src = source.display().to_string();
    let argv = open_argv(
        e,
        &src,
        kind,
        key.as_deref(),
        header.as_deref(),
        &tcrypt_keys,
    );
    let argv: Vec<std::ffi::OsString> = std::iter::once("lukskit".to_string())
        .chain(argv)
        .map(Into::into)
        .collect();
    let mut eo = crate::startup::parse(&argv).map_err(CliError::invalid)?;
    if kind == "tcrypt" {
        eo.passphrase_file = key.clone();
    }
    // What the crypttab command line says for every entry.
    eo.verbose = o.verbose;
    eo.debug = o.debug;
    eo.batch_mode = o.batch_mode;
    eo.backend = o.backend.clone();
    eo.disable_locks = o.disable_locks;
    crate::input::set_prompt_timeout(eo.timeout.unwrap_or(0));
    let args = eo.positional[1..].to_vec();
    let res = if e.options.keyctl_cache {
        // One passphrase read per open; the cache decides when to ask again.
        eo.tries = Some(1);
        super::passphrase_cache::open_with_cache(e, || super::open::open(&eo, "open", &args))
    } else {
        super::open::open(&eo, "open", &args)
    };
    crate::input::set_prompt_timeout(o.timeout.unwrap_or(0));
    drop(mounts);
    res?;
    println!("{}: opened.", e.name);
    Ok(())
}

/// Whether a key file is not root's own or can be read or written by others (its group or
/// anyone): Debian's `crypttab_key_check` warns then (the mode's last two octal digits not
/// 00, or an owner other than root; links followed). /dev/random and /dev/urandom are not
/// looked at.
fn insecure_key_file(path: &str) -> bool {
    use std::os::unix::fs::MetadataExt;
    if matches!(path, "/dev/random" | "/dev/urandom") {
        return false;
    }
    std::fs::metadata(path).is_ok_and(|m| m.uid() != 0 || m.mode() & 0o077 != 0)
}

/// Close one entry's mapping, if it is active.
fn close_entry(e: &CrypttabEntry) -> Result<()> {
    match activate::find(&e.name)? {
        None => {
            println!("{}: not active.", e.name);
            Ok(())
        }
        Some(m) => {
            m.close(false)?;
            println!("{}: closed.", e.name);
            Ok(())
        }
    }
}

/// What `open` would do for one entry.
fn list_entry(e: &CrypttabEntry) {
    let o = &e.options;
    let active = matches!(activate::find(&e.name), Ok(Some(_)));
    let source = resolve(&e.source);
    let mut flags = Vec::new();
    for (on, f) in [
        (o.noauto, "noauto"),
        (o.nofail, "nofail"),
        (o.initramfs, "initramfs"),
        (o.netdev, "_netdev"),
    ] {
        if on {
            flags.push(f);
        }
    }
    let state = if active {
        "active (open leaves it as it is)".to_string()
    } else if let Some(r) = o.refused.first() {
        format!("not opened: option '{}' is not supported", r.option)
    } else if source.is_none() {
        format!("fails: device {} not found", e.source)
    } else if o.noauto {
        "opened only when named (noauto)".to_string()
    } else {
        "opened".to_string()
    };
    println!("{} (line {}): {state}", e.name, e.line);
    match &source {
        Some(p) if DeviceSpec::Path(p.display().to_string()) != e.source => {
            println!("  source:  {} = {}", e.source, p.display())
        }
        Some(p) => println!("  source:  {}", p.display()),
        None => println!("  source:  {} (not found)", e.source),
    }
    let key_path = |f: &FileRef| match &f.device {
        Some(d) => format!("<{d} mounted read-only>/{}", f.path.trim_start_matches('/')),
        None => f.path.clone(),
    };
    let (key_text, key) = match key_file(e) {
        None => {
            let t = match o.tries {
                Some(0) => "until right".to_string(),
                t => format!("{} tries", t.unwrap_or(3)),
            };
            let cache = if o.keyctl_cache {
                format!(
                    ", cached {} s in the kernel keyring as user key {} in @u (decrypt_keyctl)",
                    super::passphrase_cache::CACHE_SECONDS,
                    super::passphrase_cache::description(e)
                )
            } else {
                String::new()
            };
            (
                format!("passphrase asked on the console ({t}{cache})"),
                None,
            )
        }
        Some(f) => (format!("key file {f}"), Some(key_path(&f))),
    };
    println!("  key:     {key_text}");
    let header = o.header.as_ref().map(key_path);
    let kind = if o.header.as_ref().is_some_and(|h| h.device.is_some()) {
        "luks"
    } else {
        crypt_type(e, source.as_deref(), header.as_deref())
    };
    let how = match o.kind {
        CryptKind::Auto => " (detected)",
        _ => "",
    };
    println!("  type:    {kind}{how}");
    if !flags.is_empty() {
        println!("  flags:   {}", flags.join(", "));
    }
    let src = source
        .as_ref()
        .map(|p| p.display().to_string())
        .unwrap_or_else(|| e.source.to_string());
    let tcrypt_keys: Vec<String> = o.tcrypt.key_files.iter().map(key_path).collect();
    let argv = open_argv(
        e,
        &src,
        kind,
        key.as_deref(),
        header.as_deref(),
        &tcrypt_keys,
    );
    // A TrueCrypt entry's key file is its passphrase's line on standard input.
    let stdin = match (&key, kind) {
        (Some(k), "tcrypt") => format!(" < {}", shell_words(std::slice::from_ref(k))),
        _ => String::new(),
    };
    println!("  command: lukskit {}{stdin}", shell_words(&argv));
    for i in &o.ignored {
        println!("  warning: option '{}' ignored: {}", i.option, i.reason);
    }
    for n in not_for_kind(e, kind) {
        println!("  warning: option {n} has no effect on a {kind} volume; ignored");
    }
    for r in &o.refused {
        println!("  error:   option '{}': {}", r.option, r.reason);
    }
}

/// Arguments quoted for a shell where they need it.
fn shell_words(argv: &[String]) -> String {
    argv.iter()
        .map(|a| {
            if !a.is_empty()
                && a.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_./:=,@+%".contains(c))
            {
                a.clone()
            } else {
                format!("'{}'", a.replace('\'', r"'\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// The first `n` bytes of `path` (fewer when it is shorter), `None` when it cannot be read.
fn first_bytes(path: &Path, n: usize) -> Option<Vec<u8>> {
    let f = std::fs::File::open(path).ok()?;
    let mut b = Vec::with_capacity(n);
    f.take(n as u64).read_to_end(&mut b).ok()?;
    Some(b)
}

/// The device a crypttab field names, if it can be found.
pub fn resolve(spec: &DeviceSpec) -> Option<PathBuf> {
    let link = |dir: &str, v: &str| {
        let p = Path::new("/dev/disk").join(dir).join(v);
        std::fs::canonicalize(p).ok()
    };
    let found = match spec {
        DeviceSpec::Path(p) => {
            let m = std::fs::metadata(p).ok()?;
            return (m.file_type().is_block_device() || m.is_file()).then(|| PathBuf::from(p));
        }
        DeviceSpec::Uuid(v) => link("by-uuid", v).or_else(|| link("by-uuid", &v.to_lowercase())),
        DeviceSpec::PartUuid(v) => {
            link("by-partuuid", v).or_else(|| link("by-partuuid", &v.to_lowercase()))
        }
        DeviceSpec::Label(v) => link("by-label", &udev_escape(v)),
        DeviceSpec::PartLabel(v) => link("by-partlabel", &udev_escape(v)),
    };
    found
        .or_else(|| scan_block_devices(spec))
        .or_else(|| blkid(spec))
}

/// How udev names `/dev/disk/by-label` links: `/`, whitespace and `\` as `\xHH`.
fn udev_escape(s: &str) -> String {
    let mut o = String::new();
    for c in s.chars() {
        if c == '/' || c == '\\' || c.is_whitespace() {
            for b in c.to_string().bytes() {
                o.push_str(&format!("\\x{b:02x}"));
            }
        } else {
            o.push(c);
        }
    }
    o
}

/// What the first 4 KiB of a device say about it: (UUID, label) of a LUKS or ext2/3/4 header.
pub fn probe_ids(b: &[u8]) -> (Option<String>, Option<String>) {
    let cstr = |s: &[u8]| {
        let end = s.iter().position(|&c| c == 0).unwrap_or(s.len());
        std::str::from_utf8(&s[..end])
            .ok()
            .map(str::to_string)
            .filter(|t| !t.is_empty())
    };
    if b.len() >= 208 {
        if let Some(v) = lukskit_format::detect::detect(b) {
            let uuid = cstr(&b[168..208]);
            let label = match v {
                lukskit_format::VolumeType::Luks2 => cstr(&b[24..72]),
                _ => None,
            };
            return (uuid, label);
        }
    }
    // ext2/3/4: superblock at 1024, magic 0xEF53 at +56, UUID at +104, label at +120.
    if b.len() >= 1024 + 136 && b[1024 + 56..1024 + 58] == [0x53, 0xEF] {
        let u = &b[1024 + 104..1024 + 120];
        let uuid = format!(
            "{}-{}-{}-{}-{}",
            hex::encode(&u[0..4]),
            hex::encode(&u[4..6]),
            hex::encode(&u[6..8]),
            hex::encode(&u[8..10]),
            hex::encode(&u[10..16])
        );
        return (Some(uuid), cstr(&b[1024 + 120..1024 + 136]));
    }
    (None, None)
}

/// Look through the block devices the kernel lists (at most [`MAX_SCANNED_DEVICES`], the
/// first [`SCAN_BYTES`] of each) for a LUKS or ext header with the UUID or label, or a
/// partition with the name (`PARTNAME` in sysfs).
fn scan_block_devices(spec: &DeviceSpec) -> Option<PathBuf> {
    let entries = std::fs::read_dir("/sys/class/block").ok()?;
    for ent in entries.take(MAX_SCANNED_DEVICES).flatten() {
        let name = ent.file_name();
        let name = name.to_string_lossy();
        let sys = ent.path();
        let size: u64 = std::fs::read_to_string(sys.join("size"))
            .ok()
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or(0);
        if size == 0 {
            continue;
        }
        let dev = Path::new("/dev").join(name.as_ref());
        if !std::fs::metadata(&dev).is_ok_and(|m| m.file_type().is_block_device()) {
            continue;
        }
        let hit = match spec {
            DeviceSpec::PartLabel(want) => std::fs::read_to_string(sys.join("uevent"))
                .ok()
                .is_some_and(|u| u.lines().any(|l| l.strip_prefix("PARTNAME=") == Some(want))),
            DeviceSpec::Uuid(want) => first_bytes(&dev, SCAN_BYTES)
                .and_then(|b| probe_ids(&b).0)
                .is_some_and(|u| u.eq_ignore_ascii_case(want)),
            DeviceSpec::Label(want) => first_bytes(&dev, SCAN_BYTES)
                .and_then(|b| probe_ids(&b).1)
                .is_some_and(|l| &l == want),
            _ => false,
        };
        // A leg of an md array (held by it, or with an md superblock at its end where the
        // array is not assembled) shows the array's header too: never the device meant.
        if hit && !held(&sys) && !md_member(&dev, size) {
            return Some(dev);
        }
    }
    None
}

/// Whether another device (md, dm) is built on this one.
fn held(sys: &Path) -> bool {
    std::fs::read_dir(sys.join("holders")).is_ok_and(|mut d| d.next().is_some())
}

/// md's superblock magic (little-endian on disk).
const MD_MAGIC: u32 = 0xa92b_4efc;

/// Whether `dev` (of `sectors` 512-byte sectors) carries an md superblock of format 0.90 or
/// 1.0 (at its end, where the data starts at sector 0 and so looks like the array's content).
fn md_member(dev: &Path, sectors: u64) -> bool {
    use std::os::unix::fs::FileExt;
    let Ok(f) = std::fs::File::open(dev) else {
        return false;
    };
    let at = |sector: u64| {
        let mut b = [0u8; 4];
        f.read_exact_at(&mut b, sector * 512).is_ok() && u32::from_le_bytes(b) == MD_MAGIC
    };
    // 0.90: the last 64 KiB-aligned 64 KiB block; 1.0: 8 KiB from the end, 4 KiB aligned.
    (sectors >= 128 && at((sectors & !127) - 128)) || (sectors >= 16 && at((sectors - 16) & !7))
}

/// `blkid -l -o device -t SPEC`, where blkid is installed (for what lukskit does not probe
/// itself, such as PARTUUID without udev).
fn blkid(spec: &DeviceSpec) -> Option<PathBuf> {
    if matches!(spec, DeviceSpec::Path(_)) {
        return None;
    }
    let out = std::process::Command::new("blkid")
        .args(["-l", "-o", "device", "-t", &spec.to_string()])
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output()
        .ok()?;
    let s = String::from_utf8(out.stdout).ok()?;
    let p = PathBuf::from(s.lines().next()?.trim());
    std::fs::metadata(&p)
        .is_ok_and(|m| m.file_type().is_block_device())
        .then_some(p)
}

/// `rename OLD NEW`: give an active kernel mapping another name (DM_DEV_RENAME, as
/// `dmsetup rename`; the DM UUID keeps the name it was opened with, as after dmsetup).
pub fn rename(_o: &Opts, args: &[String]) -> Result<()> {
    need_args(args, 2, 2, "<name> <new name>")?;
    let old = activate::mapping_name(&args[0]);
    let new = activate::mapping_name(&args[1]);
    let m = activate::find(old)?.ok_or_else(|| inactive(old))?;
    Ok(m.rename(new)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(line: &str) -> CrypttabEntry {
        crypttab::parse_line(line).unwrap().unwrap()
    }

    /// `argv` parsed as lukskit's own command line, as open_entry parses it.
    fn parse_argv(argv: Vec<String>) -> Opts {
        let argv: Vec<std::ffi::OsString> = std::iter::once("lukskit".to_string())
            .chain(argv)
            .map(Into::into)
            .collect();
        crate::startup::parse(&argv).unwrap()
    }

    #[test]
    fn argv_as_debian_passes_it() {
        let e = entry("c2 /dev/vdb /k luks,header=/h,keyslot=1,keyfile-size=64,keyfile-offset=8,discard,readonly,cipher=x,offset=9,no-read-workqueue");
        let a = open_argv(&e, "/dev/vdb", "luks", Some("/k"), Some("/h"), &[]);
        assert_eq!(
            shell_words(&a),
            "open --type luks --header /h --key-slot 1 --keyfile-size 64 --keyfile-offset 8 \
             --key-file /k --tries 1 --readonly --allow-discards --perf-no_read_workqueue \
             /dev/vdb c2"
        );
        // Each argument parses as lukskit's own command line.
        let o = parse_argv(a);
        assert_eq!(o.key_slot, Some(1));
        assert!(o.perf_no_read_workqueue && o.readonly && o.allow_discards);

        let e = entry("p /dev/vdc none plain,cipher=aes-xts-plain64,size=512,hash=sha256,offset=8,skip=4,sector-size=4096,tries=0,timeout=30,keyfile-size=9");
        let a = open_argv(&e, "/dev/vdc", "plain", None, None, &[]);
        assert_eq!(
            shell_words(&a),
            "open --type plain --cipher aes-xts-plain64 --key-size 512 --hash sha256 --offset 8 \
             --skip 4 --sector-size 4096 --tries 4294967295 --timeout 30 /dev/vdc p"
        );
        let e = entry("-n -dev none cipher=-c,plain");
        let a = open_argv(&e, "-dev", "plain", Some("-k"), None, &[]);
        let o = parse_argv(a);
        assert_eq!(o.positional, ["open", "-dev", "-n"]);
        assert_eq!(
            (o.cipher.as_deref(), o.key_file.as_deref()),
            (Some("-c"), Some("-k"))
        );
        let e = entry("q /dev/vdc - tries=5");
        assert!(shell_words(&open_argv(&e, "/x y", "luks", None, None, &[]))
            .ends_with("--tries 5 '/x y' q"));
    }

    #[test]
    fn options_of_the_other_kind() {
        let e = entry("a /dev/x - cipher=x,size=256,keyslot=1,keyfile-size=8,header=/h");
        assert_eq!(not_for_kind(&e, "luks"), ["cipher=", "size="]);
        assert_eq!(
            not_for_kind(&e, "plain"),
            ["header=", "key-slot=", "keyfile-size="]
        );
        assert_eq!(
            not_for_kind(&e, "tcrypt"),
            ["header=", "key-slot=", "keyfile-size=", "cipher=", "size="]
        );
        assert_eq!(
            not_for_kind(&e, "bitlk"),
            ["header=", "key-slot=", "cipher=", "size="]
        );
    }

    #[test]
    fn argv_of_truecrypt_entries() {
        let e = entry("vc /dev/sdb /p tcrypt-hidden,veracrypt-pim=7,tcrypt-keyfile=/a,tcrypt-keyfile=-b,discard");
        let a = open_argv(
            &e,
            "/dev/sdb",
            "tcrypt",
            Some("/p"),
            None,
            &["/a".into(), "-b".into()],
        );
        assert_eq!(
            shell_words(&a),
            "open --type tcrypt --veracrypt-pim 7 --key-file /a --key-file=-b --tries 1 \
             --allow-discards --tcrypt-hidden /dev/sdb vc"
        );
        // The passphrase file is not a key file of the pool; every -d is, in order.
        let o = parse_argv(a);
        assert_eq!(o.key_files, ["/a", "-b"]);
        assert_eq!(o.veracrypt_pim, Some(7));
        assert!(o.given.has("tcrypt-hidden") && o.allow_discards);
        let e = entry("w /dev/sdc /pw bitlk,keyfile-size=8");
        let a = open_argv(&e, "/dev/sdc", "bitlk", Some("/pw"), None, &[]);
        assert_eq!(
            shell_words(&a),
            "open --type bitlk --keyfile-size 8 --key-file /pw --tries 1 /dev/sdc w"
        );
    }

    #[test]
    fn probes_luks_and_ext_headers() {
        let mut b = vec![0u8; 4096];
        b[..6].copy_from_slice(b"LUKS\xba\xbe");
        b[6..8].copy_from_slice(&[0, 2]);
        b[24..29].copy_from_slice(b"usb-b");
        let u = b"2505567a-9e27-4efe-a4d5-15ad146c258b";
        b[168..168 + u.len()].copy_from_slice(u);
        assert_eq!(
            probe_ids(&b),
            (
                Some(String::from_utf8(u.to_vec()).unwrap()),
                Some("usb-b".into())
            )
        );
        let mut x = vec![0u8; 4096];
        x[1024 + 56] = 0x53;
        x[1024 + 57] = 0xEF;
        x[1024 + 104..1024 + 120].copy_from_slice(&[
            0x12, 0x34, 0x56, 0x78, 0x9a, 0xbc, 0xde, 0xf0, 0x01, 0x23, 0x45, 0x67, 0x89, 0xab,
            0xcd, 0xef,
        ]);
        x[1024 + 120..1024 + 126].copy_from_slice(b"keydev");
        assert_eq!(
            probe_ids(&x),
            (
                Some("12345678-9abc-def0-0123-456789abcdef".into()),
                Some("keydev".into())
            )
        );
        assert_eq!(probe_ids(&[0u8; 100]), (None, None));
    }

    #[test]
    fn udev_escapes() {
        assert_eq!(udev_escape("my disk/x"), r"my\x20disk\x2fx");
    }
}
