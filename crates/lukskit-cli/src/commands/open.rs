//! Activation without device-mapper: `open` (and `luksOpen`, `plainOpen`, `create`),
//! `close`, `status`, `luksSuspend`, `luksResume`, and the hidden `__serve` action that is
//! the serving process of an open mapping.
//!
//! `open` unlocks in the foreground, then starts `/proc/self/exe __serve` (a fresh process:
//! nothing is forked while the engine's threads run), hands it the mapping parameters and
//! the volume key through its standard input (never argv, the environment or a file), and
//! waits for its one-line answer: `ok` once the device is usable, or `err CODE MESSAGE`.

use super::{existing_key_source, need_args};
use crate::args::Opts;
use crate::input;
use lukskit_crypto::SecretBuf;
use lukskit_expose::runtime::{self, LayoutInfo, MappingConfig, RuntimeError, State};
use lukskit_volume::data::DataLayout;
use lukskit_volume::device::Access;
use lukskit_volume::{ErrorKind, Result, Volume, VolumeError};
use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Command, Stdio};
use std::time::Duration;
use zeroize::Zeroizing;

fn rt_err(e: RuntimeError) -> VolumeError {
    let kind = match e.code {
        2 => ErrorKind::Permission,
        3 => ErrorKind::NoMemory,
        4 => ErrorKind::Device,
        5 => ErrorKind::Busy,
        _ => ErrorKind::Invalid,
    };
    VolumeError {
        kind,
        message: e.message,
    }
}

/// `open`, `luksOpen`, `plainOpen`, `create`.
pub fn open(o: &Opts, action: &str, args: &[String]) -> Result<()> {
    let mut o = o.clone();
    if action == "plainOpen" || action == "create" {
        o.r#type = Some("plain".into());
    }
    if o.test_passphrase {
        return test_passphrase(&o, args);
    }
    need_args(args, 2, 2, "<device> <name>")?;
    let (device, name) = if action == "create" {
        (&args[1], &args[0])
    } else {
        (&args[0], &args[1])
    };
    runtime::check_name(name).map_err(rt_err)?;
    if runtime::exists(name) || runtime::mapper_path(name).symlink_metadata().is_ok() {
        return Err(VolumeError::busy(format!("Device {name} already exists.")));
    }
    if o.nbd.is_some() && o.no_loop {
        return Err(VolumeError::invalid(
            "Options --nbd and --no-loop cannot be combined.",
        ));
    }
    if o.nbd_connections.is_some() && o.nbd.is_none() {
        return Err(VolumeError::invalid(
            "Option --nbd-connections is allowed only with --nbd.",
        ));
    }
    if o.nbd_connections == Some(0) {
        return Err(VolumeError::invalid(
            "Option --nbd-connections must be at least 1.",
        ));
    }
    if let Some(a) = &o.nbd {
        let addr = a
            .parse::<lukskit_expose::nbd::NbdAddress>()
            .map_err(VolumeError::invalid)?;
        if addr.is_network() {
            eprintln!("{}", tcp_warning(&addr));
        }
    }
    let backend = super::kernel::choose(&o)?;
    let (config, key, digest) = match o.r#type.as_deref() {
        Some("plain") => {
            let (c, k) = unlock_plain(&o, device, name)?;
            (c, k, None)
        }
        None | Some("luks") | Some("luks1") | Some("luks2") => unlock_luks(&o, device, name)?,
        Some(t) => {
            return Err(VolumeError::invalid(format!(
                "Device type {t} is not supported."
            )))
        }
    };
    match backend {
        super::kernel::Backend::Kernel => super::kernel::open(&o, &config, &key, digest),
        super::kernel::Backend::Userspace => start_server(&config, &key),
    }
}

/// What `open --nbd tcp:...` says on stderr before unlocking.
fn tcp_warning(addr: &lukskit_expose::nbd::NbdAddress) -> String {
    format!(
        "WARNING: NBD over TCP is neither encrypted nor authenticated. Anyone who can \
         connect to {addr} can read and write all plaintext of this device.\n\
         Use --nbd unix:PATH, or make sure only trusted hosts can reach this port."
    )
}

fn absolute(path: &str) -> Result<String> {
    std::fs::canonicalize(path)
        .map(|p| p.display().to_string())
        .map_err(|_| VolumeError::device(format!("Device {path} does not exist or access denied.")))
}

fn base_config(o: &Opts, name: &str) -> MappingConfig {
    MappingConfig {
        name: name.to_string(),
        kind: String::new(),
        uuid: None,
        device: String::new(),
        header: None,
        layout: LayoutInfo {
            cipher: String::new(),
            offset: 0,
            size: None,
            sector_size: 512,
            iv_offset: 0,
            iv_large_sectors: false,
        },
        key_bits: 0,
        read_only: o.readonly,
        allow_discards: o.allow_discards,
        use_loop: !o.no_loop && o.nbd.is_none(),
        nbd: o.nbd.clone(),
        nbd_connections: o.nbd_connections,
    }
}

fn unlock_plain(o: &Opts, device: &str, name: &str) -> Result<(MappingConfig, SecretBuf)> {
    if o.header.is_some() {
        return Err(VolumeError::invalid(
            "Option --header is not allowed with plain mode.",
        ));
    }
    let dev = absolute(device)?;
    let p = super::image::plain_params(o)?;
    let key = super::image::plain_key(o, &p, &format!("Enter passphrase for {device}: "), false)?;
    let layout = p.layout()?;
    let mut c = base_config(o, name);
    c.kind = "PLAIN".into();
    c.device = dev;
    c.layout = LayoutInfo::from(&layout);
    c.key_bits = p.key_bits;
    Ok((c, key))
}

/// Unlock a LUKS volume as `open` does: `--volume-key-file`, or passphrases with `--tries`.
fn luks_key(vol: &Volume, o: &Opts, device: &str) -> Result<SecretBuf> {
    if let Some(p) = &o.volume_key_file {
        let vk = input::read_keyfile(p, 0, None)?;
        vol.verify_volume_key(vk.as_bytes())?;
        return Ok(vk);
    }
    let src = existing_key_source(o, None);
    let (slot, vk, _pass) = super::keys::unlock_with_tries(
        vol,
        o,
        &src,
        &format!("Enter passphrase for {device}: "),
        o.key_slot,
        false,
    )?;
    if o.verbose {
        println!("Key slot {slot} unlocked.");
    }
    Ok(vk)
}

fn load_luks(o: &Opts, device: &str) -> Result<Volume> {
    let requested = super::requested_luks(o);
    let vol = Volume::load_requested(device, o.header.as_deref(), Access::Read, requested)?;
    match (o.r#type.as_deref(), vol.type_name()) {
        (Some("luks1"), "LUKS2") | (Some("luks2"), "LUKS1") => Err(VolumeError::invalid(format!(
            "Device {device} is not a valid LUKS device."
        ))),
        _ => Ok(vol),
    }
}

fn unlock_luks(
    o: &Opts,
    device: &str,
    name: &str,
) -> Result<(MappingConfig, SecretBuf, Option<u32>)> {
    if o.skip.is_some() || o.iv_large_sectors {
        return Err(VolumeError::invalid(
            "Options --skip and --iv-large-sectors are supported only with --type plain.",
        ));
    }
    let vol = load_luks(o, device)?;
    let layout = DataLayout::from_volume(&vol)?;
    if o.verbose && vol.type_name() == "LUKS2" {
        println!("No usable token is available.");
    }
    let vk = luks_key(&vol, o, o.header.as_deref().unwrap_or(device))?;
    let mut c = base_config(o, name);
    c.kind = vol.type_name().to_string();
    c.uuid = Some(vol.uuid().to_string());
    c.device = absolute(&vol.data_path)?;
    c.header = match &o.header {
        Some(h) => Some(absolute(h)?),
        None => None,
    };
    c.layout = LayoutInfo::from(&layout);
    c.key_bits = (vk.len() * 8) as u32;
    Ok((c, vk, vol.segment_digest_id()?))
}

/// Start the serving process and wait until it is ready.
fn start_server(config: &MappingConfig, key: &SecretBuf) -> Result<()> {
    let mut child = Command::new("/proc/self/exe")
        .arg("__serve")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .current_dir("/")
        .spawn()
        .map_err(|e| VolumeError::invalid(format!("Cannot start the serving process: {e}")))?;
    let json = serde_json::to_vec(config)
        .map_err(|e| VolumeError::invalid(format!("Cannot encode the mapping: {e}")))?;
    let sent = {
        let mut stdin = child.stdin.take().expect("piped stdin");
        let mut w = || -> std::io::Result<()> {
            stdin.write_all(&(json.len() as u32).to_le_bytes())?;
            stdin.write_all(&json)?;
            stdin.write_all(&(key.len() as u32).to_le_bytes())?;
            stdin.write_all(key.as_bytes())?;
            stdin.flush()
        };
        w()
    };
    let mut line = String::new();
    if let Some(out) = child.stdout.take() {
        let _ = BufReader::new(out).read_line(&mut line);
    }
    let line = line.trim_end_matches('\n');
    if let Some(rest) = line.strip_prefix("err ") {
        let _ = child.wait();
        let (code, msg) = rest.split_once(' ').unwrap_or((rest, ""));
        return Err(rt_err(RuntimeError::new(code.parse().unwrap_or(1), msg)));
    }
    if line != "ok" {
        let status = child.wait();
        return Err(VolumeError::invalid(format!(
            "The serving process failed to start ({}{}).",
            status.map_or_else(|e| e.to_string(), |s| s.to_string()),
            sent.err().map_or(String::new(), |e| format!(", {e}"))
        )));
    }
    // The server runs on in its own session; it is reparented when we exit.
    Ok(())
}

/// The hidden `__serve` action: the serving process. Never returns.
pub fn serve_child() -> ! {
    use std::os::fd::AsFd;
    // SAFETY: setsid in a fresh single-threaded child; failure (already a leader) is
    // harmless.
    unsafe {
        libc::setsid();
    }
    crate::hardening::serving_process();
    // Read the pipe unbuffered (a duplicate of fd 0): the buffer of `std::io::stdin()`
    // would keep a copy of the volume key for the life of the process.
    let mut stdin = match std::io::stdin().as_fd().try_clone_to_owned() {
        Ok(fd) => std::fs::File::from(fd),
        Err(e) => {
            println!("err 1 Cannot read the parameters of the serving process: {e}");
            std::process::exit(1);
        }
    };
    let read = |r: &mut dyn Read| -> std::io::Result<(MappingConfig, Zeroizing<Vec<u8>>)> {
        let mut n = [0u8; 4];
        r.read_exact(&mut n)?;
        let len = u32::from_le_bytes(n) as usize;
        if len > 1 << 20 {
            return Err(std::io::Error::other("mapping parameters too long"));
        }
        let mut json = vec![0u8; len];
        r.read_exact(&mut json)?;
        let config: MappingConfig = serde_json::from_slice(&json).map_err(std::io::Error::other)?;
        r.read_exact(&mut n)?;
        let klen = u32::from_le_bytes(n) as usize;
        if klen == 0 || klen > 1024 {
            return Err(std::io::Error::other("bad key length"));
        }
        let mut key = Zeroizing::new(vec![0u8; klen]);
        r.read_exact(&mut key)?;
        Ok((config, key))
    };
    let (config, key) = match read(&mut stdin) {
        Ok(x) => x,
        Err(e) => {
            println!("err 1 Bad parameters for the serving process: {e}");
            std::process::exit(1);
        }
    };
    drop(stdin);
    let code = lukskit_expose::serve::serve(config, key, |res| {
        let line = match res {
            Ok(()) => "ok\n".to_string(),
            Err(e) => format!("err {} {}\n", e.code, e.message.replace('\n', " ")),
        };
        let mut out = std::io::stdout().lock();
        let _ = out.write_all(line.as_bytes());
        let _ = out.flush();
        drop(out);
        detach_stdio();
    });
    std::process::exit(code)
}

/// Point standard input, output and error at /dev/null (the parent stops reading).
fn detach_stdio() {
    if let Ok(null) = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/null")
    {
        use std::os::fd::AsRawFd;
        for fd in 0..3 {
            // SAFETY: dup2 onto the standard descriptors with a valid open descriptor.
            unsafe {
                libc::dup2(null.as_raw_fd(), fd);
            }
        }
    }
}

/// `open --test-passphrase`: check a passphrase without activating.
fn test_passphrase(o: &Opts, args: &[String]) -> Result<()> {
    need_args(args, 1, 2, "<device> [<name>]")?;
    if let Some(t) = o.r#type.as_deref() {
        if !matches!(t, "luks" | "luks1" | "luks2") {
            return Err(VolumeError::invalid(format!(
                "Device type {t} is not supported yet."
            )));
        }
    }
    let device = &args[0];
    let vol = load_luks(o, device)?;
    if o.verbose && vol.type_name() == "LUKS2" {
        // cryptsetup tries LUKS2 tokens first; lukskit has no token handlers.
        println!("No usable token is available.");
    }
    let src = existing_key_source(o, None);
    let (slot, _vk, _pass) = super::keys::unlock_with_tries(
        &vol,
        o,
        &src,
        &format!("Enter passphrase for {device}: "),
        o.key_slot,
        o.unbound,
    )?;
    if o.verbose {
        println!("Key slot {slot} unlocked.");
    }
    Ok(())
}

fn inactive(name: &str) -> VolumeError {
    VolumeError::device(format!("Device {name} is not active."))
}

/// `close` (`remove`, `luksClose`, `plainClose`).
pub fn close(o: &Opts, args: &[String]) -> Result<()> {
    need_args(args, 1, 1, "<name>")?;
    let name = super::kernel::mapping_name(&args[0]);
    if let Some(done) = super::kernel::close(name, o.deferred) {
        return done;
    }
    runtime::check_name(name).map_err(rt_err)?;
    if !runtime::exists(name) {
        return Err(inactive(name));
    }
    let state = runtime::read_state(name).map_err(rt_err)?;
    match runtime::request(name, "close", &[], None).map_err(rt_err)? {
        Some(Ok(_)) => Ok(()),
        Some(Err(e)) => Err(rt_err(e)),
        // Nobody listens: the server died (or never finished starting). Clean up.
        None => {
            if let Some(st) = &state {
                if runtime::pid_alive(st.pid) && is_our_server(st.pid) {
                    return Err(VolumeError::busy(format!(
                        "Device {name} is busy: its serving process (pid {}) does not answer.",
                        st.pid
                    )));
                }
            }
            runtime::cleanup_dead(name, state.as_ref()).map_err(rt_err)
        }
    }
}

fn is_our_server(pid: u32) -> bool {
    std::fs::read(format!("/proc/{pid}/cmdline"))
        .map(|c| c.split(|&b| b == 0).any(|a| a == b"__serve"))
        .unwrap_or(false)
}

/// `status NAME`.
pub fn status(_o: &Opts, args: &[String]) -> Result<()> {
    need_args(args, 1, 1, "<name>")?;
    let name = super::kernel::mapping_name(&args[0]);
    if let Some(done) = super::kernel::status(name) {
        return done;
    }
    let path = runtime::mapper_path(name);
    let state = match runtime::check_name(name)
        .ok()
        .and_then(|()| runtime::read_state(name).transpose())
    {
        Some(s) => s.map_err(rt_err)?,
        None => {
            println!("{} is inactive.", path.display());
            return Err(VolumeError {
                kind: ErrorKind::Device,
                message: String::new(),
            });
        }
    };
    let reply =
        runtime::request(name, "status", &[], Some(Duration::from_secs(5))).map_err(rt_err)?;
    let (alive, suspended) = match reply {
        Some(Ok(t)) => {
            let v: serde_json::Value = serde_json::from_str(&t).unwrap_or_default();
            (true, v["suspended"].as_bool().unwrap_or(false))
        }
        _ => (false, false),
    };
    print!(
        "{}",
        format_status(&state, alive, suspended, in_use(&state))
    );
    Ok(())
}

fn in_use(st: &State) -> bool {
    st.loop_device
        .as_deref()
        .is_some_and(|l| lukskit_expose::loopdev::is_busy(std::path::Path::new(l)).unwrap_or(false))
}

/// cryptsetup 2.6.1's `status` text plus lukskit's exposure lines.
fn format_status(st: &State, alive: bool, suspended: bool, busy: bool) -> String {
    let c = &st.config;
    let shown = match &st.mapper_link {
        Some(l) => l.clone(),
        None => runtime::mapper_path(&c.name).display().to_string(),
    };
    let mut s = format!(
        "{shown} is active{}.\n",
        if busy { " and is in use" } else { "" }
    );
    s += &format!("  type:    {}\n", c.kind);
    s += &format!("  cipher:  {}\n", c.layout.cipher);
    s += &format!("  keysize: {} bits\n", c.key_bits);
    s += "  key location: dm-crypt\n";
    if let Some(h) = &c.header {
        s += &format!("  header:  {h}\n");
    }
    s += &format!("  device:  {}\n", c.device);
    s += &format!("  sector size:  {}\n", c.layout.sector_size);
    s += &format!("  offset:  {} sectors\n", c.layout.offset / 512);
    s += &format!("  size:    {} sectors\n", st.size / 512);
    if c.layout.iv_offset != 0 {
        s += &format!("  skipped: {} sectors\n", c.layout.iv_offset);
    }
    s += &format!(
        "  mode:    {}{}\n",
        if c.read_only {
            "readonly"
        } else {
            "read/write"
        },
        if suspended { " (suspended)" } else { "" }
    );
    if c.allow_discards {
        s += "  flags:   discards\n";
    }
    if let Some(f) = &st.fuse_file {
        s += &format!("  fuse file: {f}\n");
    }
    if let Some(l) = &st.loop_device {
        s += &format!(
            "  loop device: {l}{}\n",
            if st.loop_direct_io {
                " (direct I/O)"
            } else {
                ""
            }
        );
    }
    if let Some(n) = &st.nbd_address {
        s += &format!("  nbd:     {n}\n");
    }
    s += &format!(
        "  server:  pid {}{}\n",
        st.pid,
        if alive {
            ""
        } else {
            " (not running: run close to clean up)"
        }
    );
    s
}

fn active_state(name: &str) -> Result<State> {
    runtime::check_name(name).map_err(rt_err)?;
    runtime::read_state(name)
        .map_err(rt_err)?
        .ok_or_else(|| inactive(name))
}

fn control(name: &str, line: &str, payload: &[u8]) -> Result<()> {
    match runtime::request(name, line, payload, None).map_err(rt_err)? {
        Some(Ok(_)) => Ok(()),
        Some(Err(e)) => Err(rt_err(e)),
        None => Err(VolumeError::device(format!(
            "Device {name} is not active (its serving process is gone; run close)."
        ))),
    }
}

/// The state of the active mapping `name`, which must be a LUKS one (suspend and resume
/// need a header to unlock again).
fn luks_state(name: &str) -> Result<State> {
    let st = active_state(name)?;
    if st.config.kind == "PLAIN" {
        return Err(VolumeError::invalid(format!(
            "Device {name} is not a LUKS device."
        )));
    }
    Ok(st)
}

/// `luksSuspend NAME`.
pub fn suspend(_o: &Opts, args: &[String]) -> Result<()> {
    need_args(args, 1, 1, "<name>")?;
    let name = &args[0];
    if let Some(m) = super::kernel::find(name) {
        return m?.suspend();
    }
    luks_state(name)?;
    control(name, "suspend", &[])
}

/// `luksResume NAME`: ask for a passphrase again, unlock with the header, hand the key to
/// the server.
pub fn resume(o: &Opts, args: &[String]) -> Result<()> {
    need_args(args, 1, 1, "<name>")?;
    let name = &args[0];
    if let Some(m) = super::kernel::find(name) {
        return resume_kernel(o, &m?);
    }
    let st = luks_state(name)?;
    let reply =
        runtime::request(name, "status", &[], Some(Duration::from_secs(5))).map_err(rt_err)?;
    match reply {
        Some(Ok(t)) if t.contains("\"suspended\":true") => {}
        Some(Ok(_)) => {
            return Err(VolumeError::invalid(format!(
                "Volume {name} is not suspended."
            )))
        }
        Some(Err(e)) => return Err(rt_err(e)),
        None => return Err(inactive(name)),
    }
    let c = &st.config;
    let mut ho = o.clone();
    if c.header.is_some() {
        ho.header = c.header.clone();
    }
    let vol = Volume::load(&c.device, ho.header.as_deref(), Access::Read)?;
    if Some(vol.uuid()) != c.uuid.as_deref() {
        return Err(VolumeError::device(format!(
            "Device {} is no longer the LUKS device {name} was opened from.",
            c.device
        )));
    }
    let vk = luks_key(&vol, &ho, c.header.as_deref().unwrap_or(&c.device))?;
    control(name, &format!("resume {}", vk.len()), vk.as_bytes())
}

/// `resize NAME [--size SECTORS | --device-size BYTES]`: grow or shrink an active mapping
/// (to the whole device when no size is given). Kernel mappings only, for now.
pub fn resize(o: &Opts, args: &[String]) -> Result<()> {
    need_args(args, 1, 1, "<name>")?;
    let name = &args[0];
    let Some(m) = super::kernel::find(name) else {
        if runtime::check_name(super::kernel::mapping_name(name)).is_ok()
            && runtime::exists(super::kernel::mapping_name(name))
        {
            return Err(VolumeError::invalid(
                "resize of a userspace (FUSE or NBD) mapping is not supported by lukskit yet.",
            ));
        }
        return Err(VolumeError::device(format!("Device {name} is not active.")));
    };
    let m = m?;
    let sectors = match (&o.size, &o.device_size) {
        (Some(_), Some(_)) => {
            return Err(VolumeError::invalid(
                "Options --size and --device-size cannot be combined.",
            ))
        }
        (Some(s), None) => Some(*s),
        (None, Some(d)) => {
            let bytes = crate::args::parse_device_size(d)
                .ok_or_else(|| VolumeError::invalid("Invalid device size specification."))?;
            if !bytes.is_multiple_of(512) {
                return Err(VolumeError::invalid(
                    "Device size must be multiple of 512 bytes sector.",
                ));
            }
            Some(bytes / 512)
        }
        (None, None) => None,
    };
    if !m.needs_volume_key() {
        return m.resize(sectors, None);
    }
    // The table names its key in the kernel keyring: unlock to put it there again.
    let vol = Volume::load(&m.device, o.header.as_deref(), Access::Read)?;
    let vk = luks_key(&vol, o, o.header.as_deref().unwrap_or(&m.device))?;
    m.resize(sectors, Some((&vk, vol.segment_digest_id()?)))
}

/// `luksResume` of a kernel mapping: unlock from the header of the mapped device (or
/// `--header`), check that it is the volume the mapping was made from, give dm-crypt the key.
fn resume_kernel(o: &Opts, m: &super::kernel::KernelMapping) -> Result<()> {
    if !m.suspended {
        return Err(VolumeError::invalid(format!(
            "Volume {} is not suspended.",
            m.name
        )));
    }
    let vol = Volume::load(&m.device, o.header.as_deref(), Access::Read)?;
    if m.uuid
        .as_deref()
        .is_some_and(|u| !u.eq_ignore_ascii_case(vol.uuid()))
    {
        return Err(VolumeError::device(format!(
            "Device {} is no longer the LUKS device {} was opened from.",
            m.device, m.name
        )));
    }
    let vk = luks_key(&vol, o, o.header.as_deref().unwrap_or(&m.device))?;
    m.resume(&vk, vol.segment_digest_id()?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_layout() {
        let st = State {
            config: MappingConfig {
                name: "t".into(),
                kind: "LUKS2".into(),
                uuid: None,
                device: "/img".into(),
                header: None,
                layout: LayoutInfo {
                    cipher: "aes-xts-plain64".into(),
                    offset: 16 << 20,
                    size: None,
                    sector_size: 4096,
                    iv_offset: 0,
                    iv_large_sectors: false,
                },
                key_bits: 512,
                read_only: false,
                allow_discards: false,
                use_loop: true,
                nbd: None,
                nbd_connections: None,
            },
            pid: 42,
            size: 1 << 20,
            fuse_file: Some("/run/lukskit/t/device".into()),
            loop_device: Some("/dev/loop3".into()),
            loop_direct_io: true,
            nbd_address: None,
            mapper_link: Some("/dev/mapper/t".into()),
        };
        let s = format_status(&st, true, true, true);
        assert!(s.starts_with("/dev/mapper/t is active and is in use.\n  type:    LUKS2\n"));
        assert!(s.contains("  offset:  32768 sectors\n  size:    2048 sectors\n"));
        assert!(s.contains("  mode:    read/write (suspended)\n"));
    }
}
